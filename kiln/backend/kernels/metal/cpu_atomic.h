// Metal's atomic functions on the CPU, for atomic<T> in device or threadgroup memory, as
// std::atomic_ref operations (relaxed, as Metal's are). Where atomic_ref has no such
// operation (min/max, anything on half, bfloat or bool) a compare-and-swap loop computes
// the same function as metal/gpu_atomic.h.
#pragma once

#include "kiln/backend/kernels/cuda_cpu_check.h"
#include "kiln/backend/kernels/cuda_cpu_runtime.h"
#include "kiln/backend/kernels/metal/atomic.h"
#include "kiln/backend/kernels/metal/half.h"

namespace metal {

namespace detail {

template <typename T>
std::atomic_ref<T> atomic_of(atomic<T>* a) {
  kiln::cpu_rt::atomic_progress();
  return std::atomic_ref<T>(a->value_);
}

// atomic_ref's arithmetic covers integers and built-in floats (not bool or the half types).
template <typename T>
inline constexpr bool native_arith_v = is_arithmetic_v<T> && !is_same_v<remove_cv_t<T>, bool>;
template <typename T>
inline constexpr bool native_bits_v = is_integral_v<T> && !is_same_v<remove_cv_t<T>, bool>;

}  // namespace detail

template <typename T>
T atomic_load_explicit(const atomic<T>* a, memory_order = memory_order_relaxed) {
  return detail::atomic_of(const_cast<atomic<T>*>(a)).load(std::memory_order_relaxed);
}
template <typename T, typename U>
void atomic_store_explicit(atomic<T>* a, U v, memory_order = memory_order_relaxed) {
  detail::atomic_of(a).store(static_cast<T>(v), std::memory_order_relaxed);
}

template <typename T, typename U>
T atomic_fetch_add_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  const T v = static_cast<T>(arg);
  if constexpr (detail::native_arith_v<T>)
    return detail::atomic_of(a).fetch_add(v, std::memory_order_relaxed);
  else
    return kiln::cpu_rt::atomic_update(&a->value_, [v](T x) { return T(float(x) + float(v)); });
}
template <typename T, typename U>
T atomic_fetch_sub_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  const T v = static_cast<T>(arg);
  if constexpr (detail::native_arith_v<T>)
    return detail::atomic_of(a).fetch_sub(v, std::memory_order_relaxed);
  else
    return kiln::cpu_rt::atomic_update(&a->value_, [v](T x) { return T(float(x) - float(v)); });
}
template <typename T, typename U>
T atomic_fetch_max_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  const T v = static_cast<T>(arg);
  return kiln::cpu_rt::atomic_update(&a->value_, [v](T x) { return x < v ? v : x; });
}
template <typename T, typename U>
T atomic_fetch_min_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  const T v = static_cast<T>(arg);
  return kiln::cpu_rt::atomic_update(&a->value_, [v](T x) { return v < x ? v : x; });
}

#define KILN_ATOMIC_BITS(NAME, FETCH, OP)                                             \
  template <typename T, typename U>                                                   \
  T NAME(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {                  \
    const T v = static_cast<T>(arg);                                                  \
    if constexpr (detail::native_bits_v<T>)                                           \
      return detail::atomic_of(a).FETCH(v, std::memory_order_relaxed);                \
    else                                                                              \
      return kiln::cpu_rt::atomic_update(&a->value_, [v](T x) { return T(x OP v); }); \
  }
KILN_ATOMIC_BITS(atomic_fetch_and_explicit, fetch_and, &)
KILN_ATOMIC_BITS(atomic_fetch_or_explicit, fetch_or, |)
KILN_ATOMIC_BITS(atomic_fetch_xor_explicit, fetch_xor, ^)
#undef KILN_ATOMIC_BITS

template <typename T, typename U>
T atomic_exchange_explicit(atomic<T>* a, U arg, memory_order = memory_order_relaxed) {
  return detail::atomic_of(a).exchange(static_cast<T>(arg), std::memory_order_relaxed);
}
/** If *a equals *expected (bit patterns), stores `desired` and returns true; else loads *a
 * into *expected and returns false. */
template <typename T, typename U>
bool atomic_compare_exchange_weak_explicit(atomic<T>* a, T* expected, U desired,
                                           memory_order = memory_order_relaxed,
                                           memory_order = memory_order_relaxed) {
  // Strong: the GPU's compare-and-swap does not fail spuriously either.
  return detail::atomic_of(a).compare_exchange_strong(*expected, static_cast<T>(desired),
                                                      std::memory_order_relaxed);
}
template <typename T, typename U>
bool atomic_compare_exchange_strong_explicit(atomic<T>* a, T* expected, U desired,
                                             memory_order s = memory_order_relaxed,
                                             memory_order f = memory_order_relaxed) {
  return atomic_compare_exchange_weak_explicit(a, expected, desired, s, f);
}

// Checking mode: an atomic on a checked pointer checks the element, then acts on it.
#define KILN_ATOMIC_CHECKED(NAME)                           \
  template <typename A, typename... Args>                   \
  auto NAME(kiln::cpu_rt::checked_ptr<A> p, Args... args) { \
    return NAME(&*p, args...);                              \
  }
KILN_ATOMIC_CHECKED(atomic_load_explicit)
KILN_ATOMIC_CHECKED(atomic_store_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_add_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_sub_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_max_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_min_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_and_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_or_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_xor_explicit)
KILN_ATOMIC_CHECKED(atomic_exchange_explicit)
KILN_ATOMIC_CHECKED(atomic_compare_exchange_weak_explicit)
KILN_ATOMIC_CHECKED(atomic_compare_exchange_strong_explicit)
#undef KILN_ATOMIC_CHECKED

}  // namespace metal
