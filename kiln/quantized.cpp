// Quantization ops (quantize, dequantize, quantized_matmul): argument checks in MLX's words,
// the nodes they build and the transforms of their primitives (gather_qmm, qqmm and
// gather_qqmm: quantized_mm.cpp). Kernels: backend/cpu/quantized.cpp,
// backend/cuda/quantized.cpp.
#include <algorithm>
#include <numeric>

#include "kiln/compile.h"
#include "kiln/ops.h"
#include "kiln/primitives_compile.h"
#include "kiln/primitives_quantized.h"
#include "kiln/quantized.h"
#include "kiln/quantized_checks.h"
#include "kiln/utils.h"

namespace kiln {

QuantMode quant_mode_from_string(const std::string& tag, const std::string& mode) {
  if (mode == "affine") return QuantMode::affine;
  if (mode == "mxfp4") return QuantMode::mxfp4;
  if (mode == "mxfp8") return QuantMode::mxfp8;
  if (mode == "nvfp4") return QuantMode::nvfp4;
  throw std::invalid_argument(msg("[", tag, "] Invalid quantization mode '", mode, "'."));
}

const char* quant_mode_name(QuantMode m) {
  switch (m) {
    case QuantMode::affine:
      return "affine";
    case QuantMode::mxfp4:
      return "mxfp4";
    case QuantMode::mxfp8:
      return "mxfp8";
    case QuantMode::nvfp4:
      return "nvfp4";
  }
  return "?";
}

namespace detail {

// Resolves the defaults of `mode` and checks group size and bits against it.
QuantParams quant_params(const char* tag, const std::string& mode_name,
                         std::optional<int> group_size, std::optional<int> bits) {
  const QuantMode mode = quant_mode_from_string(tag, mode_name);
  if (mode == QuantMode::affine) {
    const int gs = group_size.value_or(64), b = bits.value_or(4);
    if (gs != 32 && gs != 64 && gs != 128) {
      throw std::invalid_argument(msg("[", tag, "] The requested group size ", gs,
                                      " is not supported. The supported group sizes are 32, 64, "
                                      "and 128."));
    }
    if (b < 1 || b > 8 || b == 7) {
      throw std::invalid_argument(msg("[", tag, "] The requested number of bits ", b,
                                      " is not supported. The supported bits are 1, 2, 3, 4, 5, 6 "
                                      "and 8."));
    }
    return {mode, gs, b};
  }
  const int want_gs = mode == QuantMode::nvfp4 ? 16 : 32;
  const int want_bits = mode == QuantMode::mxfp8 ? 8 : 4;
  const int gs = group_size.value_or(want_gs), b = bits.value_or(want_bits);
  if (gs != want_gs) {
    throw std::invalid_argument(msg("[", tag, "] ", mode_name, " quantization requires group size ",
                                    want_gs, " but got ", gs, "."));
  }
  if (b != want_bits) {
    throw std::invalid_argument(msg("[", tag, "] ", mode_name, " quantization requires bits to be ",
                                    want_bits, " but got ", b, "."));
  }
  return {mode, gs, b};
}

void check_global_scale(const char* tag, const QuantParams& p, const std::optional<array>& g,
                        const Shape* per_matrix) {
  if (!g) return;
  if (p.mode != QuantMode::nvfp4) {
    throw std::invalid_argument(msg("[", tag,
                                    "] Global scale is only supported for 'nvfp4' mode; "
                                    "got mode '",
                                    quant_mode_name(p.mode), "'."));
  }
  const bool shape_ok = g->size() == 1 || (per_matrix && g->shape() == *per_matrix);
  if (!shape_ok || !is_floating_point(g->dtype())) {
    throw std::invalid_argument(msg(
        "[", tag, "] The global scale must be a floating scalar",
        per_matrix ? msg(" or have the batch shape of w ", shape_str(*per_matrix)) : std::string(),
        "; got ", g->dtype(), " of shape ", shape_str(g->shape()), "."));
  }
}

// Checks scales (and biases) against the packed w: same leading axes, last axis
// w.last * 32 / bits / group_size; dtypes as the mode wants.
void check_scales(const char* tag, const array& w, const array& scales,
                  const std::optional<array>& biases, const QuantParams& p) {
  if (w.dtype() != uint32) {
    throw std::invalid_argument(
        msg("[", tag, "] The weight matrix should be uint32 but received ", w.dtype()));
  }
  if (p.mode == QuantMode::affine) {
    if (!biases) {
      throw std::invalid_argument(
          msg("[", tag, "] Biases must be provided for affine quantization."));
    }
    if (biases->shape() != scales.shape()) {
      throw std::invalid_argument(msg("[", tag,
                                      "] Scales and biases should have the same shape. Received "
                                      "scales with shape ",
                                      shape_str(scales.shape()), " and biases with ",
                                      shape_str(biases->shape())));
    }
    if (!is_floating_point(scales.dtype()) || !is_floating_point(biases->dtype())) {
      throw std::invalid_argument(msg("[", tag, "] Scales and biases must be floating; got ",
                                      scales.dtype(), " and ", biases->dtype(), "."));
    }
  } else {
    if (biases) {
      throw std::invalid_argument(msg("[", tag, "] Biases must be null for quantization mode '",
                                      quant_mode_name(p.mode), "'."));
    }
    if (scales.dtype() != uint8) {
      throw std::invalid_argument(
          msg("[", tag, "] Scale type must be uint8 but received type ", scales.dtype(), "."));
    }
  }
  const int64_t k = w.ndim() ? static_cast<int64_t>(w.shape(-1)) * 32 / p.bits : 0;
  bool ok = w.ndim() >= 1 && scales.ndim() == w.ndim() &&
            std::equal(w.shape().begin(), w.shape().end() - 1, scales.shape().begin()) &&
            (static_cast<int64_t>(w.shape(-1)) * 32) % p.bits == 0 &&
            static_cast<int64_t>(scales.shape(-1)) * p.group_size == k;
  if (!ok) {
    throw std::invalid_argument(msg("[", tag,
                                    "] The shapes of the weight and scales are incompatible based "
                                    "on bits and group_size. w.shape() == ",
                                    shape_str(w.shape()),
                                    " and scales.shape() == ", shape_str(scales.shape()),
                                    " with group_size=", p.group_size, " and bits=", p.bits));
  }
}

// MLX's implied bias: a 0-d `biases` f stands for scales * T(f) (T the scales' dtype), with
// f held constant under every transform.
std::optional<array> implied_bias(const array& scales, const std::optional<array>& biases,
                                  const QuantParams& p, const Stream& s) {
  if (!biases || biases->ndim() != 0 || p.mode != QuantMode::affine) return biases;
  return multiply(scales, stop_gradient(astype(*biases, scales.dtype(), s), s), s);
}

}  // namespace detail

using namespace detail;

namespace {

Shape with_last(Shape s, int v) {
  s.back() = v;
  return s;
}

}  // namespace

// ---------------------------------------------------------------- quantize

std::vector<array> quantize(const array& w, std::optional<int> group_size, std::optional<int> bits,
                            const std::string& mode, const std::optional<array>& global_scale,
                            StreamOrDevice sd) {
  const Stream s = to_stream(sd);
  const QuantParams p = quant_params("quantize", mode, group_size, bits);
  check_global_scale("quantize", p, global_scale);
  if (!is_floating_point(w.dtype())) {
    throw std::invalid_argument(msg(
        "[quantize] Only real floating types can be quantized but w has type ", w.dtype(), "."));
  }
  if (w.ndim() < 2) {
    throw std::invalid_argument(
        msg("[quantize] The matrix to be quantized must have at least 2 dimension but it has only ",
            w.ndim(), "."));
  }
  if (w.shape(-1) % p.group_size != 0) {
    throw std::invalid_argument(
        msg("[quantize] The last dimension of the matrix needs to be divisible by the quantization "
            "group size ",
            p.group_size, ". However the provided  matrix has shape ", shape_str(w.shape())));
  }
  std::vector<array> inputs{w};
  if (global_scale) inputs.push_back(astype(reshape(*global_scale, {}, s), float32, s));
  const int k = w.shape(-1);
  const Shape packed =
      with_last(w.shape(), static_cast<int>(static_cast<int64_t>(k) * p.bits / 32));
  const Shape groups = with_last(w.shape(), k / p.group_size);
  auto prim = std::make_shared<Quantize>(s, p);
  if (p.mode == QuantMode::affine) {
    return array::make_arrays({packed, groups, groups}, {uint32, w.dtype(), w.dtype()}, prim,
                              inputs);
  }
  return array::make_arrays({packed, groups}, {uint32, uint8}, prim, inputs);
}

bool Quantize::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Quantize*>(&other);
  return o && o->p_ == p_;
}

std::vector<Shape> Quantize::output_shapes(const std::vector<array>& inputs) {
  const array& w = inputs[0];
  const int k = w.shape(-1);
  const Shape packed =
      with_last(w.shape(), static_cast<int>(static_cast<int64_t>(k) * p_.bits / 32));
  const Shape groups = with_last(w.shape(), k / p_.group_size);
  if (p_.mode == QuantMode::affine) return {packed, groups, groups};
  return {packed, groups};
}

std::vector<array> Quantize::jvp(const std::vector<array>&, const std::vector<array>&,
                                 const std::vector<int>&) {
  throw std::invalid_argument("[quantize] Quantization is not differentiable.");
}

std::vector<array> Quantize::vjp(const std::vector<array>&, const std::vector<array>&,
                                 const std::vector<int>&, const std::vector<array>&) {
  throw std::invalid_argument("[quantize] Quantization is not differentiable.");
}

std::pair<std::vector<array>, std::vector<int>> Quantize::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  if (axes.size() > 1 && axes[1] >= 0) {
    throw std::invalid_argument("[quantize] vmap over the global scale is not supported.");
  }
  const int ax = axes[0];
  const int nd = static_cast<int>(inputs[0].ndim());
  // Rows are independent: a batch axis anywhere but last is just another leading axis.
  array w = ax == nd - 1 ? moveaxis(inputs[0], ax, 0, stream()) : inputs[0];
  const int out_ax = ax == nd - 1 ? 0 : ax;
  std::optional<array> g;
  if (inputs.size() > 1) g = inputs[1];
  auto outs = quantize(w, p_.group_size, p_.bits, quant_mode_name(p_.mode), g, stream());
  return {outs, std::vector<int>(outs.size(), out_ax)};
}

// ---------------------------------------------------------------- dequantize

array dequantize(const array& w, const array& scales, const std::optional<array>& biases_in,
                 std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                 const std::optional<array>& global_scale, std::optional<Dtype> dtype,
                 StreamOrDevice sd) {
  const Stream s = to_stream(sd);
  const QuantParams p = quant_params("dequantize", mode, group_size, bits);
  const std::optional<array> biases = implied_bias(scales, biases_in, p, s);
  check_global_scale("dequantize", p, global_scale);
  if (w.dtype() != uint32) {
    throw std::invalid_argument(
        msg("[dequantize] The matrix should be given as a uint32; got ", w.dtype(), "."));
  }
  if (w.ndim() < 1) {
    throw std::invalid_argument("[dequantize] The matrix must have at least one dimension.");
  }
  if (p.mode == QuantMode::affine && !biases) {
    throw std::invalid_argument("[dequantize] Biases must be provided for affine quantization.");
  }
  const int64_t k = static_cast<int64_t>(w.shape(-1)) * 32 / p.bits;
  try {
    check_scales("dequantize", w, scales, biases, p);
  } catch (const std::invalid_argument&) {
    const array& sb = scales;
    if (p.mode == QuantMode::affine && biases && biases->shape() == scales.shape() &&
        is_floating_point(scales.dtype()) && is_floating_point(biases->dtype()) &&
        w.dtype() == uint32) {
      throw std::invalid_argument(
          msg("[dequantize] Shape of scales and biases does not match the matrix given the "
              "quantization parameters. Provided matrix of shape ",
              shape_str(w.shape()), " and scales/biases of shape ", shape_str(sb.shape()),
              " with group_size=", p.group_size, " and bits=", p.bits, "."));
    }
    throw;
  }
  Dtype out = dtype.value_or(
      p.mode == QuantMode::affine ? promote_types(scales.dtype(), biases->dtype()) : bfloat16);
  if (!is_floating_point(out)) {
    throw std::invalid_argument(
        msg("[dequantize] The output dtype must be floating; got ", out, "."));
  }
  std::vector<array> inputs{w};
  if (p.mode == QuantMode::affine) {
    inputs.push_back(astype(scales, out, s));
    inputs.push_back(astype(*biases, out, s));
  } else {
    inputs.push_back(scales);
  }
  if (global_scale) inputs.push_back(astype(reshape(*global_scale, {}, s), float32, s));
  Shape shape = with_last(w.shape(), static_cast<int>(k));
  return array(std::move(shape), out,
               std::make_shared<Dequantize>(s, p, global_scale.has_value(), out),
               std::move(inputs));
}

bool Dequantize::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Dequantize*>(&other);
  return o && o->p_ == p_ && o->global_ == global_;
}

std::vector<Shape> Dequantize::output_shapes(const std::vector<array>& inputs) {
  return {with_last(inputs[0].shape(),
                    static_cast<int>(static_cast<int64_t>(inputs[0].shape(-1)) * 32 / p_.bits))};
}

namespace {

// The codes of w as `dtype` (scale 1, bias 0): the derivative of an affine value w.r.t. its
// scale.
array affine_codes(const array& w, const QuantParams& p, Dtype dtype, const Stream& s) {
  const Shape gshape = with_last(
      w.shape(), static_cast<int>(static_cast<int64_t>(w.shape(-1)) * 32 / p.bits / p.group_size));
  return dequantize(w, ones(gshape, dtype, s), zeros(gshape, dtype, s), p.group_size, p.bits,
                    "affine", std::nullopt, dtype, s);
}

// Sums the last axis of g (..., K) by groups: (..., K / group_size).
array group_sum(const array& g, int group_size, const Stream& s) {
  Shape sh = g.shape();
  sh.back() /= group_size;
  sh.push_back(group_size);
  return sum(reshape(g, sh, s), -1, false, s);
}

}  // namespace

std::vector<array> Dequantize::vjp(const std::vector<array>& primals,
                                   const std::vector<array>& cotangents,
                                   const std::vector<int>& argnums, const std::vector<array>&) {
  const Stream s = stream();
  std::vector<array> out;
  for (int a : argnums) {
    if (a == 0 || p_.mode != QuantMode::affine || a > 2) {
      throw std::invalid_argument(
          "[dequantize] Cannot calculate the VJP with respect to the quantized matrix or the "
          "fp scales.");
    }
    const array& g = cotangents[0];
    if (a == 1) {
      array q = affine_codes(primals[0], p_, g.dtype(), s);
      out.push_back(astype(group_sum(multiply(g, q, s), p_.group_size, s), primals[1].dtype(), s));
    } else {
      out.push_back(astype(group_sum(g, p_.group_size, s), primals[2].dtype(), s));
    }
  }
  return out;
}

std::vector<array> Dequantize::jvp(const std::vector<array>& primals,
                                   const std::vector<array>& tangents,
                                   const std::vector<int>& argnums) {
  const Stream s = stream();
  std::optional<array> acc;
  for (size_t i = 0; i < argnums.size(); ++i) {
    const int a = argnums[i];
    if (a == 0 || p_.mode != QuantMode::affine || a > 2) {
      throw std::invalid_argument(
          "[dequantize] Cannot calculate the JVP with respect to the quantized matrix or the "
          "fp scales.");
    }
    Shape rep = primals[1].shape();
    rep.push_back(p_.group_size);
    Shape outshape = with_last(primals[1].shape(), primals[1].shape(-1) * p_.group_size);
    array t = reshape(broadcast_to(expand_dims(tangents[i], -1, s), rep, s), outshape, s);
    if (a == 1) t = multiply(t, affine_codes(primals[0], p_, t.dtype(), s), s);
    acc = acc ? add(*acc, t, s) : t;
  }
  return {*acc};
}

std::pair<std::vector<array>, std::vector<int>> Dequantize::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  const Stream s = stream();
  const size_t nq = p_.mode == QuantMode::affine ? 3 : 2;
  if (global_ && axes.size() > nq && axes[nq] >= 0) {
    throw std::invalid_argument("[dequantize] vmap over the global scale is not supported.");
  }
  int b = 1;
  for (size_t i = 0; i < nq; ++i)
    if (axes[i] >= 0) b = inputs[i].shape(axes[i]);
  std::vector<array> in;
  for (size_t i = 0; i < nq; ++i) {
    array a = inputs[i];
    if (axes[i] >= 0) {
      a = moveaxis(a, axes[i], 0, s);
    } else {
      Shape sh = a.shape();
      sh.insert(sh.begin(), b);
      a = broadcast_to(expand_dims(a, 0, s), sh, s);
    }
    in.push_back(a);
  }
  std::optional<array> biases;
  if (nq == 3) biases = in[2];
  std::optional<array> g;
  if (global_) g = inputs[nq];
  array out = dequantize(in[0], in[1], biases, p_.group_size, p_.bits, quant_mode_name(p_.mode), g,
                         out_, s);
  return {{out}, {0}};
}

// ---------------------------------------------------------------- quantized_matmul

namespace detail {

array quantized_matmul_impl(array x, array w, array scales, std::optional<array> biases,
                            std::optional<array> global, bool transpose, const QuantParams& p,
                            const Stream& s) {
  const bool vec = x.ndim() == 1;
  if (vec) x = expand_dims(x, 0, s);
  const int64_t wk = static_cast<int64_t>(w.shape(-1)) * 32 / p.bits;
  const int K = transpose ? static_cast<int>(wk) : w.shape(-2);
  const int N = transpose ? w.shape(-2) : static_cast<int>(wk);
  if (x.shape(-1) != K) {
    throw std::invalid_argument(
        msg("[quantized_matmul] Last dimension of first input with shape (..., ", x.shape(-1),
            ") does not match the expanded quantized matrix (", K, ", ", N,
            ") computed from shape ", shape_str(w.shape()), " with group_size=", p.group_size,
            ", bits=", p.bits, " and transpose=", transpose ? "true" : "false"));
  }
  const Dtype out_dtype =
      p.mode == QuantMode::affine
          ? promote_types(x.dtype(), promote_types(scales.dtype(), biases->dtype()))
          : x.dtype();
  x = astype(x, out_dtype, s);
  if (p.mode == QuantMode::affine) {
    scales = astype(scales, out_dtype, s);
    biases = astype(*biases, out_dtype, s);
  }
  // Broadcast the batch axes; a 2-d w keeps x's rows together (one matrix of many rows),
  // except in shapeless compile traces, where the batch axes stay so replays can change them.
  const bool shapeless = detail::in_shapeless_trace();
  array out = [&] {
    if (w.ndim() == 2 && !(shapeless && x.ndim() > 2)) {
      Shape xs = x.shape();
      array x2 = reshape(x, {-1, K}, s);
      std::vector<array> in{x2, w, scales};
      if (biases) in.push_back(*biases);
      // One matrix: a per-matrix scale (1, 1) is its scalar.
      if (global) in.push_back(global->ndim() ? reshape(*global, {}, s) : *global);
      Shape os = xs;
      os.back() = N;
      array o({x2.shape(0), N}, out_dtype,
              std::make_shared<QuantizedMatmul>(s, p, transpose, global.has_value()),
              std::move(in));
      return reshape(o, os, s);
    }
    Shape xb(x.shape().begin(), x.shape().end() - 2), wb(w.shape().begin(), w.shape().end() - 2);
    Shape batch = broadcast_shapes(xb, wb, "quantized_matmul");
    const array x0 = x;
    auto bc = [&](const array& a) {
      Shape sh = batch;
      sh.push_back(a.shape(-2));
      sh.push_back(a.shape(-1));
      if (!shapeless) return broadcast_to(a, sh, s);
      // To the batch axes of x and w as a replay finds them.
      return array(sh, a.dtype(), std::make_shared<BroadcastLike>(s, 2),
                   {a, stop_gradient(x0, s), stop_gradient(w, s)});
    };
    std::vector<array> in{bc(x), bc(w), bc(scales)};
    if (biases) in.push_back(bc(*biases));
    if (global) in.push_back(global->ndim() ? bc(*global) : *global);
    Shape os = batch;
    os.push_back(x.shape(-2));
    os.push_back(N);
    return array(os, out_dtype,
                 std::make_shared<QuantizedMatmul>(s, p, transpose, global.has_value()),
                 std::move(in));
  }();
  return vec ? squeeze(out, -2, s) : out;
}

}  // namespace detail

array quantized_matmul(const array& x, const array& w, const array& scales,
                       const std::optional<array>& biases, bool transpose,
                       std::optional<int> group_size, std::optional<int> bits,
                       const std::string& mode, StreamOrDevice sd) {
  const Stream s = to_stream(sd);
  const QuantParams p = quant_params("quantized_matmul", mode, group_size, bits);
  if (w.dtype() != uint32) {
    throw std::invalid_argument(
        msg("[quantized_matmul] The weight matrix should be uint32 but received ", w.dtype()));
  }
  if (w.ndim() < 2) {
    throw std::invalid_argument(
        msg("[quantized_matmul] The quantized weight must have at least 2 "
            "dimensions; got shape ",
            shape_str(w.shape()), "."));
  }
  if (x.ndim() < 1) {
    throw std::invalid_argument("[quantized_matmul] The input must have at least 1 dimension.");
  }
  if (!is_floating_point(x.dtype())) {
    throw std::invalid_argument(
        msg("[quantized_matmul] Only real floating types are supported but x has type ", x.dtype(),
            "."));
  }
  const std::optional<array> b = implied_bias(scales, biases, p, s);
  check_scales("quantized_matmul", w, scales, b, p);
  return quantized_matmul_impl(x, w, scales, b, std::nullopt, transpose, p, s);
}

bool QuantizedMatmul::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const QuantizedMatmul*>(&other);
  return o && o->p_ == p_ && o->transpose_ == transpose_ && o->global_ == global_;
}

std::vector<Shape> QuantizedMatmul::output_shapes(const std::vector<array>& inputs) {
  const array& x = inputs[0];
  const array& w = inputs[1];
  const int wk = static_cast<int>(static_cast<int64_t>(w.shape(-1)) * 32 / p_.bits);
  // Shapeless replays give x shapes the op never checked.
  const int K = transpose_ ? wk : w.shape(-2);
  if (x.shape(-1) != K) {
    throw std::invalid_argument(msg("[quantized_matmul] Last dimension of x ", shape_str(x.shape()),
                                    " does not match the expanded quantized matrix's ", K, "."));
  }
  Shape o = x.shape();
  o.back() = transpose_ ? w.shape(-2) : wk;
  return {o};
}

namespace {

std::optional<array> opt_input(const std::vector<array>& in, size_t i) {
  if (i < in.size()) return in[i];
  return std::nullopt;
}

}  // namespace

std::vector<array> QuantizedMatmul::vjp(const std::vector<array>& primals,
                                        const std::vector<array>& cotangents,
                                        const std::vector<int>& argnums,
                                        const std::vector<array>&) {
  const Stream s = stream();
  const bool affine = p_.mode == QuantMode::affine;
  const array& g = cotangents[0];
  std::optional<array> biases = affine ? opt_input(primals, 3) : std::nullopt;
  std::optional<array> global = global_ ? opt_input(primals, affine ? 4 : 3) : std::nullopt;
  std::vector<array> out;
  for (int a : argnums) {
    if (a == 0) {
      out.push_back(
          quantized_matmul_impl(g, primals[1], primals[2], biases, global, !transpose_, p_, s));
    } else if (affine && (a == 2 || a == 3)) {
      // d(dequantized w): g^T x (transpose) or x^T g, then reduced per group.
      array dw = transpose_ ? matmul(swapaxes(g, -1, -2, s), primals[0], s)
                            : matmul(swapaxes(primals[0], -1, -2, s), g, s);
      if (a == 2) dw = multiply(dw, affine_codes(primals[1], p_, dw.dtype(), s), s);
      out.push_back(astype(group_sum(dw, p_.group_size, s), primals[a].dtype(), s));
    } else {
      throw std::invalid_argument("[QuantizedMatmul::vjp] no gradient wrt the quantized weights.");
    }
  }
  return out;
}

std::vector<array> QuantizedMatmul::jvp(const std::vector<array>& primals,
                                        const std::vector<array>& tangents,
                                        const std::vector<int>& argnums) {
  const Stream s = stream();
  const bool affine = p_.mode == QuantMode::affine;
  std::optional<array> biases = affine ? opt_input(primals, 3) : std::nullopt;
  std::optional<array> global = global_ ? opt_input(primals, affine ? 4 : 3) : std::nullopt;
  std::optional<array> acc;
  for (size_t i = 0; i < argnums.size(); ++i) {
    const int a = argnums[i];
    array t = [&] {
      if (a == 0) {
        return quantized_matmul_impl(tangents[i], primals[1], primals[2], biases, global,
                                     transpose_, p_, s);
      }
      if (affine && (a == 2 || a == 3)) {
        const array& sc = primals[2];
        array ts = a == 2 ? tangents[i] : zeros_like(sc, s);
        array tb = a == 3 ? tangents[i] : zeros_like(sc, s);
        array dw = dequantize(primals[1], ts, tb, p_.group_size, p_.bits, "affine", std::nullopt,
                              primals[0].dtype(), s);
        return matmul(primals[0], transpose_ ? swapaxes(dw, -1, -2, s) : dw, s);
      }
      throw std::invalid_argument("[QuantizedMatmul::jvp] no gradient wrt the quantized weights.");
    }();
    acc = acc ? add(*acc, t, s) : t;
  }
  return {*acc};
}

std::pair<std::vector<array>, std::vector<int>> QuantizedMatmul::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  const Stream s = stream();
  const bool affine = p_.mode == QuantMode::affine;
  const size_t nq = affine ? 4 : 3;
  if (global_ && axes.size() > nq && axes[nq] >= 0) {
    throw std::invalid_argument("[quantized_matmul] vmap over the global scale is not supported.");
  }
  // The weight, scales and biases share their batch axes: give the unbatched ones the batch.
  int b = 1;
  for (size_t i = 1; i < nq; ++i)
    if (axes[i] >= 0) b = inputs[i].shape(axes[i]);
  bool wb = false;
  for (size_t i = 1; i < nq; ++i) wb |= axes[i] >= 0;
  std::vector<array> q;
  for (size_t i = 1; i < nq; ++i) {
    array a = inputs[i];
    if (axes[i] >= 0) {
      a = moveaxis(a, axes[i], 0, s);
    } else if (wb) {
      Shape sh = a.shape();
      sh.insert(sh.begin(), b);
      a = broadcast_to(expand_dims(a, 0, s), sh, s);
    }
    q.push_back(a);
  }
  array x = inputs[0];
  const bool xb = axes[0] >= 0;
  if (xb) x = moveaxis(x, axes[0], 0, s);
  std::optional<array> biases;
  if (affine) biases = q[2];
  std::optional<array> global;
  if (global_) global = inputs[nq];
  if (xb && !wb && q[0].ndim() > 2) {
    // x's own batch axes (if any) align with w's; the new one goes in front of them.
    while (x.ndim() < q[0].ndim() + 1) x = expand_dims(x, 1, s);
  }
  if (wb) {
    // x's rows stay rows: (B, ..., M, K) against (B, ..., N, K').
    if (!xb) x = expand_dims(x, 0, s);
    const int extra = static_cast<int>(q[0].ndim()) - static_cast<int>(x.ndim());
    for (int i = 0; i < extra; ++i) x = expand_dims(x, 1, s);
    const int wextra = static_cast<int>(x.ndim()) - static_cast<int>(q[0].ndim());
    for (int i = 0; i < wextra; ++i) {
      for (auto& a : q) a = expand_dims(a, 1, s);
    }
    if (affine) biases = q[2];
  }
  array out = quantized_matmul_impl(x, q[0], q[1], biases, global, transpose_, p_, s);
  return {{out}, {0}};
}

}  // namespace kiln
