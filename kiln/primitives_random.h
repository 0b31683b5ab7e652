// Random-number primitives: counter-based random bits (Threefry-2x32, laid out across the
// output as MLX lays them out) and the single-precision erf/erfinv approximations MLX's
// samplers are built on. The functions below define kiln's random streams; every backend
// computes them bit for bit (the GPU kernels in backend/cuda/device/random.cuh port them as
// they are), so a key gives MLX's numbers on every device.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "kiln/primitive.h"

namespace kiln {

namespace random_impl {

struct Words2 {
  uint32_t x0, x1;
};

constexpr uint32_t rotl32(uint32_t x, int r) {
  return (x << r) | (x >> (32 - r));
}

/**
 * Threefry-2x32 with 20 rounds: a keyed bijection of 64-bit blocks, from J. Salmon et al.,
 * "Parallel Random Numbers: As Easy as 1, 2, 3" (SC 2011), the generator of JAX and MLX.
 * Known answers (Random123): key (0, 0), counter (0, 0) -> (0x6b200159, 0x99ba4efe).
 */
constexpr Words2 threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1) {
  constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  uint32_t x0 = c0 + k0, x1 = c1 + k1;
  for (int group = 0; group < 5; ++group) {
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = rotl32(x1, kRotations[4 * (group % 2) + r]);
      x1 ^= x0;
    }
    // Key injection after every four rounds.
    x0 += ks[(group + 1) % 3];
    x1 += ks[(group + 2) % 3] + static_cast<uint32_t>(group + 1);
  }
  return {x0, x1};
}

/**
 * The layout of one key's random bytes (MLX's RandomBits): `n` bytes are the first n bytes
 * (little-endian) of W = ceil(n / 4) 32-bit words. With h = W / 2 and o = W % 2, counter
 * i < h gives the block threefry(key, (i, h + o + i)), whose first word is word i and whose
 * second is word h + o + i; when W is odd, word h is the first word of
 * threefry(key, (h, 0)). Counters are taken modulo 2^32, as MLX does.
 */
struct StreamLayout {
  uint64_t words, half, odd;
  constexpr explicit StreamLayout(uint64_t bytes)
      : words((bytes + 3) / 4), half(words / 2), odd(words % 2) {}
  /** Blocks (counters) a key needs: h + o. */
  constexpr uint64_t blocks() const { return half + odd; }
  /** Block i: its words and where they go (second index is `words` when unused). */
  constexpr Words2 block(uint32_t k0, uint32_t k1, uint64_t i) const {
    const bool extra = i == half;  // only when odd
    return threefry2x32(k0, k1, static_cast<uint32_t>(i),
                        extra ? 0u : static_cast<uint32_t>(half + odd + i));
  }
  /** Word j of the key's stream (a host reference; the kernels write whole blocks). */
  constexpr uint32_t word(uint32_t k0, uint32_t k1, uint64_t j) const {
    if (j < half + odd) return block(k0, k1, j).x0;
    return block(k0, k1, j - half - odd).x1;
  }
};

/** The keys of split(key): words (0, 1) and (2, 3) of the key's 16-byte stream. */
constexpr std::pair<Words2, Words2> split2(uint32_t k0, uint32_t k1) {
  constexpr StreamLayout l(16);
  return {{l.word(k0, k1, 0), l.word(k0, k1, 1)}, {l.word(k0, k1, 2), l.word(k0, k1, 3)}};
}

// ---------------------------------------------------------------- erf and erfinv

/**
 * exp(x) in float32 as MLX's CPU backend computes it: 2^round(x log2 e) times a degree-6
 * polynomial of the remainder (Cephes' coefficients, via fastermath); 0 below -88, inf
 * above 88.
 */
inline float exp_cephes_f32(float x) {
  if (std::isnan(x)) return x;
  if (x > 88.0f) return INFINITY;
  if (x < -88.0f) return 0.0f;
  const float y = x * 1.442695f;
  // The half is added in double, as MLX does (a float sum could round).
  const float ipart = static_cast<float>(std::floor(static_cast<double>(y) + 0.5));
  const float f = y - ipart;
  float p = 1.535336188319500e-4f;
  p = std::fma(p, f, 1.339887440266574e-3f);
  p = std::fma(p, f, 9.618437357674640e-3f);
  p = std::fma(p, f, 5.550332471162809e-2f);
  p = std::fma(p, f, 2.402264791363012e-1f);
  p = std::fma(p, f, 6.931472028550421e-1f);
  p = std::fma(p, f, 1.000000000000000f);
  // 2^ipart from the exponent bits (ipart + 127 is in [0, 254] here).
  const uint32_t e = static_cast<uint32_t>(static_cast<int32_t>(ipart) + 127) << 23;
  return std::bit_cast<float>(e) * p;
}

/**
 * erf(x) in float32 by Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7), with the operation
 * order and fused multiply-adds of MLX's CPU backend, so the bits match. Odd: the sign of
 * the result follows x > 0 (erf(0) is a tiny negative number, as in MLX).
 */
inline float erf_f32(float v) {
  const float t = 1.0f / std::fma(0.3275911f, std::abs(v), 1.0f);
  float r = std::fma(1.061405429f, t, -1.453152027f);
  r = std::fma(r, t, 1.421413741f);
  r = std::fma(r, t, -0.284496736f);
  r = std::fma(r, t, 0.254829592f);
  const float e = -exp_cephes_f32(-v * v);
  const float result = std::fma(e * t, r, 1.0f);
  return v > 0 ? result : -result;
}

/**
 * erfinv(a) in float32 by N. Juffa's minimax polynomials in t = log(1 - a^2) (two ranges,
 * split at |t| = 6.125; at most 2.36 ulp), with the operation order of MLX's CPU backend.
 * `log` is the C library's logf there; the GPU evaluates it in double and rounds, which
 * agrees except for results within a few hundredths of an ulp of a rounding boundary.
 */
template <typename Log>
inline float erfinv_f32(float a, Log log) {
  const float t = log(std::fma(a, 0.0f - a, 1.0f));
  float p;
  if (std::abs(t) > 6.125f) {
    p = 3.03697567e-10f;
    p = std::fma(p, t, 2.93243101e-8f);
    p = std::fma(p, t, 1.22150334e-6f);
    p = std::fma(p, t, 2.84108955e-5f);
    p = std::fma(p, t, 3.93552968e-4f);
    p = std::fma(p, t, 3.02698812e-3f);
    p = std::fma(p, t, 4.83185798e-3f);
    p = std::fma(p, t, -2.64646143e-1f);
    p = std::fma(p, t, 8.40016484e-1f);
  } else {
    p = 5.43877832e-9f;
    p = std::fma(p, t, 1.43285448e-7f);
    p = std::fma(p, t, 1.22774793e-6f);
    p = std::fma(p, t, 1.12963626e-7f);
    p = std::fma(p, t, -5.61530760e-5f);
    p = std::fma(p, t, -1.47697632e-4f);
    p = std::fma(p, t, 2.31468678e-3f);
    p = std::fma(p, t, 1.15392581e-2f);
    p = std::fma(p, t, -2.32015476e-1f);
    p = std::fma(p, t, 8.86226892e-1f);
  }
  return a * p;
}

}  // namespace random_impl

/**
 * Random bits: for keys of shape (..., 2) uint32, an output of shape (...) + `shape` where
 * each key fills its prod(shape) * width bytes (width 1, 2, 4 or 8: uint8, uint16, uint32,
 * uint64) from its own stream, laid out as random_impl::StreamLayout says.
 */
class RandomBits : public UnaryPrimitive {
 public:
  RandomBits(Stream stream, Shape shape, int width)
      : UnaryPrimitive(stream), shape_(std::move(shape)), width_(width) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(RandomBits)
  bool is_equivalent(const Primitive& other) const override;
  void print(std::ostream& os) override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const Shape& shape() const { return shape_; }
  int width() const { return width_; }
  /** The unsigned dtype of `width` bytes (1, 2, 4 or 8). */
  static Dtype bits_dtype(int width);

 private:
  Shape shape_;
  int width_;
};

/**
 * erf and erfinv in single precision (random_impl::erf_f32, erfinv_f32) for float32,
 * float16 and bfloat16 inputs: computed in float32, rounded once to the input dtype. The
 * samplers use them where MLX's use erf and erfinv, so that their numbers match MLX's.
 */
class ErfF32 : public UnaryPrimitive {
 public:
  explicit ErfF32(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(ErfF32)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  KILN_PRIMITIVE_SAME_SHAPE()
};

class ErfInvF32 : public UnaryPrimitive {
 public:
  explicit ErfInvF32(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(ErfInvF32)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  KILN_PRIMITIVE_SAME_SHAPE()
};

}  // namespace kiln
