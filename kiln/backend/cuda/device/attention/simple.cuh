// Attention kernels without tensor cores (backend/cuda/fast_attention.cpp): every dtype
// (float32 and float64 included), any head dims up to 256, and the decode path.
//
// simple_fwd: a block owns up to kRows query rows of one key/value group (the R query heads
// sharing a key/value head, times their queries: decode attends all heads of a group in one
// pass over k and v) and one key range (a split: long contexts are cut across blocks and
// combine_splits merges them). Key tiles of 32 go through shared memory in the
// accumulation type; each warp takes rows in turn, a lane per key for the scores, an online
// softmax over the tile (FlashAttention's, Dao et al. 2022), and lanes over the value
// features for the output.
//
// The backward (FlashAttention-2's algorithm, Dao 2023, without tensor cores):
// simple_bwd_rowdot computes Drow = dO . O per query; simple_bwd_dq recomputes P = exp(S -
// lse) a tile at a time and sums dS K into dQ; simple_bwd_dkv owns a key tile and sums
// P^T dO and dS^T Q over every query row of the group.
#pragma once

#include "kiln/backend/cuda/device/attention/common.cuh"

namespace kiln::attn {

/** Query rows per block of simple_fwd and simple_bwd_dq: warp w takes rows w, w + 4, ...
 * (a decode group of 4 rows keeps every warp busy). */
constexpr int kRows = 16;
constexpr int kKeyTile = 32;

/** Shared memory of simple_fwd / simple_bwd_dq: q rows [kRows][D] (dO rows too for the
 * backward), a key tile [32][D + 1] and a value tile [32][Dv + 1], of A. */
__host__ __device__ constexpr long long simple_smem(int D, int Dv, bool backward, int acc_size) {
  return (static_cast<long long>(kRows) * (D + (backward ? Dv : 0)) + kKeyTile * (D + 1) +
          kKeyTile * (Dv + 1)) *
         acc_size;
}

namespace detail {

/** Loads a tile of 32 rows (keys j0..) of `width` features into shared memory as A (row
 * stride width + 1), zeros past Lk; 16-byte loads when `vec` (aligned rows of whole vectors). */
template <typename T, typename A>
__device__ inline void load_tile(A* dst, const T* src, long long row_stride, long long j0, int Lk,
                                 int width, bool vec) {
  constexpr int N = rows::kVec<T>;
  if (vec) {
    const int per_row = width / N;
    for (int e = threadIdx.x; e < kKeyTile * per_row; e += blockDim.x) {
      const int j = e / per_row, d = (e - j * per_row) * N;
      Vec<T, N> x;
      if (j0 + j < Lk) {
        x = load_vec<N>(src + (j0 + j) * row_stride + d);
      } else {
#pragma unroll
        for (int i = 0; i < N; ++i) x.v[i] = rows::zero<T>();
      }
#pragma unroll
      for (int i = 0; i < N; ++i) dst[j * (width + 1) + d + i] = rows::to_acc<A>(x.v[i]);
    }
    return;
  }
  for (int e = threadIdx.x; e < kKeyTile * width; e += blockDim.x) {
    const int j = e / width, d = e - j * width;
    dst[j * (width + 1) + d] = j0 + j < Lk ? rows::to_acc<A>(src[(j0 + j) * row_stride + d]) : A(0);
  }
}

template <typename A>
__device__ inline A dot(const A* x, const A* y, int n) {
  A s = 0;
  for (int d = 0; d < n; ++d) s += x[d] * y[d];
  return s;
}

}  // namespace detail

/**
 * The forward pass. Grid: x = B * Hk * row blocks, y = splits. With splits > 1, writes each
 * row's unnormalized output and (max, sum) to po and pml; else the attention and lse.
 * DPL = ceil(Dv / 32) output features per lane.
 */
template <typename T, int DPL>
__global__ void __launch_bounds__(128)
    simple_fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
               const void* __restrict__ mask, const T* __restrict__ sinks, T* __restrict__ out,
               rows::Acc<T>* __restrict__ lse, rows::Acc<T>* __restrict__ po,
               rows::Acc<T>* __restrict__ pml, const __grid_constant__ Args a) {
  using A = rows::Acc<T>;
  extern __shared__ unsigned char smem_raw[];
  A* qs = reinterpret_cast<A*>(smem_raw);
  A* ks = qs + kRows * a.D;
  A* vs = ks + kKeyTile * (a.D + 1);
  const int group_rows = a.R * a.Lq;
  const int row_blocks = (group_rows + kRows - 1) / kRows;
  const long long bh = blockIdx.x / row_blocks;  // b * Hk + hk
  const long long b = bh / a.Hk, hk = bh % a.Hk;
  const int r0 = (blockIdx.x % row_blocks) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  // The block's query rows, scaled.
  for (int e = threadIdx.x; e < kRows * a.D; e += blockDim.x) {
    const int rr = e / a.D, d = e - rr * a.D, r = r0 + rr;
    A val = 0;
    if (r < group_rows) {
      const long long h = hk * a.R + r / a.Lq, i = r % a.Lq;
      val = rows::to_acc<A>(q[b * a.q_b + h * a.q_h + i * a.q_l + d]) * static_cast<A>(a.scale);
    }
    qs[e] = val;
  }
  // The key range: this split's, cut at the last key any row of the block sees.
  const long long j0 = static_cast<long long>(blockIdx.y) * a.split_keys;
  long long j1 = j0 + a.split_keys < a.Lk ? j0 + a.split_keys : a.Lk;
  if (a.mask == kCausal) {
    long long need = 0;
    for (int rr = 0; rr < kRows && r0 + rr < group_rows; ++rr) {
      const long long i = (r0 + rr) % a.Lq;
      const long long e = causal_key_end(a, i, i);
      need = e > need ? e : need;
    }
    j1 = j1 < need ? j1 : need;
  }

  A m[4], l[4], o[4][DPL];
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const int r = r0 + t * 4 + warp;
    const long long h = hk * a.R + (r < group_rows ? r / a.Lq : 0);
    // A sink joins the normalization once: in the first split.
    const bool sink = a.has_sinks && blockIdx.y == 0;
    m[t] = sink ? rows::to_acc<A>(sinks[h]) : -rows::infinity<A>();
    l[t] = sink ? A(1) : A(0);
#pragma unroll
    for (int dd = 0; dd < DPL; ++dd) o[t][dd] = 0;
  }

  for (long long jt = j0; jt < j1; jt += kKeyTile) {
    __syncthreads();
    detail::load_tile(ks, k + b * a.k_b + hk * a.k_h, a.k_l, jt, a.Lk, a.D, a.kv_vec);
    detail::load_tile(vs, v + b * a.v_b + hk * a.v_h, a.v_l, jt, a.Lk, a.Dv, a.kv_vec);
    __syncthreads();
    const long long j = jt + lane;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int r = r0 + t * 4 + warp;
      if (r >= group_rows) continue;  // uniform across the warp
      const long long h = hk * a.R + r / a.Lq, i = r % a.Lq;
      A s = detail::dot(qs + (t * 4 + warp) * a.D, ks + lane * (a.D + 1), a.D);
      if (j < j1)
        apply_mask<A, T>(a, mask, b, h, i, j, s);
      else
        s = -rows::infinity<A>();
      const A mn = rows::nan_max(m[t], rows::warp_max(s));
      const A shift = mn == -rows::infinity<A>() ? A(0) : mn;
      const A p = rows::fast_exp(s - shift);
      const A alpha = rows::fast_exp(m[t] - shift);
      l[t] = l[t] * alpha + rows::warp_sum(p);
      m[t] = mn;
#pragma unroll
      for (int dd = 0; dd < DPL; ++dd) o[t][dd] *= alpha;
      for (int jj = 0; jj < kKeyTile; ++jj) {
        const A pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
        for (int dd = 0; dd < DPL; ++dd) {
          const int d = lane + 32 * dd;
          if (d < a.Dv) o[t][dd] += pj * vs[jj * (a.Dv + 1) + d];
        }
      }
    }
  }

#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const int r = r0 + t * 4 + warp;
    if (r >= group_rows) continue;
    const long long h = hk * a.R + r / a.Lq, i = r % a.Lq;
    const long long row = (b * a.Hq + h) * a.Lq + i;
    if (a.splits > 1) {
      const long long prow = static_cast<long long>(blockIdx.y) * a.B * a.Hq * a.Lq + row;
#pragma unroll
      for (int dd = 0; dd < DPL; ++dd) {
        const int d = lane + 32 * dd;
        if (d < a.Dv) po[prow * a.Dv + d] = o[t][dd];
      }
      if (lane == 0) {
        pml[2 * prow] = m[t];
        pml[2 * prow + 1] = l[t];
      }
    } else {
      const A inv = a.Lk == 0 ? A(0) : A(1) / l[t];
#pragma unroll
      for (int dd = 0; dd < DPL; ++dd) {
        const int d = lane + 32 * dd;
        if (d < a.Dv) out[row * a.Dv + d] = rows::from_acc<T>(o[t][dd] * inv);
      }
      if (lane == 0) lse[row] = m[t] + rows::fast_log(l[t]);
    }
  }
}

// ---------------------------------------------------------------- backward

/** Drow = dO . O per query row (row-contiguous (rows, Dv) arrays), one warp per row. */
template <typename T>
__global__ void __launch_bounds__(128)
    simple_bwd_rowdot(const T* __restrict__ o, const T* __restrict__ dout,
                      rows::Acc<T>* __restrict__ drow, long long rows, int Dv) {
  using A = rows::Acc<T>;
  const long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  A s = 0;
  for (int d = lane; d < Dv; d += 32)
    s += rows::to_acc<A>(o[row * Dv + d]) * rows::to_acc<A>(dout[row * Dv + d]);
  s = rows::warp_sum(s);
  if (lane == 0) drow[row] = s;
}

namespace detail {

/** P = exp(s - lse) of a score, and whether the row sees no key (lse rounded to the lowest
 * value: its weights are uniform, 1 / Lk). */
template <typename A>
__device__ inline A prob(A s, A lse, int Lk) {
  if (lse <= lowest<A>() / 2) return A(1) / static_cast<A>(Lk);
  return rows::fast_exp(s - lse);
}

}  // namespace detail

/** dQ = scale * sum_j dS_ij K_j with dS = P (dO V^T - Drow), hidden scores' dS zero. Grid x
 * as simple_fwd's (no splits); DPL = ceil(max(D, Dv) / 32). */
template <typename T, int DPL>
__global__ void __launch_bounds__(128)
    simple_bwd_dq(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                  const void* __restrict__ mask, const T* __restrict__ dout,
                  const rows::Acc<T>* __restrict__ lse, const rows::Acc<T>* __restrict__ drow,
                  T* __restrict__ dq, const __grid_constant__ Args a) {
  using A = rows::Acc<T>;
  extern __shared__ unsigned char smem_raw[];
  A* qs = reinterpret_cast<A*>(smem_raw);
  A* dos = qs + kRows * a.D;
  A* ks = dos + kRows * a.Dv;
  A* vs = ks + kKeyTile * (a.D + 1);
  const int group_rows = a.R * a.Lq;
  const int row_blocks = (group_rows + kRows - 1) / kRows;
  const long long bh = blockIdx.x / row_blocks;
  const long long b = bh / a.Hk, hk = bh % a.Hk;
  const int r0 = (blockIdx.x % row_blocks) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int e = threadIdx.x; e < kRows * a.D; e += blockDim.x) {
    const int rr = e / a.D, d = e - rr * a.D, r = r0 + rr;
    A val = 0;
    if (r < group_rows) {
      const long long h = hk * a.R + r / a.Lq, i = r % a.Lq;
      val = rows::to_acc<A>(q[b * a.q_b + h * a.q_h + i * a.q_l + d]) * static_cast<A>(a.scale);
    }
    qs[e] = val;
  }
  for (int e = threadIdx.x; e < kRows * a.Dv; e += blockDim.x) {
    const int rr = e / a.Dv, d = e - rr * a.Dv, r = r0 + rr;
    A val = 0;
    if (r < group_rows) {
      const long long h = hk * a.R + r / a.Lq, i = r % a.Lq;
      val = rows::to_acc<A>(dout[((b * a.Hq + h) * a.Lq + i) * a.Dv + d]);
    }
    dos[e] = val;
  }
  long long j1 = a.Lk;
  if (a.mask == kCausal) {
    long long need = 0;
    for (int rr = 0; rr < kRows && r0 + rr < group_rows; ++rr) {
      const long long i = (r0 + rr) % a.Lq;
      const long long e = causal_key_end(a, i, i);
      need = e > need ? e : need;
    }
    j1 = need;
  }
  A acc[4][DPL];
#pragma unroll
  for (int t = 0; t < 4; ++t)
#pragma unroll
    for (int dd = 0; dd < DPL; ++dd) acc[t][dd] = 0;
  for (long long jt = 0; jt < j1; jt += kKeyTile) {
    __syncthreads();
    detail::load_tile(ks, k + b * a.k_b + hk * a.k_h, a.k_l, jt, a.Lk, a.D, a.kv_vec);
    detail::load_tile(vs, v + b * a.v_b + hk * a.v_h, a.v_l, jt, a.Lk, a.Dv, a.kv_vec);
    __syncthreads();
    const long long j = jt + lane;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int r = r0 + t * 4 + warp;
      if (r >= group_rows) continue;
      const long long h = hk * a.R + r / a.Lq, i = r % a.Lq;
      const long long row = (b * a.Hq + h) * a.Lq + i;
      A s = detail::dot(qs + (t * 4 + warp) * a.D, ks + lane * (a.D + 1), a.D);
      const bool hidden = j < a.Lk && apply_mask<A, T>(a, mask, b, h, i, j, s);
      A ds = 0;
      if (j < a.Lk && !hidden) {
        const A p = detail::prob(s, lse[row], a.Lk);
        const A dp = detail::dot(dos + (t * 4 + warp) * a.Dv, vs + lane * (a.Dv + 1), a.Dv);
        ds = p * (dp - drow[row]);
      }
      for (int jj = 0; jj < kKeyTile; ++jj) {
        const A dj = __shfl_sync(0xffffffffu, ds, jj);
        if (dj == A(0)) continue;  // uniform across the warp
#pragma unroll
        for (int dd = 0; dd < DPL; ++dd) {
          const int d = lane + 32 * dd;
          if (d < a.D) acc[t][dd] += dj * ks[jj * (a.D + 1) + d];
        }
      }
    }
  }
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const int r = r0 + t * 4 + warp;
    if (r >= group_rows) continue;
    const long long h = hk * a.R + r / a.Lq, i = r % a.Lq;
    const long long row = (b * a.Hq + h) * a.Lq + i;
#pragma unroll
    for (int dd = 0; dd < DPL; ++dd) {
      const int d = lane + 32 * dd;
      if (d < a.D) dq[row * a.D + d] = rows::from_acc<T>(acc[t][dd] * static_cast<A>(a.scale));
    }
  }
}

/** Shared memory of simple_bwd_dkv: k and v tiles, their gradient sums, and 4 rows of q
 * (scaled), dO, P and dS. */
__host__ __device__ constexpr long long simple_dkv_smem(int D, int Dv, int acc_size) {
  return (static_cast<long long>(kKeyTile) * (D + 1) + kKeyTile * (Dv + 1) + kKeyTile * D +
          kKeyTile * Dv + 4 * D + 4 * Dv + 2 * 4 * kKeyTile) *
         acc_size;
}

/** dK and dV of one key tile over every query row of its group. Grid x: B * Hk * key tiles.
 * Outputs (B, Hk, Lk, D) and (B, Hk, Lk, Dv), row-contiguous. */
template <typename T>
__global__ void __launch_bounds__(128)
    simple_bwd_dkv(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                   const void* __restrict__ mask, const T* __restrict__ dout,
                   const rows::Acc<T>* __restrict__ lse, const rows::Acc<T>* __restrict__ drow,
                   T* __restrict__ dk, T* __restrict__ dv, const __grid_constant__ Args a) {
  using A = rows::Acc<T>;
  extern __shared__ unsigned char smem_raw[];
  A* ks = reinterpret_cast<A*>(smem_raw);
  A* vs = ks + kKeyTile * (a.D + 1);
  A* dks = vs + kKeyTile * (a.Dv + 1);
  A* dvs = dks + kKeyTile * a.D;
  A* qr = dvs + kKeyTile * a.Dv;  // 4 rows
  A* dor = qr + 4 * a.D;          // 4 rows
  A* ps = dor + 4 * a.Dv;         // [4][32]
  A* dss = ps + 4 * kKeyTile;     // [4][32]
  const int tiles = (a.Lk + kKeyTile - 1) / kKeyTile;
  const long long bh = blockIdx.x / tiles;
  const long long b = bh / a.Hk, hk = bh % a.Hk;
  const long long jt = static_cast<long long>(blockIdx.x % tiles) * kKeyTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  detail::load_tile(ks, k + b * a.k_b + hk * a.k_h, a.k_l, jt, a.Lk, a.D, a.kv_vec);
  detail::load_tile(vs, v + b * a.v_b + hk * a.v_h, a.v_l, jt, a.Lk, a.Dv, a.kv_vec);
  for (int e = threadIdx.x; e < kKeyTile * a.D; e += blockDim.x) dks[e] = 0;
  for (int e = threadIdx.x; e < kKeyTile * a.Dv; e += blockDim.x) dvs[e] = 0;
  const int group_rows = a.R * a.Lq;
  const long long off = causal_offset(a);
  const long long j = jt + lane;
  for (int r0 = 0; r0 < group_rows; r0 += 4) {
    __syncthreads();
    // Four rows at once: q (scaled) and dO into shared memory.
    for (int e = threadIdx.x; e < 4 * a.D; e += blockDim.x) {
      const int rr = e / a.D, d = e - rr * a.D, r = r0 + rr;
      A val = 0;
      if (r < group_rows) {
        const long long h = hk * a.R + r / a.Lq, i = r % a.Lq;
        val = rows::to_acc<A>(q[b * a.q_b + h * a.q_h + i * a.q_l + d]) * static_cast<A>(a.scale);
      }
      qr[e] = val;
    }
    for (int e = threadIdx.x; e < 4 * a.Dv; e += blockDim.x) {
      const int rr = e / a.Dv, d = e - rr * a.Dv, r = r0 + rr;
      A val = 0;
      if (r < group_rows) {
        const long long h = hk * a.R + r / a.Lq, i = r % a.Lq;
        val = rows::to_acc<A>(dout[((b * a.Hq + h) * a.Lq + i) * a.Dv + d]);
      }
      dor[e] = val;
    }
    __syncthreads();
    // Warp w: P and dS of row r0 + w against the tile's keys.
    {
      const int r = r0 + warp;
      A p = 0, ds = 0;
      if (r < group_rows && j < a.Lk) {
        const long long h = hk * a.R + r / a.Lq, i = r % a.Lq;
        // Causal: a row whose last visible key precedes the tile (and that sees some key)
        // has P = 0 there.
        if (a.mask != kCausal || i + off >= jt || i + off < 0) {
          const long long row = (b * a.Hq + h) * a.Lq + i;
          A s = detail::dot(qr + warp * a.D, ks + lane * (a.D + 1), a.D);
          const bool hidden = apply_mask<A, T>(a, mask, b, h, i, j, s);
          p = detail::prob(s, lse[row], a.Lk);
          const A dp = detail::dot(dor + warp * a.Dv, vs + lane * (a.Dv + 1), a.Dv);
          ds = hidden ? A(0) : p * (dp - drow[row]);
        }
      }
      ps[warp * kKeyTile + lane] = p;
      dss[warp * kKeyTile + lane] = ds;
    }
    __syncthreads();
    // Every thread owns elements (key, feature) of dK and dV.
    for (int e = threadIdx.x; e < kKeyTile * a.Dv; e += blockDim.x) {
      const int jj = e / a.Dv, d = e - jj * a.Dv;
      A acc = 0;
#pragma unroll
      for (int w = 0; w < 4; ++w) acc += ps[w * kKeyTile + jj] * dor[w * a.Dv + d];
      dvs[e] += acc;
    }
    for (int e = threadIdx.x; e < kKeyTile * a.D; e += blockDim.x) {
      const int jj = e / a.D, d = e - jj * a.D;
      A acc = 0;
#pragma unroll
      for (int w = 0; w < 4; ++w) acc += dss[w * kKeyTile + jj] * qr[w * a.D + d];
      dks[e] += acc;
    }
  }
  __syncthreads();
  const long long kb = (b * a.Hk + hk) * a.Lk;
  for (int e = threadIdx.x; e < kKeyTile * a.D; e += blockDim.x) {
    const int jj = e / a.D, d = e - jj * a.D;
    if (jt + jj < a.Lk) dk[(kb + jt + jj) * a.D + d] = rows::from_acc<T>(dks[e]);
  }
  for (int e = threadIdx.x; e < kKeyTile * a.Dv; e += blockDim.x) {
    const int jj = e / a.Dv, d = e - jj * a.Dv;
    if (jt + jj < a.Lk) dv[(kb + jt + jj) * a.Dv + d] = rows::from_acc<T>(dvs[e]);
  }
}

/** dsinks[h] = -sum over b, i of exp(sink_h - lse) Drow (a warp per head), in T. */
template <typename T>
__global__ void __launch_bounds__(32)
    simple_bwd_sinks(const T* __restrict__ sinks, const rows::Acc<T>* __restrict__ lse,
                     const rows::Acc<T>* __restrict__ drow, T* __restrict__ dsinks, int B, int Hq,
                     int Lq) {
  using A = rows::Acc<T>;
  const int h = blockIdx.x;
  const A sink = rows::to_acc<A>(sinks[h]);
  A s = 0;
  for (long long e = threadIdx.x; e < static_cast<long long>(B) * Lq; e += 32) {
    const long long b = e / Lq, i = e % Lq;
    const long long row = (b * Hq + h) * Lq + i;
    s -= rows::fast_exp(sink - lse[row]) * drow[row];
  }
  s = rows::warp_sum(s);
  if (threadIdx.x == 0) dsinks[h] = rows::from_acc<T>(s);
}

}  // namespace kiln::attn
