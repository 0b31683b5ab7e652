// Binary elementwise kernels: out[i] = cast<Out>(Op()(a[i], b[i])), inputs already
// broadcast to the output's shape.
//
// binary_v: contiguous operands in one layout, or a single element (ScalarA / ScalarB) that
//   every output reads; N elements per thread with 16-byte loads and stores.
// binary_g: any strides (zero on broadcast axes), row-contiguous output; W consecutive
//   elements of the last dimension per thread.
#pragma once

#include "kiln/backend/cuda/device/binary_ops.cuh"
#include "kiln/backend/cuda/device/cast.cuh"
#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln {

template <typename Op, typename In, typename Out, bool ScalarA, bool ScalarB, int N>
__global__ void binary_v(const In* __restrict__ a, const In* __restrict__ b, Out* __restrict__ out,
                         long long size) {
  const long long i = global_thread_x<long long>() * N;
  if (i + N <= size) {
    Vec<In, N> x, y;
    if constexpr (ScalarA) {
#pragma unroll
      for (int k = 0; k < N; ++k) x.v[k] = a[0];
    } else {
      x = load_vec<N>(a + i);
    }
    if constexpr (ScalarB) {
#pragma unroll
      for (int k = 0; k < N; ++k) y.v[k] = b[0];
    } else {
      y = load_vec<N>(b + i);
    }
    Vec<Out, N> z;
#pragma unroll
    for (int k = 0; k < N; ++k) z.v[k] = cast<Out>(Op()(x.v[k], y.v[k]));
    store_vec<N>(out + i, z);
  } else {
    for (long long j = i; j < size; ++j) {
      out[j] = cast<Out>(Op()(a[ScalarA ? 0 : j], b[ScalarB ? 0 : j]));
    }
  }
}

/** As unary_g, with strides for both inputs. */
template <typename Op, typename In, typename Out, typename IdxT, int NDIM, int W>
__global__ void binary_g(const In* __restrict__ a, const In* __restrict__ b, Out* __restrict__ out,
                         const __grid_constant__ Dims<int> shape,
                         const __grid_constant__ Dims<long long> a_strides,
                         const __grid_constant__ Dims<long long> b_strides, int ndim, IdxT last,
                         IdxT chunks, IdxT threads) {
  const IdxT t = global_thread_x<IdxT>();
  if (t >= threads) return;
  const IdxT row = t / chunks;
  const IdxT j0 = (t - row * chunks) * W;
  IdxT loc[2] = {0, 0};
  add_outer_offsets<NDIM>(row, shape, ndim, loc, a_strides, b_strides);
  const int nd = NDIM > 0 ? NDIM : ndim;
  const IdxT sa = static_cast<IdxT>(a_strides.v[nd - 1]);
  const IdxT sb = static_cast<IdxT>(b_strides.v[nd - 1]);
  const In* pa = a + loc[0] + j0 * sa;
  const In* pb = b + loc[1] + j0 * sb;
  Out* dst = out + row * last + j0;
  const IdxT n = last - j0 < W ? last - j0 : W;
#pragma unroll
  for (int k = 0; k < W; ++k) {
    if (k < n) dst[k] = cast<Out>(Op()(pa[k * sa], pb[k * sb]));
  }
}

}  // namespace kiln
