// Quantization ops (kiln/quantized.cpp), MLX 0.32's names, arguments and packed formats.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln {

// ---------------------------------------------------------------- quantization (quantized.cpp)
// MLX's formats, bit for bit (see primitives_quantized.h): modes "affine" (bits 1-6 and 8,
// groups of 32, 64 or 128; default 64 and 4), "mxfp4" (32, 4), "mxfp8" (32, 8), "nvfp4"
// (16, 4). Bad modes, bits, group sizes or shapes throw std::invalid_argument "[op] ...".

/** Quantizes the groups of the last axis of w (ndim >= 2, floating): {packed uint32,
 * scales, biases} for affine, {packed, uint8 scales} for the other modes. */
std::vector<array> quantize(const array& w, std::optional<int> group_size = std::nullopt,
                            std::optional<int> bits = std::nullopt,
                            const std::string& mode = "affine",
                            const std::optional<array>& global_scale = std::nullopt,
                            StreamOrDevice s = {});
/** The values quantize packed, as `dtype` (default: the scales' dtype for affine, else
 * bfloat16). */
array dequantize(const array& w, const array& scales,
                 const std::optional<array>& biases = std::nullopt,
                 std::optional<int> group_size = std::nullopt,
                 std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                 const std::optional<array>& global_scale = std::nullopt,
                 std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
/** x @ dequantize(w).T (transpose) or x @ dequantize(w), batch axes broadcast; x (..., K)
 * floating. Output dtype: promote(x, scales) for affine, x's for the others. */
array quantized_matmul(const array& x, const array& w, const array& scales,
                       const std::optional<array>& biases = std::nullopt, bool transpose = true,
                       std::optional<int> group_size = std::nullopt,
                       std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                       StreamOrDevice s = {});
/** quantized_matmul of the matrices of x and w (with scales, biases) picked by
 * lhs_indices / rhs_indices along their batch axes (MLX's gather_qmm, for experts). nvfp4's
 * global_scale is a scalar or one per matrix of w (shape w.shape[:-2], picked with w). */
array gather_qmm(const array& x, const array& w, const array& scales,
                 const std::optional<array>& biases = std::nullopt,
                 std::optional<array> lhs_indices = std::nullopt,
                 std::optional<array> rhs_indices = std::nullopt, bool transpose = true,
                 std::optional<int> group_size = std::nullopt,
                 std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                 const std::optional<array>& global_scale = std::nullopt,
                 bool sorted_indices = false, StreamOrDevice s = {});

/** x @ w.T with x quantized on the fly (quantize then dequantize in `mode`) and w used as
 * is when packed (uint32, with `scales`), else quantized on the fly too (MLX's qqmm; fp
 * modes). Gradients pass straight through the rounding of x (and of a float w). */
array qqmm(const array& x, const array& w, const std::optional<array>& scales = std::nullopt,
           std::optional<int> group_size = std::nullopt, std::optional<int> bits = std::nullopt,
           const std::string& mode = "nvfp4",
           const std::optional<array>& global_scale_x = std::nullopt,
           const std::optional<array>& global_scale_w = std::nullopt, StreamOrDevice s = {});

/** qqmm of the matrices of x and w picked by lhs_indices / rhs_indices (MLX's gather_qqmm):
 * x rounded through `mode` (global_scale_x: a scalar), w packed (with `scales`; nvfp4's
 * global_scale_w a scalar or one per matrix of w) or rounded on the fly. */
array gather_qqmm(const array& x, const array& w, const std::optional<array>& scales = std::nullopt,
                  std::optional<array> lhs_indices = std::nullopt,
                  std::optional<array> rhs_indices = std::nullopt,
                  std::optional<int> group_size = std::nullopt,
                  std::optional<int> bits = std::nullopt, const std::string& mode = "nvfp4",
                  const std::optional<array>& global_scale_x = std::nullopt,
                  const std::optional<array>& global_scale_w = std::nullopt,
                  bool sorted_indices = false, StreamOrDevice s = {});

}  // namespace kiln
