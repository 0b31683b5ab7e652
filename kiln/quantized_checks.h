// Argument checks and the node builder shared by the quantization front ends
// (kiln/quantized.cpp, kiln/quantized_mm.cpp); not part of the public API.
#pragma once

#include <optional>
#include <string>

#include "kiln/array.h"
#include "kiln/primitives_quantized.h"

namespace kiln::detail {

/** Resolves the defaults of `mode` and checks group size and bits against it
 * (std::invalid_argument "[tag] ..."). */
QuantParams quant_params(const char* tag, const std::string& mode_name,
                         std::optional<int> group_size, std::optional<int> bits);

/** Checks an nvfp4 global scale: a floating scalar, or (when `per_matrix` is given) one per
 * matrix of w, of that batch shape. */
void check_global_scale(const char* tag, const QuantParams& p, const std::optional<array>& g,
                        const Shape* per_matrix = nullptr);

/** Checks scales (and biases) against the packed w: same leading axes, last axis
 * w.last * 32 / bits / group_size; dtypes as the mode wants. */
void check_scales(const char* tag, const array& w, const array& scales,
                  const std::optional<array>& biases, const QuantParams& p);

/** MLX's implied bias: a 0-d `biases` f stands for scales * f. */
std::optional<array> implied_bias(const array& scales, const std::optional<array>& biases,
                                  const QuantParams& p, const Stream& s);

/** The QuantizedMatmul node of checked arguments. `global` is a float32 scalar, or one per
 * matrix of w shaped (..., 1, 1) like w's batch axes. */
array quantized_matmul_impl(array x, array w, array scales, std::optional<array> biases,
                            std::optional<array> global, bool transpose, const QuantParams& p,
                            const Stream& s);

}  // namespace kiln::detail
