// Copies on the GPU that only move bits (same dtype): into a new buffer, into a row-contiguous
// buffer, and between any strides (writing into part of a buffer). Conversions between dtypes
// are AsType's (layout.cpp). Kernels: device/copy.cuh and Identity in device/unary.cuh, in the
// modules of unary Identity on the unsigned integer of the element's size.
#pragma once

#include <cuda.h>

#include "kiln/array.h"

namespace kiln::gpu {

class DeviceStream;

/** Allocates `out` (src's dtype) and copies `src` into it: keeps a contiguous `src`'s layout,
 * else row-contiguous (a fill when `src` is one element broadcast). */
void copy_gpu(const array& src, array& out, DeviceStream& stream);

/** Writes `src`'s elements, in row-major order of its shape, to the row-contiguous buffer at
 * device address `dst` (same dtype): a fill when `src` holds one element, a flat copy when it
 * is row-contiguous, else a strided one. */
void copy_to_row_contiguous(const array& src, CUdeviceptr dst, DeviceStream& stream);

/** Copies the elements of `shape` (`dtype`) from device address `src` to `dst`, both already
 * offset to the first element, stepping by `src_strides` and `dst_strides` (elements; any
 * sign, zero for a broadcast source). */
void copy_general(CUdeviceptr src, CUdeviceptr dst, Dtype dtype, const Shape& shape,
                  const Strides& src_strides, const Strides& dst_strides, DeviceStream& stream);

}  // namespace kiln::gpu
