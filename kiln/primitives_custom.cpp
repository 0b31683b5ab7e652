// CustomKernel: transforms, equality and printing. A kernel has no derivative of its own;
// gradients come from custom_function with a vjp (often another kernel), see
// examples/python/custom_kernels/.
#include "kiln/primitives_custom.h"

#include <ostream>
#include <stdexcept>

#include "kiln/utils.h"

namespace kiln {

namespace {
[[noreturn]] void no_transform(const CustomKernel& k, const char* what) {
  throw std::invalid_argument(msg("[", what, "] CustomKernel '", k.spec().name, "' has no ", what,
                                  " of its own: wrap the call in custom_function and give it a ",
                                  what, " (which may call another kernel)."));
}
}  // namespace

std::string CustomKernel::tag() const {
  return spec().flavour == fast::KernelFlavour::metal ? "[metal_kernel]" : "[cuda_kernel]";
}

std::vector<array> CustomKernel::jvp(const std::vector<array>&, const std::vector<array>&,
                                     const std::vector<int>&) {
  no_transform(*this, "jvp");
}

std::vector<array> CustomKernel::vjp(const std::vector<array>&, const std::vector<array>&,
                                     const std::vector<int>&, const std::vector<array>&) {
  no_transform(*this, "vjp");
}

std::pair<std::vector<array>, std::vector<int>> CustomKernel::vmap(const std::vector<array>&,
                                                                   const std::vector<int>&) {
  no_transform(*this, "vmap");
}

void CustomKernel::print(std::ostream& os) {
  os << "CustomKernel(" << spec().name << ")";
}

bool CustomKernel::is_equivalent(const Primitive& other) const {
  const auto* o = dynamic_cast<const CustomKernel*>(&other);
  if (!o) return false;
  const kernels::KernelSpec &a = spec(), &b = o->spec();
  bool same_spec =
      &a == &b || (a.flavour == b.flavour && a.name == b.name && a.input_names == b.input_names &&
                   a.output_names == b.output_names && a.source == b.source &&
                   a.header == b.header && a.ensure_row_contiguous == b.ensure_row_contiguous &&
                   a.atomic_outputs == b.atomic_outputs && a.shared_memory == b.shared_memory &&
                   a.math_mode == b.math_mode);
  return same_spec && program_->instance() == o->program_->instance() && grid_ == o->grid_ &&
         threadgroup_ == o->threadgroup_ && init_value_ == o->init_value_ &&
         output_shapes_ == o->output_shapes_;
}

std::vector<array> PrecompiledKernel::jvp(const std::vector<array>&, const std::vector<array>&,
                                          const std::vector<int>&) {
  throw std::invalid_argument(msg("[jvp] PrecompiledKernel '", def_->name,
                                  "' has no jvp of its own: wrap the call in custom_function."));
}

std::vector<array> PrecompiledKernel::vjp(const std::vector<array>&, const std::vector<array>&,
                                          const std::vector<int>&, const std::vector<array>&) {
  throw std::invalid_argument(msg("[vjp] PrecompiledKernel '", def_->name,
                                  "' has no vjp of its own: wrap the call in custom_function."));
}

std::pair<std::vector<array>, std::vector<int>> PrecompiledKernel::vmap(const std::vector<array>&,
                                                                        const std::vector<int>&) {
  throw std::invalid_argument(msg("[vmap] PrecompiledKernel '", def_->name,
                                  "' has no vmap of its own: wrap the call in custom_function."));
}

void PrecompiledKernel::print(std::ostream& os) {
  os << "PrecompiledKernel(" << def_->name << ")";
}

bool PrecompiledKernel::is_equivalent(const Primitive& other) const {
  const auto* o = dynamic_cast<const PrecompiledKernel*>(&other);
  return o && o->def_->name == def_->name && o->def_->hash == def_->hash &&
         o->scalars_ == scalars_ && o->grid_ == grid_ && o->threadgroup_ == threadgroup_ &&
         o->shared_memory_ == shared_memory_ && o->init_value_ == init_value_ &&
         o->ensure_row_contiguous_ == ensure_row_contiguous_ &&
         o->output_shapes_ == output_shapes_;
}

void PrecompiledKernel::eval_cpu(const std::vector<array>&, std::vector<array>&) {
  throw std::invalid_argument(msg("[precompiled_cuda_kernel] Kernel '", def_->name,
                                  "' is compiled GPU code: it runs on GPU streams only."));
}

// Until the CPU backend's kernel runtime is part of the build, the CPU path says so.
__attribute__((weak)) void CustomKernel::eval_cpu(const std::vector<array>&, std::vector<array>&) {
  throw std::runtime_error(msg(tag(), " Kernel '", spec().name,
                               "' cannot run on the CPU: this build has no CPU kernel runtime."));
}

namespace kernels {

__attribute__((weak)) void compile_cpu(const KernelProgram& program) {
  throw std::runtime_error(
      msg("[", program.spec().name, "] This build cannot compile custom kernels for the CPU."));
}

std::string compile_error_message(const KernelProgram& program, const std::string& target,
                                  const std::string& log) {
  const KernelSpec& spec = program.spec();
  const char* tag = spec.flavour == fast::KernelFlavour::metal ? "metal_kernel" : "cuda_kernel";
  // The generated signature is the same for every target: take the GPU one.
  const GeneratedKernel& g = program.generated(Target::gpu);
  // What kiln's headers refuse on purpose (static_assert "kiln: ..."), first and once.
  std::string refused;
  for (size_t p = log.find("kiln: "); p != std::string::npos; p = log.find("kiln: ", p + 6)) {
    size_t e = log.find_first_of("\"\n", p);
    std::string line = log.substr(p + 6, e == std::string::npos ? std::string::npos : e - p - 6);
    if (refused.find(line) == std::string::npos) refused += "Not supported: " + line + "\n";
  }
  return msg("[", tag, "] Kernel '", spec.name, "' failed to compile for ", target, ". ",
             refused.empty() ? "" : "\n" + refused,
             "Lines of \"source\" and \"header\" are lines of your source and header.\n", log,
             "\n\nGenerated signature:\n", g.signature);
}

}  // namespace kernels

}  // namespace kiln
