#!/usr/bin/env bash
# Runs kiln's main demo: the Python demo when the bindings are built, else the C++ tutorial.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/dev}
PY=${2:-python3}
if [[ -f examples/python/demo.py && -n "$(ls python/kiln/_core*.so 2>/dev/null)" ]]; then
  exec env PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" "$PY" examples/python/demo.py
fi
exec "$BUILD/examples/cpp/tutorial"
