// MLX's kernel utilities that both flavours share and that need neither vectors nor half
// types: elem_to_loc for scalar indices, elem_to_loc_nd, elem_to_loc_1 and ceildiv, with
// MLX's signatures (the index type in is the offset type out). The CUDA flavour's light
// prelude (cuda_gpu_lite.h) has these; utils.h adds the Metal flavour's (vector indices,
// Limits, ...) and cuda/mlx.h the CUDA flavour's.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"

namespace kiln_utils {

using metal::uint;

/** The offset type for an index type: the index type itself when it is signed, else
 * int64_t (an unsigned offset could not step back through a negative stride). */
template <typename IdxT>
using offset_t = metal::detail::conditional_t<metal::detail::is_signed_v<IdxT>, IdxT, int64_t>;

/** Offset (elements) of the element with row-major index `elem` in an array of `ndim`
 * dimensions with `shape` and `strides` (in elements). MLX's signature; the offset is
 * signed (offset_t), so that `x[elem_to_loc(i, ...)]` with a `uint i` is right for arrays
 * with negative strides too. */
template <typename IdxT = int64_t,
          typename = metal::detail::enable_if_t<metal::detail::is_integral_v<IdxT>>>
KILN_HD offset_t<IdxT> elem_to_loc(IdxT elem, const int32_t* shape, const int64_t* strides,
                                   int ndim) {
  int64_t loc = 0, e = static_cast<int64_t>(elem);
  for (int i = ndim - 1; i >= 0 && e > 0; --i) {
    loc += (e % shape[i]) * strides[i];
    e /= shape[i];
  }
  return static_cast<offset_t<IdxT>>(loc);
}

/** The same with NDIM fixed at compile time. */
template <int NDIM, typename IdxT = int64_t>
KILN_HD offset_t<IdxT> elem_to_loc_nd(IdxT elem, const int32_t* shape, const int64_t* strides) {
  int64_t loc = 0, e = static_cast<int64_t>(elem);
  for (int i = NDIM - 1; i >= 0; --i) {
    loc += (e % shape[i]) * strides[i];
    e /= shape[i];
  }
  return static_cast<offset_t<IdxT>>(loc);
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
