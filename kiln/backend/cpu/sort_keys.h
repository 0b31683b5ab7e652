// Order-preserving unsigned keys of elements for the CPU's sort family (sort.cpp,
// sort_ops.cpp): the keys of the GPU kernels (backend/cuda/device/sort_keys.cuh), so that
// both backends order alike. Canonical keys: NaN last and equal to each other, -0.0 equal to
// 0.0, complex numbers by real part, then imaginary part; integer comparisons throughout.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "kiln/dtype.h"
#include "kiln/half_types.h"
#include "kiln/scalar_cast.h"

namespace kiln::cpu {

template <typename T>
using KeyOf =
    std::conditional_t<sizeof(T) == 1, uint8_t,
                       std::conditional_t<sizeof(T) == 2, uint16_t,
                                          std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

/** The canonical key of an IEEE float's bits (U: its unsigned type, INF: +infinity's bits). */
template <typename U, U INF>
U float_key(U bits) {
  constexpr U top = static_cast<U>(U(1) << (8 * sizeof(U) - 1));
  const U magnitude = static_cast<U>(bits & static_cast<U>(~top));
  if (magnitude > INF) return static_cast<U>(~U(0));
  if (magnitude == 0) return top;
  return (bits & top) ? static_cast<U>(~bits) : static_cast<U>(bits | top);
}

template <typename U>
U float_bits(U key) {
  constexpr U top = static_cast<U>(U(1) << (8 * sizeof(U) - 1));
  return (key & top) ? static_cast<U>(key & static_cast<U>(~top)) : static_cast<U>(~key);
}

/** The canonical key of element `v`. */
template <typename T>
KeyOf<T> to_key(T v) {
  using U = KeyOf<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (std::is_unsigned_v<T>) {
    return v;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<U>(static_cast<U>(v) ^ (U(1) << (8 * sizeof(T) - 1)));
  } else if constexpr (std::is_same_v<T, float16_t>) {
    return float_key<uint16_t, 0x7c00>(std::bit_cast<uint16_t>(v));
  } else if constexpr (std::is_same_v<T, bfloat16_t>) {
    return float_key<uint16_t, 0x7f80>(std::bit_cast<uint16_t>(v));
  } else if constexpr (std::is_same_v<T, float>) {
    return float_key<uint32_t, 0x7f800000u>(std::bit_cast<uint32_t>(v));
  } else if constexpr (std::is_same_v<T, double>) {
    return float_key<uint64_t, 0x7ff0000000000000ull>(std::bit_cast<uint64_t>(v));
  } else {
    static_assert(is_complex_v<T>);
    const uint64_t re = to_key(v.real()), im = to_key(v.imag());
    return re << 32 | im;
  }
}

/** Whether a key is a NaN's (complex: either part's). */
template <typename T>
bool is_nan_key(KeyOf<T> k) {
  if constexpr (is_complex_v<T>)
    return static_cast<uint32_t>(k >> 32) == ~0u || static_cast<uint32_t>(k) == ~0u;
  else if constexpr (std::is_floating_point_v<T> || is_half_v<T>)
    return k == static_cast<KeyOf<T>>(~KeyOf<T>(0));
  else
    return false;
}

}  // namespace kiln::cpu
