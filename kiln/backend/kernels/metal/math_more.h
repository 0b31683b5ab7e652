// Metal's math functions beyond the core set of math.h, included on demand (the generator
// adds this header on the GPU when a body or header names one of them; the CPU prelude
// always has it): fmax3, fmin3, fmedian3, nextafter, divide, ilogb, isnormal, isordered,
// isunordered, the vector forms of sincos, modf, frexp and ldexp, distance_squared,
// faceforward, reflect, refract, and the integer functions absdiff, addsat, subsat, hadd,
// rhadd, mul24, mad24, madhi, madsat, extract_bits, insert_bits, reverse_bits, rotate.
// kiln-on-demand: fmax3 fmin3 fmedian3 nextafter divide ilogb isnormal isordered isunordered sincos modf frexp ldexp distance_squared faceforward reflect refract absdiff addsat subsat hadd rhadd mul24 mad24 madhi madsat extract_bits insert_bits reverse_bits rotate
#pragma once

#include "kiln/backend/kernels/metal/math.h"

namespace metal {

// ---------------------------------------------------------------- more float math

/** Maximum, minimum and median of three (fmax semantics for NaN). */
template <typename T>
KILN_HD detail::if_float_t<T> fmax3(T a, T b, T c) {
  return fmax(fmax(a, b), c);
}
template <typename T>
KILN_HD detail::if_float_t<T> fmin3(T a, T b, T c) {
  return fmin(fmin(a, b), c);
}
template <typename T>
KILN_HD detail::if_float_t<T> fmedian3(T a, T b, T c) {
  return fmax(fmin(a, b), fmin(fmax(a, b), c));
}
KILN_MIXED3(fmax3, detail::if_float_result_t)
KILN_MIXED3(fmin3, detail::if_float_result_t)
KILN_MIXED3(fmedian3, detail::if_float_result_t)
KILN_VMAP3(fmax3, KILN_FLOAT_VEC)
KILN_VMAP3(fmin3, KILN_FLOAT_VEC)
KILN_VMAP3(fmedian3, KILN_FLOAT_VEC)

/** The next representable value after x toward y (in x's own type). */
template <typename T>
KILN_HD detail::if_float_t<T> nextafter(T x, T y) {
  if constexpr (detail::is_same_v<T, double> || detail::is_same_v<T, float>) {
    return detail::is_same_v<T, double> ? ::nextafter(x, y) : ::nextafterf(x, y);
  } else {
    if (isnan(x) || isnan(y)) return T(x + y);
    const float fx = static_cast<float>(x), fy = static_cast<float>(y);
    if (fx == fy) return y;
    uint16_t b = x.bits_;
    if (fx == 0.0f) return T::from_bits(static_cast<uint16_t>((fy > 0 ? 0u : 0x8000u) | 1u));
    const bool up = (fy > fx) == (fx > 0.0f);
    return T::from_bits(static_cast<uint16_t>(up ? b + 1 : b - 1));
  }
}
KILN_MIXED2(nextafter, detail::if_mixed_float_t)
KILN_VMAP2(nextafter, KILN_FLOAT_VEC)
/** x / y (metal::fast::divide is the approximate one). */
template <typename T>
KILN_HD detail::if_float_t<T> divide(T x, T y) {
  return T(static_cast<detail::compute_t<T>>(x) / static_cast<detail::compute_t<T>>(y));
}
KILN_MIXED2(divide, detail::if_mixed_float_t)
KILN_VMAP2(divide, KILN_FLOAT_VEC)
/** The unbiased exponent of x as an int. */
template <typename T>
KILN_HD detail::if_float_t<T, int> ilogb(T x) {
  return ::ilogbf(static_cast<float>(x));
}
template <typename V>
KILN_HD detail::if_float_vec_t<V, vec<int, vec_t<V>::N>> ilogb(const V& v) {
  vec_t<V> a = v;
  vec<int, vec_t<V>::N> r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = ilogb(a[i]);
  return r;
}

/** Finite, non-zero and not subnormal (in x's own type). */
template <typename T>
KILN_HD detail::if_float_t<T, bool> isnormal(T x) {
  if (!isfinite(x)) return false;
  if constexpr (is_half_v<T>)
    return (x.bits_ & 0x7fffu) >= (detail::is_same_v<T, half> ? 0x0400u : 0x0080u);
  else
    return ::fabs(static_cast<detail::compute_t<T>>(x)) >=
           (detail::is_same_v<T, double> ? 2.2250738585072014e-308 : 1.175494351e-38);
}
/** Neither (either) argument is NaN. */
template <typename T>
KILN_HD detail::if_float_t<T, bool> isordered(T x, T y) {
  return !isnan(x) && !isnan(y);
}
template <typename T>
KILN_HD detail::if_float_t<T, bool> isunordered(T x, T y) {
  return isnan(x) || isnan(y);
}
#define KILN_VEC_PREDICATE(NAME)                                               \
  template <typename V>                                                        \
  KILN_HD detail::if_float_vec_t<V, vec<bool, vec_t<V>::N>> NAME(const V& v) { \
    vec_t<V> a = v;                                                            \
    vec<bool, vec_t<V>::N> r;                                                  \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i]);                   \
    return r;                                                                  \
  }
KILN_VEC_PREDICATE(isnormal)
#undef KILN_VEC_PREDICATE
#define KILN_VEC_PREDICATE2(NAME)                                                                  \
  template <typename V>                                                                            \
  KILN_HD detail::if_float_vec_t<V, vec<bool, vec_t<V>::N>> NAME(const V& x, const vec_t<V>& y) { \
    vec_t<V> a = x;                                                                                \
    vec<bool, vec_t<V>::N> r;                                                                      \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i], y[i]);                                 \
    return r;                                                                                      \
  }
KILN_VEC_PREDICATE2(isordered)
KILN_VEC_PREDICATE2(isunordered)
#undef KILN_VEC_PREDICATE2

template <typename V>
KILN_HD detail::if_float_vec_t<V> sincos(const V& x, vec_t<V>& c) {
  vec_t<V> a = x;
  c = cos(a);
  return sin(a);
}
template <typename V>
KILN_HD detail::if_float_vec_t<V> modf(const V& x, vec_t<V>& ip) {
  vec_t<V> a = x, r;
  for (int k = 0; k < vec_t<V>::N; ++k) r[k] = modf(a[k], ip[k]);
  return r;
}
template <typename V>
KILN_HD detail::if_float_vec_t<V> frexp(const V& x, vec<int, vec_t<V>::N>& e) {
  vec_t<V> a = x, r;
  for (int k = 0; k < vec_t<V>::N; ++k) r[k] = frexp(a[k], e[k]);
  return r;
}
template <typename V>
KILN_HD detail::if_float_vec_t<V> ldexp(const V& x, const vec<int, vec_t<V>::N>& e) {
  vec_t<V> a = x, r;
  for (int k = 0; k < vec_t<V>::N; ++k) r[k] = ldexp(a[k], e[k]);
  return r;
}
template <typename V>
KILN_HD detail::if_float_vec_t<V> ldexp(const V& x, int e) {
  vec_t<V> a = x, r;
  for (int k = 0; k < vec_t<V>::N; ++k) r[k] = ldexp(a[k], e);
  return r;
}

template <typename V>
KILN_HD detail::if_float_vec_t<V, detail::elem_t<V>> distance_squared(const V& x,
                                                                     const vec_t<V>& y) {
  return length_squared(vec_t<V>(x) - y);
}
/** n if dot(nref, i) < 0, else -n. */
template <typename V>
KILN_HD detail::if_float_vec_t<V> faceforward(const V& n, const vec_t<V>& i, const vec_t<V>& nref) {
  vec_t<V> a = n;
  return dot(nref, i) < detail::elem_t<V>(0) ? a : -a;
}
/** i - 2 dot(n, i) n. */
template <typename V>
KILN_HD detail::if_float_vec_t<V> reflect(const V& i, const vec_t<V>& n) {
  vec_t<V> a = i;
  return a - n * (detail::elem_t<V>(2) * dot(n, a));
}
/** The refraction of i at a surface of normal n with index ratio eta (0 on total internal
 * reflection). */
template <typename V, typename S, detail::if_scalar_arg<S> = 0>
KILN_HD detail::if_float_vec_t<V> refract(const V& i, const vec_t<V>& n, S eta) {
  typedef detail::elem_t<V> E;
  vec_t<V> a = i;
  const float e = static_cast<float>(eta), d = static_cast<float>(dot(n, a));
  const float k = 1.0f - e * e * (1.0f - d * d);
  if (k < 0.0f) return vec_t<V>(E(0));
  return a * E(e) - n * E(e * d + ::sqrtf(k));
}

/** The bits of x in reverse order. */
template <typename T>
KILN_HD detail::if_int_t<T> reverse_bits(T x) {
  typedef detail::uint_of_t<T> U;
  U u = static_cast<U>(x), r = 0;
  for (unsigned i = 0; i < sizeof(T) * 8; ++i) r = static_cast<U>((r << 1) | ((u >> i) & 1u));
  return static_cast<T>(r);
}
/** |x - y| as the unsigned type. */
template <typename T>
KILN_HD detail::enable_if_t<detail::is_integral_v<T>, detail::uint_of_t<T>> absdiff(T x, T y) {
  typedef detail::uint_of_t<T> U;
  return x > y ? static_cast<U>(static_cast<U>(x) - static_cast<U>(y))
               : static_cast<U>(static_cast<U>(y) - static_cast<U>(x));
}
namespace detail {
// x + y and x - y with the overflow flag, without compiler built-ins (NVRTC lacks them).
template <typename T>
KILN_HD T add_overflow(T x, T y, bool& over) {
  typedef uint_of_t<T> U;
  const T r = static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
  over = is_signed_v<T> ? (((x ^ r) & (y ^ r)) < T(0)) : (static_cast<U>(r) < static_cast<U>(x));
  return r;
}
template <typename T>
KILN_HD T sub_overflow(T x, T y, bool& over) {
  typedef uint_of_t<T> U;
  const T r = static_cast<T>(static_cast<U>(x) - static_cast<U>(y));
  over = is_signed_v<T> ? (((x ^ y) & (x ^ r)) < T(0)) : (static_cast<U>(x) < static_cast<U>(y));
  return r;
}
}  // namespace detail

/** Saturating add and subtract. */
template <typename T>
KILN_HD detail::if_int_t<T> addsat(T x, T y) {
  bool over;
  const T r = detail::add_overflow(x, y, over);
  if (!over) return r;
  return (!detail::is_signed_v<T> || y > T(0)) ? detail::int_max<T>() : detail::int_min<T>();
}
template <typename T>
KILN_HD detail::if_int_t<T> subsat(T x, T y) {
  bool over;
  const T r = detail::sub_overflow(x, y, over);
  if (!over) return r;
  if constexpr (detail::is_signed_v<T>)
    return y < T(0) ? detail::int_max<T>() : detail::int_min<T>();
  else
    return T(0);
}
/** (x + y) >> 1 and (x + y + 1) >> 1 without overflow. */
template <typename T>
KILN_HD detail::if_int_t<T> hadd(T x, T y) {
  return static_cast<T>((x >> 1) + (y >> 1) + (x & y & T(1)));
}
template <typename T>
KILN_HD detail::if_int_t<T> rhadd(T x, T y) {
  return static_cast<T>((x >> 1) + (y >> 1) + ((x | y) & T(1)));
}
/** Products of the low 24 bits; mad24 adds z. */
template <typename T>
KILN_HD detail::if_int_t<T> mul24(T x, T y) {
  if constexpr (detail::is_signed_v<T>)
    return static_cast<T>(static_cast<int32_t>(static_cast<uint32_t>(x) << 8) / 256 *
                          (static_cast<int32_t>(static_cast<uint32_t>(y) << 8) / 256));
  else
    return static_cast<T>((x & 0xffffffu) * (y & 0xffffffu));
}
template <typename T>
KILN_HD detail::if_int_t<T> mad24(T x, T y, T z) {
  return static_cast<T>(mul24(x, y) + z);
}
template <typename T>
KILN_HD detail::if_int_t<T> madhi(T a, T b, T c) {
  return static_cast<T>(mulhi(a, b) + c);
}
/** a * b + c, saturated. */
template <typename T>
KILN_HD detail::if_int_t<T> madsat(T a, T b, T c) {
  typedef detail::uint_of_t<T> U;
  const T p = static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  bool over;
  if constexpr (sizeof(T) < 8) {
    const int64_t wide = static_cast<int64_t>(a) * static_cast<int64_t>(b);
    over = wide != static_cast<int64_t>(p);
  } else {
    // The full product fits when the high half is the sign (zero) extension of the low.
    const T hi = mulhi(a, b);
    over = detail::is_signed_v<T> ? hi != (p < T(0) ? T(-1) : T(0)) : hi != T(0);
  }
  if (over) {
    if constexpr (detail::is_signed_v<T>)
      return (a < T(0)) != (b < T(0)) ? detail::int_min<T>() : detail::int_max<T>();
    else
      return detail::int_max<T>();
  }
  return addsat(p, c);
}
/** The `bits` bits of x from `offset` (sign-extended for signed types). */
template <typename T>
KILN_HD detail::if_int_t<T> extract_bits(T x, uint offset, uint bits) {
  typedef detail::uint_of_t<T> U;
  constexpr uint W = sizeof(T) * 8;
  if (bits == 0) return T(0);
  if (bits >= W) return x;
  if constexpr (detail::is_signed_v<T>) {
    const U u = static_cast<U>(static_cast<U>(x) << (W - offset - bits));
    return static_cast<T>(static_cast<T>(u) >> (W - bits));
  } else {
    return static_cast<T>((x >> offset) & ((U(1) << bits) - 1u));
  }
}
/** `base` with the `bits` bits from `offset` replaced by the low bits of `insert`. */
template <typename T>
KILN_HD detail::if_int_t<T> insert_bits(T base, T insert, uint offset, uint bits) {
  typedef detail::uint_of_t<T> U;
  constexpr uint W = sizeof(T) * 8;
  if (bits == 0) return base;
  const U field = bits >= W ? U(~U(0)) : static_cast<U>(((U(1) << bits) - 1u) << offset);
  return static_cast<T>((static_cast<U>(base) & ~field) |
                        ((static_cast<U>(insert) << offset) & field));
}
/** Rotates the bits of v left by i. */
template <typename T>
KILN_HD detail::if_int_t<T> rotate(T v, T i) {
  typedef detail::uint_of_t<T> U;
  constexpr uint W = sizeof(T) * 8;
  const uint s = static_cast<uint>(static_cast<U>(i) % W);
  const U u = static_cast<U>(v);
  return static_cast<T>(s == 0 ? u : static_cast<U>((u << s) | (u >> (W - s))));
}
KILN_VMAP1(reverse_bits, KILN_INT_VEC)
KILN_VMAP2(addsat, KILN_INT_VEC)
KILN_VMAP2(subsat, KILN_INT_VEC)
KILN_VMAP2(hadd, KILN_INT_VEC)
KILN_VMAP2(rhadd, KILN_INT_VEC)
KILN_VMAP2(mul24, KILN_INT_VEC)
KILN_VMAP2(rotate, KILN_INT_VEC)
KILN_VMAP3(mad24, KILN_INT_VEC)
KILN_VMAP3(madhi, KILN_INT_VEC)
KILN_VMAP3(madsat, KILN_INT_VEC)
template <typename V>
KILN_HD detail::enable_if_t<is_vec_v<V> && detail::is_integral_v<detail::elem_t<V>>,
                            vec<detail::uint_of_t<detail::elem_t<V>>, vec_t<V>::N>>
absdiff(const V& x, const vec_t<V>& y) {
  vec_t<V> a = x;
  vec<detail::uint_of_t<detail::elem_t<V>>, vec_t<V>::N> r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = absdiff(a[i], y[i]);
  return r;
}
template <typename V>
KILN_HD KILN_INT_VEC extract_bits(const V& x, uint offset, uint bits) {
  vec_t<V> a = x, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = extract_bits(a[i], offset, bits);
  return r;
}
template <typename V>
KILN_HD KILN_INT_VEC insert_bits(const V& base, const vec_t<V>& insert, uint offset, uint bits) {
  vec_t<V> a = base, r;
  for (int i = 0; i < vec_t<V>::N; ++i) r[i] = insert_bits(a[i], insert[i], offset, bits);
  return r;
}


namespace fast {
using metal::divide;
using metal::fmax3;
using metal::fmedian3;
using metal::fmin3;
using metal::nextafter;
}  // namespace fast
namespace precise {
using metal::divide;
using metal::fmax3;
using metal::fmedian3;
using metal::fmin3;
using metal::nextafter;
}  // namespace precise

}  // namespace metal
