// CustomKernel::eval_cpu: the generated source (backend/kernels/signature.h) compiled by the
// host compiler through the CPU kernel caches, and run by the CPU kernel runtime with the
// GPU's dispatch semantics (backend/cpu/kernel_runtime/).
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/kernel_runtime/compiled_kernel.h"
#include "kiln/backend/cpu/kernel_runtime/launch.h"
#include "kiln/primitives_custom.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

using cpu_rt::Dim3;

Dim3 dim3_of(std::tuple<int, int, int> t) {
  return {static_cast<uint32_t>(std::get<0>(t)), static_cast<uint32_t>(std::get<1>(t)),
          static_cast<uint32_t>(std::get<2>(t))};
}

// The bytes of `a`'s buffer around its first element, [begin, end): what checking mode lets
// a kernel touch through its pointer (views may reach before their first element).
std::pair<int64_t, int64_t> span_around(const array& a) {
  if (!a.has_storage()) return {0, 0};
  const int64_t total = static_cast<int64_t>(a.storage().nbytes());
  return {-a.offset(), total - a.offset()};
}

}  // namespace

void CustomKernel::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const kernels::KernelProgram& p = program();
  const kernels::KernelSpec& sp = spec();
  const bool check = cpu_rt::check_mode();
  const auto kernel = cpu_rt::get_kernel(p, check);
  if (!check) p.set_cpu_ready();

  const size_t nargs = inputs.size() + outputs.size();
  std::vector<void*> args;
  std::vector<int64_t> begins, ends;
  std::vector<const char*> names;
  args.reserve(nargs);
  std::vector<Shape> shapes;
  std::vector<Strides> strides;
  std::vector<array> keep;  // row-contiguous copies of inputs
  for (size_t i = 0; i < inputs.size(); ++i) {
    const array* in = &inputs[i];
    if (sp.ensure_row_contiguous && !in->flags().row_contiguous && in->size() > 0) {
      keep.emplace_back(Storage::host(in->nbytes()), in->shape(), in->dtype());
      cpu::copy_inplace(*in, keep.back(), cpu::CopyType::general);
      in = &keep.back();
    }
    args.push_back(in->has_storage() ? const_cast<void*>(in->data<void>()) : nullptr);
    auto [b, e] = span_around(*in);
    begins.push_back(b);
    ends.push_back(e);
    names.push_back(sp.input_names[i].c_str());
    shapes.push_back(in->shape());
    strides.push_back(in->strides());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    array& out = outputs[i];
    out.set_data(Storage::host(out.nbytes()));
    if (init_value_ && out.size() > 0) {
      cpu::copy_inplace(array(*init_value_, out.dtype()), out, cpu::CopyType::scalar);
    }
    args.push_back(out.data<void>());
    begins.push_back(0);
    ends.push_back(static_cast<int64_t>(out.nbytes()));
    names.push_back(sp.output_names[i].c_str());
  }

  kernels::LaunchGeometry geo;
  const Dim3 grid = dim3_of(grid_), tg = dim3_of(threadgroup_);
  const uint32_t g3[3] = {grid.x, grid.y, grid.z}, t3[3] = {tg.x, tg.y, tg.z};
  std::memcpy(geo.grid, g3, sizeof g3);
  std::memcpy(geo.threadgroup, t3, sizeof t3);
  kernels::ParamBlock params(p.usage(), shapes, strides, geo);

  cpu_rt::Launch launch{};
  launch.args = args.data();
  launch.arg_begin = begins.data();
  launch.arg_end = ends.data();
  launch.arg_names = names.data();
  launch.num_args = static_cast<uint32_t>(nargs);
  launch.params = params.data();
  launch.grid = grid;
  launch.threadgroup = tg;
  launch.blocks = {(grid.x + tg.x - 1) / tg.x, (grid.y + tg.y - 1) / tg.y,
                   (grid.z + tg.z - 1) / tg.z};
  launch.metal_dispatch = sp.flavour == fast::KernelFlavour::metal;
  launch.dynamic_shared = static_cast<uint32_t>(sp.shared_memory);
  launch.rt = cpu_rt::runtime();

  cpu_rt::LaunchConfig config;
  config.tag = tag();
  config.name = sp.name;
  config.fibers = p.usage().barriers || p.usage().warp_ops;
  config.check = check;
  cpu_rt::run_launch(kernel->entry, launch, config);
}

namespace kernels {

void compile_cpu(const KernelProgram& program) {
  prefetch_cpu(program);
}

void prefetch_cpu(const KernelProgram& program) {
  const bool check = cpu_rt::check_mode();
  cpu_rt::get_kernel(program, check);
  if (!check) program.set_cpu_ready();
}

}  // namespace kernels

}  // namespace kiln
