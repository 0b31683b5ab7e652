// Unary elementwise functors: one struct per primitive, named as the primitive, so the host
// names the kernel "kiln::unary_v<kiln::<Primitive>, ...>". The semantics are the CPU
// backend's (kiln/backend/cpu/unary_ops.h).
//
// Functors see bool, the integers, float, double and complex64: the kernels widen the half
// types to float first (compute_t) and convert the result to the output type once. Each
// static_assert names the types a functor takes; the host's dtype table never asks for others.
#pragma once

#include "kiln/backend/cuda/device/complex.cuh"
#include "kiln/backend/cuda/device/types.cuh"

namespace kiln {

template <typename T>
inline constexpr bool is_real_float_v = is_same_v<T, float> || is_same_v<T, double>;
template <typename T>
inline constexpr bool is_inexact_v = is_real_float_v<T> || is_complex_v<T>;

/** The value itself; with the kernel's conversion, the functor of AsType and Copy. */
struct Identity {
  template <typename T>
  __device__ T operator()(T x) const {
    return x;
  }
};

// ---------------------------------------------------------------- arithmetic

/** |x|; complex64 gives float32; signed integers wrap (|INT_MIN| = INT_MIN). */
struct Abs {
  template <typename T>
  __device__ auto operator()(T x) const {
    static_assert(is_int_v<T> || is_inexact_v<T>, "Abs takes integers, floats or complex64");
    if constexpr (is_signed_int_v<T>)
      return x < 0 ? static_cast<T>(wide_t<T>(0) - wide_t<T>(x)) : x;
    else if constexpr (is_unsigned_int_v<T>)
      return x;
    else if constexpr (is_complex_v<T>)
      return cabs(x);
    else
      return fabs(x);
  }
};

/** -x; integers wrap. */
struct Negative {
  template <typename T>
  __device__ T operator()(T x) const {
    static_assert(is_int_v<T> || is_inexact_v<T>, "Negative takes integers, floats or complex64");
    if constexpr (is_int_v<T>)
      return static_cast<T>(wide_t<T>(0) - wide_t<T>(x));
    else
      return -x;
  }
};

/** -1, 0 or 1; NaN and signed zeros pass through; x / |x| for complex64 (0 at 0). */
struct Sign {
  template <typename T>
  __device__ T operator()(T x) const {
    static_assert(is_int_v<T> || is_inexact_v<T>, "Sign takes integers, floats or complex64");
    if constexpr (is_signed_int_v<T>) {
      return static_cast<T>((x > 0) - (x < 0));
    } else if constexpr (is_unsigned_int_v<T>) {
      return static_cast<T>(x != 0);
    } else if constexpr (is_complex_v<T>) {
      if (x.re == 0 && x.im == 0) return x;
      const float h = hypotf(x.re, x.im);
      return {x.re / h, x.im / h};
    } else {
      return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
    }
  }
};

/** x * x; integers wrap. */
struct Square {
  template <typename T>
  __device__ T operator()(T x) const {
    static_assert(is_int_v<T> || is_inexact_v<T>, "Square takes integers, floats or complex64");
    if constexpr (is_int_v<T>)
      return static_cast<T>(wide_t<T>(x) * wide_t<T>(x));
    else
      return x * x;
  }
};

// ---------------------------------------------------------------- floating-point math

// A function of float and double (CUDA's overloads of the math library: float stays float)
// and of complex64 (complex.cuh).
#define KILN_INEXACT_FUNCTOR(NAME, REAL, COMPLEX)                                \
  struct NAME {                                                                  \
    template <typename T>                                                        \
    __device__ T operator()(T x) const {                                         \
      static_assert(is_inexact_v<T>, #NAME " takes float, double or complex64"); \
      if constexpr (is_complex_v<T>)                                             \
        return COMPLEX;                                                          \
      else                                                                       \
        return REAL;                                                             \
    }                                                                            \
  };
KILN_INEXACT_FUNCTOR(Sqrt, sqrt(x), csqrt(x))
KILN_INEXACT_FUNCTOR(Rsqrt, T(1) / sqrt(x), crsqrt(x))  // two roundings, as the CPU
KILN_INEXACT_FUNCTOR(Exp, exp(x), cexp(x))
KILN_INEXACT_FUNCTOR(Expm1, expm1(x), cexpm1(x))
KILN_INEXACT_FUNCTOR(Log, log(x), clog(x))
KILN_INEXACT_FUNCTOR(Log1p, log1p(x), clog1p(x))
KILN_INEXACT_FUNCTOR(Log2, log2(x), clog_base(x, 0.69314718055994531))
KILN_INEXACT_FUNCTOR(Log10, log10(x), clog_base(x, 2.3025850929940457))
KILN_INEXACT_FUNCTOR(Sin, sin(x), csin(x))
KILN_INEXACT_FUNCTOR(Cos, cos(x), ccos(x))
KILN_INEXACT_FUNCTOR(Tan, tan(x), ctan(x))
KILN_INEXACT_FUNCTOR(ArcSin, asin(x), casin(x))
KILN_INEXACT_FUNCTOR(ArcCos, acos(x), cacos(x))
KILN_INEXACT_FUNCTOR(ArcTan, atan(x), catan(x))
KILN_INEXACT_FUNCTOR(Sinh, sinh(x), csinh(x))
KILN_INEXACT_FUNCTOR(Cosh, cosh(x), ccosh(x))
KILN_INEXACT_FUNCTOR(Tanh, tanh(x), ctanh(x))
KILN_INEXACT_FUNCTOR(ArcSinh, asinh(x), casinh(x))
KILN_INEXACT_FUNCTOR(ArcCosh, acosh(x), cacosh(x))
KILN_INEXACT_FUNCTOR(ArcTanh, atanh(x), catanh(x))
KILN_INEXACT_FUNCTOR(Sigmoid, T(1) / (T(1) + exp(-x)), csigmoid(x))
#undef KILN_INEXACT_FUNCTOR

// A function of float and double only.
#define KILN_REAL_FUNCTOR(NAME, REAL)                                    \
  struct NAME {                                                          \
    template <typename T>                                                \
    __device__ T operator()(T x) const {                                 \
      static_assert(is_real_float_v<T>, #NAME " takes float or double"); \
      return REAL;                                                       \
    }                                                                    \
  };
KILN_REAL_FUNCTOR(Erf, erf(x))
/** +-inf at +-1, NaN outside [-1, 1]. */
KILN_REAL_FUNCTOR(ErfInv, erfinv(x))
KILN_REAL_FUNCTOR(Floor, floor(x))
KILN_REAL_FUNCTOR(Ceil, ceil(x))
KILN_REAL_FUNCTOR(Trunc, trunc(x))

// ---------------------------------------------------------------- 8-bit floats (e4m3)

/** e4m3 bits of x: round to nearest even, saturating to +-448; NaN gives 448 (as MLX). */
struct ToFP8 {
  template <typename T>
  __device__ unsigned char operator()(T xt) const {
    const float x = static_cast<float>(xt);
    if (x != x) return 0x7e;
    const unsigned char sign = static_cast<unsigned char>((__float_as_uint(x) >> 24) & 0x80);
    const float a = fminf(fabsf(x), 448.0f);
    if (a < 0.015625f) return sign | static_cast<unsigned char>(rintf(a * 512.0f));
    const unsigned int bits = __float_as_uint(a);
    int e = static_cast<int>(bits >> 23) - 127;
    unsigned int keep = (bits >> 20) & 7, rest = bits & 0xfffff;
    if (rest > 0x80000 || (rest == 0x80000 && (keep & 1))) {
      if (++keep == 8) {
        keep = 0;
        ++e;
      }
    }
    return sign | static_cast<unsigned char>(((e + 7) << 3) | keep);
  }
};

struct FromFP8 {
  __device__ float operator()(unsigned char b) const {
    const int e = (b >> 3) & 0xf, m = b & 7;
    float v;
    if (e == 0xf && m == 7)
      v = __int_as_float(0x7fc00000);
    else if (e == 0)
      v = ldexpf(static_cast<float>(m), -9);
    else
      v = ldexpf(1.0f + m * 0.125f, e - 7);
    return (b & 0x80) ? -v : v;
  }
};
/** Half to even: rint rounds in the default mode. */
KILN_REAL_FUNCTOR(Round, rint(x))
#undef KILN_REAL_FUNCTOR

// ---------------------------------------------------------------- logic and bits

/** x == 0, for any type; bool result. */
struct LogicalNot {
  template <typename T>
  __device__ bool operator()(T x) const {
    if constexpr (is_complex_v<T>)
      return x.re == 0 && x.im == 0;
    else
      return x == T(0);
  }
};

/** ~x for integers, !x for bool. */
struct BitwiseInvert {
  template <typename T>
  __device__ T operator()(T x) const {
    static_assert(is_integral_v<T>, "BitwiseInvert takes integers or bool");
    if constexpr (is_same_v<T, bool>)
      return !x;
    else
      return static_cast<T>(~x);
  }
};

// ---------------------------------------------------------------- classification
// Of floats and complex64 (a complex value is NaN or infinite when a part is); the host
// answers for integers and bool, whose answer is a constant.

struct IsNaN {
  template <typename T>
  __device__ bool operator()(T x) const {
    static_assert(is_inexact_v<T>, "IsNaN takes floats or complex64");
    if constexpr (is_complex_v<T>)
      return isnan(x.re) || isnan(x.im);
    else
      return isnan(x);
  }
};

struct IsInf {
  template <typename T>
  __device__ bool operator()(T x) const {
    static_assert(is_inexact_v<T>, "IsInf takes floats or complex64");
    if constexpr (is_complex_v<T>)
      return isinf(x.re) || isinf(x.im);
    else
      return isinf(x);
  }
};

struct IsFinite {
  template <typename T>
  __device__ bool operator()(T x) const {
    static_assert(is_inexact_v<T>, "IsFinite takes floats or complex64");
    if constexpr (is_complex_v<T>)
      return isfinite(x.re) && isfinite(x.im);
    else
      return isfinite(x);
  }
};

struct IsPosInf {
  template <typename T>
  __device__ bool operator()(T x) const {
    static_assert(is_real_float_v<T>, "IsPosInf takes floats");
    return x == infinity<T>();
  }
};

struct IsNegInf {
  template <typename T>
  __device__ bool operator()(T x) const {
    static_assert(is_real_float_v<T>, "IsNegInf takes floats");
    return x == -infinity<T>();
  }
};

// ---------------------------------------------------------------- complex parts

struct Real {
  __device__ float operator()(complex64 x) const { return x.re; }
};
struct Imag {
  __device__ float operator()(complex64 x) const { return x.im; }
};
struct Conjugate {
  __device__ complex64 operator()(complex64 x) const { return {x.re, -x.im}; }
};

}  // namespace kiln
