// Sort and ArgSort along an axis: stable, ascending, NaN last (NumPy), as the CPU.
//
// Elements travel as (key, position) pairs ordered by key, then by position: a strict total
// order, so any correct sorting network or merge is stable. Keys keep their dtype (half types
// compare as float, bool as a byte), so sorted values keep their exact bits.
//
// sort_block: a line of up to kSortTile elements sorted in shared memory by a bitonic network
//   (padded to a power of two with sentinels that order last), read from the input's strides
//   and written to the output directly. Longer lines: radix_sort.cuh.
#pragma once

#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln {

/** Elements a block sorts in shared memory (a power of two). */
constexpr int kSortTile = 2048;
/** Marks padding: orders after every element. */
constexpr unsigned int kSortSentinel = 0xffffffffu;

/** a < b with NaN after every number; half types compare as float. */
template <typename T>
__device__ inline bool key_less(T a, T b) {
  if constexpr (is_half_v<T>) {
    const float x = float(a), y = float(b);
    return !(x != x) && (y != y || x < y);
  } else if constexpr (is_same_v<T, float> || is_same_v<T, double>) {
    return !(a != a) && (b != b || a < b);
  } else {
    return a < b;
  }
}

/** The total order of (key, position) pairs. */
template <typename T>
__device__ inline bool pair_less(T ka, unsigned int ia, T kb, unsigned int ib) {
  if (ia == kSortSentinel) return false;
  if (ib == kSortSentinel) return true;
  if (key_less(ka, kb)) return true;
  if (key_less(kb, ka)) return false;
  return ia < ib;
}

/** Lines along the sorted axis (mirrored in backend/cuda/sort.cpp). Line l's element k is at
 * elem_to_loc(l, rest_shape, rest_strides) + k * stride in the input, and at (l / inner) * n *
 * inner + l % inner + k * inner in the row-contiguous output. */
struct SortArgs {
  Dims<int> rest_shape;
  Dims<long long> rest_strides;
  int rest_ndim;
  long long lines;
  long long n;
  long long stride;
  long long inner;
};

__device__ inline long long sort_out_offset(const SortArgs& a, long long line) {
  const long long o = line / a.inner;
  return o * a.n * a.inner + (line - o * a.inner);
}

/** Bitonic sort of `size` (a power of two) pairs in shared memory by the whole block. */
template <typename T>
__device__ inline void bitonic_sort(T* keys, unsigned int* pos, int size) {
  for (int k = 2; k <= size; k *= 2) {
    for (int j = k / 2; j > 0; j /= 2) {
      __syncthreads();
      for (int t = threadIdx.x; t < size / 2; t += blockDim.x) {
        const int i = 2 * t - (t & (j - 1));
        const int p = i + j;
        const bool ascending = (i & k) == 0;
        if (pair_less(keys[p], pos[p], keys[i], pos[i]) == ascending) {
          const T kt = keys[i];
          keys[i] = keys[p];
          keys[p] = kt;
          const unsigned int pt = pos[i];
          pos[i] = pos[p];
          pos[p] = pt;
        }
      }
    }
  }
  __syncthreads();
}

/** Shared memory of a block sorting `size` pairs of T: keys, then positions. */
template <typename T>
__device__ inline void sort_shared(int size, T*& keys, unsigned int*& pos) {
  extern __shared__ __align__(16) unsigned char sort_smem[];
  keys = reinterpret_cast<T*>(sort_smem);
  pos = reinterpret_cast<unsigned int*>(sort_smem + ((size * sizeof(T) + 15) / 16) * 16);
}

/** One line per block (n <= size <= kSortTile, size a power of two). Writes the sorted values
 * to `out_values` and/or their positions to `out_indices` (either may be null). */
template <typename T>
__global__ void sort_block(const T* __restrict__ in, T* __restrict__ out_values,
                           unsigned int* __restrict__ out_indices, int size,
                           const __grid_constant__ SortArgs a) {
  T* keys;
  unsigned int* pos;
  sort_shared<T>(size, keys, pos);
  const long long line = blockIdx.x;
  const T* src = in + elem_to_loc(line, a.rest_shape, a.rest_strides, a.rest_ndim);
  for (int k = threadIdx.x; k < size; k += blockDim.x) {
    if (k < a.n) {
      keys[k] = src[k * a.stride];
      pos[k] = k;
    } else {
      keys[k] = src[0];  // any value: the sentinel position orders it last
      pos[k] = kSortSentinel;
    }
  }
  bitonic_sort(keys, pos, size);
  const long long dst = sort_out_offset(a, line);
  for (int k = threadIdx.x; k < a.n; k += blockDim.x) {
    if (out_values) out_values[dst + k * a.inner] = keys[k];
    if (out_indices) out_indices[dst + k * a.inner] = pos[k];
  }
}

}  // namespace kiln
