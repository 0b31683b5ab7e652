// The CUDA flavour's light prelude on NVIDIA GPUs, for kernels whose signature, body and
// header involve no half or complex type and no metal:: name (kiln picks it in
// signature.cpp): the fixed-width integer types, MLX's CUDA utilities (cuda/mlx.h: Shape,
// Strides, elem_to_loc, Limits, WARP_SIZE, ...) and cuda::std's basics. Leaving out the
// Metal layer (vectors, math, atomics) cuts NVRTC's front-end time of a small kernel by
// about two thirds; what such a kernel can name is the same with either prelude.
#pragma once

#include "kiln/backend/kernels/cuda/mlx.h"
#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/utils_core.h"

#ifndef METAL_FUNC
#define METAL_FUNC inline
#endif

/** What a CUDA-flavour body and header may name unqualified (see cuda_gpu.h for the full
 * prelude). */
#define KILN_CUDA_USING         \
  using namespace kiln_utils;   \
  using namespace kiln_cuda;
