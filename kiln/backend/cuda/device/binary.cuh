// Binary elementwise kernels: out[i] = apply<Out>(Op(), a[i], b[i]), inputs already
// broadcast to the output's shape.
//
// binary_v: contiguous operands in one layout, or a single element (`scalar_a`, `scalar_b`)
//   that every output reads; N elements per thread with 16-byte loads and stores when `vec`
//   (every contiguous operand aligned), else element by element (see unary_v). The flags are
//   the same for the whole grid, so one kernel serves every layout at no cost in the loop.
// binary_g: any strides (zero on broadcast axes), row-contiguous output; W consecutive
//   elements of the last dimension per thread.
#pragma once

#include "kiln/backend/cuda/device/binary_ops.cuh"
#include "kiln/backend/cuda/device/cast.cuh"
#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln {

/** Reads N elements of a contiguous operand from `i`, or N copies of a scalar's one. */
template <int N, typename T>
__device__ inline Vec<T, N> load_operand(const T* p, long long i, bool scalar, bool vec) {
  Vec<T, N> x;
  if (scalar) {
    const T v = p[0];
#pragma unroll
    for (int k = 0; k < N; ++k) x.v[k] = v;
  } else if (vec) {
    x = load_vec<N>(p + i);
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) x.v[k] = p[i + k];
  }
  return x;
}

template <typename Op, typename In, typename Out, int N>
__global__ void binary_v(const In* __restrict__ a, const In* __restrict__ b, Out* __restrict__ out,
                         long long size, bool vec, bool scalar_a, bool scalar_b) {
  const long long i = global_thread_x<long long>() * N;
  if (i + N <= size) {
    const Vec<In, N> x = load_operand<N>(a, i, scalar_a, vec);
    const Vec<In, N> y = load_operand<N>(b, i, scalar_b, vec);
    Vec<Out, N> z;
#pragma unroll
    for (int k = 0; k < N; ++k) z.v[k] = apply<Out>(Op(), x.v[k], y.v[k]);
    if (vec) {
      store_vec<N>(out + i, z);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) out[i + k] = z.v[k];
    }
  } else {
    for (long long j = i; j < size; ++j) {
      out[j] = apply<Out>(Op(), a[scalar_a ? 0 : j], b[scalar_b ? 0 : j]);
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
    if (k < n) dst[k] = apply<Out>(Op(), pa[k * sa], pb[k * sb]);
  }
}

}  // namespace kiln
