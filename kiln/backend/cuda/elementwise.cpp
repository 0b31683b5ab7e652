#include "kiln/backend/cuda/elementwise.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>

#include "kiln/backend/cpu/elementwise.h"
#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"

namespace kiln::gpu {

namespace {

constexpr uint32_t kBlock = 256;
// Elements of the last dimension per thread in the strided kernels.
constexpr int kWork = 4;
// The strided variants compiled: (64-bit indexing, NDIM). NDIM 1 to 3 unroll the index
// computation, 0 loops over any count up to kMaxDims. Arrays that need 64-bit indices are
// large and bandwidth-bound, so they get only the looping variant (fewer kernels to compile).
constexpr std::pair<bool, int> kStridedVariants[] = {
    {false, 1}, {false, 2}, {false, 3}, {false, 0}, {true, 0}};

// Mirrors device/indexing.cuh's Dims<T>.
template <typename T>
struct DeviceDims {
  T v[kMaxDims];
};
static_assert(sizeof(DeviceDims<int32_t>) == 64 && sizeof(DeviceDims<int64_t>) == 128);

// Elements per thread in the contiguous kernels: one 16-byte access of the wider type.
int vector_width(Dtype in, Dtype out) {
  return 16 / std::max<int>(in.size, out.size);
}

const char* index_type(bool wide) {
  return wide ? "long long" : "int";
}

std::string unary_v_name(std::string_view op, Dtype in, Dtype out, int n) {
  return "kiln::unary_v<kiln::" + std::string(op) + ", " + device_type(in) + ", " +
         device_type(out) + ", " + std::to_string(n) + ">";
}

std::string unary_g_name(std::string_view op, Dtype in, Dtype out, bool wide, int ndim) {
  return "kiln::unary_g<kiln::" + std::string(op) + ", " + device_type(in) + ", " +
         device_type(out) + ", " + index_type(wide) + ", " + std::to_string(ndim) + ", " +
         std::to_string(kWork) + ">";
}

std::string binary_v_name(std::string_view op, Dtype in, Dtype out, bool sa, bool sb, int n) {
  return "kiln::binary_v<kiln::" + std::string(op) + ", " + device_type(in) + ", " +
         device_type(out) + ", " + (sa ? "true" : "false") + ", " + (sb ? "true" : "false") + ", " +
         std::to_string(n) + ">";
}

std::string binary_g_name(std::string_view op, Dtype in, Dtype out, bool wide, int ndim) {
  return "kiln::binary_g<kiln::" + std::string(op) + ", " + device_type(in) + ", " +
         device_type(out) + ", " + index_type(wide) + ", " + std::to_string(ndim) + ", " +
         std::to_string(kWork) + ">";
}

// Whether `p` is aligned for vectors of n elements of `d`.
bool aligned(CUdeviceptr p, Dtype d, int n) {
  return p % (static_cast<CUdeviceptr>(d.size) * n) == 0;
}

// A strided launch over collapsed dimensions.
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

template <size_t K>
StridedPlan<K> plan_strided(const Shape& shape, const std::array<Strides, K>& strides) {
  StridedPlan<K> p;
  std::tie(p.shape, p.strides) = collapse_contiguous_dims<K>(shape, strides);
  const int nd = static_cast<int>(p.shape.size());
  if (nd > kMaxDims) {
    throw std::invalid_argument("[gpu] Strided kernels take at most " + std::to_string(kMaxDims) +
                                " dimensions that cannot be merged; got " + std::to_string(nd) +
                                " in shape " + shape_str(shape) + ".");
  }
  const int64_t size = static_cast<int64_t>(shape_size(p.shape));
  p.last = p.shape.back();
  p.chunks = (p.last + kWork - 1) / kWork;
  p.threads = size / p.last * p.chunks;
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  p.wide = size > kMax32 || p.threads > kMax32;
  for (size_t k = 0; k < K; ++k) {
    int64_t span = 0;  // largest |offset| an operand reaches
    for (int i = 0; i < nd; ++i) span += (p.shape[i] - 1) * std::abs(p.strides[k][i]);
    p.wide |= span > kMax32;
  }
  p.ndim_template = nd <= 3 && !p.wide ? nd : 0;
  for (int i = 0; i < nd; ++i) {
    p.dims.v[i] = p.shape[i];
    for (size_t k = 0; k < K; ++k) p.dim_strides[k].v[i] = p.strides[k][i];
  }
  return p;
}

// Launches a strided kernel with the index type the plan picked.
template <size_t K, typename... Ptrs>
void launch_strided(CUfunction f, const StridedPlan<K>& p, DeviceStream& s, Ptrs... ptrs) {
  auto go = [&](auto idx) {
    using IdxT = decltype(idx);
    const int32_t ndim = static_cast<int32_t>(p.shape.size());
    auto tail = [&](const auto&... strides) {
      launch_kernel(f, grid_1d(p.threads, kBlock), {kBlock}, 0, s, ptrs..., p.dims, strides...,
                    ndim, static_cast<IdxT>(p.last), static_cast<IdxT>(p.chunks),
                    static_cast<IdxT>(p.threads));
    };
    std::apply(tail, p.dim_strides);
  };
  if (p.wide)
    go(int64_t{});
  else
    go(int32_t{});
}

// Allocates `out` with `like`'s layout (contiguous `like`) or row-contiguous.
void set_output(const array& like, array& out, DeviceStream& s) {
  if (like.flags().contiguous) {
    out.set_data(new_device_storage(like.data_size() * out.itemsize(), s), like.data_size(),
                 like.strides(), like.flags());
  } else {
    out.set_data(new_device_storage(out.nbytes(), s));
  }
}

}  // namespace

std::string device_type(Dtype d) {
  return "kiln::" + std::string(type_to_name(d));
}

Dtype bits_dtype(Dtype d) {
  switch (d.size) {
    case 1:
      return uint8;
    case 2:
      return uint16;
    case 4:
      return uint32;
    default:
      return uint64;
  }
}

// ---------------------------------------------------------------- modules

std::string unary_module_name(std::string_view op, Dtype in, Dtype out, bool strided) {
  return std::string(strided ? "unary_strided_" : "unary_") + std::string(op) + "_" +
         std::string(type_to_name(in)) + "_" + std::string(type_to_name(out));
}

ModuleSource unary_module(std::string_view op, Dtype in, Dtype out, bool strided) {
  ModuleSource m{unary_module_name(op, in, out, strided),
                 "#include \"kiln/backend/cuda/device/unary.cuh\"\n",
                 {}};
  if (strided) {
    for (auto [wide, nd] : kStridedVariants)
      m.kernels.push_back(unary_g_name(op, in, out, wide, nd));
  } else {
    const int v = vector_width(in, out);
    m.kernels.push_back(unary_v_name(op, in, out, 1));
    if (v > 1) m.kernels.push_back(unary_v_name(op, in, out, v));
  }
  return m;
}

std::string binary_module_name(std::string_view op, Dtype in, Dtype out, bool strided) {
  return std::string(strided ? "binary_strided_" : "binary_") + std::string(op) + "_" +
         std::string(type_to_name(in)) + "_" + std::string(type_to_name(out));
}

ModuleSource binary_module(std::string_view op, Dtype in, Dtype out, bool strided) {
  ModuleSource m{binary_module_name(op, in, out, strided),
                 "#include \"kiln/backend/cuda/device/binary.cuh\"\n",
                 {}};
  if (strided) {
    for (auto [wide, nd] : kStridedVariants)
      m.kernels.push_back(binary_g_name(op, in, out, wide, nd));
  } else {
    const int v = vector_width(in, out);
    m.kernels.push_back(binary_v_name(op, in, out, true, true, 1));
    for (auto [sa, sb] : {std::pair{false, false}, {true, false}, {false, true}}) {
      m.kernels.push_back(binary_v_name(op, in, out, sa, sb, 1));
      if (v > 1) m.kernels.push_back(binary_v_name(op, in, out, sa, sb, v));
    }
  }
  return m;
}

void unary_modules(std::string_view op, Dtype in, Dtype out, const ModuleSink& sink) {
  for (bool strided : {false, true}) {
    sink(unary_module_name(op, in, out, strided), unary_module(op, in, out, strided));
  }
}

void binary_modules(std::string_view op, Dtype in, Dtype out, const ModuleSink& sink) {
  for (bool strided : {false, true}) {
    sink(binary_module_name(op, in, out, strided), binary_module(op, in, out, strided));
  }
}

// ---------------------------------------------------------------- unary

void unary_op_strided(std::string_view op, const array& in, CUdeviceptr dst, Dtype kin, Dtype kout,
                      DeviceStream& s) {
  if (in.size() == 0) return;
  const Module& mod = get_module(s.context().index(), unary_module_name(op, kin, kout, true),
                                 [&] { return unary_module(op, kin, kout, true); });
  auto plan = plan_strided<1>(in.shape(), {in.strides()});
  CUfunction f = mod.function(unary_g_name(op, kin, kout, plan.wide, plan.ndim_template));
  launch_strided(f, plan, s, device_address(in), dst);
}

void unary_op_gpu(std::string_view op, const array& in, array& out, DeviceStream& s) {
  unary_op_gpu(op, in, out, in.dtype(), out.dtype(), s);
}

void unary_op_gpu(std::string_view op, const array& in, array& out, Dtype kin, Dtype kout,
                  DeviceStream& s) {
  set_output(in, out, s);
  if (out.size() == 0) return;
  if (!in.flags().contiguous) {
    unary_op_strided(op, in, device_address(out), kin, kout, s);
    return;
  }
  const Module& mod = get_module(s.context().index(), unary_module_name(op, kin, kout, false),
                                 [&] { return unary_module(op, kin, kout, false); });
  const CUdeviceptr src = device_address(in), dst = device_address(out);
  const int64_t n = static_cast<int64_t>(in.data_size());
  int v = vector_width(kin, kout);
  if (v > 1 && !(aligned(src, kin, v) && aligned(dst, kout, v))) v = 1;
  CUfunction f = mod.function(unary_v_name(op, kin, kout, v));
  launch_kernel(f, grid_1d((n + v - 1) / v, kBlock), {kBlock}, 0, s, src, dst, n);
}

// ---------------------------------------------------------------- binary

void binary_op_gpu(std::string_view op, const array& a, const array& b, array& out,
                   DeviceStream& s) {
  using cpu::BinaryLayout;
  const BinaryLayout layout = cpu::binary_layout(a, b);
  switch (layout) {
    case BinaryLayout::scalar_scalar:
      // One element, broadcast over out's shape as the inputs are.
      out.set_data(new_device_storage(out.itemsize(), s), 1, a.strides(), a.flags());
      break;
    case BinaryLayout::scalar_vector:
      set_output(b, out, s);
      break;
    case BinaryLayout::vector_scalar:
    case BinaryLayout::vector_vector:
      set_output(a, out, s);
      break;
    case BinaryLayout::general:
      out.set_data(new_device_storage(out.nbytes(), s));
      break;
  }
  if (out.size() == 0) return;
  const Dtype in_t = a.dtype(), out_t = out.dtype();
  const bool strided = layout == BinaryLayout::general;
  const Module& mod = get_module(s.context().index(), binary_module_name(op, in_t, out_t, strided),
                                 [&] { return binary_module(op, in_t, out_t, strided); });
  const CUdeviceptr pa = device_address(a), pb = device_address(b), po = device_address(out);
  if (strided) {
    auto plan = plan_strided<2>(out.shape(), {a.strides(), b.strides()});
    CUfunction f = mod.function(binary_g_name(op, in_t, out_t, plan.wide, plan.ndim_template));
    launch_strided(f, plan, s, pa, pb, po);
    return;
  }
  const bool sa = layout == BinaryLayout::scalar_scalar || layout == BinaryLayout::scalar_vector;
  const bool sb = layout == BinaryLayout::scalar_scalar || layout == BinaryLayout::vector_scalar;
  const int64_t n = static_cast<int64_t>(out.data_size());
  int v = sa && sb ? 1 : vector_width(in_t, out_t);
  if (v > 1 &&
      !((sa || aligned(pa, in_t, v)) && (sb || aligned(pb, in_t, v)) && aligned(po, out_t, v))) {
    v = 1;
  }
  CUfunction f = mod.function(binary_v_name(op, in_t, out_t, sa, sb, v));
  launch_kernel(f, grid_1d((n + v - 1) / v, kBlock), {kBlock}, 0, s, pa, pb, po, n);
}

}  // namespace kiln::gpu
