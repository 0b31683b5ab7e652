// Custom kernels from source strings: the definitions (cuda_kernel, metal_kernel), the
// argument checks of a call, and the CustomKernel node it builds.
#include "kiln/fast.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <mutex>
#include <unordered_map>

#include "kiln/backend/kernels/signature.h"
#include "kiln/compile.h"
#include "kiln/primitives_custom.h"
#include "kiln/scheduler.h"
#include "kiln/utils.h"

namespace kiln::fast {

using kernels::KernelInstance;
using kernels::KernelProgram;
using kernels::KernelSpec;

/** A definition and its instantiations, generated once per set of dtypes and template
 * arguments. */
struct KernelFunction::Definition {
  std::shared_ptr<const KernelSpec> spec;
  std::shared_ptr<const kernels::BodyUsage> usage;
  mutable std::mutex mu;
  mutable std::unordered_map<std::string, std::shared_ptr<const KernelProgram>> programs;
  mutable std::shared_ptr<const KernelProgram> last;  // a loop calls with the same instance

  std::shared_ptr<const KernelProgram> program(KernelInstance inst) const {
    {
      std::lock_guard lk(mu);
      if (last && last->instance() == inst) return last;
    }
    std::string key = inst.key();
    std::lock_guard lk(mu);
    auto& p = programs[key];
    if (!p) p = std::make_shared<const KernelProgram>(spec, usage, std::move(inst));
    last = p;
    return p;
  }
};

namespace {

const char* op_tag(const KernelSpec& spec) {
  return spec.flavour == KernelFlavour::metal ? "metal_kernel" : "cuda_kernel";
}

std::string triple(std::tuple<int, int, int> t) {
  return msg("(", std::get<0>(t), ", ", std::get<1>(t), ", ", std::get<2>(t), ")");
}

KernelFunction define(KernelSpec spec) {
  kernels::check_spec(spec, op_tag(spec));
  auto def = std::make_shared<KernelFunction::Definition>();
  def->usage = std::make_shared<const kernels::BodyUsage>(kernels::analyze(spec));
  def->spec = std::make_shared<const KernelSpec>(std::move(spec));
  return KernelFunction(std::move(def));
}

// The instance of a call: dtypes and template arguments, checked.
KernelInstance make_instance(const KernelSpec& spec, const kernels::BodyUsage& usage,
                             const std::vector<Dtype>& input_dtypes,
                             const std::vector<int>& input_ndims,
                             const std::vector<Dtype>& output_dtypes,
                             const std::vector<std::pair<std::string, TemplateArg>>& targs) {
  const char* tag = op_tag(spec);
  if (input_dtypes.size() != spec.input_names.size()) {
    throw std::invalid_argument(msg("[", tag, "] Kernel '", spec.name, "' takes ",
                                    spec.input_names.size(), " inputs; got ", input_dtypes.size(),
                                    "."));
  }
  if (output_dtypes.size() != spec.output_names.size()) {
    throw std::invalid_argument(msg("[", tag, "] Kernel '", spec.name, "' has ",
                                    spec.output_names.size(), " outputs; got ",
                                    output_dtypes.size(), " output dtypes."));
  }
  KernelInstance inst;
  inst.input_dtypes = input_dtypes;
  inst.output_dtypes = output_dtypes;
  for (size_t i = 0; i < input_ndims.size(); ++i) {
    const bool uses_dims = usage.input_shape[i] || usage.input_strides[i];
    if (input_ndims[i] < 0 || (uses_dims && input_ndims[i] > kMaxNdim)) {
      throw std::invalid_argument(msg("[", tag, "] Input '", spec.input_names[i], "' of kernel '",
                                      spec.name, "' has ", input_ndims[i],
                                      " dimensions; kernels that read its shape or strides take "
                                      "at most ",
                                      kMaxNdim, "."));
    }
    inst.input_scalar.push_back(input_ndims[i] == 0);
  }
  inst.template_args = targs;
  return inst;
}

// The stream of a call. As MLX, export_function may record a kernel for the GPU on a machine
// without one: the node gets a placeholder GPU stream (never evaluated; the scheduler refuses
// its index), saved as "the GPU" for the importing process to run on its own.
Stream kernel_stream(const StreamOrDevice& s) {
  const Device* d = std::get_if<Device>(&s);
  if (d && d->type == Device::gpu && !is_available(*d) && kiln::detail::in_export_trace()) {
    return Stream(-1, Device::gpu);
  }
  return to_stream(s);
}

}  // namespace

std::vector<array> KernelFunction::operator()(
    const std::vector<array>& inputs, const std::vector<Shape>& output_shapes,
    const std::vector<Dtype>& output_dtypes, std::tuple<int, int, int> grid,
    std::tuple<int, int, int> threadgroup,
    const std::vector<std::pair<std::string, TemplateArg>>& template_args,
    std::optional<float> init_value, bool verbose, StreamOrDevice s) const {
  const KernelSpec& spec = *def_->spec;
  const char* tag = op_tag(spec);
  if (output_shapes.size() != spec.output_names.size()) {
    throw std::invalid_argument(msg("[", tag, "] Kernel '", spec.name, "' has ",
                                    spec.output_names.size(), " outputs; got ",
                                    output_shapes.size(), " output shapes."));
  }
  for (const Shape& shape : output_shapes) {
    for (int32_t d : shape) {
      if (d < 0) {
        throw std::invalid_argument(msg("[", tag, "] Output shapes of kernel '", spec.name,
                                        "' must not be negative; got ", shape_str(shape), "."));
      }
    }
  }
  auto [gx, gy, gz] = grid;
  auto [tx, ty, tz] = threadgroup;
  if (gx <= 0 || gy <= 0 || gz <= 0) {
    throw std::invalid_argument(msg("[", tag, "] The grid of kernel '", spec.name,
                                    "' must be positive in every dimension; got ", triple(grid),
                                    "."));
  }
  if (tx <= 0 || ty <= 0 || tz <= 0) {
    throw std::invalid_argument(msg("[", tag, "] The threadgroup of kernel '", spec.name,
                                    "' must be positive in every dimension; got ",
                                    triple(threadgroup), "."));
  }
  if (static_cast<int64_t>(tx) * ty * tz > 1024 || tz > 64) {
    throw std::invalid_argument(msg("[", tag, "] The threadgroup of kernel '", spec.name, "', ",
                                    triple(threadgroup),
                                    ", is too large: at most 1024 threads, and 64 in z."));
  }
  // As in MLX, a threadgroup larger than the grid shrinks to it.
  const std::tuple<int, int, int> tg{std::min(tx, gx), std::min(ty, gy), std::min(tz, gz)};

  const Stream stream = kernel_stream(s);
  if (stream.device.type == Device::gpu) {
    // CUDA's grid limits, in blocks.
    auto blocks = [](int g, int t) { return (static_cast<int64_t>(g) + t - 1) / t; };
    if (blocks(gy, std::get<1>(tg)) > 65535 || blocks(gz, std::get<2>(tg)) > 65535) {
      throw std::invalid_argument(
          msg("[", tag, "] The grid ", triple(grid), " of kernel '", spec.name,
              "' needs more than 65535 threadgroups in y or z; use x for the largest dimension."));
    }
  }

  std::vector<Dtype> dtypes;
  std::vector<int> ndims;
  for (const array& a : inputs) {
    dtypes.push_back(a.dtype());
    ndims.push_back(static_cast<int>(a.ndim()));
  }
  auto program =
      def_->program(make_instance(spec, *def_->usage, dtypes, ndims, output_dtypes, template_args));
  // Generating now reports bad template arguments at the call, and prints for verbose.
  const auto target =
      stream.device.type == Device::gpu ? kernels::Target::gpu : kernels::Target::cpu;
  const kernels::GeneratedKernel& g = program->generated(target);
  if (verbose) {
    std::printf("%s\n", g.source.c_str());
    std::fflush(stdout);
  }
  auto prim = std::make_shared<CustomKernel>(stream, std::move(program), grid, tg, init_value,
                                             output_shapes);
  return array::make_arrays(output_shapes, output_dtypes, prim, inputs);
}

std::string KernelFunction::compile(
    const std::vector<Dtype>& input_dtypes, const std::vector<int>& input_ndims,
    const std::vector<Dtype>& output_dtypes,
    const std::vector<std::pair<std::string, TemplateArg>>& template_args,
    const std::string& target) const {
  const KernelSpec& spec = *def_->spec;
  if (input_ndims.size() != input_dtypes.size()) {
    throw std::invalid_argument(msg("[", op_tag(spec), "] compile() got ", input_dtypes.size(),
                                    " input dtypes but ", input_ndims.size(), " ranks."));
  }
  auto program = def_->program(
      make_instance(spec, *def_->usage, input_dtypes, input_ndims, output_dtypes, template_args));
  if (target == "cpu") {
    kernels::compile_cpu(*program);
    return program->generated(kernels::Target::cpu).source;
  }
  kernels::compile_gpu(*program, target);
  return program->generated(kernels::Target::gpu).source;
}

const std::string& KernelFunction::name() const {
  return def_->spec->name;
}

}  // namespace kiln::fast

namespace kiln::kernels {

namespace {
// Compilations started ahead of evaluations; a future's destructor waits for its thread,
// so the ones still running at exit finish before the process tears down.
std::mutex& ahead_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::future<void>>& ahead_jobs() {
  static std::vector<std::future<void>> jobs;
  return jobs;
}
}  // namespace

void compile_ahead(const std::vector<scheduler::Task>& tape) {
  // The usual case costs one load: every kernel of the process was compiled already.
  if (tape.size() < 2 || KernelProgram::uncompiled_programs() < 2) return;
  std::vector<std::function<void()>> work;
  std::vector<const KernelProgram*> seen;
  for (const scheduler::Task& t : tape) {
    if (!t.arr.has_primitive()) continue;
    const auto* k = dynamic_cast<const CustomKernel*>(&t.arr.primitive());
    if (!k) continue;
    const KernelProgram* p = &k->program();
    if (std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
    seen.push_back(p);
    const Stream s = k->stream();
    // A GPU kernel exported without a GPU has a placeholder stream: the scheduler
    // reports it when the task runs, so there is nothing to compile ahead here.
    if (s.index < 0) continue;
    // Keep the program alive while it compiles: the node may be evaluated and freed first.
    std::shared_ptr<const CustomKernel> keep =
        std::static_pointer_cast<const CustomKernel>(t.arr.primitive_ptr());
    if (s.device.type == Device::gpu) {
      if (needs_gpu_compile(*p, s)) work.push_back([keep, s] { prefetch_gpu(keep->program(), s); });
    } else if (!p->cpu_ready()) {
      work.push_back([keep] { prefetch_cpu(keep->program()); });
    }
  }
  if (work.size() < 2) return;
  std::lock_guard lk(ahead_mutex());
  auto& jobs = ahead_jobs();
  jobs.erase(std::remove_if(jobs.begin(), jobs.end(),
                            [](std::future<void>& f) {
                              return f.wait_for(std::chrono::seconds(0)) ==
                                     std::future_status::ready;
                            }),
             jobs.end());
  for (auto& w : work) {
    jobs.push_back(std::async(std::launch::async, [w = std::move(w)] {
      try {
        w();
      } catch (...) {
        // The evaluation compiles again and reports the error where the kernel runs.
      }
    }));
  }
}

}  // namespace kiln::kernels

namespace kiln::fast {

const char* math_mode_name(MathMode m) {
  switch (m) {
    case MathMode::safe:
      return "safe";
    case MathMode::relaxed:
      return "relaxed";
    case MathMode::fast:
      return "fast";
  }
  return "safe";
}

KernelFunction cuda_kernel(const std::string& name, const std::vector<std::string>& input_names,
                           const std::vector<std::string>& output_names, const std::string& source,
                           const std::string& header, bool ensure_row_contiguous,
                           bool atomic_outputs, int shared_memory,
                           CompileOptions compile_options) {
  return define({KernelFlavour::cuda, name, input_names, output_names, source, header,
                 ensure_row_contiguous, atomic_outputs, shared_memory,
                 compile_options.math_mode});
}

KernelFunction metal_kernel(const std::string& name, const std::vector<std::string>& input_names,
                            const std::vector<std::string>& output_names, const std::string& source,
                            const std::string& header, bool ensure_row_contiguous,
                            bool atomic_outputs, CompileOptions compile_options) {
  return define({KernelFlavour::metal, name, input_names, output_names, source, header,
                 ensure_row_contiguous, atomic_outputs, 0, compile_options.math_mode});
}

}  // namespace kiln::fast
