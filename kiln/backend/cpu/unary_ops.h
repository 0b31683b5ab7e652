// Per-element functions of the unary primitives, as function objects for the CPU kernels
// of backend/cpu/unary.cpp.
//
// Each call operator is a template constrained to the C++ element types it is defined for
// (exact types: no implicit conversions), so the kernel dispatcher can ask at compile time
// whether a dtype is supported. float16/bfloat16 are not listed: the dispatcher computes
// them in float and rounds the result back.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <type_traits>

#include "kiln/backend/cpu/simd_math.h"
#include "kiln/scalar_cast.h"

namespace kiln::cpu::fn {

template <typename T>
concept Bool = std::same_as<T, bool>;
template <typename T>
concept Integer = std::is_integral_v<T> && !Bool<T>;
template <typename T>
concept SignedInteger = Integer<T> && std::is_signed_v<T>;
template <typename T>
concept Float = std::is_floating_point_v<T>;  // float, double
template <typename T>
concept Complex = is_complex_v<T>;
template <typename T>
concept Real = Integer<T> || Float<T>;
template <typename T>
concept RealOrBool = Real<T> || Bool<T>;
template <typename T>
concept Inexact = Float<T> || Complex<T>;
template <typename T>
concept Integral = Integer<T> || Bool<T>;
template <typename T>
concept Number = RealOrBool<T> || Complex<T>;  // every element type but the half types

/** -x with wrap-around for signed integers (where C++ leaves overflow undefined). */
template <Integer T>
T wrapping_negate(T x) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(x)));
}

template <Integer T>
T wrapping_multiply(T a, T b) {
  using U = std::make_unsigned_t<decltype(+a)>;  // at least unsigned int: no promotion to int
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

// ---------------------------------------------------------------- arithmetic

struct Abs {
  static constexpr bool one_rounding = true;  // see binary_ops.h's Add
  template <Integer T>
  T operator()(T x) const {
    if constexpr (std::is_signed_v<T>)
      return x < 0 ? wrapping_negate(x) : x;
    else
      return x;
  }
  template <Float T>
  T operator()(T x) const {
    return std::abs(x);
  }
  template <Complex T>
  typename T::value_type operator()(T x) const {
    return std::abs(x);
  }
};

struct Negative {
  static constexpr bool one_rounding = true;  // see binary_ops.h's Add
  template <Integer T>
  T operator()(T x) const {
    return wrapping_negate(x);
  }
  template <Inexact T>
  T operator()(T x) const {
    return -x;
  }
};

struct Sign {
  template <Integer T>
  T operator()(T x) const {
    if constexpr (std::is_signed_v<T>)
      return static_cast<T>((x > 0) - (x < 0));
    else
      return static_cast<T>(x != 0);
  }
  // NaN and +-0 pass through unchanged.
  template <Float T>
  T operator()(T x) const {
    return x > 0 ? T(1) : (x < 0 ? T(-1) : x);
  }
  template <Complex T>
  T operator()(T x) const {
    return x == T(0) ? x : x / std::abs(x);
  }
};

struct Square {
  template <Integer T>
  T operator()(T x) const {
    return wrapping_multiply(x, x);
  }
  template <Inexact T>
  T operator()(T x) const {
    return x * x;
  }
};

// ---------------------------------------------------------------- floating-point math

// Functions of float/double and complex that are plain calls to the standard library.
#define KILN_STD_FN(NAME, CALL) \
  struct NAME {                 \
    template <Inexact T>        \
    T operator()(T x) const {   \
      return CALL;              \
    }                           \
  };
KILN_STD_FN(Sqrt, std::sqrt(x))
KILN_STD_FN(Rsqrt, T(1) / std::sqrt(x))
KILN_STD_FN(Log, std::log(x))
KILN_STD_FN(Log10, std::log10(x))
KILN_STD_FN(Sin, std::sin(x))
KILN_STD_FN(Cos, std::cos(x))
KILN_STD_FN(Tan, std::tan(x))
KILN_STD_FN(ArcSin, std::asin(x))
KILN_STD_FN(ArcCos, std::acos(x))
KILN_STD_FN(ArcTan, std::atan(x))
KILN_STD_FN(Sinh, std::sinh(x))
KILN_STD_FN(Cosh, std::cosh(x))
KILN_STD_FN(ArcSinh, std::asinh(x))
KILN_STD_FN(ArcCosh, std::acosh(x))
KILN_STD_FN(ArcTanh, std::atanh(x))
#undef KILN_STD_FN

struct Exp {
  /** Marks functors whose float32 loop vectorizes; the kernel compiles it per ISA. */
  static constexpr bool simd = true;
  float operator()(std::same_as<float> auto x) const { return exp_f32(x); }
  double operator()(std::same_as<double> auto x) const { return std::exp(x); }
  template <Complex T>
  T operator()(T x) const {
    return std::exp(x);
  }
};

struct Tanh {
  static constexpr bool simd = true;
  float operator()(std::same_as<float> auto x) const { return tanh_f32(x); }
  double operator()(std::same_as<double> auto x) const { return std::tanh(x); }
  template <Complex T>
  T operator()(T x) const {
    return std::tanh(x);
  }
};

struct Expm1 {
  template <Float T>
  T operator()(T x) const {
    return std::expm1(x);
  }
  template <Complex T>
  T operator()(T x) const {
    return std::exp(x) - T(1);
  }
};

struct Log1p {
  template <Float T>
  T operator()(T x) const {
    return std::log1p(x);
  }
  template <Complex T>
  T operator()(T x) const {
    return std::log(T(1) + x);
  }
};

struct Log2 {
  template <Float T>
  T operator()(T x) const {
    return std::log2(x);
  }
  template <Complex T>
  T operator()(T x) const {
    return std::log(x) / typename T::value_type(std::numbers::ln2);
  }
};

struct Sigmoid {
  static constexpr bool simd = true;
  float operator()(std::same_as<float> auto x) const { return 1.0f / (1.0f + exp_f32(-x)); }
  double operator()(std::same_as<double> auto x) const { return 1.0 / (1.0 + std::exp(-x)); }
  template <Complex T>
  T operator()(T x) const {
    return T(1) / (T(1) + std::exp(-x));
  }
};

struct Erf {
  static constexpr bool simd = true;
  float operator()(std::same_as<float> auto x) const { return erf_f32(x); }
  double operator()(std::same_as<double> auto x) const { return std::erf(x); }
};

/**
 * erfinv(y) in double: an initial guess from Winitzki's closed form ("A handy
 * approximation for the error function and its inverse", 2008; relative error < 2e-3),
 * refined by two Halley steps on erf(x) = y, each of which triples the correct digits.
 * Near |y| = 1 the residual is formed from erfc and 1 - |y| (exact there), so it keeps
 * full precision where erf(x) would round to 1.
 */
inline double erfinv_f64(double y) {
  if (!(std::abs(y) < 1)) {
    if (std::abs(y) == 1) return y * std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();  // |y| > 1 or NaN
  }
  if (y == 0) return y;
  const double a = std::abs(y);
  constexpr double k = 0.147;  // Winitzki's constant
  const double l = std::log1p(-a * a);
  const double c = 2 / (std::numbers::pi * k) + l / 2;
  double x = std::sqrt(std::sqrt(c * c - l / k) - c);
  const double one_minus_a = 1 - a;  // exact for a >= 0.5
  for (int i = 0; i < 2; ++i) {
    const double f = a < 0.5 ? std::erf(x) - a : one_minus_a - std::erfc(x);
    const double df = 2 / std::sqrt(std::numbers::pi) * std::exp(-x * x);
    const double u = f / df;
    x -= u / (1 + x * u);  // Halley: f'' = -2x f'
  }
  return y < 0 ? -x : x;
}

struct ErfInv {
  template <Float T>
  T operator()(T x) const {
    return static_cast<T>(erfinv_f64(x));
  }
};

// ---------------------------------------------------------------- rounding

struct Floor {
  template <Float T>
  T operator()(T x) const {
    return std::floor(x);
  }
};
struct Ceil {
  template <Float T>
  T operator()(T x) const {
    return std::ceil(x);
  }
};
struct Trunc {
  template <Float T>
  T operator()(T x) const {
    return std::trunc(x);
  }
};

// ---------------------------------------------------------------- 8-bit floats (e4m3)

/** e4m3 bits of x: round to nearest even, saturating to +-448; NaN gives 448 (as MLX). */
struct ToFP8 {
  template <Float T>
  uint8_t operator()(T xt) const {
    const float x = static_cast<float>(xt);
    if (x != x) return 0x7e;
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80);
    const float a = std::min(std::fabs(x), 448.0f);
    if (a < 0.015625f) {  // below the smallest normal 2^-6: multiples of 2^-9
      return sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));
    }
    std::memcpy(&bits, &a, 4);
    int e = static_cast<int>(bits >> 23) - 127;
    uint32_t keep = (bits >> 20) & 7, rest = bits & 0xfffff;
    if (rest > 0x80000 || (rest == 0x80000 && (keep & 1))) {
      if (++keep == 8) {
        keep = 0;
        ++e;
      }
    }
    return sign | static_cast<uint8_t>(((e + 7) << 3) | keep);
  }
};

struct FromFP8 {
  float operator()(uint8_t b) const {
    const int e = (b >> 3) & 0xf, m = b & 7;
    float v;
    if (e == 0xf && m == 7)
      v = std::numeric_limits<float>::quiet_NaN();
    else if (e == 0)
      v = std::ldexp(static_cast<float>(m), -9);
    else
      v = std::ldexp(1.0f + m / 8.0f, e - 7);
    return (b & 0x80) ? -v : v;
  }
};
/** Half to even: nearbyint rounds in the default (to nearest, ties to even) mode. */
struct Round {
  template <Float T>
  T operator()(T x) const {
    return std::nearbyint(x);
  }
};

// ---------------------------------------------------------------- logic and bits

struct LogicalNot {
  template <RealOrBool T>
  bool operator()(T x) const {
    return x == T(0);
  }
  template <Complex T>
  bool operator()(T x) const {
    return x == T(0);
  }
};

struct BitwiseInvert {
  template <Integer T>
  T operator()(T x) const {
    return static_cast<T>(~x);
  }
  template <Bool T>
  bool operator()(T x) const {
    return !x;
  }
};

// ---------------------------------------------------------------- classification
// Written with comparisons (not std::isnan & co.) so that the loops vectorize; integers
// and bool have constant answers.

struct IsNaN {
  template <RealOrBool T>
  bool operator()(T x) const {
    return x != x;
  }
  template <Complex T>
  bool operator()(T x) const {
    return (*this)(x.real()) || (*this)(x.imag());
  }
};

struct IsInf {
  template <RealOrBool T>
  bool operator()(T x) const {
    if constexpr (Float<T>)
      return std::abs(x) == std::numeric_limits<T>::infinity();
    else
      return false;
  }
  template <Complex T>
  bool operator()(T x) const {
    return (*this)(x.real()) || (*this)(x.imag());
  }
};

struct IsFinite {
  template <RealOrBool T>
  bool operator()(T x) const {
    if constexpr (Float<T>)
      return std::abs(x) < std::numeric_limits<T>::infinity();
    else
      return true;
  }
  template <Complex T>
  bool operator()(T x) const {
    return (*this)(x.real()) && (*this)(x.imag());
  }
};

struct IsPosInf {
  template <RealOrBool T>
  bool operator()(T x) const {
    if constexpr (Float<T>)
      return x == std::numeric_limits<T>::infinity();
    else
      return false;
  }
};

struct IsNegInf {
  template <RealOrBool T>
  bool operator()(T x) const {
    if constexpr (Float<T>)
      return x == -std::numeric_limits<T>::infinity();
    else
      return false;
  }
};

// ---------------------------------------------------------------- complex parts

struct RealPart {
  template <Complex T>
  typename T::value_type operator()(T x) const {
    return x.real();
  }
};
struct ImagPart {
  template <Complex T>
  typename T::value_type operator()(T x) const {
    return x.imag();
  }
};
struct Conjugate {
  template <Complex T>
  T operator()(T x) const {
    return std::conj(x);
  }
};

}  // namespace kiln::cpu::fn
