// cuBLAS's batched LU (getrfBatched / getrsBatched) for batches of small matrices: one
// launch for the whole batch where cuSOLVER's getrf/getrs are one call (and several
// kernels) per matrix. Used by solve, inv and lu_factor on the GPU (solver.cpp).
#pragma once

#include <cstdint>

#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/dtype.h"

namespace kiln::gpu {

/** A device array of the addresses base + i * stride, i < batch (the batched routines take
 * pointer arrays), in stream-ordered scratch: copied on `s`, so no earlier work on the stream
 * that used the same scratch can overwrite it (a synchronous copy on another stream could). */
CUdeviceptr device_pointer_array(CUdeviceptr base, int64_t stride, int64_t batch, DeviceStream& s);

/** Whether a batch of `batch` n x n matrices goes through the batched routines: batches of
 * more than one matrix up to n = kBatchedLuMaxN, where one launch beats a loop of calls. */
bool use_batched_lu(int64_t batch, int64_t n);

/** LU with partial pivoting, in place, of `batch` column-major n x n float32/float64
 * matrices stored back to back at `a`; pivots (1-based, n per matrix) to `ipiv`, the
 * per-matrix info (i > 0: U[i-1, i-1] is zero) to `info` (device ints). */
void getrf_batched(Dtype d, int n, CUdeviceptr a, int64_t batch, CUdeviceptr ipiv, CUdeviceptr info,
                   DeviceStream& s);

/** Solves A X = B in place of B (n x k column-major per matrix, back to back) from
 * getrf_batched's factors `a` and pivots `ipiv`. */
void getrs_batched(Dtype d, int n, int k, CUdeviceptr a, CUdeviceptr ipiv, CUdeviceptr b,
                   int64_t batch, DeviceStream& s);

}  // namespace kiln::gpu
