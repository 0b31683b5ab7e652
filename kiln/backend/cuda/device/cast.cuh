// Conversion between element types with the CPU backend's semantics (kiln/scalar_cast.h):
// complex to real keeps the real part, anything to bool tests against zero, half types
// convert through float, floats to integers truncate toward zero.
#pragma once

#include "kiln/backend/cuda/device/types.cuh"

namespace kiln {

template <typename To, typename From>
__device__ inline To cast(From v) {
  if constexpr (is_same_v<To, From>) {
    return v;
  } else if constexpr (is_complex_v<From>) {
    if constexpr (is_same_v<To, bool>)
      return v.re != 0.0f || v.im != 0.0f;
    else
      return cast<To>(v.re);
  } else if constexpr (is_complex_v<To>) {
    return complex64{cast<float>(v), 0.0f};
  } else if constexpr (is_same_v<To, bool>) {
    if constexpr (is_half_v<From>)
      return float(v) != 0.0f;
    else
      return v != From(0);
  } else if constexpr (is_half_v<From>) {
    return cast<To>(float(v));
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (is_integral_v<To> && (is_same_v<From, float> || is_same_v<From, double>)) {
    // Out-of-range values are undefined in C++; going through int64 wraps them the way the
    // CPU backend does on x86-64 (e.g. -1.5 -> uint8 255), where PTX would saturate.
    if constexpr (is_same_v<To, uint64>) {
      return v < From(9.2233720368547758e18) ? static_cast<To>(static_cast<long long>(v))
                                             : static_cast<To>(v);
    } else if constexpr (sizeof(To) < 8) {
      return static_cast<To>(static_cast<long long>(v));
    } else {
      return static_cast<To>(v);
    }
  } else {
    return static_cast<To>(v);
  }
}

/** `op` applied to the elements `x...` as the CPU backend applies it: half types compute in
 * float, and the result converts to Out once (one rounding for a half output). */
template <typename Out, typename Op, typename... In>
__device__ inline Out apply(Op op, In... x) {
  return cast<Out>(op(static_cast<compute_t<In>>(x)...));
}

}  // namespace kiln
