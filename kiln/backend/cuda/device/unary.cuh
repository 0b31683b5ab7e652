// Unary elementwise kernels: out[i] = apply<Out>(Op(), in[i]).
//
// unary_v: contiguous input and output (same layout), N elements per thread moved with one
//   16-byte load and store when `vec` (both pointers aligned to the vector), else element by
//   element; the last thread finishes a ragged tail. `vec` is the same for the whole grid, so
//   its branch costs nothing and one kernel serves aligned and offset views.
// unary_g: strided input (any strides, including zero for broadcasting), row-contiguous
//   output; each thread handles W consecutive elements of the last dimension, so the
//   division-heavy offset computation runs once per W elements.
#pragma once

#include "kiln/backend/cuda/device/cast.cuh"
#include "kiln/backend/cuda/device/indexing.cuh"
#include "kiln/backend/cuda/device/unary_ops.cuh"

namespace kiln {

template <typename Op, typename In, typename Out, int N>
__global__ void unary_v(const In* __restrict__ in, Out* __restrict__ out, long long size,
                        bool vec) {
  const long long i = global_thread_x<long long>() * N;
  if (i + N <= size) {
    Vec<In, N> x;
    if (vec) {
      x = load_vec<N>(in + i);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) x.v[k] = in[i + k];
    }
    Vec<Out, N> y;
#pragma unroll
    for (int k = 0; k < N; ++k) y.v[k] = apply<Out>(Op(), x.v[k]);
    if (vec) {
      store_vec<N>(out + i, y);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) out[i + k] = y.v[k];
    }
  } else {
    for (long long j = i; j < size; ++j) out[j] = apply<Out>(Op(), in[j]);
  }
}

/** `last` is the size of the last dimension, `chunks` = ceil(last / W), and `threads` =
 * rows * chunks. Strides are in elements of In. */
template <typename Op, typename In, typename Out, typename IdxT, int NDIM, int W>
__global__ void unary_g(const In* __restrict__ in, Out* __restrict__ out,
                        const __grid_constant__ Dims<int> shape,
                        const __grid_constant__ Dims<long long> in_strides, int ndim, IdxT last,
                        IdxT chunks, IdxT threads) {
  const IdxT t = global_thread_x<IdxT>();
  if (t >= threads) return;
  const IdxT row = t / chunks;
  const IdxT j0 = (t - row * chunks) * W;
  IdxT loc[1] = {0};
  add_outer_offsets<NDIM>(row, shape, ndim, loc, in_strides);
  const int nd = NDIM > 0 ? NDIM : ndim;
  const IdxT step = static_cast<IdxT>(in_strides.v[nd - 1]);
  const In* src = in + loc[0] + j0 * step;
  Out* dst = out + row * last + j0;
  const IdxT n = last - j0 < W ? last - j0 : W;
#pragma unroll
  for (int k = 0; k < W; ++k) {
    if (k < n) dst[k] = apply<Out>(Op(), src[k * step]);
  }
}

}  // namespace kiln
