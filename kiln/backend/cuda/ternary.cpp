// eval_gpu of the ternary elementwise primitives. Kernels: device/ternary.cuh.
#include <string>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_ternary.h"

namespace kiln {

namespace {

std::string select_module_name(Dtype bits) {
  return "select_" + std::string(type_to_name(bits));
}

std::string select_v_name(Dtype bits) {
  return "kiln::select_v<" + gpu::device_type(bits) + ", " +
         std::to_string(gpu::vector_width(bits, bits)) + ">";
}

std::string select_g_name(Dtype bits, bool wide, int ndim) {
  return "kiln::select_g<" + gpu::device_type(bits) + ", " + gpu::strided_args(wide, ndim) + ">";
}

gpu::ModuleSource select_module(Dtype bits) {
  gpu::ModuleSource m{select_module_name(bits),
                      "#include \"kiln/backend/cuda/device/ternary.cuh\"\n",
                      {select_v_name(bits)}};
  for (auto [wide, nd] : gpu::kStridedVariants) m.kernels.push_back(select_g_name(bits, wide, nd));
  return m;
}

// Whether the three operands are dense in one layout, so one flat pass serves.
bool same_layout(const array& c, const array& x, const array& y) {
  auto f = [](const array& a) { return a.flags(); };
  if (f(c).row_contiguous && f(x).row_contiguous && f(y).row_contiguous) return true;
  if (f(c).col_contiguous && f(x).col_contiguous && f(y).col_contiguous) return true;
  return f(c).contiguous && f(x).contiguous && f(y).contiguous && c.strides() == x.strides() &&
         x.strides() == y.strides();
}

}  // namespace

// Selection only moves bits: every dtype runs as the unsigned integer of its size.
void Select::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array &cond = inputs[0], &x = inputs[1], &y = inputs[2];
  auto& s = gpu::device_stream(stream());
  const Dtype bits = gpu::bits_dtype(out.dtype());
  const bool scalars = cond.data_size() == 1 && x.data_size() == 1 && y.data_size() == 1;
  const bool flat = scalars || same_layout(cond, x, y);
  if (scalars) {
    // Three single elements: one result, broadcast as x is.
    out.set_data(gpu::new_device_storage(out.itemsize(), s), 1, x.strides(), x.flags());
  } else if (flat) {
    out.set_data(gpu::new_device_storage(x.data_size() * out.itemsize(), s), x.data_size(),
                 x.strides(), x.flags());
  } else {
    out.set_data(gpu::new_device_storage(out.nbytes(), s));
  }
  if (out.size() == 0) return;
  const gpu::Module& mod = gpu::get_module(s.context().index(), select_module_name(bits),
                                           [&] { return select_module(bits); });
  const CUdeviceptr pc = gpu::device_address(cond), px = gpu::device_address(x),
                    py = gpu::device_address(y), po = gpu::device_address(out);
  if (flat) {
    const int v = gpu::vector_width(bits, bits);
    const bool vec = gpu::is_aligned(pc, bool_, v) && gpu::is_aligned(px, bits, v) &&
                     gpu::is_aligned(py, bits, v) && gpu::is_aligned(po, bits, v);
    gpu::launch_contiguous(mod.function(select_v_name(bits)), static_cast<int64_t>(out.data_size()),
                           v, vec, s, pc, px, py, po);
    return;
  }
  auto plan = gpu::plan_strided<3>(out.shape(), {cond.strides(), x.strides(), y.strides()});
  gpu::launch_strided(mod.function(select_g_name(bits, plan.wide, plan.ndim_template)), plan, s, pc,
                      px, py, po);
}

KILN_GPU_MODULE_CATALOG(ternary, [](const gpu::ModuleSink& sink) {
  for (Dtype d : {uint8, uint16, uint32, uint64}) sink(select_module_name(d), select_module(d));
});

}  // namespace kiln
