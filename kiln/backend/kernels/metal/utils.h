// MLX's kernel utilities, available to custom kernels of both flavours as in MLX:
// elem_to_loc and friends (offsets of row-major indices in strided arrays), ceildiv and
// Limits<T>.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/vec.h"

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
#define KILN_FLOAT_LIMITS(T, S, MAXV)                                 \
  template <>                                                         \
  struct Limits<T> {                                                  \
    static constexpr S max = __builtin_bit_cast(float, 0x7f800000u);  \
    static constexpr S min = -__builtin_bit_cast(float, 0x7f800000u); \
    static constexpr S finite_max = MAXV;                             \
    static constexpr S finite_min = -(MAXV);                          \
  };
KILN_FLOAT_LIMITS(float, float, 3.402823466e+38f)
KILN_FLOAT_LIMITS(metal::half, float, 65504.0f)
KILN_FLOAT_LIMITS(metal::bfloat, float, 3.38953139e+38f)
#undef KILN_FLOAT_LIMITS
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
