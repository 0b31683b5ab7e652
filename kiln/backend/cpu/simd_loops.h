// The loops that run a vectorizable functor (one marked `simd`, unary_ops.h), shared by the
// eager unary kernels (unary.cpp) and compile's generated CPU kernels (compiled.cpp), so that
// both compute every value with the same clones and agree bit for bit.
#pragma once

#include <cstdint>

#include "kiln/backend/cpu/simd_math.h"

namespace kiln::cpu {

template <typename In, typename Out, typename Op>
KILN_SIMD_CLONES void map_simd(const In* src, Out* dst, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) dst[i] = op(src[i]);
}

/** float16 and bfloat16 through the float clones: n elements of src (stride `is`) widened to
 * float in blocks, `op`, then rounded once into dst (stride `os`), as the scalar path rounds. */
template <typename T, typename Op>
void map_simd_half(const T* src, int64_t is, T* dst, int64_t os, int64_t n, Op op) {
  constexpr int64_t kBlock = 1024;
  float a[kBlock], b[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = n - i0 < kBlock ? n - i0 : kBlock;
    for (int64_t i = 0; i < m; ++i) a[i] = static_cast<float>(src[(i0 + i) * is]);
    map_simd(a, b, m, op);
    for (int64_t i = 0; i < m; ++i) dst[(i0 + i) * os] = static_cast<T>(b[i]);
  }
}

}  // namespace kiln::cpu
