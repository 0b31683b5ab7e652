// Indexing primitives: gathers and scatters driven by index arrays whose values are only
// known at evaluation time (so bounds are checked there, in eval_cpu/eval_gpu).
//
// Gather/Scatter follow MLX's design: one index array per indexed axis, all broadcast to
// one shape, selecting the start of a slice of the source. GatherAxis/ScatterAxis are the
// one-axis forms behind take_along_axis/put_along_axis, where the index array already has
// the source's shape (except along the axis) and no index arrays for the other axes are
// needed.
#pragma once

#include <vector>

#include "kiln/primitive.h"

namespace kiln {

/** How a scatter combines an update with the value at its target. */
enum class ScatterReduce { none, sum, prod, max, min };

/**
 * out[n..., s...] = a[start(n) + s]: `start(n)` is indices[k][n...] (negative values wrap)
 * along axes[k] and 0 along the other axes; `s` ranges over `slice_sizes` (one per axis of
 * `a`). Inputs: a, then one integer index array per axis, all of one shape P.
 * Output: P + slice_sizes, dtype of a. An index with start + slice size beyond its axis
 * throws std::out_of_range at evaluation, tagged with the user-facing `op`.
 * The output is dense, with the slice axes before the first indexed axis outermost (so
 * row-major when that axis is 0): take(a, idx, axis) and NumPy's a[:, idx] are then
 * row-contiguous views of it once the index axes are moved into place.
 */
class Gather : public UnaryPrimitive {
 public:
  /** `traced_shape`: a's shape, recorded by shapeless compile traces. A replay on a source of
   * another shape keeps the slice sizes of the indexed axes; an axis outside `axes` that was
   * taken whole (take's, gather_mm's) follows the source, and one taken in part must keep
   * its traced size (output_shapes throws std::invalid_argument otherwise). */
  Gather(Stream stream, const char* op, std::vector<int> axes, Shape slice_sizes,
         Shape traced_shape = {})
      : UnaryPrimitive(stream),
        op_(op),
        axes_(std::move(axes)),
        slice_sizes_(std::move(slice_sizes)),
        traced_shape_(std::move(traced_shape)) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Gather)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const char* op() const { return op_; }
  const std::vector<int>& axes() const { return axes_; }
  const Shape& slice_sizes() const { return slice_sizes_; }

 private:
  /** The slice sizes for a source of shape `src` (see traced_shape). */
  Shape slice_sizes_for(const Shape& src) const;

  const char* op_;  // static string: the op named in out-of-range errors
  std::vector<int> axes_;
  Shape slice_sizes_;
  Shape traced_shape_;
};

/**
 * The inverse of Gather: out = a, then for every index position n and slice element s,
 * out[start(n) + s] = reduce(out[start(n) + s], updates[n..., s...]). Inputs: a, the index
 * arrays (one shape P), updates of shape P + slice shape (one entry per axis of a, each at
 * most a's) and a's dtype. Output: a's shape and dtype. Updates are applied in index
 * order, so `none` keeps the last duplicate and sums are deterministic (documented as
 * unspecified for `none`, as in MLX). Out-of-range indices throw std::out_of_range.
 */
class Scatter : public UnaryPrimitive {
 public:
  Scatter(Stream stream, const char* op, ScatterReduce reduce, std::vector<int> axes)
      : UnaryPrimitive(stream), op_(op), reduce_(reduce), axes_(std::move(axes)) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Scatter)
  KILN_PRIMITIVE_SAME_SHAPE()
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  const char* op() const { return op_; }
  ScatterReduce reduce() const { return reduce_; }
  const std::vector<int>& axes() const { return axes_; }

 private:
  const char* op_;
  ScatterReduce reduce_;
  std::vector<int> axes_;
};

/**
 * take_along_axis: out[..., j, ...] = a[..., indices[..., j, ...], ...] along `axis`.
 * Inputs: a and an integer index array with a's shape except along `axis` (the op
 * broadcasts). Output: the index shape, a's dtype.
 */
class GatherAxis : public UnaryPrimitive {
 public:
  GatherAxis(Stream stream, const char* op, int axis)
      : UnaryPrimitive(stream), op_(op), axis_(axis) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(GatherAxis)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[1].shape()};
  }
  int axis() const { return axis_; }

 private:
  const char* op_;
  int axis_;
};

/**
 * put_along_axis (reduce none) and its accumulating form (reduce sum, the vjp of
 * GatherAxis): out = a, then out[..., indices[..., j, ...], ...] = (or +=) values[..., j, ...].
 * Inputs: a, an integer index array and values (a's dtype), both of a's shape except along
 * `axis`. Output: a's shape and dtype. Only `none` and `sum` are supported.
 */
class ScatterAxis : public UnaryPrimitive {
 public:
  ScatterAxis(Stream stream, const char* op, ScatterReduce reduce, int axis)
      : UnaryPrimitive(stream), op_(op), reduce_(reduce), axis_(axis) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(ScatterAxis)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  KILN_PRIMITIVE_SAME_SHAPE()
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  ScatterReduce reduce() const { return reduce_; }
  int axis() const { return axis_; }

 private:
  const char* op_;
  ScatterReduce reduce_;
  int axis_;
};

namespace detail {

/** Builds the scatter of `reduce` kind with the checks of the public scatter ops. */
array scatter_reduce(ScatterReduce reduce, const array& a, const std::vector<array>& indices,
                     const array& updates, const std::vector<int>& axes, StreamOrDevice s = {});

/** put_along_axis with `reduce` none or sum (the latter has no public op: it is the vjp
 * of take_along_axis). */
array scatter_along_axis(ScatterReduce reduce, const array& a, const array& indices,
                         const array& values, int axis, StreamOrDevice s = {});

}  // namespace detail

}  // namespace kiln
