#!/usr/bin/env bash
# Fetches the Debian/Ubuntu packages of kiln's build-time libraries that a machine without
# network may lack (nlohmann-json's headers, zlib's headers and library, KISS FFT), and unpacks them
# into build/deps/ (or $1), which CMake searches after the system (KILN_DEPS_PREFIX); then
# cudnn-frontend's headers (scripts/fetch-cudnn-frontend.sh; optional: a failure only warns).
# Run it on a machine with network and the same distribution family; carry build/deps over.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=$(realpath -m "${1:-build/deps}")
pkgs=(nlohmann-json3-dev zlib1g-dev zlib1g libkissfft-dev libkissfft-float131)

log() { echo "[fetch-deps] $*" >&2; }
command -v apt-get >/dev/null || { log "apt-get is needed (Debian/Ubuntu)"; exit 1; }

work=$(mktemp -d)
chmod 755 "$work"  # apt downloads as the _apt user
trap 'rm -rf "$work"' EXIT
(
  cd "$work"
  # apt-get download needs current package lists; refresh them when running as root.
  if [[ $(id -u) -eq 0 ]]; then apt-get update -qq >&2 || log "apt-get update failed; using the lists there are"; fi
  apt-get download "${pkgs[@]}" >&2
)
mkdir -p "$dest"
for deb in "$work"/*.deb; do
  log "unpacking $(basename "$deb") into $dest"
  dpkg -x "$deb" "$dest"
done
test -f "$dest/usr/include/nlohmann/json.hpp" && test -f "$dest/usr/include/zlib.h" || {
  log "the unpacked packages lack nlohmann/json.hpp or zlib.h"
  exit 1
}
scripts/fetch-cudnn-frontend.sh "$dest" ||
  log "cudnn-frontend's headers were not fetched: the CUDA build will use kiln's attention kernels only"
log "done: configure with -DKILN_DEPS_PREFIX=$dest (the default when it is the project's build/deps)"
