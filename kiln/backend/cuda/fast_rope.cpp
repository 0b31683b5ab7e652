// eval_gpu of rope. Kernel: device/rope/rope.cuh, one module per dtype.
#include <cmath>

#include "kiln/backend/cpu/strided.h"  // collapse_contiguous_dims
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/fast_common.h"
#include "kiln/fast_primitives.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

// Mirrors device/rope/rope.cuh's RopeArgs.
struct RopeArgs {
  gpu::DimsArg<int32_t> mid_shape;
  gpu::DimsArg<int64_t> mid_strides;
  int32_t mid_ndim;
  int32_t dims;
  int32_t half;
  int32_t n_offsets;
  int32_t heads;
  int32_t head_chunk;
  int32_t chunks;
  int32_t units;
  int64_t B, L, D;
  int64_t sb, sl, sd;
  double log_base;
  float scale;
  bool has_freqs;
  bool forward;
  bool vec;
  bool y_like_x;
};

constexpr int kThreads = 256;
constexpr int kBatch = 4;  // device/rope/rope.cuh's rope_detail::kBatch

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
  const array& x = inputs[0];
  // A dense x in another axis order (the (B, L, H, D) projection seen as (B, H, L, D)) gives
  // y the same layout, as elementwise ops do: attention then reads it and the transposes
  // back to (B, L, H * D) stay views.
  const bool like_x = x.flags().contiguous && x.data_size() == x.size() && x.strides(-1) == 1 &&
                      !x.flags().row_contiguous;
  if (like_x)
    out.set_data(gpu::new_device_storage(out.nbytes(), s), x.data_size(), x.strides(), x.flags());
  else
    out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const Dtype d = x.dtype();
  if (std::find(std::begin(gpu::fast::kFloatDtypes), std::end(gpu::fast::kFloatDtypes), d) ==
      std::end(gpu::fast::kFloatDtypes)) {
    throw std::invalid_argument(msg("[RoPE::eval_gpu] Unsupported dtype ", d, "."));
  }
  RopeArgs a{};
  // The heads: x's middle axes, collapsed where contiguous (one stride for (B, H, L, D) and
  // for its (B, L, H, D) transpose).
  const auto [mid_shape, mid_strides] =
      collapse_contiguous_dims<1>(Shape(x.shape().begin() + 1, x.shape().end() - 2),
                                  {Strides(x.strides().begin() + 1, x.strides().end() - 2)});
  const bool no_heads = mid_shape.size() == 1 && mid_shape[0] == 1;
  a.mid_shape = gpu::dims_arg(mid_shape, "rope");
  a.mid_strides = gpu::dims_arg(mid_strides[0], "rope");
  a.mid_ndim = no_heads ? 0 : static_cast<int32_t>(mid_shape.size());
  a.dims = dims_;
  a.half = dims_ / 2;
  a.n_offsets = static_cast<int32_t>(inputs[1].size());
  a.B = x.shape(0);
  a.L = x.shape(-2);
  a.D = x.shape(-1);
  a.heads = static_cast<int32_t>(x.size() / (a.B * a.L * a.D));
  a.sb = x.strides(0);
  a.sl = x.strides(-2);
  a.sd = x.strides(-1);
  a.log_base = std::log(static_cast<double>(base_));
  a.scale = scale_;
  a.has_freqs = inputs.size() > 2;
  a.forward = forward_;
  a.y_like_x = like_x;
  const CUdeviceptr xp = gpu::device_address(x), yp = gpu::device_address(out);
  const int n = gpu::fast::vec_elems(d);
  bool row_aligned = xp % 16 == 0 && a.sb % n == 0 && a.sl % n == 0;
  for (int64_t st : mid_strides[0]) row_aligned &= st % n == 0;
  a.vec = a.sd == 1 && row_aligned && yp % 16 == 0 && a.D % n == 0 &&
          (traditional_ ? dims_ % n == 0 : a.half % n == 0);
  // Mirrors the kernel: pairs of vectors (and vectors past dims) in the vectorized default
  // layout, else slices of n features.
  a.units = static_cast<int32_t>(!traditional_ && a.vec ? a.half / n + (a.D - a.dims) / n
                                                        : (a.D + n - 1) / n);
  // Heads per thread: enough threads for two full waves, whole batches of rows where the
  // heads allow (the angles are computed once per chunk).
  const int64_t slices = a.B * a.L * a.units;
  const int64_t target = int64_t{2} * s.context().sm_count() * 2048;
  const int64_t want = std::clamp<int64_t>((target + slices - 1) / slices, 1, a.heads);
  int64_t chunk = (a.heads + want - 1) / want;
  if (a.heads >= kBatch) chunk = (chunk + kBatch - 1) / kBatch * kBatch;
  a.head_chunk = static_cast<int32_t>(chunk);
  a.chunks = static_cast<int32_t>((a.heads + chunk - 1) / chunk);
  const CUdeviceptr offsets = gpu::fast::dense_address(inputs[1], s);
  const CUdeviceptr freqs = a.has_freqs ? gpu::fast::dense_address(inputs[2], s) : 0;
  const gpu::Module& mod =
      gpu::get_module(s.context().index(), module_name(d), [d] { return rope_module(d); });
  const size_t smem = static_cast<size_t>(std::max(a.half, 1)) * (d == float64 ? 8 : 4);
  gpu::launch_kernel(mod.function(kernel_name(d, traditional_)),
                     gpu::grid_1d(slices * a.chunks, kThreads), {kThreads}, smem, s, xp, yp,
                     offsets, freqs, a);
}

KILN_GPU_MODULE_CATALOG(fast_rope, [](const gpu::ModuleSink& sink) {
  for (Dtype d : gpu::fast::kFloatDtypes) sink(module_name(d), rope_module(d));
});

}  // namespace kiln::fast
