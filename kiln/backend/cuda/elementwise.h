// Host side of the elementwise kernels (device/unary.cuh, device/binary.cuh): output
// allocation, layout dispatch, kernel naming and launch, and the strided-launch plan the
// other families (ternary, copy) share. A new unary or binary primitive adds a functor to
// device/unary_ops.cuh or device/binary_ops.cuh, named as the primitive, a row to its
// family's table (unary.cpp, binary.cpp: the dtypes it takes, which are also the family's
// catalog of modules) and a one-line eval_gpu.
//
// Modules: one per (functor, input dtype, output dtype), holding its contiguous kernel and
// its strided variants, so that the CI catalog compiles few modules (each costs a fixed
// parse of the device headers) while a first use still compiles only a handful of kernels.
// Kernels read and write `kin`/`kout` elements, which may differ from the arrays' dtypes
// where only the bits matter (copies, wrap-around integer arithmetic: see the tables).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "kiln/array.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/launch.h"

namespace kiln::gpu {

class DeviceStream;

/** Dimensions a strided kernel takes by value (device/indexing.cuh's kMaxDims). */
constexpr int kMaxDims = 16;
/** Threads per block of the elementwise kernels. */
constexpr uint32_t kElementwiseBlock = 256;
/** Elements of the last dimension per thread in the strided kernels (their W). */
constexpr int kStridedWork = 4;

/** The C++ type of `d` in device code: "kiln::float32", "kiln::bool_", ... */
std::string device_type(Dtype d);
/** The unsigned integer dtype with `d`'s size: copies that only move bits use it. */
Dtype bits_dtype(Dtype d);
/** Elements per thread of the contiguous kernels: one 16-byte access of the widest type. */
int vector_width(Dtype a, Dtype b);
/** Whether device address `p` is aligned for vectors of `n` elements of `d`. */
bool is_aligned(CUdeviceptr p, Dtype d, int n);

// ---------------------------------------------------------------- strided launches

/** The strided variants compiled: (64-bit indexing, NDIM). NDIM 2 unrolls the index
 * computation of the most common case (transposes and broadcasts of matrices); 0 loops over
 * any count up to kMaxDims, which costs little more (one collapsed dimension runs no loop at
 * all). Arrays that need 64-bit indices are large and bandwidth-bound: only the looping
 * variant. Each variant is a kernel per functor and dtype pair to compile. */
constexpr std::pair<bool, int> kStridedVariants[] = {{false, 2}, {false, 0}, {true, 0}};
/** The NDIM template argument for `ndim` collapsed dimensions. */
constexpr int strided_ndim(int ndim, bool wide) {
  return ndim == 2 && !wide ? 2 : 0;
}

/** "int, 2, 4": the index type, NDIM and W template arguments of a strided variant. */
std::string strided_args(bool wide, int ndim);

/** Mirrors device/indexing.cuh's Dims<T>. */
template <typename T>
struct DeviceDims {
  T v[kMaxDims];
};

/**
 * A launch of a strided kernel (unary_g and its kin) over `shape` for K operands: dimensions
 * collapsed where every operand allows, 32-bit indices when every offset and the thread count
 * fit, and `kStridedWork` elements of the last dimension per thread.
 */
template <size_t K>
struct StridedPlan {
  Shape shape;
  std::array<Strides, K> strides;
  bool wide = false;  // 64-bit indexing
  int ndim_template = 0;
  int64_t last = 0, chunks = 0, threads = 0;
  DeviceDims<int32_t> dims{};
  std::array<DeviceDims<int64_t>, K> dim_strides{};
};

/** Plans a strided launch; throws std::invalid_argument past kMaxDims dimensions that
 * cannot be merged. `shape` must not be empty of elements. */
template <size_t K>
StridedPlan<K> plan_strided(const Shape& shape, const std::array<Strides, K>& strides);

/** Launches strided kernel `f` as planned: (ptrs..., shape, strides..., ndim, last, chunks,
 * threads), with the plan's index type. */
template <size_t K, typename... Ptrs>
void launch_strided(CUfunction f, const StridedPlan<K>& p, DeviceStream& s, Ptrs... ptrs) {
  auto go = [&](auto idx) {
    using IdxT = decltype(idx);
    const int32_t ndim = static_cast<int32_t>(p.shape.size());
    auto tail = [&](const auto&... strides) {
      launch_kernel(f, grid_1d(p.threads, kElementwiseBlock), {kElementwiseBlock}, 0, s, ptrs...,
                    p.dims, strides..., ndim, static_cast<IdxT>(p.last),
                    static_cast<IdxT>(p.chunks), static_cast<IdxT>(p.threads));
    };
    std::apply(tail, p.dim_strides);
  };
  if (p.wide)
    go(int64_t{});
  else
    go(int32_t{});
}

/** Launches a contiguous kernel taking (ptrs..., size, vec) over `n` elements, `v` per
 * thread; `vec` says whether the vector operands are aligned for 16-byte accesses. */
template <typename... Ptrs>
void launch_contiguous(CUfunction f, int64_t n, int v, bool vec, DeviceStream& s, Ptrs... ptrs) {
  launch_kernel(f, grid_1d((n + v - 1) / v, kElementwiseBlock), {kElementwiseBlock}, 0, s, ptrs...,
                n, vec);
}

// ---------------------------------------------------------------- modules

/** The module of unary kernels applying functor `op` (a struct in device/unary_ops.cuh) from
 * `in` to `out` elements: the contiguous kernel and the strided ones. Same-type Identity
 * (copies) also holds the copy kernels of device/copy.cuh. */
std::string unary_module_name(std::string_view op, Dtype in, Dtype out);
ModuleSource unary_module(std::string_view op, Dtype in, Dtype out);
/** The module of binary kernels applying functor `op` (device/binary_ops.cuh) to two `in`
 * elements, producing `out`: the contiguous (and scalar-broadcast) kernel and the strided
 * ones. */
std::string binary_module_name(std::string_view op, Dtype in, Dtype out);
ModuleSource binary_module(std::string_view op, Dtype in, Dtype out);

/** Kernel names, as looked up in the modules above. */
std::string unary_v_name(std::string_view op, Dtype in, Dtype out);
std::string unary_g_name(std::string_view op, Dtype in, Dtype out, bool wide, int ndim);

// ---------------------------------------------------------------- launches

/**
 * out = op(in) elementwise on `stream`. Allocates `out`: one element broadcast like `in`
 * when `in` holds one element (computed once), `in`'s layout when `in` is contiguous (one
 * flat, vectorized pass over its span), else row-contiguous (a strided pass). The kernel
 * reads `kin` elements and writes `kout` ones (the arrays' dtypes by default). The caller
 * has checked that `op` supports them.
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
 * to `out`'s shape. Allocates `out` with the layout of contiguous inputs (the rule of the CPU
 * backend's cpu::binary_layout), else row-contiguous. The kernel reads `kin` and writes
 * `kout` elements (the arrays' dtypes by default).
 */
void binary_op_gpu(std::string_view op, const array& a, const array& b, array& out,
                   DeviceStream& stream);
void binary_op_gpu(std::string_view op, const array& a, const array& b, array& out, Dtype kin,
                   Dtype kout, DeviceStream& stream);

}  // namespace kiln::gpu
