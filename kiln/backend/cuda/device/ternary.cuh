// Ternary elementwise kernels: out = cond ? x : y (Select), inputs already broadcast to the
// output's shape. Selection only moves bits, so T is the unsigned integer of the element's
// size and the condition is read as bool bytes.
//
// select_v: the three operands contiguous in one layout; N elements per thread with 16-byte
//   loads of x and y when `vec` (see unary_v).
// select_g: any strides, row-contiguous output; W elements of the last dimension per thread.
#pragma once

#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln {

template <typename T, int N>
__global__ void select_v(const bool* __restrict__ cond, const T* __restrict__ x,
                         const T* __restrict__ y, T* __restrict__ out, long long size, bool vec) {
  const long long i = global_thread_x<long long>() * N;
  if (i + N <= size) {
    Vec<bool, N> c;
    Vec<T, N> a, b, z;
    if (vec) {
      c = load_vec<N>(cond + i);
      a = load_vec<N>(x + i);
      b = load_vec<N>(y + i);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) {
        c.v[k] = cond[i + k];
        a.v[k] = x[i + k];
        b.v[k] = y[i + k];
      }
    }
#pragma unroll
    for (int k = 0; k < N; ++k) z.v[k] = c.v[k] ? a.v[k] : b.v[k];
    if (vec) {
      store_vec<N>(out + i, z);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) out[i + k] = z.v[k];
    }
  } else {
    for (long long j = i; j < size; ++j) out[j] = cond[j] ? x[j] : y[j];
  }
}

/** As unary_g, with strides for the three inputs. */
template <typename T, typename IdxT, int NDIM, int W>
__global__ void select_g(const bool* __restrict__ cond, const T* __restrict__ x,
                         const T* __restrict__ y, T* __restrict__ out,
                         const __grid_constant__ Dims<int> shape,
                         const __grid_constant__ Dims<long long> c_strides,
                         const __grid_constant__ Dims<long long> x_strides,
                         const __grid_constant__ Dims<long long> y_strides, int ndim, IdxT last,
                         IdxT chunks, IdxT threads) {
  const IdxT t = global_thread_x<IdxT>();
  if (t >= threads) return;
  const IdxT row = t / chunks;
  const IdxT j0 = (t - row * chunks) * W;
  IdxT loc[3] = {0, 0, 0};
  add_outer_offsets<NDIM>(row, shape, ndim, loc, c_strides, x_strides, y_strides);
  const int nd = NDIM > 0 ? NDIM : ndim;
  const IdxT sc = static_cast<IdxT>(c_strides.v[nd - 1]);
  const IdxT sx = static_cast<IdxT>(x_strides.v[nd - 1]);
  const IdxT sy = static_cast<IdxT>(y_strides.v[nd - 1]);
  const bool* pc = cond + loc[0] + j0 * sc;
  const T* px = x + loc[1] + j0 * sx;
  const T* py = y + loc[2] + j0 * sy;
  T* dst = out + row * last + j0;
  const IdxT n = last - j0 < W ? last - j0 : W;
#pragma unroll
  for (int k = 0; k < W; ++k) {
    if (k < n) dst[k] = pc[k * sc] ? px[k * sx] : py[k * sy];
  }
}

}  // namespace kiln
