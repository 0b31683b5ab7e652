// searchsorted and unique (host side: backend/cuda/sort_ops.cpp, plan:
// backend/cuda/sort_plan.h).
//
// searchsorted: one thread per value, a binary search over the sorted sequence's keys
//   (sort_keys.cuh: NaN last, -0.0 equal to +0.0), so that 'left' counts the elements that
//   order before the value and 'right' those that do not order after it.
// unique: rows sorted by radix_sort.cuh (canonical keys, positions as payload); a group of
//   equal keys starts where a key differs from the one before it (every NaN starts its own
//   group, as NaN != NaN); unique_flags counts group starts per chunk, scan_lists turns the
//   counts into each chunk's first group number, and unique_write numbers the groups with
//   block scans and scatters values, first indices, inverse indices and group starts;
//   unique_finish derives the counts and pads the outputs past the last group.
#pragma once

#include "kiln/backend/cuda/device/sort_keys.cuh"

namespace kiln {

constexpr int kSearchBlock = 256;
constexpr int kUniqueBlock = 256;

/** out[i] = the number of elements of seq (n of them, `seq_stride` apart, sorted) that order
 * before values[i] (RIGHT: that do not order after it), for i < count. */
template <typename U, int KIND, bool RIGHT>
__global__ void __launch_bounds__(kSearchBlock)
    searchsorted(const U* __restrict__ seq, long long seq_stride, long long n,
                 const U* __restrict__ values, long long count, unsigned int* __restrict__ out) {
  const long long i = static_cast<long long>(blockIdx.x) * kSearchBlock + threadIdx.x;
  if (i >= count) return;
  const U v = radix::to_key<U, KIND, true>(values[i]);
  long long lo = 0, hi = n;
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2;
    const U k = radix::to_key<U, KIND, true>(seq[mid * seq_stride]);
    if (RIGHT ? !(v < k) : k < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  out[i] = static_cast<unsigned int>(lo);
}

namespace radix {

/** Whether sorted position i of a row of keys starts a group of equal values. */
template <typename U, int KIND>
__device__ __forceinline__ bool group_start(const U* keys, long long i) {
  return i == 0 || keys[i] != keys[i - 1] || is_nan_key<U, KIND>(keys[i]);
}

}  // namespace radix

/** Block b: chunk b % chunks of row b / chunks of the sorted keys (row r at r * n); writes
 * the number of group starts in it to counts[b]. */
template <typename U, int KIND>
__global__ void __launch_bounds__(kUniqueBlock)
    unique_flags(const U* __restrict__ keys, long long n, long long chunk, long long chunks,
                 unsigned int* __restrict__ counts) {
  __shared__ unsigned long long scan[kUniqueBlock / 32 + 1];
  const long long row = blockIdx.x / chunks, c = blockIdx.x - row * chunks;
  const long long begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;
  const U* k = keys + row * n;
  unsigned long long starts = 0;
  for (long long i = begin + threadIdx.x; i < end; i += kUniqueBlock) {
    starts += radix::group_start<U, KIND>(k, i);
  }
  unsigned long long total;
  radix::block_exclusive_sum<kUniqueBlock>(starts, scan, total);
  if (threadIdx.x == 0) counts[blockIdx.x] = static_cast<unsigned int>(total);
}

/**
 * Numbers the groups of the chunk (its first group number: first_group[b], unique_flags's
 * counts scanned per row) and writes, for group g of row r: values[r * size + g] (the bits of
 * the group's first element, in[r * in_row_stride + position]) and index[r * size + g] (its
 * position) when g < size, group_starts[r * (size + 1) + g] (its sorted position) when
 * g <= size; and for every element, inverse[r * n + position] = min(g, size - 1) (0 when
 * size is 0).
 */
template <typename U, int KIND>
__global__ void __launch_bounds__(kUniqueBlock)
    unique_write(const U* __restrict__ in, long long in_row_stride, const U* __restrict__ keys,
                 const unsigned int* __restrict__ pos, long long n, long long chunk,
                 long long chunks, const unsigned int* __restrict__ first_group, long long size,
                 U* __restrict__ values, unsigned int* __restrict__ index,
                 unsigned int* __restrict__ inverse, unsigned int* __restrict__ group_starts) {
  __shared__ unsigned long long scan[kUniqueBlock / 32 + 1];
  const long long row = blockIdx.x / chunks, c = blockIdx.x - row * chunks;
  const long long begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;
  const U* k = keys + row * n;
  const unsigned int* p = pos + row * n;
  long long run = first_group[blockIdx.x];
  for (long long base = begin; base < end; base += kUniqueBlock) {
    const long long i = base + threadIdx.x;
    const bool start = i < end && radix::group_start<U, KIND>(k, i);
    unsigned long long total;
    const unsigned long long before = radix::block_exclusive_sum<kUniqueBlock>(
        static_cast<unsigned long long>(start), scan, total);
    if (i < end) {
      const long long g = run + static_cast<long long>(before) + (start ? 0 : -1);
      const unsigned int where = p[i];
      inverse[row * n + where] =
          size == 0 ? 0u : static_cast<unsigned int>(g < size ? g : size - 1);
      if (start && g < size) {
        values[row * size + g] = in[row * in_row_stride + where];
        index[row * size + g] = where;
      }
      if (start && g <= size) group_starts[row * (size + 1) + g] = static_cast<unsigned int>(i);
    }
    run += static_cast<long long>(total);
  }
}

/** One thread per output entry (row * size + g): counts[g] from the group starts (0 past the
 * last group, of which row r has groups[r]); entries past the last group take
 * fill[r * fill_stride] (the row's first entry when `fill` is null) and the first entry's
 * index. */
template <typename U>
__global__ void __launch_bounds__(kUniqueBlock)
    unique_finish(U* __restrict__ values, unsigned int* __restrict__ index,
                  int* __restrict__ counts, const unsigned int* __restrict__ group_starts,
                  const unsigned int* __restrict__ groups, long long rows, long long n,
                  long long size, const U* __restrict__ fill, long long fill_stride) {
  const long long e = static_cast<long long>(blockIdx.x) * kUniqueBlock + threadIdx.x;
  if (e >= rows * size) return;
  const long long row = e / size, g = e - row * size;
  const long long ng = groups[row];
  const unsigned int* gs = group_starts + row * (size + 1);
  if (g < ng) {
    const long long next = g + 1 < ng ? static_cast<long long>(gs[g + 1]) : n;
    counts[e] = static_cast<int>(next - gs[g]);
  } else {
    counts[e] = 0;
    values[e] = fill ? fill[row * fill_stride] : values[row * size];
    index[e] = ng > 0 ? index[row * size] : 0u;
  }
}

}  // namespace kiln
