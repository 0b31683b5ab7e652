// MLX's kernel utilities that both flavours share and that need neither vectors nor half
// types: elem_to_loc for scalar indices, elem_to_loc_nd, elem_to_loc_1, ceildiv and the
// looper behind both flavours' LoopedElemToLoc, with
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

/**
 * The offset of consecutive elements of a strided array, updated by `next()` as the index
 * moves on (MLX's LoopedElemToLoc, whose flavours order the parameters differently and
 * count the index as int (CUDA) or uint (Metal)): DIM levels, the innermost an exact stride
 * walk.
 */
template <int DIM, bool General, typename OffsetT, typename IndexT>
struct LoopedElemToLocImpl {
  int dim;
  LoopedElemToLocImpl<DIM - 1, General, OffsetT, IndexT> inner_looper;
  OffsetT offset{0};
  int index{0};

  KILN_HD LoopedElemToLocImpl(int d) : dim(d), inner_looper(d - 1) {}

  KILN_HD void next(const int* shape, const int64_t* strides) {
    if (dim == 0) return;
    index++;
    offset += OffsetT(strides[dim - 1]);
    if (index >= shape[dim - 1]) {
      index = 0;
      inner_looper.next(shape, strides);
      offset = inner_looper.offset;
    }
  }

  KILN_HD void next(int n, const int* shape, const int64_t* strides) {
    if (dim == 0) return;
    index += n;
    offset += n * OffsetT(strides[dim - 1]);
    if (index >= shape[dim - 1]) {
      int extra = index - shape[dim - 1];
      if (extra >= shape[dim - 1]) {
        inner_looper.next(1 + extra / shape[dim - 1], shape, strides);
        extra = extra % shape[dim - 1];
      } else {
        inner_looper.next(shape, strides);
      }
      index = 0;
      offset = inner_looper.offset;
      if (extra > 0) next(extra, shape, strides);
    }
  }

  KILN_HD OffsetT location() { return offset; }
};

template <typename OffsetT, typename IndexT>
struct LoopedElemToLocImpl<1, true, OffsetT, IndexT> {
  int dim;
  OffsetT offset{0};
  IndexT index{0};

  KILN_HD LoopedElemToLocImpl(int d) : dim(d) {}

  KILN_HD void next(const int* shape, const int64_t* strides) {
    index++;
    if (dim > 1)
      offset = elem_to_loc<OffsetT>(index, shape, strides, dim);
    else
      offset += OffsetT(strides[0]);
  }

  KILN_HD void next(int n, const int* shape, const int64_t* strides) {
    index += n;
    if (dim > 1)
      offset = elem_to_loc<OffsetT>(index, shape, strides, dim);
    else
      offset = index * OffsetT(strides[0]);
  }

  KILN_HD OffsetT location() { return offset; }
};

template <typename OffsetT, typename IndexT>
struct LoopedElemToLocImpl<1, false, OffsetT, IndexT> {
  OffsetT offset{0};

  KILN_HD LoopedElemToLocImpl(int) {}
  KILN_HD void next(const int*, const int64_t* strides) { offset += OffsetT(strides[0]); }
  KILN_HD void next(int n, const int*, const int64_t* strides) {
    offset += n * OffsetT(strides[0]);
  }
  KILN_HD OffsetT location() { return offset; }
};

}  // namespace kiln_utils
