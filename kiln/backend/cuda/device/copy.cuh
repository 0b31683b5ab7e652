// Copies that only move bits (T is the unsigned integer of the element's size), besides the
// unary kernels with Identity (unary.cuh) that copy contiguous and strided sources into
// contiguous destinations:
//
// fill: every element of a contiguous destination from one source element (a broadcast
//   scalar made dense); N elements per thread with 16-byte stores when `vec`.
// copy_gg: any source strides into any destination strides (writing into part of a buffer:
//   slice_update, concatenate); W elements of the last dimension per thread.
#pragma once

#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln {

template <typename T, int N>
__global__ void fill(const T* __restrict__ value, T* __restrict__ out, long long size, bool vec) {
  const long long i = global_thread_x<long long>() * N;
  const T v = value[0];
  if (i + N <= size) {
    if (vec) {
      Vec<T, N> z;
#pragma unroll
      for (int k = 0; k < N; ++k) z.v[k] = v;
      store_vec<N>(out + i, z);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) out[i + k] = v;
    }
  } else {
    for (long long j = i; j < size; ++j) out[j] = v;
  }
}

/** As unary_g, with the destination's strides too. Strides may be negative. */
template <typename T, typename IdxT, int NDIM, int W>
__global__ void copy_gg(const T* __restrict__ src, T* __restrict__ dst,
                        const __grid_constant__ Dims<int> shape,
                        const __grid_constant__ Dims<long long> src_strides,
                        const __grid_constant__ Dims<long long> dst_strides, int ndim, IdxT last,
                        IdxT chunks, IdxT threads) {
  const IdxT t = global_thread_x<IdxT>();
  if (t >= threads) return;
  const IdxT row = t / chunks;
  const IdxT j0 = (t - row * chunks) * W;
  IdxT loc[2] = {0, 0};
  add_outer_offsets<NDIM>(row, shape, ndim, loc, src_strides, dst_strides);
  const int nd = NDIM > 0 ? NDIM : ndim;
  const IdxT ss = static_cast<IdxT>(src_strides.v[nd - 1]);
  const IdxT ds = static_cast<IdxT>(dst_strides.v[nd - 1]);
  const T* s = src + loc[0] + j0 * ss;
  T* d = dst + loc[1] + j0 * ds;
  const IdxT n = last - j0 < W ? last - j0 : W;
#pragma unroll
  for (int k = 0; k < W; ++k) {
    if (k < n) d[k * ds] = s[k * ss];
  }
}

}  // namespace kiln
