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

#include "kiln/backend/kernels/precompiled.h"
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

/** What a precompiled kernel's definition fixes (kiln/fast.h precompiled_cuda_kernel). */
struct PrecompiledDefinition {
  kernels::PrecompiledImage info;  // kind, architecture, entries
  std::string name;    // the kernel's symbol
  std::string image;   // PTX, cubin or fatbin bytes
  std::string hash;    // names the image in the module cache
  std::string kind;    // "PTX", "cubin" or "fatbin", for messages
  int null_pointers = 0;  // trailing pointer parameters passed as null (Triton's scratch)
};

/** A precompiled CUDA kernel applied to its inputs (eval_gpu in
 * backend/cuda/precompiled_kernel.cpp; GPU streams only). */
class PrecompiledKernel : public Primitive {
 public:
  PrecompiledKernel(Stream stream, std::shared_ptr<const PrecompiledDefinition> def,
                    std::vector<fast::ScalarArg> scalars, std::tuple<int, int, int> grid,
                    std::tuple<int, int, int> threadgroup, int shared_memory,
                    std::optional<float> init_value, bool ensure_row_contiguous,
                    std::vector<Shape> output_shapes)
      : Primitive(stream),
        def_(std::move(def)),
        scalars_(std::move(scalars)),
        grid_(grid),
        threadgroup_(threadgroup),
        shared_memory_(shared_memory),
        init_value_(init_value),
        ensure_row_contiguous_(ensure_row_contiguous),
        output_shapes_(std::move(output_shapes)) {}

  KILN_PRIMITIVE_EVAL_MULTI()
  // No derivative or batching rule of its own, as CustomKernel: custom_function.
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(PrecompiledKernel)
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>&) override { return output_shapes_; }

  const PrecompiledDefinition& definition() const { return *def_; }
  const std::vector<fast::ScalarArg>& scalars() const { return scalars_; }
  std::tuple<int, int, int> grid() const { return grid_; }
  std::tuple<int, int, int> threadgroup() const { return threadgroup_; }
  int shared_memory() const { return shared_memory_; }
  const std::optional<float>& init_value() const { return init_value_; }
  bool ensure_row_contiguous() const { return ensure_row_contiguous_; }

 private:
  std::shared_ptr<const PrecompiledDefinition> def_;
  std::vector<fast::ScalarArg> scalars_;
  std::tuple<int, int, int> grid_, threadgroup_;
  int shared_memory_;
  std::optional<float> init_value_;
  bool ensure_row_contiguous_;
  std::vector<Shape> output_shapes_;
};

namespace scheduler {
struct Task;
}

namespace kernels {

/**
 * Starts compiling, in parallel, the custom kernels of an evaluation that are not compiled
 * yet (eval.cpp calls it with the tape before submitting it): NVRTC runs on threads (it is
 * thread-safe), the host compiler as separate processes. The evaluation itself then waits
 * for each kernel where it needs it (the compile caches let one compilation per kernel run
 * and the others wait for it), so a cold first eval costs about its slowest compile rather
 * than the sum. Does nothing for fewer than two such kernels. Errors are left for the
 * evaluation to report.
 */
void compile_ahead(const std::vector<scheduler::Task>& tape);
/** One kernel's ahead-of-eval compilation for `stream`'s device (backend/cuda and
 * backend/cpu); blocking. `false` when there is nothing to do for it. */
bool needs_gpu_compile(const KernelProgram& program, const Stream& stream);
void prefetch_gpu(const KernelProgram& program, const Stream& stream);
void prefetch_cpu(const KernelProgram& program);

/** The compute capability (major * 10 + minor) of GPU `device`, or 0 without a GPU (or in a
 * build without CUDA). */
int gpu_compute_capability(int device);

/**
 * Compiles `program` without running it: for `target` "sm_XX"/"compute_XX" with NVRTC
 * (backend/cuda/custom_kernel.cpp) or for "cpu" with the host compiler
 * (backend/cpu/custom_kernel.cpp). Throws fast::KernelCompileError on compile errors and
 * std::runtime_error when the target's compiler is not part of this build.
 */
void compile_gpu(const KernelProgram& program, const std::string& target);
/** The checking-mode (KILN_KERNEL_CHECK=1) variant of the GPU kernel, compiled for `target`;
 * returns its source. Throws as compile_gpu. */
std::string compile_gpu_checked(const KernelProgram& program, const std::string& target);
void compile_cpu(const KernelProgram& program);

/** The KernelCompileError for `log` from compiling `program` for `target`: the kernel's
 * name, the compiler's messages (lines of "source" and "header" are the user's own) and
 * the generated signature. */
std::string compile_error_message(const KernelProgram& program, const std::string& target,
                                  const std::string& log);

}  // namespace kernels

}  // namespace kiln
