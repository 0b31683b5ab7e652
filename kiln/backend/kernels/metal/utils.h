// MLX's kernel utilities (mlx/backend/metal/kernels/utils.h, bf16.h and defines.h) for the
// Metal flavour, written for kiln with MLX's names and signatures: elem_to_loc for vector
// indices and for two or three arrays, elem_to_loc_1/2/3, LoopedElemToLoc, Limits<T>,
// log1p, the 64-bit, bool and complex simd shuffles, WorkPerThread, ConditionalType and
// MLX's constants. Shared scalar forms (elem_to_loc, elem_to_loc_nd, ceildiv) are in
// utils_core.h.
#pragma once

#include "kiln/backend/kernels/metal/complex.h"
#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/math.h"
#include "kiln/backend/kernels/metal/utils_core.h"
#include "kiln/backend/kernels/metal/vec.h"

#ifndef MLX_MTL_PRAGMA_UNROLL
#define MLX_MTL_PRAGMA_UNROLL _Pragma("unroll")
#endif
#ifndef MTL_CONST
#define MTL_CONST
#endif

namespace kiln_utils {

/** For a 3-D grid over the array: x and y index the last two dimensions, z the others. */
template <typename IdxT = int64_t>
KILN_HD IdxT elem_to_loc(metal::uint3 elem, const int32_t* shape, const int64_t* strides,
                         int ndim) {
  IdxT loc = elem.x * IdxT(strides[ndim - 1]) + elem.y * IdxT(strides[ndim - 2]);
  for (int d = ndim - 3; d >= 0; --d) {
    loc += (elem.z % shape[d]) * IdxT(strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}

template <typename IdxT = int64_t>
KILN_HD IdxT elem_to_loc_2(metal::uint2 elem, const int64_t* strides) {
  return elem.x * IdxT(strides[1]) + elem.y * IdxT(strides[0]);
}
template <typename IdxT = int64_t>
KILN_HD IdxT elem_to_loc_3(metal::uint3 elem, const int64_t* strides) {
  return elem.x * IdxT(strides[2]) + elem.y * IdxT(strides[1]) + elem.z * IdxT(strides[0]);
}

/** Offsets of one element in two arrays of the same shape (3-D grid as elem_to_loc). */
template <typename IdxT = int64_t>
KILN_HD metal::vec<IdxT, 2> elem_to_loc_2_nd(metal::uint3 elem, const int32_t* shape,
                                             const int64_t* a_strides, const int64_t* b_strides,
                                             int ndim) {
  metal::vec<IdxT, 2> loc(
      IdxT(elem.x * IdxT(a_strides[ndim - 1]) + IdxT(elem.y) * IdxT(a_strides[ndim - 2])),
      IdxT(elem.x * IdxT(b_strides[ndim - 1]) + elem.y * IdxT(b_strides[ndim - 2])));
  for (int d = ndim - 3; d >= 0; --d) {
    metal::uint l = elem.z % shape[d];
    loc.x += l * IdxT(a_strides[d]);
    loc.y += l * IdxT(b_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}

/** The same for three arrays. */
template <typename IdxT = int64_t>
KILN_HD metal::vec<IdxT, 3> elem_to_loc_3_nd(metal::uint3 elem, const int32_t* shape,
                                             const int64_t* a_strides, const int64_t* b_strides,
                                             const int64_t* c_strides, int ndim) {
  metal::vec<IdxT, 3> loc(
      IdxT(elem.x * IdxT(a_strides[ndim - 1])) + IdxT(elem.y * IdxT(a_strides[ndim - 2])),
      IdxT(elem.x * IdxT(b_strides[ndim - 1])) + IdxT(elem.y * IdxT(b_strides[ndim - 2])),
      IdxT(elem.x * IdxT(c_strides[ndim - 1])) + IdxT(elem.y * IdxT(c_strides[ndim - 2])));
  for (int d = ndim - 3; d >= 0; --d) {
    metal::uint l = elem.z % shape[d];
    loc.x += l * IdxT(a_strides[d]);
    loc.y += l * IdxT(b_strides[d]);
    loc.z += l * IdxT(c_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}

}  // namespace kiln_utils

/** What only the Metal flavour sees (MLX's Metal spellings). */
namespace kiln_metal_utils {

using kiln_utils::elem_to_loc;
using metal::uint;

// MLX's defines.h.
constexpr int MAX_REDUCE_SPECIALIZED_DIMS = 4;
constexpr int REDUCE_N_READS = 4;
constexpr int REDUCE_N_WRITES = 4;
constexpr int SOFTMAX_N_READS = 4;
constexpr int RMS_N_READS = 4;
constexpr int RMS_LOOPED_LIMIT = 4096;

/** Elements per thread for 8-byte work (MLX's WorkPerThread). */
template <typename U>
struct WorkPerThread {
  static_assert(sizeof(U) <= 8, "Type too large");
  static constexpr int n = 8 / sizeof(U);
};

/** std::conditional by MLX's name. */
template <bool condition, typename T, typename U>
struct ConditionalType {
  using type = U;
};
template <typename T, typename U>
struct ConditionalType<true, T, U> {
  using type = T;
};

/**
 * MLX's Limits<T>: max and min (infinities for floating types), finite_max and finite_min,
 * as constants of type T.
 */
template <typename T, typename = void>
struct Limits {
  static constexpr T max = metal::numeric_limits<T>::max();
  static constexpr T min = metal::numeric_limits<T>::min();
  static constexpr T finite_max = metal::numeric_limits<T>::max();
  static constexpr T finite_min = metal::numeric_limits<T>::min();
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
// The half types are classes: their limits are floats holding the half values (a float
// converts to the half type exactly on assignment).
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
template <>
struct Limits<metal::complex64_t> {
  static constexpr metal::complex64_t max{__builtin_bit_cast(float, 0x7f800000u),
                                          __builtin_bit_cast(float, 0x7f800000u)};
  static constexpr metal::complex64_t min{-__builtin_bit_cast(float, 0x7f800000u),
                                          -__builtin_bit_cast(float, 0x7f800000u)};
};

/** Offsets of consecutive elements of a strided array (MLX's Metal LoopedElemToLoc; its
 * parameters are in Metal's order: DIM, OffsetT, General; kiln_utils has it). */
template <int DIM, typename OffsetT = size_t, bool General = true>
using LoopedElemToLoc = kiln_utils::LoopedElemToLocImpl<DIM, General, OffsetT, uint>;

/** log(1 + x), accurate near 0 (MLX's formula, from Goldberg); float and bfloat16 (a
 * template, so that the toolkit's log1p(float) is not ambiguous with it). */
template <typename T>
KILN_HD metal::detail::enable_if_t<
    metal::detail::is_same_v<T, float> || metal::detail::is_same_v<T, metal::bfloat>, T>
log1p(T x) {
  const float xf = static_cast<float>(x);
  const float xp1 = 1.0f + xf;
  if (xp1 == Limits<float>::max) return T(Limits<float>::max);
  if (xp1 == 1.0f) return x;
  return T(xf * (metal::log(xp1) / (xp1 - 1.0f)));
}
KILN_HD metal::complex64_t log1p(metal::complex64_t in) {
  const float x = in.real, y = in.imag;
  const float zabs = metal::sqrt(x * x + y * y);
  const float theta = metal::atan2(y, x + 1);
  if (zabs < 0.5f) {
    const float r = x * (2 + x) + y * y;
    if (r == 0) return {x, theta};
    return {0.5f * log1p(r), theta};
  }
  return {metal::log(metal::sqrt((x + 1) * (x + 1) + y * y)), theta};
}

/** bfloat16 bits (MLX's bf16.h). */
KILN_HD uint16_t bfloat16_to_uint16(const metal::bfloat x) {
  return x.bits_;
}
KILN_HD metal::bfloat uint16_to_bfloat16(const uint16_t x) {
  return metal::bfloat::from_bits(x);
}

}  // namespace kiln_metal_utils
