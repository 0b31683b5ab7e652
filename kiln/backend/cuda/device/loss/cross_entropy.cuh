// cross_entropy on the GPU (backend/cuda/fast_loss.cpp).
//
// Forward: a group of threads per row of logits (device/norm/rows.cuh) computes the row's
// logsumexp in one read, with the row in registers (ce_fwd) or with a running maximum and
// rescaled sum per thread (ce_fwd_looped, Milakov and Gimelshein 2018); the loss is
// logsumexp - logits[target]. Loss and logsumexp are float (double for double).
// Backward: elementwise given the saved logsumexp, (exp(x - lse) - one_hot) * g, one read
// and one write of the logits.
#pragma once

#include "kiln/backend/cuda/device/norm/rows.cuh"

namespace kiln {

namespace ce_detail {

/** The class index of target t in [0, n), -1 when out of range (negatives from the end). */
__device__ inline long long class_index(int t, long long n) {
  const long long i = t < 0 ? t + n : t;
  return i >= 0 && i < n ? i : -1;
}

/**
 * The loss and logsumexp of a row held as VPT vectors per thread of a group; `row` points at
 * the row's logits (global or shared memory) for the target's. Every thread of the block
 * calls it.
 */
template <typename T, int VPT, int N>
__device__ inline void ce_row(const Vec<T, N> (&xv)[VPT], const T* row, int target,
                              rows::Acc<T>* loss, rows::Acc<T>* lse, long long n, int group,
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
  // Shifting by an infinite maximum would make x - m NaN: then no shift (as the CPU).
  const A shift = m == rows::infinity<A>() || m == -rows::infinity<A>() ? A(0) : m;
  A s = 0;
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const long long e = rows::vec_elem(v, group, lane, N);
    if (active && e < n)
#pragma unroll
      for (int k = 0; k < N; ++k) s += rows::exp_diff<T>(rows::to_acc<A>(xv[v].v[k]), shift);
  }
  s = rows::group_sum(s, group);
  if (!active || lane != 0) return;
  const A l = shift + rows::fast_log(s);
  const long long k = class_index(target, n);
  *lse = l;
  *loss = k < 0 ? __longlong_as_double(0x7ff8000000000000ll) : l - rows::to_acc<A>(row[k]);
}

}  // namespace ce_detail

template <typename T, int VPT>
__global__ void __launch_bounds__(1024)
    ce_fwd(const T* __restrict__ logits, const int* __restrict__ targets, rows::Acc<T>* loss,
           rows::Acc<T>* lse, long long rows, long long n, int group) {
  constexpr int N = rows::kVec<T>;
  const rows::RowPos p = rows::row_pos(rows, group);
  const long long row = p.active ? p.row : 0;
  const T* x = logits + row * n;
  Vec<T, N> xv[VPT];
#pragma unroll
  for (int v = 0; v < VPT; ++v)
    xv[v] = rows::load_full<N>(x, p.active ? n : 0, rows::vec_elem(v, group, p.lane, N));
  ce_detail::ce_row(xv, x, p.active && p.lane == 0 ? targets[row] : 0, loss + row, lse + row, n,
                    group, p.lane, p.active);
}

template <typename T>
__global__ void __launch_bounds__(1024)
    ce_fwd_looped(const T* __restrict__ logits, const int* __restrict__ targets, rows::Acc<T>* loss,
                  rows::Acc<T>* lse, long long rows, long long n, int group, bool vec) {
  using A = rows::Acc<T>;
  constexpr int N = rows::kVec<T>;
  const rows::RowPos p = rows::row_pos(rows, group);
  const T* x = logits + (p.active ? p.row : 0) * n;
  const long long step = static_cast<long long>(group) * N;
  const long long end = p.active ? n : 0;
  // The exact maximum first (one read), then the sum (a second read, mostly from L2): a
  // running rescaled sum would differ from the CPU's for infinite logits.
  A m = -rows::infinity<A>();
  for (long long e = p.lane * N; e < end; e += step) {
    const Vec<T, N> xv = rows::load_part<N>(x, n, e, vec, rows::zero<T>());
#pragma unroll
    for (int k = 0; k < N; ++k)
      if (e + k < n) m = rows::nan_max(m, rows::to_acc<A>(xv.v[k]));
  }
  m = rows::group_max(m, group);
  const A shift = m == rows::infinity<A>() || m == -rows::infinity<A>() ? A(0) : m;
  A s = 0;
  for (long long e = p.lane * N; e < end; e += step) {
    const Vec<T, N> xv = rows::load_part<N>(x, n, e, vec, rows::zero<T>());
#pragma unroll
    for (int k = 0; k < N; ++k)
      if (e + k < n) s += rows::exp_diff<T>(rows::to_acc<A>(xv.v[k]), shift);
  }
  s = rows::group_sum(s, group);
  if (!p.active || p.lane != 0) return;
  const A l = shift + rows::fast_log(s);
  const long long k = ce_detail::class_index(targets[p.row], n);
  lse[p.row] = l;
  loss[p.row] = k < 0 ? __longlong_as_double(0x7ff8000000000000ll) : l - rows::to_acc<A>(x[k]);
}

/** dx = (exp(x - lse) - one_hot(target)) * g: a group per row, N elements per thread and
 * step; g and lse in the loss dtype. */
template <typename T>
__global__ void __launch_bounds__(1024)
    ce_bwd(const T* __restrict__ logits, const int* __restrict__ targets,
           const rows::Acc<T>* __restrict__ lse, const rows::Acc<T>* __restrict__ g,
           T* __restrict__ dx, long long rows, long long n, int group, bool vec) {
  using A = rows::Acc<T>;
  constexpr int N = rows::kVec<T>;
  const rows::RowPos p = rows::row_pos(rows, group);
  if (!p.active) return;
  const T* x = logits + p.row * n;
  T* y = dx + p.row * n;
  const long long k = ce_detail::class_index(targets[p.row], n);
  const A l = lse[p.row];
  const A gr = k < 0 ? static_cast<A>(__longlong_as_double(0x7ff8000000000000ll)) : g[p.row];
  const long long step = static_cast<long long>(group) * N;
  auto grad = [&](const Vec<T, N>& xv, long long e) {
    Vec<T, N> o;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      A d = rows::exp_diff<T>(rows::to_acc<A>(xv.v[j]), l);
      if (e + j == k) d -= A(1);
      o.v[j] = rows::from_acc<T>(d * gr);
    }
    return o;
  };
  if (!vec) {
    for (long long e = p.lane * N; e < n; e += step)
      rows::store_part<N>(y, n, e, false,
                          grad(rows::load_part<N>(x, n, e, false, rows::zero<T>()), e));
    return;
  }
  constexpr int U = 4;  // vectors in flight per thread
  for (long long e0 = p.lane * N; e0 < n; e0 += U * step) {
    Vec<T, N> xv[U];
#pragma unroll
    for (int u = 0; u < U; ++u) xv[u] = rows::load_full<N>(x, n, e0 + u * step);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (e0 + u * step < n) store_vec<N>(y + e0 + u * step, grad(xv[u], e0 + u * step));
  }
}

}  // namespace kiln
