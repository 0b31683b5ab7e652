// Row kernels' building blocks (norms, softmax, cross entropy): a row of the last axis is
// owned by a group of `group` threads (a warp, or several warps of one block, a power of
// two up to 1024), which reads it with 16-byte vector loads, keeps it in registers (VPT
// vectors per thread) when it fits, and reduces over it with warp shuffles and shared memory.
//
// Thread `lane` of a group owns vectors lane, lane + group, lane + 2 * group, ...: the
// group's loads are coalesced, and a thread owns the same columns in every row (the
// parameter gradients of the norms accumulate per thread across rows).
//
// Staged kernels (RowRing, staged_tiles) are persistent: a block walks tiles of R rows and
// copies each tile into shared memory with cp.async kStages - 1 tiles ahead of the one it
// computes on, so the next tiles' bytes are in flight while it reduces over the current one
// (a block that loads into registers waits for its loads between rows).
#pragma once

#include "kiln/backend/cuda/device/async_copy.cuh"
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

/** max(a, b), NaN if either is NaN (as the CPU's softmax): one instruction for float on
 * sm_80 and later. */
template <typename A>
__device__ inline A nan_max(A a, A b) {
#if __CUDA_ARCH__ >= 800
  if constexpr (is_same_v<A, float>) {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
#endif
  return (a > b || a != a) ? a : b;
}

/**
 * exp(x - m) in the accumulation type of rows of T: for 16-bit T, whose results round to 8
 * or 11 bits, ex2.approx of (x - m) log2(e) (three instructions; relative error about
 * 2^-22 + |x - m| 2^-24, small where the terms of a softmax sum are large; results below
 * 2^-126 flush to zero); expf or exp otherwise.
 */
template <typename T, typename A>
__device__ inline A exp_diff(A x, A m) {
  if constexpr (is_half_v<T>) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"((x - m) * 1.4426950408889634f));
    return r;
  } else {
    return fast_exp(x - m);
  }
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
 * calls it (inactive groups too), with the same `group`. Across warps: each warp's result
 * goes through shared memory, and every warp of a group combines its group's G = group / 32
 * results with log2(G) shuffles (lane l starts from warp l % G's).
 */
template <bool MAX, int K, typename A>
__device__ inline void group_reduce(A (&v)[K], int group) {
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = MAX ? warp_max(v[k]) : warp_sum(v[k]);
  if (group <= 32) return;
  __shared__ A slots[K][32];
  const int lane = threadIdx.x & 31;
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) slots[k][threadIdx.x / 32] = v[k];
  }
  __syncthreads();
  const int warps = group / 32;
  const int first = (threadIdx.x / group) * warps;
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = slots[k][first + (lane & (warps - 1))];
  for (int m = warps / 2; m > 0; m /= 2) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const A o = __shfl_xor_sync(0xffffffffu, v[k], m);
      v[k] = MAX ? nan_max(v[k], o) : v[k] + o;
    }
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

/** The first element of vector v of a thread's share of a row (lane `lane` of a group of
 * `group` threads, n_vec elements per vector). */
__device__ inline long long vec_elem(int v, int group, int lane, int n_vec) {
  return (static_cast<long long>(v) * group + lane) * n_vec;
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
    const long long e = vec_elem(v, group, lane, N);
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

/**
 * Makes the compiler forget the values of a register array (no instruction is emitted): a
 * loop that calls it on loop-invariant 16-bit vectors converts them to float again in every
 * iteration instead of keeping float copies live across the loop in twice the registers.
 */
template <typename T, int N, int VPT>
__device__ inline void opaque(Vec<T, N> (&v)[VPT]) {
  static_assert(sizeof(Vec<T, N>) % 4 == 0);
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    unsigned* words = reinterpret_cast<unsigned*>(&v[i]);
#pragma unroll
    for (int j = 0; j < static_cast<int>(sizeof(Vec<T, N>) / 4); ++j)
      asm volatile("" : "+r"(words[j]));
  }
}

// ---------------------------------------------------------------- staged rows

/** Slots of a RowRing: tiles in flight while one is computed on. */
constexpr int kStages = 3;

/** The block's dynamic shared memory, 16-byte aligned. */
template <typename T>
__device__ inline T* dynamic_smem() {
  extern __shared__ uint4 kiln_rows_smem[];
  return reinterpret_cast<T*>(kiln_rows_smem);
}

/**
 * kStages slots of shared memory, each holding a tile of R consecutive rows of n elements of
 * the row-major array `src` (rows 16-byte aligned, n a multiple of kVec<T>): tile row r of
 * slot s starts at slot(s) + r * n.
 */
template <typename T>
struct RowRing {
  T* smem;
  const T* src;
  long long rows;
  long long n;
  int R;

  __device__ T* slot(int stage) const { return smem + static_cast<long long>(stage) * R * n; }

  /** Every thread: starts copying tile t (nothing past the last row) into `stage` and
   * commits one group of copies. */
  __device__ void fill(int stage, long long t) const {
    constexpr int N = kVec<T>;
    const long long r0 = t * R;
    if (r0 < rows) {
      const long long chunks = ((rows - r0 < R ? rows - r0 : R) * n) / N;
      const T* from = src + r0 * n;
      T* to = slot(stage);
      for (long long c = threadIdx.x; c < chunks; c += blockDim.x)
        cp_async_16(to + c * N, from + c * N);
    }
    cp_async_commit();
  }
};

/**
 * Calls body(stage, t) for tiles t = blockIdx.x, blockIdx.x + gridDim.x, ... with tile t in
 * slot `stage` of the ring (visible to every thread). Every thread of the block calls it;
 * body may synchronize the block and must finish reading the slot before it returns.
 */
template <typename T, typename F>
__device__ inline void staged_tiles(const RowRing<T>& ring, F body) {
  const long long tiles = (ring.rows + ring.R - 1) / ring.R;
  const long long step = gridDim.x;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) ring.fill(s, blockIdx.x + s * step);
  int stage = 0;
  for (long long t = blockIdx.x; t < tiles; t += step) {
    cp_async_wait<kStages - 2>();  // tile t's group: one group is committed per tile
    __syncthreads();               // ... and every thread's copies are visible; the slot
                                   // refilled next was last read before this barrier
    ring.fill(stage == 0 ? kStages - 1 : stage - 1, t + (kStages - 1) * step);
    body(stage, t);
    stage = stage + 1 == kStages ? 0 : stage + 1;
  }
}

}  // namespace kiln::rows
