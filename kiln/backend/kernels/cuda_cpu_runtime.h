// What the CPU preludes of both flavours (cuda_cpu.h, metal/cpu.h) share: the current GPU
// thread, block barriers, warp exchanges, atomics support, printf, the CUDA qualifiers, and
// KILN_CPU_ENTRY, which exports the entry points of a generated kernel (cuda_cpu_abi.h).
// Host C++20 only: NVRTC never sees this file.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "kiln/backend/kernels/cuda_cpu_abi.h"

namespace kiln::cpu_rt {

/** The GPU thread running on this OS thread. Set when a thread starts, and again whenever
 * it comes back from the runtime (other threads of its block may have run meanwhile). */
// Hidden: each kernel's shared object has its own, reached without a symbol lookup.
__attribute__((visibility("hidden"))) inline thread_local Thread* current_thread = nullptr;

__attribute__((always_inline)) inline Thread& self() {
  return *current_thread;
}

/** Block barrier at `file:line` (divergent barriers are reported by site in checking
 * mode). Returns how many threads of the block passed a non-zero predicate. */
inline int block_barrier(int predicate, const char* file, int line) {
  Thread* t = current_thread;
  int n = t->rt->barrier(t, file, line, predicate);
  current_thread = t;
  return n;
}

/** The values the lanes taking part in a warp operation published. */
template <typename T>
struct WarpValues {
  WarpResult* result;
  uint32_t lanes;  // who took part
  uint32_t lane;   // this lane

  bool has(uint32_t l) const { return l < kWarpSize && (lanes >> l & 1); }
  T operator[](uint32_t l) const {
    T v;
    std::memcpy(static_cast<void*>(&v), result->values[l], sizeof(T));
    return v;
  }
  /** The value of lane `l`, or this lane's own when `l` did not take part. */
  T from(uint32_t l) const { return (*this)[has(l) ? l : lane]; }
};

/** Publishes `value` to the lanes of this warp that take part in the same call (every lane of
 * `mask` that has not exited; with mask 0, the lanes that arrive together)
 * and returns what each of them published. */
template <typename T>
inline WarpValues<T> warp_exchange(uint32_t mask, const T& value, const char* file, int line) {
  static_assert(std::is_trivially_copyable_v<T>, "warp operations need trivially copyable values");
  static_assert(sizeof(T) <= kWarpSlotBytes, "warp operations take values of up to 64 bytes");
  Thread* t = current_thread;
  WarpResult* r = t->rt->warp_exchange(t, file, line, mask, &value, sizeof(T));
  current_thread = t;
  return {r, r->lanes, t->linear % kWarpSize};
}

/** The lanes of this warp that reach the call, for operations without a value. */
inline uint32_t warp_sync(uint32_t mask, const char* file, int line) {
  return warp_exchange(mask, char(0), file, line).lanes;
}

/** Names the reduction of T by Op (a stateless operation) in WarpResult::cache; mutable, so
 * that no two share an address. */
template <typename T, typename Op>
inline char kReduceTag = 0;

/** Reduction over the lanes that took part. A full warp folds as the GPU's shuffle tree
 * (xor 16, 8, 4, 2, 1), so that float results match it bit for bit; otherwise the lanes
 * fold in lane order, as the GPU's exact path for partial warps. Every lane gets the same
 * result: the first lane to get here computes it, the others take it from the cache. */
template <typename T, typename Op>
inline T warp_reduce(const WarpValues<T>& v, Op op) {
  constexpr bool cached = std::is_empty_v<Op>;
  const void* tag = &kReduceTag<T, Op>;
  T acc;
  if (cached && v.result->cache_tag == tag) {
    std::memcpy(static_cast<void*>(&acc), v.result->cache, sizeof(T));
    return acc;
  }
  if (v.lanes == 0xffffffffu) {
    T x[kWarpSize];
    for (uint32_t i = 0; i < kWarpSize; ++i) x[i] = v[i];
    for (uint32_t d = kWarpSize / 2; d > 0; d /= 2) {
      for (uint32_t i = 0; i < d; ++i) x[i] = op(x[i], x[i + d]);
    }
    acc = x[0];
  } else {
    acc = v[v.lane];
    bool first = true;
    for (uint32_t i = 0; i < kWarpSize; ++i) {
      if (!v.has(i)) continue;
      acc = first ? v[i] : op(acc, v[i]);
      first = false;
    }
  }
  if (cached) {
    std::memcpy(v.result->cache, static_cast<const void*>(&acc), sizeof(T));
    v.result->cache_tag = tag;
  }
  return acc;
}

/** Inclusive scan up to this lane: a full warp as the GPU's Hillis-Steele tree (shuffle up
 * by 1, 2, 4, 8, 16), otherwise in lane order. */
template <typename T, typename Op>
inline T warp_inclusive_scan(const WarpValues<T>& v, Op op) {
  if (v.lanes == 0xffffffffu) {
    T x[kWarpSize], y[kWarpSize];
    for (uint32_t i = 0; i < kWarpSize; ++i) x[i] = v[i];
    for (uint32_t d = 1; d < kWarpSize; d *= 2) {
      for (uint32_t i = 0; i < kWarpSize; ++i) y[i] = i >= d ? op(x[i - d], x[i]) : x[i];
      for (uint32_t i = 0; i < kWarpSize; ++i) x[i] = y[i];
    }
    return x[v.lane];
  }
  T acc = v[v.lane];
  bool first = true;
  for (uint32_t i = 0; i <= v.lane; ++i) {
    if (!v.has(i)) continue;
    acc = first ? v[i] : op(acc, v[i]);
    first = false;
  }
  return acc;
}

/** Exclusive scan: the inclusive scan of the previous lane that took part, or `identity`. */
template <typename T, typename Op>
inline T warp_exclusive_scan(const WarpValues<T>& v, Op op, T identity) {
  uint32_t below = v.lanes & ((1u << v.lane) - 1u);
  if (!below) return identity;
  WarpValues<T> prev = v;
  prev.lane = 31u - static_cast<uint32_t>(__builtin_clz(below));
  return warp_inclusive_scan(prev, op);
}

/** Called by every atomic: now and then lets the other threads of the block run, so that a
 * thread spinning on an atomic does not starve the one it waits for. */
inline void atomic_progress() {
  Thread* t = current_thread;
  if (t && ++t->spins >= 256) {
    t->rt->yield(t);
    current_thread = t;
  }
}

/** Atomic read-modify-write by compare-and-swap, for what std::atomic_ref lacks (min/max of
 * floats, 16-bit floats). Returns the old value. */
template <typename T, typename F>
inline T atomic_update(T* p, F f) {
  atomic_progress();
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(old, static_cast<T>(f(old)), std::memory_order_relaxed)) {
  }
  return old;
}

/** printf from a kernel: formats into a buffer and writes the whole text at once. */
inline int vprint(const char* format, va_list args) {
  char small[512];
  va_list again;
  va_copy(again, args);
  int n = std::vsnprintf(small, sizeof small, format, args);
  if (n >= 0 && static_cast<size_t>(n) < sizeof small) {
    self().rt->print(small, static_cast<size_t>(n));
  } else if (n >= 0) {
    char* big = new char[static_cast<size_t>(n) + 1];
    std::vsnprintf(big, static_cast<size_t>(n) + 1, format, again);
    self().rt->print(big, static_cast<size_t>(n));
    delete[] big;
  }
  va_end(again);
  return n;
}

/** Stops the launch with `message`; the error names the kernel, block and thread. */
[[noreturn]] inline void trap(const char* message) {
  current_thread->rt->fail(current_thread, message);
  __builtin_unreachable();
}

/** Sets the indices of thread `linear` of block `b` (x fastest, as on the GPU). */
inline void place_thread(Thread& t, const Launch& L, uint64_t b, uint32_t linear) {
  t.block_idx = {static_cast<uint32_t>(b % L.blocks.x),
                 static_cast<uint32_t>(b / L.blocks.x % L.blocks.y),
                 static_cast<uint32_t>(b / (uint64_t(L.blocks.x) * L.blocks.y))};
  Dim3 d = L.threadgroup;
  if (L.metal_dispatch) {  // an edge threadgroup holds only the threads inside the grid
    d.x = L.grid.x - t.block_idx.x * d.x < d.x ? L.grid.x - t.block_idx.x * d.x : d.x;
    d.y = L.grid.y - t.block_idx.y * d.y < d.y ? L.grid.y - t.block_idx.y * d.y : d.y;
    d.z = L.grid.z - t.block_idx.z * d.z < d.z ? L.grid.z - t.block_idx.z * d.z : d.z;
  }
  t.block_dim = d;
  t.linear = linear;
  t.thread_idx = {linear % d.x, linear / d.x % d.y, linear / (d.x * d.y)};
}

/** The block loop of a kernel without barriers and warp operations: `invoke` runs the
 * current thread; inlined here, the compiler sees the body inside the loop. */
template <typename Invoke>
inline void run_blocks(const Launch* L, uint64_t begin, uint64_t end, unsigned char* shared,
                       Invoke invoke) {
  Thread t{};
  t.grid_dim = L->blocks;
  t.dynamic_shared = shared;
  t.rt = L->rt;
  t.launch = L;
  current_thread = &t;
  for (uint64_t b = begin; b < end; ++b) {
    place_thread(t, *L, b, 0);
    const Dim3 d = t.block_dim;
    uint32_t linear = 0;
    for (uint32_t z = 0; z < d.z; ++z) {
      for (uint32_t y = 0; y < d.y; ++y) {
        for (uint32_t x = 0; x < d.x; ++x, ++linear) {
          t.thread_idx = {x, y, z};
          t.linear = linear;
          invoke(L->args, L->params);
        }
      }
    }
  }
  current_thread = nullptr;
}

}  // namespace kiln::cpu_rt

// The call site of a barrier or warp operation, as default arguments: the caller's line.
#define KILN_SITE_PARAMS \
  const char *kiln_site_file = __builtin_FILE(), int kiln_site_line = __builtin_LINE()
#define KILN_SITE kiln_site_file, kiln_site_line

// CUDA's qualifiers mean nothing on the host. __shared__ storage is per OS thread, and a
// block runs on one OS thread from start to end: its threads share it, other blocks do not.
#define __global__ inline __attribute__((always_inline))
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __grid_constant__
#define __constant__ const
#define __shared__ static thread_local
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

/** Exports the entry points of a generated kernel; INVOKE(args, params) runs the kernel for
 * the current thread (signature.cpp generates it). */
#define KILN_CPU_ENTRY(INVOKE)                                                           \
  extern "C" __attribute__((visibility("default"))) uint32_t kiln_cpu_abi_version() {    \
    return ::kiln::cpu_rt::kAbiVersion;                                                  \
  }                                                                                      \
  extern "C" __attribute__((visibility("default"))) void kiln_cpu_run_thread(            \
      const ::kiln::cpu_rt::Launch* kiln_launch, ::kiln::cpu_rt::Thread* kiln_thread) {  \
    ::kiln::cpu_rt::current_thread = kiln_thread;                                        \
    INVOKE(kiln_launch->args, kiln_launch->params);                                      \
  }                                                                                      \
  extern "C" __attribute__((visibility("default"))) void kiln_cpu_run_blocks(            \
      const ::kiln::cpu_rt::Launch* kiln_launch, uint64_t kiln_begin, uint64_t kiln_end, \
      unsigned char* kiln_shared) {                                                      \
    ::kiln::cpu_rt::run_blocks(kiln_launch, kiln_begin, kiln_end, kiln_shared,           \
                               [](void* const* a, const void* p) { INVOKE(a, p); });     \
  }

namespace kiln_user {

/** printf in a kernel body or header (both live in namespace kiln_user). */
inline int printf(const char* format, ...) __attribute__((format(printf, 1, 2)));
inline int printf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  int n = ::kiln::cpu_rt::vprint(format, args);
  va_end(args);
  return n;
}

}  // namespace kiln_user

// A failed assert stops the launch with an error, as a device-side assert does.
#undef assert
#define assert(e) ((e) ? void(0) : ::kiln::cpu_rt::trap("assertion failed: " #e " (" __FILE__ ")"))
