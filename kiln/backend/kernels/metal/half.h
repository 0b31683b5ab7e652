// Metal's `half` (IEEE binary16) and `bfloat` (bfloat16), also named float16_t and
// bfloat16_t as in MLX's generated signatures.
//
// Storage types that compute in float, with Metal's promotion rules: half op half is half,
// half op integer is half, half op float is float (a double, which Metal lacks, counts as
// float). Conversions from float round to nearest even and keep NaN and infinities.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"

namespace metal {

struct half;
struct bfloat;

template <typename T>
inline constexpr bool is_half_v = false;
template <>
inline constexpr bool is_half_v<half> = true;
template <>
inline constexpr bool is_half_v<bfloat> = true;
template <>
inline constexpr bool is_half_v<const half> = true;
template <>
inline constexpr bool is_half_v<const bfloat> = true;

namespace detail {

KILN_HD uint16_t float_to_half_bits(float f) {
#ifdef __CUDA_ARCH__
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  uint32_t x = __builtin_bit_cast(uint32_t, f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {  // inf or NaN (kept quiet)
    return sign | 0x7c00u | (x > 0x7f800000u ? 0x0200u | ((x >> 13) & 0x3ffu) : 0u);
  }
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // rounds to inf
  if (x < 0x38800000u) {
    // Subnormal: adding 0.5f lines the half ulp up with the float ulp, so the FPU rounds.
    float r = __builtin_bit_cast(float, x) + 0.5f;
    return sign | static_cast<uint16_t>(__builtin_bit_cast(uint32_t, r) - 0x3f000000u);
  }
  x += 0xc8000fffu + ((x >> 13) & 1u);  // rebias the exponent and round to nearest even
  return sign | static_cast<uint16_t>(x >> 13);
#endif
}

KILN_HD float half_bits_to_float(uint16_t h) {
#ifdef __CUDA_ARCH__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1fu) return __builtin_bit_cast(float, sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  return __builtin_bit_cast(float, sign | ((exp + 112u) << 23) | (mant << 13));
#endif
}

KILN_HD uint16_t float_to_bfloat_bits(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  uint32_t x = __builtin_bit_cast(uint32_t, f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
#endif
}

KILN_HD float bfloat_bits_to_float(uint16_t b) {
  return __builtin_bit_cast(float, static_cast<uint32_t>(b) << 16);
}

template <typename S>
inline constexpr bool half_convertible_v = is_arithmetic_v<S> || is_half_v<S>;

}  // namespace detail

// Both types share one definition; H is the type, TO/FROM convert bits.
#define KILN_HALF_TYPE(H, TO, FROM)                                                    \
  struct H {                                                                           \
    uint16_t bits_;                                                                    \
                                                                                       \
    H() = default;                                                                     \
    /* Implicit, as Metal converts float to half on assignment. */                     \
    template <typename S, detail::enable_if_t<detail::half_convertible_v<S>, int> = 0> \
    KILN_HD H(S s) : bits_(detail::TO(static_cast<float>(s))) {}                       \
    KILN_HD operator float() const { return detail::FROM(bits_); }                     \
    static KILN_HD H from_bits(uint16_t b) {                                           \
      H h;                                                                             \
      h.bits_ = b;                                                                     \
      return h;                                                                        \
    }                                                                                  \
                                                                                       \
    /* H op H is H; H op integer is H; H op float (or double) is float. */             \
    template <typename S>                                                              \
    using mixed_t = detail::conditional_t<detail::is_integral_v<S>, H, float>;         \
    KILN_HALF_ARITH(H, +)                                                              \
    KILN_HALF_ARITH(H, -)                                                              \
    KILN_HALF_ARITH(H, *)                                                              \
    KILN_HALF_ARITH(H, /)                                                              \
    KILN_HALF_COMPARE(H, ==)                                                           \
    KILN_HALF_COMPARE(H, !=)                                                           \
    KILN_HALF_COMPARE(H, <)                                                            \
    KILN_HALF_COMPARE(H, <=)                                                           \
    KILN_HALF_COMPARE(H, >)                                                            \
    KILN_HALF_COMPARE(H, >=)                                                           \
    friend KILN_HD H operator-(H a) { return from_bits(a.bits_ ^ 0x8000u); }           \
    friend KILN_HD H operator+(H a) { return a; }                                      \
    KILN_HD H& operator++() { return *this = H(float(*this) + 1.0f); }                 \
    KILN_HD H& operator--() { return *this = H(float(*this) - 1.0f); }                 \
    KILN_HD H operator++(int) {                                                        \
      H old = *this;                                                                   \
      ++*this;                                                                         \
      return old;                                                                      \
    }                                                                                  \
    KILN_HD H operator--(int) {                                                        \
      H old = *this;                                                                   \
      --*this;                                                                         \
      return old;                                                                      \
    }                                                                                  \
  };

#define KILN_HALF_ARITH(H, op)                                                       \
  friend KILN_HD H operator op(H a, H b) {                                           \
    return H(float(a) op float(b));                                                  \
  }                                                                                  \
  template <typename S, detail::enable_if_t<detail::is_arithmetic_v<S>, int> = 0>    \
  friend KILN_HD mixed_t<S> operator op(H a, S b) {                                  \
    return mixed_t<S>(float(a) op static_cast<float>(b));                            \
  }                                                                                  \
  template <typename S, detail::enable_if_t<detail::is_arithmetic_v<S>, int> = 0>    \
  friend KILN_HD mixed_t<S> operator op(S a, H b) {                                  \
    return mixed_t<S>(static_cast<float>(a) op float(b));                            \
  }                                                                                  \
  template <typename S, detail::enable_if_t<detail::half_convertible_v<S>, int> = 0> \
  KILN_HD H& operator op##=(S b) {                                                   \
    return *this = H(float(*this) op static_cast<float>(b));                         \
  }

#define KILN_HALF_COMPARE(H, op)                                                  \
  friend KILN_HD bool operator op(H a, H b) {                                     \
    return float(a) op float(b);                                                  \
  }                                                                               \
  template <typename S, detail::enable_if_t<detail::is_arithmetic_v<S>, int> = 0> \
  friend KILN_HD bool operator op(H a, S b) {                                     \
    return float(a) op static_cast<float>(b);                                     \
  }                                                                               \
  template <typename S, detail::enable_if_t<detail::is_arithmetic_v<S>, int> = 0> \
  friend KILN_HD bool operator op(S a, H b) {                                     \
    return static_cast<float>(a) op float(b);                                     \
  }

KILN_HALF_TYPE(half, float_to_half_bits, half_bits_to_float)
KILN_HALF_TYPE(bfloat, float_to_bfloat_bits, bfloat_bits_to_float)
#undef KILN_HALF_TYPE
#undef KILN_HALF_ARITH
#undef KILN_HALF_COMPARE

// half with bfloat: float, as Metal has no implicit conversion between them.
#define KILN_HALF_CROSS(op, R)              \
  KILN_HD R operator op(half a, bfloat b) { \
    return float(a) op float(b);            \
  }                                         \
  KILN_HD R operator op(bfloat a, half b) { \
    return float(a) op float(b);            \
  }
KILN_HALF_CROSS(+, float)
KILN_HALF_CROSS(-, float)
KILN_HALF_CROSS(*, float)
KILN_HALF_CROSS(/, float)
KILN_HALF_CROSS(==, bool)
KILN_HALF_CROSS(!=, bool)
KILN_HALF_CROSS(<, bool)
KILN_HALF_CROSS(<=, bool)
KILN_HALF_CROSS(>, bool)
KILN_HALF_CROSS(>=, bool)
#undef KILN_HALF_CROSS

static_assert(sizeof(half) == 2 && sizeof(bfloat) == 2, "half types are 16 bits");

namespace detail {

template <typename T>
struct remove_ref {
  typedef T type;
};
template <typename T>
struct remove_ref<T&> {
  typedef T type;
};
template <typename T>
struct remove_ref<T&&> {
  typedef T type;
};
template <typename T>
using decay_value_t = remove_cv_t<typename remove_ref<T>::type>;

/** The type of `c ? x : y` by Metal's usual arithmetic conversions, where a half type
 * meets another scalar type (`mixed`): half with an integer is half; with float, double or
 * the other half type, float. */
template <typename X, typename Y>
struct tern_common {
  static constexpr bool hx = is_half_v<X>, hy = is_half_v<Y>;
  static constexpr bool mixed = !is_same_v<X, Y> && ((hx && (hy || is_arithmetic_v<Y>)) ||
                                                     (hy && is_arithmetic_v<X>));
  typedef conditional_t<hx && hy, float,
                        conditional_t<hx, conditional_t<is_integral_v<Y>, X, float>,
                                      conditional_t<is_integral_v<X>, Y, float>>>
      type;
};

/** An operand of a Metal conditional (see rewrite_conditionals in signature.cpp): converted
 * to the conditional's type when a half type meets another scalar type, else passed
 * through (an lvalue stays an lvalue). */
template <typename X, typename Y, typename V>
KILN_HD decltype(auto) tern_cast(V&& v) {
  typedef tern_common<decay_value_t<X>, decay_value_t<Y>> C;
  if constexpr (C::mixed)
    return typename C::type(static_cast<V&&>(v));
  else if constexpr (!is_same_v<typename remove_ref<V>::type, V> &&
                     is_same_v<typename remove_ref<V>::type&, V>)
    return static_cast<V&&>(v);
  else
    return static_cast<remove_cv_t<typename remove_ref<V>::type>>(static_cast<V&&>(v));
}

}  // namespace detail

/** MLX's names for the half types, used in generated signatures. */
typedef half float16_t;
typedef bfloat bfloat16_t;

}  // namespace metal
