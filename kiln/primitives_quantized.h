// Primitives of the quantization family (kiln/quantized.cpp): Quantize, Dequantize and
// QuantizedMatmul, in MLX's packed layout so that weights move between MLX and kiln.
//
// Layout (every mode): element k of a row takes bits [k * bits, (k + 1) * bits) of the row's
// little-endian uint32 words, lowest bits first (MLX packs 3, 5 and 6 bits as bytes, which is
// the same bit stream). affine: w = scale * q + bias per group; mxfp4/nvfp4: q is an e2m1 code
// (value LUT[q]); mxfp8: q is an e4m3 code; their scales are uint8, e8m0 (2^(s - 127), MLX
// reads 0 as 2^-127) for the mx modes and e4m3 for nvfp4 (times global_scale / (448 * 6)
// when one is given).
#pragma once

#include <string>
#include <vector>

#include "kiln/primitive.h"

namespace kiln {

enum class QuantMode { affine, mxfp4, mxfp8, nvfp4 };

/** The mode named `mode`; std::invalid_argument "[tag] Invalid quantization mode ..." else. */
QuantMode quant_mode_from_string(const std::string& tag, const std::string& mode);
const char* quant_mode_name(QuantMode m);

/** Quantization parameters shared by the primitives. */
struct QuantParams {
  QuantMode mode;
  int group_size;
  int bits;
  bool operator==(const QuantParams&) const = default;
};

/**
 * Quantizes the rows (last axis, a multiple of group_size) of w (float16, bfloat16, float32,
 * float64). Inputs: w [, global_scale (float32 scalar, nvfp4)]. Outputs: packed (uint32,
 * last axis K * bits / 32), scales (last axis K / group_size; w's dtype for affine, uint8
 * otherwise) and, for affine, biases. Not differentiable (integer outputs and a rounding).
 */
class Quantize : public Primitive {
 public:
  Quantize(Stream stream, QuantParams p) : Primitive(stream), p_(p) {}
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Quantize)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const QuantParams& params() const { return p_; }

 private:
  QuantParams p_;
};

/**
 * Dequantizes packed rows. Inputs: w (uint32), scales [, biases (affine)] [, global_scale
 * (nvfp4)]; all with the same leading axes. Output: w's shape with K = last * 32 / bits,
 * of the dtype given. Differentiable w.r.t. scales and biases (affine).
 */
class Dequantize : public UnaryPrimitive {
 public:
  Dequantize(Stream stream, QuantParams p, bool has_global_scale, Dtype out)
      : UnaryPrimitive(stream), p_(p), global_(has_global_scale), out_(out) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Dequantize)
  friend struct ExportAccess;  // saves the parameters (kiln/export_state.h)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const QuantParams& params() const { return p_; }
  bool has_global_scale() const { return global_; }

 private:
  QuantParams p_;
  bool global_;
  Dtype out_;
};

/**
 * x @ dequantize(w).T (transpose) or x @ dequantize(w). Inputs: x (..., M, K), w, scales
 * [, biases] [, global_scale], with equal batch axes (the op broadcasts them; zero strides
 * are read as such). Output (..., M, N) of the op's dtype. Accumulates in float32 (float64
 * for float64). vjp w.r.t. x (the same product with the other transposition), scales and
 * biases (affine); not w.r.t. the packed weights.
 */
class QuantizedMatmul : public UnaryPrimitive {
 public:
  QuantizedMatmul(Stream stream, QuantParams p, bool transpose, bool has_global_scale)
      : UnaryPrimitive(stream), p_(p), transpose_(transpose), global_(has_global_scale) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(QuantizedMatmul)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const QuantParams& params() const { return p_; }
  bool transpose() const { return transpose_; }
  bool has_global_scale() const { return global_; }

 private:
  QuantParams p_;
  bool transpose_;
  bool global_;
};

}  // namespace kiln
