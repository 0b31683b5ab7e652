// Reduction kernels (Reduce, ArgReduce), folding with a policy of reduce_ops.cuh.
//
// The host (backend/cuda/reduce.cpp) orders the input's dimensions by memory layout
// (cpu::make_reduce_plan) and picks one of two shapes of work:
//
// rows: the innermost dimension in memory is reduced. A group of `group` threads (a warp, or
//   the whole block for long rows) reduces each output's elements, runs of the innermost
//   dimension: 16-byte vector loads when every run is aligned, four in flight per thread,
//   then warp shuffles (and shared memory across the block's warps).
// columns: the innermost dimension is kept. Threads own adjacent outputs (N each, with
//   vector loads when aligned), so every input row is read coalesced; the block's
//   kColumnRows rows of threads combine in shared memory.
// Work too small to fill the GPU (few long rows, few columns) is split along the reduction
// over gridDim.y; reduce_partials then combines each output's partial accumulators, without
// atomics, so results do not depend on timing. A reduction of everything is one row split
// this way.
#pragma once

#include "kiln/backend/cuda/device/reduce_ops.cuh"

namespace kiln {

/** Threads per block of the reduction kernels (also reduce_softmax.cuh, scan.cuh). */
constexpr int kReduceBlock = 256;
/** Rows of threads (threadIdx.y) of a column-reduction block, of 32 threads each. */
constexpr int kColumnRows = 8;
/** Vector loads each thread keeps in flight in the contiguous row kernel. */
constexpr int kReduceUnroll = 4;

/** The rows shape of work (mirrored in backend/cuda/reduce.cpp). Row r's elements start at
 * elem_to_loc(r, kept_shape, kept_in); its result goes to elem_to_loc(r, kept_shape,
 * kept_out) of the output, or with splits to partial[r * gridDim.y + blockIdx.y]. A row's n
 * elements are runs of `run` elements at stride `run_stride`, one per position of the outer
 * reduced dimensions (outer_shape, outer_in; none when outer_ndim == 0): element j lies at
 * elem_to_loc(j / run, outer) + (j % run) * run_stride. Split s reduces elements
 * [s * chunk, (s + 1) * chunk). With `vec`, runs have unit stride, `run` and `chunk` are
 * multiples of N and every run starts 16-byte aligned: the kernel loads N elements at once. */
struct ReduceRowArgs {
  Dims<int> kept_shape;
  Dims<long long> kept_in;
  Dims<long long> kept_out;
  Dims<int> outer_shape;
  Dims<long long> outer_in;
  int kept_ndim;
  int outer_ndim;
  long long rows;
  long long n;
  long long run;
  long long run_stride;
  long long chunk;
  int group;  // threads per row: 32, or blockDim.x
  bool vec;
};

/** The columns shape of work (mirrored in backend/cuda/reduce.cpp). Output (o, c) for
 * outer position o (of outer_shape) and column c < cols reduces input elements at
 * elem_to_loc(o, outer_shape, outer_in) + c * col_in + row offset, over `rows` rows at
 * r * red_in[0] (red_ndim == 1) or elem_to_loc(r, red_shape, red_in). Block x covers
 * 32 * N columns of one o (`tiles` blocks per o); block y covers `chunk` rows. With `vec`,
 * col_in is 1 and every row's columns start 16-byte aligned. */
struct ReduceColArgs {
  Dims<int> outer_shape;
  Dims<long long> outer_in;
  Dims<long long> outer_out;
  Dims<int> red_shape;
  Dims<long long> red_in;
  int outer_ndim;
  int red_ndim;
  long long outer_size;
  long long cols;
  long long col_in;
  long long col_out;
  long long rows;
  long long chunk;
  long long tiles;
  bool vec;
};

/** The second pass of a split reduction: output k combines the `splits` partials at
 * k * kstride + s * sstride and goes to elem_to_loc(k, shape, out_strides); `group` threads
 * (a warp, or the whole block) per output. */
struct ReducePartialArgs {
  Dims<int> shape;
  Dims<long long> out_strides;
  int ndim;
  long long outputs;
  long long splits;
  long long kstride;
  long long sstride;
  int group;
};

/** The combination of `acc` over a group of threads (a warp, or the whole block when
 * `group` > 32), valid in the group's first thread. Every thread of the block calls it. */
template <typename P>
__device__ inline typename P::acc_type group_combine(typename P::acc_type acc, int group) {
  using Acc = typename P::acc_type;
  acc = warp_combine<P>(acc);
  if (group > 32) {
    __shared__ Acc warps[kReduceBlock / 32];
    const int w = threadIdx.x / 32;
    if ((threadIdx.x & 31) == 0) warps[w] = acc;
    __syncthreads();
    if (w == 0) {
      acc = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : P::init();
      acc = warp_combine<P>(acc);
    }
  }
  return acc;
}

/** Offset of element j of a row (see ReduceRowArgs). */
__device__ inline long long row_offset(const ReduceRowArgs& a, long long j) {
  if (a.outer_ndim == 0) return j * a.run_stride;
  const long long o = j / a.run;
  return elem_to_loc(o, a.outer_shape, a.outer_in, a.outer_ndim) + (j - o * a.run) * a.run_stride;
}

/** Rows: a group of threads per output (and split). */
template <typename P, int N>
__global__ void __launch_bounds__(kReduceBlock)
    reduce_rows(const typename P::in_type* __restrict__ in, typename P::out_type* __restrict__ out,
                typename P::acc_type* __restrict__ partial,
                const __grid_constant__ ReduceRowArgs a) {
  using In = typename P::in_type;
  using Acc = typename P::acc_type;
  const int group = a.group;
  const int lane = threadIdx.x % group;
  const long long row =
      static_cast<long long>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (row >= a.rows) return;  // a whole group (a warp, or the block) leaves together
  const long long j0 = static_cast<long long>(blockIdx.y) * a.chunk;
  const long long j1 = j0 + a.chunk < a.n ? j0 + a.chunk : a.n;
  const In* p = in + elem_to_loc(row, a.kept_shape, a.kept_in, a.kept_ndim);
  Acc acc = P::init();
  if (N > 1 && a.vec && a.outer_ndim == 0) {
    // One contiguous run: kReduceUnroll vector loads in flight per thread.
    const Vec<In, N>* pv = reinterpret_cast<const Vec<In, N>*>(p);
    long long v = j0 / N + lane;
    const long long v1 = j1 / N;
    for (; v + (kReduceUnroll - 1) * group < v1; v += kReduceUnroll * group) {
      Vec<In, N> x[kReduceUnroll];
#pragma unroll
      for (int u = 0; u < kReduceUnroll; ++u) x[u] = pv[v + u * group];
#pragma unroll
      for (int u = 0; u < kReduceUnroll; ++u) {
#pragma unroll
        for (int e = 0; e < N; ++e) acc = P::fold(acc, x[u].v[e], (v + u * group) * N + e);
      }
    }
    for (; v < v1; v += group) {
      const Vec<In, N> x = pv[v];
#pragma unroll
      for (int e = 0; e < N; ++e) acc = P::fold(acc, x.v[e], v * N + e);
    }
  } else if (N > 1 && a.vec) {
    // Several runs (vectors never straddle two).
    for (long long v = j0 / N + lane; v < j1 / N; v += group) {
      const Vec<In, N> x = load_vec<N>(p + row_offset(a, v * N));
#pragma unroll
      for (int e = 0; e < N; ++e) acc = P::fold(acc, x.v[e], v * N + e);
    }
  } else {
    for (long long j = j0 + lane; j < j1; j += group) acc = P::fold(acc, p[row_offset(a, j)], j);
  }
  acc = group_combine<P>(acc, group);
  if (lane != 0) return;
  if (gridDim.y == 1)
    out[elem_to_loc(row, a.kept_shape, a.kept_out, a.kept_ndim)] = P::finish(acc);
  else
    partial[row * gridDim.y + blockIdx.y] = acc;
}

/** Columns: block (32, kColumnRows); N adjacent outputs per thread. With splits (gridDim.y >
 * 1) the partials are laid out as (split, o, c). */
template <typename P, int N>
__global__ void __launch_bounds__(32 * kColumnRows)
    reduce_columns(const typename P::in_type* __restrict__ in,
                   typename P::out_type* __restrict__ out,
                   typename P::acc_type* __restrict__ partial,
                   const __grid_constant__ ReduceColArgs a) {
  using In = typename P::in_type;
  using Acc = typename P::acc_type;
  const long long o = blockIdx.x / a.tiles;
  const long long tile = blockIdx.x - o * a.tiles;
  const long long c0 = (tile * 32 + threadIdx.x) * N;
  const long long r0 = static_cast<long long>(blockIdx.y) * a.chunk;
  const long long r1 = r0 + a.chunk < a.rows ? r0 + a.chunk : a.rows;
  Acc acc[N];
#pragma unroll
  for (int e = 0; e < N; ++e) acc[e] = P::init();
  if (c0 < a.cols) {
    const In* base = in + elem_to_loc(o, a.outer_shape, a.outer_in, a.outer_ndim) + c0 * a.col_in;
    const bool full = a.vec && c0 + N <= a.cols;
    for (long long r = r0 + threadIdx.y; r < r1; r += kColumnRows) {
      const In* p = base + (a.red_ndim == 1 ? r * a.red_in.v[0]
                                            : elem_to_loc(r, a.red_shape, a.red_in, a.red_ndim));
      if (full) {
        const Vec<In, N> x = load_vec<N>(p);
#pragma unroll
        for (int e = 0; e < N; ++e) acc[e] = P::fold(acc[e], x.v[e], r);
      } else {
#pragma unroll
        for (int e = 0; e < N; ++e) {
          if (c0 + e < a.cols) acc[e] = P::fold(acc[e], p[e * a.col_in], r);
        }
      }
    }
  }
  // Combine the kColumnRows partial results of each column.
  extern __shared__ __align__(16) unsigned char reduce_smem[];
  Acc* s = reinterpret_cast<Acc*>(reduce_smem);
#pragma unroll
  for (int e = 0; e < N; ++e) s[(threadIdx.y * 32 + threadIdx.x) * N + e] = acc[e];
  __syncthreads();
  if (threadIdx.y != 0 || c0 >= a.cols) return;
  for (int y = 1; y < kColumnRows; ++y) {
#pragma unroll
    for (int e = 0; e < N; ++e) acc[e] = P::combine(acc[e], s[(y * 32 + threadIdx.x) * N + e]);
  }
  const long long out0 = elem_to_loc(o, a.outer_shape, a.outer_out, a.outer_ndim);
#pragma unroll
  for (int e = 0; e < N; ++e) {
    const long long c = c0 + e;
    if (c < a.cols) {
      if (gridDim.y == 1)
        out[out0 + c * a.col_out] = P::finish(acc[e]);
      else
        partial[(static_cast<long long>(blockIdx.y) * a.outer_size + o) * a.cols + c] = acc[e];
    }
  }
}

/** The second pass of split reductions: a group of threads per output combines its
 * partials. */
template <typename P>
__global__ void __launch_bounds__(kReduceBlock)
    reduce_partials(const typename P::acc_type* __restrict__ partial,
                    typename P::out_type* __restrict__ out,
                    const __grid_constant__ ReducePartialArgs a) {
  using Acc = typename P::acc_type;
  const int group = a.group;
  const int lane = threadIdx.x % group;
  const long long k =
      static_cast<long long>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (k >= a.outputs) return;  // whole groups
  Acc acc = P::init();
  for (long long s = lane; s < a.splits; s += group) {
    acc = P::combine(acc, partial[k * a.kstride + s * a.sstride]);
  }
  acc = group_combine<P>(acc, group);
  if (lane == 0) out[elem_to_loc(k, a.shape, a.out_strides, a.ndim)] = P::finish(acc);
}

}  // namespace kiln
