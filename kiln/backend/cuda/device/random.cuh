// Random-number kernels: kiln's random streams (kiln/primitives_random.h), bit for bit.
//
// random_bits: each thread computes one Threefry-2x32 block (8 bytes) of one key's stream and
//   writes the part of it that falls inside that key's `key_bytes` (8-byte stores when every
//   key's bytes are a multiple of 8, else 4-byte or byte stores).
// bits_to_uniform: low + (high - low) * u with u from the bits by mantissa filling, with
//   explicitly rounded operations (no fused multiply-add, which the CPU does not use either),
//   kept below `high`; integers take the high word of a 64 x 64-bit product (Lemire).
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

/** Keys: (k0, k1) pairs, contiguous. Align: 8 when key_bytes % 8 == 0, 4 when % 4 == 0, else
 * 1 (the store width). */
template <int Align>
__global__ void random_bits(const unsigned int* __restrict__ keys, unsigned char* __restrict__ out,
                            long long num_keys, long long key_bytes, long long blocks_per_key) {
  const long long t = global_thread_x<long long>();
  if (t >= num_keys * blocks_per_key) return;
  const long long key = t / blocks_per_key, i = t - key * blocks_per_key;
  unsigned int w0, w1;
  threefry2x32(keys[2 * key], keys[2 * key + 1], static_cast<unsigned int>(i),
               static_cast<unsigned int>(static_cast<unsigned long long>(i) >> 32), w0, w1);
  const long long offset = i * 8;
  unsigned char* dst = out + key * key_bytes + offset;
  const long long rem = key_bytes - offset < 8 ? key_bytes - offset : 8;
  if constexpr (Align == 8) {
    store_vec<2>(reinterpret_cast<unsigned int*>(dst), Vec<unsigned int, 2>{{w0, w1}});
  } else if constexpr (Align == 4) {
    reinterpret_cast<unsigned int*>(dst)[0] = w0;
    if (rem == 8) reinterpret_cast<unsigned int*>(dst)[1] = w1;
  } else {
    // Little-endian bytes of the two words.
    for (int b = 0; b < rem; ++b) {
      dst[b] = static_cast<unsigned char>((b < 4 ? w0 : w1) >> (8 * (b % 4)));
    }
  }
}

// ---------------------------------------------------------------- bits to uniform

/** random_impl::unit_float and unit_double: [0, 1) by mantissa filling. */
__device__ inline float unit_float(unsigned int b) {
  return __fsub_rn(__uint_as_float((b >> 9) | 0x3F800000u), 1.0f);
}
__device__ inline double unit_double(unsigned long long b) {
  return __dsub_rn(__longlong_as_double(static_cast<long long>((b >> 12) | 0x3FF0000000000000ull)),
                   1.0);
}

/** The representable value next to `from` toward `to` (from != to, finite). */
template <typename T>
__device__ inline T step_toward(T from, T to) {
  if constexpr (is_half_v<T>) {
    const unsigned short b = from.bits;
    T r;
    if ((b & 0x7FFFu) == 0) {
      r.bits = float(to) > float(from) ? 0x0001u : 0x8001u;
      return r;
    }
    const bool away = (float(to) > float(from)) == ((b & 0x8000u) == 0);
    r.bits = static_cast<unsigned short>(away ? b + 1 : b - 1);
    return r;
  } else if constexpr (is_same_v<T, float>) {
    return nextafterf(from, to);
  } else {
    return nextafter(from, to);
  }
}

/** A floating T in [low, high): as the CPU's uniform_value. */
template <typename T, typename Bits>
__device__ inline T uniform_value(Bits bits, T low, T high) {
  T v;
  if constexpr (is_same_v<T, double>) {
    const double u = unit_double(bits);
    v = __dadd_rn(low, __dmul_rn(__dsub_rn(high, low), u));
  } else {
    const float u = unit_float(static_cast<unsigned int>(bits));
    const float l = static_cast<float>(low), h = static_cast<float>(high);
    const float r = __fadd_rn(l, __fmul_rn(__fsub_rn(h, l), u));
    if constexpr (is_half_v<T>)
      v = T(r);
    else
      v = r;
  }
  if ((high > low && !(v < high)) || (high < low && !(v > high))) v = step_toward(high, low);
  return v;
}

/** An integer T in [low, high) (low when high <= low): random_impl::bounded. */
template <typename T>
__device__ inline T bounded_value(unsigned long long bits, T low, T high) {
  if (!(low < high)) return low;
  const unsigned long long range =
      static_cast<unsigned long long>(high) - static_cast<unsigned long long>(low);
  return static_cast<T>(static_cast<unsigned long long>(low) + __umul64hi(bits, range));
}

/** out[i] (row-contiguous) from bits, low and high of one shape with their own strides
 * (collapsed by the host). Bits: uint32 for float32 and the half types, uint64 otherwise. */
template <typename T, typename Bits>
__global__ void bits_to_uniform(const Bits* __restrict__ bits, const T* __restrict__ low,
                                const T* __restrict__ high, T* __restrict__ out,
                                const __grid_constant__ Dims<int> shape,
                                const __grid_constant__ Dims<long long> bits_strides,
                                const __grid_constant__ Dims<long long> low_strides,
                                const __grid_constant__ Dims<long long> high_strides, int ndim,
                                long long size) {
  const long long t = global_thread_x<long long>();
  if (t >= size) return;
  long long ob = 0, ol = 0, oh = 0, idx = t;
  for (int d = ndim - 1; d >= 0; --d) {
    const long long dim = shape.v[d];
    const long long q = idx / dim, r = idx - q * dim;
    ob += r * bits_strides.v[d];
    ol += r * low_strides.v[d];
    oh += r * high_strides.v[d];
    idx = q;
  }
  if constexpr (is_floating_v<T>)
    out[t] = uniform_value<T>(bits[ob], low[ol], high[oh]);
  else
    out[t] = bounded_value<T>(bits[ob], low[ol], high[oh]);
}

}  // namespace kiln
