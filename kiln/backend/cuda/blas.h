// GEMM through cuBLASLt, for Matmul::eval_gpu and friends.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kiln/dtype.h"

namespace kiln::gpu {

class DeviceStream;

/**
 * A batched GEMM on row-major matrices: for each batch index i,
 *     C_i = alpha * op(A_i) @ op(B_i) + beta * C_i
 * with op(A_i) of shape (m, k) and op(B_i) of shape (k, n), C_i of shape (m, n).
 * A_i is stored as (m, k) rows of `lda` elements, or as (k, m) when `transpose_a`; likewise
 * B_i is (k, n), or (n, k) when `transpose_b`; C_i has rows of `ldc` elements. Batch i
 * starts `stride_*` elements after batch i - 1 (0 broadcasts an operand over the batch).
 * All pointers are device addresses of `dtype` elements.
 */
struct GemmArgs {
  /** float32, float16, bfloat16 or float64, for A, B and C alike. Half types accumulate in
   * float32; float64 in float64. */
  Dtype dtype = float32;
  bool transpose_a = false;
  bool transpose_b = false;
  int64_t m = 0, n = 0, k = 0;
  CUdeviceptr a = 0;
  int64_t lda = 0;
  int64_t stride_a = 0;
  CUdeviceptr b = 0;
  int64_t ldb = 0;
  int64_t stride_b = 0;
  CUdeviceptr c = 0;
  int64_t ldc = 0;
  int64_t stride_c = 0;
  int64_t batch = 1;
  double alpha = 1.0;
  double beta = 0.0;
  /** float32 only: let tensor cores round the inputs to TF32 (10-bit mantissa), ~8x faster
   * on an H100 with ~1e-3 relative error. */
  bool allow_tf32 = false;
};

/**
 * Enqueues the GEMM on `stream` with cuBLASLt (one handle per device; plans and algorithms
 * cached per problem shape; the workspace comes from kiln's allocator and is kept alive until
 * the work completes). m, n or batch of 0 does nothing. Throws std::invalid_argument for an
 * unsupported dtype, k < 1 or leading dimensions shorter than a row, and std::runtime_error
 * naming the cuBLASLt call and status when cuBLASLt fails.
 */
void gemm(const GemmArgs& args, DeviceStream& stream);

}  // namespace kiln::gpu
