// The part of libcu++ (cuda::std) that CUDA bodies written for MLX use: numeric_limits,
// array, min/max and the common type traits (tuple is in cuda/tuple.h). kiln's own
// small version, for NVRTC (which has no libcu++ without an include path) and for the host
// compiler alike; an `#include <cuda/std/...>` in a body or header is dropped (signature.cpp)
// because these are already here.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"


namespace cuda {
namespace std {

// ---------------------------------------------------------------- type traits

template <typename T, T v>
struct integral_constant {
  static constexpr T value = v;
  typedef T value_type;
  KILN_HD constexpr operator T() const { return v; }
};
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;
template <bool B>
using bool_constant = integral_constant<bool, B>;

using metal::detail::conditional;
using metal::detail::conditional_t;
using metal::detail::enable_if;
using metal::detail::enable_if_t;
using metal::detail::is_same_v;
using metal::detail::remove_cv;
using metal::detail::remove_cv_t;
template <typename A, typename B>
struct is_same : bool_constant<is_same_v<A, B>> {};
template <typename T>
struct is_integral : bool_constant<metal::detail::is_integral_v<T>> {};
template <typename T>
inline constexpr bool is_integral_v = metal::detail::is_integral_v<T>;
template <typename T>
struct is_floating_point : bool_constant<metal::detail::is_builtin_float_v<T>> {};
template <typename T>
inline constexpr bool is_floating_point_v = metal::detail::is_builtin_float_v<T>;
template <typename T>
inline constexpr bool is_arithmetic_v = metal::detail::is_arithmetic_v<T>;
template <typename T>
inline constexpr bool is_signed_v = metal::detail::is_signed_v<T>;
template <typename T>
inline constexpr bool is_unsigned_v = metal::detail::is_arithmetic_v<T> && !is_signed_v<T>;
template <typename T>
struct remove_reference {
  typedef T type;
};
template <typename T>
struct remove_reference<T&> {
  typedef T type;
};
template <typename T>
struct remove_reference<T&&> {
  typedef T type;
};
template <typename T>
using remove_reference_t = typename remove_reference<T>::type;
template <typename T>
using remove_cvref_t = remove_cv_t<remove_reference_t<T>>;
template <typename T>
using make_unsigned_t = typename metal::detail::make_unsigned<T>::type;

// ---------------------------------------------------------------- min, max

template <typename T>
KILN_HD constexpr const T& min(const T& a, const T& b) {
  return b < a ? b : a;
}
template <typename T>
KILN_HD constexpr const T& max(const T& a, const T& b) {
  return a < b ? b : a;
}

// ---------------------------------------------------------------- numeric_limits

template <typename T, typename = void>
struct numeric_limits {
  static constexpr bool is_specialized = false;
};

template <typename T>
struct numeric_limits<T, enable_if_t<is_integral_v<T>>> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = is_signed_v<T>;
  static constexpr bool is_integer = true;
  static constexpr bool has_infinity = false;
  static constexpr int digits = static_cast<int>(sizeof(T) * 8) - (is_signed_v<T> ? 1 : 0);
  static KILN_HD constexpr T max() {
    return is_signed_v<T> ? T((~0ull >> 1) >> (64 - sizeof(T) * 8)) : T(~0ull);
  }
  static KILN_HD constexpr T min() { return is_signed_v<T> ? T(-max() - 1) : T(0); }
  static KILN_HD constexpr T lowest() { return min(); }
};
template <>
struct numeric_limits<bool> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = false;
  static constexpr bool is_integer = true;
  static constexpr bool has_infinity = false;
  static constexpr int digits = 1;
  static KILN_HD constexpr bool max() { return true; }
  static KILN_HD constexpr bool min() { return false; }
  static KILN_HD constexpr bool lowest() { return false; }
};
template <>
struct numeric_limits<float> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = 24;
  static KILN_HD constexpr float max() { return 3.402823466e+38f; }
  static KILN_HD constexpr float min() { return 1.175494351e-38f; }
  static KILN_HD constexpr float lowest() { return -3.402823466e+38f; }
  static KILN_HD constexpr float epsilon() { return 1.192092896e-07f; }
  static KILN_HD constexpr float denorm_min() { return __builtin_bit_cast(float, 1u); }
  static KILN_HD constexpr float infinity() { return __builtin_bit_cast(float, 0x7f800000u); }
  static KILN_HD constexpr float quiet_NaN() { return __builtin_bit_cast(float, 0x7fc00000u); }
};
template <>
struct numeric_limits<double> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = 53;
  static KILN_HD constexpr double max() { return 1.7976931348623157e308; }
  static KILN_HD constexpr double min() { return 2.2250738585072014e-308; }
  static KILN_HD constexpr double lowest() { return -1.7976931348623157e308; }
  static KILN_HD constexpr double epsilon() { return 2.220446049250313e-16; }
  static KILN_HD constexpr double denorm_min() { return __builtin_bit_cast(double, 1ull); }
  static KILN_HD constexpr double infinity() {
    return __builtin_bit_cast(double, 0x7ff0000000000000ull);
  }
  static KILN_HD constexpr double quiet_NaN() {
    return __builtin_bit_cast(double, 0x7ff8000000000000ull);
  }
};

// ---------------------------------------------------------------- array

/** A fixed-size array usable as a kernel parameter (MLX passes shapes and strides so). */
template <typename T, size_t N>
struct array {
  T elems_[N];

  typedef T value_type;
  KILN_HD constexpr size_t size() const { return N; }
  KILN_HD constexpr bool empty() const { return N == 0; }
  KILN_HD T* data() { return elems_; }
  KILN_HD const T* data() const { return elems_; }
  template <typename I>
  KILN_HD T& operator[](I i) {
    return elems_[i];
  }
  template <typename I>
  KILN_HD const T& operator[](I i) const {
    return elems_[i];
  }
  KILN_HD T* begin() { return elems_; }
  KILN_HD T* end() { return elems_ + N; }
  KILN_HD const T* begin() const { return elems_; }
  KILN_HD const T* end() const { return elems_ + N; }
  KILN_HD T& front() { return elems_[0]; }
  KILN_HD T& back() { return elems_[N - 1]; }
};

}  // namespace std
}  // namespace cuda

