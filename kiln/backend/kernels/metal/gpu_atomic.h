// Metal's atomic functions on NVIDIA GPUs, for atomic<T> in device or threadgroup memory:
// int, uint, 64-bit integers, float, and (by compare-and-swap on the enclosing 32-bit
// word) half, bfloat and bool. All are relaxed, as Metal's are.
#pragma once

#include "kiln/backend/kernels/metal/atomic.h"
#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/math.h"

namespace metal {

namespace detail {

// CUDA's atomics take int, unsigned, unsigned long long and float; 64-bit signed values
// use the unsigned ones (two's complement makes add, and, or, xor, exchange identical).
template <typename T>
KILN_HD auto* native_ptr(atomic<T>* a) {
  if constexpr (is_same_v<T, int64_t> || is_same_v<T, long>)
    return reinterpret_cast<unsigned long long*>(&a->value_);
  else if constexpr (is_same_v<T, unsigned long>)
    return reinterpret_cast<unsigned long long*>(&a->value_);
  else
    return &a->value_;
}
template <typename T>
KILN_HD auto native_value(T v) {
  if constexpr (sizeof(T) == 8 && is_integral_v<T>)
    return static_cast<unsigned long long>(v);
  else
    return v;
}

// Plain loads and stores of an atomic's value. On the GPU a volatile access (what CUDA's
// atomics pair with); in CPU kernels a relaxed atomic one: a volatile read racing with
// another thread's compare-and-swap is a data race there (ThreadSanitizer, SubwordAtomics).
template <typename U>
KILN_HD U relaxed_load(const U* p) {
#if defined(KILN_DEVICE_CODE)
  return *reinterpret_cast<const volatile U*>(p);
#else
  U v;
  __atomic_load(p, &v, __ATOMIC_RELAXED);
  return v;
#endif
}
template <typename U>
KILN_HD void relaxed_store(U* p, U v) {
#if defined(KILN_DEVICE_CODE)
  *reinterpret_cast<volatile U*>(p) = v;
#else
  __atomic_store(p, &v, __ATOMIC_RELAXED);
#endif
}

// Read-modify-write of a 1- or 2-byte value by compare-and-swap on its aligned 32-bit word.
template <typename T, typename F>
KILN_HD T cas_small(T* p, F f) {
  typedef conditional_t<sizeof(T) == 1, uint8_t, uint16_t> B;
  uint32_t* word = reinterpret_cast<uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(3));
  const int shift = static_cast<int>(reinterpret_cast<uintptr_t>(p) & 3) * 8;
  const uint32_t mask = static_cast<uint32_t>(static_cast<B>(~B(0))) << shift;
  uint32_t old = relaxed_load(word), assumed;
  do {
    assumed = old;
    T cur = __builtin_bit_cast(T, static_cast<B>(assumed >> shift));
    uint32_t bits = __builtin_bit_cast(B, static_cast<T>(f(cur)));
    old = atomicCAS(word, assumed, (assumed & ~mask) | (bits << shift));
  } while (old != assumed);
  return __builtin_bit_cast(T, static_cast<B>(old >> shift));
}

// Read-modify-write of a 32- or 64-bit value by compare-and-swap.
template <typename T, typename F>
KILN_HD T cas_rmw(T* p, F f) {
  typedef conditional_t<sizeof(T) == 8, unsigned long long, unsigned> U;
  U* q = reinterpret_cast<U*>(p);
  U old = relaxed_load(q), assumed;
  do {
    assumed = old;
    T next = f(__builtin_bit_cast(T, assumed));
    old = atomicCAS(q, assumed, __builtin_bit_cast(U, next));
  } while (old != assumed);
  return __builtin_bit_cast(T, old);
}

}  // namespace detail

template <typename T>
KILN_HD T atomic_load_explicit(const atomic<T>* a, memory_order = memory_order_relaxed) {
  return detail::relaxed_load(&a->value_);
}
template <typename T, typename U>
KILN_HD void atomic_store_explicit(atomic<T>* a, U v, memory_order = memory_order_relaxed) {
  detail::relaxed_store(&a->value_, static_cast<T>(v));
}

template <typename T, typename U>
KILN_HD T atomic_fetch_add_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  const T v = static_cast<T>(arg);
  if constexpr (is_half_v<T>)
    return detail::cas_small(&a->value_, [v](T x) { return float(x) + float(v); });
  else
    return static_cast<T>(atomicAdd(detail::native_ptr(a), detail::native_value(v)));
}
template <typename T, typename U>
KILN_HD T atomic_fetch_sub_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  const T v = static_cast<T>(arg);
  if constexpr (is_half_v<T>)
    return detail::cas_small(&a->value_, [v](T x) { return float(x) - float(v); });
  else if constexpr (detail::is_builtin_float_v<T>)
    return atomicAdd(&a->value_, -v);
  else
    return static_cast<T>(atomicAdd(detail::native_ptr(a), detail::native_value(T(0) - v)));
}
template <typename T, typename U>
KILN_HD T atomic_fetch_max_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  const T v = static_cast<T>(arg);
  if constexpr (is_half_v<T>)
    return detail::cas_small(&a->value_, [v](T x) { return x < v ? v : x; });
  else if constexpr (detail::is_builtin_float_v<T>)
    return detail::cas_rmw(&a->value_, [v](T x) { return x < v ? v : x; });
  else if constexpr (sizeof(T) == 8 && detail::is_signed_v<T>)
    return static_cast<T>(
        atomicMax(reinterpret_cast<long long*>(&a->value_), static_cast<long long>(v)));
  else
    return static_cast<T>(atomicMax(detail::native_ptr(a), detail::native_value(v)));
}
template <typename T, typename U>
KILN_HD T atomic_fetch_min_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  const T v = static_cast<T>(arg);
  if constexpr (is_half_v<T>)
    return detail::cas_small(&a->value_, [v](T x) { return v < x ? v : x; });
  else if constexpr (detail::is_builtin_float_v<T>)
    return detail::cas_rmw(&a->value_, [v](T x) { return v < x ? v : x; });
  else if constexpr (sizeof(T) == 8 && detail::is_signed_v<T>)
    return static_cast<T>(
        atomicMin(reinterpret_cast<long long*>(&a->value_), static_cast<long long>(v)));
  else
    return static_cast<T>(atomicMin(detail::native_ptr(a), detail::native_value(v)));
}
template <typename T, typename U>
KILN_HD T atomic_fetch_and_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  return static_cast<T>(
      atomicAnd(detail::native_ptr(a), detail::native_value(static_cast<T>(arg))));
}
template <typename T, typename U>
KILN_HD T atomic_fetch_or_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  return static_cast<T>(atomicOr(detail::native_ptr(a), detail::native_value(static_cast<T>(arg))));
}
template <typename T, typename U>
KILN_HD T atomic_fetch_xor_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  return static_cast<T>(
      atomicXor(detail::native_ptr(a), detail::native_value(static_cast<T>(arg))));
}
template <typename T, typename U>
KILN_HD T atomic_exchange_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  const T v = static_cast<T>(arg);
  if constexpr (sizeof(T) < 4)
    return detail::cas_small(&a->value_, [v](T) { return v; });
  else if constexpr (detail::is_builtin_float_v<T> && sizeof(T) == 8)
    return detail::cas_rmw(&a->value_, [v](T) { return v; });
  else
    return static_cast<T>(atomicExch(detail::native_ptr(a), detail::native_value(v)));
}
/** If *a equals *expected, stores `desired` and returns true; else loads *a into
 * *expected and returns false. Compares bit patterns. */
template <typename T, typename U>
KILN_HD bool atomic_compare_exchange_weak_explicit(atomic<T>* a, T* expected, U desired,
                                                   memory_order = memory_order_relaxed,
                                                   memory_order = memory_order_relaxed) {
  const T want = static_cast<T>(desired);
  if constexpr (sizeof(T) < 4) {
    typedef detail::conditional_t<sizeof(T) == 1, uint8_t, uint16_t> B;
    bool ok = false;
    const B exp_bits = __builtin_bit_cast(B, *expected);
    T old = detail::cas_small(&a->value_, [&](T x) {
      ok = __builtin_bit_cast(B, x) == exp_bits;
      return ok ? want : x;
    });
    if (!ok) *expected = old;
    return ok;
  } else {
    typedef detail::conditional_t<sizeof(T) == 8, unsigned long long, unsigned> W;
    const W e = __builtin_bit_cast(W, *expected);
    const W old = atomicCAS(reinterpret_cast<W*>(&a->value_), e, __builtin_bit_cast(W, want));
    if (old == e) return true;
    *expected = __builtin_bit_cast(T, old);
    return false;
  }
}
template <typename T, typename U>
KILN_HD bool atomic_compare_exchange_strong_explicit(atomic<T>* a, T* expected, U desired,
                                                     memory_order s = memory_order_relaxed,
                                                     memory_order f = memory_order_relaxed) {
  return atomic_compare_exchange_weak_explicit(a, expected, desired, s, f);
}

}  // namespace metal
