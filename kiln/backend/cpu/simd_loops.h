// Loops compiled per ISA level (KILN_SIMD_CLONES): a vectorizable functor (one marked `simd`,
// unary_ops.h) shared by the eager unary kernels (unary.cpp) and compile's generated CPU
// kernels (compiled.cpp), so that both compute every value with the same clones and agree bit
// for bit; and the float16/bfloat16 conversions of the elementwise, copy and fused kernels.
#pragma once

#include <cstdint>

#include "kiln/backend/cpu/simd_math.h"

namespace kiln::cpu {

template <typename In, typename Out, typename Op>
KILN_SIMD_CLONES void map_simd(const In* src, Out* dst, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) dst[i] = op(src[i]);
}

/** n float16 or bfloat16 values (stride `is`) widened to float, in clones: the branch-free
 * conversions of half_types.h vectorize there, not in baseline code (unit stride apart). */
template <typename T>
KILN_SIMD_CLONES void widen_half(const T* src, int64_t is, float* dst, int64_t n) {
  if (is == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i * is]);
  }
}

/** n floats rounded (to nearest even) to float16 or bfloat16 at stride `os`, in clones. */
template <typename T>
KILN_SIMD_CLONES void narrow_half(const float* src, T* dst, int64_t os, int64_t n) {
  if (os == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i * os] = static_cast<T>(src[i]);
  }
}

/** float16 and bfloat16 through the float clones: n elements of src (stride `is`) widened to
 * float in blocks, `op`, then rounded once into dst (stride `os`), as the scalar path rounds. */
template <typename T, typename Op>
void map_simd_half(const T* src, int64_t is, T* dst, int64_t os, int64_t n, Op op) {
  constexpr int64_t kBlock = 1024;
  float a[kBlock], b[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = n - i0 < kBlock ? n - i0 : kBlock;
    widen_half(src + i0 * is, is, a, m);
    map_simd(a, b, m, op);
    narrow_half(b, dst + i0 * os, os, m);
  }
}

}  // namespace kiln::cpu
