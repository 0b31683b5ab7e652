// Host side of the elementwise kernels (device/unary.cuh, device/binary.cuh): output
// allocation, layout dispatch, kernel naming and launch. A new unary or binary primitive
// adds a functor to device/unary_ops.cuh or device/binary_ops.cuh, named as the primitive,
// and one line in its eval_gpu; its dtypes go into the family's catalog.
#pragma once

#include <string>
#include <string_view>

#include "kiln/array.h"
#include "kiln/backend/cuda/jit.h"

namespace kiln::gpu {

class DeviceStream;

/** Dimensions a strided kernel takes by value (device/indexing.cuh's kMaxDims). */
constexpr int kMaxDims = 16;

/** The C++ type of `d` in device code: "kiln::float32", "kiln::bool_", ... */
std::string device_type(Dtype d);
/** The unsigned integer dtype with `d`'s size: copies that only move bits use it. */
Dtype bits_dtype(Dtype d);

/** The modules of unary kernels applying functor `op` (a struct in device/unary_ops.cuh)
 * from `in` to `out` elements: the contiguous kernels (vectorized and scalar), or with
 * `strided` the strided ones. Split so that the common contiguous case compiles fast. */
std::string unary_module_name(std::string_view op, Dtype in, Dtype out, bool strided);
ModuleSource unary_module(std::string_view op, Dtype in, Dtype out, bool strided);
/** The modules of binary kernels applying functor `op` (device/binary_ops.cuh) to two `in`
 * elements, producing `out`: contiguous and scalar-broadcast kernels, or the strided ones. */
std::string binary_module_name(std::string_view op, Dtype in, Dtype out, bool strided);
ModuleSource binary_module(std::string_view op, Dtype in, Dtype out, bool strided);
/** Passes both modules (contiguous and strided) of the unary or binary kernels of `op` for
 * the given dtypes to `sink`: what a family's catalog lists. */
void unary_modules(std::string_view op, Dtype in, Dtype out, const ModuleSink& sink);
void binary_modules(std::string_view op, Dtype in, Dtype out, const ModuleSink& sink);

/**
 * out = op(in) elementwise on `stream`. Allocates `out`: with `in`'s layout when `in` is
 * contiguous (one flat, vectorized pass over its span), else row-contiguous (a strided
 * pass). The kernel reads `kin` elements and writes `kout` ones (the arrays' dtypes by
 * default; copies pass bits_dtype). The caller has checked that `op` supports them.
 */
void unary_op_gpu(std::string_view op, const array& in, array& out, DeviceStream& stream);
void unary_op_gpu(std::string_view op, const array& in, array& out, Dtype kin, Dtype kout,
                  DeviceStream& stream);

/** Writes op(in) for every element of `in` (any strides), in row-major order of its shape,
 * to the row-contiguous buffer at `dst` (device address). */
void unary_op_strided(std::string_view op, const array& in, CUdeviceptr dst, Dtype kin, Dtype kout,
                      DeviceStream& stream);

/**
 * out = op(a, b) elementwise on `stream`, with `a` and `b` of one dtype, already broadcast
 * to `out`'s shape. Allocates `out` with the layout of contiguous inputs (the same rule as
 * the CPU backend's cpu::binary_layout), else row-contiguous.
 */
void binary_op_gpu(std::string_view op, const array& a, const array& b, array& out,
                   DeviceStream& stream);

}  // namespace kiln::gpu
