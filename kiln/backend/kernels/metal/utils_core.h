// MLX's kernel utilities that both flavours share and that need neither vectors nor half
// types: elem_to_loc for scalar indices, elem_to_loc_nd, elem_to_loc_1 and ceildiv, with
// MLX's signatures (the index type in is the offset type out). The CUDA flavour's light
// prelude (cuda_gpu_lite.h) has these; utils.h adds the Metal flavour's (vector indices,
// Limits, ...) and cuda/mlx.h the CUDA flavour's.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"

namespace kiln_utils {

using metal::uint;

/** Offset (elements) of the element with row-major index `elem` in an array of `ndim`
 * dimensions with `shape` and `strides` (in elements). As in MLX, the offset has the type of
 * `elem`: pass an int64_t index for arrays with negative strides. */
template <typename IdxT = int64_t>
KILN_HD IdxT elem_to_loc(IdxT elem, const int32_t* shape, const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += (elem % shape[i]) * IdxT(strides[i]);
    elem /= shape[i];
  }
  return loc;
}

/** The same with NDIM fixed at compile time. */
template <int NDIM, typename IdxT = int64_t>
KILN_HD IdxT elem_to_loc_nd(IdxT elem, const int32_t* shape, const int64_t* strides) {
  IdxT loc = 0;
  for (int i = NDIM - 1; i >= 0; --i) {
    loc += (elem % shape[i]) * IdxT(strides[i]);
    elem /= shape[i];
  }
  return loc;
}

template <typename IdxT = int64_t>
KILN_HD IdxT elem_to_loc_1(uint elem, const int64_t& stride) {
  return elem * IdxT(stride);
}

/** ceil(n / m) for positive integers, in the type of `n` (MLX's ceildiv(T, U)). */
template <typename T, typename U>
KILN_HD T ceildiv(T n, U m) {
  return (n + m - 1) / m;
}

}  // namespace kiln_utils
