// Vector loads and strided indexing shared by the elementwise kernels.
#pragma once

#include "kiln/backend/cuda/device/types.cuh"

namespace kiln {

/** Dimensions a strided kernel takes by value; the host collapses contiguous dimensions
 * first (mirrored by kMaxDims in kiln/backend/cuda/elementwise.h). */
constexpr int kMaxDims = 16;

/** Per-dimension values passed by value as a kernel parameter. */
template <typename T>
struct Dims {
  T v[kMaxDims];
};

/** N consecutive elements, aligned so that one load or store moves them all (16 bytes for
 * the widths the host picks). */
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

template <int N, typename T>
__device__ inline Vec<T, N> load_vec(const T* p) {
  return *reinterpret_cast<const Vec<T, N>*>(p);
}

template <int N, typename T>
__device__ inline void store_vec(T* p, const Vec<T, N>& v) {
  *reinterpret_cast<Vec<T, N>*>(p) = v;
}

/**
 * Adds to `loc[k]` the offset (in elements) of row `row` of the outer dimensions
 * 0 .. ndim - 2 for the operand with strides `strides...[k]`. NDIM > 0 fixes ndim at compile
 * time and unrolls; NDIM == 0 loops over `ndim`. Kernels take shapes and strides as
 * __grid_constant__ parameters, so indexing them at run time reads parameter memory
 * directly instead of copying them to local memory.
 */
template <int NDIM, typename IdxT, typename... Strides>
__device__ inline void add_outer_offsets(IdxT row, const Dims<int>& shape, int ndim, IdxT* loc,
                                         const Strides&... strides) {
  auto step = [&](int i) {
    IdxT dim = static_cast<IdxT>(shape.v[i]);
    IdxT q = row / dim;
    IdxT r = row - q * dim;
    int k = 0;
    ((loc[k++] += r * static_cast<IdxT>(strides.v[i])), ...);
    row = q;
  };
  if constexpr (NDIM > 0) {
#pragma unroll
    for (int i = NDIM - 2; i >= 0; --i) step(i);
  } else {
    for (int i = ndim - 2; i >= 0; --i) step(i);
  }
}

/** The global thread index in x, widened before the multiply. */
template <typename IdxT>
__device__ inline IdxT global_thread_x() {
  return static_cast<IdxT>(blockIdx.x) * static_cast<IdxT>(blockDim.x) +
         static_cast<IdxT>(threadIdx.x);
}

/** Offset (in elements) of row-major element `idx` of a view with `ndim` dimensions of
 * `shape` and `strides` (the GPU twin of kiln::elem_to_loc). */
template <typename IdxT>
__device__ inline IdxT elem_to_loc(IdxT idx, const Dims<int>& shape, const Dims<long long>& strides,
                                   int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0; --i) {
    const IdxT dim = static_cast<IdxT>(shape.v[i]);
    const IdxT q = idx / dim;
    loc += (idx - q * dim) * static_cast<IdxT>(strides.v[i]);
    idx = q;
  }
  return loc;
}

/** The offsets of row-major element `idx` for two stride sets over one shape. */
template <typename IdxT>
__device__ inline void elem_to_loc2(IdxT idx, const Dims<int>& shape, const Dims<long long>& a,
                                    const Dims<long long>& b, int ndim, IdxT& la, IdxT& lb) {
  la = 0;
  lb = 0;
  for (int i = ndim - 1; i >= 0; --i) {
    const IdxT dim = static_cast<IdxT>(shape.v[i]);
    const IdxT q = idx / dim;
    const IdxT r = idx - q * dim;
    la += r * static_cast<IdxT>(a.v[i]);
    lb += r * static_cast<IdxT>(b.v[i]);
    idx = q;
  }
}

}  // namespace kiln
