// MLX's kernel utilities, available to custom kernels of both flavours as in MLX:
// elem_to_loc and friends (offsets of row-major indices in strided arrays), ceildiv and
// Limits<T>. The overloads for vector indices and Limits of half and bfloat are here; the
// rest is in utils_core.h.
#pragma once

#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/utils_core.h"
#include "kiln/backend/kernels/metal/vec.h"

namespace kiln_utils {

/** For a 3-D grid over the array: x and y index the last two dimensions, z the others. */
KILN_HD int64_t elem_to_loc(metal::uint3 elem, const int32_t* shape, const int64_t* strides,
                            int ndim) {
  int64_t loc = int64_t(elem.x) * strides[ndim - 1] + int64_t(elem.y) * strides[ndim - 2];
  int64_t z = elem.z;
  for (int d = ndim - 3; d >= 0; --d) {
    loc += (z % shape[d]) * strides[d];
    z /= shape[d];
  }
  return loc;
}

KILN_HD int64_t elem_to_loc_2(metal::uint2 elem, const int64_t* strides) {
  return int64_t(elem.x) * strides[1] + int64_t(elem.y) * strides[0];
}
KILN_HD int64_t elem_to_loc_3(metal::uint3 elem, const int64_t* strides) {
  return int64_t(elem.x) * strides[2] + int64_t(elem.y) * strides[1] + int64_t(elem.z) * strides[0];
}

/** Offsets of one element in two arrays of the same shape (3-D grid as elem_to_loc). */
KILN_HD metal::vec<int64_t, 2> elem_to_loc_2_nd(metal::uint3 elem, const int32_t* shape,
                                                const int64_t* a_strides, const int64_t* b_strides,
                                                int ndim) {
  metal::vec<int64_t, 2> loc(
      int64_t(elem.x) * a_strides[ndim - 1] + int64_t(elem.y) * a_strides[ndim - 2],
      int64_t(elem.x) * b_strides[ndim - 1] + int64_t(elem.y) * b_strides[ndim - 2]);
  int64_t z = elem.z;
  for (int d = ndim - 3; d >= 0; --d) {
    int64_t l = z % shape[d];
    loc.x += l * a_strides[d];
    loc.y += l * b_strides[d];
    z /= shape[d];
  }
  return loc;
}

template <>
struct Limits<metal::half> {
  static constexpr float max = __builtin_bit_cast(float, 0x7f800000u);
  static constexpr float min = -__builtin_bit_cast(float, 0x7f800000u);
  static constexpr float finite_max = 65504.0f;
  static constexpr float finite_min = -65504.0f;
};
template <>
struct Limits<metal::bfloat> {
  static constexpr float max = __builtin_bit_cast(float, 0x7f800000u);
  static constexpr float min = -__builtin_bit_cast(float, 0x7f800000u);
  static constexpr float finite_max = 3.38953139e+38f;
  static constexpr float finite_min = -3.38953139e+38f;
};

}  // namespace kiln_utils
