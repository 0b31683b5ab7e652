// Affine 2/4-bit matvec on tensor cores (backend/cuda/quantized.cpp): out = x @ W^T for up to
// 16 rows of half or bfloat16 x (8 with group size 64, 4 with 32), streaming W.
//
// Dequantizing in float costs ~5 instructions per code (extract, convert, FMA), more than the
// SM issues at HBM3e rates. Here codes enter m16n8k16 A fragments as they are, OR'd under a
// magic exponent (a shift and one LOP3 for two codes: 128 + q in bfloat16, 1024 + q in half,
// both exact), and x is the B fragment. Each B column is one (x row, group of the tile) pair,
// x being zero outside that group, so the products D = sum_k x_k (OFF + q_k) of different
// groups stay apart; a product with an all-ones A gives sum_k x_k, and per tile, in float,
//   out += scale * D + (bias - OFF * scale) * sum_k x_k.
// The products are exact and the cancellation of OFF * sum_k x_k costs ~7 (bfloat16) or 10
// (half) of float's 24 bits, well under the inputs' 8 or 11; the weights are never rounded.
//
// Layout: a block owns 16 weight rows; its WARPS warps take interleaved K tiles
// and add their sums in shared memory. A lane (g = lane / 4, t = lane % 4) reads 16 bytes of
// rows g and g + 8 per tile with their scales and biases, DEPTH tiles ahead (bypassing L1,
// which keeps x). blockIdx.y splits K into float partials (quant_splitk_sum) when rows are few.
// ncu (H200, 28672 x 8192, M = 1): the ALU pipe (shifts, LOP3, PRMT) is the busiest, at 61%.
#pragma once

#include "kiln/backend/cuda/device/quant/quantized.cuh"

namespace kiln {

// One m16n8k16 tensor-core product (row-major A, column-major B, float accumulators) of
// half (T = float16) or bfloat16 pairs packed in 32-bit registers.
template <typename T>
__device__ inline void qmv_mma(float* c, const unsigned int* a, const unsigned int* b) {
#if __CUDA_ARCH__ < 800
  __trap();  // the host picks this kernel on compute capability 8.0 and newer only
#else
  if constexpr (is_same_v<T, bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

template <int BITS>
struct QmvTcShape {
  static constexpr int kPer = 32 / BITS;     // codes per word
  static constexpr int kLane = 4 * kPer;     // codes of one row a lane reads per tile (16 bytes)
  static constexpr int kTile = 4 * kLane;    // K per tile
  static constexpr int kSteps = kTile / 16;  // m16n8k16 products per tile and column tile
};

// 16 bytes of weights, not kept in L1; L2 fetches the whole 256-byte block (the block's warps
// read it together: measured 1-5% faster on H100 and H200).
__device__ inline uint4 qmv_tc_stream(const unsigned int* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// A T pair (2 x 16 bits) as two floats.
template <typename T>
__device__ inline void qmv_tc_unpack(unsigned int v, float& lo, float& hi) {
  if constexpr (is_same_v<T, bfloat16>) {
    lo = __uint_as_float(v << 16);
    hi = __uint_as_float(v & 0xFFFF0000u);
  } else {
    lo = detail::half_bits_to_float(static_cast<unsigned short>(v & 0xFFFFu));
    hi = detail::half_bits_to_float(static_cast<unsigned short>(v >> 16));
  }
}

// (a & mask) | magic in one LOP3 (the compiler splits it in two when both are immediates).
__device__ inline unsigned int qmv_tc_and_or(unsigned int a, unsigned int mask,
                                             unsigned int magic) {
  unsigned int d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(mask), "r"(magic));
  return d;
}

// This lane's B columns in column tile ct: n = ct * 8 + g is x row n / G restricted to the
// group slot n % G, nonzero only when that is `slot`, the slot of the lane's codes (G = 1: every
// column is an x row). xr: the row's start (row 0 for the zero columns), x at the lane's codes.
template <int NT, int G, typename T>
__device__ inline void qmv_tc_x_rows(const T* x, const QmvArgs& a, int g, int slot,
                                     const T* (&xr)[NT], bool (&xv)[NT]) {
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
    const int n = ct * 8 + g, m = n / G;
    xv[ct] = n % G == slot && m < a.M;
    xr[ct] = x + (xv[ct] ? m : 0) * a.K;
  }
}

// The K tiles [t0, t1) of this block's split (blockIdx.y of a.splits).
__device__ inline void qmv_tc_split_tiles(const QmvArgs& a, int tile, long long& t0,
                                          long long& t1) {
  const long long tiles = a.K / tile;
  const long long per_split = (tiles + a.splits - 1) / a.splits;
  t0 = blockIdx.y * per_split;
  t1 = t0 + per_split < tiles ? t0 + per_split : tiles;
}

// Word q (0-3) of a 16-byte vector (q known at compile time once unrolled).
__device__ inline unsigned int qmv_tc_word(const uint4& v, int q) {
  return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}

// x values of this lane's C codes in each column tile's row (pairs of consecutive elements,
// as loaded; zeros for padding rows); L1 keeps x across the block's rows.
template <int NT, int C, typename T>
__device__ inline void qmv_tc_load_x(unsigned int (&X)[NT][C / 2], const T* const (&xr)[NT],
                                     const bool (&xv)[NT], long long offset) {
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
    if (xv[ct]) {
      const uint4* src = reinterpret_cast<const uint4*>(xr[ct] + offset);
#pragma unroll
      for (int i = 0; i < C / 8; ++i) {
        const uint4 v = src[i];
        X[ct][4 * i] = v.x, X[ct][4 * i + 1] = v.y, X[ct][4 * i + 2] = v.z, X[ct][4 * i + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < C / 2; ++i) X[ct][i] = 0u;
    }
  }
}

// Adds the block's WARPS warps' accumulators into warp 0's through shared memory; false for
// the other warps, which are done.
template <int WARPS, int NT>
__device__ inline bool qmv_tc_block_sum(float (&acc)[NT][4], int warp, int lane) {
  if constexpr (WARPS > 1) {
    __shared__ float red[WARPS - 1][NT * 4][32];
    if (warp > 0)
#pragma unroll
      for (int ct = 0; ct < NT; ++ct)
#pragma unroll
        for (int i = 0; i < 4; ++i) red[warp - 1][ct * 4 + i][lane] = acc[ct][i];
    __syncthreads();
    if (warp > 0) return false;
#pragma unroll
    for (int v = 0; v < WARPS - 1; ++v)
#pragma unroll
      for (int ct = 0; ct < NT; ++ct)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[ct][i] += red[v][ct * 4 + i][lane];
  }
  return true;
}

// Writes warp 0's sums times `scale`: C fragment i = e (row g) and 2 + e (row g + 8) of
// column n = ct * 8 + 2t + e, which is (x row n / G, group slot n % G); a row's slots are summed
// (across the lane's two columns, and for G = 4 its neighbour's). Rows past N and padding x rows
// are not written; splits write their partials apart.
template <int NT, int G, typename P>
__device__ inline void qmv_tc_store(const float (&acc)[NT][4], P* out, const QmvArgs& a,
                                    long long n0, int g, int t, float scale) {
  P* dst = out + blockIdx.z * a.out_batch + (a.splits > 1 ? blockIdx.y * a.M * a.N : 0LL);
  const long long nA = n0 + g, nB = nA + 8;
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float vA = acc[ct][e], vB = acc[ct][2 + e];
      const int m = (ct * 8 + 2 * t + e) / G;
      bool owner = true;
      if constexpr (G >= 2) {
        vA = acc[ct][0] + acc[ct][1];
        vB = acc[ct][2] + acc[ct][3];
        owner = e == 0;
      }
      if constexpr (G == 4) {
        vA += __shfl_xor_sync(0xffffffffu, vA, 1);
        vB += __shfl_xor_sync(0xffffffffu, vB, 1);
        owner = e == 0 && (t & 1) == 0;
      }
      if (owner && m < a.M) {
        if (nA < a.N) dst[m * a.N + nA] = static_cast<P>(vA * scale);
        if (nB < a.N) dst[m * a.N + nB] = static_cast<P>(vB * scale);
      }
    }
  }
}

// NT column tiles of 8 (x row, group slot) pairs: M <= 8 * NT / G where G = kTile / GS.
template <typename T, typename P, int BITS, int GS, int NT, int WARPS, int DEPTH>
__global__ void __launch_bounds__(WARPS * 32)
    quant_qmv_tc(const T* x, const unsigned int* w, const T* scales, const T* biases, P* out,
                 QmvArgs a) {
  using S = QmvTcShape<BITS>;
  constexpr int PER = S::kPer, C = S::kLane, TILE = S::kTile, HALF = PER / 2;
  static_assert(C <= GS && GS <= TILE, "a lane's codes lie in one group; a tile holds groups");
  constexpr int G = TILE / GS;  // groups per tile (column slots per x row)
  constexpr bool kBf = is_same_v<T, bfloat16>;
  constexpr float kOff = kBf ? 128.0f : 1024.0f;
  constexpr unsigned int kOnes = kBf ? 0x3F803F80u : 0x3C003C00u;
  // Runtime values, so that the LOP3 takes them from registers.
  const unsigned int mask2 = ((1u << BITS) - 1u) * 0x00010001u;
  const unsigned int magic = kBf ? 0x43004300u : 0x64006400u;  // 128 / 1024 in each half
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long n0 = blockIdx.x * 16LL, b = blockIdx.z;
  x += b * a.x_batch;
  // This lane's rows: g and g + 8 (h = 0, 1). Rows past N read row N - 1 (valid memory) and
  // are never written. Scale/bias columns of a tile: groups tile * G + first + {0, 1}.
  const int first = G == 1 ? 0 : (2 * t) % G;
  const unsigned int* wr[2];
  const T* sr[2];
  const T* br[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const long long n = n0 + g + 8 * h;
    const long long row = n < a.N ? n : a.N - 1;
    wr[h] = w + b * a.w_batch + row * a.wpr + t * (C / PER);
    sr[h] = scales + b * a.s_batch + row * a.gpr + first;
    br[h] = biases + b * a.s_batch + row * a.gpr + first;
  }
  const T* xr[NT];
  bool xv[NT];
  qmv_tc_x_rows<NT, G>(x + t * C, a, g, t * C / GS, xr, xv);
  long long t0, t1;
  qmv_tc_split_tiles(a, TILE, t0, t1);
  float acc[NT][4] = {};
  // The ring holds DEPTH tiles' weights and scales/biases (T pairs: this lane's two groups,
  // or one twice) of both rows; a slot is refilled once its tile is done.
  struct Stage {
    uint4 w[2];
    unsigned int s[2], b[2];
  };
  auto load_stage = [&](long long tile, Stage& st) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      st.w[h] = qmv_tc_stream(wr[h] + tile * (TILE / PER));
      if constexpr (G == 1) {
        st.s[h] = reinterpret_cast<const unsigned short*>(sr[h])[tile] * 0x00010001u;
        st.b[h] = reinterpret_cast<const unsigned short*>(br[h])[tile] * 0x00010001u;
      } else {
        st.s[h] = *reinterpret_cast<const unsigned int*>(sr[h] + tile * G);
        st.b[h] = *reinterpret_cast<const unsigned int*>(br[h] + tile * G);
      }
    }
  };
  Stage ring[DEPTH];
#pragma unroll
  for (int d = 0; d < DEPTH; ++d) {
    const long long tile = t0 + warp + d * WARPS;
    if (tile < t1) load_stage(tile, ring[d]);
  }
  const unsigned int ones[4] = {kOnes, kOnes, kOnes, kOnes};
  for (long long base = t0 + warp; base < t1; base += DEPTH * WARPS) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d) {
      const long long tile = base + d * WARPS;
      if (tile >= t1) break;
      unsigned int X[NT][C / 2];
      qmv_tc_load_x<NT, C>(X, xr, xv, tile * TILE);
      float D[NT][4], Sx[NT][4];
#pragma unroll
      for (int ct = 0; ct < NT; ++ct)
#pragma unroll
        for (int i = 0; i < 4; ++i) D[ct][i] = Sx[ct][i] = 0.0f;
#pragma unroll
      for (int j = 0; j < S::kSteps; ++j) {
        // Pairs 2j and 2j + 1 of this lane: word q, codes (s, s + HALF) of it; x permuted alike.
        unsigned int bf[NT][2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int p = 2 * j + h, q = p / HALF, s = p % HALF;
          const int j0 = q * PER + s, j1 = j0 + HALF;
#pragma unroll
          for (int ct = 0; ct < NT; ++ct)
            bf[ct][h] = __byte_perm(X[ct][j0 / 2], X[ct][j1 / 2], (j0 & 1) ? 0x7632 : 0x5410);
        }
#pragma unroll
        for (int ct = 0; ct < NT; ++ct) qmv_mma<T>(Sx[ct], ones, bf[ct]);
        unsigned int af[4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int p = 2 * j + h, q = p / HALF, s = p % HALF;
          const uint4& wa = ring[d].w[0];
          const uint4& wb = ring[d].w[1];
          const unsigned int va = qmv_tc_word(wa, q), vb = qmv_tc_word(wb, q);
          af[2 * h] = qmv_tc_and_or(va >> (s * BITS), mask2, magic);
          af[2 * h + 1] = qmv_tc_and_or(vb >> (s * BITS), mask2, magic);
        }
#pragma unroll
        for (int ct = 0; ct < NT; ++ct) qmv_mma<T>(D[ct], af, bf[ct]);
      }
      // C fragment: i = 0, 1 row g, columns 2t, 2t + 1; i = 2, 3 row g + 8.
      float sc[4], c[4];
      qmv_tc_unpack<T>(ring[d].s[0], sc[0], sc[1]);
      qmv_tc_unpack<T>(ring[d].s[1], sc[2], sc[3]);
      qmv_tc_unpack<T>(ring[d].b[0], c[0], c[1]);
      qmv_tc_unpack<T>(ring[d].b[1], c[2], c[3]);
#pragma unroll
      for (int i = 0; i < 4; ++i) c[i] = fmaf(-kOff, sc[i], c[i]);
#pragma unroll
      for (int ct = 0; ct < NT; ++ct)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          acc[ct][i] = fmaf(c[i], Sx[ct][i], fmaf(sc[i], D[ct][i], acc[ct][i]));
      const long long next = tile + DEPTH * WARPS;
      if (next < t1) load_stage(next, ring[d]);
    }
  }
  // The block's warps add their sums; warp 0 writes.
  if (!qmv_tc_block_sum<WARPS, NT>(acc, warp, lane)) return;
  qmv_tc_store<NT, G>(acc, out, a, n0, g, t, 1.0f);
}

}  // namespace kiln
