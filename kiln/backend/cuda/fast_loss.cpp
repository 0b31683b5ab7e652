// eval_gpu of cross_entropy and its gradient. Kernels: device/loss/cross_entropy.cuh, one
// module per logits dtype.
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/fast_common.h"
#include "kiln/fast_primitives.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

int ce_max_vpt(Dtype d) {
  return d.size == 4 ? 8 : 4;  // up to 32 elements per thread in registers
}

std::string fwd_name(Dtype d, int vpt) {
  return "kiln::ce_fwd<" + gpu::device_type(d) + ", " + std::to_string(vpt) + ">";
}
std::string fwd_looped_name(Dtype d) {
  return "kiln::ce_fwd_looped<" + gpu::device_type(d) + ">";
}
std::string bwd_name(Dtype d) {
  return "kiln::ce_bwd<" + gpu::device_type(d) + ">";
}

std::string module_name(Dtype d) {
  return "fast_loss_" + std::string(type_to_name(d));
}

gpu::ModuleSource loss_module(Dtype d) {
  gpu::ModuleSource m{
      module_name(d), "#include \"kiln/backend/cuda/device/loss/cross_entropy.cuh\"\n", {}};
  for (int v = 1; v <= ce_max_vpt(d); v *= 2) m.kernels.push_back(fwd_name(d, v));
  m.kernels.push_back(fwd_looped_name(d));
  m.kernels.push_back(bwd_name(d));
  return m;
}

const gpu::Module& loss_kernels(Dtype d, gpu::DeviceStream& s) {
  if (std::find(std::begin(gpu::fast::kFloatDtypes), std::end(gpu::fast::kFloatDtypes), d) ==
      std::end(gpu::fast::kFloatDtypes)) {
    throw std::invalid_argument(msg("[cross_entropy] Unsupported dtype ", d, "."));
  }
  return gpu::get_module(s.context().index(), module_name(d), [d] { return loss_module(d); });
}

}  // namespace

void CrossEntropy::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  for (auto& o : outputs) o.set_data(gpu::new_device_storage(o.nbytes(), s));
  if (outputs[0].size() == 0) return;
  const array& x = inputs[0];
  const Dtype d = x.dtype();
  const gpu::Module& mod = loss_kernels(d, s);
  const int64_t n = x.shape(-1), rows = outputs[0].size();
  const CUdeviceptr xp = gpu::fast::dense_address(x, s);
  const CUdeviceptr tp = gpu::fast::dense_address(inputs[1], s);
  const bool vec = n % gpu::fast::vec_elems(d) == 0 && gpu::fast::aligned16(xp);
  const gpu::fast::RowPlan p = gpu::fast::plan_rows(n, d, vec ? ce_max_vpt(d) : 0);
  const int32_t group = p.group;
  const CUdeviceptr loss = gpu::device_address(outputs[0]), lse = gpu::device_address(outputs[1]);
  if (p.looped) {
    gpu::launch_kernel(mod.function(fwd_looped_name(d)), gpu::fast::row_grid(rows, p),
                       {static_cast<uint32_t>(p.block)}, 0, s, xp, tp, loss, lse, rows, n, group,
                       vec);
  } else {
    gpu::launch_kernel(mod.function(fwd_name(d, p.vpt)), gpu::fast::row_grid(rows, p),
                       {static_cast<uint32_t>(p.block)}, 0, s, xp, tp, loss, lse, rows, n, group);
  }
}

void CrossEntropyVJP::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  array& out = outputs[0];
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const array& x = inputs[0];
  const Dtype d = x.dtype();
  const gpu::Module& mod = loss_kernels(d, s);
  const int64_t n = x.shape(-1), rows = static_cast<int64_t>(x.size()) / n;
  const CUdeviceptr xp = gpu::fast::dense_address(x, s);
  const CUdeviceptr tp = gpu::fast::dense_address(inputs[1], s);
  const CUdeviceptr lse = gpu::fast::dense_address(inputs[2], s);
  // The cotangent has the loss dtype (the transforms cast it); it may be a broadcast view.
  if (inputs[3].dtype() != inputs[2].dtype()) {
    throw std::invalid_argument(msg("[CrossEntropyVJP::eval_gpu] Cotangent of dtype ",
                                    inputs[3].dtype(), " for a loss of ", inputs[2].dtype(), "."));
  }
  const CUdeviceptr gp = gpu::fast::dense_address(inputs[3], s);
  const CUdeviceptr dxp = gpu::device_address(out);
  const bool vec =
      n % gpu::fast::vec_elems(d) == 0 && gpu::fast::aligned16(xp) && gpu::fast::aligned16(dxp);
  const gpu::fast::RowPlan p = gpu::fast::plan_rows(n, d, 0);
  const int32_t group = p.group;
  gpu::launch_kernel(mod.function(bwd_name(d)), gpu::fast::row_grid(rows, p),
                     {static_cast<uint32_t>(p.block)}, 0, s, xp, tp, lse, gp, dxp, rows, n, group,
                     vec);
}

KILN_GPU_MODULE_CATALOG(fast_loss, [](const gpu::ModuleSink& sink) {
  for (Dtype d : gpu::fast::kFloatDtypes) sink(module_name(d), loss_module(d));
});

}  // namespace kiln::fast
