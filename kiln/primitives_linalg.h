// Linear-algebra primitives: batched matrix products through BLAS gemm.
//
// The ops (kiln/ops_linalg.cpp) promote 1-d operands, check shapes and dtypes, and
// broadcast the batch axes, so both primitives see inputs of equal rank (>= 2) whose batch
// axes equal the output's; a broadcast batch axis arrives as a zero stride (the same
// matrix is reused, never copied).
#pragma once

#include "kiln/primitive.h"

namespace kiln {

/**
 * Matrix product out = a @ b over the last two axes: a (..., M, K), b (..., K, N) ->
 * out (..., M, N), all of one real floating dtype. float32/float64 run one BLAS gemm per
 * batch element (transposed layouts are passed to BLAS as transposes, not copied);
 * float16/bfloat16 are converted to float32, multiplied by sgemm and rounded once.
 */
class Matmul : public UnaryPrimitive {
 public:
  explicit Matmul(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Matmul)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

/**
 * out = alpha * (a @ b) + beta * c with inputs (c, a, b): a and b as for Matmul, c already
 * broadcast to the output's shape (any strides). When beta is 0, c is not read, so NaN or
 * inf in c do not propagate (BLAS and PyTorch semantics).
 */
class AddMM : public UnaryPrimitive {
 public:
  AddMM(Stream stream, float alpha, float beta)
      : UnaryPrimitive(stream), alpha_(alpha), beta_(beta) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(AddMM)
  bool is_equivalent(const Primitive& other) const override;
  void print(std::ostream& os) override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  float alpha() const { return alpha_; }
  float beta() const { return beta_; }

 private:
  float alpha_;
  float beta_;
};

}  // namespace kiln
