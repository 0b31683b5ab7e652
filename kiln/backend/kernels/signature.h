// Source generation for custom kernels, shared by the GPU (NVRTC) and CPU (host compiler)
// paths: both compile the same body behind the same generated signature.
//
// Contract (see kiln/fast.h and docs/custom_kernels.md):
// - Parameters in order: each input (a pointer; a 0-d input is also bound to a local
//   `const T& name` reference to its one value), then each output (a pointer; atomic with
//   `atomic_outputs` in the Metal flavour), then one struct passed by value (`kiln_params`,
//   packed on the host by ParamBlock) that holds the launch geometry and the `<in>_shape` /
//   `<in>_strides` / `<in>_ndim` arrays the body mentions (ndim <= fast::kMaxNdim). The body
//   sees `<in>_shape` etc. as local names, and the Metal attributes it mentions as locals
//   initialized by `kiln_attr::<attribute>(kiln_p)`, which each target's prelude defines.
// - Template arguments become template parameters of the kernel, instantiated at the
//   call; `entry` is the name expression to look up.
// - `#line` directives make compiler messages count lines of the user's header ("header")
//   and body ("source").
//
// The generated translation unit (Metal flavour; the CUDA flavour differs in its prelude):
//
//   #include "kiln/backend/kernels/metal/gpu.h"     // GPU; metal/cpu.h on the CPU
//   namespace kiln_user {
//   KILN_METAL_USING                                 // what a Metal body may name unqualified
//   <header, Metal keywords rewritten>
//   struct alignas(8) kiln_params { uint32_t grid[3], threadgroup[3], block_offset[3],
//                                    reserved_; int64_t <in>_strides[10]...;
//                                    int32_t <in>_shape[10]...; int32_t <in>_ndim...; };
//   template <typename T>
//   __global__ void custom_kernel_<name>(const T0* __restrict__ a, ...,
//                                        T1* __restrict__ out, ...,
//                                        const __grid_constant__ kiln_params kiln_p) {
//     uint3 thread_position_in_grid = kiln_attr::thread_position_in_grid(kiln_p);
//     const int32_t* a_shape = kiln_p.a_shape;
//     <body>
//   }
//   }  // namespace kiln_user
//
// On the CPU (Target::cpu) the translation unit also defines, after the kernel,
//   namespace kiln_user {
//   inline void kiln_invoke(void* const* kiln_args, const void* kiln_params_ptr);
//   }
//   KILN_CPU_ENTRY(kiln_user::kiln_invoke)
// where kiln_args[i] is the data pointer of input or output i and kiln_params_ptr points to
// the kiln_params; kiln_invoke runs the kernel for the current thread. The CPU prelude
// defines KILN_CPU_ENTRY (the exported entry points), __global__, __grid_constant__,
// __restrict__, __shared__ and kiln_attr::.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/array.h"
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
  fast::MathMode math_mode = fast::MathMode::safe;
};

/** What one call fixes. */
struct KernelInstance {
  std::vector<Dtype> input_dtypes;
  std::vector<bool> input_scalar;  // 0-d inputs, bound to a `const T&` to their one value
  std::vector<Dtype> output_dtypes;
  std::vector<std::pair<std::string, fast::TemplateArg>> template_args;

  bool operator==(const KernelInstance& o) const;
  /** A compact text naming every field, for lookup tables. */
  std::string key() const;
};

/** Which optional parameters and built-ins the body uses (whole-word search). */
struct BodyUsage {
  std::vector<bool> input_shape, input_strides, input_ndim;
  std::vector<std::string> attributes;  // Metal attributes, e.g. "thread_position_in_grid"
  bool barriers = false;  // block-level synchronization (barriers, __syncthreads, ...)
  bool warp_ops = false;  // warp/simdgroup collectives (shuffles, simd_sum, ballots, ...)
  bool metal_names = false;  // names the Metal layer: metal::, float16_t, bfloat16_t, ...
  bool runtime_names = false;  // an #include, or names of the CUDA runtime (cuda*, tex*, surf*)
  bool cooperative_groups = false;  // CUDA flavour: names cooperative_groups (or MLX's `cg`)
  bool prints = false;  // printf or Metal's os_log: device output to flush at the next wait
};

struct GeneratedKernel {
  std::string source;     // the whole translation unit
  std::string entry;      // name expression (GPU) or per-thread function (CPU)
  std::string signature;  // the generated signature alone, for errors and verbose output
  std::string hash;       // 32 hex digits over `source` and `entry`: names the module
  BodyUsage usage;
};

/** Metal's compute attributes a body may use and their types ("uint" or "uint3"). */
const std::vector<std::pair<std::string, std::string>>& metal_attributes();

/** Checks the names of a definition (identifiers, distinct, not reserved); throws
 * std::invalid_argument with `op` as the tag. */
void check_spec(const KernelSpec& spec, const char* op);

BodyUsage analyze(const KernelSpec& spec);

/** The full source of `spec` instantiated for `instance`, for `target`. Throws
 * std::invalid_argument for template arguments the body cannot take (bad or duplicate
 * names, names of inputs or outputs). */
GeneratedKernel generate(const KernelSpec& spec, const KernelInstance& instance, Target target);

/**
 * A definition with one instantiation, whose generated source is made on first request per
 * target and kept (thread-safe). The CustomKernel primitive holds one; kernel functions keep
 * them per instance so repeated calls neither regenerate nor rehash.
 */
class KernelProgram {
 public:
  KernelProgram(std::shared_ptr<const KernelSpec> spec, std::shared_ptr<const BodyUsage> usage,
                KernelInstance instance);
  ~KernelProgram();
  const KernelSpec& spec() const { return *spec_; }
  const BodyUsage& usage() const { return *usage_; }
  const KernelInstance& instance() const { return instance_; }
  const GeneratedKernel& generated(Target target) const;

  /** A GPU backend's loaded kernel on one device, opaque here: looked up without a lock or
   * a string on every launch once set. */
  struct GpuFunction {
    void* function = nullptr;
    int max_threads = 0;  // per threadgroup, given the kernel's register use
  };
  static constexpr int kMaxGpuDevices = 16;
  /** The function set for `device`, or nullptr (also for devices >= kMaxGpuDevices). */
  const GpuFunction* gpu_function(int device) const;
  /** Sets it once (the first caller wins); returns the one kept. */
  const GpuFunction* set_gpu_function(int device, GpuFunction f) const;
  /** Whether the CPU kernel was built (or loaded) once already: compile_ahead skips it. */
  bool cpu_ready() const { return cpu_ready_.load(std::memory_order_acquire); }
  void set_cpu_ready() const;
  /** How many programs exist that were never compiled for any target: compile_ahead looks
   * at a tape only when there are two or more. */
  static int64_t uncompiled_programs();

 private:
  std::shared_ptr<const KernelSpec> spec_;
  std::shared_ptr<const BodyUsage> usage_;
  KernelInstance instance_;
  struct Cache;
  std::unique_ptr<Cache> cache_;
  mutable std::array<std::atomic<GpuFunction*>, kMaxGpuDevices> gpu_functions_{};
  mutable std::atomic<bool> cpu_ready_{false};
  mutable std::atomic<bool> compiled_once_{false};
  void note_compiled() const;
};

/** The geometry fields at the start of `kiln_params`. */
struct LaunchGeometry {
  uint32_t grid[3] = {1, 1, 1};          // threads per grid
  uint32_t threadgroup[3] = {1, 1, 1};   // threads per full threadgroup
  uint32_t block_offset[3] = {0, 0, 0};  // threadgroup index of this launch's first block
};

/** The bytes of a kernel's `kiln_params` for the given inputs (shapes, and strides in
 * elements, as the kernel will read them) and geometry. */
class ParamBlock {
 public:
  ParamBlock(const BodyUsage& usage, const std::vector<Shape>& shapes,
             const std::vector<Strides>& strides, const LaunchGeometry& geometry);
  /** Sets the block offset of one launch (Metal edge launches). */
  void set_block_offset(uint32_t x, uint32_t y, uint32_t z);
  const void* data() const { return words_.data(); }
  size_t size() const { return size_; }

 private:
  std::vector<uint64_t> words_;
  size_t size_ = 0;
};

/** The size of `kiln_params` for `usage` (what the generated static_assert checks). */
size_t param_block_size(const BodyUsage& usage);

}  // namespace kiln::kernels
