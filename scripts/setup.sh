#!/usr/bin/env bash
# Installs what kiln's build and tests need, and only what is missing.
#  - Debian/Ubuntu packages with apt-get when run as root (else prints the exact command).
#  - Python packages: uses python3 when it already has them (e.g. the GPU machine, which has
#    no network), else a project virtual environment .venv filled with pip.
# Prints the Python interpreter to use on its last line of stdout (consumed by the Makefile).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "[setup] $*" >&2; }

# ---------------------------------------------------------------- system packages
missing=()
need() {  # need <debian-package> <test command...>
  local pkg=$1; shift
  if ! "$@" >/dev/null 2>&1; then missing+=("$pkg"); fi
}
has_header() { echo "#include <$1>" | ${CXX:-c++} -x c++ -E - "${@:2}" >/dev/null 2>&1; }
has_lib() { ldconfig -p 2>/dev/null | grep -q "$1" || ls /usr/lib/*/"$1"* /usr/lib/"$1"* /usr/local/lib/"$1"* >/dev/null 2>&1; }

need cmake command -v cmake
need ninja-build command -v ninja
need g++ command -v g++
need libopenblas-dev bash -c 'has_header() { echo "#include <$1>" | c++ -x c++ -E - -I/usr/include/openblas -I/usr/include/x86_64-linux-gnu/openblas-pthread >/dev/null 2>&1; }; has_header cblas.h'
need libopenblas-dev bash -c 'ldconfig -p | grep -q libopenblas'
need libgtest-dev bash -c 'ls /usr/lib/*/cmake/GTest/GTestConfig.cmake /usr/lib/cmake/GTest/GTestConfig.cmake /usr/local/lib/cmake/GTest/GTestConfig.cmake /usr/lib/*/libgtest.a 2>/dev/null | grep -q .'
need python3 command -v python3
# Array I/O: JSON headers (safetensors) and zlib (.npz). scripts/fetch-deps.sh fetches them
# for machines without network.
need nlohmann-json3-dev has_header nlohmann/json.hpp
need zlib1g-dev has_header zlib.h
# De-duplicate.
if ((${#missing[@]})); then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
fi

optional=()
command -v ccache >/dev/null 2>&1 || optional+=(ccache)
# CPU custom kernels switch fibers with Boost.Context (else with the slower ucontext).
has_lib libboost_context || optional+=(libboost-context-dev)

if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    log "installing: ${missing[*]} ${optional[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    if ((${#optional[@]})); then apt-get install -y -qq --no-install-recommends "${optional[@]}" >&2 || true; fi
  else
    log "missing system packages: ${missing[*]}"
    log "install them with:  sudo apt-get install -y ${missing[*]} ${optional[*]}"
    exit 1
  fi
fi

# CPU FFTs use KISS FFT when it is installed (optional: the build works without it).
if ! has_header kissfft/kiss_fft.h; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    log "installing libkissfft-dev (CPU FFTs)"
    { apt-get install -y -qq --no-install-recommends libkissfft-dev >&2 ||
      { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends libkissfft-dev >&2; }; } ||
      log "libkissfft-dev is not available: CPU FFTs will raise"
  else
    log "optional: sudo apt-get install -y libkissfft-dev (CPU FFTs)"
  fi
fi

# kiln.core.distributed on CPUs and its multi-process tests: Open MPI (libmpi is dlopen'ed at
# run time, so it stays optional: machines without it, e.g. offline GPU hosts, still build).
if ! { command -v mpirun && ldconfig -p | grep -q "libmpi\.so"; } >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    log "installing libopenmpi-dev openmpi-bin (distributed CPU collectives)"
    { apt-get install -y -qq --no-install-recommends libopenmpi-dev openmpi-bin >&2 ||
      { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends libopenmpi-dev openmpi-bin >&2; }; } ||
      log "Open MPI is not available: distributed CPU tests will skip"
  else
    log "optional: sudo apt-get install -y libopenmpi-dev openmpi-bin (distributed CPU collectives)"
  fi
fi

# The LLM demo's corpus (examples/llm): the King James Bible, Debian's bible-kjv-text (the
# compressed text) and bible-kjv (the `bible` program that reads it). Optional: without it
# the demo says how to install it and trains on the short sample text it ships.
if ! { command -v bible && test -e /usr/lib/bible.data; } >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    log "installing bible-kjv bible-kjv-text (the LLM demo's corpus)"
    { apt-get install -y -qq --no-install-recommends bible-kjv bible-kjv-text >&2 ||
      { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends bible-kjv bible-kjv-text >&2; }; } ||
      log "bible-kjv-text is not available: the LLM demo will train on its sample text"
  else
    log "optional: sudo apt-get install -y bible-kjv bible-kjv-text (the LLM demo's corpus)"
  fi
fi

# ---------------------------------------------------------------- Python
# Required: numpy, pybind11 >= 3, pytest. Optional extras are installed into .venv only.
py_ok() {
  "$1" - <<'PY' >/dev/null 2>&1
import numpy, pytest, pybind11
assert int(pybind11.__version__.split(".")[0]) >= 3
PY
}
PY_REQS=(numpy "pybind11>=3" pytest)
PY_EXTRAS=(ml_dtypes scikit-learn matplotlib safetensors gguf scipy hypothesis tokenizers tqdm)

if py_ok python3; then
  PY=$(command -v python3)
  log "using $PY (it has numpy, pybind11>=3 and pytest)"
elif [[ -x .venv/bin/python ]] && py_ok .venv/bin/python; then
  PY=$PWD/.venv/bin/python
  log "using the project environment $PY"
else
  if [[ ! -x .venv/bin/python ]]; then
    log "creating .venv"
    if ! python3 -m venv .venv >&2; then
      if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        apt-get install -y -qq python3-venv >&2 && python3 -m venv .venv >&2
      else
        log "python3 cannot create a virtual environment; install it with:  sudo apt-get install -y python3-venv"
        exit 1
      fi
    fi
  fi
  PY=$PWD/.venv/bin/python
  log "installing into .venv: ${PY_REQS[*]} ${PY_EXTRAS[*]}"
  "$PY" -m pip install -q --disable-pip-version-check "${PY_REQS[@]}" "${PY_EXTRAS[@]}" >&2
  py_ok "$PY" || { log "the Python packages did not install"; exit 1; }
fi
# Extras added after a .venv was made: installed into it when missing (offline: a note).
if [[ $PY == "$PWD/.venv/bin/python" ]]; then
  for mod_pkg in tokenizers:tokenizers tqdm:tqdm matplotlib:matplotlib; do
    if ! "$PY" -c "import ${mod_pkg%%:*}" >/dev/null 2>&1; then
      "$PY" -m pip install -q --disable-pip-version-check "${mod_pkg##*:}" >&2 ||
        log "optional: $PY -m pip install ${mod_pkg##*:} (the LLM demo)"
    fi
  done
fi
# cuDNN's fused attention (optional): cudnn-frontend's headers under build/deps, fetched once
# where cudnn.h is installed and they are missing (a machine without network only warns).
if [[ -f /usr/local/cuda/include/cudnn.h || -f /usr/include/cudnn.h ]] &&
  [[ ! -f build/deps/cudnn_frontend/include/cudnn_frontend.h ]]; then
  scripts/fetch-cudnn-frontend.sh >&2 ||
    log "optional: scripts/fetch-cudnn-frontend.sh (cuDNN attention; kiln's kernels serve without it)"
fi
echo "$PY"
