// Random-number primitives: counter-based random bits (Threefry-2x32) and their mapping to
// uniform values. The functions below define kiln's random streams; every backend computes
// them bit for bit, so a key gives the same numbers on every device. The GPU backend ports
// them as they are: they are pure, branch-light 32/64-bit integer code.
#pragma once

#include <bit>
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
 * Block `i` of the stream of key (k0, k1): 32-bit words 2i and 2i + 1 of the stream. The
 * stream is the sequence of those words; `n` random elements of `width` bytes drawn with a
 * key are the first n * width bytes of its stream, little-endian. split(key, num) returns
 * blocks 0 .. num - 1 as the new keys.
 */
constexpr Words2 stream_block(uint32_t k0, uint32_t k1, uint64_t i) {
  return threefry2x32(k0, k1, static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32));
}

// Uniform values in [0, 1) from random bits by mantissa filling: the top bits become the
// mantissa of a number in [1, 2), from which 1 is subtracted (exact). The half types use
// unit_float: with their own 10 or 7 mantissa bits, 0 alone would come up once in 1024 or
// 128 draws.
constexpr float unit_float(uint32_t b) {
  return std::bit_cast<float>((b >> 9) | 0x3F800000u) - 1.0f;
}
constexpr double unit_double(uint64_t b) {
  return std::bit_cast<double>((b >> 12) | 0x3FF0000000000000ull) - 1.0;
}

/** An integer uniform in [0, range) from 64 random bits: the high word of bits * range
 * (D. Lemire, "Fast Random Integer Generation in an Interval", TOMACS 2019, without the
 * rejection step; the bias is below range / 2^64). */
constexpr uint64_t bounded(uint64_t bits, uint64_t range) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * range) >> 64);
}

}  // namespace random_impl

/**
 * Random bits: for keys of shape (..., 2) uint32, an output of shape (...) + `shape` where
 * each key fills its (prod(shape)) elements of `width` bytes (1, 2, 4 or 8: uint8, uint16,
 * uint32, uint64) from its own stream (random_impl::stream_block).
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
 * Uniform values in [low, high) from random bits: inputs (bits, low, high) of one shape,
 * low and high of the output dtype. Floating outputs take low + (high - low) * u with u =
 * unit_double(uint64 bits) for float64 and unit_float(uint32 bits) otherwise, computed in
 * float32 for the half types and rounded once (without contraction into an fma, so every
 * device rounds alike); a result that rounds onto `high` moves to the next value toward
 * `low`. Integer outputs (uint64 bits) are low + bounded(bits, high - low), or low when
 * high <= low.
 */
class BitsToUniform : public UnaryPrimitive {
 public:
  explicit BitsToUniform(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(BitsToUniform)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  KILN_PRIMITIVE_SAME_SHAPE()
};

}  // namespace kiln
