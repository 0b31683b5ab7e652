// The vectorized bfloat16 conversions of the CPU's fused built-ins (fast_common.h's load and
// store, through simd_loops.h's widen_half and narrow_half) against the scalar conversions of
// kiln/half_types.h, bit for bit: random bit patterns and every special class (zeros,
// subnormals, ties to even, the largest finite values that round to infinity, infinities,
// NaNs of both signs).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "kiln/backend/cpu/fast_common.h"

using namespace kiln;

TEST(CpuFastConvert, Bfloat16NarrowAndWidenMatchScalarConversions) {
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u,
                                0x3F808000u, 0x3F818000u, 0x3F80FFFFu, 0x7F7FFFFFu, 0x7F7F8000u,
                                0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u,
                                0xFF800001u, 0x7FBFFFFFu, 0x33800000u};
  std::mt19937 rng(20261127);
  for (int i = 0; i < (1 << 20); ++i) bits.push_back(static_cast<uint32_t>(rng()));
  const int64_t n = static_cast<int64_t>(bits.size());
  std::vector<float> x(n), back(n);
  for (int64_t i = 0; i < n; ++i) x[i] = std::bit_cast<float>(bits[i]);
  std::vector<bfloat16_t> y(n);
  cpu::fast::store(x.data(), y.data(), n);
  cpu::fast::load(y.data(), back.data(), n);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bfloat16_t want(x[i]);
    if (y[i].bits != want.bits) {
      if (++mismatches <= 5)
        ADD_FAILURE() << "narrow 0x" << std::hex << bits[i] << ": 0x" << y[i].bits << ", scalar 0x"
                      << want.bits;
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(static_cast<float>(want)));
  }
  EXPECT_EQ(mismatches, 0);
}
