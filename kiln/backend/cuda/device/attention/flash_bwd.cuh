// The FlashAttention-2 backward pass on tensor cores (Dao 2023, section 3.1 and Algorithm 2),
// bfloat16 and float16 with float32 accumulation, head dims 64, 80, 96 and 128
// (backend/cuda/fast_attention.cpp). P = exp(S - lse) is recomputed from the forward's saved
// logsumexp, and Drow = rowsum(dO * O) comes from simple_bwd_rowdot.
//
// Two kernels, without atomics (results do not depend on timing), at the price of
// recomputing S and dP once more than FlashAttention-2's single kernel:
// flash_bwd_dkv: a block owns 128 keys of one key/value head (16 per warp, their K and V in
//   shared memory, dK and dV in registers) and visits every query of the heads sharing them,
//   32 at a time: S^T = K Q^T, P^T, dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - Drow),
//   dK += dS^T Q.
// flash_bwd_dq: a block owns 128 queries of one head (16 per warp) and walks the key tiles:
//   S = Q K^T, P, dP = dO V^T, dS, dQ += dS K.
// Both use the fragment layouts of mma.cuh: accumulators turn into A operands in registers,
// and the B operands come from shared memory through ldmatrix (transposed where the
// contraction runs over the rows of the stored tile).
#pragma once

#include "kiln/backend/cuda/device/attention/common.cuh"
#include "kiln/backend/cuda/device/attention/mma.cuh"

namespace kiln::attn {

constexpr int kBwdWarps = 8;     // 16 keys (dkv) or queries (dq) per warp
constexpr int kBwdQueries = 32;  // flash_bwd_dkv: queries per step
constexpr int kBwdKeyTile = 64;  // flash_bwd_dq: keys per step

/** flash_bwd_dq's key/value stages: two (the next tile loads while this one is used) where
 * they fit beside a second resident block, one for D = 128. */
__host__ __device__ constexpr int flash_bwd_dq_stages(int D) {
  return D <= 96 ? 2 : 1;
}
/** Shared memory: flash_bwd_dkv keeps K and V of its 128 keys and two stages of the query
 * and dO tiles with their logsumexp and Drow; flash_bwd_dq the 128 queries' Q and dO and
 * its key/value stages. */
__host__ __device__ constexpr int flash_bwd_dkv_smem(int D) {
  return (2 * 16 * kBwdWarps + 4 * kBwdQueries) * (D + 8) * 2 + 4 * kBwdQueries * 4;
}
__host__ __device__ constexpr int flash_bwd_dq_smem(int D) {
  return (2 * 16 * kBwdWarps + 2 * flash_bwd_dq_stages(D) * kBwdKeyTile) * (D + 8) * 2;
}

namespace bwd_detail {

constexpr float kLog2e = 1.4426950408889634f;
// A logsumexp (times log2 e) below this belongs to a row that sees no key: its scores are
// all the mask's lowest value and its softmax is uniform over the keys.
constexpr float kNoKey = -1e38f;

/** Copies rows [r0, r0 + rows) of a (L, D) slab with row stride ld_src into shared memory
 * (row stride D + 8), zeros past L. */
template <typename T, int D>
__device__ inline void load_rows(T* dst, const T* src, long long ld_src, long long r0, int rows,
                                 long long L) {
  constexpr int LD = D + 8, CH = D / 8;
  for (int c = threadIdx.x; c < rows * CH; c += blockDim.x) {
    const int r = c / CH, cc = c - r * CH;
    const bool valid = r0 + r < L;
    mma::cp_async_16(dst + r * LD + cc * 8, src + (valid ? (r0 + r) * ld_src : 0) + cc * 8, valid);
  }
}

/** P of one score s (unscaled) where the tile needs masking or bounds: the scaled, masked
 * score against lse2 (the logsumexp times log2 e); 0 out of bounds. Sets hid when a bool
 * or causal mask hid the score (its gradient is zero). */
template <typename T>
__device__ inline float prob_masked(const Args& a, const void* mask, long long b, long long h,
                                    long long i, long long j, float s, float lse2, bool& hid) {
  hid = false;
  if (j >= a.Lk || i >= a.Lq) return 0.0f;
  float x = s * a.scale;
  hid = apply_mask<float, T>(a, mask, b, h, i, j, x);
  if (lse2 < kNoKey) return 1.0f / static_cast<float>(a.Lk);
  return mma::exp2_approx(x * kLog2e - lse2);
}

}  // namespace bwd_detail

template <typename T, int D>
__global__ void __launch_bounds__(kBwdWarps * 32, D <= 64 ? 2 : 1)
    flash_bwd_dkv(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                  const void* __restrict__ mask, const T* __restrict__ dout,
                  const float* __restrict__ lse, const float* __restrict__ drow, T* __restrict__ dk,
                  T* __restrict__ dv, const __grid_constant__ Args a) {
  constexpr bool BF16 = is_same_v<T, bfloat16>;
  constexpr int BN = 16 * kBwdWarps, BM = kBwdQueries, LD = D + 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* ks = reinterpret_cast<T*>(smem_raw);
  T* vs = ks + BN * LD;
  T* qs = vs + BN * LD;                                       // two stages of BM rows
  T* dos = qs + 2 * BM * LD;                                  // two stages of BM rows
  float* lses = reinterpret_cast<float*>(dos + 2 * BM * LD);  // two stages, times log2 e
  float* drs = lses + 2 * BM;

  const int tiles = (a.Lk + BN - 1) / BN;
  const long long bh = blockIdx.x / tiles, b = bh / a.Hk, hk = bh % a.Hk;
  const long long j0 = static_cast<long long>(blockIdx.x % tiles) * BN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const long long off = causal_offset(a);
  const float scale2 = a.scale * bwd_detail::kLog2e;
  bwd_detail::load_rows<T, D>(ks, k + b * a.k_b + hk * a.k_h, a.k_l, j0, BN, a.Lk);
  bwd_detail::load_rows<T, D>(vs, v + b * a.v_b + hk * a.v_h, a.v_l, j0, BN, a.Lk);

  // Steps: (head of the group, query tile) pairs; causal skips the tiles whose rows all see
  // some key but none of this block's.
  const int nqt = (a.Lq + BM - 1) / BM, steps = a.R * nqt;
  auto skipped = [&](int st) {
    if (a.mask != kCausal) return false;
    const long long i0 = static_cast<long long>(st % nqt) * BM;
    const long long i1 = (i0 + BM < a.Lq ? i0 + BM : a.Lq) - 1;
    return i0 + off >= 0 && i1 + off < j0;
  };
  auto next_step = [&](int st) {
    while (st < steps && skipped(st)) ++st;
    return st;
  };
  // Issues the step's Q and dO copies into stage c; its logsumexp and Drow rows come back in
  // (ls, dr) of the first warp's lanes and are stored once the stage is free.
  auto load_step = [&](int st, int c, float& ls, float& dr) {
    const long long h = hk * a.R + st / nqt, i0 = static_cast<long long>(st % nqt) * BM;
    const long long rows0 = (b * a.Hq + h) * a.Lq;
    bwd_detail::load_rows<T, D>(qs + c * BM * LD, q + b * a.q_b + h * a.q_h, a.q_l, i0, BM, a.Lq);
    bwd_detail::load_rows<T, D>(dos + c * BM * LD, dout + rows0 * D, D, i0, BM, a.Lq);
    if (tid < BM) {
      const bool valid = i0 + tid < a.Lq;
      ls = valid ? lse[rows0 + i0 + tid] * bwd_detail::kLog2e : 0.0f;
      dr = valid ? drow[rows0 + i0 + tid] : 0.0f;
    }
  };

  float dka[D / 8][4], dva[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dka[n][e] = dva[n][e] = 0.0f;
  const long long key0 = j0 + warp * 16 + g;  // this thread's keys: key0, key0 + 8
  const long long warp_last_key = j0 + warp * 16 + 15;

  int st = next_step(0);
  float ls = 0.0f, dr = 0.0f;
  if (st < steps) load_step(st, 0, ls, dr);
  mma::cp_async_commit();
  if (st < steps && tid < BM) lses[tid] = ls, drs[tid] = dr;
  for (int c = 0; st < steps; c ^= 1) {
    const int nxt = next_step(st + 1);
    mma::cp_async_wait<0>();
    __syncthreads();  // stage c is in; stage c ^ 1 is no longer read
    if (nxt < steps) load_step(nxt, c ^ 1, ls, dr);
    mma::cp_async_commit();
    const long long h = hk * a.R + st / nqt, i0 = static_cast<long long>(st % nqt) * BM;
    const T* qb = qs + c * BM * LD;
    const T* db = dos + c * BM * LD;
    const float* lsb = lses + c * BM;
    const float* drb = drs + c * BM;

    // S^T = K Q^T: the warp's 16 keys against the step's 32 queries.
    float st_[BM / 8][4];
#pragma unroll
    for (int n = 0; n < BM / 8; ++n) st_[n][0] = st_[n][1] = st_[n][2] = st_[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      unsigned ka[4];
      mma::ldmatrix_x4(ka, ks + (warp * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
#pragma unroll
      for (int nn = 0; nn < BM / 16; ++nn) {
        unsigned qf[4];
        mma::ldmatrix_x4(
            qf, qb + (nn * 16 + (lane / 16) * 8 + lane % 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
        mma::mma_16816<BF16>(st_[2 * nn], ka, qf[0], qf[1]);
        mma::mma_16816<BF16>(st_[2 * nn + 1], ka, qf[2], qf[3]);
      }
    }
    // P^T. A tile inside the bounds with no mask, or wholly below a causal diagonal, needs
    // neither index arithmetic nor mask reads: P = 2^(s scale log2e - lse log2e).
    const bool full = warp_last_key < a.Lk && i0 + BM <= a.Lq &&
                      (a.mask == kNone || (a.mask == kCausal && warp_last_key <= i0 + off));
    unsigned hidden = 0;
    if (full) {
#pragma unroll
      for (int n = 0; n < BM / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          st_[n][e] = mma::exp2_approx(fmaf(st_[n][e], scale2, -lsb[n * 8 + 2 * t + (e & 1)]));
    } else {
#pragma unroll
      for (int n = 0; n < BM / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int qi = n * 8 + 2 * t + (e & 1);
          bool hid;
          st_[n][e] = bwd_detail::prob_masked<T>(a, mask, b, h, i0 + qi, key0 + (e >= 2 ? 8 : 0),
                                                 st_[n][e], lsb[qi], hid);
          if (hid) hidden |= 1u << (n * 4 + e);
        }
    }
    // dV += P^T dO.
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      const unsigned pa[4] = {mma::pack2<BF16>(st_[2 * kk][0], st_[2 * kk][1]),
                              mma::pack2<BF16>(st_[2 * kk][2], st_[2 * kk][3]),
                              mma::pack2<BF16>(st_[2 * kk + 1][0], st_[2 * kk + 1][1]),
                              mma::pack2<BF16>(st_[2 * kk + 1][2], st_[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < D / 16; ++dn) {
        unsigned df[4];
        mma::ldmatrix_x4_trans(
            df, db + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * LD + dn * 16 + (lane / 16) * 8);
        mma::mma_16816<BF16>(dva[2 * dn], pa, df[0], df[1]);
        mma::mma_16816<BF16>(dva[2 * dn + 1], pa, df[2], df[3]);
      }
    }
    // dP^T = V dO^T.
    float dpt[BM / 8][4];
#pragma unroll
    for (int n = 0; n < BM / 8; ++n) dpt[n][0] = dpt[n][1] = dpt[n][2] = dpt[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      unsigned va[4];
      mma::ldmatrix_x4(va, vs + (warp * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
#pragma unroll
      for (int nn = 0; nn < BM / 16; ++nn) {
        unsigned df[4];
        mma::ldmatrix_x4(
            df, db + (nn * 16 + (lane / 16) * 8 + lane % 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
        mma::mma_16816<BF16>(dpt[2 * nn], va, df[0], df[1]);
        mma::mma_16816<BF16>(dpt[2 * nn + 1], va, df[2], df[3]);
      }
    }
    // dS^T = P^T (dP^T - Drow), then dK += dS^T Q.
#pragma unroll
    for (int n = 0; n < BM / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int qi = n * 8 + 2 * t + (e & 1);
        dpt[n][e] = (hidden >> (n * 4 + e)) & 1u ? 0.0f : st_[n][e] * (dpt[n][e] - drb[qi]);
      }
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      const unsigned sa[4] = {mma::pack2<BF16>(dpt[2 * kk][0], dpt[2 * kk][1]),
                              mma::pack2<BF16>(dpt[2 * kk][2], dpt[2 * kk][3]),
                              mma::pack2<BF16>(dpt[2 * kk + 1][0], dpt[2 * kk + 1][1]),
                              mma::pack2<BF16>(dpt[2 * kk + 1][2], dpt[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < D / 16; ++dn) {
        unsigned qf[4];
        mma::ldmatrix_x4_trans(
            qf, qb + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * LD + dn * 16 + (lane / 16) * 8);
        mma::mma_16816<BF16>(dka[2 * dn], sa, qf[0], qf[1]);
        mma::mma_16816<BF16>(dka[2 * dn + 1], sa, qf[2], qf[3]);
      }
    }
    // The next step's rows go to the other stage, read after the next barrier.
    if (nxt < steps && tid < BM) lses[(c ^ 1) * BM + tid] = ls, drs[(c ^ 1) * BM + tid] = dr;
    st = nxt;
  }
  mma::cp_async_wait<0>();
  // Write dK (scaled) and dV: rows key0 and key0 + 8, features n * 8 + 2t.
  const long long kv0 = (b * a.Hk + hk) * static_cast<long long>(a.Lk);
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const long long j = key0 + 8 * r;
      if (j >= a.Lk) continue;
      const long long o = (kv0 + j) * D + n * 8 + 2 * t;
      *reinterpret_cast<unsigned*>(dk + o) =
          mma::pack2<BF16>(dka[n][2 * r] * a.scale, dka[n][2 * r + 1] * a.scale);
      *reinterpret_cast<unsigned*>(dv + o) = mma::pack2<BF16>(dva[n][2 * r], dva[n][2 * r + 1]);
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(kBwdWarps * 32, D <= 64 ? 2 : 1)
    flash_bwd_dq(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                 const void* __restrict__ mask, const T* __restrict__ dout,
                 const float* __restrict__ lse, const float* __restrict__ drow, T* __restrict__ dq,
                 const __grid_constant__ Args a) {
  constexpr bool BF16 = is_same_v<T, bfloat16>;
  constexpr int BM = 16 * kBwdWarps, BN = kBwdKeyTile, LD = D + 8;
  constexpr int STAGES = flash_bwd_dq_stages(D);
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* qs = reinterpret_cast<T*>(smem_raw);
  T* dos = qs + BM * LD;
  T* ks = dos + BM * LD;          // STAGES tiles of BN rows
  T* vs = ks + STAGES * BN * LD;  // STAGES tiles of BN rows

  const int nqt = (a.Lq + BM - 1) / BM;
  const int qt = a.mask == kCausal ? nqt - 1 - static_cast<int>(blockIdx.x) : blockIdx.x;
  const long long b = blockIdx.y / a.Hq, h = blockIdx.y % a.Hq, hk = h / a.R;
  const long long i0 = static_cast<long long>(qt) * BM;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const long long rows0 = (b * a.Hq + h) * a.Lq;
  const float scale2 = a.scale * bwd_detail::kLog2e;
  bwd_detail::load_rows<T, D>(qs, q + b * a.q_b + h * a.q_h, a.q_l, i0, BM, a.Lq);
  bwd_detail::load_rows<T, D>(dos, dout + rows0 * D, D, i0, BM, a.Lq);
  const int r0 = warp * 16 + g;  // this thread's rows in the block: r0, r0 + 8
  float lse2[2], dr[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const long long i = i0 + r0 + 8 * r;
    lse2[r] = i < a.Lq ? lse[rows0 + i] * bwd_detail::kLog2e : 0.0f;
    dr[r] = i < a.Lq ? drow[rows0 + i] : 0.0f;
  }
  const long long last_row = (i0 + BM < a.Lq ? i0 + BM : a.Lq) - 1;
  const long long kend = causal_key_end(a, i0, last_row);
  const long long off = causal_offset(a);
  const long long warp_first_row = i0 + warp * 16;
  const T* kg = k + b * a.k_b + hk * a.k_h;
  const T* vg = v + b * a.v_b + hk * a.v_h;
  auto load_kv = [&](long long j0, int c) {
    bwd_detail::load_rows<T, D>(ks + c * BN * LD, kg, a.k_l, j0, BN, a.Lk);
    bwd_detail::load_rows<T, D>(vs + c * BN * LD, vg, a.v_l, j0, BN, a.Lk);
  };
  if (kend > 0) load_kv(0, 0);
  mma::cp_async_commit();
  float dqa[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) dqa[n][0] = dqa[n][1] = dqa[n][2] = dqa[n][3] = 0.0f;

  for (long long j0 = 0, it = 0; j0 < kend; j0 += BN, ++it) {
    const int c = STAGES == 2 ? static_cast<int>(it & 1) : 0;
    if constexpr (STAGES == 2) {
      mma::cp_async_wait<0>();
      __syncthreads();  // tile it is in; the other stage is no longer read
      if (j0 + BN < kend) load_kv(j0 + BN, c ^ 1);
      mma::cp_async_commit();
    } else {
      if (it > 0) {
        __syncthreads();  // the previous tile is no longer read
        load_kv(j0, 0);
        mma::cp_async_commit();
      }
      mma::cp_async_wait<0>();
      __syncthreads();
    }
    const T* kb = ks + c * BN * LD;
    const T* vb = vs + c * BN * LD;
    float s[BN / 8][4], dp[BN / 8][4];
#pragma unroll
    for (int n = 0; n < BN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      unsigned qa[4], da[4];
      mma::ldmatrix_x4(qa, qs + (warp * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
      mma::ldmatrix_x4(da, dos + (warp * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
#pragma unroll
      for (int nn = 0; nn < BN / 16; ++nn) {
        unsigned kf[4], vf[4];
        const int row = nn * 16 + (lane / 16) * 8 + lane % 8, col = kk * 16 + ((lane / 8) % 2) * 8;
        mma::ldmatrix_x4(kf, kb + row * LD + col);
        mma::ldmatrix_x4(vf, vb + row * LD + col);
        mma::mma_16816<BF16>(s[2 * nn], qa, kf[0], kf[1]);
        mma::mma_16816<BF16>(s[2 * nn + 1], qa, kf[2], kf[3]);
        mma::mma_16816<BF16>(dp[2 * nn], da, vf[0], vf[1]);
        mma::mma_16816<BF16>(dp[2 * nn + 1], da, vf[2], vf[3]);
      }
    }
    // dS = P (dP - Drow), zero where a mask hid the score; full tiles (in bounds, unmasked
    // or wholly below the causal diagonal) skip the index arithmetic.
    const bool full =
        j0 + BN <= a.Lk && warp_first_row + 16 <= a.Lq &&
        (a.mask == kNone || (a.mask == kCausal && j0 + BN - 1 <= warp_first_row + off));
    if (full) {
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = e >= 2;
          const float p = mma::exp2_approx(fmaf(s[n][e], scale2, -lse2[r]));
          s[n][e] = p * (dp[n][e] - dr[r]);
        }
    } else {
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = e >= 2;
          bool hid;
          const float p = bwd_detail::prob_masked<T>(
              a, mask, b, h, i0 + r0 + 8 * r, j0 + n * 8 + 2 * t + (e & 1), s[n][e], lse2[r], hid);
          s[n][e] = hid ? 0.0f : p * (dp[n][e] - dr[r]);
        }
    }
    // dQ += dS K.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      const unsigned sa[4] = {mma::pack2<BF16>(s[2 * kk][0], s[2 * kk][1]),
                              mma::pack2<BF16>(s[2 * kk][2], s[2 * kk][3]),
                              mma::pack2<BF16>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              mma::pack2<BF16>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < D / 16; ++dn) {
        unsigned kf[4];
        mma::ldmatrix_x4_trans(
            kf, kb + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * LD + dn * 16 + (lane / 16) * 8);
        mma::mma_16816<BF16>(dqa[2 * dn], sa, kf[0], kf[1]);
        mma::mma_16816<BF16>(dqa[2 * dn + 1], sa, kf[2], kf[3]);
      }
    }
  }
  mma::cp_async_wait<0>();
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const long long i = i0 + r0 + 8 * r;
      if (i >= a.Lq) continue;
      *reinterpret_cast<unsigned*>(dq + (rows0 + i) * D + n * 8 + 2 * t) =
          mma::pack2<BF16>(dqa[n][2 * r] * a.scale, dqa[n][2 * r + 1] * a.scale);
    }
}

}  // namespace kiln::attn
