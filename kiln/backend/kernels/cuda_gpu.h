// The CUDA flavour on NVIDIA GPUs (NVRTC): a body is CUDA C++ as written; kiln adds what
// MLX's generated translation unit offers a body (cuda/mlx.h: Shape, Strides, elem_to_loc,
// Limits, AlignedVector, WARP_SIZE, ...; cooperative groups are included on demand by the
// generator), the element types of the generated signature (float16_t = __half, bfloat16_t
// = __nv_bfloat16, complex64_t = cuda::std::complex<float>; cuda_fp16.h's API in cuda/half.h
// and the complex type in cuda/complex.h come on demand), the Metal layer under metal::, and
// atomicAdd for the half types, so that atomic outputs of every floating dtype work with
// atomicAdd.
#pragma once

#include "kiln/backend/kernels/cuda/mlx.h"
#include "kiln/backend/kernels/metal/common.h"
#include "kiln/backend/kernels/metal/gpu_atomic.h"

/** atomicAdd for float16_t and bfloat16_t (compare-and-swap on the enclosing word). */
KILN_HD metal::half atomicAdd(metal::half* p, metal::half v) {
  return metal::detail::cas_small(p, [v](metal::half x) { return float(x) + float(v); });
}
KILN_HD metal::bfloat atomicAdd(metal::bfloat* p, metal::bfloat v) {
  return metal::detail::cas_small(p, [v](metal::bfloat x) { return float(x) + float(v); });
}

/** What a CUDA-flavour body and header may name unqualified: the element types of the
 * generated signature, MLX's utilities. Math on float16_t/bfloat16_t (exp, max, ...) is
 * found through the argument types. */
#define KILN_CUDA_USING     \
  using metal::bfloat16_t;  \
  using metal::float16_t;   \
  using namespace kiln_utils; \
  using namespace kiln_cuda;
