// Conversion between any two element types, with NumPy's semantics: complex to real keeps
// the real part, anything to bool tests against zero, floats to integers truncate.
#pragma once

#include <complex>
#include <type_traits>

#include "kiln/half_types.h"

namespace kiln {

template <typename T>
inline constexpr bool is_complex_v = false;
template <typename T>
inline constexpr bool is_complex_v<std::complex<T>> = true;

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

template <typename To, typename From>
constexpr To scalar_cast(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_complex_v<From>) {
    if constexpr (is_complex_v<To>) return To(v);
    else if constexpr (std::is_same_v<To, bool>) return v != From(0);
    else return scalar_cast<To>(v.real());
  } else if constexpr (is_complex_v<To>) {
    return To(static_cast<typename To::value_type>(scalar_cast<float>(v)), 0);
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_half_v<From>) return static_cast<float>(v) != 0.0f;
    else return v != From(0);
  } else if constexpr (is_half_v<From>) {
    return static_cast<To>(static_cast<float>(v));
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace kiln
