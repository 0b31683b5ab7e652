// The JIT disk cache: CUDA modules as entries of the shared kernel disk cache
// (kiln/backend/kernels/disk_cache.h), one file <dir>/<key>.kjit per key.
// Payload: target, image, log, kernel count (u32), then (expression, lowered name) pairs;
// every string is a u32 LE length and its bytes. Any mismatch rejects the entry.
#include "kiln/backend/cuda/jit_cache.h"

#include "kiln/backend/kernels/disk_cache.h"

namespace kiln::gpu {

namespace {

constexpr char kMagic[] = "KILNJIT1";

}  // namespace

std::string jit_cache_dir() {
  return kernels::cache_dir();
}

std::string jit_cache_entry_path(const std::string& dir, const std::string& key) {
  return dir + "/" + key + ".kjit";
}

namespace jit_disk {

LoadResult load(const std::string& dir, const std::string& key, const std::string& target) {
  LoadResult res;
  kernels::Entry entry = kernels::read_entry(jit_cache_entry_path(dir, key), kMagic, key);
  if (entry.status != kernels::EntryStatus::ok) {
    res.status =
        entry.status == kernels::EntryStatus::missing ? LoadStatus::missing : LoadStatus::rejected;
    res.reason = std::move(entry.reason);
    return res;
  }
  kernels::ByteReader r{entry.payload};
  CompiledModule& m = res.module;
  m.target = r.str();
  m.image = r.str();
  m.log = r.str();
  uint64_t n = r.uint(4);
  for (uint64_t i = 0; r.ok && i < n; ++i) {
    std::string expr = r.str();
    std::string lowered = r.str();
    m.kernels.emplace_back(std::move(expr), std::move(lowered));
  }
  if (!r.at_end() || m.target != target) {
    res.status = LoadStatus::rejected;
    res.reason = "malformed payload";
    res.module = {};
    return res;
  }
  res.status = LoadStatus::ok;
  return res;
}

void store(const std::string& dir, const std::string& key, const CompiledModule& m,
           const std::string& source) {
  kernels::ByteWriter w;
  w.str(m.target);
  w.str(m.image);
  w.str(m.log);
  w.u32(static_cast<uint32_t>(m.kernels.size()));
  for (const auto& [expr, lowered] : m.kernels) {
    w.str(expr);
    w.str(lowered);
  }
  std::string why;
  if (!kernels::write_entry(dir, jit_cache_entry_path(dir, key), kMagic, key, w.out, why) ||
      !kernels::write_file_atomic(dir, dir + "/" + key + ".cu", source, why)) {
    kernels::warn_once("JIT disk cache write failed: " + why + "; kernels stay cached in memory.");
  }
}

}  // namespace jit_disk

}  // namespace kiln::gpu
