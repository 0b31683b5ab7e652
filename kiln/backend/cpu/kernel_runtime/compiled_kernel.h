// CPU custom kernels compiled by the host compiler, through an in-memory cache and the
// kernel disk cache (kiln/backend/kernels/disk_cache.h).
//
// The key is a SHA-256 over everything that shapes the shared object: the translation unit,
// the embedded headers it includes, the compiler's identity and version, the flags
// (including KILN_CXXFLAGS, which are appended), the runtime ABI and kiln's version. An
// entry holds the shared object and is verified against its content hash before the object
// is loaded; it is then loaded from memory (memfd), so what runs is what was verified.
// KILN_DEBUG=1 reports compilations and cache events on stderr.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kiln/backend/cpu/kernel_runtime/launch.h"
#include "kiln/backend/kernels/signature.h"

namespace kiln::cpu_rt {

struct CompiledKernel {
  KernelEntry entry;
  std::string key;     // the cache key (64 hex digits)
  std::string source;  // the translation unit that was compiled
};

/**
 * The CPU kernel of `program` (checking variant with `check`), compiled or loaded on first
 * request; thread-safe, one compilation per key. Throws fast::KernelCompileError when the
 * source does not compile (with the compiler's messages and the generated signature; the
 * failure is remembered for this source) or no compiler is found, std::runtime_error when
 * the shared object cannot be loaded.
 */
std::shared_ptr<const CompiledKernel> get_kernel(const kernels::KernelProgram& program, bool check);

/** Whether checking mode is on: KILN_KERNEL_CHECK set to anything but "" or "0". */
bool check_mode();

/** Counters since start (or the last reset), for tests and benchmarks. */
struct KernelCacheStats {
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t compiles = 0;  // host compiler runs
  uint64_t rejected = 0;  // disk entries found corrupt or tampered with
  uint64_t max_concurrent = 0;  // most host compilers seen running at once
};
KernelCacheStats kernel_cache_stats();
void reset_kernel_cache_stats();
/** Forgets the kernels held in memory (loaded shared objects stay loaded). */
void clear_kernel_memory_cache();
/** Path of the disk entry for `key` in `dir` (whether or not it exists). */
std::string kernel_cache_entry_path(const std::string& dir, const std::string& key);

}  // namespace kiln::cpu_rt
