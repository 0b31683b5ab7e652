// Selection along the last axis by radix select, for partition, argpartition, topk and
// median (host side: backend/cuda/sort_select.cpp, plan: backend/cuda/sort_plan.h).
//
// The element of rank `kth` in a row is found digit by digit from the top of its key
// (sort_keys.cuh): a histogram of the next digit over the elements that share the digits
// found so far gives the bin holding rank `kth`, and so on until the key is known, together
// with the counts of smaller (`less`) and equal (`count`) elements. No sort, and each pass
// only counts. The outputs then come from one more pass: a stable three-way partition
// around that key (smaller elements in their order, then the equal ones, then the larger),
// of which positions [w0, n) are written: w0 = 0 for partition, n - k for topk. Its order is
// fixed, so the CPU backend writes exactly the same.
//
// select_rows: one block per row, everything in one launch. The first digit is 12 bits wide
//   (8 when the row fits the cache); once the remaining candidates fit in shared memory
//   (kSelectCacheBytes), the next pass also gathers them there and later passes read only
//   them, so a row is typically read three times in all (two passes and the output pass).
// select_hist / select_pick / ... / select_write: few long rows, spread over many blocks
//   ("chunks" of a row); per-row state in global memory between launches, 8-bit digits,
//   offsets of each chunk's outputs from a scan of per-chunk counts (scan_lists).
#pragma once

#include "kiln/backend/cuda/device/sort_keys.cuh"

namespace kiln {

constexpr int kSelectBlock = 256;
/** Bins of the widest digit (12 bits). */
constexpr int kSelectBins = 4096;
/** Shared memory a block caches a row, or the candidates left, in. */
constexpr int kSelectCacheBytes = 16384;
/** Consecutive elements per thread in the output pass (one block scan per tile). */
constexpr int kSelectItems = 8;
/** Loads in flight per thread in a histogram pass. */
constexpr int kSelectUnroll = 4;

enum SelectMode : int { kSelectPartition = 0, kSelectMedian = 1 };

/** Per-row state of the multi-block path (mirrored in backend/cuda/sort_plan.h). */
struct SelectState {
  unsigned long long prefix;  // key digits found so far
  unsigned long long mask;    // which bits of the key they are
  long long rank;             // rank sought among the elements matching the prefix
  long long less;             // elements with a smaller key than any matching the prefix
  long long count;            // elements matching the prefix
  unsigned long long hi_key;  // median: the smallest key above the selected one
  int nan;                    // median: the row holds a NaN
  int pad;
};

namespace radix {

/** Packs counts of the three partition classes (each < 2^21) into one scan value. */
constexpr int kClassBits = 21;
constexpr unsigned long long kClassMask = (1ull << kClassBits) - 1;

/** Element `e` of a 16-byte vector of elements of type U. */
template <typename U>
__device__ __forceinline__ U vector_element(const uint4& w, int e) {
  const unsigned int words[4] = {w.x, w.y, w.z, w.w};
  if constexpr (sizeof(U) == 8) {
    return static_cast<U>(static_cast<unsigned long long>(words[2 * e + 1]) << 32 | words[2 * e]);
  } else {
    constexpr int per_word = 4 / static_cast<int>(sizeof(U));
    return static_cast<U>(words[e / per_word] >> (8 * sizeof(U) * (e % per_word)));
  }
}

/**
 * Calls f(bits) for every element of x[begin, end), spread over the threads of a block of
 * BLOCK: 16-byte loads from the first 16-byte boundary on, kSelectUnroll of them in flight
 * per thread (a block must keep tens of KiB in flight per multiprocessor to reach memory
 * bandwidth), single elements before and after.
 */
template <typename U, int BLOCK, typename F>
__device__ __forceinline__ void for_each_loaded(const U* __restrict__ x, long long begin,
                                                long long end, F&& f) {
  constexpr int kV = 16 / static_cast<int>(sizeof(U));
  const long long mis =
      static_cast<long long>(reinterpret_cast<unsigned long long>(x + begin) / sizeof(U) % kV);
  const long long head_end = begin + (kV - mis) % kV < end ? begin + (kV - mis) % kV : end;
  for (long long i = begin + threadIdx.x; i < head_end; i += BLOCK) f(x[i]);
  const long long vectors = (end - head_end) / kV;
  const uint4* xv = reinterpret_cast<const uint4*>(x + head_end);
  for (long long base = 0; base < vectors; base += static_cast<long long>(BLOCK) * kSelectUnroll) {
    uint4 w[kSelectUnroll];
#pragma unroll
    for (int j = 0; j < kSelectUnroll; ++j) {
      const long long v = base + j * BLOCK + threadIdx.x;
      if (v < vectors) w[j] = xv[v];
    }
#pragma unroll
    for (int j = 0; j < kSelectUnroll; ++j) {
      if (base + j * BLOCK + threadIdx.x >= vectors) continue;
#pragma unroll
      for (int e = 0; e < kV; ++e) f(vector_element<U>(w[j], e));
    }
  }
  for (long long i = head_end + vectors * kV + threadIdx.x; i < end; i += BLOCK) f(x[i]);
}

/**
 * Adds, for every element of x[begin, end) whose key matches `prefix` on `mask`, one to the
 * bin of its digit (bits shift .. shift + log2(bins) of the key) in the shared `hist`. With
 * `gather`, also appends the element's bits to `cache` (`cache_count` counts them). With a
 * non-null `nan_flag`, sets it when an element is NaN. Every thread of the block calls it.
 */
template <typename U, int KIND, int BLOCK>
__device__ __forceinline__ void hist_pass(const U* __restrict__ x, long long begin, long long end,
                                          U prefix, U mask, int shift, unsigned int bin_mask,
                                          unsigned int* hist, bool gather, U* cache,
                                          unsigned int* cache_count, int* nan_flag) {
  for_each_loaded<U, BLOCK>(x, begin, end, [&](U bits) {
    const U k = to_key<U, KIND, true>(bits);
    if (nan_flag && is_nan_bits<U, KIND>(bits)) *nan_flag = 1;
    if (static_cast<U>(k & mask) == prefix) {
      atomicAdd(&hist[static_cast<unsigned int>(k >> shift) & bin_mask], 1u);
      if (gather) cache[atomicAdd(cache_count, 1u)] = bits;
    }
  });
}

/**
 * Writes the stable three-way partition of x[begin, end) around key `v`: an element
 * smaller than v goes to position run_lt + (smaller ones before it in the range), an equal
 * one to cnt_lt + run_eq + ..., a larger one to cnt_lt + cnt_eq + run_gt + ... (cnt_*: the
 * row's totals, run_*: the counts before `begin`). Positions p >= w0 are written at
 * p - w0 of `out_values` (the bits) and `out_indices` (the position in the row), either of
 * which may be null. Every thread of the block calls it; `scan` is shared scratch of
 * BLOCK / 32 + 1 entries.
 */
template <typename U, int KIND, int BLOCK>
__device__ __forceinline__ void partition_write(
    const U* x, long long begin, long long end, U v, long long cnt_lt, long long cnt_eq,
    long long run_lt, long long run_eq, long long run_gt, long long w0, U* __restrict__ out_values,
    unsigned int* __restrict__ out_indices, unsigned long long* scan) {
  constexpr long long kTile = static_cast<long long>(BLOCK) * kSelectItems;
  for (long long base = begin; base < end; base += kTile) {
    const long long first = base + static_cast<long long>(threadIdx.x) * kSelectItems;
    U bits[kSelectItems];
    int cls[kSelectItems];
    unsigned long long packed = 0;
#pragma unroll
    for (int j = 0; j < kSelectItems; ++j) {
      cls[j] = 3;
      if (first + j < end) {
        bits[j] = x[first + j];
        const U k = to_key<U, KIND, true>(bits[j]);
        cls[j] = k < v ? 0 : (k == v ? 1 : 2);
        packed += 1ull << (kClassBits * cls[j]);
      }
    }
    unsigned long long total;
    const unsigned long long off = block_exclusive_sum<BLOCK>(packed, scan, total);
    long long o_lt = run_lt + static_cast<long long>(off & kClassMask);
    long long o_eq = cnt_lt + run_eq + static_cast<long long>((off >> kClassBits) & kClassMask);
    long long o_gt = cnt_lt + cnt_eq + run_gt + static_cast<long long>(off >> (2 * kClassBits));
#pragma unroll
    for (int j = 0; j < kSelectItems; ++j) {
      if (cls[j] == 3) continue;
      const long long dest = cls[j] == 0 ? o_lt++ : (cls[j] == 1 ? o_eq++ : o_gt++);
      if (dest >= w0) {
        if (out_values) out_values[dest - w0] = bits[j];
        if (out_indices) out_indices[dest - w0] = static_cast<unsigned int>(first + j);
      }
    }
    run_lt += static_cast<long long>(total & kClassMask);
    run_eq += static_cast<long long>((total >> kClassBits) & kClassMask);
    run_gt += static_cast<long long>(total >> (2 * kClassBits));
  }
}

/** The smallest key above `v` among x[begin, end) on this thread (all ones when none). */
template <typename U, int KIND, int BLOCK>
__device__ __forceinline__ unsigned long long min_key_above(const U* x, long long begin,
                                                            long long end, U v) {
  unsigned long long m = ~0ull;
  for_each_loaded<U, BLOCK>(x, begin, end, [&](U bits) {
    const U k = to_key<U, KIND, true>(bits);
    if (k > v && static_cast<unsigned long long>(k) < m) m = k;
  });
  return m;
}

/** The mean of two middle values (exact when they are equal, so no overflow). */
__device__ __forceinline__ double middle(double a, double b) {
  return a == b ? a : (a + b) * 0.5;
}

/** The median of a row from its two middle keys, in O; NaN when the row holds one. Complex
 * rows give the bits of a complex64 (O: unsigned long long), NaN as NaN + 0i. */
template <typename U, int KIND, typename O>
__device__ __forceinline__ O median_value(U lo_key, U hi_key, bool nan) {
  if constexpr (KIND == kComplex) {
    if (nan) return static_cast<O>(0x7fc00000u);
    const U a = from_key<U, KIND>(lo_key), b = from_key<U, KIND>(hi_key);
    auto part = [](U bits, int shift) {
      return static_cast<double>(__uint_as_float(static_cast<unsigned int>(bits >> shift)));
    };
    const float re = static_cast<float>(middle(part(a, 0), part(b, 0)));
    const float im = static_cast<float>(middle(part(a, 32), part(b, 32)));
    return static_cast<O>(static_cast<unsigned long long>(__float_as_uint(im)) << 32 |
                          __float_as_uint(re));
  } else {
    if (nan) return static_cast<O>(__longlong_as_double(0x7ff8000000000000ll));
    return static_cast<O>(middle(bits_to_double<U, KIND>(from_key<U, KIND>(lo_key)),
                                 bits_to_double<U, KIND>(from_key<U, KIND>(hi_key))));
  }
}

template <typename U>
struct SelectShared {
  unsigned int hist[kSelectBins];
  U cache[kSelectCacheBytes / sizeof(U)];
  unsigned long long scan[kSelectBlock / 32 + 1];
  unsigned long long answer[3];
  unsigned int cache_count;
  int nan;
};

}  // namespace radix

/**
 * One block per row (grid.x = rows): row r is in[r * row_stride + 0 .. n). MODE
 * kSelectPartition writes positions [w0, n) of the stable partition around the element of
 * rank `kth` to out_values / out_indices (row r at r * (n - w0); either may be null). MODE
 * kSelectMedian writes the median of row r to out_median[r] (kth = (n - 1) / 2). With a
 * non-null `only`, rows r with only[r] == 0 are skipped (select_sampled did them).
 */
template <typename U, int KIND, int MODE, typename O>
__global__ void __launch_bounds__(kSelectBlock)
    select_rows(const U* __restrict__ in, long long row_stride, long long n, long long kth,
                long long w0, U* __restrict__ out_values, unsigned int* __restrict__ out_indices,
                O* __restrict__ out_median, const unsigned int* __restrict__ only) {
  using namespace radix;
  constexpr int kCap = kSelectCacheBytes / static_cast<int>(sizeof(U));
  __shared__ SelectShared<U> sh;
  const long long row = blockIdx.x;
  if (only && only[row] == 0) return;
  const U* x = in + row * row_stride;
  const bool whole = n <= kCap;  // the whole row lives in the cache
  if (threadIdx.x == 0) {
    sh.nan = 0;
    sh.cache_count = whole ? static_cast<unsigned int>(n) : 0u;
  }
  if (whole) {
    for (long long i = threadIdx.x; i < n; i += kSelectBlock) sh.cache[i] = x[i];
  }
  __syncthreads();

  bool cached = whole;
  long long cached_n = whole ? n : 0;
  U prefix = 0, mask = 0;
  long long rank = kth, less = 0, count = n;
  bool gather = false;
  int shift = kBits<U>;
  for (bool first = true; shift > 0; first = false) {
    const int width_max = first && !cached && kBits<U> >= 32 ? 12 : 8;
    const int width = shift < width_max ? shift : width_max;
    shift -= width;
    const unsigned int bins = 1u << width;
    for (unsigned int i = threadIdx.x; i < bins; i += kSelectBlock) sh.hist[i] = 0;
    if (threadIdx.x == 0 && gather) sh.cache_count = 0;
    __syncthreads();
    int* nan_flag = MODE == kSelectMedian && first ? &sh.nan : nullptr;
    if (cached) {
      for (long long i = threadIdx.x; i < cached_n; i += kSelectBlock) {
        const U b = sh.cache[i];
        const U k = to_key<U, KIND, true>(b);
        if (nan_flag && is_nan_bits<U, KIND>(b)) *nan_flag = 1;
        if (static_cast<U>(k & mask) == prefix) {
          atomicAdd(&sh.hist[static_cast<unsigned int>(k >> shift) & (bins - 1)], 1u);
        }
      }
    } else {
      hist_pass<U, KIND, kSelectBlock>(x, 0, n, prefix, mask, shift, bins - 1, sh.hist, gather,
                                       sh.cache, &sh.cache_count, nan_flag);
    }
    __syncthreads();
    if (gather) {
      cached = true;
      cached_n = sh.cache_count;
    }
    unsigned int bin;
    long long before, c;
    find_rank_bin<kSelectBlock>(sh.hist, static_cast<int>(bins), rank, sh.scan, sh.answer, bin,
                                before, c);
    less += before;
    rank -= before;
    count = c;
    prefix = static_cast<U>(prefix | static_cast<U>(static_cast<U>(bin) << shift));
    mask = static_cast<U>(mask | static_cast<U>(static_cast<U>(bins - 1) << shift));
    gather = !cached && count <= kCap && shift > 0;
    if (count == 1 && cached && shift > 0) {
      // One candidate left: its key is the answer, without the remaining digit passes.
      for (long long i = threadIdx.x; i < cached_n; i += kSelectBlock) {
        const U k = to_key<U, KIND, true>(sh.cache[i]);
        if (static_cast<U>(k & mask) == prefix) sh.answer[0] = k;
      }
      __syncthreads();
      prefix = static_cast<U>(sh.answer[0]);
      shift = 0;
      __syncthreads();
    }
  }

  if constexpr (MODE == kSelectMedian) {
    // The upper middle element: the same key unless the run of equal keys ends at kth.
    const long long hi = n / 2;
    unsigned long long hi_key = prefix;
    if (hi != kth && less + count <= hi) {
      const unsigned long long m =
          whole ? min_key_above<U, KIND, kSelectBlock>(sh.cache, 0, n, prefix)
                : min_key_above<U, KIND, kSelectBlock>(x, 0, n, prefix);
      hi_key = block_min<kSelectBlock>(m, sh.scan);
    }
    if (threadIdx.x == 0) {
      out_median[row] = median_value<U, KIND, O>(prefix, static_cast<U>(hi_key), sh.nan != 0);
    }
  } else {
    const long long out_n = n - w0;
    partition_write<U, KIND, kSelectBlock>(whole ? sh.cache : x, 0, n, prefix, less, count, 0, 0, 0,
                                           w0, out_values ? out_values + row * out_n : nullptr,
                                           out_indices ? out_indices + row * out_n : nullptr,
                                           sh.scan);
  }
}

// ---------------------------------------------------------------- many blocks per row
// Block b of a launch handles chunk b % chunks of row b / chunks: x[c * chunk, (c + 1) * chunk).

/** Adds the histogram of the next 8-bit digit (at `shift`) of the chunk's elements matching
 * the row's state to ghist[row * 256 + bin]; with `first` (median), flags NaNs. */
template <typename U, int KIND, int MODE>
__global__ void __launch_bounds__(kSelectBlock)
    select_hist(const U* __restrict__ in, long long row_stride, long long n, long long chunk,
                long long chunks, SelectState* __restrict__ st, unsigned int* __restrict__ ghist,
                int shift, int first) {
  __shared__ unsigned int hist[256];
  __shared__ int nan;
  const long long row = blockIdx.x / chunks, c = blockIdx.x - row * chunks;
  const long long begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;
  hist[threadIdx.x] = 0;
  if (threadIdx.x == 0) nan = 0;
  __syncthreads();
  const U prefix = static_cast<U>(st[row].prefix), mask = static_cast<U>(st[row].mask);
  radix::hist_pass<U, KIND, kSelectBlock>(in + row * row_stride, begin, end, prefix, mask, shift,
                                          255u, hist, false, nullptr, nullptr,
                                          MODE == kSelectMedian && first ? &nan : nullptr);
  __syncthreads();
  if (hist[threadIdx.x]) atomicAdd(&ghist[row * 256 + threadIdx.x], hist[threadIdx.x]);
  // Several blocks of a row may find a NaN: an atomic store, not racing plain ones (TSan on
  // the CPU emulation, SortKernels.SelectManyBlocksPerRow).
  if (threadIdx.x == 0 && nan) atomicExch(&st[row].nan, 1);
}

/** One block per row: picks the bin of ghist[row] holding the sought rank (kth on the
 * `first` pass), advances the row's state and clears ghist[row] for the next pass. */
template <typename U>
__global__ void __launch_bounds__(kSelectBlock)
    select_pick(SelectState* __restrict__ st, unsigned int* __restrict__ ghist, int shift,
                int first, long long kth) {
  __shared__ unsigned int hist[256];
  __shared__ unsigned long long scan[kSelectBlock / 32 + 1];
  __shared__ unsigned long long answer[3];
  const long long row = blockIdx.x;
  hist[threadIdx.x] = ghist[row * 256 + threadIdx.x];
  ghist[row * 256 + threadIdx.x] = 0;
  const long long rank = first ? kth : st[row].rank;
  __syncthreads();
  unsigned int bin;
  long long before, count;
  radix::find_rank_bin<kSelectBlock>(hist, 256, rank, scan, answer, bin, before, count);
  if (threadIdx.x == 0) {
    SelectState s = st[row];
    s.less += before;
    s.rank = rank - before;
    s.count = count;
    s.prefix |= static_cast<unsigned long long>(bin) << shift;
    s.mask |= 255ull << shift;
    if (first) s.hi_key = ~0ull;
    st[row] = s;
  }
}

/** Median of even rows whose run of equal middle keys ends at the lower middle: the smallest
 * key above it, into st[row].hi_key. */
template <typename U, int KIND>
__global__ void __launch_bounds__(kSelectBlock)
    select_min_above(const U* __restrict__ in, long long row_stride, long long n, long long chunk,
                     long long chunks, SelectState* __restrict__ st, long long hi) {
  __shared__ unsigned long long scratch[kSelectBlock / 32 + 1];
  const long long row = blockIdx.x / chunks, c = blockIdx.x - row * chunks;
  const long long begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;
  if (st[row].less + st[row].count > hi) return;  // the same key: nothing to find
  const U v = static_cast<U>(st[row].prefix);
  const unsigned long long m =
      radix::min_key_above<U, KIND, kSelectBlock>(in + row * row_stride, begin, end, v);
  const unsigned long long bm = radix::block_min<kSelectBlock>(m, scratch);
  if (threadIdx.x == 0 && bm != ~0ull) atomicMin(&st[row].hi_key, bm);
}

/** One thread per row: the median from the row's state (kth = (n - 1) / 2). */
template <typename U, int KIND, typename O>
__global__ void select_median_finish(const SelectState* __restrict__ st, long long rows,
                                     long long n, O* __restrict__ out) {
  const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const SelectState s = st[row];
  const unsigned long long hi_key = s.less + s.count > n / 2 ? s.prefix : s.hi_key;
  out[row] =
      radix::median_value<U, KIND, O>(static_cast<U>(s.prefix), static_cast<U>(hi_key), s.nan != 0);
}

/** Counts the chunk's elements below, at and above the row's selected key into
 * counts[(row * 3 + class) * chunks + chunk]. */
template <typename U, int KIND>
__global__ void __launch_bounds__(kSelectBlock)
    select_count(const U* __restrict__ in, long long row_stride, long long n, long long chunk,
                 long long chunks, const SelectState* __restrict__ st,
                 unsigned int* __restrict__ counts) {
  __shared__ unsigned long long scan[kSelectBlock / 32 + 1];
  const long long row = blockIdx.x / chunks, c = blockIdx.x - row * chunks;
  const long long begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;
  const U v = static_cast<U>(st[row].prefix);
  const U* x = in + row * row_stride;
  unsigned long long lt = 0, eq = 0, gt = 0;
  radix::for_each_loaded<U, kSelectBlock>(x, begin, end, [&](U bits) {
    const U k = radix::to_key<U, KIND, true>(bits);
    lt += k < v;
    eq += k == v;
    gt += k > v;
  });
  unsigned long long t_lt, t_eq, t_gt;
  radix::block_exclusive_sum<kSelectBlock>(lt, scan, t_lt);
  radix::block_exclusive_sum<kSelectBlock>(eq, scan, t_eq);
  radix::block_exclusive_sum<kSelectBlock>(gt, scan, t_gt);
  if (threadIdx.x == 0) {
    counts[(row * 3 + 0) * chunks + c] = static_cast<unsigned int>(t_lt);
    counts[(row * 3 + 1) * chunks + c] = static_cast<unsigned int>(t_eq);
    counts[(row * 3 + 2) * chunks + c] = static_cast<unsigned int>(t_gt);
  }
}

/** Writes the chunk's part of the partition (see select_rows), its starting offsets in
 * `counts` (select_count's, scanned). */
template <typename U, int KIND>
__global__ void __launch_bounds__(kSelectBlock)
    select_write(const U* __restrict__ in, long long row_stride, long long n, long long chunk,
                 long long chunks, const SelectState* __restrict__ st,
                 const unsigned int* __restrict__ counts, long long w0, U* __restrict__ out_values,
                 unsigned int* __restrict__ out_indices) {
  __shared__ unsigned long long scan[kSelectBlock / 32 + 1];
  const long long row = blockIdx.x / chunks, c = blockIdx.x - row * chunks;
  const long long begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;
  const SelectState s = st[row];
  const long long out_n = n - w0;
  radix::partition_write<U, KIND, kSelectBlock>(
      in + row * row_stride, begin, end, static_cast<U>(s.prefix), s.less, s.count,
      counts[(row * 3 + 0) * chunks + c], counts[(row * 3 + 1) * chunks + c],
      counts[(row * 3 + 2) * chunks + c], w0, out_values ? out_values + row * out_n : nullptr,
      out_indices ? out_indices + row * out_n : nullptr, scan);
}

}  // namespace kiln
