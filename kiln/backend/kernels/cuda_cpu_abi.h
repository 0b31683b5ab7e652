// The interface between a CPU custom kernel (a shared object compiled at run time from the
// generated source) and kiln's kernel runtime (kiln/backend/cpu/kernel_runtime/).
//
// The shared object imports no symbol from kiln: the runtime passes a table of functions
// (Runtime) with every launch, so a kernel loads the same way whether kiln was linked into
// the program or dlopen'ed privately (as Python extensions are). Plain C++17, no includes
// beyond <cstdint>/<cstddef>: generated code and libkiln both compile it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::cpu_rt {

/** Bumped whenever the layout of anything below changes (part of the cache key). */
inline constexpr uint32_t kAbiVersion = 2;
inline constexpr uint32_t kWarpSize = 32;
/** Largest value a warp operation exchanges per lane (a double4, or three matrix slices). */
inline constexpr uint32_t kWarpSlotBytes = 64;

struct Dim3 {
  uint32_t x, y, z;
};

struct Runtime;

/** What a completed warp operation gives the lanes that took part; valid until the lane's
 * next warp operation. */
struct WarpResult {
  alignas(64) unsigned char values[kWarpSize][kWarpSlotBytes];  // lane l's value at [l]
  uint32_t lanes;                                               // who took part
  /** A result every lane of this completion computes alike (a reduction), kept by the first
   * lane that computes it for the others: `cache_tag` names it, null at each completion. */
  const void* cache_tag;
  alignas(16) unsigned char cache[kWarpSlotBytes];
};

/** One GPU thread as the kernel sees it. The runtime owns it in fiber mode; the block loop
 * of a barrier-free kernel keeps one on its stack and rewrites it per thread. */
struct Thread {
  Dim3 thread_idx;  // threadIdx / thread_position_in_threadgroup
  Dim3 block_idx;   // blockIdx / threadgroup_position_in_grid
  Dim3 block_dim;   // blockDim: the real size of this block (smaller at Metal grid edges)
  Dim3 grid_dim;    // gridDim, in blocks
  uint32_t linear;  // index in the block, x fastest
  uint32_t spins;   // atomics since the last yield (see Runtime::yield)
  void* fiber;      // the runtime's state of this thread; null in the block loop
  unsigned char* dynamic_shared;  // this block's dynamic shared memory
  const Runtime* rt;
  const struct Launch* launch;
};

/** Functions the runtime provides to kernels. Those that may switch fibers return only
 * when the thread may go on. `fail` throws (the launch stops with that message). */
struct Runtime {
  uint32_t abi_version;
  /** Block barrier at `file:line`; returns how many threads of the block passed a non-zero
   * `predicate` (for __syncthreads_count/and/or). */
  int (*barrier)(Thread* t, const char* file, int line, int predicate);
  /**
   * Warp collective at `file:line`: publishes `bytes` (<= kWarpSlotBytes) of `value` and
   * waits for the lanes of this warp that take part, then returns their values (the other
   * slots are stale). With a `mask` (CUDA's collectives), every lane of it that has not
   * exited must reach the same call; with mask 0 (Metal's simdgroup functions,
   * __activemask), the lanes that reach it together take part, those of other branches not.
   */
  WarpResult* (*warp_exchange)(Thread* t, const char* file, int line, uint32_t mask,
                               const void* value, uint32_t bytes);
  /** Lets other threads of the block run (called now and then by atomics, so that a spin
   * loop on an atomic makes progress with cooperative threads). */
  void (*yield)(Thread* t);
  /** Stops the launch with `message` (checking mode, traps); names the kernel, block and
   * thread. Never returns. */
  void (*fail)(const Thread* t, const char* message);
  /** printf from a kernel: one line of output at a time, as on the GPU. */
  void (*print)(const char* text, size_t n);
};

/** Everything one launch passes to the entry points of the shared object. */
struct Launch {
  void* const* args;  // one per input then output: the data pointer
  // Checking mode: the bytes around each pointer that belong to its array, [begin, end)
  // relative to it (begin < 0 for views with negative strides), and the arrays' names.
  const int64_t* arg_begin;
  const int64_t* arg_end;
  const char* const* arg_names;
  uint32_t num_args;
  const void* params;       // the generated parameter struct (kiln_params)
  Dim3 grid;                // threads per dimension, as the user gave it
  Dim3 threadgroup;         // threads per block
  Dim3 blocks;              // gridDim
  uint32_t metal_dispatch;  // 1: no thread outside `grid` exists (Metal); 0: CUDA's
  uint32_t dynamic_shared;  // bytes of dynamic shared memory per block
  const Runtime* rt;
};

/** Entry points every generated shared object exports (extern "C"). */
using AbiVersionFn = uint32_t (*)();
/** Runs the blocks with linear index in [begin, end) thread after thread, without fibers:
 * only for kernels without barriers and warp operations. */
using RunBlocksFn = void (*)(const Launch* launch, uint64_t begin, uint64_t end,
                             unsigned char* dynamic_shared);
/** Runs one thread (fiber mode): `t` has its indices set. */
using RunThreadFn = void (*)(const Launch* launch, Thread* t);

inline constexpr const char* kAbiVersionSymbol = "kiln_cpu_abi_version";
inline constexpr const char* kRunBlocksSymbol = "kiln_cpu_run_blocks";
inline constexpr const char* kRunThreadSymbol = "kiln_cpu_run_thread";

}  // namespace kiln::cpu_rt
