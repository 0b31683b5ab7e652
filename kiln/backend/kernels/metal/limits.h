// Metal's <metal_limits> (metal::numeric_limits for every scalar type, the half types
// included) and its float constants (M_PI_F, MAXFLOAT, FLT_EPSILON, HALF_MAX ...).
#pragma once

#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/half.h"

namespace metal {

/**
 * metal::numeric_limits: the <metal_limits> members (is_specialized, is_signed, is_integer,
 * has_infinity, has_quiet_NaN, digits, digits10, radix, min_exponent, max_exponent) and
 * functions (min, max, lowest, epsilon, infinity, quiet_NaN, denorm_min, round_error) for
 * every scalar type. The half types' functions are not constexpr (they are classes).
 */
template <typename T, typename = void>
struct numeric_limits {
  static constexpr bool is_specialized = false;
};
template <typename T>
struct numeric_limits<const T> : numeric_limits<T> {};

namespace detail {
template <bool Signed, bool Integer, bool Inf, int Digits, int Digits10, int MinExp, int MaxExp>
struct limits_traits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = Signed;
  static constexpr bool is_integer = Integer;
  static constexpr bool is_exact = Integer;
  static constexpr bool has_infinity = Inf;
  static constexpr bool has_quiet_NaN = Inf;
  static constexpr bool has_signaling_NaN = Inf;
  static constexpr int digits = Digits;
  static constexpr int digits10 = Digits10;
  static constexpr int radix = 2;
  static constexpr int min_exponent = MinExp;
  static constexpr int max_exponent = MaxExp;
};
}  // namespace detail

template <>
struct numeric_limits<float> : detail::limits_traits<true, false, true, 24, 6, -125, 128> {
  static KILN_HD constexpr float max() { return 3.402823466e+38f; }
  static KILN_HD constexpr float min() { return 1.175494351e-38f; }
  static KILN_HD constexpr float lowest() { return -3.402823466e+38f; }
  static KILN_HD constexpr float epsilon() { return 1.192092896e-07f; }
  static KILN_HD constexpr float round_error() { return 0.5f; }
  static KILN_HD constexpr float denorm_min() { return __builtin_bit_cast(float, 1u); }
  static KILN_HD constexpr float infinity() { return __builtin_bit_cast(float, 0x7f800000u); }
  static KILN_HD constexpr float quiet_NaN() { return __builtin_bit_cast(float, 0x7fc00000u); }
  static KILN_HD constexpr float signaling_NaN() { return __builtin_bit_cast(float, 0x7fa00000u); }
};
template <>
struct numeric_limits<double> : detail::limits_traits<true, false, true, 53, 15, -1021, 1024> {
  static KILN_HD constexpr double max() { return 1.7976931348623157e308; }
  static KILN_HD constexpr double min() { return 2.2250738585072014e-308; }
  static KILN_HD constexpr double lowest() { return -1.7976931348623157e308; }
  static KILN_HD constexpr double epsilon() { return 2.220446049250313e-16; }
  static KILN_HD constexpr double round_error() { return 0.5; }
  static KILN_HD constexpr double denorm_min() { return __builtin_bit_cast(double, 1ull); }
  static KILN_HD constexpr double infinity() {
    return __builtin_bit_cast(double, 0x7ff0000000000000ull);
  }
  static KILN_HD constexpr double quiet_NaN() {
    return __builtin_bit_cast(double, 0x7ff8000000000000ull);
  }
};
#define KILN_HALF_LIMITS(H, D, D10, MINE, MAXE, MAX, MIN, LOW, EPS, DEN, INF, NAN_)         \
  template <>                                                                               \
  struct numeric_limits<H> : detail::limits_traits<true, false, true, D, D10, MINE, MAXE> { \
    static KILN_HD H max() { return H::from_bits(MAX); }                                    \
    static KILN_HD H min() { return H::from_bits(MIN); }                                    \
    static KILN_HD H lowest() { return H::from_bits(LOW); }                                 \
    static KILN_HD H epsilon() { return H::from_bits(EPS); }                                \
    static KILN_HD H round_error() { return H(0.5f); }                                      \
    static KILN_HD H denorm_min() { return H::from_bits(DEN); }                             \
    static KILN_HD H infinity() { return H::from_bits(INF); }                               \
    static KILN_HD H quiet_NaN() { return H::from_bits(NAN_); }                             \
  };
KILN_HALF_LIMITS(half, 11, 3, -13, 16, 0x7bffu, 0x0400u, 0xfbffu, 0x1400u, 0x0001u, 0x7c00u,
                 0x7e00u)
KILN_HALF_LIMITS(bfloat, 8, 2, -125, 128, 0x7f7fu, 0x0080u, 0xff7fu, 0x3c00u, 0x0001u, 0x7f80u,
                 0x7fc0u)
#undef KILN_HALF_LIMITS
template <typename T>
struct numeric_limits<T, detail::enable_if_t<detail::is_integral_v<T> &&
                                             !detail::is_same_v<detail::remove_cv_t<T>, bool>>>
    : detail::limits_traits<
          detail::is_signed_v<T>, true, false,
          static_cast<int>(sizeof(T) * 8) - (detail::is_signed_v<T> ? 1 : 0),
          (static_cast<int>(sizeof(T) * 8) - (detail::is_signed_v<T> ? 1 : 0)) * 301 / 1000, 0, 0> {
  static KILN_HD constexpr T max() {
    return detail::is_signed_v<T> ? T((~0ull >> 1) >> (64 - sizeof(T) * 8)) : T(~0ull);
  }
  static KILN_HD constexpr T min() { return detail::is_signed_v<T> ? T(-max() - 1) : T(0); }
  static KILN_HD constexpr T lowest() { return min(); }
  static KILN_HD constexpr T epsilon() { return T(0); }
  static KILN_HD constexpr T round_error() { return T(0); }
  static KILN_HD constexpr T denorm_min() { return T(0); }
  static KILN_HD constexpr T infinity() { return T(0); }
  static KILN_HD constexpr T quiet_NaN() { return T(0); }
};
template <>
struct numeric_limits<bool> : detail::limits_traits<false, true, false, 1, 0, 0, 0> {
  static KILN_HD constexpr bool max() { return true; }
  static KILN_HD constexpr bool min() { return false; }
  static KILN_HD constexpr bool lowest() { return false; }
};

// Metal's float constants (unless the C library already defines them).
#ifndef M_PI_F
#define M_PI_F 3.14159265358979323846f
#endif
#ifndef M_PI_2_F
#define M_PI_2_F 1.57079632679489661923f
#endif
#ifndef M_1_PI_F
#define M_1_PI_F 0.318309886183790671538f
#endif
#ifndef M_E_F
#define M_E_F 2.71828182845904523536f
#endif
#ifndef M_LN2_F
#define M_LN2_F 0.693147180559945309417f
#endif
#ifndef M_LN10_F
#define M_LN10_F 2.30258509299404568402f
#endif
#ifndef M_LOG2E_F
#define M_LOG2E_F 1.44269504088896340736f
#endif
#ifndef M_SQRT2_F
#define M_SQRT2_F 1.41421356237309504880f
#endif
#ifndef M_SQRT1_2_F
#define M_SQRT1_2_F 0.707106781186547524401f
#endif
#ifndef MAXFLOAT
#define MAXFLOAT 3.402823466e+38f
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38f
#endif
#ifndef FLT_MIN
#define FLT_MIN 1.175494351e-38f
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 1.192092896e-07f
#endif
#ifndef HALF_MAX
#define HALF_MAX 65504.0f
#endif

}  // namespace metal
