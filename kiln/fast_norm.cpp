// rms_norm and layer_norm: argument checks, the nodes they build, and their transforms.
// Kernels: backend/cpu/fast_norm.cpp, backend/cuda/fast_norm.cpp.
#include <numeric>

#include "kiln/fast.h"
#include "kiln/fast_primitives.h"
#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

/** The dtype the norms accumulate in: float64 for float64, else float32. */
Dtype acc_dtype(Dtype d) {
  return d == float64 ? float64 : float32;
}

void check_param(const array& x, const std::optional<array>& p, const char* op, const char* what) {
  if (!p) return;
  if (p->ndim() != 1) {
    throw std::invalid_argument(msg("[", op, "] ", what, " must have 1 dimension but has ",
                                    p->ndim(), " dimensions (shape ", shape_str(p->shape()), ")."));
  }
  if (p->shape(0) != x.shape(-1)) {
    throw std::invalid_argument(msg("[", op, "] ", what,
                                    " must have the same size as the last dimension of x ",
                                    shape_str(x.shape()), " but has ", p->shape(0), " elements."));
  }
}

void check_x(const array& x, const char* op) {
  if (x.ndim() == 0) {
    throw std::invalid_argument(
        msg("[", op, "] Input must have at least 1 dimension but got input with 0 dimensions."));
  }
}

void check_out_type(Dtype t, const char* op) {
  if (!is_floating_point(t)) {
    throw std::invalid_argument(msg("[", op, "] Received unsupported type ", t, "."));
  }
}

/** Every axis but the last (the rows a parameter gradient sums over). */
std::vector<int> row_axes(const array& x) {
  std::vector<int> axes(x.ndim() - 1);
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

/** Picks the vjps in `argnums` from the fused gradient's outputs (position i of input i). */
std::vector<array> select(std::vector<array> all, const std::vector<int>& argnums) {
  std::vector<array> out;
  for (int a : argnums) out.push_back(all.at(a));
  return out;
}

// ---------------------------------------------------------------- unfused forms

ArrayFn rms_norm_fallback(float eps, bool has_weight, Dtype out, Stream s, bool silu = false) {
  return [=](const std::vector<array>& in) {
    const Dtype acc = acc_dtype(out);
    array x = astype(in[0], acc, s);
    array n = rsqrt(add(mean(square(x, s), -1, true, s), array(eps, acc), s), s);
    array y = multiply(x, n, s);
    if (has_weight) y = multiply(y, astype(in[1], acc, s), s);
    if (silu) y = multiply(y, sigmoid(y, s), s);
    return std::vector<array>{astype(y, out, s)};
  };
}

// Inputs: x, [w], g. Outputs: dx, [dw].
ArrayFn rms_norm_vjp_fallback(float eps, bool has_weight, Stream s) {
  return [=](const std::vector<array>& in) {
    const Dtype out = in[0].dtype(), acc = acc_dtype(out);
    array x = astype(in[0], acc, s);
    array g = astype(in.back(), acc, s);
    array n = rsqrt(add(mean(square(x, s), -1, true, s), array(eps, acc), s), s);
    array gw = has_weight ? multiply(g, astype(in[1], acc, s), s) : g;
    array t = mean(multiply(gw, x, s), -1, true, s);
    array dx = subtract(multiply(gw, n, s),
                        multiply(multiply(x, t, s), power(n, array(3.0, acc), s), s), s);
    std::vector<array> r{astype(dx, out, s)};
    if (has_weight) {
      r.push_back(
          astype(sum(multiply(g, multiply(x, n, s), s), row_axes(x), false, s), in[1].dtype(), s));
    }
    return r;
  };
}

ArrayFn layer_norm_fallback(float eps, bool has_weight, bool has_bias, Dtype out, Stream s) {
  return [=](const std::vector<array>& in) {
    const Dtype acc = acc_dtype(out);
    array x = astype(in[0], acc, s);
    array xc = subtract(x, mean(x, -1, true, s), s);
    array v = mean(square(xc, s), -1, true, s);
    array y = multiply(xc, rsqrt(add(v, array(eps, acc), s), s), s);
    if (has_weight) y = multiply(y, astype(in[1], acc, s), s);
    if (has_bias) y = add(y, astype(in[has_weight ? 2 : 1], acc, s), s);
    return std::vector<array>{astype(y, out, s)};
  };
}

// Inputs: x, [w], g. Outputs: dx, [dw], [db].
ArrayFn layer_norm_vjp_fallback(float eps, bool has_weight, bool has_bias, Stream s) {
  return [=](const std::vector<array>& in) {
    const Dtype out = in[0].dtype(), acc = acc_dtype(out);
    array x = astype(in[0], acc, s);
    array g = astype(in.back(), acc, s);
    array xc = subtract(x, mean(x, -1, true, s), s);
    array n = rsqrt(add(mean(square(xc, s), -1, true, s), array(eps, acc), s), s);
    array xhat = multiply(xc, n, s);
    array wg = has_weight ? multiply(g, astype(in[1], acc, s), s) : g;
    array dx = multiply(n,
                        subtract(subtract(wg, mean(wg, -1, true, s), s),
                                 multiply(xhat, mean(multiply(wg, xhat, s), -1, true, s), s), s),
                        s);
    std::vector<array> r{astype(dx, out, s)};
    if (has_weight) {
      r.push_back(astype(sum(multiply(g, xhat, s), row_axes(x), false, s), in[1].dtype(), s));
    }
    if (has_bias) r.push_back(astype(sum(g, row_axes(x), false, s), out, s));
    return r;
  };
}

}  // namespace

std::shared_ptr<RMSNormVJP> make_rms_norm_vjp(Stream s, float eps, bool has_weight) {
  return std::make_shared<RMSNormVJP>(s, rms_norm_vjp_fallback(eps, has_weight, s), eps,
                                      has_weight);
}

std::shared_ptr<LayerNormVJP> make_layer_norm_vjp(Stream s, float eps, bool has_weight,
                                                  bool has_bias) {
  return std::make_shared<LayerNormVJP>(s, layer_norm_vjp_fallback(eps, has_weight, has_bias, s),
                                        eps, has_weight, has_bias);
}

// ---------------------------------------------------------------- rms_norm

namespace {

/** The checked inputs of rms_norm and fused_rms_silu (x and the weight in the output dtype). */
std::vector<array> rms_inputs(const array& x, const std::optional<array>& weight, const char* op,
                              Stream s) {
  check_x(x, op);
  check_param(x, weight, op, "weight");
  const Dtype out = weight ? promote_types(x.dtype(), weight->dtype()) : x.dtype();
  check_out_type(out, op);
  std::vector<array> inputs{astype(x, out, s)};
  if (weight) inputs.push_back(astype(*weight, out, s));
  return inputs;
}

}  // namespace

array rms_norm(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s_) {
  const Stream s = to_stream(s_);
  std::vector<array> inputs = rms_inputs(x, weight, "rms_norm", s);
  const Dtype out = inputs[0].dtype();
  return array(x.shape(), out,
               std::make_shared<RMSNorm>(s, rms_norm_fallback(eps, weight.has_value(), out, s), eps,
                                         weight.has_value()),
               std::move(inputs));
}

array fused_rms_silu(const array& x, const std::optional<array>& weight, float eps,
                     StreamOrDevice s_) {
  const Stream s = to_stream(s_);
  std::vector<array> inputs = rms_inputs(x, weight, "fused_rms_silu", s);
  const Dtype out = inputs[0].dtype();
  return array(
      x.shape(), out,
      std::make_shared<RMSNormSiLU>(s, rms_norm_fallback(eps, weight.has_value(), out, s, true),
                                    eps, weight.has_value()),
      std::move(inputs));
}

bool RMSNorm::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const RMSNorm*>(&other);
  return o && o->eps_ == eps_ && o->has_weight_ == has_weight_;
}

std::vector<Shape> RMSNorm::output_shapes(const std::vector<array>& inputs) {
  return {inputs[0].shape()};
}

std::vector<array> RMSNormBase::rms_vjp(const std::vector<array>& primals, const array& g,
                                        const std::vector<int>& argnums) {
  std::vector<array> in = primals;
  in.push_back(g);
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& p : primals) {
    shapes.push_back(p.shape());
    dtypes.push_back(p.dtype());
  }
  auto outs =
      array::make_arrays(shapes, dtypes, make_rms_norm_vjp(stream(), eps_, has_weight_), in);
  return select(std::move(outs), argnums);
}

std::pair<std::vector<array>, std::vector<int>> RMSNormBase::row_vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes,
    const std::function<std::shared_ptr<Primitive>()>& same) {
  if (inputs.size() > 1 && axes[1] >= 0) return Custom::vmap(inputs, axes);
  // Rows are independent: the mapped axis of x only adds rows.
  std::vector<array> in = inputs;
  in[0] = moveaxis(inputs[0], axes[0], 0, stream());
  return {{array(in[0].shape(), in[0].dtype(), same(), in)}, {0}};
}

std::vector<array> RMSNorm::vjp(const std::vector<array>& primals,
                                const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  return rms_vjp(primals, cotangents[0], argnums);
}

std::pair<std::vector<array>, std::vector<int>> RMSNorm::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  return row_vmap(inputs, axes, [&] {
    return std::make_shared<RMSNorm>(stream(), fallback_, eps_, has_weight_);
  });
}

bool RMSNormSiLU::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const RMSNormSiLU*>(&other);
  return o && o->eps_ == eps_ && o->has_weight_ == has_weight_;
}

std::vector<Shape> RMSNormSiLU::output_shapes(const std::vector<array>& inputs) {
  return {inputs[0].shape()};
}

std::vector<array> RMSNormSiLU::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  // silu'(h) = sigmoid(h) (1 + h (1 - sigmoid(h))), h recomputed by the fused rms_norm.
  const Stream s = stream();
  const Dtype out = primals[0].dtype(), acc = acc_dtype(out);
  std::optional<array> w;
  if (has_weight_) w = primals[1];
  array h = astype(rms_norm(primals[0], w, eps_, s), acc, s);
  array sg = sigmoid(h, s);
  array one(1.0, acc);
  array dsilu = multiply(sg, add(one, multiply(h, subtract(one, sg, s), s), s), s);
  return rms_vjp(primals, astype(multiply(astype(cotangents[0], acc, s), dsilu, s), out, s),
                 argnums);
}

std::pair<std::vector<array>, std::vector<int>> RMSNormSiLU::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  return row_vmap(inputs, axes, [&] {
    return std::make_shared<RMSNormSiLU>(stream(), fallback_, eps_, has_weight_);
  });
}

bool RMSNormVJP::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const RMSNormVJP*>(&other);
  return o && o->eps_ == eps_ && o->has_weight_ == has_weight_;
}

std::vector<Shape> RMSNormVJP::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> r{inputs[0].shape()};
  if (has_weight_) r.push_back(inputs[1].shape());
  return r;
}

// ---------------------------------------------------------------- layer_norm

array layer_norm(const array& x, const std::optional<array>& weight,
                 const std::optional<array>& bias, float eps, StreamOrDevice s_) {
  check_x(x, "layer_norm");
  check_param(x, weight, "layer_norm", "weight");
  check_param(x, bias, "layer_norm", "bias");
  Dtype out = x.dtype();
  if (weight) out = promote_types(out, weight->dtype());
  if (bias) out = promote_types(out, bias->dtype());
  check_out_type(out, "layer_norm");
  const Stream s = to_stream(s_);
  std::vector<array> inputs{astype(x, out, s)};
  if (weight) inputs.push_back(astype(*weight, out, s));
  if (bias) inputs.push_back(astype(*bias, out, s));
  const bool hw = weight.has_value(), hb = bias.has_value();
  return array(
      x.shape(), out,
      std::make_shared<LayerNorm>(s, layer_norm_fallback(eps, hw, hb, out, s), eps, hw, hb),
      std::move(inputs));
}

bool LayerNorm::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const LayerNorm*>(&other);
  return o && o->eps_ == eps_ && o->has_weight_ == has_weight_ && o->has_bias_ == has_bias_;
}

std::vector<Shape> LayerNorm::output_shapes(const std::vector<array>& inputs) {
  return {inputs[0].shape()};
}

std::vector<array> LayerNorm::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents,
                                  const std::vector<int>& argnums, const std::vector<array>&) {
  // The bias does not enter the gradients: inputs x, [w], g.
  std::vector<array> in{primals[0]};
  if (has_weight_) in.push_back(primals[1]);
  in.push_back(cotangents[0]);
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& p : primals) {
    shapes.push_back(p.shape());
    dtypes.push_back(p.dtype());
  }
  auto outs = array::make_arrays(shapes, dtypes,
                                 make_layer_norm_vjp(stream(), eps_, has_weight_, has_bias_), in);
  return select(std::move(outs), argnums);
}

std::pair<std::vector<array>, std::vector<int>> LayerNorm::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (axes[i] >= 0) return Custom::vmap(inputs, axes);
  }
  std::vector<array> in = inputs;
  in[0] = moveaxis(inputs[0], axes[0], 0, stream());
  return {
      {array(in[0].shape(), in[0].dtype(),
             std::make_shared<LayerNorm>(stream(), fallback_, eps_, has_weight_, has_bias_), in)},
      {0}};
}

bool LayerNormVJP::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const LayerNormVJP*>(&other);
  return o && o->eps_ == eps_ && o->has_weight_ == has_weight_ && o->has_bias_ == has_bias_;
}

std::vector<Shape> LayerNormVJP::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> r{inputs[0].shape()};
  const Shape d{inputs[0].shape(-1)};
  if (has_weight_) r.push_back(d);
  if (has_bias_) r.push_back(d);
  return r;
}

}  // namespace kiln::fast
