// The decode forward (backend/cuda/fast_attention.cpp): few query rows per key/value head
// (G = R * Lq <= 8: one new token of each of the R heads sharing a key/value head, or a few)
// against a long key range, bound by reading k and v once. Split-key ("flash-decoding"):
// a block owns one key/value head of one batch element and one key range; combine_splits
// merges the ranges.
//
// Inside a block nothing goes through shared memory until the end: a key is read by
// LPK = D / VEC lanes with one 16-byte load each (k and v), so a warp reads 32 / LPK keys
// per step and U steps per iteration (U * 32 bytes of k and v in flight per lane). The
// lanes of a key reduce its G scores with shuffles, and each lane group keeps its own online
// softmax (running max, sum and its VEC output features per row; FlashAttention's, Dao et al.
// 2022) over the keys it reads, so no cross-group exchange happens in the loop. At the end
// the 4 warps x 32 / LPK group states are merged in shared memory.
#pragma once

#include "kiln/backend/cuda/device/attention/common.cuh"

namespace kiln::attn {

template <typename T, int D>
struct DecodeShape {
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));  // features per 16-byte load
  static constexpr int kLpk = D / kVec;                          // lanes per key
  static constexpr int kKps = 32 / kLpk;                         // keys per warp step
  static constexpr int kWarps = 4;
  static constexpr int kStates = kWarps * kKps;  // online-softmax states per block
};

/** Shared memory of decode_fwd: per state and row, the output features, max and sum. */
template <typename T, int D, int G>
__host__ __device__ constexpr int decode_smem() {
  return DecodeShape<T, D>::kStates * G * (D + 2) * 4;
}

/**
 * Merges a block's online-softmax states and writes its rows (G = R * Lq of them): state s of
 * row g sits at dsm + (s * slots + g) * (D + 2): its unnormalized output features, then its
 * maximum (natural units) and sum. With a.splits > 1 writes po / pml for combine_splits; else
 * the attention and lse. A sink joins the first split once.
 */
template <typename T, int D>
__device__ inline void decode_merge(const float* dsm, int states, int slots, long long b,
                                    long long hk, const T* __restrict__ sinks, T* __restrict__ out,
                                    float* __restrict__ lse, float* __restrict__ po,
                                    float* __restrict__ pml, const Args& a) {
  const int rows_here = a.R * a.Lq;
  for (int e = threadIdx.x; e < rows_here * D; e += blockDim.x) {
    const int g = e / D, d = e % D;
    const long long h = hk * a.R + g / a.Lq, i = g % a.Lq;
    const bool sink = a.has_sinks && blockIdx.y == 0;
    float M = sink ? static_cast<float>(sinks[h]) : -rows::infinity<float>();
    for (int s = 0; s < states; ++s) M = fmaxf(M, dsm[(s * slots + g) * (D + 2) + D]);
    const float shift = M == -rows::infinity<float>() ? 0.0f : M;
    float L = sink ? rows::fast_exp(static_cast<float>(sinks[h]) - shift) : 0.0f;
    float O = 0.0f;
    for (int s = 0; s < states; ++s) {
      const float* st = dsm + (s * slots + g) * (D + 2);
      const float wgt = st[D + 1] > 0.0f ? rows::fast_exp(st[D] - shift) : 0.0f;
      L += st[D + 1] * wgt;
      O += st[d] * wgt;
    }
    const long long row = (b * a.Hq + h) * a.Lq + i;
    if (a.splits > 1) {
      const long long prow = static_cast<long long>(blockIdx.y) * a.B * a.Hq * a.Lq + row;
      po[prow * D + d] = O;
      if (d == 0) {
        pml[2 * prow] = M;
        pml[2 * prow + 1] = L;
      }
    } else {
      const float inv = a.Lk == 0 ? 0.0f : 1.0f / L;
      out[row * D + d] = rows::from_acc<T>(O * inv);
      if (d == 0) lse[row] = M + rows::fast_log(L);
    }
  }
}

/**
 * Grid: x = B * Hk, y = splits; 128 threads. Keys [y * split_keys, ...) of head (b, hk) for
 * its G = R * Lq rows; no mask or a causal one (Lk >= Lq), D == Dv, rows 16-byte aligned.
 * With splits > 1 writes po / pml as simple_fwd does; else the attention and lse.
 */
template <typename T, int D, int G>
__global__ void __launch_bounds__(128)
    decode_fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
               const T* __restrict__ sinks, T* __restrict__ out, float* __restrict__ lse,
               float* __restrict__ po, float* __restrict__ pml, const __grid_constant__ Args a) {
  using S = DecodeShape<T, D>;
  constexpr int VEC = S::kVec, LPK = S::kLpk, KPS = S::kKps;
  constexpr int U = G <= 4 ? 4 : 2;  // steps per iteration
  extern __shared__ float dsm[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int grp = lane / LPK, sub = lane % LPK;  // key group of the lane, its slice of D
  const long long b = blockIdx.x / a.Hk, hk = blockIdx.x % a.Hk;
  const int rows_here = a.R * a.Lq;

  // This lane's slice of the G query rows, scaled, in float.
  float qf[G][VEC];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const int gg = g < rows_here ? g : 0;
    const long long h = hk * a.R + gg / a.Lq, i = gg % a.Lq;
    const Vec<T, VEC> qv = load_vec<VEC>(q + b * a.q_b + h * a.q_h + i * a.q_l + sub * VEC);
#pragma unroll
    for (int f = 0; f < VEC; ++f)
      qf[g][f] = g < rows_here ? static_cast<float>(qv.v[f]) * a.scale : 0.0f;
  }
  float m[G], l[G], o[G][VEC];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -rows::infinity<float>();
    l[g] = 0.0f;
#pragma unroll
    for (int f = 0; f < VEC; ++f) o[g][f] = 0.0f;
  }

  const long long j0 = static_cast<long long>(blockIdx.y) * a.split_keys;
  const long long j1 = j0 + a.split_keys < a.Lk ? j0 + a.split_keys : a.Lk;
  const T* kb = k + b * a.k_b + hk * a.k_h + sub * VEC;
  const T* vb = v + b * a.v_b + hk * a.v_h + sub * VEC;
  const long long off = causal_offset(a);
  constexpr int kPerIter = S::kWarps * KPS * U;  // keys a block reads per iteration
  // The trip count is the warp's (its shuffles need every lane): a group past j1 reads
  // clamped keys and masks them.
  for (long long wb = j0 + warp * KPS * U; wb < j1; wb += kPerIter) {
    const long long jb = wb + grp * U;  // U consecutive keys of this lane group
    Vec<T, VEC> kv[U], vv[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long j = jb + u < j1 ? jb + u : j1 - 1;
      kv[u] = load_vec<VEC>(kb + j * a.k_l);
      vv[u] = load_vec<VEC>(vb + j * a.v_l);
    }
    float sc[U][G];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float acc = 0.0f;
#pragma unroll
        for (int f = 0; f < VEC; ++f) acc = fmaf(qf[g][f], static_cast<float>(kv[u].v[f]), acc);
        sc[u][g] = acc;
      }
#pragma unroll
    for (int w = LPK / 2; w > 0; w /= 2)
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int g = 0; g < G; ++g) sc[u][g] += __shfl_xor_sync(0xffffffffu, sc[u][g], w);
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const long long i = (g < rows_here ? g : 0) % a.Lq;
      float mx = m[g];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const long long j = jb + u;
        if (j >= j1 || (a.mask == kCausal && j > i + off)) sc[u][g] = -rows::infinity<float>();
        mx = fmaxf(mx, sc[u][g]);
      }
      if (mx == -rows::infinity<float>()) continue;  // nothing seen yet
      const float alpha = rows::fast_exp(m[g] - mx);
      l[g] *= alpha;
#pragma unroll
      for (int f = 0; f < VEC; ++f) o[g][f] *= alpha;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const float p = rows::fast_exp(sc[u][g] - mx);
        l[g] += p;
#pragma unroll
        for (int f = 0; f < VEC; ++f) o[g][f] = fmaf(p, static_cast<float>(vv[u].v[f]), o[g][f]);
      }
      m[g] = mx;
    }
  }

  // Merge the block's states: each lane writes its slice, then decode_merge.
  const int state = warp * KPS + grp;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    float* st = dsm + (state * G + g) * (D + 2);
#pragma unroll
    for (int f = 0; f < VEC; ++f) st[sub * VEC + f] = o[g][f];
    if (sub == 0) {
      st[D] = m[g];
      st[D + 1] = l[g];
    }
  }
  __syncthreads();
  decode_merge<T, D>(dsm, S::kStates, G, b, hk, sinks, out, lse, po, pml, a);
}

}  // namespace kiln::attn
