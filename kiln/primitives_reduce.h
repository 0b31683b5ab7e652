// Reductions, scans and sorts: primitives that combine elements along axes.
//
// Reduce and ArgReduce keep the reduced axes with size 1 (the ops squeeze them when
// keepdims is false), so their transforms broadcast against the input without reshapes.
#pragma once

#include <vector>

#include "kiln/primitive.h"

namespace kiln {

/**
 * Reduction over `axes` (sorted, non-negative) with the reduced axes kept as size 1.
 * The output dtype is a parameter: Sum/Prod widen small integers (bool, int8, int16 ->
 * int32; uint8, uint16 -> uint32), and mean asks Sum for float32 from half or integer
 * inputs. Half inputs accumulate in float32, integers in their (wrapping) unsigned type.
 */
class Reduce : public UnaryPrimitive {
 public:
  enum ReduceType { And, Or, Sum, Prod, Max, Min };

  Reduce(Stream stream, ReduceType type, std::vector<int> axes, Dtype out_dtype)
      : UnaryPrimitive(stream), type_(type), axes_(std::move(axes)), out_dtype_(out_dtype) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  const char* name() const override;
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  ReduceType type() const { return type_; }
  const std::vector<int>& axes() const { return axes_; }
  Dtype out_dtype() const { return out_dtype_; }

 private:
  ReduceType type_;
  std::vector<int> axes_;
  Dtype out_dtype_;
};

/** Index (uint32) of the first minimum / maximum along `axis`, kept as size 1. NaN counts
 * as the extreme value (NumPy: the first NaN wins). The output is an integer: its
 * gradient is zero. */
class ArgReduce : public UnaryPrimitive {
 public:
  enum ReduceType { ArgMin, ArgMax };

  ArgReduce(Stream stream, ReduceType type, int axis)
      : UnaryPrimitive(stream), type_(type), axis_(axis) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  const char* name() const override;
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  ReduceType type() const { return type_; }
  int axis() const { return axis_; }

 private:
  ReduceType type_;
  int axis_;
};

/**
 * Cumulative sum / product / max / min / log-sum-exp along `axis`: inclusive (out[i]
 * combines in[0..i]) or exclusive (in[0..i-1], the identity first); `reverse` runs from the
 * end. Same shape as the input. Sum and Prod widen as Sum does; Max, Min and LogAddExp keep
 * the input dtype (LogAddExp takes floating inputs). Half types accumulate in float32.
 */
class Scan : public UnaryPrimitive {
 public:
  enum ReduceType { Sum, Prod, Max, Min, LogAddExp };
  /** The output dtype of a scan of `type` over `in`. */
  static Dtype out_dtype(ReduceType type, Dtype in);

  Scan(Stream stream, ReduceType type, int axis, bool reverse, bool inclusive)
      : UnaryPrimitive(stream),
        type_(type),
        axis_(axis),
        reverse_(reverse),
        inclusive_(inclusive) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_SAME_SHAPE()
  const char* name() const override;
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;

  ReduceType type() const { return type_; }
  int axis() const { return axis_; }
  bool reverse() const { return reverse_; }
  bool inclusive() const { return inclusive_; }

 private:
  // The vjp as the plain transpose (no conjugation); vjp adapts it for complex cotangents.
  std::vector<array> scan_transpose(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<array>& outputs);

  ReduceType type_;
  int axis_;
  bool reverse_;
  bool inclusive_;
};

/** Stable ascending sort along `axis`; NaN sorts last (NumPy). Same shape and dtype. */
class Sort : public UnaryPrimitive {
 public:
  Sort(Stream stream, int axis) : UnaryPrimitive(stream), axis_(axis) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Sort)
  KILN_PRIMITIVE_SAME_SHAPE()
  bool is_equivalent(const Primitive& other) const override;
  int axis() const { return axis_; }

 private:
  int axis_;
};

/** The permutation (uint32) that stably sorts along `axis`, NaN last. Integer output:
 * zero gradient. */
class ArgSort : public UnaryPrimitive {
 public:
  ArgSort(Stream stream, int axis) : UnaryPrimitive(stream), axis_(axis) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(ArgSort)
  KILN_PRIMITIVE_SAME_SHAPE()
  bool is_equivalent(const Primitive& other) const override;
  int axis() const { return axis_; }

 private:
  int axis_;
};

/**
 * exp(x - max) / sum(exp(x - max)) along the last axis, fused: each row is read once and
 * written once (the composite takes about eight passes). Floating inputs only; half types
 * compute in float32 and round once. The softmax op uses it for a single last axis and
 * composes other axis sets from reductions.
 */
class Softmax : public UnaryPrimitive {
 public:
  explicit Softmax(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Softmax)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  KILN_PRIMITIVE_SAME_SHAPE()
};

namespace detail {

/** A Reduce node over `axes` (normalized, sorted, unchecked) with the reduced axes kept as
 * size 1. Used by the ops and by transforms that must keep a node's exact output dtype. */
array reduce_keepdims(const array& a, Reduce::ReduceType type, std::vector<int> axes,
                      Dtype out_dtype, Stream s);

/** The dtype Sum, Prod and the scans produce from `d`. */
Dtype sum_dtype(Dtype d);

}  // namespace detail

}  // namespace kiln
