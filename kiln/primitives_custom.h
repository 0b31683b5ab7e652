// The CustomKernel primitive: a custom kernel (kiln/fast.h) applied to its inputs, one node
// of the lazy graph with one or more outputs. eval_gpu is in backend/cuda/custom_kernel.cpp,
// eval_cpu in backend/cpu/custom_kernel.cpp; both compile the generated source of
// `program()` for their target (backend/kernels/signature.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/backend/kernels/signature.h"
#include "kiln/primitive.h"

namespace kiln {

class CustomKernel : public Primitive {
 public:
  /** `threadgroup` is already clipped to `grid`; `output_shapes` has one shape per output. */
  CustomKernel(Stream stream, std::shared_ptr<const kernels::KernelProgram> program,
               std::tuple<int, int, int> grid, std::tuple<int, int, int> threadgroup,
               std::optional<float> init_value, std::vector<Shape> output_shapes)
      : Primitive(stream),
        program_(std::move(program)),
        grid_(grid),
        threadgroup_(threadgroup),
        init_value_(init_value),
        output_shapes_(std::move(output_shapes)) {}

  KILN_PRIMITIVE_EVAL_MULTI()
  // A kernel body has no derivative or batching rule kiln could derive: these throw a
  // tagged std::invalid_argument pointing to custom_function.
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(CustomKernel)
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>&) override { return output_shapes_; }

  const kernels::KernelProgram& program() const { return *program_; }
  const kernels::KernelSpec& spec() const { return program_->spec(); }
  std::tuple<int, int, int> grid() const { return grid_; }
  std::tuple<int, int, int> threadgroup() const { return threadgroup_; }
  const std::optional<float>& init_value() const { return init_value_; }
  /** "[metal_kernel]" or "[cuda_kernel]": the tag of this kernel's errors. */
  std::string tag() const;

 private:
  std::shared_ptr<const kernels::KernelProgram> program_;
  std::tuple<int, int, int> grid_, threadgroup_;
  std::optional<float> init_value_;
  std::vector<Shape> output_shapes_;
};

namespace kernels {

/**
 * Compiles `program` without running it: for `target` "sm_XX"/"compute_XX" with NVRTC
 * (backend/cuda/custom_kernel.cpp) or for "cpu" with the host compiler
 * (backend/cpu/custom_kernel.cpp). Throws fast::KernelCompileError on compile errors and
 * std::runtime_error when the target's compiler is not part of this build.
 */
void compile_gpu(const KernelProgram& program, const std::string& target);
void compile_cpu(const KernelProgram& program);

/** The KernelCompileError for `log` from compiling `program` for `target`: the kernel's
 * name, the compiler's messages (lines of "source" and "header" are the user's own) and
 * the generated signature. */
std::string compile_error_message(const KernelProgram& program, const std::string& target,
                                  const std::string& log);

}  // namespace kernels

}  // namespace kiln
