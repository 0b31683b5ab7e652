#!/usr/bin/env bash
# The extension benchmark (benchmarks/extension/axpby_bench.py) on the GPU, for
# scripts/gpu-check, which runs it as: extension_axpby.sh <build dir> <python>.
# It uses the extension that ctest's extension.axpby built in <build>/extension-test.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$1
python=$2
package=$build/extension-test/python
if [[ ! -d $package/kiln_sample_extensions ]]; then
  echo "no extension build in $package: run ctest -R extension first" >&2
  exit 1
fi
PYTHONPATH=$root/python:$package "$python" "$root/benchmarks/extension/axpby_bench.py" --device gpu
