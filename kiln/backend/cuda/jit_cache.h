// The JIT's on-disk cache: one file per key, written atomically, verified when read.
#pragma once

#include <string>

#include "kiln/backend/cuda/jit.h"

namespace kiln::gpu::jit_disk {

enum class LoadStatus {
  missing,   // no entry for the key
  ok,        // `module` holds the verified entry
  rejected,  // an entry exists but is corrupt, truncated, tampered with or for another key
};

struct LoadResult {
  LoadStatus status = LoadStatus::missing;
  CompiledModule module;
  std::string reason;  // why an entry was rejected
};

/** Reads and verifies the entry for `key` (compiled for `target`) in `dir`. Never throws. */
LoadResult load(const std::string& dir, const std::string& key, const std::string& target);

/** Writes the entry for `key` atomically (temporary file + rename), and the source beside
 * it for inspection (<key>.cu). Best effort: a failure prints a warning once and is
 * otherwise ignored. Never throws. */
void store(const std::string& dir, const std::string& key, const CompiledModule& module,
           const std::string& source);

}  // namespace kiln::gpu::jit_disk
