// bfloat16 rows widened to float and float rows rounded to bfloat16 for the fused built-ins
// (fast_common.h's load and store), as vector code for the machine's widest vectors: the
// conversions are integer shifts and adds that a scalar loop of bfloat16 values hides from
// the vectorizer.
#include <bit>
#include <cstdint>

#include "kiln/backend/cpu/fast_common.h"

namespace kiln::cpu::fast {

KILN_SIMD_CLONES void widen_bf16(const bfloat16_t* x, float* y, int64_t n) {
  const uint16_t* b = reinterpret_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < n; ++i) y[i] = std::bit_cast<float>(static_cast<uint32_t>(b[i]) << 16);
}

KILN_SIMD_CLONES void narrow_bf16(const float* x, bfloat16_t* y, int64_t n) {
  uint16_t* b = reinterpret_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) {
    // Round to nearest even, NaN kept quiet: half_types.h's float_to_bfloat_bits, branch-free.
    const uint32_t u = std::bit_cast<uint32_t>(x[i]);
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const uint32_t nan = (u >> 16) | 0x0040u;
    b[i] = static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
  }
}

}  // namespace kiln::cpu::fast
