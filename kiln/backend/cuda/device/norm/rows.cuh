// Row kernels' building blocks (norms, softmax, cross entropy): a row of the last axis is
// owned by a group of `group` threads (a warp, or several warps of one block, a power of
// two up to 1024), which reads it with 16-byte vector loads, keeps it in registers (VPT
// vectors per thread) when it fits, and reduces over it with warp shuffles and shared memory.
//
// Thread `lane` of a group owns vectors lane, lane + group, lane + 2 * group, ...: the
// group's loads are coalesced, and a thread owns the same columns in every row (the
// parameter gradients of the norms accumulate per thread across rows).
#pragma once

#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln::rows {

/** The accumulation type of T: double for double, else float. */
template <typename T>
struct AccOf {
  using type = float;
};
template <>
struct AccOf<double> {
  using type = double;
};
template <typename T>
using Acc = typename AccOf<T>::type;

/** Elements per 16-byte vector. */
template <typename T>
inline constexpr int kVec = 16 / sizeof(T);

template <typename A>
__device__ inline A to_acc(float16 x) {
  return static_cast<A>(static_cast<float>(x));
}
template <typename A>
__device__ inline A to_acc(bfloat16 x) {
  return static_cast<A>(static_cast<float>(x));
}
template <typename A>
__device__ inline A to_acc(float x) {
  return static_cast<A>(x);
}
template <typename A>
__device__ inline A to_acc(double x) {
  return static_cast<A>(x);
}

template <typename T, typename A>
__device__ inline T from_acc(A x) {
  if constexpr (is_half_v<T>)
    return T(static_cast<float>(x));
  else
    return static_cast<T>(x);
}

template <typename A>
__device__ inline A fast_exp(A x) {
  if constexpr (is_same_v<A, double>)
    return exp(x);
  else
    return expf(x);
}

template <typename A>
__device__ inline A fast_log(A x) {
  if constexpr (is_same_v<A, double>)
    return log(x);
  else
    return logf(x);
}

template <typename A>
__device__ inline A rsqrt_acc(A x) {
  if constexpr (is_same_v<A, double>)
    return rsqrt(x);
  else
    return rsqrtf(x);
}

template <typename A>
__device__ inline A infinity() {
  if constexpr (is_same_v<A, double>)
    return __longlong_as_double(0x7ff0000000000000ll);
  else
    return __int_as_float(0x7f800000);
}

/** max(a, b), NaN if either is NaN (as the CPU's softmax). */
template <typename A>
__device__ inline A nan_max(A a, A b) {
  return (a > b || a != a) ? a : b;
}

template <typename A>
__device__ inline A warp_sum(A v) {
#pragma unroll
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

template <typename A>
__device__ inline A warp_max(A v) {
#pragma unroll
  for (int m = 16; m > 0; m /= 2) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}

/**
 * The sums (or NaN-propagating maxima, with MAX) of the K values `v` over each group of
 * `group` consecutive threads, in every thread of the group. Every thread of the block
 * calls it (inactive groups too), with the same `group`.
 */
template <bool MAX, int K, typename A>
__device__ inline void group_reduce(A (&v)[K], int group) {
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = MAX ? warp_max(v[k]) : warp_sum(v[k]);
  if (group <= 32) return;
  __shared__ A slots[K][32];
  const int warp = threadIdx.x / 32;
  if ((threadIdx.x & 31) == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) slots[k][warp] = v[k];
  }
  __syncthreads();
  const int first = (threadIdx.x / group) * (group / 32);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    A r = slots[k][first];
    for (int i = 1; i < group / 32; ++i)
      r = MAX ? nan_max(r, slots[k][first + i]) : r + slots[k][first + i];
    v[k] = r;
  }
  __syncthreads();  // the slots are reused by the next reduction
}

template <typename A>
__device__ inline A group_sum(A v, int group) {
  A t[1] = {v};
  group_reduce<false>(t, group);
  return t[0];
}
template <typename A>
__device__ inline A group_max(A v, int group) {
  A t[1] = {v};
  group_reduce<true>(t, group);
  return t[0];
}

template <typename T>
__device__ inline T zero() {
  if constexpr (is_half_v<T>)
    return T(0.0f);
  else
    return T(0);
}

template <typename T>
__device__ inline T one() {
  if constexpr (is_half_v<T>)
    return T(1.0f);
  else
    return T(1);
}

/** Where a thread's group and lane are, and which row the group owns. */
struct RowPos {
  long long row;
  int lane;
  bool active;  // row < rows: inactive groups still take part in the block's reductions
};

__device__ inline RowPos row_pos(long long rows, int group) {
  const long long row =
      static_cast<long long>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  return {row, static_cast<int>(threadIdx.x % group), row < rows};
}

/**
 * Loads vector `v` of a thread's share of a row of n elements (elements (v * group + lane) * N
 * ..): a 16-byte load when `vec` (rows start 16-byte aligned and n is a multiple of N) and the
 * vector is inside the row, else element by element; elements past n are `fill`.
 */
template <int N, typename T>
__device__ inline Vec<T, N> load_part(const T* row, long long n, long long e, bool vec, T fill) {
  Vec<T, N> x;
  if (vec && e + N <= n) return load_vec<N>(row + e);
#pragma unroll
  for (int k = 0; k < N; ++k) x.v[k] = e + k < n ? row[e + k] : fill;
  return x;
}

/** Loads vector `e` (first element) of an aligned row whose length n is a multiple of N:
 * zeros past the row. */
template <int N, typename T>
__device__ inline Vec<T, N> load_full(const T* row, long long n, long long e) {
  if (e < n) return load_vec<N>(row + e);
  Vec<T, N> x;
#pragma unroll
  for (int k = 0; k < N; ++k) x.v[k] = zero<T>();
  return x;
}

/** Writes a row held as VPT vectors of N per lane (load_full's layout, n a multiple of N):
 * element k of vector v is f(v, k). */
template <int VPT, int N, typename T, typename F>
__device__ inline void store_full(T* row, long long n, int group, int lane, F f) {
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const long long e = (static_cast<long long>(v) * group + lane) * N;
    if (e >= n) break;
    Vec<T, N> o;
#pragma unroll
    for (int k = 0; k < N; ++k) o.v[k] = f(v, k);
    store_vec<N>(row + e, o);
  }
}

template <int N, typename T>
__device__ inline void store_part(T* row, long long n, long long e, bool vec, const Vec<T, N>& y) {
  if (vec && e + N <= n) {
    store_vec<N>(row + e, y);
    return;
  }
#pragma unroll
  for (int k = 0; k < N; ++k)
    if (e + k < n) row[e + k] = y.v[k];
}

}  // namespace kiln::rows
