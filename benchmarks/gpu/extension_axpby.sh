#!/usr/bin/env bash
# The extension benchmark (benchmarks/extension/axpby_bench.py) on the GPU machine, for
# scripts/gpu-check, which runs it as: extension_axpby.sh <build dir> <python>. Runs it on
# the GPU and on that host's CPU, with the extension that ctest's extension.axpby built in
# <build>/extension-test.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$1
python=$2
package=$build/extension-test/python
if [[ ! -d $package/kiln_sample_extensions ]]; then
  echo "no extension build in $package: run ctest -R extension first" >&2
  exit 1
fi
for device in cpu gpu; do
  PYTHONPATH=$root/python:$package "$python" "$root/benchmarks/extension/axpby_bench.py" \
    --device "$device"
done
