// Metal's math library: metal:: functions on float, half, bfloat (computed in float and
// rounded back) and their vectors (elementwise), metal::fast:: (the GPU's approximate
// intrinsics) and metal::precise:: (correctly rounded library calls), plus select, clamp,
// mix, dot, fma, the geometric functions, the integer functions and numeric_limits.
//
// Scalar functions are templates on purpose: where the toolkit or the C library already
// declares `exp(float)` in the global namespace, a body that says `exp(x)` after
// `using namespace metal` gets the non-template one (same result) instead of an ambiguity.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/vec.h"

namespace metal {

namespace detail {

template <typename T>
inline constexpr bool is_float_v = is_builtin_float_v<T> || is_half_v<T>;
template <typename T>
inline constexpr bool is_scalar_v = is_arithmetic_v<T> || is_half_v<T>;

// The float type a scalar computes in.
template <typename T>
using compute_t = conditional_t<is_same_v<remove_cv_t<T>, double>, double, float>;

template <typename T, typename R = T>
using if_float_t = enable_if_t<is_float_v<T>, R>;
template <typename T, typename R = T>
using if_scalar_t = enable_if_t<is_scalar_v<T>, R>;
template <typename V, typename R = vec_t<V>>
using if_vec_t = enable_if_t<is_vec_v<V>, R>;
template <typename V, typename R = vec_t<V>>
using if_float_vec_t = enable_if_t<is_vec_v<V> && is_float_v<typename vec_traits<V>::elem>, R>;

}  // namespace detail

// ---------------------------------------------------------------- elementwise float functions

// NAME(x) for float scalars (computed by F32 or F64) and float vectors.
#define KILN_MATH1(NAME, F32, F64)                           \
  template <typename T>                                      \
  KILN_HD detail::if_float_t<T> NAME(T x) {                  \
    if constexpr (detail::is_same_v<T, double>)              \
      return F64(x);                                         \
    else                                                     \
      return T(F32(static_cast<float>(x)));                  \
  }                                                          \
  template <typename V>                                      \
  KILN_HD detail::if_float_vec_t<V> NAME(const V& v) {       \
    vec_t<V> a = v, r;                                       \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i]); \
    return r;                                                \
  }

#define KILN_MATH2(NAME, F32, F64)                                        \
  template <typename T>                                                   \
  KILN_HD detail::if_float_t<T> NAME(T x, T y) {                          \
    if constexpr (detail::is_same_v<T, double>)                           \
      return F64(x, y);                                                   \
    else                                                                  \
      return T(F32(static_cast<float>(x), static_cast<float>(y)));        \
  }                                                                       \
  template <typename V>                                                   \
  KILN_HD detail::if_float_vec_t<V> NAME(const V& x, const vec_t<V>& y) { \
    vec_t<V> a = x, r;                                                    \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i], y[i]);        \
    return r;                                                             \
  }

namespace detail {
// Functions the C library or CUDA lack, in float.
KILN_HD float rsqrt_f(float x) {
#ifdef __CUDA_ARCH__
  return ::rsqrtf(x);
#else
  return 1.0f / ::sqrtf(x);
#endif
}
KILN_HD double rsqrt_d(double x) {
  return 1.0 / ::sqrt(x);
}
KILN_HD float exp10_f(float x) {
#ifdef __CUDA_ARCH__
  return ::exp10f(x);
#else
  return ::powf(10.0f, x);
#endif
}
KILN_HD double exp10_d(double x) {
  return ::pow(10.0, x);
}
constexpr float kPi = 3.14159265358979323846f;
KILN_HD float sinpi_f(float x) {
#ifdef __CUDA_ARCH__
  return ::sinpif(x);
#else
  return static_cast<float>(::sin(3.14159265358979323846 * x));
#endif
}
KILN_HD float cospi_f(float x) {
#ifdef __CUDA_ARCH__
  return ::cospif(x);
#else
  return static_cast<float>(::cos(3.14159265358979323846 * x));
#endif
}
KILN_HD float tanpi_f(float x) {
  return sinpi_f(x) / cospi_f(x);
}
KILN_HD double sinpi_d(double x) {
  return ::sin(3.14159265358979323846 * x);
}
KILN_HD double cospi_d(double x) {
  return ::cos(3.14159265358979323846 * x);
}
KILN_HD double tanpi_d(double x) {
  return ::tan(3.14159265358979323846 * x);
}
// Metal's fract: x - floor(x), kept below 1.
KILN_HD float fract_f(float x) {
  return ::fminf(x - ::floorf(x), 0x1.fffffep-1f);
}
KILN_HD double fract_d(double x) {
  return ::fmin(x - ::floor(x), 0x1.fffffffffffffp-1);
}
KILN_HD float powr_f(float x, float y) {
  return ::powf(x, y);
}
}  // namespace detail

KILN_MATH1(acos, ::acosf, ::acos)
KILN_MATH1(acosh, ::acoshf, ::acosh)
KILN_MATH1(asin, ::asinf, ::asin)
KILN_MATH1(asinh, ::asinhf, ::asinh)
KILN_MATH1(atan, ::atanf, ::atan)
KILN_MATH1(atanh, ::atanhf, ::atanh)
KILN_MATH1(ceil, ::ceilf, ::ceil)
KILN_MATH1(cos, ::cosf, ::cos)
KILN_MATH1(cosh, ::coshf, ::cosh)
KILN_MATH1(cospi, detail::cospi_f, detail::cospi_d)
KILN_MATH1(exp, ::expf, ::exp)
KILN_MATH1(exp2, ::exp2f, ::exp2)
KILN_MATH1(exp10, detail::exp10_f, detail::exp10_d)
KILN_MATH1(fabs, ::fabsf, ::fabs)
KILN_MATH1(floor, ::floorf, ::floor)
KILN_MATH1(fract, detail::fract_f, detail::fract_d)
KILN_MATH1(log, ::logf, ::log)
KILN_MATH1(log2, ::log2f, ::log2)
KILN_MATH1(log10, ::log10f, ::log10)
KILN_MATH1(rint, ::rintf, ::rint)
KILN_MATH1(round, ::roundf, ::round)
KILN_MATH1(rsqrt, detail::rsqrt_f, detail::rsqrt_d)
KILN_MATH1(sin, ::sinf, ::sin)
KILN_MATH1(sinh, ::sinhf, ::sinh)
KILN_MATH1(sinpi, detail::sinpi_f, detail::sinpi_d)
KILN_MATH1(sqrt, ::sqrtf, ::sqrt)
KILN_MATH1(tan, ::tanf, ::tan)
KILN_MATH1(tanh, ::tanhf, ::tanh)
KILN_MATH1(tanpi, detail::tanpi_f, detail::tanpi_d)
KILN_MATH1(trunc, ::truncf, ::trunc)
KILN_MATH2(atan2, ::atan2f, ::atan2)
KILN_MATH2(copysign, ::copysignf, ::copysign)
KILN_MATH2(fdim, ::fdimf, ::fdim)
KILN_MATH2(fmax, ::fmaxf, ::fmax)
KILN_MATH2(fmin, ::fminf, ::fmin)
KILN_MATH2(fmod, ::fmodf, ::fmod)
KILN_MATH2(pow, ::powf, ::pow)
KILN_MATH2(powr, detail::powr_f, ::pow)

/** fma(a, b, c) = a * b + c with one rounding. */
template <typename T>
KILN_HD detail::if_float_t<T> fma(T a, T b, T c) {
  if constexpr (detail::is_same_v<T, double>)
    return ::fma(a, b, c);
  else
    return T(::fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}
template <typename V>
KILN_HD detail::if_float_vec_t<V> fma(const V& a, const vec_t<V>& b, const vec_t<V>& c) {
  vec_t<V> x = a, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = fma(x[i], b[i], c[i]);
  return r;
}

// ---------------------------------------------------------------- functions of any scalar

/** abs for floats and integers (and vectors of them). */
template <typename T>
KILN_HD detail::if_scalar_t<T> abs(T x) {
  if constexpr (detail::is_float_v<T>)
    return T(::fabs(static_cast<detail::compute_t<T>>(x)));
  else
    return x < T(0) ? T(-x) : x;
}
/** Metal's min/max: for floats, fmin/fmax (a NaN operand yields the other). */
template <typename T>
KILN_HD detail::if_scalar_t<T> min(T a, T b) {
  if constexpr (detail::is_float_v<T>)
    return fmin(a, b);
  else
    return b < a ? b : a;
}
template <typename T>
KILN_HD detail::if_scalar_t<T> max(T a, T b) {
  if constexpr (detail::is_float_v<T>)
    return fmax(a, b);
  else
    return a < b ? b : a;
}
template <typename T>
KILN_HD detail::if_scalar_t<T> min3(T a, T b, T c) {
  return min(min(a, b), c);
}
template <typename T>
KILN_HD detail::if_scalar_t<T> max3(T a, T b, T c) {
  return max(max(a, b), c);
}
template <typename T>
KILN_HD detail::if_scalar_t<T> median3(T a, T b, T c) {
  return max(min(a, b), min(max(a, b), c));
}
template <typename T>
KILN_HD detail::if_scalar_t<T> clamp(T x, T lo, T hi) {
  return min(max(x, lo), hi);
}

#define KILN_VEC_MAP2(NAME)                                                              \
  template <typename V>                                                                  \
  KILN_HD detail::if_vec_t<V> NAME(const V& x, const vec_t<V>& y) {                      \
    vec_t<V> a = x, r;                                                                   \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i], y[i]);                       \
    return r;                                                                            \
  }                                                                                      \
  template <typename V>                                                                  \
  KILN_HD detail::if_vec_t<V> NAME(const V& x, typename detail::vec_traits<V>::elem y) { \
    vec_t<V> a = x, r;                                                                   \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i], y);                          \
    return r;                                                                            \
  }
KILN_VEC_MAP2(min)
KILN_VEC_MAP2(max)
#undef KILN_VEC_MAP2

template <typename V>
KILN_HD detail::if_vec_t<V> abs(const V& v) {
  vec_t<V> a = v, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = abs(a[i]);
  return r;
}
template <typename V>
KILN_HD detail::if_vec_t<V> clamp(const V& x, const vec_t<V>& lo, const vec_t<V>& hi) {
  vec_t<V> a = x, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = clamp(a[i], lo[i], hi[i]);
  return r;
}
template <typename V>
KILN_HD detail::if_vec_t<V> clamp(const V& x, typename detail::vec_traits<V>::elem lo,
                                  typename detail::vec_traits<V>::elem hi) {
  vec_t<V> a = x, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = clamp(a[i], lo, hi);
  return r;
}

/** clamp(x, 0, 1). */
template <typename T>
KILN_HD detail::if_float_t<T> saturate(T x) {
  return clamp(x, T(0), T(1));
}
template <typename V>
KILN_HD detail::if_float_vec_t<V> saturate(const V& x) {
  typedef typename detail::vec_traits<V>::elem E;
  return clamp(x, E(0), E(1));
}

/** x + (y - x) * a. */
template <typename T>
KILN_HD detail::if_float_t<T> mix(T x, T y, T a) {
  return T(static_cast<float>(x) +
           (static_cast<float>(y) - static_cast<float>(x)) * static_cast<float>(a));
}
template <typename V>
KILN_HD detail::if_float_vec_t<V> mix(const V& x, const vec_t<V>& y, const vec_t<V>& a) {
  vec_t<V> b = x, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = mix(b[i], y[i], a[i]);
  return r;
}
template <typename V>
KILN_HD detail::if_float_vec_t<V> mix(const V& x, const vec_t<V>& y,
                                      typename detail::vec_traits<V>::elem a) {
  vec_t<V> b = x, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = mix(b[i], y[i], a);
  return r;
}

/** 0 where x < edge, else 1. */
template <typename T>
KILN_HD detail::if_float_t<T> step(T edge, T x) {
  return x < edge ? T(0) : T(1);
}
template <typename T>
KILN_HD detail::if_float_t<T> smoothstep(T e0, T e1, T x) {
  float t = static_cast<float>(clamp(T((static_cast<float>(x) - static_cast<float>(e0)) /
                                       (static_cast<float>(e1) - static_cast<float>(e0))),
                                     T(0), T(1)));
  return T(t * t * (3.0f - 2.0f * t));
}
/** -1, 0 or 1 (0 for NaN and zeros). */
template <typename T>
KILN_HD detail::if_float_t<T> sign(T x) {
  return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
}
template <typename V>
KILN_HD detail::if_float_vec_t<V> sign(const V& v) {
  vec_t<V> a = v, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = sign(a[i]);
  return r;
}

template <typename T>
KILN_HD detail::if_float_t<T, bool> isnan(T x) {
  return static_cast<detail::compute_t<T>>(x) != static_cast<detail::compute_t<T>>(x);
}
template <typename T>
KILN_HD detail::if_float_t<T, bool> isinf(T x) {
  auto v = static_cast<detail::compute_t<T>>(x);
  return v == INFINITY || v == -INFINITY;
}
template <typename T>
KILN_HD detail::if_float_t<T, bool> isfinite(T x) {
  return !isnan(x) && !isinf(x);
}
template <typename T>
KILN_HD detail::if_float_t<T, bool> signbit(T x) {
  return __builtin_bit_cast(
             detail::conditional_t<sizeof(detail::compute_t<T>) == 8, uint64_t, uint32_t>,
             static_cast<detail::compute_t<T>>(x)) >>
         (sizeof(detail::compute_t<T>) * 8 - 1);
}
#define KILN_VEC_PREDICATE(NAME)                                               \
  template <typename V>                                                        \
  KILN_HD detail::if_float_vec_t<V, vec<bool, vec_t<V>::N>> NAME(const V& v) { \
    vec_t<V> a = v;                                                            \
    vec<bool, vec_t<V>::N> r;                                                  \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i]);                   \
    return r;                                                                  \
  }
KILN_VEC_PREDICATE(isnan)
KILN_VEC_PREDICATE(isinf)
KILN_VEC_PREDICATE(isfinite)
KILN_VEC_PREDICATE(signbit)
#undef KILN_VEC_PREDICATE

/** sin(x), with cos(x) stored in `c`. */
template <typename T>
KILN_HD detail::if_float_t<T> sincos(T x, T& c) {
  c = cos(x);
  return sin(x);
}
/** The fractional part of x, with the integral part stored in `i`. */
template <typename T>
KILN_HD detail::if_float_t<T> modf(T x, T& i) {
  i = trunc(x);
  return T(static_cast<float>(x) - static_cast<float>(i));
}
/** x = m * 2^e with 0.5 <= |m| < 1. */
template <typename T>
KILN_HD detail::if_float_t<T> frexp(T x, int& e) {
  return T(::frexpf(static_cast<float>(x), &e));
}
template <typename T>
KILN_HD detail::if_float_t<T> ldexp(T x, int e) {
  return T(::ldexpf(static_cast<float>(x), e));
}

// ---------------------------------------------------------------- relational

/** All (any) components true; a scalar is its own truth value. */
KILN_HD bool all(bool b) {
  return b;
}
KILN_HD bool any(bool b) {
  return b;
}
template <typename V>
KILN_HD detail::if_vec_t<V, bool> all(const V& v) {
  vec_t<V> a = v;
  for (int i = 0; i < vec_t<V>::N; ++i)
    if (!a[i]) return false;
  return true;
}
template <typename V>
KILN_HD detail::if_vec_t<V, bool> any(const V& v) {
  vec_t<V> a = v;
  for (int i = 0; i < vec_t<V>::N; ++i)
    if (a[i]) return true;
  return false;
}

/** c ? b : a (componentwise for vectors). */
template <typename T>
KILN_HD detail::if_scalar_t<T> select(T a, T b, bool c) {
  return c ? b : a;
}
template <typename V>
KILN_HD detail::if_vec_t<V> select(const V& a, const vec_t<V>& b, bool c) {
  return c ? vec_t<V>(b) : vec_t<V>(a);
}
template <typename V>
KILN_HD detail::if_vec_t<V> select(const V& a, const vec_t<V>& b, const vec<bool, vec_t<V>::N>& c) {
  vec_t<V> x = a, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = c[i] ? b[i] : x[i];
  return r;
}

// ---------------------------------------------------------------- geometric

template <typename V>
KILN_HD detail::if_vec_t<V, typename detail::vec_traits<V>::elem> dot(const V& x,
                                                                      const vec_t<V>& y) {
  typedef typename detail::vec_traits<V>::elem E;
  vec_t<V> a = x;
  if constexpr (is_half_v<E>) {
    float s = 0.0f;
    for (int i = 0; i < vec_t<V>::N; ++i) s += static_cast<float>(a[i]) * static_cast<float>(y[i]);
    return E(s);
  } else {
    E s = E(0);
    for (int i = 0; i < vec_t<V>::N; ++i) s += a[i] * y[i];
    return s;
  }
}
template <typename V>
KILN_HD detail::if_float_vec_t<V, typename detail::vec_traits<V>::elem> length_squared(const V& x) {
  return dot(x, vec_t<V>(x));
}
template <typename V>
KILN_HD detail::if_float_vec_t<V, typename detail::vec_traits<V>::elem> length(const V& x) {
  return sqrt(length_squared(x));
}
template <typename V>
KILN_HD detail::if_float_vec_t<V, typename detail::vec_traits<V>::elem> distance(
    const V& x, const vec_t<V>& y) {
  return length(vec_t<V>(x) - y);
}
template <typename V>
KILN_HD detail::if_float_vec_t<V> normalize(const V& x) {
  vec_t<V> a = x;
  return a * rsqrt(length_squared(a));
}
template <typename V>
KILN_HD detail::enable_if_t<is_vec_v<V> && vec_t<V>::N == 3, vec_t<V>> cross(const V& x,
                                                                             const vec_t<V>& y) {
  vec_t<V> a = x;
  return vec_t<V>(a[1] * y[2] - a[2] * y[1], a[2] * y[0] - a[0] * y[2], a[0] * y[1] - a[1] * y[0]);
}

// ---------------------------------------------------------------- integer functions

template <typename T>
KILN_HD detail::enable_if_t<detail::is_integral_v<T>, T> popcount(T x) {
  typedef typename detail::make_unsigned<T>::type U;
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 8)
    return T(__popcll(static_cast<unsigned long long>(static_cast<U>(x))));
  else
    return T(__popc(static_cast<unsigned>(static_cast<U>(x))));
#else
  return T(__builtin_popcountll(static_cast<unsigned long long>(static_cast<U>(x))));
#endif
}
/** Leading zero bits of x (its width for 0). */
template <typename T>
KILN_HD detail::enable_if_t<detail::is_integral_v<T>, T> clz(T x) {
  typedef typename detail::make_unsigned<T>::type U;
  unsigned long long u = static_cast<U>(x);
  if (u == 0) return T(sizeof(T) * 8);
#ifdef __CUDA_ARCH__
  return T(__clzll(static_cast<long long>(u)) - (64 - sizeof(T) * 8));
#else
  return T(__builtin_clzll(u) - (64 - sizeof(T) * 8));
#endif
}
/** Trailing zero bits of x (its width for 0). */
template <typename T>
KILN_HD detail::enable_if_t<detail::is_integral_v<T>, T> ctz(T x) {
  typedef typename detail::make_unsigned<T>::type U;
  unsigned long long u = static_cast<U>(x);
  if (u == 0) return T(sizeof(T) * 8);
#ifdef __CUDA_ARCH__
  return T(__ffsll(static_cast<long long>(u)) - 1);
#else
  return T(__builtin_ctzll(u));
#endif
}
/** The high half of the full product a * b (32-bit integers). */
KILN_HD uint mulhi(uint a, uint b) {
  return static_cast<uint>((static_cast<uint64_t>(a) * b) >> 32);
}
KILN_HD int mulhi(int a, int b) {
  return static_cast<int>((static_cast<int64_t>(a) * b) >> 32);
}

// ---------------------------------------------------------------- fast and precise

/** The GPU's approximate intrinsics (on the CPU, the same functions as metal::). */
namespace fast {
#ifdef __CUDA_ARCH__
#define KILN_FAST(NAME, F32)                                 \
  template <typename T>                                      \
  KILN_HD detail::if_float_t<T> NAME(T x) {                  \
    return T(F32(static_cast<float>(x)));                    \
  }                                                          \
  template <typename V>                                      \
  KILN_HD detail::if_float_vec_t<V> NAME(const V& v) {       \
    vec_t<V> a = v, r;                                       \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i]); \
    return r;                                                \
  }
KILN_FAST(exp, __expf)
KILN_FAST(exp10, __exp10f)
KILN_FAST(log, __logf)
KILN_FAST(log2, __log2f)
KILN_FAST(log10, __log10f)
KILN_FAST(sin, __sinf)
KILN_FAST(cos, __cosf)
KILN_FAST(tan, __tanf)
KILN_FAST(rsqrt, ::rsqrtf)
KILN_FAST(sqrt, __fsqrt_rn)
#undef KILN_FAST
KILN_HD float exp2(float x) {
  return __expf(x * 0.69314718055994531f);
}
template <typename T>
KILN_HD detail::if_float_t<T> pow(T x, T y) {
  return T(__powf(static_cast<float>(x), static_cast<float>(y)));
}
KILN_HD float divide(float x, float y) {
  return __fdividef(x, y);
}
#else
using metal::cos;
using metal::exp;
using metal::exp10;
using metal::exp2;
using metal::log;
using metal::log10;
using metal::log2;
using metal::pow;
using metal::rsqrt;
using metal::sin;
using metal::sqrt;
using metal::tan;
KILN_HD float divide(float x, float y) {
  return x / y;
}
#endif
using metal::acos;
using metal::acosh;
using metal::asin;
using metal::asinh;
using metal::atan;
using metal::atan2;
using metal::atanh;
using metal::ceil;
using metal::clamp;
using metal::cosh;
using metal::cospi;
using metal::fabs;
using metal::floor;
using metal::fmax;
using metal::fmin;
using metal::fmod;
using metal::fract;
using metal::max;
using metal::min;
using metal::powr;
using metal::rint;
using metal::round;
using metal::saturate;
using metal::sinh;
using metal::sinpi;
using metal::tanh;
using metal::tanpi;
using metal::trunc;
}  // namespace fast

/** Correctly rounded library calls (metal:: already uses them). */
namespace precise {
using metal::acos;
using metal::acosh;
using metal::asin;
using metal::asinh;
using metal::atan;
using metal::atan2;
using metal::atanh;
using metal::ceil;
using metal::clamp;
using metal::cos;
using metal::cosh;
using metal::cospi;
using metal::exp;
using metal::exp10;
using metal::exp2;
using metal::fabs;
using metal::floor;
using metal::fmax;
using metal::fmin;
using metal::fmod;
using metal::fract;
using metal::log;
using metal::log10;
using metal::log2;
using metal::max;
using metal::min;
using metal::pow;
using metal::powr;
using metal::rint;
using metal::round;
using metal::rsqrt;
using metal::sin;
using metal::sinh;
using metal::sinpi;
using metal::sqrt;
using metal::tan;
using metal::tanh;
using metal::tanpi;
using metal::trunc;
KILN_HD float divide(float x, float y) {
  return x / y;
}
}  // namespace precise

#undef KILN_MATH1
#undef KILN_MATH2

// ---------------------------------------------------------------- numeric_limits

template <typename T, typename = void>
struct numeric_limits;

template <>
struct numeric_limits<float> {
  static KILN_HD float max() { return 3.402823466e+38f; }
  static KILN_HD float min() { return 1.175494351e-38f; }
  static KILN_HD float lowest() { return -3.402823466e+38f; }
  static KILN_HD float epsilon() { return 1.192092896e-07f; }
  static KILN_HD float infinity() { return INFINITY; }
  static KILN_HD float quiet_NaN() { return NAN; }
};
template <>
struct numeric_limits<half> {
  static KILN_HD half max() { return half::from_bits(0x7bffu); }
  static KILN_HD half min() { return half::from_bits(0x0400u); }
  static KILN_HD half lowest() { return half::from_bits(0xfbffu); }
  static KILN_HD half epsilon() { return half::from_bits(0x1400u); }
  static KILN_HD half infinity() { return half::from_bits(0x7c00u); }
  static KILN_HD half quiet_NaN() { return half::from_bits(0x7e00u); }
};
template <>
struct numeric_limits<bfloat> {
  static KILN_HD bfloat max() { return bfloat::from_bits(0x7f7fu); }
  static KILN_HD bfloat min() { return bfloat::from_bits(0x0080u); }
  static KILN_HD bfloat lowest() { return bfloat::from_bits(0xff7fu); }
  static KILN_HD bfloat epsilon() { return bfloat::from_bits(0x3c00u); }
  static KILN_HD bfloat infinity() { return bfloat::from_bits(0x7f80u); }
  static KILN_HD bfloat quiet_NaN() { return bfloat::from_bits(0x7fc0u); }
};
template <typename T>
struct numeric_limits<T, detail::enable_if_t<detail::is_integral_v<T>>> {
  static KILN_HD T max() {
    return detail::is_signed_v<T> ? T((~0ull >> 1) >> (64 - sizeof(T) * 8)) : T(~0ull);
  }
  static KILN_HD T min() { return detail::is_signed_v<T> ? T(-max() - 1) : T(0); }
  static KILN_HD T lowest() { return min(); }
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
