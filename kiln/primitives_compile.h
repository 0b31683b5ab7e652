// Primitives of compile (kiln/compile.h): the placeholders a function is traced on, the
// broadcast whose target follows other arrays (shapeless traces), and Compiled, a fused
// group of elementwise operations that runs as one generated kernel.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/primitive.h"
#include "kiln/transforms.h"

namespace kiln {

/**
 * A traced input of compile: a shape and a dtype, no data. Evaluating it (eval or item of
 * an array computed from a compiled function's inputs while the function is traced) throws
 * std::invalid_argument on every device. It has no inputs, so no transformation reaches it.
 */
class CompileInput : public UnaryPrimitive {
 public:
  explicit CompileInput(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_NAME(CompileInput)
};

/**
 * inputs[0] broadcast (a view) to the NumPy broadcast of every input's shape; the other
 * inputs are read for their shapes only (the op passes them through stop_gradient). With
 * `ignore_last` = k, the last k axes take no part: they keep inputs[0]'s sizes, and only the
 * axes before them broadcast (a matmul's batch axes). Shapeless traces record the broadcasts
 * of elementwise ops, matmul and zeros_like/ones_like/full_like this way, so that a replay on
 * other shapes broadcasts to the new ones.
 */
class BroadcastLike : public UnaryPrimitive {
 public:
  explicit BroadcastLike(Stream stream, int ignore_last = 0)
      : UnaryPrimitive(stream), ignore_last_(ignore_last) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(BroadcastLike)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  int ignore_last() const { return ignore_last_; }

 private:
  int ignore_last_;
};

/**
 * The computation of a Compiled node. Values 0 .. inputs-1 are the node's inputs, each read
 * with NumPy broadcasting to the node's shape (shape-only inputs are never read); then one
 * value per literal (a one-element constant compiled into the kernel); then one per op, an
 * elementwise primitive (unary, binary, Select, AsType) applied to earlier values.
 */
struct FusedTape {
  struct Op {
    std::shared_ptr<Primitive> prim;
    std::vector<int> args;  // value indices
    Dtype dtype;            // the op's output dtype
  };
  std::vector<Dtype> input_dtypes;
  std::vector<bool> shape_only;
  std::vector<array> literals;  // evaluated, one element each
  std::vector<Op> ops;
  std::vector<int> outputs;  // value indices of the node's outputs, in order

  size_t num_inputs() const { return input_dtypes.size(); }
  int first_op() const { return static_cast<int>(input_dtypes.size() + literals.size()); }
  /** The dtype of value `v`. */
  Dtype dtype(int v) const;
};

/**
 * A fused group of elementwise operations (FusedTape), evaluated by one generated kernel:
 * C++ compiled by the host compiler on the CPU (backend/cpu/compiled.cpp), CUDA compiled by
 * NVRTC on the GPU (backend/cuda/compiled.cpp). Every output has the node's shape: a fixed
 * one, or in shapeless traces the broadcast of the input shapes. A kernel that fails to
 * compile falls back, with a warning, to evaluating the tape's primitives one by one.
 * Transforms apply to the unfused tape.
 */
class Compiled : public Primitive {
 public:
  /** `label`: the name (empty: "Compiled" and the tape's primitives). */
  Compiled(Stream stream, FusedTape tape, std::optional<Shape> fixed_shape, std::string label = "");
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  /** "Compiled" followed by the names of the fused primitives, absorbed broadcasts
   * included, e.g. CompiledBroadcastMultiplyAdd (as MLX names them). */
  const char* name() const override { return name_.c_str(); }
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  const FusedTape& tape() const { return tape_; }
  /** A text that determines the generated code: ops, dtypes and literal bits. */
  const std::string& code_key() const { return code_key_; }
  /** The tape's primitives applied one by one to `inputs` (lazy arrays). */
  std::vector<array> unfused(const std::vector<array>& inputs) const;
  /** The same, evaluated now on evaluated `inputs` on this node's device (the fallback when
   * the kernel cannot be compiled); returns the outputs. `keep` receives every intermediate
   * result before it is dropped (the GPU keeps their buffers until its work completes). */
  std::vector<array> run_unfused(const std::vector<array>& inputs, const Shape& shape,
                                 const std::function<void(const array&)>& keep = {}) const;

  /** eval_cpu and eval_gpu on spans: CompiledGroup runs its members on parts of its own
   * inputs (copies of the arrays would keep them from being donated to outputs). */
  void eval_cpu_on(std::span<const array> inputs, std::span<array> outputs);
  void eval_gpu_on(std::span<const array> inputs, std::span<array> outputs);

  /** Backend state (the loaded kernel), created on first use by each backend. */
  template <typename T, typename Make>
  std::shared_ptr<T> backend_state(int slot, Make make) {
    std::lock_guard lk(mu_);
    if (!state_[slot]) state_[slot] = make();
    return std::static_pointer_cast<T>(state_[slot]);
  }

 private:
  FusedTape tape_;
  std::optional<Shape> fixed_shape_;
  std::string name_;
  std::string code_key_;
  std::mutex mu_;
  std::shared_ptr<void> state_[2];  // cpu, gpu
};

/**
 * Compiled nodes that run the same code (equal code_key) on arrays of different shapes and
 * whose values only leave the function (compile_group.cpp), evaluated together: on the GPU
 * one launch covers every member whose reads are row-contiguous (a table of their pointers
 * and sizes; XLA's horizontal fusion, PyTorch's multi-tensor apply), so an optimizer's
 * per-parameter update is a few launches instead of one per parameter. Inputs and outputs
 * are the members' in order. Each member computes exactly what it computes alone;
 * transforms apply to the members.
 */
class CompiledGroup : public Primitive {
 public:
  CompiledGroup(Stream stream, std::vector<std::shared_ptr<Compiled>> members,
                std::vector<int> num_inputs);
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  /** "CompiledGroup" and the members' name, e.g. CompiledGroupCompiledMultiplyAdd. */
  const char* name() const override { return name_.c_str(); }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  const std::vector<std::shared_ptr<Compiled>>& members() const { return members_; }
  /** Member m's inputs are inputs[input_offset(m) .. input_offset(m + 1)), its outputs
   * outputs[output_offset(m) ..) (as many as its tape has). */
  int input_offset(size_t m) const { return input_offsets_[m]; }
  int output_offset(size_t m) const { return output_offsets_[m]; }
  /** Each member's unfused tape on its inputs, outputs concatenated (lazy arrays). */
  std::vector<array> unfused(const std::vector<array>& inputs) const;

  /** The GPU backend's state (the loaded group kernel), created on first use. */
  template <typename T, typename Make>
  std::shared_ptr<T> backend_state(Make make) {
    std::lock_guard lk(mu_);
    if (!state_) state_ = make();
    return std::static_pointer_cast<T>(state_);
  }

 private:
  std::vector<std::shared_ptr<Compiled>> members_;
  std::vector<int> input_offsets_, output_offsets_;  // one more than members: the ends
  std::string name_;
  std::mutex mu_;
  std::shared_ptr<void> state_;
};

/**
 * A compiled function lowered for replay: primitives applied in order to numbered values
 * (the inputs, then the constants, then each step's outputs). compile.cpp builds it from a
 * trace; every replay applies the same primitive objects to new arrays.
 */
struct ReplayProgram {
  struct Step {
    std::shared_ptr<Primitive> prim;
    std::vector<int> in;
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
  };
  int num_inputs = 0;
  std::vector<array> constants;
  std::vector<Step> steps;
  std::vector<int> outputs;
  bool shapeless = false;

  /** The steps' graph on `inputs` (lazy arrays); the outputs. Shapeless programs compute
   * each step's shapes from its inputs (std::invalid_argument when they cannot). */
  std::vector<array> build(const std::vector<array>& inputs) const;
  /**
   * Evaluates the steps now, on the CPU or the GPU, calling each primitive's eval directly:
   * `values` are the evaluated inputs then the constants. Returns every value; `keep`
   * receives each step's outputs (the GPU keeps their buffers until its work completes).
   */
  std::vector<array> run_now(std::vector<array> values, bool gpu,
                             const std::function<void(const array&)>& keep = {}) const;
  /** The shape and dtype of value `v`, a constant or a step's output (fixed shapes). */
  std::pair<Shape, Dtype> value_info(int v) const;

  /** The GPU backend's CUDA graph of this program, shared by the nodes of every call. */
  struct GraphSlot {
    std::mutex mu;
    std::shared_ptr<void> state;
  };
  std::shared_ptr<GraphSlot> graph_slot = std::make_shared<GraphSlot>();
};

/**
 * A whole compiled function as one node: its inputs are the function's inputs and the
 * program's constants, its outputs the program's outputs that steps compute. On a GPU stream
 * the steps' work is captured into a CUDA graph on the second call and replayed from then on
 * (backend/cuda/compiled_graph.cpp): one graph launch per call, the inputs staged into the
 * graph's buffers and the outputs copied out of them. Used for replays when
 * KILN_CUDA_GRAPHS=1 and the call moves at most KILN_CUDA_GRAPHS_MAX_BYTES (16 MiB) of inputs
 * and outputs (launch-bound work); anything the capture cannot take runs uncaptured.
 */
class CompiledGraph : public Primitive {
 public:
  CompiledGraph(Stream stream, std::shared_ptr<const ReplayProgram> program,
                std::vector<int> outputs);
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(CompiledGraph)
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  const ReplayProgram& program() const { return *program_; }
  /** The value each output is (program value indices). */
  const std::vector<int>& output_values() const { return outputs_; }
  /** The node's outputs from the program's values (its inputs are the function's inputs
   * followed by the constants). */
  std::vector<array> unfused(const std::vector<array>& inputs) const;

  /** The GPU backend's capture state: the program's, so that later calls replay it. */
  std::mutex& mutex() { return program_->graph_slot->mu; }
  std::shared_ptr<void>& gpu_state() { return program_->graph_slot->state; }

 private:
  std::shared_ptr<const ReplayProgram> program_;
  std::vector<int> outputs_;
};

namespace detail {
/** When replays use CompiledGraph: off, on GPU streams (KILN_CUDA_GRAPHS=1), or always
 * (tests of the node on the CPU). */
enum class GraphReplay { off, gpu, always };
GraphReplay graph_replay();
void set_graph_replay(GraphReplay mode);
/** The most bytes of inputs and outputs a call may move to replay through a CUDA graph. */
size_t graph_replay_max_bytes();
/** The NumPy broadcast of `a` to `shape` as an evaluated view sharing a's buffer (a must be
 * evaluated and broadcastable). */
array broadcast_view(const array& a, const Shape& shape);
/** Whether `p` is an elementwise primitive Compiled can fuse, and the name of its functor in
 * the backends' op headers (unary_ops.h, binary_ops.h and their .cuh twins). */
bool is_fusable_elementwise(const Primitive& p);
/** The functor of `p` (an elementwise primitive): the primitive's name except where the
 * backends name it otherwise (EqualNaN for Equal(equal_nan), AsType). */
std::string fused_functor(const Primitive& p);
/** KILN_DEBUG_COMPILE is set (not "" or "0"): print generated kernels and compiled graphs. */
bool compile_debug();
/** jvp, vjp and vmap of a node that stands for the ops `unfused` applies to its inputs
 * (Compiled, CompiledGroup, CompiledGraph): the transforms of those ops; vmap maps every
 * output on axis 0. */
std::vector<array> unfused_jvp(const ArrayFn& unfused, const std::vector<array>& primals,
                               const std::vector<array>& tangents, const std::vector<int>& argnums,
                               const Stream& s);
std::vector<array> unfused_vjp(const ArrayFn& unfused, const std::vector<array>& primals,
                               const std::vector<array>& cotangents,
                               const std::vector<int>& argnums);
std::pair<std::vector<array>, std::vector<int>> unfused_vmap(const ArrayFn& unfused,
                                                             const std::vector<array>& inputs,
                                                             const std::vector<int>& axes);
}  // namespace detail

}  // namespace kiln
