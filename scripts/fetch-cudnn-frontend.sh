#!/usr/bin/env bash
# Fetches cudnn-frontend's C++ headers (header-only; the include/ of PyPI's
# nvidia-cudnn-frontend wheel) into build/deps/cudnn_frontend/include (or $1/cudnn_frontend/include),
# where CMake finds them (cmake/kiln_cuda.cmake): with them and cudnn.h, the CUDA build has
# cuDNN's fused attention (KILN_SDPA_BACKEND). Run it on a machine with network and carry
# build/deps over; scripts/fetch-deps.sh runs it too. Optional: without the headers kiln's own
# attention kernels serve.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=$(realpath -m "${1:-build/deps}")/cudnn_frontend
# Pinned: the version kiln's cuDNN path was compiled against (override: CUDNN_FRONTEND_VERSION).
version=${CUDNN_FRONTEND_VERSION:-1.32.0}

log() { echo "[fetch-cudnn-frontend] $*" >&2; }
py=python3
[[ -x .venv/bin/python ]] && py=.venv/bin/python
"$py" -m pip --version >/dev/null 2>&1 || { log "pip is needed ($py -m pip)"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "downloading nvidia-cudnn-frontend==$version"
"$py" -m pip download -q --disable-pip-version-check --retries 1 --timeout 20 --no-deps --only-binary=:all: \
  "nvidia-cudnn-frontend==$version" -d "$work" >&2
wheel=$(ls "$work"/nvidia_cudnn_frontend-*.whl | head -n1)
"$py" -m zipfile -e "$wheel" "$work/x"
test -f "$work/x/include/cudnn_frontend.h" || { log "the wheel has no include/cudnn_frontend.h"; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"
cp -r "$work/x/include" "$dest/include"
echo "$version" > "$dest/VERSION"
log "done: $dest/include ($(du -sh "$dest/include" | cut -f1))"
