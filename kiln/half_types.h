// Host-side half-precision types: IEEE binary16 (float16_t) and bfloat16 (bfloat16_t).
//
// Both are storage types: arithmetic promotes to float and rounds back, which is
// exactly what the GPU does for scalar half arithmetic. Conversions from float round
// to nearest, ties to even, and keep NaN/inf; subnormals are exact.
#pragma once

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <ostream>
#include <type_traits>

namespace kiln {

namespace detail {

// `c ? a : b` as bit operations, which compilers keep a vector blend (a ternary can turn
// back into a branch, and a loop with one does not vectorize).
constexpr uint32_t select_u32(bool c, uint32_t a, uint32_t b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return (a & m) | (b & ~m);
}

// float -> binary16 bits, round to nearest even. Every case is computed and the result
// selected without a branch, so that loops over arrays vectorize (as bfloat16's do).
constexpr uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7FFFFFFFu;
  // Normal half: rebias the exponent by -112 and round to nearest even at bit 13.
  const uint32_t normal = (x + 0xC8000FFFu + ((x >> 13) & 1u)) >> 13;
  // Subnormal half (x < 2^-14): adding 0.5f puts the half ulp (2^-24) at the float ulp, so
  // the FPU performs the round-to-nearest-even.
  const bool small = x < 0x38800000u;
  const uint32_t subnormal =
      std::bit_cast<uint32_t>(std::bit_cast<float>(select_u32(small, x, 0u)) + 0.5f) - 0x3F000000u;
  // Inf or NaN; a NaN keeps its top payload bits and is quiet.
  const uint32_t special =
      0x7C00u | select_u32(x > 0x7F800000u, 0x0200u | ((x >> 13) & 0x3FFu), 0u);
  uint32_t r = select_u32(small, subnormal, normal);
  r = select_u32(x >= 0x477FF000u, 0x7C00u, r);  // >= 65520 rounds to inf
  r = select_u32(x >= 0x7F800000u, special, r);
  return static_cast<uint16_t>(sign | r);
}

// binary16 bits -> float, exact; branch-free like the conversion above.
constexpr float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  const uint32_t normal = ((exp + 112u) << 23) | (mant << 13);
  const uint32_t special = 0x7F800000u | (mant << 13);  // inf, NaN (payload kept)
  // Subnormal or zero: mant * 2^-24, exact in float.
  const uint32_t subnormal =
      std::bit_cast<uint32_t>(static_cast<float>(mant) * 5.9604644775390625e-08f);
  return std::bit_cast<float>(
      sign | select_u32(exp == 0x1Fu, special, select_u32(exp == 0, subnormal, normal)));
}

// float -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
constexpr uint16_t float_to_bfloat_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

constexpr float bfloat_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

}  // namespace detail

// CRTP base: a 16-bit float storage type that computes in float.
template <typename Derived>
struct Float16Base {
  uint16_t bits;

#define KILN_HALF_ARITH(op)                                                             \
  friend constexpr Derived operator op(Derived a, Derived b) {                          \
    return Derived(float(a) op float(b));                                               \
  }                                                                                     \
  /* with a float or double the result widens; with an integer it stays half, as MLX */ \
  template <typename U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>             \
  friend constexpr auto operator op(Derived a, U b) {                                   \
    if constexpr (std::is_floating_point_v<U>)                                          \
      return static_cast<U>(float(a)) op b;                                             \
    else                                                                                \
      return Derived(float(a) op static_cast<float>(b));                                \
  }                                                                                     \
  template <typename U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>             \
  friend constexpr auto operator op(U a, Derived b) {                                   \
    if constexpr (std::is_floating_point_v<U>)                                          \
      return a op static_cast<U>(float(b));                                             \
    else                                                                                \
      return Derived(static_cast<float>(a) op float(b));                                \
  }
#define KILN_HALF_CMP(op)                                                   \
  friend constexpr bool operator op(Derived a, Derived b) {                 \
    return float(a) op float(b);                                            \
  }                                                                         \
  template <typename U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0> \
  friend constexpr bool operator op(Derived a, U b) {                       \
    return static_cast<double>(float(a)) op static_cast<double>(b);         \
  }                                                                         \
  template <typename U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0> \
  friend constexpr bool operator op(U a, Derived b) {                       \
    return static_cast<double>(a) op static_cast<double>(float(b));         \
  }
  KILN_HALF_ARITH(+)
  KILN_HALF_ARITH(-)
  KILN_HALF_ARITH(*)
  KILN_HALF_ARITH(/)
  KILN_HALF_CMP(==)
  KILN_HALF_CMP(!=)
  KILN_HALF_CMP(<)
  KILN_HALF_CMP(<=)
  KILN_HALF_CMP(>)
  KILN_HALF_CMP(>=)
#undef KILN_HALF_ARITH
#undef KILN_HALF_CMP
  friend constexpr Derived operator-(Derived a) {
    return Derived(-float(a));
  }
  constexpr Derived& operator+=(Derived o) {
    return self() = self() + o;
  }
  constexpr Derived& operator-=(Derived o) {
    return self() = self() - o;
  }
  constexpr Derived& operator*=(Derived o) {
    return self() = self() * o;
  }
  constexpr Derived& operator/=(Derived o) {
    return self() = self() / o;
  }
  friend std::ostream& operator<<(std::ostream& os, Derived v) {
    return os << float(v);
  }

 private:
  constexpr Derived& self() {
    return static_cast<Derived&>(*this);
  }
};

/** IEEE 754 binary16. Converts from float with round-to-nearest-even. */
struct float16_t : Float16Base<float16_t> {
  constexpr float16_t() : Float16Base{0} {}
  constexpr float16_t(float f) : Float16Base{detail::float_to_half_bits(f)} {}
  constexpr float16_t(double d) : float16_t(static_cast<float>(d)) {}
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  constexpr float16_t(T v) : float16_t(static_cast<float>(v)) {}
  constexpr operator float() const { return detail::half_bits_to_float(bits); }
  static constexpr float16_t from_bits(uint16_t b) {
    float16_t h;
    h.bits = b;
    return h;
  }
};

/** bfloat16: the upper half of an IEEE float32. Converts with round-to-nearest-even. */
struct bfloat16_t : Float16Base<bfloat16_t> {
  constexpr bfloat16_t() : Float16Base{0} {}
  constexpr bfloat16_t(float f) : Float16Base{detail::float_to_bfloat_bits(f)} {}
  constexpr bfloat16_t(double d) : bfloat16_t(static_cast<float>(d)) {}
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  constexpr bfloat16_t(T v) : bfloat16_t(static_cast<float>(v)) {}
  constexpr operator float() const { return detail::bfloat_bits_to_float(bits); }
  static constexpr bfloat16_t from_bits(uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(float16_t) == 2 && sizeof(bfloat16_t) == 2);

using complex64_t = std::complex<float>;

}  // namespace kiln
