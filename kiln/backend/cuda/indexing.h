// Host side of strided indexing for the GPU kernels of the reduction, scan, sort, random and
// indexing families: shapes and strides as kernel parameters (device/indexing.cuh's Dims),
// scratch buffers, and the reporting of out-of-range indices found on the device.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "kiln/array.h"
#include "kiln/backend/cuda/elementwise.h"

namespace kiln::gpu {

class DeviceStream;

/** Mirrors device/indexing.cuh's Dims<T>: up to kMaxDims values, passed by value. */
template <typename T>
struct DimsArg {
  T v[kMaxDims] = {};
};
static_assert(sizeof(DimsArg<int32_t>) == 64 && sizeof(DimsArg<int64_t>) == 128);

/** `shape` or `strides` as a kernel parameter. Throws std::invalid_argument naming `op` when
 * there are more than kMaxDims dimensions (callers collapse contiguous dimensions first). */
DimsArg<int32_t> dims_arg(const Shape& shape, const char* op);
DimsArg<int64_t> dims_arg(const Strides& strides, const char* op);

/** A device buffer of `nbytes` for temporary use by work enqueued on `stream` (kept alive until
 * that work completes). Returns its address (0 for 0 bytes). */
CUdeviceptr scratch(size_t nbytes, DeviceStream& stream);

/** Blocks of 256 threads that fill every SM of `stream`'s device once (8 per SM). */
int64_t resident_blocks(DeviceStream& stream);
/** Blocks of kernel `f` (`block` threads, `smem` bytes of dynamic shared memory) resident on
 * the whole device at once: a full wave, from the driver's occupancy calculator. */
int64_t resident_blocks(DeviceStream& stream, CUfunction f, uint32_t block, size_t smem);

}  // namespace kiln::gpu
