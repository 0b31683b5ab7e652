// Layout primitives: dtype conversion, copies, views (broadcast, reshape, transpose, slice,
// as_strided) and the ops that assemble one buffer from parts (concatenate, slice_update).
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
  /** {shape}, after checking the input broadcasts to it (shapeless compile replays). */
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const Shape& shape() const { return shape_; }

 private:
  Shape shape_;
};

/** The same elements in a new shape: a view when the strides allow, else a copy. */
class Reshape : public UnaryPrimitive {
 public:
  /** Recorded by shapeless compile traces, so that output_shapes follows the input: `infer`
   * >= 0 is the axis given as -1, recomputed from the input's size; `follow[i]` >= 0 makes
   * output axis i the input's axis follow[i] (reshapes that only add or drop size-1 axes). */
  Reshape(Stream stream, Shape shape, int infer = -1, std::vector<int> follow = {})
      : UnaryPrimitive(stream),
        shape_(std::move(shape)),
        infer_(infer),
        follow_(std::move(follow)) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Reshape)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  bool is_equivalent(const Primitive& other) const override;
  /** The shape for the input's size (throws std::invalid_argument when it cannot hold it). */
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  /** Strides for viewing `in` as `shape` without a copy, if possible (NumPy's rule). */
  static std::optional<Strides> view_strides(const array& in, const Shape& shape);

 private:
  Shape shape_;
  int infer_;
  std::vector<int> follow_;
};

/** A view with permuted axes: output axis i is input axis axes[i]. */
class Transpose : public UnaryPrimitive {
 public:
  Transpose(Stream stream, std::vector<int> axes)
      : UnaryPrimitive(stream), axes_(std::move(axes)) {}
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

/** The input if it is row-contiguous (or column-contiguous when allowed), else a
 * row-contiguous copy. Layout is only known at eval, hence a primitive. */
class Contiguous : public UnaryPrimitive {
 public:
  Contiguous(Stream stream, bool allow_col_major)
      : UnaryPrimitive(stream), allow_col_major_(allow_col_major) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Contiguous)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  KILN_PRIMITIVE_SAME_SHAPE()
  bool is_equivalent(const Primitive& other) const override;

 private:
  bool allow_col_major_;
};

/**
 * A view with explicit shape, strides and offset (elements), measured in the row-major
 * element order of the input (a non-row-contiguous input is copied first, as MLX's
 * as_strided flattens it).
 */
class AsStrided : public UnaryPrimitive {
 public:
  AsStrided(Stream stream, Shape shape, Strides strides, int64_t offset)
      : UnaryPrimitive(stream),
        shape_(std::move(shape)),
        strides_(std::move(strides)),
        offset_(offset) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(AsStrided)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>&) override { return {shape_}; }

 private:
  Shape shape_;
  Strides strides_;
  int64_t offset_;
};

/** The bytes of a row-contiguous input read as another dtype (the op makes the input
 * contiguous): the last axis scales by the ratio of the item sizes. Not differentiable. */
class View : public UnaryPrimitive {
 public:
  View(Stream stream, Dtype dtype) : UnaryPrimitive(stream), dtype_(dtype) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(View)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

 private:
  Dtype dtype_;
};

/**
 * Bounds of a strided slice, already normalized by the op (Python's clamping): per axis,
 * `start` is the first index taken, then every `strides`-th up to `stop` (exclusive; -1 for
 * a negative step that runs through index 0). Never re-normalize these.
 */
struct SliceBounds {
  Shape start;
  Shape stop;
  Shape strides;

  /** Elements taken per axis. */
  Shape shape() const;
  bool operator==(const SliceBounds&) const = default;
  /** Normalizes Python-style bounds for `shape`; throws `[op]` errors for bad sizes or a
   * zero step. */
  static SliceBounds normalize(const Shape& shape, Shape start, Shape stop, Shape strides,
                               const char* op);
};

/** A strided view of a part of the input (negative steps walk backwards). */
class Slice : public UnaryPrimitive {
 public:
  /** `traced_shape`: the input's shape, recorded by shapeless compile traces (see
   * output_shapes). */
  Slice(Stream stream, SliceBounds bounds, Shape traced_shape = {})
      : UnaryPrimitive(stream),
        bounds_(std::move(bounds)),
        traced_shape_(std::move(traced_shape)) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Slice)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  bool is_equivalent(const Primitive& other) const override;
  /** The bounds' shape, after checking they lie inside the input. With a traced shape, an
   * axis taken whole follows the input's size, and the others need the traced size (throws
   * std::invalid_argument otherwise: their bounds would no longer mean what they did). */
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const SliceBounds& bounds() const { return bounds_; }

 private:
  SliceBounds bounds_;
  Shape traced_shape_;
};

/** inputs {src, update}: src with the slice `bounds` replaced by update (same dtype as src,
 * already broadcast to the slice's shape). Writes into src's buffer when it is donated. */
class SliceUpdate : public UnaryPrimitive {
 public:
  SliceUpdate(Stream stream, SliceBounds bounds)
      : UnaryPrimitive(stream), bounds_(std::move(bounds)) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(SliceUpdate)
  KILN_PRIMITIVE_SAME_SHAPE()
  bool is_equivalent(const Primitive& other) const override;
  const SliceBounds& bounds() const { return bounds_; }

 private:
  SliceBounds bounds_;
};

/** Joins its inputs (same dtype and rank, equal shapes outside `axis`) along `axis`. */
class Concatenate : public UnaryPrimitive {
 public:
  Concatenate(Stream stream, int axis) : UnaryPrimitive(stream), axis_(axis) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Concatenate)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  int axis() const { return axis_; }

 private:
  int axis_;
};

}  // namespace kiln
