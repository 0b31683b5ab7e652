// Metal's math library: metal:: functions on float, half, bfloat (computed in float and
// rounded back) and their vectors (elementwise), metal::fast:: (the GPU's approximate
// intrinsics) and metal::precise:: (correctly rounded library calls), plus select, clamp,
// mix, dot, fma, the geometric functions and the integer functions (numeric_limits and the
// float constants are in limits.h).
//
// Scalar functions are templates on purpose: where the toolkit or the C library already
// declares `exp(float)` in the global namespace, a body that says `exp(x)` after
// `using namespace metal` gets the non-template one (same result) instead of an ambiguity.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/limits.h"
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

// The type two different scalars meet in (Metal's usual arithmetic conversions, with its
// overload sets' leniency: pow(x, 2) and max(h, 0.5f) take the wider type).
template <typename A, typename B>
struct promote {
  static constexpr bool ha = is_half_v<A>, hb = is_half_v<B>;
  typedef conditional_t<
      is_same_v<A, B>, A,
      conditional_t<is_same_v<A, double> || is_same_v<B, double>, double,
                    conditional_t<is_same_v<A, float> || is_same_v<B, float> || (ha && hb), float,
                                  conditional_t<ha, A, conditional_t<hb, B, decltype(A() + B())>>>>>
      type;
};
template <typename A, typename B>
using promote_t = typename promote<remove_cv_t<A>, remove_cv_t<B>>::type;
// Two different scalar types (one of them a float type, for the float functions).
template <typename A, typename B>
inline constexpr bool mixed_scalars_v = is_scalar_v<A>&& is_scalar_v<B> && !is_same_v<A, B>;
template <typename A, typename B, typename R = promote_t<A, B>>
using if_mixed_float_t = enable_if_t<mixed_scalars_v<A, B> && is_float_v<promote_t<A, B>>, R>;
template <typename A, typename B, typename R = promote_t<A, B>>
using if_mixed_t = enable_if_t<mixed_scalars_v<A, B>, R>;
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

#define KILN_MATH2(NAME, F32, F64)                                                        \
  template <typename T>                                                                   \
  KILN_HD detail::if_float_t<T> NAME(T x, T y) {                                          \
    if constexpr (detail::is_same_v<T, double>)                                           \
      return F64(x, y);                                                                   \
    else                                                                                  \
      return T(F32(static_cast<float>(x), static_cast<float>(y)));                        \
  }                                                                                       \
  template <typename A, typename B>                                                       \
  KILN_HD detail::if_mixed_float_t<A, B> NAME(A x, B y) {                                 \
    typedef detail::promote_t<A, B> P;                                                    \
    return NAME(P(x), P(y));                                                              \
  }                                                                                       \
  template <typename V>                                                                   \
  KILN_HD detail::if_float_vec_t<V> NAME(const V& x, const vec_t<V>& y) {                 \
    vec_t<V> a = x, r;                                                                    \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i], y[i]);                        \
    return r;                                                                             \
  }                                                                                       \
  template <typename V, typename S, detail::enable_if_t<detail::is_scalar_v<S>, int> = 0> \
  KILN_HD detail::if_float_vec_t<V> NAME(const V& x, S y) {                               \
    typedef typename detail::vec_traits<V>::elem E;                                       \
    vec_t<V> a = x, r;                                                                    \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i], E(y));                        \
    return r;                                                                             \
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

// ---------------------------------------------------------------- vector maps

// Componentwise forms of scalar functions: a vector (or swizzle, or packed vector) and
// vectors or scalars of the same length for the other arguments. A scalar argument is a
// template parameter of its own, so that it wins over a broadcast to a vector.
namespace detail {
template <typename V>
using elem_t = typename vec_traits<V>::elem;
template <typename S>
using if_scalar_arg = enable_if_t<is_scalar_v<S>, int>;
}  // namespace detail

#define KILN_VMAP1(NAME, COND)                               \
  template <typename V>                                      \
  KILN_HD COND NAME(const V& v) {                            \
    vec_t<V> a = v, r;                                       \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i]); \
    return r;                                                \
  }
#define KILN_VMAP2(NAME, COND)                                                     \
  template <typename V>                                                            \
  KILN_HD COND NAME(const V& x, const vec_t<V>& y) {                               \
    vec_t<V> a = x, r;                                                             \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i], y[i]);                 \
    return r;                                                                      \
  }                                                                                \
  template <typename V, typename S, detail::if_scalar_arg<S> = 0>                  \
  KILN_HD COND NAME(const V& x, S y) {                                             \
    vec_t<V> a = x, r;                                                             \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i], detail::elem_t<V>(y)); \
    return r;                                                                      \
  }
#define KILN_VMAP3(NAME, COND)                                                   \
  template <typename V>                                                          \
  KILN_HD COND NAME(const V& x, const vec_t<V>& y, const vec_t<V>& z) {          \
    vec_t<V> a = x, r;                                                           \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i], y[i], z[i]);         \
    return r;                                                                    \
  }                                                                              \
  template <typename V, typename S1, typename S2, detail::if_scalar_arg<S1> = 0, \
            detail::if_scalar_arg<S2> = 0>                                       \
  KILN_HD COND NAME(const V& x, S1 y, S2 z) {                                    \
    typedef detail::elem_t<V> E;                                                 \
    vec_t<V> a = x, r;                                                           \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i], E(y), E(z));         \
    return r;                                                                    \
  }
#define KILN_ANY_VEC detail::if_vec_t<V>
#define KILN_FLOAT_VEC detail::if_float_vec_t<V>
#define KILN_INT_VEC \
  detail::enable_if_t<is_vec_v<V> && detail::is_integral_v<detail::elem_t<V>>, vec_t<V>>

// Mixed scalar types meet in their promoted type (pow(x, 2), max(h, 0.5f)).
#define KILN_MIXED2(NAME, COND)        \
  template <typename A, typename B>    \
  KILN_HD COND<A, B> NAME(A x, B y) {  \
    typedef detail::promote_t<A, B> P; \
    return NAME(P(x), P(y));           \
  }
#define KILN_MIXED3(NAME, COND)                                                           \
  template <typename A, typename B, typename C,                                           \
            detail::enable_if_t<!(detail::is_same_v<A, B> &&                              \
                                  detail::is_same_v<B, C>)&&detail::is_scalar_v<A> &&     \
                                    detail::is_scalar_v<B> && detail::is_scalar_v<C>,     \
                                int> = 0>                                                 \
  KILN_HD auto NAME(A x, B y, C z)->COND<detail::promote_t<detail::promote_t<A, B>, C>> { \
    typedef detail::promote_t<detail::promote_t<A, B>, C> P;                              \
    return NAME(P(x), P(y), P(z));                                                        \
  }
namespace detail {
template <typename P>
using if_float_result_t = enable_if_t<is_float_v<P>, P>;
template <typename P>
using if_scalar_result_t = enable_if_t<is_scalar_v<P>, P>;
}  // namespace detail

/** fma(a, b, c) = a * b + c with one rounding. */
template <typename T>
KILN_HD detail::if_float_t<T> fma(T a, T b, T c) {
  if constexpr (detail::is_same_v<T, double>)
    return ::fma(a, b, c);
  else
    return T(::fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}
KILN_MIXED3(fma, detail::if_float_result_t)
KILN_VMAP3(fma, KILN_FLOAT_VEC)

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
KILN_MIXED2(min, detail::if_mixed_t)
KILN_MIXED2(max, detail::if_mixed_t)
KILN_MIXED3(min3, detail::if_scalar_result_t)
KILN_MIXED3(max3, detail::if_scalar_result_t)
KILN_MIXED3(median3, detail::if_scalar_result_t)
KILN_MIXED3(clamp, detail::if_scalar_result_t)
KILN_VMAP1(abs, KILN_ANY_VEC)
KILN_VMAP2(min, KILN_ANY_VEC)
KILN_VMAP2(max, KILN_ANY_VEC)
KILN_VMAP3(min3, KILN_ANY_VEC)
KILN_VMAP3(max3, KILN_ANY_VEC)
KILN_VMAP3(median3, KILN_ANY_VEC)
KILN_VMAP3(clamp, KILN_ANY_VEC)

// ---------------------------------------------------------------- common float functions

/** clamp(x, 0, 1). */
template <typename T>
KILN_HD detail::if_float_t<T> saturate(T x) {
  return clamp(x, T(0), T(1));
}
KILN_VMAP1(saturate, KILN_FLOAT_VEC)
/** x + (y - x) * a. */
template <typename T>
KILN_HD detail::if_float_t<T> mix(T x, T y, T a) {
  return T(static_cast<float>(x) +
           (static_cast<float>(y) - static_cast<float>(x)) * static_cast<float>(a));
}
KILN_MIXED3(mix, detail::if_float_result_t)
template <typename V>
KILN_HD detail::if_float_vec_t<V> mix(const V& x, const vec_t<V>& y, const vec_t<V>& a) {
  vec_t<V> b = x, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = mix(b[i], y[i], a[i]);
  return r;
}
template <typename V, typename S, detail::if_scalar_arg<S> = 0>
KILN_HD detail::if_float_vec_t<V> mix(const V& x, const vec_t<V>& y, S a) {
  vec_t<V> b = x, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = mix(b[i], y[i], detail::elem_t<V>(a));
  return r;
}
/** 0 where x < edge, else 1. */
template <typename T>
KILN_HD detail::if_float_t<T> step(T edge, T x) {
  return x < edge ? T(0) : T(1);
}
KILN_MIXED2(step, detail::if_mixed_float_t)
template <typename V>
KILN_HD detail::if_float_vec_t<V> step(const V& edge, const vec_t<V>& x) {
  vec_t<V> e = edge, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = step(e[i], x[i]);
  return r;
}
template <typename S, typename V, detail::if_scalar_arg<S> = 0>
KILN_HD detail::if_float_vec_t<V> step(S edge, const V& x) {
  vec_t<V> a = x, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = step(detail::elem_t<V>(edge), a[i]);
  return r;
}
/** Hermite interpolation between 0 and 1 as x goes from e0 to e1. */
template <typename T>
KILN_HD detail::if_float_t<T> smoothstep(T e0, T e1, T x) {
  float t = static_cast<float>(clamp(T((static_cast<float>(x) - static_cast<float>(e0)) /
                                       (static_cast<float>(e1) - static_cast<float>(e0))),
                                     T(0), T(1)));
  return T(t * t * (3.0f - 2.0f * t));
}
KILN_MIXED3(smoothstep, detail::if_float_result_t)
template <typename V>
KILN_HD detail::if_float_vec_t<V> smoothstep(const V& e0, const vec_t<V>& e1, const vec_t<V>& x) {
  vec_t<V> a = e0, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = smoothstep(a[i], e1[i], x[i]);
  return r;
}
template <typename S1, typename S2, typename V, detail::if_scalar_arg<S1> = 0,
          detail::if_scalar_arg<S2> = 0>
KILN_HD detail::if_float_vec_t<V> smoothstep(S1 e0, S2 e1, const V& x) {
  typedef detail::elem_t<V> E;
  vec_t<V> a = x, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = smoothstep(E(e0), E(e1), a[i]);
  return r;
}
/** -1, 0 or 1 (0 for NaN and zeros). */
template <typename T>
KILN_HD detail::if_float_t<T> sign(T x) {
  return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
}
KILN_VMAP1(sign, KILN_FLOAT_VEC)

// ---------------------------------------------------------------- predicates

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
// ---------------------------------------------------------------- results through references

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
KILN_HD detail::if_vec_t<V, detail::elem_t<V>> dot(const V& x, const vec_t<V>& y) {
  typedef detail::elem_t<V> E;
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
KILN_HD detail::if_float_vec_t<V, detail::elem_t<V>> length_squared(const V& x) {
  return dot(x, vec_t<V>(x));
}
template <typename V>
KILN_HD detail::if_float_vec_t<V, detail::elem_t<V>> length(const V& x) {
  return sqrt(length_squared(x));
}
template <typename V>
KILN_HD detail::if_float_vec_t<V, detail::elem_t<V>> distance(const V& x, const vec_t<V>& y) {
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

namespace detail {
template <typename T>
using if_int_t = enable_if_t<is_integral_v<T>, T>;
template <typename T>
using uint_of_t = typename make_unsigned<T>::type;
template <typename T>
KILN_HD constexpr T int_max() {
  return is_signed_v<T> ? T((~0ull >> 1) >> (64 - sizeof(T) * 8)) : T(~0ull);
}
template <typename T>
KILN_HD constexpr T int_min() {
  return is_signed_v<T> ? T(-int_max<T>() - 1) : T(0);
}
}  // namespace detail

template <typename T>
KILN_HD detail::if_int_t<T> popcount(T x) {
  typedef detail::uint_of_t<T> U;
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
KILN_HD detail::if_int_t<T> clz(T x) {
  typedef detail::uint_of_t<T> U;
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
KILN_HD detail::if_int_t<T> ctz(T x) {
  typedef detail::uint_of_t<T> U;
  unsigned long long u = static_cast<U>(x);
  if (u == 0) return T(sizeof(T) * 8);
#ifdef __CUDA_ARCH__
  return T(__ffsll(static_cast<long long>(u)) - 1);
#else
  return T(__builtin_ctzll(u));
#endif
}
/** The high half of the full product a * b. */
template <typename T>
KILN_HD detail::if_int_t<T> mulhi(T a, T b) {
  if constexpr (sizeof(T) == 8) {
#ifdef __CUDA_ARCH__
    if constexpr (detail::is_signed_v<T>)
      return static_cast<T>(__mul64hi(static_cast<long long>(a), static_cast<long long>(b)));
    else
      return static_cast<T>(
          __umul64hi(static_cast<unsigned long long>(a), static_cast<unsigned long long>(b)));
#else
    if constexpr (detail::is_signed_v<T>)
      return static_cast<T>((static_cast<__int128>(a) * b) >> 64);
    else
      return static_cast<T>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
  } else if constexpr (detail::is_signed_v<T>) {
    return static_cast<T>((static_cast<int64_t>(a) * static_cast<int64_t>(b)) >> (sizeof(T) * 8));
  } else {
    // Unsigned in 64 bits: two 32-bit factors near 2^32 overflow an int64_t (UBSan).
    return static_cast<T>((static_cast<uint64_t>(a) * static_cast<uint64_t>(b)) >> (sizeof(T) * 8));
  }
}
KILN_VMAP1(popcount, KILN_INT_VEC)
KILN_VMAP1(clz, KILN_INT_VEC)
KILN_VMAP1(ctz, KILN_INT_VEC)
KILN_VMAP2(mulhi, KILN_INT_VEC)

// The map macros stay defined for math_more.h.

}  // namespace metal

#include "kiln/backend/kernels/metal/math_fast.h"
