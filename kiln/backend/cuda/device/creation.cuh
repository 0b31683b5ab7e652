// Creation kernels: arange, linspace and eye compute each element from its index; triangular
// (tril/triu) copies a triangle of every matrix and zeroes the rest. Outputs are
// row-contiguous. Values computed in double use __dmul_rn/__dadd_rn, which the compiler never
// contracts into an FMA, so they round exactly as the CPU backend's start + i * step.
#pragma once

#include "kiln/backend/cuda/device/cast.cuh"
#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln {

/** out[i] = start + i * step for floating and complex T; first + i * delta modulo 2^64 for
 * integral T (the integers NumPy's arange produces, see Arange). */
template <typename T>
__global__ void arange(T* __restrict__ out, long long size, double start, double step,
                       unsigned long long first, unsigned long long delta) {
  const long long i = global_thread_x<long long>();
  if (i >= size) return;
  if constexpr (is_integral_v<T>)
    out[i] = static_cast<T>(first + static_cast<unsigned long long>(i) * delta);
  else
    out[i] = cast<T>(__dadd_rn(start, __dmul_rn(static_cast<double>(i), step)));
}

/** out[i] = start + i * step, and exactly `stop` for the last of several elements. */
template <typename T>
__global__ void linspace(T* __restrict__ out, long long size, double start, double step,
                         double stop) {
  const long long i = global_thread_x<long long>();
  if (i >= size) return;
  const double v =
      size > 1 && i == size - 1 ? stop : __dadd_rn(start, __dmul_rn(static_cast<double>(i), step));
  out[i] = cast<T>(v);
}

/** out[r, c] = (c - r == k) for an output of `cols` columns. */
template <typename T, typename IdxT>
__global__ void eye(T* __restrict__ out, IdxT size, IdxT cols, int k) {
  const IdxT i = global_thread_x<IdxT>();
  if (i >= size) return;
  const IdxT r = i / cols;
  const IdxT c = i - r * cols;
  out[i] = cast<T>(c - r == k ? 1 : 0);
}

/**
 * out = in with the elements outside a triangle of each matrix zeroed: lower keeps
 * c - r <= k, upper keeps c - r >= k. `shape`/`strides` are in's, with the dimensions before
 * the last merged where possible; `rows` is the matrix height. Each thread writes W
 * consecutive elements of an output row (`chunks` = ceil(cols / W) threads per row). T is
 * the unsigned integer of the element's size: every dtype's zero is all zero bits.
 */
template <typename T, typename IdxT, int W>
__global__ void triangular(const T* __restrict__ in, T* __restrict__ out,
                           const __grid_constant__ Dims<int> shape,
                           const __grid_constant__ Dims<long long> strides, int ndim, IdxT rows,
                           IdxT cols, IdxT chunks, IdxT threads, int k, bool upper) {
  const IdxT t = global_thread_x<IdxT>();
  if (t >= threads) return;
  const IdxT row = t / chunks;
  const IdxT j0 = (t - row * chunks) * W;
  const IdxT i = row % rows;
  IdxT loc[1] = {0};
  add_outer_offsets<0>(row, shape, ndim, loc, strides);
  const IdxT step = static_cast<IdxT>(strides.v[ndim - 1]);
  const T* src = in + loc[0];
  T* dst = out + row * cols;
#pragma unroll
  for (int w = 0; w < W; ++w) {
    const IdxT j = j0 + w;
    if (j < cols) {
      const bool keep = upper ? j - i >= k : j - i <= k;
      dst[j] = keep ? src[j * step] : T(0);
    }
  }
}

}  // namespace kiln
