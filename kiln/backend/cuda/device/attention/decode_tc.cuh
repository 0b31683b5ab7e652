// The decode forward on tensor cores (backend/cuda/fast_attention.cpp), bfloat16 and float16
// on sm_80 and later: up to 16 query rows per key/value head (G = R * Lq: one new token of
// each of the R heads sharing a key/value head, or a few) against a long key range, bound by
// reading k and v once. Split-key ("flash-decoding") as decode_fwd: a block owns one
// key/value head of one batch element and one key range; combine_splits merges the ranges.
//
// Each warp walks its own 16-key tiles (tiles w, w + 4, ... of the block's range) through a
// private cp.async ring in shared memory, so no block barrier runs in the loop. The scores
// are S^T = K Q^T on mma.m16n8k16 (keys as M, the query rows as N in one or two tiles of 8,
// Q^T held in registers); movmatrix turns the probabilities into the B operand of
// O^T = V^T P^T (V^T through ldmatrix.trans). Every thread's accumulators belong to its own
// query rows (two per tile), so the online softmax (FlashAttention-2, Dao 2023) needs
// shuffles only for the tile maximum. Counted from the code, the FMA kernel of decode.cuh
// issues about 600 instructions per lane for each 128 bytes of k and v, this one about 200
// warp instructions for each 8 KiB.
#pragma once

#include "kiln/backend/cuda/device/attention/decode.cuh"
#include "kiln/backend/cuda/device/attention/mma.cuh"

namespace kiln::attn {

template <int D, int NT>
struct DecodeTcShape {
  static constexpr int kWarps = 4;
  static constexpr int kKeys = 16;      // keys per warp tile (mma M)
  static constexpr int kRows = 8 * NT;  // query rows: NT tiles of mma N = 8
  // Tiles in each warp's ring: two blocks per multiprocessor up to D = 128.
  static constexpr int kStages = D <= 128 ? 3 : 2;
  static constexpr int kRowElems = D + 8;            // padded: an odd count of 16-byte chunks
  static constexpr int kTile = kKeys * kRowElems;    // elements of one k or v tile
  static constexpr int kRing = kStages * 2 * kTile;  // elements of one warp's ring
};

/** Shared memory of decode_tc_fwd: the warps' rings (reused for the merge). */
template <int D, int NT>
__host__ __device__ constexpr int decode_tc_smem() {
  using S = DecodeTcShape<D, NT>;
  const int ring = S::kWarps * S::kRing * 2;
  const int merge = S::kWarps * S::kRows * (D + 2) * 4;
  return ring > merge ? ring : merge;
}

/**
 * Grid: x = B * Hk, y = splits; 128 threads. Keys [y * split_keys, ...) of head (b, hk) for
 * its G = R * Lq <= 8 NT rows; no mask or a causal one (Lk >= Lq), D == Dv a multiple of 16,
 * rows 16-byte aligned. With splits > 1 writes po / pml as simple_fwd does; else the
 * attention and lse.
 */
template <typename T, int D, int NT>
__global__ void __launch_bounds__(128)
    decode_tc_fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                  const T* __restrict__ sinks, T* __restrict__ out, float* __restrict__ lse,
                  float* __restrict__ po, float* __restrict__ pml, const __grid_constant__ Args a) {
#if __CUDA_ARCH__ >= 800
  using S = DecodeTcShape<D, NT>;
  constexpr bool BF16 = is_same_v<T, bfloat16>;
  constexpr int KS = D / 16;  // k-steps of the scores, 16-feature tiles of the output
  constexpr int CH = D / 8;   // 16-byte chunks per row
  constexpr float kLog2e = 1.4426950408889634f;
  extern __shared__ __align__(16) unsigned char decode_tc_raw[];
  T* const rings = reinterpret_cast<T*>(decode_tc_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gq = lane / 4, t4 = lane % 4;  // fragment row group and thread in group
  const int m8 = lane / 8, r8 = lane % 8;  // ldmatrix: the matrix and row this lane addresses
  const long long b = blockIdx.x / a.Hk, hk = blockIdx.x % a.Hk;
  const int G = a.R * a.Lq;

  // Q^T as B fragments, per tile n of 8 rows: query row 8 n + gq, features 16 ks + 2 t4
  // (and + 8); rows past G are zero.
  unsigned qf[NT][KS][2];
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    const int r = 8 * n + gq;
    const bool valid = r < G;
    const long long h = hk * a.R + (valid ? r / a.Lq : 0), i = valid ? r % a.Lq : 0;
    const T* qr = q + b * a.q_b + h * a.q_h + i * a.q_l + 2 * t4;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      qf[n][ks][0] = valid ? *reinterpret_cast<const unsigned*>(qr + 16 * ks) : 0u;
      qf[n][ks][1] = valid ? *reinterpret_cast<const unsigned*>(qr + 16 * ks + 8) : 0u;
    }
  }
  // This thread's query rows (columns of S^T and O^T): 8 n + 2 t4 + c for c = 0, 1; the last
  // key each may see (causal); scores in log2 units.
  const float scale2 = a.scale * kLog2e;
  long long last[NT][2];
  float m[NT][2], l[NT][2];
  float o[NT][KS][4];  // O^T: features 16 mt + gq (+ 8) x rows 8 n + 2 t4 (+ 1)
#pragma unroll
  for (int n = 0; n < NT; ++n) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int r = 8 * n + 2 * t4 + c;
      last[n][c] = a.mask == kCausal && r < G ? r % a.Lq + causal_offset(a) : a.Lk;
      m[n][c] = -rows::infinity<float>();
      l[n][c] = 0.0f;
    }
#pragma unroll
    for (int mt = 0; mt < KS; ++mt) o[n][mt][0] = o[n][mt][1] = o[n][mt][2] = o[n][mt][3] = 0.0f;
  }

  const long long j0 = static_cast<long long>(blockIdx.y) * a.split_keys;
  const long long j1 = j0 + a.split_keys < a.Lk ? j0 + a.split_keys : a.Lk;
  const int tiles = static_cast<int>((j1 - j0 + S::kKeys - 1) / S::kKeys);
  T* const ring = rings + warp * S::kRing;
  const T* kb = k + b * a.k_b + hk * a.k_h;
  const T* vb = v + b * a.v_b + hk * a.v_h;
  // Copies tile `tile` (if the block has it) into `stage`; keys past j1 are zero-filled.
  auto issue = [&](int tile, int stage) {
    if (tile < tiles) {
      T* ks_ = ring + stage * 2 * S::kTile;
      T* vs_ = ks_ + S::kTile;
      const long long jt = j0 + static_cast<long long>(tile) * S::kKeys;
#pragma unroll
      for (int c = lane; c < S::kKeys * CH; c += 32) {
        const int kr = c / CH, ch = c % CH;
        const bool ok = jt + kr < j1;
        const long long j = ok ? jt + kr : j0;
        cp_async_16(ks_ + kr * S::kRowElems + ch * 8, kb + j * a.k_l + ch * 8, ok);
        cp_async_16(vs_ + kr * S::kRowElems + ch * 8, vb + j * a.v_l + ch * 8, ok);
      }
    }
    cp_async_commit();  // an empty group past the end keeps the wait counts uniform
  };
#pragma unroll
  for (int st = 0; st < S::kStages - 1; ++st) issue(warp + st * S::kWarps, st);

  for (int it = 0; warp + it * S::kWarps < tiles; ++it) {
    issue(warp + (it + S::kStages - 1) * S::kWarps, (it + S::kStages - 1) % S::kStages);
    cp_async_wait<S::kStages - 1>();
    __syncwarp();
    const T* ks_ = ring + (it % S::kStages) * 2 * S::kTile;
    const T* vs_ = ks_ + S::kTile;
    const long long jt = j0 + static_cast<long long>(warp + it * S::kWarps) * S::kKeys;

    // S^T (16 keys x 8 rows per tile n): sc[n][0..1] key gq, rows 2 t4 (+ 1); sc[n][2..3]
    // key gq + 8.
    float sc[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      unsigned af[4];
      mma::ldmatrix_x4(af, ks_ + (r8 + 8 * (m8 & 1)) * S::kRowElems + 16 * ks + 8 * (m8 >> 1));
#pragma unroll
      for (int n = 0; n < NT; ++n) mma::mma_16816<BF16>(sc[n], af, qf[n][ks][0], qf[n][ks][1]);
    }
    unsigned pb[NT][2];
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      float p[4];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const long long ja = jt + gq, jb = ja + 8;
        float x0 = sc[n][c] * scale2, x1 = sc[n][2 + c] * scale2;
        if (ja >= j1 || ja > last[n][c]) x0 = -rows::infinity<float>();
        if (jb >= j1 || jb > last[n][c]) x1 = -rows::infinity<float>();
        float mx = fmaxf(x0, x1);
#pragma unroll
        for (int w = 4; w < 32; w *= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, w));
        const float mn = fmaxf(m[n][c], mx);
        const float shift = mn == -rows::infinity<float>() ? 0.0f : mn;  // nothing seen yet
        const float alpha = mma::exp2_approx(m[n][c] - shift);
        p[c] = mma::exp2_approx(x0 - shift);
        p[2 + c] = mma::exp2_approx(x1 - shift);
        l[n][c] = l[n][c] * alpha + p[c] + p[2 + c];
        m[n][c] = mn;
#pragma unroll
        for (int mt = 0; mt < KS; ++mt) {
          o[n][mt][c] *= alpha;
          o[n][mt][2 + c] *= alpha;
        }
      }
      // P as the B operand (keys x rows): the transposes of the two 8 x 8 blocks of P^T.
      pb[n][0] = mma::movmatrix_trans(mma::pack2<BF16>(p[0], p[1]));
      pb[n][1] = mma::movmatrix_trans(mma::pack2<BF16>(p[2], p[3]));
    }
#pragma unroll
    for (int mt = 0; mt < KS; ++mt) {
      unsigned vf[4];
      mma::ldmatrix_x4_trans(vf,
                             vs_ + (r8 + 8 * (m8 >> 1)) * S::kRowElems + 16 * mt + 8 * (m8 & 1));
#pragma unroll
      for (int n = 0; n < NT; ++n) mma::mma_16816<BF16>(o[n][mt], vf, pb[n][0], pb[n][1]);
    }
    __syncwarp();  // the stage is refilled next iteration
  }
  cp_async_wait<0>();

  // Each row's sum over the warp's keys, then the warps' states into shared memory (natural
  // units) for decode_merge.
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int w = 4; w < 32; w *= 2) l[n][c] += __shfl_xor_sync(0xffffffffu, l[n][c], w);
  __syncthreads();  // every warp is done with its ring
  float* const dsm = reinterpret_cast<float*>(decode_tc_raw);
#pragma unroll
  for (int n = 0; n < NT; ++n) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      float* st = dsm + (warp * S::kRows + 8 * n + 2 * t4 + c) * (D + 2);
#pragma unroll
      for (int mt = 0; mt < KS; ++mt) {
        st[16 * mt + gq] = o[n][mt][c];
        st[16 * mt + gq + 8] = o[n][mt][2 + c];
      }
      if (gq == 0) {
        st[D] = m[n][c] == -rows::infinity<float>() ? m[n][c] : m[n][c] / kLog2e;
        st[D + 1] = l[n][c];
      }
    }
  }
  __syncthreads();
  decode_merge<T, D>(dsm, S::kWarps, S::kRows, b, hk, sinks, out, lse, po, pml, a);
#endif
}

}  // namespace kiln::attn
