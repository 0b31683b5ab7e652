// Source generation for custom kernels, shared by the GPU (NVRTC) and CPU (host compiler)
// paths: both compile the same body behind the same generated signature.
//
// Contract (see kiln/fast.h and docs/custom_kernels.md):
// - Parameters in order: each input (a pointer, or for a 0-d input a reference to one
//   value), then each output (a pointer; atomic with `atomic_outputs`), then one struct
//   passed by value that holds the `<in>_shape` / `<in>_strides` / `<in>_ndim` arrays the
//   body mentions (ndim <= fast::kMaxNdim) and the launch geometry (grid, threadgroup, the
//   block offset of this launch). The body sees `<in>_shape` etc. as local names.
// - Template arguments become template parameters of the kernel, instantiated at the
//   call; `entry` is the name expression to look up.
// - `#line` directives make compiler messages count lines of the user's header and body.
#pragma once

#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/fast.h"

namespace kiln::kernels {

/** Where the generated source is compiled. */
enum class Target { gpu, cpu };

/** What a kernel's definition fixes (fast::cuda_kernel / fast::metal_kernel arguments). */
struct KernelSpec {
  fast::KernelFlavour flavour;
  std::string name;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  std::string source;
  std::string header;
  bool ensure_row_contiguous = true;
  bool atomic_outputs = false;
  int shared_memory = 0;  // bytes of dynamic shared memory (CUDA flavour)
};

/** What one call fixes. */
struct KernelInstance {
  std::vector<Dtype> input_dtypes;
  std::vector<bool> input_scalar;  // 0-d inputs are passed by value
  std::vector<Dtype> output_dtypes;
  std::vector<std::pair<std::string, fast::TemplateArg>> template_args;
};

/** Which optional parameters and built-ins the body uses (whole-word search). */
struct BodyUsage {
  std::vector<bool> input_shape, input_strides, input_ndim;
  std::vector<std::string> attributes;  // Metal attributes, e.g. "thread_position_in_grid"
  bool barriers = false;  // block-level synchronization (barriers, __syncthreads, ...)
  bool warp_ops = false;  // warp/simdgroup collectives (shuffles, simd_sum, ballots, ...)
};

struct GeneratedKernel {
  std::string source;     // the whole translation unit
  std::string entry;      // name expression (GPU) or extern "C" symbol (CPU) to look up
  std::string signature;  // the generated signature alone, for errors and verbose output
  BodyUsage usage;
};

BodyUsage analyze(const KernelSpec& spec);

/** The full source of `spec` instantiated for `instance`, for `target`. Throws
 * std::invalid_argument for template arguments the body cannot take. */
GeneratedKernel generate(const KernelSpec& spec, const KernelInstance& instance, Target target);

}  // namespace kiln::kernels
