// Quantization kernels (backend/cuda/quantized.cpp), MLX's packed layout: element k of a row
// is bits [k * BITS, (k + 1) * BITS) of the row's little-endian uint32 words.
//
// - quant_quantize: one thread per group, the CPU's float32 steps (so MLX's bits exactly).
// - quant_dequantize: one thread per group of output elements; quant_dequantize_vec (affine 2,
//   4 and 8 bits): whole words per thread, contiguous loads and stores.
// - quant_qmv: x (M <= 16 rows) @ W^T. One warp per weight row streams the packed row with
//   16-byte loads (4-byte ones for unaligned rows and for 1 and 2 bits, byte packs for
//   3/5/6 bits), dequantizes in registers and keeps M float sums; blockIdx.y splits K when
//   rows are few (float partials, summed by quant_splitk_sum).
// - quant_qmv_vec: the same for 2, 4 and 8 bits with vector loads, several rows per warp.
// - quant_qvm: x (M <= 16 rows) @ W (not transposed): one thread per output column, K split
//   over blockIdx.y.
// - quant_qmv_tc (qmv_tc.cuh): affine 2/4-bit, half types, on tensor cores;
//   quant_qmv_tc_fp4 (qmv_tc_fp4.cuh): mxfp4/nvfp4 with bfloat16 x, on tensor cores.
// Larger batches dequantize the weight and multiply with cuBLASLt.
#pragma once

#include "kiln/backend/cuda/device/types.cuh"
#include "kiln/backend/cuda/device/unary_ops.cuh"

namespace kiln {

// Modes, as QuantMode on the host.
constexpr int kQAffine = 0, kQMxfp4 = 1, kQMxfp8 = 2, kQNvfp4 = 3;

// e2m1 code c as a float: its bits placed in a half (sign 15, exponent 11-10, mantissa 9)
// read 2^-14 times the value, subnormal 0.5 included; no table in local memory.
__device__ inline float quant_fp4(unsigned int c) {
  const unsigned short h = static_cast<unsigned short>(((c & 7u) << 9) | ((c & 8u) << 12));
  return detail::half_bits_to_float(h) * 16384.0f;
}

// Code k of a packed row.
template <int BITS>
__device__ inline unsigned int quant_code(const unsigned int* row, long long k) {
  const long long bit = k * BITS;
  const unsigned int* p = row + (bit >> 5);
  const int off = static_cast<int>(bit & 31);
  unsigned long long v = p[0] >> off;
  if (off + BITS > 32) v |= static_cast<unsigned long long>(p[1]) << (32 - off);
  return static_cast<unsigned int>(v) & ((1u << BITS) - 1u);
}

// A group's scale as a float: e8m0 (0 reads as 2^-127, as MLX) or e4m3 times the global one.
template <int MODE>
__device__ inline float quant_fp_scale(unsigned char s, float global) {
  if (MODE == kQNvfp4) return FromFP8{}(s)*global;
  return s == 0 ? ldexpf(1.0f, -127) : ldexpf(1.0f, static_cast<int>(s) - 127);
}

// The value of code c before the group scale (fp modes).
template <int MODE>
__device__ inline float quant_fp_value(unsigned int c) {
  if (MODE == kQMxfp8) return FromFP8{}(static_cast<unsigned char>(c));
  return quant_fp4(c);
}

// Element value of code c of group g (float math; T only names the scale storage).
template <typename T, int MODE>
__device__ inline float quant_value(unsigned int c, const T* scales, const T* biases,
                                    const unsigned char* fscales, long long g, float global) {
  if (MODE == kQAffine) {
    return static_cast<float>(scales[g]) * static_cast<float>(c) + static_cast<float>(biases[g]);
  } else {
    return quant_fp_value<MODE>(c) * quant_fp_scale<MODE>(fscales[g], global);
  }
}

// The element as dequantize writes it (T(T(scale * q) + bias), as MLX's two ops, or T of the
// fp value), as a float: products with it round as x @ dequantize(w) does.
template <typename T, int MODE>
__device__ inline float quant_value_as_t(unsigned int c, const T* scales, const T* biases,
                                         const unsigned char* fscales, long long g,
                                         float global) {
  if (MODE == kQAffine) {
    const T sq = static_cast<T>(static_cast<float>(scales[g]) * static_cast<float>(c));
    return static_cast<float>(
        static_cast<T>(static_cast<float>(sq) + static_cast<float>(biases[g])));
  }
  return static_cast<float>(
      static_cast<T>(quant_fp_value<MODE>(c) * quant_fp_scale<MODE>(fscales[g], global)));
}

// ---------------------------------------------------------------- quantize

// 2^ceil(log2(x)) as e8m0 (as the CPU).
__device__ inline unsigned char quant_e8m0(float x) {
  if (!isfinite(x)) return 0xff;
  if (x <= 0.0f) return 0;
  int e;
  const float m = frexpf(x, &e);
  int n = m == 0.5f ? e - 1 : e;
  n = n < -127 ? -127 : (n > 127 ? 127 : n);
  return static_cast<unsigned char>(n + 127);
}

// The nearest e2m1 code, ties toward the smaller magnitude, zero as +0 (as the CPU).
__device__ inline unsigned int quant_to_fp4(float x) {
  unsigned int best = 0;
  float d = fabsf(x);
  for (unsigned int i = 1; i < 16; ++i) {
    const float di = fabsf(__fsub_rn(x, quant_fp4(i)));
    if (di < d) {
      d = di;
      best = i;
    }
  }
  return best;
}

template <typename T, int MODE, int BITS, int GS>
__global__ void quant_quantize(const T* w, unsigned int* out, T* scales, T* biases,
                               unsigned char* fscales, const float* global, long long groups) {
  const long long g = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (g >= groups) return;
  const T* x = w + g * GS;
  unsigned int codes[GS];
  if (MODE == kQAffine) {
    const float n_bins = static_cast<float>((1 << BITS) - 1);
    float lo = __int_as_float(0x7f800000), hi = -lo;
    for (int j = 0; j < GS; ++j) {
      const float v = static_cast<float>(x[j]);
      hi = fmaxf(hi, v);
      lo = fminf(lo, v);
    }
    float scale = fmaxf(__fdiv_rn(__fsub_rn(hi, lo), n_bins), 1e-7f), bias = lo;
    if (BITS > 1) {
      const bool mask = fabsf(lo) > fabsf(hi);
      scale = mask ? scale : -scale;
      const float edge = mask ? lo : hi;
      const float q0 = rintf(__fdiv_rn(edge, scale));
      bias = 0.0f;
      if (q0 != 0.0f) {
        scale = __fdiv_rn(edge, q0);
        bias = edge;
      }
    }
    for (int j = 0; j < GS; ++j) {
      float c = rintf(__fdiv_rn(__fsub_rn(static_cast<float>(x[j]), bias), scale));
      c = fminf(fmaxf(c, 0.0f), n_bins);
      codes[j] = static_cast<unsigned int>(c);
    }
    scales[g] = static_cast<T>(scale);
    biases[g] = static_cast<T>(bias);
  } else {
    float amax = 0.0f;
    for (int j = 0; j < GS; ++j) amax = fmaxf(amax, fabsf(static_cast<float>(x[j])));
    float scale = __fdiv_rn(amax, BITS == 4 ? 6.0f : 448.0f);
    float dec;
    unsigned char s8;
    if (MODE == kQNvfp4) {
      if (global) scale = __fdiv_rn(__fmul_rn(scale, 448.0f * 6.0f), global[0]);
      s8 = ToFP8{}(scale);
      dec = FromFP8{}(s8);
      if (global) dec = __fdiv_rn(__fmul_rn(dec, global[0]), 448.0f * 6.0f);
    } else {
      s8 = quant_e8m0(scale);
      dec = quant_fp_scale<MODE>(s8, 1.0f);
    }
    fscales[g] = s8;
    for (int j = 0; j < GS; ++j) {
      const float v = dec == 0.0f ? 0.0f : __fdiv_rn(static_cast<float>(x[j]), dec);
      codes[j] = BITS == 8 ? static_cast<unsigned int>(ToFP8{}(v)) : quant_to_fp4(v);
    }
  }
  constexpr int kWords = GS * BITS / 32;
  unsigned int words[kWords];
  for (int i = 0; i < kWords; ++i) words[i] = 0;
  for (int j = 0; j < GS; ++j) {
    const int bit = j * BITS, off = bit & 31;
    words[bit >> 5] |= codes[j] << off;
    if (off + BITS > 32) words[(bit >> 5) + 1] |= codes[j] >> (32 - off);
  }
  for (int i = 0; i < kWords; ++i) out[g * kWords + i] = words[i];
}

// ---------------------------------------------------------------- dequantize

// out (rows, K) row-contiguous; w rows of wpr words; one thread per group. global is the
// nvfp4 tensor scale divided by 448 * 6 (1 when absent). Affine rounds scale * q to T before
// adding the bias, as MLX's two ops do.
template <typename T, typename S, int MODE, int BITS, int GS>
__global__ void quant_dequantize(const unsigned int* w, const S* scales, const S* biases,
                                 const unsigned char* fscales, const float* global, T* out,
                                 long long groups, long long gpr, long long wpr) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= groups) return;
  const long long r = i / gpr, g = i % gpr;
  const unsigned int* row = w + r * wpr;
  T* dst = out + r * gpr * GS + g * GS;
  if (MODE == kQAffine) {
    const S s = scales[i], b = biases[i];
    for (int j = 0; j < GS; ++j) {
      const S c = static_cast<S>(static_cast<float>(quant_code<BITS>(row, g * GS + j)));
      dst[j] = static_cast<T>(
          static_cast<float>(static_cast<S>(static_cast<float>(s) * static_cast<float>(c))) +
          static_cast<float>(b));
    }
  } else {
    const float gs = global ? global[0] / (448.0f * 6.0f) : 1.0f;
    const float s = quant_fp_scale<MODE>(fscales[i], gs);
    for (int j = 0; j < GS; ++j)
      dst[j] = static_cast<T>(quant_fp_value<MODE>(quant_code<BITS>(row, g * GS + j)) * s);
  }
}

// quant_dequantize for affine BITS in {2, 4, 8}: a thread expands whole words (E = 32 / BITS
// codes) and stores each with 8- or 16-byte stores, a warp's words being consecutive, so loads
// and stores are contiguous (the thread-per-group kernel above strides its stores by a group).
// Each thread takes kUnroll words 32 apart, for bytes in flight. Same rounding: T(T(s * q) + b).
template <typename T, int BITS, int GS>
__global__ void quant_dequantize_vec(const unsigned int* w, const T* scales, const T* biases,
                                     T* out, long long words, long long wpr, long long gpr) {
  constexpr int E = 32 / BITS, kUnroll = 4;
  constexpr int kBytes = E * static_cast<int>(sizeof(T));
  static_assert(kBytes % 8 == 0 && E <= GS, "a word's outputs are whole 8-byte units");
  const long long w0 =
      (blockIdx.x * static_cast<long long>(blockDim.x / 32) + threadIdx.x / 32) * (32 * kUnroll) +
      (threadIdx.x & 31);
  unsigned int ws[kUnroll];
  float s[kUnroll], bias[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const long long i = w0 + 32 * u;
    if (i < words) {
      ws[u] = w[i];
      const long long g = (i / wpr) * gpr + (i % wpr) * E / GS;
      s[u] = static_cast<float>(scales[g]);
      bias[u] = static_cast<float>(biases[g]);
    }
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const long long i = w0 + 32 * u;
    if (i >= words) break;
    uint2 buf[kBytes / 8];
    T* vals = reinterpret_cast<T*>(buf);
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const float q = static_cast<float>((ws[u] >> (e * BITS)) & ((1u << BITS) - 1u));
      vals[e] = static_cast<T>(static_cast<float>(static_cast<T>(s[u] * q)) + bias[u]);
    }
    if constexpr (kBytes % 16 == 0) {
      uint4* dst = reinterpret_cast<uint4*>(out + i * E);
#pragma unroll
      for (int k = 0; k < kBytes / 16; ++k)
        dst[k] = make_uint4(buf[2 * k].x, buf[2 * k].y, buf[2 * k + 1].x, buf[2 * k + 1].y);
    } else {
      *reinterpret_cast<uint2*>(out + i * E) = buf[0];
    }
  }
}

// ---------------------------------------------------------------- matvec (transposed)

struct QmvArgs {
  long long M, N, K;
  long long wpr;        // words per weight row
  long long gpr;        // groups per weight row
  long long x_batch;    // element strides between batch matrices (0: broadcast)
  long long w_batch;    // in words
  long long s_batch;    // in groups
  long long out_batch;  // of the output (or partials)
  int splits;           // blockIdx.y count
  float global;         // nvfp4 tensor scale / (448 * 6), else 1
  int vec16;            // rows 16-byte aligned: read them with 16-byte loads
  long long g_batch;    // between the matrices' nvfp4 global scales (0: one for all)
};

template <int BITS>
struct QmvLoad {
  // What each lane reads per step: 16 bytes for 4 and 8 bits, one word for 1 and 2 bits
  // (fewer codes in registers), 8 codes in BITS bytes for 3, 5 and 6 bits.
  static constexpr bool kPow2 = (BITS & (BITS - 1)) == 0;
  static constexpr int kWords = BITS >= 4 ? 4 : 1;
  static constexpr int kElems = kPow2 ? kWords * 32 / BITS : 8;
};

// Decodes the codes of one step of a lane; VEC16 reads its 4 words as one 16-byte vector.
template <int BITS, bool VEC16>
__device__ inline void qmv_codes(const unsigned int* row, long long chunk, unsigned int* c) {
  if (QmvLoad<BITS>::kPow2) {
    constexpr int per = 32 / BITS, nw = QmvLoad<BITS>::kWords;
    unsigned int ws[nw];
    if (VEC16 && nw == 4) {
      const uint4 v = reinterpret_cast<const uint4*>(row)[chunk];
      ws[0] = v.x;
      ws[nw > 1 ? 1 : 0] = v.y;
      ws[nw > 2 ? 2 : 0] = v.z;
      ws[nw > 3 ? 3 : 0] = v.w;
    } else {
#pragma unroll
      for (int i = 0; i < nw; ++i) ws[i] = row[chunk * nw + i];
    }
#pragma unroll
    for (int i = 0; i < nw; ++i)
#pragma unroll
      for (int j = 0; j < per; ++j) c[i * per + j] = (ws[i] >> (j * BITS)) & ((1u << BITS) - 1u);
  } else {
    // 8 codes in BITS bytes.
    const unsigned char* b = reinterpret_cast<const unsigned char*>(row) + chunk * BITS;
    unsigned long long v = 0;
#pragma unroll
    for (int i = 0; i < BITS; ++i) v |= static_cast<unsigned long long>(b[i]) << (8 * i);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      c[j] = static_cast<unsigned int>(v >> (j * BITS)) & ((1u << BITS) - 1u);
  }
}

// out[m, n] (or partial split y) = sum_k x[m, k] * W[n, k]. Block: 8 warps, one row each.
// P is the output type (T, or float for split-K partials).
template <typename T, typename P, int MODE, int BITS, int GS, int MMAX>
__global__ void quant_qmv(const T* x, const unsigned int* w, const T* scales, const T* biases,
                          const unsigned char* fscales, P* out, QmvArgs a) {
  constexpr int E = QmvLoad<BITS>::kElems;
  const int lane = threadIdx.x & 31;
  const long long n = blockIdx.x * 8LL + (threadIdx.x >> 5);
  const long long b = blockIdx.z;
  if (n >= a.N) return;
  x += b * a.x_batch;
  const unsigned int* row = w + b * a.w_batch + n * a.wpr;
  const long long sg = b * a.s_batch + n * a.gpr;
  const long long chunks = a.K / E;  // K is a multiple of the group size (>= 16), E divides it
  const long long per_split = (chunks + a.splits - 1) / a.splits;
  const long long c0 = blockIdx.y * per_split;
  const long long c1 = c0 + per_split < chunks ? c0 + per_split : chunks;
  float acc[MMAX];
#pragma unroll
  for (int m = 0; m < MMAX; ++m) acc[m] = 0.0f;
  for (long long c = c0 + lane; c < c1; c += 32) {
    unsigned int codes[E];
    if (a.vec16)
      qmv_codes<BITS, true>(row, c, codes);
    else
      qmv_codes<BITS, false>(row, c, codes);
    const long long k0 = c * E;
    // E and GS are powers of two (or E = 8 <= GS): a step lies in one group or spans several.
    constexpr int SUB = E < GS ? E : GS;
#pragma unroll
    for (int s0 = 0; s0 < E; s0 += SUB) {
      const long long g = (k0 + s0) / GS;
      float sc, bi = 0.0f;
      if (MODE == kQAffine) {
        sc = static_cast<float>(scales[sg + g]);
        bi = static_cast<float>(biases[sg + g]);
      } else {
        sc = quant_fp_scale<MODE>(fscales[sg + g], a.global);
      }
      float wv[SUB];
#pragma unroll
      for (int j = 0; j < SUB; ++j) {
        wv[j] = MODE == kQAffine ? sc * static_cast<float>(codes[s0 + j]) + bi
                                 : quant_fp_value<MODE>(codes[s0 + j]) * sc;
      }
#pragma unroll
      for (int m = 0; m < MMAX; ++m) {
        if (m < a.M) {
          const T* xr = x + m * a.K + k0 + s0;
          float s = 0.0f;
#pragma unroll
          for (int j = 0; j < SUB; ++j) s += static_cast<float>(xr[j]) * wv[j];
          acc[m] += s;
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < MMAX; ++m) {
    float v = acc[m];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0 && m < a.M) {
      P* dst = out + b * a.out_batch + (a.splits > 1 ? blockIdx.y * a.M * a.N : 0LL);
      dst[m * a.N + n] = static_cast<P>(v);
    }
  }
}

// out[i] = sum over splits of partials[s][i] (per batch matrix of `per` elements).
template <typename T>
__global__ void quant_splitk_sum(const float* partials, T* out, long long per, int splits,
                                 long long total) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const long long b = i / per, r = i % per;
  const float* p = partials + b * per * splits + r;
  float s = 0.0f;
  for (int k = 0; k < splits; ++k) s += p[k * per];
  out[i] = static_cast<T>(s);
}

// ---------------------------------------------------------------- matvec, vectorized

// Shape of quant_qmv_vec for up to MMAX rows of x and BITS in {2, 4, 8}: each lane takes
// kWords packed words (one 4-, 8- or 16-byte load) of kRows weight rows per step, so the x
// values it converts to float once serve kRows rows; fewer elements per step as MMAX grows
// keep the x registers (MMAX x kElems floats) bounded.
template <int BITS, int MMAX>
struct QmvVec {
  static constexpr int kTarget = MMAX <= 2 ? 32 : (MMAX <= 4 ? 16 : 8);
  static constexpr int kW = kTarget * BITS / 32;
  static constexpr int kWords = kW < 1 ? 1 : (kW > 4 ? 4 : kW);
  static constexpr int kElems = kWords * 32 / BITS;
  static constexpr int kRows = MMAX <= 8 ? 4 : 2;
  static constexpr int kWarps = 4;  // per block
};

// E consecutive x values as floats, read with 16-, 8- or 4-byte loads (p aligned to them).
template <typename T, int E>
__device__ inline void qmv_load_x(const T* p, float* out) {
  constexpr int kBytes = E * static_cast<int>(sizeof(T));
  if constexpr (kBytes >= 16) {
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) {
      const uint4 v = reinterpret_cast<const uint4*>(p)[i];
      const T* t = reinterpret_cast<const T*>(&v);
#pragma unroll
      for (int j = 0; j < 16 / static_cast<int>(sizeof(T)); ++j)
        out[i * (16 / sizeof(T)) + j] = static_cast<float>(t[j]);
    }
  } else if constexpr (kBytes == 8) {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    const T* t = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int j = 0; j < E; ++j) out[j] = static_cast<float>(t[j]);
  } else {
#pragma unroll
    for (int j = 0; j < E; ++j) out[j] = static_cast<float>(p[j]);
  }
}

// Words [c * W, c * W + W) of a row, one vector load (the row 4 * W-byte aligned).
template <int W>
__device__ inline void qmv_load_words(const unsigned int* row, long long c, unsigned int* ws) {
  if constexpr (W == 4) {
    const uint4 v = reinterpret_cast<const uint4*>(row)[c];
    ws[0] = v.x, ws[1] = v.y, ws[2] = v.z, ws[3] = v.w;
  } else if constexpr (W == 2) {
    const uint2 v = reinterpret_cast<const uint2*>(row)[c];
    ws[0] = v.x, ws[1] = v.y;
  } else {
    ws[0] = row[c];
  }
}

// An integer code (< 2^23) as a float without I2F (a quarter-rate instruction): its bits
// under the exponent of 2^23, minus 2^23.
__device__ inline float qmv_code_float(unsigned int c) {
  return __int_as_float(0x4B000000u | c) - 8388608.0f;
}

// out[m, n] (or split y's partials) = sum_k x[m, k] * W[n, k] for BITS in {2, 4, 8}, rows
// of W 16-byte aligned, x rows aligned to the x loads and K a multiple of kElems. Each warp
// owns kRows rows; lanes stride over K in kElems steps. Affine groups add scale * (x . q) +
// bias * sum(x) per group, so the dequantized weight is never formed. `global` (nvfp4's
// tensor scale, or null) is read on the device.
template <typename T, typename P, int MODE, int BITS, int GS, int MMAX>
__global__ void __launch_bounds__(128)
    quant_qmv_vec(const T* x, const unsigned int* w, const T* scales, const T* biases,
                  const unsigned char* fscales, const float* global, P* out, QmvArgs a) {
  using V = QmvVec<BITS, MMAX>;
  constexpr int W = V::kWords, E = V::kElems, R = V::kRows;
  constexpr int SUB = E < GS ? E : GS;  // elements of one group within a step
  constexpr int PER = 32 / BITS;        // codes per word
  constexpr unsigned int kMask = (1u << BITS) - 1u;
  const int lane = threadIdx.x & 31;
  const long long n0 = (blockIdx.x * static_cast<long long>(V::kWarps) + (threadIdx.x >> 5)) * R;
  const long long b = blockIdx.z;
  if (n0 >= a.N) return;
  const float gscale =
      MODE == kQNvfp4 && global ? global[b * a.g_batch] / (448.0f * 6.0f) : 1.0f;
  x += b * a.x_batch;
  const unsigned int* wb = w + b * a.w_batch;
  const long long chunks = a.K / E;
  const long long per_split = (chunks + a.splits - 1) / a.splits;
  const long long c0 = blockIdx.y * per_split;
  const long long c1 = c0 + per_split < chunks ? c0 + per_split : chunks;
  float acc[R][MMAX];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < MMAX; ++m) acc[r][m] = 0.0f;
  // All kRows rows' words of the next step are loaded before this step's are used (rows
  // past N read row N - 1 and are never written): more bytes in flight per warp.
  unsigned int next[R][W];
  auto load_step = [&](long long c) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const long long n = n0 + r < a.N ? n0 + r : a.N - 1;
      qmv_load_words<W>(wb + n * a.wpr, c, next[r]);
    }
  };
  if (c0 + lane < c1) load_step(c0 + lane);
  for (long long c = c0 + lane; c < c1; c += 32) {
    unsigned int words[R][W];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < W; ++i) words[r][i] = next[r][i];
    if (c + 32 < c1) load_step(c + 32);
    const long long k0 = c * E;
    float xf[MMAX][E];
    float xsum[MMAX][E / SUB];
#pragma unroll
    for (int m = 0; m < MMAX; ++m) {
      if (m < a.M) {
        qmv_load_x<T, E>(x + m * a.K + k0, xf[m]);
      } else {
#pragma unroll
        for (int e = 0; e < E; ++e) xf[m][e] = 0.0f;  // padding rows: computed, never written
      }
      if (MODE == kQAffine) {
#pragma unroll
        for (int s0 = 0; s0 < E; s0 += SUB) {
          float t = 0.0f;
#pragma unroll
          for (int j = 0; j < SUB; ++j) t += xf[m][s0 + j];
          xsum[m][s0 / SUB] = t;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const long long n = n0 + r < a.N ? n0 + r : a.N - 1;
      const unsigned int* ws = words[r];
      const long long sg = b * a.s_batch + n * a.gpr;
#pragma unroll
      for (int s0 = 0; s0 < E; s0 += SUB) {
        const long long g = sg + (k0 + s0) / GS;
        float dot[MMAX];
#pragma unroll
        for (int m = 0; m < MMAX; ++m) dot[m] = 0.0f;
#pragma unroll
        for (int j = 0; j < SUB; ++j) {
          const int e = s0 + j;
          const unsigned int code = (ws[e / PER] >> ((e % PER) * BITS)) & kMask;
          const float v = MODE == kQAffine ? qmv_code_float(code) : quant_fp_value<MODE>(code);
#pragma unroll
          for (int m = 0; m < MMAX; ++m) dot[m] = fmaf(xf[m][e], v, dot[m]);
        }
        if (MODE == kQAffine) {
          const float sc = static_cast<float>(scales[g]), bi = static_cast<float>(biases[g]);
#pragma unroll
          for (int m = 0; m < MMAX; ++m) acc[r][m] += fmaf(sc, dot[m], bi * xsum[m][s0 / SUB]);
        } else {
          const float sc = quant_fp_scale<MODE>(fscales[g], gscale);
#pragma unroll
          for (int m = 0; m < MMAX; ++m) acc[r][m] = fmaf(sc, dot[m], acc[r][m]);
        }
      }
    }
  }
  P* dst = out + b * a.out_batch + (a.splits > 1 ? blockIdx.y * a.M * a.N : 0LL);
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int m = 0; m < MMAX; ++m) {
      float v = acc[r][m];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0 && m < a.M && n0 + r < a.N) dst[m * a.N + n0 + r] = static_cast<P>(v);
    }
  }
}

// ---------------------------------------------------------------- vecmat (not transposed)

// out[m, n] (or partial split y) = sum_k x[m, k] * W[k, n], W rows of N codes; the weights
// rounded to T as dequantize rounds them (so that results round as x @ dequantize(w)).
template <typename T, typename P, int MODE, int BITS, int GS, int MMAX>
__global__ void quant_qvm(const T* x, const unsigned int* w, const T* scales, const T* biases,
                          const unsigned char* fscales, P* out, QmvArgs a) {
  const long long n = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const long long b = blockIdx.z;
  if (n >= a.N) return;
  x += b * a.x_batch;
  const unsigned int* wb = w + b * a.w_batch;
  const long long per_split = (a.K + a.splits - 1) / a.splits;
  const long long k0 = blockIdx.y * per_split;
  const long long k1 = k0 + per_split < a.K ? k0 + per_split : a.K;
  float acc[MMAX];
#pragma unroll
  for (int m = 0; m < MMAX; ++m) acc[m] = 0.0f;
  for (long long k = k0; k < k1; ++k) {
    const long long g = b * a.s_batch + k * a.gpr + n / GS;
    const float v = quant_value_as_t<T, MODE>(quant_code<BITS>(wb + k * a.wpr, n), scales,
                                              biases, fscales, g, a.global);
#pragma unroll
    for (int m = 0; m < MMAX; ++m)
      if (m < a.M) acc[m] += static_cast<float>(x[m * a.K + k]) * v;
  }
  P* dst = out + b * a.out_batch + (a.splits > 1 ? blockIdx.y * a.M * a.N : 0LL);
#pragma unroll
  for (int m = 0; m < MMAX; ++m)
    if (m < a.M) dst[m * a.N + n] = static_cast<P>(acc[m]);
}

}  // namespace kiln
