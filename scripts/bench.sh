#!/usr/bin/env bash
# `make bench`: runs kiln's benchmarks for the devices this machine has, then writes the
# side-by-side report (benchmarks/report.py) and refreshes the README's benchmark section.
#
#   scripts/bench.sh [BUILD_DIR] [PYTHON]        (make bench passes both)
#
# CPU, always: ops against NumPy and OpenBLAS (benchmarks/cpu/run.py), custom kernels
# against kiln's built-ins (benchmarks/cpu/custom_kernel.py), Python call overhead against
# PyTorch and NumPy (benchmarks/python/overhead.py). GPU, when one is usable: ops against
# PyTorch (benchmarks/gpu/run.py), Python call overhead on the GPU, custom kernels against
# CuPy (benchmarks/gpu/custom_kernel.py), and the kernel cookbook
# (examples/kernels/run_all.py). Each writes dated results to benchmarks/results/. A suite
# that fails is reported and the others still run; the exit status is non-zero if any failed.
# QUICK=1 runs every suite in its smoke-test mode where it has one; BENCH_OUT=DIR writes the
# results and the report there instead (the GPU ops suite always writes benchmarks/results/).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${1:-build/dev}
PY=${2:-python3}
OUT=${BENCH_OUT:-benchmarks/results}
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
log() { echo "[bench] $*" >&2; }

failed=()
run() {  # run <name> <command...>
  local name=$1
  shift
  log "$name: $*"
  if ! "$@"; then
    log "$name FAILED"
    failed+=("$name")
  fi
}
# Smoke-test options of the suites that have them, with QUICK=1.
quick=() cookbook_quick=()
if [[ ${QUICK:-0} == 1 ]]; then
  quick=(--quick) cookbook_quick=(--size small --reps 3)
fi

if [[ -z "$(ls python/kiln/_core*.so 2>/dev/null)" ]]; then
  log "the Python bindings are not built (python/kiln/_core*.so); build them with:  make build"
  exit 1
fi
if ! "$PY" -c "import numpy" 2>/dev/null; then
  log "$PY lacks NumPy; install it with:  $PY -m pip install numpy"
  exit 1
fi
for extra in matplotlib torch; do
  if ! "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$extra') is None)"; then
    case $extra in
      matplotlib) log "no matplotlib: the report has no chart; install it with:  $PY -m pip install matplotlib" ;;
      torch) log "no PyTorch: its columns stay empty; install it with:  $PY -m pip install torch" ;;
    esac
  fi
done

# ---------------------------------------------------------------- CPU
if [[ -x $BUILD/benchmarks/cpp/kiln_bench_cpu ]]; then
  run "CPU ops" "$PY" benchmarks/cpu/run.py --build-dir "$BUILD" --out-dir "$OUT" "${quick[@]}"
else
  log "no $BUILD/benchmarks/cpp/kiln_bench_cpu: build it with:  cmake --build $BUILD --target kiln_bench_cpu"
  failed+=("CPU ops (not built)")
fi
if [[ -f benchmarks/cpu/custom_kernel.py ]]; then
  run "CPU custom kernels" "$PY" benchmarks/cpu/custom_kernel.py --build-dir "$BUILD" --out-dir "$OUT" \
    "${quick[@]}"
fi
run "Python overhead (CPU)" "$PY" benchmarks/python/overhead.py --device cpu --out-dir "$OUT"

# ---------------------------------------------------------------- GPU
if "$PY" -c "import sys, kiln.core as mx; sys.exit(0 if mx.is_available(mx.gpu) else 1)"; then
  if [[ -x $BUILD/benchmarks/cpp/kiln_bench_gpu ]]; then
    run "GPU ops" "$PY" benchmarks/gpu/run.py --bench "$BUILD/benchmarks/cpp/kiln_bench_gpu" "${quick[@]}"
  else
    log "no $BUILD/benchmarks/cpp/kiln_bench_gpu (a build without the CUDA toolkit?)"
    failed+=("GPU ops (not built)")
  fi
  run "Python overhead (GPU)" "$PY" benchmarks/python/overhead.py --device gpu --out-dir "$OUT"
  run "GPU custom kernels" "$PY" benchmarks/gpu/custom_kernel.py --out-dir "$OUT" "${quick[@]}"
  run "kernel cookbook (GPU)" env KILN_DEVICE=gpu "$PY" examples/kernels/run_all.py --save --out-dir "$OUT" \
    "${cookbook_quick[@]}"
else
  log "no usable GPU: GPU suites skipped ($("$PY" -c "import kiln.core as mx
try:
    mx.default_stream(mx.gpu)
except Exception as e:
    print(str(e).split('] ', 1)[-1])" 2>/dev/null))"
fi

# ---------------------------------------------------------------- report
if [[ $OUT == benchmarks/results ]]; then
  run "report" "$PY" benchmarks/report.py --readme
else
  run "report" "$PY" benchmarks/report.py --results "$OUT"
fi

if ((${#failed[@]})); then
  log "failed: ${failed[*]}"
  exit 1
fi
log "done: reports in $OUT/"
