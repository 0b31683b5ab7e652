// eval_gpu of the creation primitives. Kernels: device/creation.cuh.
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_creation.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

constexpr int kTriangularWork = 4;  // elements of a row per thread
constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();

const char* index_type(bool wide) {
  return wide ? "long long" : "int";
}

// arange, linspace and eye of one dtype share a module.
std::string creation_module_name(Dtype d) {
  return "creation_" + std::string(type_to_name(d));
}
std::string arange_name(Dtype d) {
  return "kiln::arange<" + gpu::device_type(d) + ">";
}
std::string linspace_name(Dtype d) {
  return "kiln::linspace<" + gpu::device_type(d) + ">";
}
std::string eye_name(Dtype d, bool wide) {
  return "kiln::eye<" + gpu::device_type(d) + ", " + index_type(wide) + ">";
}
gpu::ModuleSource creation_module(Dtype d) {
  return {creation_module_name(d),
          "#include \"kiln/backend/cuda/device/creation.cuh\"\n",
          {arange_name(d), linspace_name(d), eye_name(d, false), eye_name(d, true)}};
}

// Triangular only zeroes and copies bits: one module per element size.
std::string triangular_module_name(Dtype bits) {
  return "triangular_" + std::string(type_to_name(bits));
}
std::string triangular_name(Dtype bits, bool wide) {
  return "kiln::triangular<" + gpu::device_type(bits) + ", " + index_type(wide) + ", " +
         std::to_string(kTriangularWork) + ">";
}
gpu::ModuleSource triangular_module(Dtype bits) {
  return {triangular_module_name(bits),
          "#include \"kiln/backend/cuda/device/creation.cuh\"\n",
          {triangular_name(bits, false), triangular_name(bits, true)}};
}

const gpu::Module& creation_module(Dtype d, gpu::DeviceStream& s) {
  return gpu::get_module(s.context().index(), creation_module_name(d),
                         [&] { return creation_module(d); });
}

// One thread per element over a row-contiguous output.
void launch_1d(CUfunction f, int64_t n, gpu::DeviceStream& s, auto... args) {
  gpu::launch_kernel(f, gpu::grid_1d(n, gpu::kElementwiseBlock), {gpu::kElementwiseBlock}, 0, s,
                     args...);
}

// A truncated integral value as its 64-bit two's-complement pattern (the CPU's rule).
uint64_t to_bits(double v) {
  return v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
}

}  // namespace

void Arange::eval_gpu(const std::vector<array>&, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  const int64_t n = static_cast<int64_t>(out.size());
  if (n == 0) return;
  const uint64_t first = to_bits(start_);
  const uint64_t delta = n > 1 ? to_bits(start_ + step_) - first : 0;
  const CUdeviceptr dst = gpu::device_address(out);
  launch_1d(creation_module(out.dtype(), s).function(arange_name(out.dtype())), n, s, dst, n,
            start_, step_, first, delta);
}

void Linspace::eval_gpu(const std::vector<array>&, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  const int64_t n = static_cast<int64_t>(out.size());
  if (n == 0) return;
  const double step = n > 1 ? (stop_ - start_) / static_cast<double>(n - 1) : 0.0;
  const CUdeviceptr dst = gpu::device_address(out);
  launch_1d(creation_module(out.dtype(), s).function(linspace_name(out.dtype())), n, s, dst, n,
            start_, step, stop_);
}

void Eye::eval_gpu(const std::vector<array>&, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  const int64_t n = static_cast<int64_t>(out.size());
  if (n == 0) return;
  const int64_t cols = out.shape(1);
  const bool wide = n > kMax32;
  CUfunction f = creation_module(out.dtype(), s).function(eye_name(out.dtype(), wide));
  const CUdeviceptr dst = gpu::device_address(out);
  if (wide)
    launch_1d(f, n, s, dst, n, cols, k_);
  else
    launch_1d(f, n, s, dst, static_cast<int32_t>(n), static_cast<int32_t>(cols), k_);
}

void Triangular::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const int nd = static_cast<int>(in.ndim());
  const int64_t rows = in.shape(nd - 2), cols = in.shape(nd - 1);
  // Rows of every matrix, their dimensions merged where the strides allow; columns last.
  auto [shape, strides] =
      collapse_contiguous_dims<1>(Shape(in.shape().begin(), in.shape().end() - 1),
                                  {Strides(in.strides().begin(), in.strides().end() - 1)});
  shape.push_back(static_cast<int32_t>(cols));
  strides[0].push_back(in.strides().back());
  const int dims = static_cast<int>(shape.size());
  if (dims > gpu::kMaxDims) {
    throw std::invalid_argument(msg("[", name(), "::eval_gpu] At most ", gpu::kMaxDims,
                                    " dimensions that cannot be merged; got ", dims, " in shape ",
                                    shape_str(in.shape()), "."));
  }
  gpu::DeviceDims<int32_t> dshape{};
  gpu::DeviceDims<int64_t> dstrides{};
  int64_t span = 0;  // largest |offset| the input reaches
  for (int i = 0; i < dims; ++i) {
    dshape.v[i] = shape[i];
    dstrides.v[i] = strides[0][i];
    span += (shape[i] - 1) * std::abs(strides[0][i]);
  }
  const int64_t chunks = (cols + kTriangularWork - 1) / kTriangularWork;
  const int64_t threads = static_cast<int64_t>(out.size()) / cols * chunks;
  const bool wide = static_cast<int64_t>(out.size()) > kMax32 || span > kMax32;
  const Dtype bits = gpu::bits_dtype(out.dtype());
  const gpu::Module& mod = gpu::get_module(s.context().index(), triangular_module_name(bits),
                                           [&] { return triangular_module(bits); });
  CUfunction f = mod.function(triangular_name(bits, wide));
  const CUdeviceptr src = gpu::device_address(in), dst = gpu::device_address(out);
  const bool upper = upper_;
  auto go = [&](auto idx) {
    using IdxT = decltype(idx);
    launch_1d(f, threads, s, src, dst, dshape, dstrides, dims, static_cast<IdxT>(rows),
              static_cast<IdxT>(cols), static_cast<IdxT>(chunks), static_cast<IdxT>(threads), k_,
              upper);
  };
  if (wide)
    go(int64_t{});
  else
    go(int32_t{});
}

KILN_GPU_MODULE_CATALOG(creation, [](const gpu::ModuleSink& sink) {
  for (Dtype d : all_dtypes) sink(creation_module_name(d), creation_module(d));
  for (Dtype d : {uint8, uint16, uint32, uint64})
    sink(triangular_module_name(d), triangular_module(d));
});

}  // namespace kiln
