// The Primitive base class: a node of the lazy graph that knows how to evaluate itself
// on each device and how it transforms (jvp, vjp, vmap).
//
// Ops (kiln/ops*.cpp) check arguments, promote dtypes and build arrays whose node holds a
// primitive; nothing runs until `eval`. When evaluated, `eval_cpu`/`eval_gpu` receive the
// inputs and the outputs, whose memory they must allocate (`out.set_data(...)`).
#pragma once

#include <memory>
#include <optional>
#include <typeinfo>
#include <ostream>
#include <utility>
#include <vector>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln {

class Primitive {
 public:
  explicit Primitive(Stream stream) : stream_(stream) {}
  virtual ~Primitive() = default;
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;

  /** The stream the primitive runs on. */
  const Stream& stream() const { return stream_; }
  Device device() const { return stream_.device; }

  /** Computes `outputs` from `inputs` on the CPU; allocates the outputs' memory. */
  virtual void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) = 0;
  /** Computes `outputs` from `inputs` on the GPU; allocates the outputs' memory. */
  virtual void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) = 0;

  /**
   * Forward-mode derivative: the tangents of the outputs, given tangents of the inputs
   * listed in `argnums` (`tangents[i]` belongs to `primals[argnums[i]]`).
   */
  virtual std::vector<array> jvp(
      const std::vector<array>& primals,
      const std::vector<array>& tangents,
      const std::vector<int>& argnums);

  /**
   * Reverse-mode derivative: the cotangents of the inputs listed in `argnums`, given the
   * cotangents of every output. `outputs` are the primal outputs (for reuse).
   */
  virtual std::vector<array> vjp(
      const std::vector<array>& primals,
      const std::vector<array>& cotangents,
      const std::vector<int>& argnums,
      const std::vector<array>& outputs);

  /**
   * Vectorization: given inputs with a mapped axis each (`axes[i]`, or -1 when unmapped),
   * returns the batched outputs and the mapped axis of each.
   */
  virtual std::pair<std::vector<array>, std::vector<int>> vmap(
      const std::vector<array>& inputs,
      const std::vector<int>& axes);

  /** Name used in errors and graph printing, e.g. "Add". */
  virtual const char* name() const = 0;
  /** Prints the name and any parameters. */
  virtual void print(std::ostream& os) { os << name(); }

  /** Whether `other` computes the same function (same type and parameters). */
  virtual bool is_equivalent(const Primitive& other) const { return false; }

  /** Output shapes for the given inputs (throws if the primitive cannot infer them). */
  virtual std::vector<Shape> output_shapes(const std::vector<array>& inputs);

 private:
  Stream stream_;
};

/** A primitive with a single output: implement the single-output `eval_*`. */
class UnaryPrimitive : public Primitive {
 public:
  explicit UnaryPrimitive(Stream stream) : Primitive(stream) {}

  virtual void eval_cpu(const std::vector<array>& inputs, array& output) = 0;
  virtual void eval_gpu(const std::vector<array>& inputs, array& output) = 0;

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) final {
    eval_cpu(inputs, outputs[0]);
  }
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) final {
    eval_gpu(inputs, outputs[0]);
  }
};

// Declaration helpers for primitive classes.
#define KILN_PRIMITIVE_NAME(NAME) \
  const char* name() const override { return #NAME; }

#define KILN_PRIMITIVE_VMAP()                                   \
  std::pair<std::vector<array>, std::vector<int>> vmap(         \
      const std::vector<array>& inputs, const std::vector<int>& axes) override;

#define KILN_PRIMITIVE_GRADS()                        \
  std::vector<array> jvp(                             \
      const std::vector<array>& primals,              \
      const std::vector<array>& tangents,             \
      const std::vector<int>& argnums) override;      \
  std::vector<array> vjp(                             \
      const std::vector<array>& primals,              \
      const std::vector<array>& cotangents,           \
      const std::vector<int>& argnums,                \
      const std::vector<array>& outputs) override;

#define KILN_PRIMITIVE_DEFAULT_EQUIVALENT() \
  bool is_equivalent(const Primitive& other) const override { return typeid(*this) == typeid(other); }

#define KILN_PRIMITIVE_SAME_SHAPE()                                               \
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override { \
    return {inputs[0].shape()};                                                 \
  }

#define KILN_PRIMITIVE_EVAL_UNARY()                                           \
  void eval_cpu(const std::vector<array>& inputs, array& out) override; \
  void eval_gpu(const std::vector<array>& inputs, array& out) override;

#define KILN_PRIMITIVE_EVAL_MULTI()                                                          \
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override; \
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;

}  // namespace kiln
