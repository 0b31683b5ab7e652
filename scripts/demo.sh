#!/usr/bin/env bash
# `make demo`: runs kiln's main demo (examples/python/demo.py) on the default device with
# the interpreter `make` chose, after making sure the digits data set (shipped inside
# scikit-learn) is there: installed into the project's .venv when missing, else named with
# its install command (the demo then runs its other parts). Without the Python bindings,
# runs the C++ tutorial instead and says how to get them.
#
#   scripts/demo.sh [BUILD_DIR] [PYTHON] [demo.py options...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/dev}
PY=${2:-python3}
shift $(($# < 2 ? $# : 2))
log() { echo "[demo] $*" >&2; }

if [[ -z "$(ls python/kiln/_core*.so 2>/dev/null)" ]]; then
  log "the Python bindings are not built (python/kiln/_core*.so): running the C++ tutorial"
  log "build them with:  make build   (they need pybind11 >= 3, which scripts/setup.sh installs)"
  exec "$BUILD/examples/cpp/tutorial"
fi

has() { "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)"; }
if ! has sklearn; then
  install="$PY -m pip install scikit-learn"
  if [[ $PY == "$PWD/.venv/"* ]]; then
    log "installing scikit-learn (the digits data set ships inside it) into .venv"
    "$PY" -m pip install -q --disable-pip-version-check scikit-learn >&2 ||
      log "could not install scikit-learn; install it with:  $install"
  else
    log "scikit-learn (the digits data set) is missing; install it with:  $install"
  fi
fi

exec env PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" "$PY" examples/python/demo.py "$@"
