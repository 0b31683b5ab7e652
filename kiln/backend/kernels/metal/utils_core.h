// MLX's kernel utilities that need neither vectors nor half types: elem_to_loc for scalar
// indices, elem_to_loc_nd, elem_to_loc_1, ceildiv and Limits<T> for the built-in types.
// The CUDA flavour's light prelude (cuda_gpu_lite.h) has only these; utils.h adds the rest.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"

namespace kiln_utils {

using metal::uint;

/** Offset (elements) of the element with row-major index `elem` in an array of `ndim`
 * dimensions with `shape` and `strides` (in elements; negative strides allowed). */
template <typename IdxT>
KILN_HD int64_t elem_to_loc(IdxT elem, const int32_t* shape, const int64_t* strides, int ndim) {
  int64_t loc = 0, e = static_cast<int64_t>(elem);
  for (int i = ndim - 1; i >= 0 && e > 0; --i) {
    loc += (e % shape[i]) * strides[i];
    e /= shape[i];
  }
  return loc;
}

/** The same with NDIM fixed at compile time. */
template <int NDIM, typename IdxT>
KILN_HD int64_t elem_to_loc_nd(IdxT elem, const int32_t* shape, const int64_t* strides) {
  int64_t loc = 0, e = static_cast<int64_t>(elem);
  for (int i = NDIM - 1; i >= 0; --i) {
    loc += (e % shape[i]) * strides[i];
    e /= shape[i];
  }
  return loc;
}

KILN_HD int64_t elem_to_loc_1(uint elem, int64_t stride) {
  return int64_t(elem) * stride;
}

/** ceil(n / m) for positive integers. */
template <typename T>
KILN_HD T ceildiv(T n, T m) {
  return (n + m - 1) / m;
}

/**
 * MLX's Limits<T>: max and min (infinities for floating types), finite_max and finite_min.
 * Plain constants usable in device code; for half and bfloat they are floats holding the
 * half type's values (they convert on assignment).
 */
template <typename T, typename = void>
struct Limits;
template <typename T>
struct Limits<T, metal::detail::enable_if_t<metal::detail::is_integral_v<T>>> {
  static constexpr T max =
      metal::detail::is_signed_v<T> ? T((~0ull >> 1) >> (64 - sizeof(T) * 8)) : T(~0ull);
  static constexpr T min = metal::detail::is_signed_v<T> ? T(-max - 1) : T(0);
  static constexpr T finite_max = max;
  static constexpr T finite_min = min;
};
template <>
struct Limits<float> {
  static constexpr float max = __builtin_bit_cast(float, 0x7f800000u);
  static constexpr float min = -__builtin_bit_cast(float, 0x7f800000u);
  static constexpr float finite_max = 3.402823466e+38f;
  static constexpr float finite_min = -3.402823466e+38f;
};
template <>
struct Limits<double> {
  static constexpr double max = __builtin_bit_cast(double, 0x7ff0000000000000ull);
  static constexpr double min = -__builtin_bit_cast(double, 0x7ff0000000000000ull);
  static constexpr double finite_max = 1.7976931348623157e308;
  static constexpr double finite_min = -1.7976931348623157e308;
};
template <>
struct Limits<bool> {
  static constexpr bool max = true;
  static constexpr bool min = false;
  static constexpr bool finite_max = true;
  static constexpr bool finite_min = false;
};

}  // namespace kiln_utils
