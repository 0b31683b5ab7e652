// The CUDA flavour on NVIDIA GPUs (NVRTC): a body is CUDA C++ as written; kiln adds the
// element types of the generated signature (float16_t, bfloat16_t, complex64_t: storage
// types computing in float), MLX's utilities (elem_to_loc, ...), and atomicAdd for the
// half types, so that atomic outputs of every floating dtype work with atomicAdd.
#pragma once

#include "kiln/backend/kernels/metal/common.h"
#include "kiln/backend/kernels/metal/gpu_atomic.h"

/** atomicAdd for float16_t and bfloat16_t (compare-and-swap on the enclosing word). */
KILN_HD metal::half atomicAdd(metal::half* p, metal::half v) {
  return metal::detail::cas_small(p, [v](metal::half x) { return float(x) + float(v); });
}
KILN_HD metal::bfloat atomicAdd(metal::bfloat* p, metal::bfloat v) {
  return metal::detail::cas_small(p, [v](metal::bfloat x) { return float(x) + float(v); });
}
