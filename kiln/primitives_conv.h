// The convolution primitive behind conv1d/2d/3d, conv_general, conv_transpose* and convolve
// (ops_conv.cpp), in MLX's channels-last layouts.
#pragma once

#include <vector>

#include "kiln/primitive.h"

namespace kiln {

/** The geometry of a convolution over D = 1..3 spatial axes (each vector has D entries). */
struct ConvParams {
  std::vector<int> stride, pad_lo, pad_hi, kernel_dilation, input_dilation;
  int groups = 1;
  bool flip = false;
  bool operator==(const ConvParams&) const = default;
};

/**
 * A grouped, strided, dilated, padded cross-correlation (a convolution with `flip`):
 *   y[n, o..., oc] = sum_{k..., c} x~[n, o * stride + k' * kdil - lo, g * Cg + c]
 *                                  * w[oc, k..., c],   k' = flip ? K - 1 - k : k
 * for x (N, I..., C), w (O, K..., Cg), y (N, Out..., O), g = oc / (O / groups), where x~ is x
 * with `input_dilation - 1` zeros between its elements, read as zero outside.
 * The same primitive also evaluates the two derivatives, so that the family is closed under
 * differentiation (each is bilinear in its inputs):
 *  - `Mode::input_grad`: inputs (dy, w), output dx of `other_shape` (x's shape);
 *  - `Mode::weight_grad`: inputs (x, dy), output dw of `other_shape` (w's shape).
 * CPU: im2col + BLAS gemm (backend/cpu/conv.cpp); GPU: cuDNN (backend/cuda/conv.cpp).
 * float32, float64, float16 and bfloat16 (the half types accumulate in float32).
 */
class Convolution : public UnaryPrimitive {
 public:
  enum class Mode { forward, input_grad, weight_grad };

  Convolution(Stream stream, ConvParams params, Mode mode = Mode::forward, Shape other_shape = {})
      : UnaryPrimitive(stream),
        params_(std::move(params)),
        mode_(mode),
        other_shape_(std::move(other_shape)) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Convolution)
  bool is_equivalent(const Primitive& other) const override;
  void print(std::ostream& os) override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  const ConvParams& params() const { return params_; }
  Mode mode() const { return mode_; }
  const Shape& other_shape() const { return other_shape_; }

 private:
  ConvParams params_;
  Mode mode_;
  Shape other_shape_;
};

namespace conv_detail {
/** Output spatial shape of the forward convolution of x (N, I..., C) with w (O, K..., Cg). */
Shape forward_shape(const Shape& x, const Shape& w, const ConvParams& p);
/** The three members of the family as arrays. */
array forward(const array& x, const array& w, const ConvParams& p, const Stream& s);
array input_grad(const array& dy, const array& w, const Shape& x_shape, const ConvParams& p,
                 const Stream& s);
array weight_grad(const array& x, const array& dy, const Shape& w_shape, const ConvParams& p,
                  const Stream& s);
}  // namespace conv_detail

}  // namespace kiln
