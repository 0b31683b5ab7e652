// The target-independent part of the custom-kernel layer: Metal's types and math library,
// MLX's utilities, and the names each flavour's body sees unqualified. A target prelude
// (gpu.h, cuda_gpu.h, or the CPU ones) includes this and adds what differs by target:
// thread attributes, barriers, simdgroup functions, atomics and simdgroup matrices.
#pragma once

#include "kiln/backend/kernels/metal/atomic.h"
#include "kiln/backend/kernels/metal/complex.h"
#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/math.h"
#include "kiln/backend/kernels/metal/utils.h"
#include "kiln/backend/kernels/metal/vec.h"

// MLX's helper-function qualifier, often found in headers written for metal_kernel.
#ifndef METAL_FUNC
#define METAL_FUNC inline
#endif

// Vector names are declared again in the kernel's namespace, because CUDA predefines
// float4, uint3, ... in the global namespace and a using-directive alone would make them
// ambiguous.
#define KILN_METAL_VECTOR_NAMES(T) \
  using metal::T##2;               \
  using metal::T##3;               \
  using metal::T##4;

/** What a Metal-flavour body and header may name unqualified (in namespace kiln_user). */
#define KILN_METAL_USING          \
  using namespace metal;          \
  using namespace kiln_utils;     \
  using namespace kiln_metal_utils; \
  KILN_METAL_VECTOR_NAMES(float)  \
  KILN_METAL_VECTOR_NAMES(half)   \
  KILN_METAL_VECTOR_NAMES(bfloat) \
  KILN_METAL_VECTOR_NAMES(int)    \
  KILN_METAL_VECTOR_NAMES(uint)   \
  KILN_METAL_VECTOR_NAMES(short)  \
  KILN_METAL_VECTOR_NAMES(ushort) \
  KILN_METAL_VECTOR_NAMES(char)   \
  KILN_METAL_VECTOR_NAMES(uchar)  \
  KILN_METAL_VECTOR_NAMES(long)   \
  KILN_METAL_VECTOR_NAMES(ulong)  \
  KILN_METAL_VECTOR_NAMES(bool)   \
  using metal::uint;              \
  using metal::ushort;            \
  using metal::uchar;             \
  using metal::ulong;

