// eval_gpu of rope. Kernel: device/rope/rope.cuh, one module per dtype.
#include <cmath>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/fast_common.h"
#include "kiln/fast_primitives.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

// Mirrors device/rope/rope.cuh's RopeArgs.
struct RopeArgs {
  gpu::DimsArg<int32_t> shape;
  gpu::DimsArg<int64_t> strides;
  int32_t ndim;
  int32_t dims;
  int32_t half;
  int32_t n_offsets;
  int64_t rows;
  int64_t D;
  int64_t sd;
  int64_t L;
  int64_t per_batch;
  double log_base;
  float scale;
  bool has_freqs;
  bool forward;
  bool vec;
};

std::string kernel_name(Dtype d, bool traditional) {
  return "kiln::rope<" + gpu::device_type(d) + ", " + (traditional ? "true" : "false") + ">";
}

std::string module_name(Dtype d) {
  return "fast_rope_" + std::string(type_to_name(d));
}

gpu::ModuleSource rope_module(Dtype d) {
  return {module_name(d),
          "#include \"kiln/backend/cuda/device/rope/rope.cuh\"\n",
          {kernel_name(d, false), kernel_name(d, true)}};
}

}  // namespace

void RoPE::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  array& out = outputs[0];
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const array& x = inputs[0];
  const Dtype d = x.dtype();
  if (std::find(std::begin(gpu::fast::kFloatDtypes), std::end(gpu::fast::kFloatDtypes), d) ==
      std::end(gpu::fast::kFloatDtypes)) {
    throw std::invalid_argument(msg("[RoPE::eval_gpu] Unsupported dtype ", d, "."));
  }
  const int nd = static_cast<int>(x.ndim());
  RopeArgs a;
  const Shape rows_shape(x.shape().begin(), x.shape().end() - 1);
  const Strides rows_strides(x.strides().begin(), x.strides().end() - 1);
  a.shape = gpu::dims_arg(rows_shape, "rope");
  a.strides = gpu::dims_arg(rows_strides, "rope");
  a.ndim = nd - 1;
  a.dims = dims_;
  a.half = dims_ / 2;
  a.n_offsets = static_cast<int32_t>(inputs[1].size());
  a.D = x.shape(-1);
  a.rows = static_cast<int64_t>(x.size()) / a.D;
  a.sd = x.strides(-1);
  a.L = x.shape(-2);
  a.per_batch = a.rows / x.shape(0);
  a.log_base = std::log(static_cast<double>(base_));
  a.scale = scale_;
  a.has_freqs = inputs.size() > 2;
  a.forward = forward_;
  const CUdeviceptr xp = gpu::device_address(x), yp = gpu::device_address(out);
  const int n = gpu::fast::vec_elems(d);
  bool row_aligned = xp % 16 == 0;
  for (int64_t st : rows_strides) row_aligned &= st % n == 0;
  a.vec = a.sd == 1 && row_aligned && yp % 16 == 0 && a.D % n == 0 &&
          (traditional_ ? dims_ % n == 0 : a.half % n == 0);
  const CUdeviceptr offsets = gpu::fast::dense_address(inputs[1], s);
  const CUdeviceptr freqs = a.has_freqs ? gpu::fast::dense_address(inputs[2], s) : 0;
  const gpu::Module& mod =
      gpu::get_module(s.context().index(), module_name(d), [d] { return rope_module(d); });
  // Mirrors the kernel: pairs of vectors (and vectors past dims) in the vectorized default layout.
  const int64_t units = !traditional_ && a.vec && a.dims == 2 * a.half
                            ? a.half / n + (a.D - a.dims) / n
                            : (a.D + n - 1) / n;
  const size_t smem = static_cast<size_t>(std::max(a.half, 1)) * (d == float64 ? 8 : 4);
  gpu::launch_kernel(mod.function(kernel_name(d, traditional_)), gpu::grid_1d(a.rows * units, 256),
                     {256}, smem, s, xp, yp, offsets, freqs, a);
}

KILN_GPU_MODULE_CATALOG(fast_rope, [](const gpu::ModuleSink& sink) {
  for (Dtype d : gpu::fast::kFloatDtypes) sink(module_name(d), rope_module(d));
});

}  // namespace kiln::fast
