// Custom kernels from source strings (kiln's headline feature).
//
// The user writes only the body of a kernel, in CUDA C++ (`cuda_kernel`) or in the Metal
// Shading Language (`metal_kernel`, the bodies MLX users already have). kiln generates the
// signature from the inputs, outputs, template arguments and the attributes the body uses,
// compiles it at run time (NVRTC on the GPU, the host C++ compiler on the CPU), caches it
// in memory and on disk, and runs it as a node (`CustomKernel`) of the lazy graph.
//
// Semantics follow MLX's `mx.fast.metal_kernel` / `mx.fast.cuda_kernel`:
// - The signature lists the inputs in order, then the outputs. An input `x` also gets
//   `x_shape` (const int32_t*), `x_strides` (const int64_t*, in elements) and `x_ndim`
//   (int) when the source mentions them. Outputs are row-contiguous.
// - `grid` counts threads, not blocks; `threadgroup` is clipped to the grid. Metal bodies
//   keep Metal's dispatch: threads outside the grid never run the body and an edge
//   threadgroup reports its real size. CUDA bodies keep CUDA's: every thread of
//   ceil(grid / threadgroup) blocks runs, and the body checks its bounds.
// - Template arguments (dtype, int or bool) become `template <...>` parameters of the
//   generated kernel and are instantiated at the call.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln::fast {

/** A template argument of a custom kernel: a dtype (a type parameter), an int or a bool. */
using TemplateArg = std::variant<int, bool, Dtype>;

/** Which language a kernel body is written in. */
enum class KernelFlavour { cuda, metal };

/**
 * MLX's math modes (metal_kernel's compile_options={"math_mode": ...}), and the compiler
 * flags they stand for:
 * - safe (the default): IEEE semantics for special values (exp(-inf) == 0, NaN propagates),
 *   correctly rounded division and square root, subnormals kept. NVRTC's defaults; the host
 *   compiler's -O2.
 * - relaxed: approximate division and square root and subnormals flushed to zero
 *   (NVRTC -ftz=true -prec-div=false -prec-sqrt=false); reassociation and reciprocals on the
 *   CPU (-fno-signed-zeros -fno-trapping-math -fassociative-math -freciprocal-math).
 *   Infinities and NaN are still honoured.
 * - fast: everything above plus the GPU's fast intrinsics for exp, log, sin, ...
 *   (NVRTC --use_fast_math); -ffast-math on the CPU (assumes no infinities or NaN).
 */
enum class MathMode { safe, relaxed, fast };

/** Options of a kernel's compilation (MLX's compile_options). */
struct CompileOptions {
  MathMode math_mode = MathMode::safe;
  bool operator==(const CompileOptions& o) const { return math_mode == o.math_mode; }
};

/** "safe", "relaxed" or "fast". */
const char* math_mode_name(MathMode m);

/**
 * A custom kernel, callable like a function. Thread-safe; copies share the definition.
 */
class KernelFunction {
 public:
  /**
   * Builds the kernel's outputs (lazy). `output_shapes[i]`/`output_dtypes[i]` describe
   * output i; `grid` and `threadgroup` are (x, y, z) thread counts; `template_args` are
   * (name, value) pairs; `init_value` fills every output before the kernel runs (without
   * it outputs start uninitialized); `verbose` prints the generated source. `s` picks the
   * device (CPU or GPU). Inside export_function's trace, the GPU may be asked for on a
   * machine without one (as MLX): the node is recorded for the GPU of the importing
   * process and cannot be evaluated here.
   *
   * Throws std::invalid_argument ("[metal_kernel] ...") for a wrong number of inputs,
   * output shapes or dtypes, a threadgroup above 1024 threads (64 in z), a zero-sized grid
   * or threadgroup, a template argument with a bad or repeated name, or an input whose
   * shape or strides the body reads with more dimensions than kernels support (kMaxNdim);
   * at eval, for a threadgroup above what the compiled kernel can run on the device.
   * Compile errors raise KernelCompileError when the kernel is compiled (at the call on
   * the CPU when a compiler is missing, else at eval).
   */
  std::vector<array> operator()(
      const std::vector<array>& inputs, const std::vector<Shape>& output_shapes,
      const std::vector<Dtype>& output_dtypes, std::tuple<int, int, int> grid,
      std::tuple<int, int, int> threadgroup,
      const std::vector<std::pair<std::string, TemplateArg>>& template_args = {},
      std::optional<float> init_value = std::nullopt, bool verbose = false,
      StreamOrDevice s = {}) const;

  /**
   * Generates and compiles the kernel without running it, for inputs of the given dtypes
   * and ranks, and returns the generated source. `target` is a GPU architecture
   * ("sm_90", the default) or "cpu". Needs no GPU: this is how CI and users on machines
   * without one check kernels. Throws KernelCompileError on compile errors.
   */
  std::string compile(const std::vector<Dtype>& input_dtypes, const std::vector<int>& input_ndims,
                      const std::vector<Dtype>& output_dtypes,
                      const std::vector<std::pair<std::string, TemplateArg>>& template_args = {},
                      const std::string& target = "sm_90") const;

  const std::string& name() const;

  struct Definition;
  explicit KernelFunction(std::shared_ptr<const Definition> def) : def_(std::move(def)) {}

 private:
  std::shared_ptr<const Definition> def_;
};

/** The most dimensions an input of a custom kernel may have. */
inline constexpr int kMaxNdim = 10;

/**
 * A kernel whose body is CUDA C++. `shared_memory` bytes of dynamic shared memory are
 * available as `extern __shared__` storage (the limit is raised above 48 KB when asked).
 * With `atomic_outputs`, outputs are plain pointers usable with atomicAdd and friends.
 */
KernelFunction cuda_kernel(const std::string& name, const std::vector<std::string>& input_names,
                           const std::vector<std::string>& output_names, const std::string& source,
                           const std::string& header = "", bool ensure_row_contiguous = true,
                           bool atomic_outputs = false, int shared_memory = 0,
                           CompileOptions compile_options = {});

/**
 * A kernel whose body is Metal Shading Language, compiled for NVIDIA GPUs (and the CPU)
 * through kiln's Metal compatibility layer. With `atomic_outputs`, outputs are
 * `device atomic<T>*`. `compile_options` picks the math mode (see MathMode).
 */
KernelFunction metal_kernel(const std::string& name, const std::vector<std::string>& input_names,
                            const std::vector<std::string>& output_names, const std::string& source,
                            const std::string& header = "", bool ensure_row_contiguous = true,
                            bool atomic_outputs = false, CompileOptions compile_options = {});

/** A scalar argument of a precompiled kernel (passed by value after the outputs: bool as
 * one byte, int as int32, float as float32). */
using ScalarArg = std::variant<bool, int, float>;

/**
 * Runs a precompiled CUDA kernel (MLX's precompiled_cuda_kernel): `compiled_source` is PTX
 * text, a cubin or a fatbin (from Triton, CuTe DSL, nvcc, ...) holding the kernel `name`
 * (its symbol). The kernel takes, in order, a pointer per input, a pointer per output
 * (row-contiguous, filled with `init_value` when given), then `scalars`; trailing pointer
 * parameters the kernel declares beyond those (Triton's scratch pointers) get null.
 * `grid` counts threads (as for metal_kernel): ceil(grid / threadgroup) blocks run, with
 * `shared_memory` bytes of dynamic shared memory. GPU streams only.
 *
 * Throws std::invalid_argument at the call ("[precompiled_cuda_kernel] ...") when the
 * bytes are not PTX, a cubin or a fatbin, when `name` is not one of their kernels, when the
 * kernel's parameters (PTX and cubins say which) do not match the inputs, outputs and
 * scalars, when the image cannot run on the stream's GPU (a cubin for another
 * architecture, PTX for a newer one), for a CPU stream, and for bad sizes as
 * metal_kernel's call; std::runtime_error at eval when the driver cannot load the image.
 */
std::vector<array> precompiled_cuda_kernel(
    const std::string& name, const std::string& compiled_source, const std::vector<array>& inputs,
    const std::vector<Shape>& output_shapes, const std::vector<Dtype>& output_dtypes,
    const std::vector<ScalarArg>& scalars, std::tuple<int, int, int> grid,
    std::tuple<int, int, int> threadgroup, int shared_memory = 0,
    std::optional<float> init_value = std::nullopt, bool ensure_row_contiguous = false,
    StreamOrDevice s = {});

/** A custom kernel's source failed to compile. The message names the kernel, gives the
 * compiler's messages with line numbers of the user's own source and header, and shows
 * the generated signature. */
class KernelCompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------- fused built-ins
// MLX 0.32's mx.fast operations, with MLX's signatures and semantics. Each is one node of
// the graph with a CPU and a GPU implementation and a fused vjp; jvp and vmap (and the vjp
// where no fused rule exists) come from the same computation written with core ops, which
// also defines the results. Half-precision inputs accumulate in float32. docs/fast.md
// describes each algorithm and its source.

/**
 * Root-mean-square normalization over the last axis (Zhang and Sennrich, 2019):
 * `y = x * rsqrt(mean(x^2, -1) + eps) * weight`.
 *
 * x: at least 1-d, floating; weight: None or 1-d with x.shape[-1] elements. The output has
 * x's shape and the promoted dtype of x and weight (x's dtype without weight).
 * Throws std::invalid_argument ("[rms_norm] ...") for a 0-d x, a weight of the wrong rank
 * or length, or a non-floating result dtype.
 */
array rms_norm(const array& x, const std::optional<array>& weight, float eps,
               StreamOrDevice s = {});

/**
 * rms_norm followed by SiLU in one pass: `h * sigmoid(h)` with `h = rms_norm(x, weight, eps)`
 * (MLX's mx.fast.fused_rms_silu), computed in the accumulation type and rounded once.
 * Arguments, output dtype and errors ("[fused_rms_silu] ...") as rms_norm's. The vjp is
 * rms_norm's fused gradient of `g * silu'(h)`.
 */
array fused_rms_silu(const array& x, const std::optional<array>& weight, float eps,
                     StreamOrDevice s = {});

/**
 * Layer normalization over the last axis (Ba, Kiros and Hinton, 2016):
 * `y = (x - mean) * rsqrt(var + eps) * weight + bias`, the variance biased (divided by n).
 *
 * x: at least 1-d, floating; weight, bias: None or 1-d with x.shape[-1] elements. The output
 * has x's shape and the promoted dtype of x and the given parameters.
 * Throws std::invalid_argument ("[layer_norm] ...") as rms_norm does, for either parameter.
 */
array layer_norm(const array& x, const std::optional<array>& weight,
                 const std::optional<array>& bias, float eps, StreamOrDevice s = {});

/**
 * Rotary positional encoding (Su et al., 2021, "RoFormer"). x has shape (B, *, T, D), at
 * least 3-d, floating. The first `dims` features of each position t are rotated in pairs
 * by angles `(offset + t) * scale * inv_freq[i]`, i < dims / 2, where inv_freq[i] =
 * base^(-i / (dims / 2)), or 1 / freqs[i] when `freqs` (dims / 2 elements) is given; the
 * pairs are (i, i + dims / 2), or with `traditional` the adjacent (2i, 2i + 1). Features
 * past `dims` pass through. `offset` is an int, or an integer array holding one offset or
 * one per batch element (B). Output: x's shape and dtype; angles in float32.
 *
 * Throws std::invalid_argument ("[rope] ...") for x of fewer than 3 dimensions or not
 * floating, dims not positive, odd or above D, both or neither of base and freqs, freqs not
 * of shape (dims / 2), and an offset that is not an integer scalar or B-vector.
 */
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           int offset, const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           const array& offset, const std::optional<array>& freqs = std::nullopt,
           StreamOrDevice s = {});

/**
 * Attention `softmax(scale * q @ k^T + mask) @ v` (Vaswani et al., 2017), computed without
 * materializing the scores (FlashAttention-2, Dao 2023, on the GPU; the same online softmax
 * over key blocks on the CPU); the softmax runs in float32 (float64 for float64 inputs).
 *
 * q: (B, H_q, L_q, D); k: (B, H_kv, L_k, D); v: (B, H_kv, L_k, D_v). H_q must be a multiple
 * of H_kv: query head h reads key/value head h / (H_q / H_kv) (grouped- and multi-query
 * attention, without tiling k and v). Output: (B, H_q, L_q, D_v) of the promoted dtype of
 * q, k and v, which must be floating.
 * mask_mode: "" (no mask or an array mask) or "causal": query i sees keys j <= i + L_k - L_q
 * (lower-right aligned, the last query aligns with the last key). mask: a bool array (false
 * hides a key) or an additive array whose dtype promotes to the output dtype, of at most 4
 * dimensions broadcastable to (B, H_q, L_q, L_k). A query that sees no key gets the mean of
 * v under a bool or causal mask (hidden scores take the lowest finite value, as in MLX) and
 * NaN under an additive mask of -inf. sinks: None or (H_q,) logits, one per head, that join
 * each row's softmax normalization without a value (attention sinks, Xiao et al., 2023).
 *
 * GPU implementation: KILN_SDPA_BACKEND (kiln/fast_sdpa_backend.h), read when the call is
 * made: "kiln" (default) runs kiln's kernels; "cudnn" runs cuDNN's fused attention
 * (cudnn-frontend's sdpa graphs) wherever it computes the call exactly (float16/bfloat16,
 * head dims multiples of 8 up to 128, no mask or causal with L_q <= L_k, no array mask, no
 * sinks) and kiln's kernels elsewhere or where cuDNN rejects the problem; "auto" is "cudnn"
 * except decode-like calls (at most 16 query rows per key/value head). The gradient runs on
 * the implementation its forward ran on.
 *
 * Throws std::invalid_argument ("[scaled_dot_product_attention] ...") for inputs not 4-d,
 * batch sizes, head dims or key/value head counts that differ, H_q not a multiple of H_kv,
 * an unknown mask_mode, a causal mode with a mask array, a mask of more than 4 dimensions
 * or that does not broadcast, a mask or sinks dtype that does not promote to the output
 * dtype, sinks not of shape (H_q), non-floating inputs, and (GPU streams) a
 * KILN_SDPA_BACKEND other than kiln, cudnn or auto.
 */
array scaled_dot_product_attention(const array& q, const array& k, const array& v, float scale,
                                   const std::string& mask_mode = "",
                                   const std::optional<array>& mask = std::nullopt,
                                   const std::optional<array>& sinks = std::nullopt,
                                   StreamOrDevice s = {});

/**
 * Cross entropy with class indices, fused: `logsumexp(logits, -1) - logits[..., target]`,
 * accumulated in float32. logits: at least 1-d, floating (C = logits.shape[-1] > 0 classes);
 * targets: integer class indices of logits.shape[:-1]. Output: targets' shape, float32
 * (float64 for float64 logits). A negative target counts from the end (as take_along_axis);
 * a target outside [-C, C) gives NaN.
 * Throws std::invalid_argument ("[cross_entropy] ...") for 0-d or non-floating logits,
 * non-integer targets, and a targets shape other than logits.shape[:-1].
 */
array cross_entropy(const array& logits, const array& targets, StreamOrDevice s = {});

/**
 * The global L2 norm of several arrays: sqrt of the sum of the squares of every element of
 * every array, as if they were flattened and concatenated (optax's and TensorFlow's
 * global_norm, PyTorch's get_total_norm). Gradient clipping's norm (optimizers'
 * clip_grad_norm) in one pass over the arrays: one kernel for all of them on the GPU, not a
 * square and a reduction per array. Arrays: floating dtypes, any shapes and layouts (empty
 * ones add nothing). Output: a 0-d float32 array (float64 if an input is float64), accumulated
 * in float32 or better. Differentiable (its gradient is x / norm for each array).
 * Throws std::invalid_argument ("[global_norm] ...") for a non-floating array.
 */
array global_norm(const std::vector<array>& arrays, StreamOrDevice s = {});

}  // namespace kiln::fast
