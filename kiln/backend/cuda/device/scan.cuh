// Scan kernels (cumsum, cumprod) over a row-contiguous input viewed as (outer, n, inner),
// with the CPU's types (cpu::SumTypes: small integers widen, half types accumulate in float)
// through a ReducePolicy of reduce_ops.cuh.
//
// scan_lines (inner == 1): a group of threads (a warp, or the whole block) scans a line in
//   tiles of group * kScanItems elements: each thread scans its kScanItems consecutive
//   elements, the group scans the threads' totals with warp shuffles (and shared memory
//   across warps), and a carry runs from tile to tile. Long lines on few groups are split in
//   chunks over gridDim.y: a first launch (`totals`) writes each chunk's total, the second
//   starts each chunk from the combination of the totals before it.
// scan_columns (inner > 1): a thread per column carries its running value down the n rows;
//   neighbouring threads read neighbouring columns, so every row is read coalesced.
#pragma once

#include "kiln/backend/cuda/device/reduce.cuh"

namespace kiln {

/** Consecutive elements each thread scans per tile. */
constexpr int kScanItems = 8;

/** __shfl_up_sync of any trivially copyable value. */
template <typename T>
__device__ inline T shfl_up(T v, int delta) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  union {
    T t;
    unsigned int w[kWords];
  } x;
  x.t = v;
#pragma unroll
  for (int i = 0; i < kWords; ++i) x.w[i] = __shfl_up_sync(0xffffffffu, x.w[i], delta);
  return x.t;
}

template <typename T>
__device__ inline T shfl_idx(T v, int lane) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  union {
    T t;
    unsigned int w[kWords];
  } x;
  x.t = v;
#pragma unroll
  for (int i = 0; i < kWords; ++i) x.w[i] = __shfl_sync(0xffffffffu, x.w[i], lane);
  return x.t;
}

/** Parameters of scan_lines (mirrored in backend/cuda/scan.cpp). */
struct ScanLineArgs {
  long long lines;
  long long n;      // elements per line
  long long chunk;  // elements per split (gridDim.y splits per line)
  int group;        // threads per line: 32, or blockDim.x
  bool reverse;
  bool inclusive;
  bool totals;  // first launch of a split scan: write chunk totals only
};

/**
 * The exclusive scan of `v` over a group (in group order) and the group's total, in every
 * thread. Every thread of the block calls it; `shared` holds kReduceBlock / 32 values.
 */
template <typename P, typename Acc>
__device__ inline Acc group_exclusive_scan(Acc v, int group, Acc* shared, Acc& total) {
  const int lane = threadIdx.x & 31;
  Acc inc = v;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const Acc y = shfl_up(inc, d);
    if (lane >= d) inc = P::combine(y, inc);
  }
  Acc exc = shfl_up(inc, 1);
  if (lane == 0) exc = P::init();
  if (group <= 32) {
    total = shfl_idx(inc, 31);
    return exc;
  }
  // Across the block's warps: warp totals in shared memory, scanned by every thread.
  const int w = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();  // the previous call's readers are done
  if (lane == 31) shared[w] = inc;
  __syncthreads();
  Acc before = P::init();
  total = P::init();
  for (int i = 0; i < warps; ++i) {
    if (i == w) before = total;
    total = P::combine(total, shared[i]);
  }
  return P::combine(before, exc);
}

template <typename P>
__global__ void __launch_bounds__(kReduceBlock)
    scan_lines(const typename P::in_type* __restrict__ in, typename P::out_type* __restrict__ out,
               typename P::acc_type* __restrict__ partial, const __grid_constant__ ScanLineArgs a) {
  using In = typename P::in_type;
  using Acc = typename P::acc_type;
  __shared__ Acc shared[kReduceBlock / 32];
  const int group = a.group;
  const int lane = threadIdx.x % group;
  const long long line =
      static_cast<long long>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (line >= a.lines) return;  // a whole group leaves together
  const In* x = in + line * a.n;
  typename P::out_type* y = out + line * a.n;
  const long long k0 = static_cast<long long>(blockIdx.y) * a.chunk;
  const long long k1 = k0 + a.chunk < a.n ? k0 + a.chunk : a.n;
  // Position of the k-th element in scan order.
  auto at = [&](long long k) { return a.reverse ? a.n - 1 - k : k; };

  Acc carry = P::init();
  if (!a.totals && blockIdx.y > 0) {
    // The chunks before this one, combined in order.
    const Acc* totals = partial + line * gridDim.y;
    Acc t = P::init();
    for (unsigned int c = lane; c < blockIdx.y; c += group) t = P::combine(t, totals[c]);
    Acc all;
    const Acc before = group_exclusive_scan<P>(t, group, shared, all);
    (void)before;
    carry = all;
  }
  const long long tile = static_cast<long long>(group) * kScanItems;
  for (long long t0 = k0; t0 < k1; t0 += tile) {
    const long long first = t0 + static_cast<long long>(lane) * kScanItems;
    Acc v[kScanItems];
    Acc run = P::init();
#pragma unroll
    for (int i = 0; i < kScanItems; ++i) {
      const long long k = first + i;
      const Acc xi = k < k1 ? P::fold(P::init(), x[at(k)], k) : P::init();
      v[i] = a.inclusive ? P::combine(run, xi) : run;
      run = P::combine(run, xi);
    }
    Acc tile_total;
    const Acc before = group_exclusive_scan<P>(run, group, shared, tile_total);
    if (!a.totals) {
      const Acc base = P::combine(carry, before);
#pragma unroll
      for (int i = 0; i < kScanItems; ++i) {
        const long long k = first + i;
        if (k < k1) y[at(k)] = P::finish(P::combine(base, v[i]));
      }
    }
    carry = P::combine(carry, tile_total);
  }
  if (a.totals && lane == 0) partial[line * gridDim.y + blockIdx.y] = carry;
}

/** Parameters of scan_columns (mirrored in backend/cuda/scan.cpp). */
struct ScanColumnArgs {
  long long outer;
  long long n;
  long long inner;
  bool reverse;
  bool inclusive;
};

template <typename P>
__global__ void scan_columns(const typename P::in_type* __restrict__ in,
                             typename P::out_type* __restrict__ out,
                             const __grid_constant__ ScanColumnArgs a) {
  using Acc = typename P::acc_type;
  const long long t = global_thread_x<long long>();
  if (t >= a.outer * a.inner) return;
  const long long o = t / a.inner, i = t - o * a.inner;
  const long long base = o * a.n * a.inner + i;
  Acc acc = P::init();
  for (long long k = 0; k < a.n; ++k) {
    const long long at = base + (a.reverse ? a.n - 1 - k : k) * a.inner;
    const Acc next = P::fold(acc, in[at], k);
    out[at] = P::finish(a.inclusive ? next : acc);
    acc = next;
  }
}

}  // namespace kiln
