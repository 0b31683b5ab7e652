// Shared pieces of the attention kernels (simple.cuh, flash_fwd.cuh): the problem's
// shapes and strides, masking, and the combine pass of split-key launches.
#pragma once

#include "kiln/backend/cuda/device/norm/rows.cuh"

namespace kiln::attn {

/** Mask kinds (kiln::fast::MaskKind). */
enum Mask : int { kNone = 0, kCausal = 1, kBool = 2, kAdditive = 3 };

/**
 * One attention problem. Query head h reads key/value head h / R. Strides are in elements;
 * the feature stride of q, k, v is 1 and the output is row-contiguous (B, Hq, Lq, Dv).
 * Rows of a key/value group are numbered r = (h % R) * Lq + i.
 */
struct Args {
  long long q_b, q_h, q_l;
  long long k_b, k_h, k_l;
  long long v_b, v_h, v_l;
  long long m_b, m_h, m_i, m_j;  // the mask's (broadcast) strides
  int B, Hq, Hk, R, Lq, Lk, D, Dv;
  float scale;
  int mask;
  bool has_sinks;
  int splits;            // key ranges of split-key launches (1: none)
  long long split_keys;  // keys per split (a multiple of the key tile)
  bool kv_vec;           // k and v rows 16-byte aligned, whole vectors: vector loads
};

/** The lowest finite value of A: the score of a key hidden by a bool or causal mask, so
 * that a row that sees no key averages every value (as MLX's composite does). */
template <typename A>
__device__ inline A lowest() {
  if constexpr (is_same_v<A, double>)
    return -1.7976931348623157e308;
  else
    return -3.402823466e38f;
}

/** The causal offset: query i sees keys j <= i + Lk - Lq. */
__device__ inline long long causal_offset(const Args& a) {
  return static_cast<long long>(a.Lk) - a.Lq;
}

/**
 * Applies the mask to the scaled score s of query i, key j of head h, batch b. Returns
 * whether a bool or causal mask hid it (its gradient is zero).
 */
template <typename A, typename T>
__device__ inline bool apply_mask(const Args& a, const void* mask, long long b, long long h,
                                  long long i, long long j, A& s) {
  if (a.mask == kCausal) {
    if (j > i + causal_offset(a)) {
      s = lowest<A>();
      return true;
    }
  } else if (a.mask == kBool) {
    const bool* m = static_cast<const bool*>(mask);
    if (!m[b * a.m_b + h * a.m_h + i * a.m_i + j * a.m_j]) {
      s = lowest<A>();
      return true;
    }
  } else if (a.mask == kAdditive) {
    const T* m = static_cast<const T*>(mask);
    s += rows::to_acc<A>(m[b * a.m_b + h * a.m_h + i * a.m_i + j * a.m_j]);
  }
  return false;
}

/** The exclusive end of the keys rows [i0, i1] of one head need under a causal mask (all
 * keys when some row sees none: its softmax is uniform over every key). */
__device__ inline long long causal_key_end(const Args& a, long long i0, long long i1) {
  if (a.mask != kCausal) return a.Lk;
  const long long off = causal_offset(a);
  if (i0 + off < 0) return a.Lk;
  const long long e = i1 + off + 1;
  return e < a.Lk ? e : a.Lk;
}

/**
 * Combines the partial results of split-key launches: row (b, h, i) of split s has an
 * unnormalized output po[(s * rows + row) * Dv ..], and its running maximum and sum in
 * pml[2 * (s * rows + row)]. Writes the attention and the logsumexp. One block of
 * kCombineThreads per row: the splits' maxima and sums are reduced across the block, then
 * each thread sums one feature over a share of the splits, several splits' loads in flight
 * (one warp walking 128 splits in turn took most of a long-context decode step).
 */
constexpr int kCombineThreads = 256;

template <typename T, typename A>
__global__ void __launch_bounds__(kCombineThreads)
    combine_splits(const A* __restrict__ po, const A* __restrict__ pml, T* __restrict__ out,
                   A* __restrict__ lse, long long rows, int splits, int Dv, int Lk) {
  constexpr int kWarps = kCombineThreads / 32;
  __shared__ A red[kCombineThreads];
  const long long row = blockIdx.x;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const A* ml = pml + 2 * row;  // split s: its maximum at ml[s * mstride], its sum next
  const long long mstride = 2 * rows;

  A M = -rows::infinity<A>();
  for (int s = t; s < splits; s += kCombineThreads) M = rows::nan_max(M, ml[s * mstride]);
  M = rows::warp_max(M);
  if (lane == 0) red[warp] = M;
  __syncthreads();
  M = red[0];
  for (int w = 1; w < kWarps; ++w) M = rows::nan_max(M, red[w]);
  __syncthreads();
  const A shift = M == -rows::infinity<A>() ? A(0) : M;
  A L = 0;
  for (int s = t; s < splits; s += kCombineThreads)
    L += ml[s * mstride + 1] * rows::fast_exp(ml[s * mstride] - shift);
  L = rows::warp_sum(L);
  if (lane == 0) red[warp] = L;
  __syncthreads();
  L = 0;
  for (int w = 0; w < kWarps; ++w) L += red[w];
  const A inv = Lk == 0 ? A(0) : A(1) / L;

  // Threads as [groups][span]: thread (g, d) sums feature d over splits g, g + groups, ...;
  // with Dv < kCombineThreads every thread makes exactly one pass (the barriers below).
  const int span = Dv < kCombineThreads ? Dv : kCombineThreads;
  const int groups = kCombineThreads / span;
  const int g = t / span, d0 = t % span;
  for (int d = d0; d < Dv; d += span) {
    A o = 0;
    if (g < groups) {
      const A* p = po + row * Dv + d;
      const long long pstride = rows * Dv;
#pragma unroll 8
      for (int s = g; s < splits; s += groups)
        o += p[s * pstride] * rows::fast_exp(ml[s * mstride] - shift);
    }
    if (groups > 1) {
      __syncthreads();
      red[t] = o;
      __syncthreads();
      if (g == 0)
        for (int k = 1; k < groups; ++k) o += red[k * span + d0];
    }
    if (g == 0) out[row * Dv + d] = rows::from_acc<T>(o * inv);
  }
  if (t == 0) lse[row] = M + rows::fast_log(L);
}

}  // namespace kiln::attn
