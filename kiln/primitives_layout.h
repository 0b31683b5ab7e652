// Layout primitives: dtype conversion, copies and views (broadcast, reshape, transpose).
// Views share their input's buffer; only `eval` decides whether a copy is needed.
#pragma once

#include "kiln/primitive.h"

namespace kiln {

/** Converts to the output dtype. */
class AsType : public UnaryPrimitive {
 public:
  AsType(Stream stream, Dtype dtype) : UnaryPrimitive(stream), dtype_(dtype) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(AsType)
  KILN_PRIMITIVE_SAME_SHAPE()
  bool is_equivalent(const Primitive& other) const override;
  Dtype dtype() const { return dtype_; }

 private:
  Dtype dtype_;
};

/** A copy into a new buffer (keeps a contiguous input's layout). */
class Copy : public UnaryPrimitive {
 public:
  explicit Copy(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Copy)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  KILN_PRIMITIVE_SAME_SHAPE()
};

/** A view of the input broadcast to `shape` (zero strides on broadcast axes). */
class Broadcast : public UnaryPrimitive {
 public:
  Broadcast(Stream stream, Shape shape) : UnaryPrimitive(stream), shape_(std::move(shape)) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Broadcast)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>&) override { return {shape_}; }
  const Shape& shape() const { return shape_; }

 private:
  Shape shape_;
};

/** The same elements in a new shape: a view when the strides allow, else a copy. */
class Reshape : public UnaryPrimitive {
 public:
  Reshape(Stream stream, Shape shape) : UnaryPrimitive(stream), shape_(std::move(shape)) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Reshape)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>&) override { return {shape_}; }
  /** Strides for viewing `in` as `shape` without a copy, if possible (NumPy's rule). */
  static std::optional<Strides> view_strides(const array& in, const Shape& shape);

 private:
  Shape shape_;
};

/** A view with permuted axes: output axis i is input axis axes[i]. */
class Transpose : public UnaryPrimitive {
 public:
  Transpose(Stream stream, std::vector<int> axes) : UnaryPrimitive(stream), axes_(std::move(axes)) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Transpose)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const std::vector<int>& axes() const { return axes_; }

 private:
  std::vector<int> axes_;
};

}  // namespace kiln
