// How a scatter combines an update with its target, atomically (duplicate indices may hit
// one element from many threads): the CPU's Assign, Sum, Prod, Max and Min
// (backend/cpu/indexing.cpp) with the same arithmetic per step, so that with distinct targets
// results are identical and with duplicates only the order of floating-point steps differs.
//
// Native atomics where the hardware has them (add of float, double, 32/64-bit integers and
// half types; max/min of 32/64-bit integers), else a compare-and-swap loop on the aligned 32-
// or 64-bit word holding the element (1- and 2-byte types, products, floating max/min).
#pragma once

#include "kiln/backend/cuda/device/types.cuh"

namespace kiln {

namespace scatter_detail {

template <int Size>
struct BitsOf;
template <>
struct BitsOf<1> {
  using type = unsigned char;
};
template <>
struct BitsOf<2> {
  using type = unsigned short;
};

template <typename T>
__device__ inline bool is_nan(T v) {
  if constexpr (is_half_v<T>)
    return float(v) != float(v);
  else if constexpr (is_same_v<T, float> || is_same_v<T, double>)
    return v != v;
  else
    return false;
}

/** Stores f(old) at `addr` atomically; f must be pure (it may run several times). */
template <typename T, typename F>
__device__ inline void atomic_update(T* addr, F f) {
  if constexpr (sizeof(T) == 8) {
    auto* p = reinterpret_cast<unsigned long long*>(addr);
    unsigned long long old = *p, assumed;
    do {
      assumed = old;
      const unsigned long long next = bits_as<unsigned long long>(f(bits_as<T>(assumed)));
      if (next == assumed) return;
      old = atomicCAS(p, assumed, next);
    } while (old != assumed);
  } else if constexpr (sizeof(T) == 4) {
    auto* p = reinterpret_cast<unsigned int*>(addr);
    unsigned int old = *p, assumed;
    do {
      assumed = old;
      const unsigned int next = bits_as<unsigned int>(f(bits_as<T>(assumed)));
      if (next == assumed) return;
      old = atomicCAS(p, assumed, next);
    } while (old != assumed);
  } else {
    // A 1- or 2-byte element inside its aligned 32-bit word.
    using Bits = typename BitsOf<sizeof(T)>::type;
    const unsigned long long a = reinterpret_cast<unsigned long long>(addr);
    auto* p = reinterpret_cast<unsigned int*>(a & ~3ull);
    const unsigned int shift = static_cast<unsigned int>(a & 3ull) * 8;
    const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    unsigned int old = *p, assumed;
    do {
      assumed = old;
      const T cur = bits_as<T>(static_cast<Bits>((assumed & mask) >> shift));
      const unsigned int nb = static_cast<unsigned int>(bits_as<Bits>(f(cur))) << shift;
      const unsigned int next = (assumed & ~mask) | (nb & mask);
      if (next == assumed) return;
      old = atomicCAS(p, assumed, next);
    } while (old != assumed);
  }
}

/** *d += u for a half type, rounded once per step as T(float(c) + float(u)) is. The
 * hardware's reduction in L2 where it has one (float16 from sm_70, bfloat16 from sm_90):
 * under contention (an embedding's gradient, with frequent tokens) a compare-and-swap loop
 * retries. */
template <typename T>
__device__ inline void add_half(T* d, T u) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  if constexpr (is_same_v<T, float16>) {
    asm volatile("red.add.noftz.f16 [%0], %1;" ::"l"(d), "h"(u.bits) : "memory");
    return;
  }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (is_same_v<T, bfloat16>) {
    asm volatile("red.add.noftz.bf16 [%0], %1;" ::"l"(d), "h"(u.bits) : "memory");
    return;
  }
#endif
  atomic_update(d, [u](T c) { return T(float(c) + float(u)); });
}

}  // namespace scatter_detail

/** out = update. With repeated indices, scatter and scatter_axis (indexing_gather.cuh) store
 * only the last index position's update (scatter_claim). */
struct ScatterAssign {
  template <typename T>
  __device__ static void apply(T* d, T u) {
    *d = u;
  }
};

struct ScatterSum {
  template <typename T>
  __device__ static void apply(T* d, T u) {
    if constexpr (is_same_v<T, bool>) {
      if (u) *d = true;  // d || u: storing true is idempotent
    } else if constexpr (is_same_v<T, float> || is_same_v<T, double>) {
      atomicAdd(d, u);
    } else if constexpr (is_same_v<T, int32> || is_same_v<T, uint32>) {
      atomicAdd(reinterpret_cast<unsigned int*>(d), static_cast<unsigned int>(u));
    } else if constexpr (is_same_v<T, int64> || is_same_v<T, uint64>) {
      atomicAdd(reinterpret_cast<unsigned long long*>(d), static_cast<unsigned long long>(u));
    } else if constexpr (is_complex_v<T>) {
      atomicAdd(&d->re, u.re);  // the parts add independently
      atomicAdd(&d->im, u.im);
    } else if constexpr (is_half_v<T>) {
      scatter_detail::add_half(d, u);
    } else {
      scatter_detail::atomic_update(d, [u](T c) { return static_cast<T>(c + u); });
    }
  }
};

struct ScatterProd {
  template <typename T>
  __device__ static void apply(T* d, T u) {
    if constexpr (is_same_v<T, bool>) {
      if (!u) *d = false;  // d && u
    } else if constexpr (is_half_v<T>) {
      scatter_detail::atomic_update(d, [u](T c) { return T(float(c) * float(u)); });
    } else {
      scatter_detail::atomic_update(d, [u](T c) { return static_cast<T>(c * u); });
    }
  }
};

// NaN propagates, as in maximum/minimum: a NaN update always replaces, a NaN target stays.
struct ScatterMax {
  template <typename T>
  __device__ static void apply(T* d, T u) {
    if constexpr (is_same_v<T, bool>) {
      if (u) *d = true;
    } else if constexpr (is_same_v<T, int32> || is_same_v<T, uint32> || is_same_v<T, int64> ||
                         is_same_v<T, uint64>) {
      atomicMax(d, u);
    } else {
      scatter_detail::atomic_update(
          d, [u](T c) { return (u > c || scatter_detail::is_nan(u)) ? u : c; });
    }
  }
};

struct ScatterMin {
  template <typename T>
  __device__ static void apply(T* d, T u) {
    if constexpr (is_same_v<T, bool>) {
      if (!u) *d = false;
    } else if constexpr (is_same_v<T, int32> || is_same_v<T, uint32> || is_same_v<T, int64> ||
                         is_same_v<T, uint64>) {
      atomicMin(d, u);
    } else {
      scatter_detail::atomic_update(
          d, [u](T c) { return (u < c || scatter_detail::is_nan(u)) ? u : c; });
    }
  }
};

}  // namespace kiln
