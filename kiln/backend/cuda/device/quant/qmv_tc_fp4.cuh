// mxfp4 / nvfp4 matvec on tensor cores (backend/cuda/quantized.cpp): out = x @ W^T for up to
// 16 rows of bfloat16 x, streaming W's e2m1 codes.
//
// Decoding e2m1 in float costs ~6 instructions per code. Here a pair of codes (nibbles j and
// j + 4 of a word) becomes a bfloat16 pair in three: mask the two nibbles, one IMAD adds two
// shifted copies (magnitude under bit 6, sign under bit 15), mask again. The bits read
// 2^-126 times the e2m1 value (0.5 as a subnormal), and one bf16x2 multiply by the group's
// scale times 2^126 / 2^C makes them the exact value * scale / 2^C (e2m1 has 2 significant
// bits, e8m0 1 and e4m3 4: the product fits bfloat16's 8). These are the m16n8k16 A
// fragments, x the B fragment (one column per x row), and the tiles accumulate in the mma's
// float registers; out = 2^C * D (* nvfp4's global scale / (448 * 6)) once at the end.
// C = 16 (mxfp4) keeps e8m0 scales up to 2^17 in one multiply; larger ones (a warp-uniform
// branch) take two, and scales below 2^-110 round the weights (to bfloat16's subnormals). C = 8
// (nvfp4) fits every e4m3 scale.
//
// Layout as quant_qmv_tc (qmv_tc.cuh): a block owns 16 weight rows, its WARPS warps take
// interleaved 128-element K tiles; lane (g = lane / 4, t = lane % 4) reads 16 bytes of rows g
// and g + 8 per tile (one mxfp4 group, two nvfp4 groups) DEPTH tiles ahead.
#pragma once

#include "kiln/backend/cuda/device/quant/qmv_tc.cuh"

namespace kiln {

// a * b on bfloat16 pairs (fma with -0 keeps the product's sign of zero; subnormal inputs
// are exact).
__device__ inline unsigned int qmv_fp4_mul(unsigned int a, unsigned int b) {
#if __CUDA_ARCH__ < 800
  __trap();
  return 0u;
#else
  unsigned int d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
  return d;
#endif
}

// Codes j and j + 4 (j = 0, 1) of `src` as a bfloat16 pair reading 2^-126 times their values.
template <int J>
__device__ inline unsigned int qmv_fp4_pair(unsigned int src) {
  constexpr unsigned int kNibbles = 0x000F000Fu << (4 * J);
  constexpr unsigned int kCopies = (1u << (6 - 4 * J)) + (1u << (12 - 4 * J));
  return ((src & kNibbles) * kCopies) & 0x81C081C0u;
}

// A bfloat16 pair of one float's upper half (exact when its mantissa fits bfloat16's).
__device__ inline unsigned int qmv_fp4_bf16_pair(float f) {
  return __byte_perm(__float_as_uint(f), 0u, 0x3232);
}

template <int MODE>
struct QmvFp4 {
  static constexpr int kGs = MODE == kQNvfp4 ? 16 : 32;
  static constexpr int kC = MODE == kQNvfp4 ? 8 : 16;  // the exponent kept out of the A values
  static constexpr int kMaxE8 = 127 + 1 + kC;          // the largest e8m0 of one multiply
};

// The pair multiplier of e8m0 scale s: 2^(s - 127) * 2^126 / 2^C (valid to kMaxE8).
__device__ inline unsigned int qmv_fp4_e8m0(unsigned int s) {
  return ((s + 126u - QmvFp4<kQMxfp4>::kC) << 7) * 0x00010001u;
}

// The pair multiplier of e4m3 scale b: e4m3(b) * 2^126 / 2^8. Its bits under a float's
// exponent read e4m3(b) * 2^-120 (subnormals included); two exact multiplies scale them up.
__device__ inline unsigned int qmv_fp4_e4m3(unsigned int b) {
  const float mag = __uint_as_float((b & 0x7Fu) << 20) * 0x1p119f * 0x1p119f;
  return qmv_fp4_bf16_pair(__uint_as_float(__float_as_uint(mag) | ((b & 0x80u) << 24)));
}

template <typename P, int MODE, int NT, int WARPS, int DEPTH>
__global__ void __launch_bounds__(WARPS * 32)
    quant_qmv_tc_fp4(const bfloat16* x, const unsigned int* w, const unsigned char* scales,
                     const float* global, P* out, QmvArgs a) {
  using F = QmvFp4<MODE>;
  constexpr int TILE = 128, C = 32;  // K per tile, codes of a lane per row and tile
  constexpr bool kNv = MODE == kQNvfp4;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long n0 = blockIdx.x * 16LL, b = blockIdx.z;
  x += b * a.x_batch;
  // Rows g and g + 8; rows past N read row N - 1 and are never written.
  const unsigned int* wr[2];
  const unsigned char* sr[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const long long n = n0 + g + 8 * h;
    const long long row = n < a.N ? n : a.N - 1;
    wr[h] = w + b * a.w_batch + row * a.wpr + t * (C / 8);
    sr[h] = scales + b * a.s_batch + row * a.gpr + t * (C / F::kGs);
  }
  // B column ct * 8 + g is x row ct * 8 + g.
  const bfloat16* xr[NT];
  bool xv[NT];
  qmv_tc_x_rows<NT, 1>(x + t * C, a, g, 0, xr, xv);
  long long t0, t1;
  qmv_tc_split_tiles(a, TILE, t0, t1);
  float acc[NT][4] = {};
  // The ring: DEPTH tiles' codes and scale bytes (one or two per row) of both rows.
  struct Stage {
    uint4 w[2];
    unsigned int s[2];
  };
  auto load_stage = [&](long long tile, Stage& st) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      st.w[h] = qmv_tc_stream(wr[h] + tile * (TILE / 8));
      if constexpr (kNv)
        st.s[h] = *reinterpret_cast<const unsigned short*>(sr[h] + tile * (TILE / F::kGs));
      else
        st.s[h] = sr[h][tile * (TILE / F::kGs)];
    }
  };
  Stage ring[DEPTH];
#pragma unroll
  for (int d = 0; d < DEPTH; ++d) {
    const long long tile = t0 + warp + d * WARPS;
    if (tile < t1) load_stage(tile, ring[d]);
  }
  // One tile: called with constant d and `slow`, so that each inlined copy keeps one path.
  auto step = [&](const long long base, const int d, const bool slow) {
    const long long tile = base + d * WARPS;
    if (tile >= t1) return;
    unsigned int X[NT][C / 2];
    qmv_tc_load_x<NT, C>(X, xr, xv, tile * TILE);
    // Pair multipliers f[h][k]: row h, words 2k and 2k + 1 (nvfp4's two groups).
    unsigned int f[2][2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const unsigned int s = ring[d].s[h];
      if constexpr (kNv) {
        f[h][0] = qmv_fp4_e4m3(s & 0xFFu);
        f[h][1] = qmv_fp4_e4m3(s >> 8);
      } else {
        f[h][0] = f[h][1] = qmv_fp4_e8m0(s);
      }
    }
    if (slow) {
      // Rare (e8m0 scales past 2^(kMaxE8 - 127)): each pair times 2^126 first, then by
      // 2^(s - 127 - C) (infinite for s = 255, as the float path). A rolled loop reading x
      // from L1, so that it stays small beside the unrolled common path.
      unsigned int f2[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const unsigned int s = ring[d].s[h];
        const unsigned int e = s == 255u ? 255u : s - F::kC;
        const bool big = s > static_cast<unsigned int>(F::kMaxE8);
        f2[h] = big ? (e << 7) * 0x00010001u : 0x3F803F80u;
        if (big) f[h][0] = 0x7E807E80u;  // 2^126
      }
#pragma unroll 1
      for (int j = 0; j < 8; ++j) {
        const int q = j / 2;
        unsigned int af[4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const unsigned int v = qmv_tc_word(ring[d].w[h], q) >> ((j & 1) * 8);
          af[h] = qmv_fp4_mul(qmv_fp4_mul(qmv_fp4_pair<0>(v), f[h][0]), f2[h]);
          af[2 + h] = qmv_fp4_mul(qmv_fp4_mul(qmv_fp4_pair<1>(v), f[h][0]), f2[h]);
        }
#pragma unroll
        for (int ct = 0; ct < NT; ++ct) {
          const unsigned short* xs = reinterpret_cast<const unsigned short*>(xr[ct] + tile * TILE);
          unsigned int bf[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int p = 2 * j + e, j0 = (p / 4) * 8 + p % 4;
            bf[e] = xv[ct] ? xs[j0] | (static_cast<unsigned int>(xs[j0 + 4]) << 16) : 0u;
          }
          qmv_mma<bfloat16>(acc[ct], af, bf);
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        // Step j: word q = j / 2 of each row, pairs (nibbles 0-4, 1-5) of it for even j and
        // (2-6, 3-7) for odd j (the word shifted by 8); x permuted alike.
        const int q = j / 2;
        unsigned int af[4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const unsigned int v = qmv_tc_word(ring[d].w[h], q) >> ((j & 1) * 8);
          const unsigned int fk = f[h][q / 2];
          af[h] = qmv_fp4_mul(qmv_fp4_pair<0>(v), fk);
          af[2 + h] = qmv_fp4_mul(qmv_fp4_pair<1>(v), fk);
        }
#pragma unroll
        for (int ct = 0; ct < NT; ++ct) {
          unsigned int bf[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int p = 2 * j + e, j0 = (p / 4) * 8 + p % 4, j1 = j0 + 4;
            bf[e] = __byte_perm(X[ct][j0 / 2], X[ct][j1 / 2], (j0 & 1) ? 0x7632 : 0x5410);
          }
          qmv_mma<bfloat16>(acc[ct], af, bf);
        }
      }
    }
    const long long next = tile + DEPTH * WARPS;
    if (next < t1) load_stage(next, ring[d]);
  };
  for (long long base = t0 + warp; base < t1; base += DEPTH * WARPS) {
    // e8m0 scales past 2^(kMaxE8 - 127) anywhere in the ring (rare) take the slow path for
    // these DEPTH tiles: one warp-uniform branch per ring, the common path one block of code.
    bool wide = false;
    if constexpr (!kNv) {
#pragma unroll
      for (int d = 0; d < DEPTH; ++d)
        wide |= ring[d].s[0] > static_cast<unsigned int>(F::kMaxE8) ||
                ring[d].s[1] > static_cast<unsigned int>(F::kMaxE8);
    }
    if (!kNv && __any_sync(0xffffffffu, wide)) {
#pragma unroll
      for (int d = 0; d < DEPTH; ++d) step(base, d, true);
    } else {
#pragma unroll
      for (int d = 0; d < DEPTH; ++d) step(base, d, false);
    }
  }
  // The block's warps add their sums; warp 0 scales and writes.
  if (!qmv_tc_block_sum<WARPS, NT>(acc, warp, lane)) return;
  float gf = static_cast<float>(1 << F::kC);
  if (kNv && global) gf *= global[b * a.g_batch] / (448.0f * 6.0f);
  qmv_tc_store<NT, 1>(acc, out, a, n0, g, t, gf);
}

}  // namespace kiln
