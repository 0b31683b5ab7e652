// Sort and ArgSort along an axis: stable, ascending, NaN last (NumPy), as the CPU.
//
// Elements travel as (key, position) pairs ordered by key, then by position: a strict total
// order, so any correct sorting network or merge is stable. Keys keep their dtype (half types
// compare as float, bool as a byte), so sorted values keep their exact bits.
//
// sort_block: a line of up to kSortTile elements sorted in shared memory by a bitonic network
//   (padded to a power of two with sentinels that order last), read from the input's strides
//   and written to the output directly.
// Longer lines: sort_tiles sorts tiles of kSortTile into scratch, merge_pass merges pairs of
//   sorted runs (each thread finds its start by a merge-path binary search, then merges
//   kMergeItems outputs) until one run remains, and sort_write moves the result out.
#pragma once

#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln {

/** Elements a block sorts in shared memory (a power of two). */
constexpr int kSortTile = 2048;
/** Outputs each thread of a merge pass produces. */
constexpr int kMergeItems = 8;
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

/** Sorts each tile of kSortTile elements (block b: tile b % tiles of line b / tiles) into the
 * scratch pairs (line-major, n per line). */
template <typename T>
__global__ void sort_tiles(const T* __restrict__ in, T* __restrict__ keys_out,
                           unsigned int* __restrict__ pos_out, long long tiles,
                           const __grid_constant__ SortArgs a) {
  T* keys;
  unsigned int* pos;
  sort_shared<T>(kSortTile, keys, pos);
  const long long line = blockIdx.x / tiles;
  const long long k0 = (blockIdx.x - line * tiles) * kSortTile;
  const long long count = a.n - k0 < kSortTile ? a.n - k0 : kSortTile;
  const T* src = in + elem_to_loc(line, a.rest_shape, a.rest_strides, a.rest_ndim);
  for (int k = threadIdx.x; k < kSortTile; k += blockDim.x) {
    if (k < count) {
      keys[k] = src[(k0 + k) * a.stride];
      pos[k] = static_cast<unsigned int>(k0 + k);
    } else {
      keys[k] = src[0];
      pos[k] = kSortSentinel;
    }
  }
  bitonic_sort(keys, pos, kSortTile);
  const long long dst = line * a.n + k0;
  for (int k = threadIdx.x; k < count; k += blockDim.x) {
    keys_out[dst + k] = keys[k];
    pos_out[dst + k] = pos[k];
  }
}

/**
 * Merges pairs of sorted runs of `width` elements (the last ones shorter) in every line of
 * `n` elements, from (keys, pos) into (keys_out, pos_out). Thread t handles kMergeItems
 * outputs of one pair; `chunks` threads serve each pair.
 */
template <typename T>
__global__ void merge_pass(const T* __restrict__ keys, const unsigned int* __restrict__ pos,
                           T* __restrict__ keys_out, unsigned int* __restrict__ pos_out,
                           long long lines, long long n, long long width, long long pairs,
                           long long chunks) {
  const long long t = global_thread_x<long long>();
  if (t >= lines * pairs * chunks) return;
  const long long chunk = t % chunks;
  const long long pair = (t / chunks) % pairs;
  const long long line = t / (chunks * pairs);
  const long long start = pair * 2 * width;
  const long long la = n - start < width ? n - start : width;
  const long long lb = n - start - la < width ? n - start - la : width;
  const long long d0 = chunk * kMergeItems;
  if (d0 >= la + lb) return;
  const long long base = line * n + start;
  const T* ka = keys + base;
  const unsigned int* pa = pos + base;
  const T* kb = ka + la;
  const unsigned int* pb = pa + la;
  // Merge path: the number i of A's elements among the first d0 outputs.
  long long lo = d0 - lb > 0 ? d0 - lb : 0;
  long long hi = d0 < la ? d0 : la;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    const long long j = d0 - mid - 1;
    if (pair_less(kb[j], pb[j], ka[mid], pa[mid]))
      hi = mid;
    else
      lo = mid + 1;
  }
  long long i = lo, j = d0 - lo;
  const long long d1 = d0 + kMergeItems < la + lb ? d0 + kMergeItems : la + lb;
  for (long long d = d0; d < d1; ++d) {
    const bool take_a = j >= lb || (i < la && pair_less(ka[i], pa[i], kb[j], pb[j]));
    if (take_a) {
      keys_out[base + d] = ka[i];
      pos_out[base + d] = pa[i];
      ++i;
    } else {
      keys_out[base + d] = kb[j];
      pos_out[base + d] = pb[j];
      ++j;
    }
  }
}

/** Moves sorted lines from scratch to the row-contiguous outputs (either may be null). */
template <typename T>
__global__ void sort_write(const T* __restrict__ keys, const unsigned int* __restrict__ pos,
                           T* __restrict__ out_values, unsigned int* __restrict__ out_indices,
                           const __grid_constant__ SortArgs a) {
  const long long t = global_thread_x<long long>();
  if (t >= a.lines * a.n) return;
  const long long line = t / a.n, k = t - line * a.n;
  const long long dst = sort_out_offset(a, line) + k * a.inner;
  if (out_values) out_values[dst] = keys[t];
  if (out_indices) out_indices[dst] = pos[t];
}

}  // namespace kiln
