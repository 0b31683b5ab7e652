// Run-time compilation of GPU kernels with NVRTC, and their caches.
//
// Every GPU kernel kiln runs, built-in or custom, is CUDA C++ compiled here on first use for
// the device's architecture. Three layers:
//   compile         source -> CUBIN/PTX with NVRTC; needs no GPU (CI compiles this way).
//   compile_cached  the same through an in-memory cache and an on-disk cache.
//   get_module      a compiled module loaded on a device, looked up by name (the hot path).
//
// The disk cache lives in $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln;
// KILN_CACHE=0 turns it off. The directory is private to the user (0700), since it holds
// code that gets executed. Entries are keyed by a SHA-256 over everything that affects the
// result (source, headers it can include, options, target, NVRTC and kiln versions), written
// atomically (temporary file + rename, so concurrent processes are safe) and verified on
// read against a content hash; a corrupt or tampered entry is recompiled, never loaded.
// KILN_DEBUG=1 reports compilations and cache events on stderr.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::gpu {

/** A translation unit for NVRTC and the kernels to look up in it. */
struct ModuleSource {
  /** Names the program in compiler messages ("<name>.cu(12): error ...") and in errors. */
  std::string name;
  /** CUDA C++. May include the embedded device headers by their repository path,
   * e.g. #include "kiln/backend/cuda/device/unary.cuh". */
  std::string source;
  /** Name expressions of the kernels to look up, e.g. "kiln::unary_v<kiln::Exp, float,
   * float, 4>" (templates are instantiated by being named) or "my_kernel". */
  std::vector<std::string> kernels;
  /** Extra NVRTC options, e.g. "-DBLOCK=256". */
  std::vector<std::string> options = {};
  /** Extra headers (include name, text), e.g. an extension's own device code. */
  std::vector<std::pair<std::string, std::string>> headers = {};
};

/** The result of compiling a ModuleSource for one target. */
struct CompiledModule {
  /** "sm_90" (image is a CUBIN) or "compute_90" (image is PTX, JIT-compiled by the driver). */
  std::string target;
  std::string image;
  /** For each requested name expression, its lowered (mangled) symbol name. */
  std::vector<std::pair<std::string, std::string>> kernels;
  /** Compiler warnings; empty when the source compiled cleanly. */
  std::string log;

  bool is_cubin() const { return target.starts_with("sm_"); }
  /** The mangled name of `expr`, or null when the module has no such kernel. */
  const std::string* lowered_name(std::string_view expr) const;
};

/** An NVRTC compilation failure. `what()` names the module and target and holds the
 * compiler log; `log()` is the log alone. */
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& module, const std::string& target, std::string log);
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

/** NVRTC's version as {major, minor}. */
std::pair<int, int> nvrtc_version();
/** The real architectures NVRTC can emit, ascending (e.g. 75, 80, ..., 90, 100, 120). */
const std::vector<int>& nvrtc_supported_archs();
/** The target for a device of compute capability `cc` (major * 10 + minor): "sm_<cc>" when
 * NVRTC supports it, else PTX ("compute_<n>") for the newest supported arch below it, which
 * the driver compiles. Throws std::runtime_error when NVRTC supports nothing that old. */
std::string target_for_arch(int cc);

/**
 * Compiles `src` with NVRTC for `target` ("sm_XX" for a CUBIN, "compute_XX" for PTX). Needs
 * no GPU and no driver, and bypasses the caches. Throws CompileError (with the log) when the
 * source does not compile or a kernel name cannot be resolved, std::invalid_argument for a
 * malformed target, std::runtime_error when NVRTC itself fails.
 */
CompiledModule compile(const ModuleSource& src, const std::string& target = "sm_90");

/** The cache key of `src` compiled for `target`: SHA-256 (hex) over the source, the
 * embedded device headers, extra headers, options, kernel names, target, NVRTC version and
 * kiln version. */
std::string cache_key(const ModuleSource& src, const std::string& target);

/**
 * `compile` through the in-memory cache, then the disk cache. Thread-safe: concurrent
 * requests for one key compile once; different keys compile in parallel.
 */
std::shared_ptr<const CompiledModule> compile_cached(const ModuleSource& src,
                                                     const std::string& target = "sm_90");

/** Counters of the compile cache since start (or the last reset), for tests and tuning. */
struct JitStats {
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t compiles = 0;  // NVRTC runs
  uint64_t rejected = 0;  // disk entries found corrupt, tampered with or unreadable
  uint64_t max_concurrent = 0;  // most NVRTC compilations seen running at once
};
JitStats jit_stats();
void reset_jit_stats();
/** Forgets every compiled image held in memory (loaded modules stay loaded). */
void clear_jit_memory_cache();

/** The disk cache directory in use, after creating it (0700) and checking that it is
 * private; "" when the disk cache is off or unusable (a warning says why, once). */
std::string jit_cache_dir();
/** Path of the disk entry for `key` in `dir` (whether or not it exists). */
std::string jit_cache_entry_path(const std::string& dir, const std::string& key);

/** A compiled module loaded into a device's context. Lives until the process ends. */
class Module {
 public:
  Module(CUmodule module, const CompiledModule& compiled);
  /** The kernel for name expression `expr`; std::invalid_argument if the module has none. */
  CUfunction function(std::string_view expr) const;
  /** The address of the module's global variable `name` (an extern "C" name); 0 when the
   * module has none. */
  CUdeviceptr global(const char* name) const;

 private:
  CUmodule module_;
  std::vector<std::pair<std::string, CUfunction>> functions_;
};

/**
 * The module `name` on GPU `device`. The first request calls `build()` (its `name` may be
 * left empty), compiles through `compile_cached` for the device's architecture and loads
 * the result; later requests are a hash lookup. `name` must identify the source: two
 * different sources must never share a name (include a hash for generated code).
 * Thread-safe; throws CompileError or std::runtime_error, and a failed build is retried by
 * the next request.
 */
const Module& get_module(int device, const std::string& name,
                         const std::function<ModuleSource()>& build);

/** One kernel of the module `name` (see get_module). */
inline CUfunction get_kernel(int device, const std::string& name,
                             const std::function<ModuleSource()>& build, std::string_view kernel) {
  return get_module(device, name, build).function(kernel);
}

// ---------------------------------------------------------------- catalog
// Every module the backend can request, by family, so that a test without a GPU can compile
// them all (the CI guard against kernels that only break on some dtype or layout).

/** Receives one module: its name (as passed to get_module) and its source. */
using ModuleSink = std::function<void(const std::string& name, const ModuleSource& src)>;

/** Registers `enumerate`, which passes every module of `family` to its sink. Returns true
 * (for use in a static initializer: KILN_GPU_MODULE_CATALOG). */
bool register_module_catalog(const std::string& family,
                             std::function<void(const ModuleSink&)> enumerate);
/** The registered families, sorted. */
std::vector<std::string> module_catalog_families();
/** Passes every module of `family` to `sink`; std::invalid_argument for an unknown family. */
void for_each_catalog_module(const std::string& family, const ModuleSink& sink);

}  // namespace kiln::gpu

/** Registers a family's module enumerator at load time (file scope). */
#define KILN_GPU_MODULE_CATALOG(family, ...)                     \
  [[maybe_unused]] static const bool kiln_gpu_catalog_##family = \
      ::kiln::gpu::register_module_catalog(#family, __VA_ARGS__)
