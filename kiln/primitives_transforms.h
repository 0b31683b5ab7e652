// Primitives the function transformations build: tracer inputs, vmap placeholders,
// stop_gradient, ordering dependencies and user-defined transforms (custom_function,
// checkpoint). All but VmapInput compute nothing: their outputs share their inputs' buffers.
#pragma once

#include <functional>
#include <string>

#include "kiln/primitive.h"
#include "kiln/transforms.h"

namespace kiln {

/** The input of a function traced by vjp/jvp/grad: the same values (shares the buffer).
 * Transformations start and stop their graph walks at these nodes; an enclosing
 * transformation sees an identity. */
class TraceInput : public UnaryPrimitive {
 public:
  explicit TraceInput(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(TraceInput)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  KILN_PRIMITIVE_SAME_SHAPE()
};

/**
 * The placeholder for a mapped input while vmap traces its function: it has the shape of
 * one slice and no data. Evaluating it (eval or item inside a vmapped function) throws
 * std::invalid_argument on every device. It has no inputs, so no transformation ever
 * differentiates or maps it (the base class's tagged errors stand).
 */
class VmapInput : public UnaryPrimitive {
 public:
  explicit VmapInput(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_NAME(VmapInput)
  KILN_PRIMITIVE_SAME_SHAPE()
};

/** The same values with zero derivative: jvp gives zero tangents, vjp zero cotangents. */
class StopGradient : public UnaryPrimitive {
 public:
  explicit StopGradient(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(StopGradient)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  KILN_PRIMITIVE_SAME_SHAPE()
};

/**
 * Outputs are the first `n` inputs, unchanged; the remaining inputs are dependencies that
 * must be computed first (no data flows from them, and their cotangents are zero).
 * checkpoint uses it to schedule the recomputation after the forward pass.
 */
class Depends : public Primitive {
 public:
  Depends(Stream stream, int n) : Primitive(stream), n_(n) {}
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Depends)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

 private:
  int n_;
};

/**
 * A function's outputs with user-supplied transforms. Inputs: the function's arguments,
 * then its already computed outputs (under stop_gradient), whose buffers the outputs share.
 * vjp/jvp/vmap call the user's functions on the arguments only.
 */
class CustomTransforms : public Primitive {
 public:
  CustomTransforms(Stream stream, int num_outputs, CustomVjpFn vjp, CustomJvpFn jvp,
                   CustomVmapFn vmap, std::string name = "CustomTransforms")
      : Primitive(stream),
        num_outputs_(num_outputs),
        vjp_(std::move(vjp)),
        jvp_(std::move(jvp)),
        vmap_(std::move(vmap)),
        name_(std::move(name)) {}
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  const char* name() const override { return name_.c_str(); }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

 private:
  int num_outputs_;
  CustomVjpFn vjp_;
  CustomJvpFn jvp_;
  CustomVmapFn vmap_;
  std::string name_;
};

namespace detail {
/** Zeros of `shape` and `dtype` as a broadcast view of a single element: the zero tangents
 * and cotangents of the transformations cost no memory. */
array zeros_view(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
}  // namespace detail

}  // namespace kiln
