// The fused Softmax over the last axis of a row-contiguous input, as the CPU computes it:
// m = the NaN-propagating maximum of the row, s = sum(exp(x - m)), out = exp(x - m) / s,
// half types in float and rounded once.
//
// softmax_fwd: the row in registers (one read, one write; device/norm/rows.cuh's groups),
//   for rows of whole aligned vectors that fit.
// softmax_fwd_staged: the same through shared memory (rows.cuh's staged tiles), the next rows
//   copied in while a persistent block computes on the current one; for rows that need a
//   whole 1024-thread block.
// softmax_looped: any row: each thread keeps a running maximum and a sum rescaled to it
//   (Milakov and Gimelshein, 2018, "Online normalizer calculation for softmax"), the group
//   combines them, and a second read writes the output.
//
// The gradient (fast::SoftmaxVJP): dx = y * (g - sum(y * g)) per row, from the softmax y and
// its cotangent g: softmax_bwd keeps both rows in registers (one read each, one write);
// softmax_bwd_looped reads them twice.
#pragma once

#include "kiln/backend/cuda/device/norm/rows.cuh"

namespace kiln {

namespace softmax_detail {

/** The softmax of a row held as VPT vectors per thread of a group, written to `y` (when
 * `active`). Every thread of the block calls it. */
template <typename T, int VPT, int N>
__device__ inline void softmax_row(const Vec<T, N> (&xv)[VPT], T* y, long long n, int group,
                                   int lane, bool active) {
  using A = rows::Acc<T>;
  A m = -rows::infinity<A>();
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const long long e = rows::vec_elem(v, group, lane, N);
    if (active && e < n)
#pragma unroll
      for (int k = 0; k < N; ++k) m = rows::nan_max(m, rows::to_acc<A>(xv[v].v[k]));
  }
  m = rows::group_max(m, group);
  A s = 0;
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const long long e = rows::vec_elem(v, group, lane, N);
    if (active && e < n)
#pragma unroll
      for (int k = 0; k < N; ++k) s += rows::exp_diff<T>(rows::to_acc<A>(xv[v].v[k]), m);
  }
  s = rows::group_sum(s, group);
  if (!active) return;
  const A inv = A(1) / s;
  rows::store_full<VPT, N>(y, n, group, lane, [&](int v, int k) {
    return rows::from_acc<T>(rows::exp_diff<T>(rows::to_acc<A>(xv[v].v[k]), m) * inv);
  });
}

/** dx = y (g - sum(y g)) of a row held as VPT vectors of y and g per thread of a group. */
template <typename T, int VPT, int N>
__device__ inline void softmax_vjp_row(const Vec<T, N> (&yv)[VPT], const Vec<T, N> (&gv)[VPT],
                                       T* dx, long long n, int group, int lane, bool active) {
  using A = rows::Acc<T>;
  A dot = 0;
#pragma unroll
  for (int v = 0; v < VPT; ++v)
#pragma unroll
    for (int k = 0; k < N; ++k) dot += rows::to_acc<A>(yv[v].v[k]) * rows::to_acc<A>(gv[v].v[k]);
  dot = rows::group_sum(dot, group);  // zeros past the row add nothing
  if (!active) return;
  rows::store_full<VPT, N>(dx, n, group, lane, [&](int v, int k) {
    return rows::from_acc<T>(rows::to_acc<A>(yv[v].v[k]) * (rows::to_acc<A>(gv[v].v[k]) - dot));
  });
}

}  // namespace softmax_detail

template <typename T, int VPT>
__global__ void __launch_bounds__(1024) softmax_fwd(const T* __restrict__ in, T* __restrict__ out,
                                                    long long rows, long long n, int group) {
  constexpr int N = rows::kVec<T>;
  const rows::RowPos p = rows::row_pos(rows, group);
  const long long off = (p.active ? p.row : 0) * n;
  Vec<T, N> xv[VPT];
#pragma unroll
  for (int v = 0; v < VPT; ++v)
    xv[v] = rows::load_full<N>(in + off, p.active ? n : 0, rows::vec_elem(v, group, p.lane, N));
  softmax_detail::softmax_row(xv, out + off, n, group, p.lane, p.active);
}

/** softmax_fwd through shared memory: tiles of blockDim.x / group rows. */
template <typename T, int VPT>
__global__ void __launch_bounds__(1024)
    softmax_fwd_staged(const T* __restrict__ in, T* __restrict__ out, long long rows, long long n,
                       int group) {
  constexpr int N = rows::kVec<T>;
  const int lane = threadIdx.x % group, gi = threadIdx.x / group;
  const rows::RowRing<T> ring{rows::dynamic_smem<T>(), in, rows, n,
                              static_cast<int>(blockDim.x) / group};
  rows::staged_tiles(ring, [&](int stage, long long t) {
    const long long row = t * ring.R + gi;
    const T* xs = ring.slot(stage) + gi * n;
    Vec<T, N> xv[VPT];
#pragma unroll
    for (int v = 0; v < VPT; ++v)
      xv[v] = rows::load_full<N>(xs, n, rows::vec_elem(v, group, lane, N));
    const bool active = row < rows;
    softmax_detail::softmax_row(xv, out + (active ? row : 0) * n, n, group, lane, active);
  });
}

template <typename T>
__global__ void __launch_bounds__(1024)
    softmax_looped(const T* __restrict__ in, T* __restrict__ out, long long rows, long long n,
                   int group, bool vec) {
  using A = rows::Acc<T>;
  constexpr int N = rows::kVec<T>;
  const rows::RowPos p = rows::row_pos(rows, group);
  const T* x = in + (p.active ? p.row : 0) * n;
  const long long step = static_cast<long long>(group) * N;
  const long long end = p.active ? n : 0;
  A m = -rows::infinity<A>(), s = 0;
  for (long long e = p.lane * N; e < end; e += step) {
    const Vec<T, N> xv = rows::load_part<N>(x, n, e, vec, rows::zero<T>());
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (e + k >= n) break;
      const A f = rows::to_acc<A>(xv.v[k]);
      if (f > m) {
        s = s * rows::exp_diff<T>(m, f) + A(1);
        m = f;
      } else if (f != -rows::infinity<A>()) {
        s += rows::exp_diff<T>(f, m);  // NaN stays NaN
      }
    }
  }
  const A row_max = rows::group_max(m, group);
  // Each thread's sum rescaled to the row's maximum (0 for a thread that saw only -inf).
  s = rows::group_sum(s == A(0) ? A(0) : s * rows::exp_diff<T>(m, row_max), group);
  if (!p.active) return;
  // A row of -inf only: exp(-inf - -inf), NaN, as the formula.
  if (row_max == -rows::infinity<A>()) s = row_max - row_max;
  const A inv = A(1) / s;
  T* y = out + p.row * n;
  for (long long e = p.lane * N; e < end; e += step) {
    const Vec<T, N> xv = rows::load_part<N>(x, n, e, vec, rows::zero<T>());
    Vec<T, N> o;
#pragma unroll
    for (int k = 0; k < N; ++k)
      o.v[k] = rows::from_acc<T>(rows::exp_diff<T>(rows::to_acc<A>(xv.v[k]), row_max) * inv);
    rows::store_part<N>(y, n, e, vec, o);
  }
}

template <typename T, int VPT>
__global__ void __launch_bounds__(1024)
    softmax_bwd(const T* __restrict__ yin, const T* __restrict__ gin, T* __restrict__ out,
                long long rows, long long n, int group) {
  constexpr int N = rows::kVec<T>;
  const rows::RowPos p = rows::row_pos(rows, group);
  const long long base = (p.active ? p.row : 0) * n, len = p.active ? n : 0;
  Vec<T, N> yv[VPT], gv[VPT];
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const long long e = rows::vec_elem(v, group, p.lane, N);
    yv[v] = rows::load_full<N>(yin + base, len, e);
    gv[v] = rows::load_full<N>(gin + base, len, e);
  }
  softmax_detail::softmax_vjp_row(yv, gv, out + base, n, group, p.lane, p.active);
}

template <typename T>
__global__ void __launch_bounds__(1024)
    softmax_bwd_looped(const T* __restrict__ yin, const T* __restrict__ gin, T* __restrict__ out,
                       long long rows, long long n, int group, bool vec) {
  using A = rows::Acc<T>;
  constexpr int N = rows::kVec<T>;
  const rows::RowPos p = rows::row_pos(rows, group);
  const T* y = yin + (p.active ? p.row : 0) * n;
  const T* g = gin + (p.active ? p.row : 0) * n;
  const long long step = static_cast<long long>(group) * N;
  const long long end = p.active ? n : 0;
  A dot = 0;
  for (long long e = p.lane * N; e < end; e += step) {
    const Vec<T, N> yv = rows::load_part<N>(y, n, e, vec, rows::zero<T>());
    const Vec<T, N> gv = rows::load_part<N>(g, n, e, vec, rows::zero<T>());
#pragma unroll
    for (int k = 0; k < N; ++k) dot += rows::to_acc<A>(yv.v[k]) * rows::to_acc<A>(gv.v[k]);
  }
  dot = rows::group_sum(dot, group);
  if (!p.active) return;
  T* dx = out + p.row * n;
  for (long long e = p.lane * N; e < end; e += step) {
    const Vec<T, N> yv = rows::load_part<N>(y, n, e, vec, rows::zero<T>());
    const Vec<T, N> gv = rows::load_part<N>(g, n, e, vec, rows::zero<T>());
    Vec<T, N> o;
#pragma unroll
    for (int k = 0; k < N; ++k)
      o.v[k] = rows::from_acc<T>(rows::to_acc<A>(yv.v[k]) * (rows::to_acc<A>(gv.v[k]) - dot));
    rows::store_part<N>(dx, n, e, vec, o);
  }
}

}  // namespace kiln
