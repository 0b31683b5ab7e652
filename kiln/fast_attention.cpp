// scaled_dot_product_attention: argument checks, the node it builds and its transforms.
// Kernels: backend/cpu/fast_attention.cpp, backend/cuda/fast_attention.cpp.
#include <limits>

#include "kiln/fast.h"
#include "kiln/fast_primitives.h"
#include "kiln/fast_sdpa_backend.h"
#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

constexpr const char* kOp = "[scaled_dot_product_attention]";

array lowest(Dtype acc) {
  return acc == float64 ? array(std::numeric_limits<double>::lowest(), float64)
                        : array(std::numeric_limits<float>::lowest(), float32);
}

// The attention written with core ops, in float32 (float64 for float64). Inputs: q, k, v,
// [mask], [sinks]; outputs: the attention and each row's logsumexp.
ArrayFn sdpa_fallback(float scale, MaskKind mask_kind, bool has_sinks, Stream s) {
  return [=](const std::vector<array>& in) {
    const Dtype out_type = in[0].dtype();
    const Dtype acc = out_type == float64 ? float64 : float32;
    array q = multiply(astype(in[0], acc, s), array(scale, acc), s);
    array k = astype(in[1], acc, s), v = astype(in[2], acc, s);
    const int B = q.shape(0), Hq = q.shape(1), Lq = q.shape(2), Hk = k.shape(1), Lk = k.shape(2);
    const int R = Hq / Hk;
    // Query heads grouped by their key/value head: (B, Hk, R, Lq, D).
    q = reshape(q, {B, Hk, R, Lq, q.shape(3)}, s);
    k = expand_dims(k, 2, s);
    v = expand_dims(v, 2, s);
    array scores = matmul(q, swapaxes(k, -1, -2, s), s);
    if (mask_kind == MaskKind::causal) {
      array qi = expand_dims(arange(Lk - Lq, Lk, s), 1, s);
      array ki = expand_dims(arange(0, Lk, s), 0, s);
      scores = where(greater_equal(qi, ki, s), scores, lowest(acc), s);
    } else if (mask_kind != MaskKind::none) {
      array m = reshape(in[3], {B, Hk, R, Lq, Lk}, s);
      scores = mask_kind == MaskKind::boolean ? where(m, scores, lowest(acc), s)
                                              : add(scores, astype(m, acc, s), s);
    }
    if (has_sinks) {
      array sk = reshape(astype(in.back(), acc, s), {1, Hk, R, 1, 1}, s);
      sk = broadcast_to(sk, {B, Hk, R, Lq, 1}, s);
      scores = concatenate({sk, scores}, -1, s);
    }
    array lse = logsumexp(scores, -1, true, s);
    array p = softmax(scores, -1, s);
    if (has_sinks) p = slice(p, {0, 0, 0, 0, 1}, p.shape(), s);
    array out = matmul(p, v, s);
    out = reshape(out, {B, Hq, Lq, out.shape(-1)}, s);
    return std::vector<array>{astype(out, out_type, s), reshape(lse, {B, Hq, Lq}, s)};
  };
}

Dtype lse_dtype(Dtype out) {
  return out == float64 ? float64 : float32;
}

// Whether the node may run cuDNN's fused attention (kiln/fast_sdpa_backend.h): a GPU stream,
// the switch, and a problem cuDNN computes exactly as kiln defines it. cuDNN's bottom-right
// causal band leaves queries with no key when L_q > L_k, where kiln gives the mean of v: not
// taken. The eval still falls back to kiln's kernels where cuDNN rejects the graph.
bool wants_cudnn(Stream s, Dtype t, const Shape& q, const Shape& k, const Shape& v, MaskKind kind,
                 bool has_sinks) {
  if (s.device.type != Device::gpu) return false;
  const SdpaBackend b = sdpa_backend();
  if (b == SdpaBackend::kiln) return false;
  if (t != float16 && t != bfloat16) return false;
  if (has_sinks || (kind != MaskKind::none && kind != MaskKind::causal)) return false;
  const int B = q[0], Hq = q[1], Lq = q[2], D = q[3], Hk = k[1], Lk = k[2], Dv = v[3];
  if (B == 0 || Hq == 0 || Lq == 0 || Lk == 0) return false;
  if (D % 8 != 0 || Dv % 8 != 0 || D > 128 || Dv > 128) return false;
  if (kind == MaskKind::causal && Lq > Lk) return false;
  // auto: decode-like calls stay on kiln's decode kernels (few rows per key/value head).
  if (b == SdpaBackend::automatic && (Hq / Hk) * Lq <= 16) return false;
  return true;
}

}  // namespace

array scaled_dot_product_attention(const array& queries, const array& keys, const array& values,
                                   float scale, const std::string& mask_mode,
                                   const std::optional<array>& mask_arr,
                                   const std::optional<array>& sinks, StreamOrDevice s_) {
  for (const array* t : {&queries, &keys, &values}) {
    if (t->ndim() != 4) {
      throw std::invalid_argument(
          msg(kOp, " input with shape ", shape_str(t->shape()), " expected to be rank 4."));
    }
  }
  if (mask_mode != "" && mask_mode != "causal" && mask_mode != "array") {
    throw std::invalid_argument(msg(kOp, " Invalid mask_mode '", mask_mode,
                                    "'. mask_mode must be 'causal', 'array' or ''."));
  }
  const bool causal = mask_mode == "causal";
  if (causal && mask_arr) {
    throw std::invalid_argument(
        msg(kOp, " Invalid mask array for mask_mode 'causal'. No array mask should be passed."));
  }
  if (mask_arr && mask_arr->ndim() > 4) {
    throw std::invalid_argument(msg(kOp, " the mask with shape ", shape_str(mask_arr->shape()),
                                    " expected to have at most rank 4."));
  }
  const int B = queries.shape(0), Hq = queries.shape(1), Lq = queries.shape(2);
  const int Hk = keys.shape(1), Lk = keys.shape(2);
  for (const array* t : {&keys, &values}) {
    if (t->shape(0) != B) {
      throw std::invalid_argument(msg(kOp, " mismatching batch dimension for input with shape ",
                                      shape_str(t->shape()), " (queries ",
                                      shape_str(queries.shape()), ")."));
    }
  }
  if (queries.shape(-1) != keys.shape(-1)) {
    throw std::invalid_argument(
        msg(kOp, " query, keys expected to have matching last dimension; found query shape ",
            shape_str(queries.shape()), " for keys shape ", shape_str(keys.shape()), "."));
  }
  if (values.shape(1) != Hk) {
    throw std::invalid_argument(
        msg(kOp, " keys, values expected to have matching n_kv_heads; found keys with n_heads ", Hk,
            " for values with n_heads ", values.shape(1), "."));
  }
  if (values.shape(2) != Lk) {
    throw std::invalid_argument(
        msg(kOp, " keys, values expected to have matching sequence length; found keys shape ",
            shape_str(keys.shape()), " for values shape ", shape_str(values.shape()), "."));
  }
  if (Hk == 0 || Hq % Hk != 0) {
    throw std::invalid_argument(msg(kOp,
                                    " n_heads must be a multiple of n_kv_heads, found n_heads ", Hq,
                                    " for n_kv_heads ", Hk, "."));
  }
  const Dtype final_type =
      promote_types(promote_types(queries.dtype(), keys.dtype()), values.dtype());
  if (!is_floating_point(final_type)) {
    throw std::invalid_argument(msg(kOp, " Received unsupported type ", final_type, "."));
  }

  const Stream s = to_stream(s_);
  std::vector<array> inputs{astype(queries, final_type, s), astype(keys, final_type, s),
                            astype(values, final_type, s)};
  MaskKind kind = causal ? MaskKind::causal : MaskKind::none;
  if (mask_arr) {
    const bool is_bool = mask_arr->dtype() == bool_;
    if (!is_bool && promote_types(mask_arr->dtype(), final_type) != final_type) {
      throw std::invalid_argument(msg(kOp, " Mask type must promote to output type ", final_type,
                                      " (mask dtype ", mask_arr->dtype(), ")."));
    }
    const Shape full{B, Hq, Lq, Lk};
    try {
      if (broadcast_shapes(mask_arr->shape(), full) != full) throw std::invalid_argument("");
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(msg(kOp, " the mask with shape ", shape_str(mask_arr->shape()),
                                      " cannot be broadcast to ", shape_str(full),
                                      " (batch, query heads, queries, keys)."));
    }
    kind = is_bool ? MaskKind::boolean : MaskKind::additive;
    inputs.push_back(broadcast_to(is_bool ? *mask_arr : astype(*mask_arr, final_type, s), full, s));
  }
  if (sinks) {
    if (promote_types(sinks->dtype(), final_type) != final_type) {
      throw std::invalid_argument(msg(kOp, " Type of sinks must promote to output type ",
                                      final_type, " (sinks dtype ", sinks->dtype(), ")."));
    }
    if (sinks->ndim() != 1 || sinks->shape(0) != Hq) {
      throw std::invalid_argument(msg(kOp, " Received invalid shape for sinks ",
                                      shape_str(sinks->shape()), " (expected (", Hq, "))."));
    }
    inputs.push_back(astype(*sinks, final_type, s));
  }

  const bool has_sinks = sinks.has_value();
  const bool cudnn =
      wants_cudnn(s, final_type, queries.shape(), keys.shape(), values.shape(), kind, has_sinks);
  auto prim = std::make_shared<ScaledDotProductAttention>(
      s, sdpa_fallback(scale, kind, has_sinks, s), scale, kind, has_sinks, cudnn);
  return array::make_arrays({Shape{B, Hq, Lq, values.shape(3)}, Shape{B, Hq, Lq}},
                            {final_type, lse_dtype(final_type)}, prim, inputs)[0];
}

bool ScaledDotProductAttention::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ScaledDotProductAttention*>(&other);
  return o && o->scale_ == scale_ && o->mask_ == mask_ && o->has_sinks_ == has_sinks_ &&
         o->cudnn_ == cudnn_;
}

std::vector<Shape> ScaledDotProductAttention::output_shapes(const std::vector<array>& inputs) {
  const array &q = inputs[0], &v = inputs[2];
  return {Shape{q.shape(0), q.shape(1), q.shape(2), v.shape(3)},
          Shape{q.shape(0), q.shape(1), q.shape(2)}};
}

std::vector<array> ScaledDotProductAttention::vjp(const std::vector<array>& primals,
                                                  const std::vector<array>& cotangents,
                                                  const std::vector<int>& argnums,
                                                  const std::vector<array>& outputs) {
  const int mask_index = mask_ == MaskKind::boolean || mask_ == MaskKind::additive ? 3 : -1;
  for (int a : argnums) {
    // The gradient of an additive mask is the full score gradient: the unfused form has it.
    if (a == mask_index) return Custom::vjp(primals, cotangents, argnums, outputs);
  }
  const int n_grads = 3 + (has_sinks_ ? 1 : 0);
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (int i = 0; i < 3; ++i) {
    shapes.push_back(primals[i].shape());
    dtypes.push_back(primals[i].dtype());
  }
  if (has_sinks_) {
    shapes.push_back(primals.back().shape());
    dtypes.push_back(primals.back().dtype());
  }
  std::vector<array> in = primals;
  in.push_back(outputs[0]);
  in.push_back(outputs[1]);
  in.push_back(cotangents[0]);
  auto grads = array::make_arrays(shapes, dtypes,
                                  make_sdpa_vjp(stream(), scale_, mask_, has_sinks_, cudnn_), in);
  std::vector<array> r;
  for (int a : argnums) {
    if (a < 3) {
      r.push_back(grads[a]);
    } else if (has_sinks_ && a == static_cast<int>(primals.size()) - 1) {
      r.push_back(grads[n_grads - 1]);
    } else {
      throw std::invalid_argument(msg(kOp, " No gradient for input ", a, "."));
    }
  }
  return r;
}

std::shared_ptr<ScaledDotProductAttentionVJP> make_sdpa_vjp(Stream s, float scale, MaskKind mask,
                                                            bool has_sinks, bool cudnn) {
  // The unfused gradient, from the primals only (exact gradients of gradients).
  const ArrayFn forward = sdpa_fallback(scale, mask, has_sinks, s);
  const bool has_mask = mask == MaskKind::boolean || mask == MaskKind::additive;
  const size_t n_primals = 3 + has_mask + has_sinks;
  ArrayFn grad_fallback = [forward, n_primals, has_sinks](const std::vector<array>& in) {
    std::vector<array> p(in.begin(), in.begin() + n_primals);
    const array& lse = in[n_primals + 1];
    auto g = kiln::vjp(forward, p, {in.back(), zeros_like(lse)}).second;
    std::vector<array> r{g[0], g[1], g[2]};
    if (has_sinks) r.push_back(g.back());
    return r;
  };
  return std::make_shared<ScaledDotProductAttentionVJP>(s, grad_fallback, scale, mask, has_sinks,
                                                        cudnn);
}

bool ScaledDotProductAttentionVJP::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ScaledDotProductAttentionVJP*>(&other);
  return o && o->scale_ == scale_ && o->mask_ == mask_ && o->has_sinks_ == has_sinks_ &&
         o->cudnn_ == cudnn_;
}

std::vector<Shape> ScaledDotProductAttentionVJP::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> r{inputs[0].shape(), inputs[1].shape(), inputs[2].shape()};
  if (has_sinks_) r.push_back({inputs[0].shape(1)});
  return r;
}

}  // namespace kiln::fast
