#include "kiln/backend/cuda/elementwise.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <utility>

#include "kiln/backend/cpu/elementwise.h"
#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/utils.h"

namespace kiln::gpu {

namespace {

static_assert(sizeof(DeviceDims<int32_t>) == 64 && sizeof(DeviceDims<int64_t>) == 128);

std::string type_args(std::string_view op, Dtype in, Dtype out) {
  return "kiln::" + std::string(op) + ", " + device_type(in) + ", " + device_type(out);
}

std::string binary_v_name(std::string_view op, Dtype in, Dtype out) {
  return "kiln::binary_v<" + type_args(op, in, out) + ", " + std::to_string(vector_width(in, out)) +
         ">";
}

std::string binary_g_name(std::string_view op, Dtype in, Dtype out, bool wide, int ndim) {
  return "kiln::binary_g<" + type_args(op, in, out) + ", " + strided_args(wide, ndim) + ">";
}

// Same-type Identity moves bits: its modules also hold the fill and general copy kernels.
bool is_copy(std::string_view op, Dtype in, Dtype out) {
  return op == "Identity" && in == out;
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

// One element broadcast as `like` is: the result of an op on broadcast scalars.
void set_scalar_output(const array& like, array& out, DeviceStream& s) {
  out.set_data(new_device_storage(out.itemsize(), s), 1, like.strides(), like.flags());
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

int vector_width(Dtype a, Dtype b) {
  return 16 / std::max<int>(a.size, b.size);
}

bool is_aligned(CUdeviceptr p, Dtype d, int n) {
  return p % (static_cast<CUdeviceptr>(d.size) * n) == 0;
}

std::string strided_args(bool wide, int ndim) {
  return std::string(wide ? "long long" : "int") + ", " + std::to_string(ndim) + ", " +
         std::to_string(kStridedWork);
}

// ---------------------------------------------------------------- strided plans

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
  p.chunks = (p.last + kStridedWork - 1) / kStridedWork;
  p.threads = size / p.last * p.chunks;
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  p.wide = size > kMax32 || p.threads > kMax32;
  for (size_t k = 0; k < K; ++k) {
    int64_t span = 0;  // largest |offset| an operand reaches
    for (int i = 0; i < nd; ++i) span += (p.shape[i] - 1) * std::abs(p.strides[k][i]);
    p.wide |= span > kMax32;
  }
  p.ndim_template = strided_ndim(nd, p.wide);
  for (int i = 0; i < nd; ++i) {
    p.dims.v[i] = p.shape[i];
    for (size_t k = 0; k < K; ++k) p.dim_strides[k].v[i] = p.strides[k][i];
  }
  return p;
}

template StridedPlan<1> plan_strided<1>(const Shape&, const std::array<Strides, 1>&);
template StridedPlan<2> plan_strided<2>(const Shape&, const std::array<Strides, 2>&);
template StridedPlan<3> plan_strided<3>(const Shape&, const std::array<Strides, 3>&);

// ---------------------------------------------------------------- modules

std::string unary_v_name(std::string_view op, Dtype in, Dtype out) {
  return "kiln::unary_v<" + type_args(op, in, out) + ", " + std::to_string(vector_width(in, out)) +
         ">";
}

std::string unary_g_name(std::string_view op, Dtype in, Dtype out, bool wide, int ndim) {
  return "kiln::unary_g<" + type_args(op, in, out) + ", " + strided_args(wide, ndim) + ">";
}

std::string unary_module_name(std::string_view op, Dtype in, Dtype out) {
  return "unary_" + std::string(op) + "_" + std::string(type_to_name(in)) + "_" +
         std::string(type_to_name(out));
}

ModuleSource unary_module(std::string_view op, Dtype in, Dtype out) {
  const bool copy = is_copy(op, in, out);
  ModuleSource m{unary_module_name(op, in, out),
                 std::string("#include \"kiln/backend/cuda/device/unary.cuh\"\n") +
                     (copy ? "#include \"kiln/backend/cuda/device/copy.cuh\"\n" : ""),
                 {unary_v_name(op, in, out)}};
  const std::string t = device_type(in);
  if (copy)
    m.kernels.push_back("kiln::fill<" + t + ", " + std::to_string(vector_width(in, in)) + ">");
  for (auto [wide, nd] : kStridedVariants) {
    m.kernels.push_back(unary_g_name(op, in, out, wide, nd));
    if (copy) m.kernels.push_back("kiln::copy_gg<" + t + ", " + strided_args(wide, nd) + ">");
  }
  return m;
}

std::string binary_module_name(std::string_view op, Dtype in, Dtype out) {
  return "binary_" + std::string(op) + "_" + std::string(type_to_name(in)) + "_" +
         std::string(type_to_name(out));
}

ModuleSource binary_module(std::string_view op, Dtype in, Dtype out) {
  ModuleSource m{binary_module_name(op, in, out),
                 "#include \"kiln/backend/cuda/device/binary.cuh\"\n",
                 {binary_v_name(op, in, out)}};
  for (auto [wide, nd] : kStridedVariants)
    m.kernels.push_back(binary_g_name(op, in, out, wide, nd));
  return m;
}

namespace {
const Module& load_unary_module(std::string_view op, Dtype in, Dtype out, DeviceStream& s) {
  return get_module(s.context().index(), unary_module_name(op, in, out),
                    [&] { return unary_module(op, in, out); });
}
}  // namespace

// ---------------------------------------------------------------- unary

void unary_op_strided(std::string_view op, const array& in, CUdeviceptr dst, Dtype kin, Dtype kout,
                      DeviceStream& s) {
  if (in.size() == 0) return;
  const Module& mod = load_unary_module(op, kin, kout, s);
  auto plan = plan_strided<1>(in.shape(), {in.strides()});
  CUfunction f = mod.function(unary_g_name(op, kin, kout, plan.wide, plan.ndim_template));
  launch_strided(f, plan, s, device_address(in), dst);
}

void unary_op_gpu(std::string_view op, const array& in, array& out, DeviceStream& s) {
  unary_op_gpu(op, in, out, in.dtype(), out.dtype(), s);
}

void unary_op_gpu(std::string_view op, const array& in, array& out, Dtype kin, Dtype kout,
                  DeviceStream& s) {
  if (in.data_size() == 1)
    set_scalar_output(in, out, s);
  else
    set_output(in, out, s);
  if (out.size() == 0) return;
  if (!in.flags().contiguous && in.data_size() != 1) {
    unary_op_strided(op, in, device_address(out), kin, kout, s);
    return;
  }
  const Module& mod = load_unary_module(op, kin, kout, s);
  const CUdeviceptr src = device_address(in), dst = device_address(out);
  const int v = vector_width(kin, kout);
  const bool vec = is_aligned(src, kin, v) && is_aligned(dst, kout, v);
  launch_contiguous(mod.function(unary_v_name(op, kin, kout)),
                    static_cast<int64_t>(out.data_size()), v, vec, s, src, dst);
}

// ---------------------------------------------------------------- binary

void binary_op_gpu(std::string_view op, const array& a, const array& b, array& out,
                   DeviceStream& s) {
  binary_op_gpu(op, a, b, out, a.dtype(), out.dtype(), s);
}

void binary_op_gpu(std::string_view op, const array& a, const array& b, array& out, Dtype kin,
                   Dtype kout, DeviceStream& s) {
  using cpu::BinaryLayout;
  const BinaryLayout layout = cpu::binary_layout(a, b);
  switch (layout) {
    case BinaryLayout::scalar_scalar:
      set_scalar_output(a, out, s);
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
  const Module& mod = get_module(s.context().index(), binary_module_name(op, kin, kout),
                                 [&] { return binary_module(op, kin, kout); });
  const CUdeviceptr pa = device_address(a), pb = device_address(b), po = device_address(out);
  if (layout == BinaryLayout::general) {
    auto plan = plan_strided<2>(out.shape(), {a.strides(), b.strides()});
    CUfunction f = mod.function(binary_g_name(op, kin, kout, plan.wide, plan.ndim_template));
    launch_strided(f, plan, s, pa, pb, po);
    return;
  }
  // Two single elements run as two contiguous operands of one element.
  const bool sa = layout == BinaryLayout::scalar_vector;
  const bool sb = layout == BinaryLayout::vector_scalar;
  const int v = vector_width(kin, kout);
  const bool vec =
      (sa || is_aligned(pa, kin, v)) && (sb || is_aligned(pb, kin, v)) && is_aligned(po, kout, v);
  const int64_t n = static_cast<int64_t>(out.data_size());
  launch_kernel(mod.function(binary_v_name(op, kin, kout)),
                grid_1d((n + v - 1) / v, kElementwiseBlock), {kElementwiseBlock}, 0, s, pa, pb, po,
                n, vec, sa, sb);
}

}  // namespace kiln::gpu
