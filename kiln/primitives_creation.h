// Creation primitives: arrays computed from parameters alone (arange, linspace, eye) and the
// triangular masks of tril/triu. `full`, `zeros` and `ones` need no primitive of their own:
// they are copy(broadcast_to(astype(vals))).
#pragma once

#include "kiln/primitive.h"

namespace kiln {

/**
 * out[i] = start + i * step for the output's length. Floating and complex outputs compute
 * in float64 and round once; integral outputs follow NumPy: first = int(start), delta =
 * int(start + step) - first, out[i] = first + i * delta (the op checks the range fits).
 * No inputs, so nothing to differentiate or batch.
 */
class Arange : public UnaryPrimitive {
 public:
  Arange(Stream stream, double start, double step, int size, Dtype dtype)
      : UnaryPrimitive(stream), start_(start), step_(step), size_(size), dtype_(dtype) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Arange)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>&) override;
  double start() const { return start_; }
  double step() const { return step_; }

 private:
  double start_;
  double step_;
  int size_;
  Dtype dtype_;
};

/**
 * `num` evenly spaced values over [start, stop]: start + i * (stop - start) / (num - 1),
 * the last exactly `stop` (as NumPy), computed in float64 and converted like astype
 * (integers truncate, as MLX). No inputs.
 */
class Linspace : public UnaryPrimitive {
 public:
  Linspace(Stream stream, double start, double stop, int num, Dtype dtype)
      : UnaryPrimitive(stream), start_(start), stop_(stop), num_(num), dtype_(dtype) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Linspace)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>&) override;

 private:
  double start_;
  double stop_;
  int num_;
  Dtype dtype_;
};

/** An (n, m) matrix with ones where column - row == k, zeros elsewhere. No inputs. */
class Eye : public UnaryPrimitive {
 public:
  Eye(Stream stream, int n, int m, int k, Dtype dtype)
      : UnaryPrimitive(stream), n_(n), m_(m), k_(k), dtype_(dtype) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Eye)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>&) override;
  int k() const { return k_; }

 private:
  int n_;
  int m_;
  int k_;
  Dtype dtype_;
};

/**
 * The input with the elements outside a triangle of its last two axes set to zero:
 * lower (tril) keeps column - row <= k, upper (triu) keeps column - row >= k. Input rank >= 2.
 */
class Triangular : public UnaryPrimitive {
 public:
  Triangular(Stream stream, int k, bool upper) : UnaryPrimitive(stream), k_(k), upper_(upper) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  const char* name() const override { return upper_ ? "Triu" : "Tril"; }
  bool is_equivalent(const Primitive& other) const override;
  KILN_PRIMITIVE_SAME_SHAPE()
  int k() const { return k_; }
  bool upper() const { return upper_; }

 private:
  int k_;
  bool upper_;
};

}  // namespace kiln
