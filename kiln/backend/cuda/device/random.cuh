// Random-number kernels: ports of kiln/primitives_random.h, bit for bit.
//
// random_bits: each thread computes one Threefry-2x32 block of one key and writes its words
//   where random_impl::StreamLayout puts them (word i, and word half + odd + i unless it is
//   the odd block). Aligned (every key's bytes a multiple of 4) stores words, else bytes.
// erf_f32 / erfinv_f32: the single-precision approximations, with explicitly rounded
//   products (NVRTC would otherwise contract a * b + c into fused multiply-adds that the
//   CPU does not do) and the fused ones the CPU does through std::fma.
#pragma once

#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln {

__device__ inline unsigned int rotl32(unsigned int x, int r) {
  return (x << r) | (x >> (32 - r));
}

/** Threefry-2x32 with 20 rounds (random_impl::threefry2x32). */
__device__ inline void threefry2x32(unsigned int k0, unsigned int k1, unsigned int c0,
                                    unsigned int c1, unsigned int& y0, unsigned int& y1) {
  constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const unsigned int ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  unsigned int x0 = c0 + k0, x1 = c1 + k1;
#pragma unroll
  for (int group = 0; group < 5; ++group) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = rotl32(x1, kRotations[4 * (group % 2) + r]);
      x1 ^= x0;
    }
    x0 += ks[(group + 1) % 3];
    x1 += ks[(group + 2) % 3] + static_cast<unsigned int>(group + 1);
  }
  y0 = x0;
  y1 = x1;
}

/** Word j of a key's output (its first key_bytes bytes), little-endian. */
template <bool Aligned>
__device__ inline void store_word(unsigned char* key_out, long long j, unsigned int w,
                                  long long key_bytes) {
  if constexpr (Aligned) {
    reinterpret_cast<unsigned int*>(key_out)[j] = w;
  } else {
    const long long n = key_bytes - 4 * j < 4 ? key_bytes - 4 * j : 4;
    for (int b = 0; b < n; ++b) key_out[4 * j + b] = static_cast<unsigned char>(w >> (8 * b));
  }
}

/** Keys: (k0, k1) pairs, contiguous. half and odd: of the key's word count (StreamLayout). */
template <bool Aligned>
__global__ void random_bits(const unsigned int* __restrict__ keys, unsigned char* __restrict__ out,
                            long long num_keys, long long key_bytes, long long half,
                            long long odd) {
  const long long t = global_thread_x<long long>();
  const long long blocks = half + odd;
  if (t >= num_keys * blocks) return;
  const long long key = t / blocks, i = t - key * blocks;
  const bool extra = i == half;
  unsigned int w0, w1;
  threefry2x32(keys[2 * key], keys[2 * key + 1], static_cast<unsigned int>(i),
               extra ? 0u : static_cast<unsigned int>(half + odd + i), w0, w1);
  unsigned char* key_out = out + key * key_bytes;
  store_word<Aligned>(key_out, i, w0, key_bytes);
  if (!extra) store_word<Aligned>(key_out, half + odd + i, w1, key_bytes);
}

// ---------------------------------------------------------------- erf and erfinv

/** random_impl::exp_cephes_f32. */
__device__ inline float exp_cephes_f32(float x) {
  if (x != x) return x;
  if (x > 88.0f) return __int_as_float(0x7f800000);
  if (x < -88.0f) return 0.0f;
  const float y = __fmul_rn(x, 1.442695f);
  const float ipart = static_cast<float>(floor(static_cast<double>(y) + 0.5));
  const float f = __fsub_rn(y, ipart);
  float p = 1.535336188319500e-4f;
  p = fmaf(p, f, 1.339887440266574e-3f);
  p = fmaf(p, f, 9.618437357674640e-3f);
  p = fmaf(p, f, 5.550332471162809e-2f);
  p = fmaf(p, f, 2.402264791363012e-1f);
  p = fmaf(p, f, 6.931472028550421e-1f);
  p = fmaf(p, f, 1.000000000000000f);
  const unsigned int e = static_cast<unsigned int>(static_cast<int>(ipart) + 127) << 23;
  return __fmul_rn(__uint_as_float(e), p);
}

/** random_impl::erf_f32. */
__device__ inline float erf_f32(float v) {
  const float t = __fdiv_rn(1.0f, fmaf(0.3275911f, fabsf(v), 1.0f));
  float r = fmaf(1.061405429f, t, -1.453152027f);
  r = fmaf(r, t, 1.421413741f);
  r = fmaf(r, t, -0.284496736f);
  r = fmaf(r, t, 0.254829592f);
  const float e = -exp_cephes_f32(__fmul_rn(-v, v));
  const float result = fmaf(__fmul_rn(e, t), r, 1.0f);
  return v > 0 ? result : -result;
}

/** random_impl::erfinv_f32, with log evaluated in double and rounded once. */
__device__ inline float erfinv_f32(float a) {
  const float t = __double2float_rn(log(static_cast<double>(fmaf(a, 0.0f - a, 1.0f))));
  float p;
  if (fabsf(t) > 6.125f) {
    p = 3.03697567e-10f;
    p = fmaf(p, t, 2.93243101e-8f);
    p = fmaf(p, t, 1.22150334e-6f);
    p = fmaf(p, t, 2.84108955e-5f);
    p = fmaf(p, t, 3.93552968e-4f);
    p = fmaf(p, t, 3.02698812e-3f);
    p = fmaf(p, t, 4.83185798e-3f);
    p = fmaf(p, t, -2.64646143e-1f);
    p = fmaf(p, t, 8.40016484e-1f);
  } else {
    p = 5.43877832e-9f;
    p = fmaf(p, t, 1.43285448e-7f);
    p = fmaf(p, t, 1.22774793e-6f);
    p = fmaf(p, t, 1.12963626e-7f);
    p = fmaf(p, t, -5.61530760e-5f);
    p = fmaf(p, t, -1.47697632e-4f);
    p = fmaf(p, t, 2.31468678e-3f);
    p = fmaf(p, t, 1.15392581e-2f);
    p = fmaf(p, t, -2.32015476e-1f);
    p = fmaf(p, t, 8.86226892e-1f);
  }
  return __fmul_rn(a, p);
}

/** out[i] = f(in[i]) in float, rounded to T (float32, float16, bfloat16); both contiguous.
 * Inverse: erfinv_f32, else erf_f32. */
template <typename T, bool Inverse>
__global__ void erf_f32_map(const T* __restrict__ in, T* __restrict__ out, long long size) {
  const long long i = global_thread_x<long long>();
  if (i >= size) return;
  const float x = static_cast<float>(in[i]);
  const float y = Inverse ? erfinv_f32(x) : erf_f32(x);
  if constexpr (is_same_v<T, float>)
    out[i] = y;
  else
    out[i] = T(y);
}

}  // namespace kiln
