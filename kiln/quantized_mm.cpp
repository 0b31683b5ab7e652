// The quantized products beyond quantized_matmul: gather_qmm (experts), qqmm and gather_qqmm
// (x quantized on the fly too), built from the QuantizedMatmul node (kiln/quantized.cpp).
#include "kiln/compile.h"
#include "kiln/ops.h"
#include "kiln/quantized.h"
#include "kiln/quantized_checks.h"
#include "kiln/utils.h"

namespace kiln {

using namespace detail;

namespace {

void check_indices(const char* tag, const std::optional<array>& i) {
  if (i && (!is_integral(i->dtype()) || i->dtype() == bool_)) {
    throw std::invalid_argument(msg("[", tag, "] Indices must be integers; got ", i->dtype(), "."));
  }
}

Shape batch_shape(const array& a) {
  return Shape(a.shape().begin(), a.shape().end() - 2);
}

// Flat indices of every matrix of `a`, shaped as its batch axes (the absent side of a gather).
array all_matrices(const array& a, const Stream& s) {
  const Shape b = batch_shape(a);
  int64_t n = 1;
  for (int v : b) n *= v;
  return reshape(arange(0.0, static_cast<double>(n), uint32, s), b, s);
}

// The rounding of quantize + dequantize in `p`, with the derivative of the identity.
array straight_through(const array& a, const QuantParams& p, const std::optional<array>& global,
                       const Stream& s) {
  const std::string name = quant_mode_name(p.mode);
  auto q = quantize(a, p.group_size, p.bits, name, global, s);
  array d = dequantize(q[0], q[1], std::nullopt, p.group_size, p.bits, name, global, a.dtype(), s);
  return add(a, stop_gradient(subtract(d, a, s), s), s);
}

// qqmm's parameters: the fp modes only.
QuantParams qq_params(const char* tag, const std::string& mode, std::optional<int> group_size,
                      std::optional<int> bits) {
  const QuantParams p = quant_params(tag, mode, group_size, bits);
  if (p.mode == QuantMode::affine) {
    throw std::invalid_argument(msg("[", tag,
                                    "] Only the 'nvfp4', 'mxfp8' and 'mxfp4' modes are "
                                    "supported; got 'affine'."));
  }
  return p;
}

void check_qq_x(const char* tag, const array& x) {
  if (!is_floating_point(x.dtype()) || x.ndim() < 2) {
    throw std::invalid_argument(msg("[", tag,
                                    "] x must be a floating array of at least 2 dimensions; got ",
                                    x.dtype(), " of shape ", shape_str(x.shape()), "."));
  }
}

}  // namespace

// ---------------------------------------------------------------- gather_qmm

array gather_qmm(const array& x, const array& w, const array& scales,
                 const std::optional<array>& biases_in, std::optional<array> lhs_indices,
                 std::optional<array> rhs_indices, bool transpose, std::optional<int> group_size,
                 std::optional<int> bits, const std::string& mode,
                 const std::optional<array>& global_scale, bool /*sorted_indices*/,
                 StreamOrDevice sd) {
  const Stream s = to_stream(sd);
  const QuantParams p = quant_params("gather_qmm", mode, group_size, bits);
  if (x.ndim() < 2 || w.ndim() < 2) {
    throw std::invalid_argument(msg("[gather_qmm] x and w must have at least 2 dimensions; got ",
                                    shape_str(x.shape()), " and ", shape_str(w.shape()), "."));
  }
  const Shape w_batch = batch_shape(w);
  check_global_scale("gather_qmm", p, global_scale, &w_batch);
  const std::optional<array> biases = implied_bias(scales, biases_in, p, s);
  if (!is_floating_point(x.dtype())) {
    throw std::invalid_argument(
        msg("[gather_qmm] Only real floating types are supported but x has type ", x.dtype(), "."));
  }
  check_scales("gather_qmm", w, scales, biases, p);
  check_indices("gather_qmm", lhs_indices);
  check_indices("gather_qmm", rhs_indices);
  // The picked matrices: flatten the batch axes, take the indexed ones (index shape first).
  // (matrix_stack follows the matrices' shape in shapeless compile traces).
  auto pick = [&](const array& a, const std::optional<array>& idx) -> array {
    if (!idx) return a;
    return take(detail::matrix_stack(a, s), *idx, 0, s);
  };
  if (lhs_indices && !rhs_indices) rhs_indices = all_matrices(w, s);
  if (rhs_indices && !lhs_indices) lhs_indices = all_matrices(x, s);
  array xs = pick(x, lhs_indices);
  array ws = pick(w, rhs_indices);
  array ss = pick(scales, rhs_indices);
  std::optional<array> bs;
  if (biases) bs = pick(*biases, rhs_indices);
  std::optional<array> g;
  if (global_scale) {
    g = astype(*global_scale, float32, s);
    if (g->size() == 1) {
      g = reshape(*g, {}, s);
    } else {
      // One scale per expert: picked as the experts are, as (..., 1, 1) matrices.
      Shape sh = g->shape();
      sh.push_back(1);
      sh.push_back(1);
      g = pick(reshape(*g, sh, s), rhs_indices);
    }
  }
  return quantized_matmul_impl(xs, ws, ss, bs, g, transpose, p, s);
}

// ---------------------------------------------------------------- qqmm, gather_qqmm

array qqmm(const array& x, const array& w, const std::optional<array>& scales,
           std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
           const std::optional<array>& global_scale_x, const std::optional<array>& global_scale_w,
           StreamOrDevice sd) {
  const Stream s = to_stream(sd);
  const QuantParams p = qq_params("qqmm", mode, group_size, bits);
  check_global_scale("qqmm", p, global_scale_x);
  check_global_scale("qqmm", p, global_scale_w);
  check_qq_x("qqmm", x);
  array xh = straight_through(x, p, global_scale_x, s);
  if (w.dtype() == uint32) {
    if (!scales) {
      throw std::invalid_argument("[qqmm] Scales must be provided for a quantized w.");
    }
    check_scales("qqmm", w, *scales, std::nullopt, p);
    std::optional<array> g;
    if (global_scale_w) g = astype(reshape(*global_scale_w, {}, s), float32, s);
    return quantized_matmul_impl(xh, w, *scales, std::nullopt, g, true, p, s);
  }
  if (scales) throw std::invalid_argument("[qqmm] Scales are only used with a quantized w.");
  if (!is_floating_point(w.dtype())) {
    throw std::invalid_argument(
        msg("[qqmm] w must be floating or packed uint32; got ", w.dtype(), "."));
  }
  array wh = astype(straight_through(w, p, global_scale_w, s), x.dtype(), s);
  return matmul(xh, swapaxes(wh, -1, -2, s), s);
}

array gather_qqmm(const array& x, const array& w, const std::optional<array>& scales,
                  std::optional<array> lhs_indices, std::optional<array> rhs_indices,
                  std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                  const std::optional<array>& global_scale_x,
                  const std::optional<array>& global_scale_w, bool sorted_indices,
                  StreamOrDevice sd) {
  const Stream s = to_stream(sd);
  const QuantParams p = qq_params("gather_qqmm", mode, group_size, bits);
  check_qq_x("gather_qqmm", x);
  if (w.ndim() < 2) {
    throw std::invalid_argument(
        msg("[gather_qqmm] w must have at least 2 dimensions; got ", shape_str(w.shape()), "."));
  }
  check_global_scale("gather_qqmm", p, global_scale_x);
  check_indices("gather_qqmm", lhs_indices);
  check_indices("gather_qqmm", rhs_indices);
  array xh = straight_through(x, p, global_scale_x, s);
  if (w.dtype() == uint32) {
    if (!scales) {
      throw std::invalid_argument("[gather_qqmm] Scales must be provided for a quantized w.");
    }
    return gather_qmm(xh, w, *scales, std::nullopt, lhs_indices, rhs_indices, true, p.group_size,
                      p.bits, quant_mode_name(p.mode), global_scale_w, sorted_indices, s);
  }
  if (scales) throw std::invalid_argument("[gather_qqmm] Scales are only used with a quantized w.");
  if (!is_floating_point(w.dtype())) {
    throw std::invalid_argument(
        msg("[gather_qqmm] w must be floating or packed uint32; got ", w.dtype(), "."));
  }
  check_global_scale("gather_qqmm", p, global_scale_w);
  array wh = astype(straight_through(w, p, global_scale_w, s), x.dtype(), s);
  return gather_mm(xh, swapaxes(wh, -1, -2, s), lhs_indices, rhs_indices, sorted_indices, s);
}

}  // namespace kiln
