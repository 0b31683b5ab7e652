#!/usr/bin/env bash
# `make demo`: kiln's main demo, the LLM example (examples/llm: a Llama-style decoder trained
# on the King James Bible with custom kernels in its hot path, then sampled, full precision
# and 4-bit) on the default device with the interpreter `make` chose: the small config on
# the CPU, the ~100M one on a GPU. It prepares the corpus's token files once (the corpus
# comes from Debian's bible-kjv packages and the tokenizer from Hugging Face `tokenizers`,
# both installed by scripts/setup.sh; `tokenizers` is installed into .venv here when it is
# missing) and says what is missing and how to get it otherwise, running what it can.
#
# `make demo-digits` (or `--digits` first) runs the earlier demo instead
# (examples/python/demo.py: the seed's kernels and an MLP on scikit-learn's digits).
# Without the Python bindings, runs the C++ tutorial instead and says how to get them.
#
#   scripts/demo.sh [BUILD_DIR] [PYTHON] [--digits] [options of main.py demo or demo.py...]
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

if [[ "${1:-}" != "--digits" ]]; then
  # The LLM demo. `tokenizers` is needed once, to train the tokenizer; afterwards (and on
  # machines without it) the prepared files are read with the example's own BPE reader.
  if ! has tokenizers && [[ -z "$(ls examples/llm/data/kjv-bpe*/meta.json 2>/dev/null)" ]]; then
    if [[ $PY == "$PWD/.venv/"* ]]; then
      log "installing Hugging Face tokenizers (to train the BPE tokenizer) into .venv"
      "$PY" -m pip install -q --disable-pip-version-check tokenizers tqdm >&2 ||
        log "could not install tokenizers; install it with:  $PY -m pip install tokenizers"
    else
      log "Hugging Face tokenizers is missing; install it with:  $PY -m pip install tokenizers"
    fi
  fi
  exec env PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" "$PY" examples/llm/main.py demo "$@"
fi
shift
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
