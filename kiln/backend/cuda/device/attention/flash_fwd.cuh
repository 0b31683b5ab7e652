// The FlashAttention-2 forward pass on tensor cores (Dao 2023, "FlashAttention-2: Faster
// Attention with Better Parallelism and Work Partitioning"), for bfloat16 and float16 with
// float32 accumulation, head dims 64, 80, 96, 128 and 256 (backend/cuda/fast_attention.cpp).
//
// A block of 8 warps (4 for D = 256) owns 16 queries per warp of one head and walks the
// key/value tiles of BN keys: K and V tiles are copied to shared memory with cp.async, double
// buffered (the next tile loads while this one is used); S = Q K^T and O += P V run on
// mma.sync.m16n8k16 with fragments read by ldmatrix (rows padded by 16 bytes, so the 8
// rows of an 8 x 8 matrix fall in different banks); the softmax is online (running maximum
// and sum per row, kept by the 4 threads that share a row), and P goes from the score
// accumulators to the second product in registers. Under a causal mask the tiles past the
// block's last diagonal are skipped, and blocks are scheduled heaviest first. Query heads
// read their key/value head h / R (grouped-query attention without copies).
#pragma once

#include "kiln/backend/cuda/device/attention/common.cuh"
#include "kiln/backend/cuda/device/attention/mma.cuh"

namespace kiln::attn {

/** Warps of a flash_fwd block, 16 queries each: 8 for D <= 128 (the key and value tiles
 * loaded once serve 128 queries, halving their traffic), 4 for D = 256 (registers). */
__host__ __device__ constexpr int flash_fwd_warps(int D) {
  return D <= 128 ? 8 : 4;
}

/** Shared memory of flash_fwd: the query tile and two stages of key and value tiles. */
__host__ __device__ constexpr int flash_fwd_smem(int D, int BN) {
  return (16 * flash_fwd_warps(D) + 4 * BN) * (D + 8) * 2;
}

template <typename T, int D, int BN>
__global__ void __launch_bounds__(flash_fwd_warps(D) * 32, D <= 64 ? 2 : 1)
    flash_fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
              const void* __restrict__ mask, const T* __restrict__ sinks, T* __restrict__ out,
              float* __restrict__ lse, const __grid_constant__ Args a) {
  constexpr bool BF16 = is_same_v<T, bfloat16>;
  constexpr int WARPS = flash_fwd_warps(D), THREADS = WARPS * 32;
  constexpr int BM = 16 * WARPS, LD = D + 8, CH = D / 8;  // CH: 16-byte chunks per row
  constexpr float kLog2e = 1.4426950408889634f;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* qs = reinterpret_cast<T*>(smem_raw);
  T* ks = qs + BM * LD;
  T* vs = ks + 2 * BN * LD;

  const int nqt = (a.Lq + BM - 1) / BM;
  // Under a causal mask the last query tiles see the most keys: start them first.
  const int qt = a.mask == kCausal ? nqt - 1 - static_cast<int>(blockIdx.x) : blockIdx.x;
  const long long b = blockIdx.y / a.Hq, h = blockIdx.y % a.Hq, hk = h / a.R;
  const long long i0 = static_cast<long long>(qt) * BM;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const T* qg = q + b * a.q_b + h * a.q_h;
  const T* kg = k + b * a.k_b + hk * a.k_h;
  const T* vg = v + b * a.v_b + hk * a.v_h;
  const long long off = causal_offset(a);

  for (int c = tid; c < BM * CH; c += THREADS) {
    const int r = c / CH, cc = c - r * CH;
    const bool valid = i0 + r < a.Lq;
    mma::cp_async_16(qs + r * LD + cc * 8, qg + (valid ? (i0 + r) * a.q_l : 0) + cc * 8, valid);
  }
  const long long last_row = (i0 + BM < a.Lq ? i0 + BM : a.Lq) - 1;
  const long long kend = causal_key_end(a, i0, last_row);
  const int ntiles = static_cast<int>((kend + BN - 1) / BN);
  auto load_kv = [&](int tile, int stage) {
    const long long j0 = static_cast<long long>(tile) * BN;
    T* kd = ks + stage * BN * LD;
    T* vd = vs + stage * BN * LD;
    for (int c = tid; c < BN * CH; c += THREADS) {
      const int r = c / CH, cc = c - r * CH;
      const bool valid = j0 + r < a.Lk;
      const long long j = valid ? j0 + r : 0;
      mma::cp_async_16(kd + r * LD + cc * 8, kg + j * a.k_l + cc * 8, valid);
      mma::cp_async_16(vd + r * LD + cc * 8, vg + j * a.v_l + cc * 8, valid);
    }
  };
  if (ntiles > 0) load_kv(0, 0);
  mma::cp_async_commit();

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  // Rows g and g + 8 of the warp's 16: running maximum and sum (a sink starts them).
  float m[2], l[2];
  {
    const float sink = a.has_sinks ? rows::to_acc<float>(sinks[h]) : -rows::infinity<float>();
    m[0] = m[1] = sink;
    l[0] = l[1] = a.has_sinks ? 1.0f : 0.0f;
  }
  const long long row0 = i0 + warp * 16 + g;  // this thread's first row; the second is +8
  constexpr bool Q_IN_REGS = D <= 128;
  constexpr int QF = Q_IN_REGS ? D / 16 : 1;
  unsigned qf[QF][4];

  for (int it = 0; it < ntiles; ++it) {
    mma::cp_async_wait<0>();
    __syncthreads();
    if (it + 1 < ntiles) load_kv(it + 1, (it + 1) & 1);
    mma::cp_async_commit();
    const T* kb = ks + (it & 1) * BN * LD;
    const T* vb = vs + (it & 1) * BN * LD;

    // The warp's query fragments stay in registers for D <= 128 (read from shared memory
    // once); D = 256 has no registers to spare and reads them per tile.
    if (Q_IN_REGS && it == 0) {
#pragma unroll
      for (int kk = 0; kk < QF; ++kk)
        mma::ldmatrix_x4(qf[kk], qs + (warp * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
    }
    float s[BN / 8][4];
#pragma unroll
    for (int n = 0; n < BN / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      unsigned qa[4];
      if constexpr (Q_IN_REGS) {
        qa[0] = qf[kk][0], qa[1] = qf[kk][1], qa[2] = qf[kk][2], qa[3] = qf[kk][3];
      } else {
        mma::ldmatrix_x4(qa, qs + (warp * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
      }
#pragma unroll
      for (int nn = 0; nn < BN / 16; ++nn) {
        unsigned kf[4];
        mma::ldmatrix_x4(
            kf, kb + (nn * 16 + (lane / 16) * 8 + lane % 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
        mma::mma_16816<BF16>(s[2 * nn], qa, kf[0], kf[1]);
        mma::mma_16816<BF16>(s[2 * nn + 1], qa, kf[2], kf[3]);
      }
    }

    // Scale, then mask where the tile needs it.
    const long long j0 = static_cast<long long>(it) * BN;
    const bool full =
        j0 + BN <= a.Lk && (a.mask == kNone || (a.mask == kCausal && j0 + BN - 1 <= i0 + off));
#pragma unroll
    for (int n = 0; n < BN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[n][e] * a.scale;
        if (!full) {
          const long long i = row0 + (e >= 2 ? 8 : 0);
          const long long j = j0 + n * 8 + 2 * t + (e & 1);
          if (j >= a.Lk)
            x = -rows::infinity<float>();
          else if (i < a.Lq)
            apply_mask<float, T>(a, mask, b, h, i, j, x);
        }
        s[n][e] = x;
      }

      // Online softmax over the tile: 4 threads share each row.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = -rows::infinity<float>();
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
        mx = rows::nan_max(mx, rows::nan_max(s[n][2 * r], s[n][2 * r + 1]));
      mx = rows::nan_max(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = rows::nan_max(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float mn = rows::nan_max(m[r], mx);
      const float shift = mn == -rows::infinity<float>() ? 0.0f : mn;
      const float alpha = mma::exp2_approx((m[r] - shift) * kLog2e);
      m[r] = mn;
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < BN / 8; ++n) {
        s[n][2 * r] = mma::exp2_approx((s[n][2 * r] - shift) * kLog2e);
        s[n][2 * r + 1] = mma::exp2_approx((s[n][2 * r + 1] - shift) * kLog2e);
        sum += s[n][2 * r] + s[n][2 * r + 1];
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      l[r] = l[r] * alpha + sum;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[n][2 * r] *= alpha;
        o[n][2 * r + 1] *= alpha;
      }
    }

    // O += P V: pairs of score tiles are the A fragments of 16-key steps.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      const unsigned pa[4] = {mma::pack2<BF16>(s[2 * kk][0], s[2 * kk][1]),
                              mma::pack2<BF16>(s[2 * kk][2], s[2 * kk][3]),
                              mma::pack2<BF16>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              mma::pack2<BF16>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < D / 16; ++dn) {
        unsigned vf[4];
        mma::ldmatrix_x4_trans(
            vf, vb + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * LD + dn * 16 + (lane / 16) * 8);
        mma::mma_16816<BF16>(o[2 * dn], pa, vf[0], vf[1]);
        mma::mma_16816<BF16>(o[2 * dn + 1], pa, vf[2], vf[3]);
      }
    }
  }
  mma::cp_async_wait<0>();

  // Normalize, stage the warp's 16 rows in its part of the query tile, store 16 bytes at a
  // time.
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) inv[r] = a.Lk == 0 ? 0.0f : 1.0f / l[r];
  T* stage = qs + warp * 16 * LD;
  __syncwarp();
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const unsigned packed = mma::pack2<BF16>(o[n][2 * r] * inv[r], o[n][2 * r + 1] * inv[r]);
      *reinterpret_cast<unsigned*>(stage + (g + 8 * r) * LD + n * 8 + 2 * t) = packed;
    }
  __syncwarp();
  const long long orow0 = (b * a.Hq + h) * a.Lq;
  for (int c = lane; c < 16 * CH; c += 32) {
    const int r = c / CH, cc = c - r * CH;
    const long long i = i0 + warp * 16 + r;
    if (i < a.Lq)
      *reinterpret_cast<uint4*>(out + (orow0 + i) * D + cc * 8) =
          *reinterpret_cast<const uint4*>(stage + r * LD + cc * 8);
  }
  if (t == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const long long i = row0 + 8 * r;
      if (i < a.Lq) lse[orow0 + i] = m[r] + logf(l[r]);
    }
  }
}

}  // namespace kiln::attn
