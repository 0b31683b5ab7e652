// The primitives of the fused built-ins (kiln/fast.h): rms_norm, fused_rms_silu, layer_norm, rope,
// scaled_dot_product_attention and cross_entropy, and their fused vjps.
//
// Each derives from fast::Custom, which keeps the unfused computation written with core ops
// (the "fallback"): jvp and vmap transform it, and so does the vjp where no fused rule is
// given. The fused vjp primitives' own fallbacks recompute the gradient from the primal
// inputs only (never from saved outputs such as a logsumexp), so gradients of gradients are
// exact.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "kiln/primitive.h"
#include "kiln/transforms.h"

namespace kiln::fast {

/** A fused primitive with an unfused equivalent `fallback` (same inputs, same outputs). */
class Custom : public Primitive {
 public:
  Custom(Stream stream, ArrayFn fallback) : Primitive(stream), fallback_(std::move(fallback)) {}
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  const ArrayFn& fallback() const { return fallback_; }

 protected:
  ArrayFn fallback_;
};

#define KILN_FAST_PRIMITIVE(NAME)                            \
  KILN_PRIMITIVE_EVAL_MULTI()                                \
  const char* name() const override {                        \
    return #NAME;                                            \
  }                                                          \
  bool is_equivalent(const Primitive& other) const override; \
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

/** What rms_norm and fused_rms_silu share: eps, whether the weight is an input, the fused
 * gradient and the row-wise vmap. Inputs: x, then weight if `has_weight`; both of the output
 * dtype. */
class RMSNormBase : public Custom {
 public:
  RMSNormBase(Stream s, ArrayFn fallback, float eps, bool has_weight)
      : Custom(s, std::move(fallback)), eps_(eps), has_weight_(has_weight) {}
  float eps() const { return eps_; }
  bool has_weight() const { return has_weight_; }

 protected:
  /** rms_norm's fused gradient (RMSNormVJP) for cotangent `g` of rms_norm's output. */
  std::vector<array> rms_vjp(const std::vector<array>& primals, const array& g,
                             const std::vector<int>& argnums);
  /** Rows are independent: with x mapped and the weight not, `same()` (a node like this
   * one) over x with the mapped axis moved first; otherwise Custom's vmap. */
  std::pair<std::vector<array>, std::vector<int>> row_vmap(
      const std::vector<array>& inputs, const std::vector<int>& axes,
      const std::function<std::shared_ptr<Primitive>()>& same);

  float eps_;
  bool has_weight_;
};

/** rms_norm. */
class RMSNorm : public RMSNormBase {
 public:
  using RMSNormBase::RMSNormBase;
  KILN_FAST_PRIMITIVE(RMSNorm)
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums,
                         const std::vector<array>& outputs) override;
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
};

/** fused_rms_silu: h * sigmoid(h) with h = rms_norm(x, weight), in one pass. A class of its
 * own (not an RMSNorm flag) so that graph simplification never merges it with an rms_norm
 * of the same inputs. */
class RMSNormSiLU : public RMSNormBase {
 public:
  using RMSNormBase::RMSNormBase;
  KILN_FAST_PRIMITIVE(RMSNormSiLU)
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums,
                         const std::vector<array>& outputs) override;
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
};

/** The gradient of rms_norm. Inputs: x, [weight], cotangent; outputs: dx, [dweight]. */
class RMSNormVJP : public Custom {
 public:
  RMSNormVJP(Stream s, ArrayFn fallback, float eps, bool has_weight)
      : Custom(s, std::move(fallback)), eps_(eps), has_weight_(has_weight) {}
  KILN_FAST_PRIMITIVE(RMSNormVJP)
  float eps() const { return eps_; }
  bool has_weight() const { return has_weight_; }

 private:
  float eps_;
  bool has_weight_;
};

/** layer_norm. Inputs: x, [weight], [bias], all of the output dtype. */
class LayerNorm : public Custom {
 public:
  LayerNorm(Stream s, ArrayFn fallback, float eps, bool has_weight, bool has_bias)
      : Custom(s, std::move(fallback)), eps_(eps), has_weight_(has_weight), has_bias_(has_bias) {}
  KILN_FAST_PRIMITIVE(LayerNorm)
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums,
                         const std::vector<array>& outputs) override;
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
  float eps() const { return eps_; }
  bool has_weight() const { return has_weight_; }
  bool has_bias() const { return has_bias_; }

 private:
  float eps_;
  bool has_weight_, has_bias_;
};

/** The gradient of layer_norm. Inputs: x, [weight], cotangent; outputs: dx, [dweight],
 * [dbias]. */
class LayerNormVJP : public Custom {
 public:
  LayerNormVJP(Stream s, ArrayFn fallback, float eps, bool has_weight, bool has_bias)
      : Custom(s, std::move(fallback)), eps_(eps), has_weight_(has_weight), has_bias_(has_bias) {}
  KILN_FAST_PRIMITIVE(LayerNormVJP)
  float eps() const { return eps_; }
  bool has_weight() const { return has_weight_; }
  bool has_bias() const { return has_bias_; }

 private:
  float eps_;
  bool has_weight_, has_bias_;
};

/**
 * rope. Inputs: x (B, *, T, D), offset (int32: one, or one per batch element), [freqs
 * (float32, dims / 2)]. `forward` false rotates by the opposite angles (the vjp).
 */
class RoPE : public Custom {
 public:
  RoPE(Stream s, ArrayFn fallback, int dims, bool traditional, float base, float scale,
       bool forward)
      : Custom(s, std::move(fallback)),
        dims_(dims),
        traditional_(traditional),
        base_(base),
        scale_(scale),
        forward_(forward) {}
  KILN_FAST_PRIMITIVE(RoPE)
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums,
                         const std::vector<array>& outputs) override;
  int dims() const { return dims_; }
  bool traditional() const { return traditional_; }
  float base() const { return base_; }
  float scale() const { return scale_; }
  bool forward() const { return forward_; }

 private:
  int dims_;
  bool traditional_;
  float base_, scale_;
  bool forward_;
};

/** How scaled_dot_product_attention masks scores. */
enum class MaskKind { none, causal, boolean, additive };

/**
 * scaled_dot_product_attention. Inputs: q, k, v, [mask (bool, or additive of the output
 * dtype) broadcast to (B, H_q, L_q, L_k)], [sinks (H_q)]. Outputs: the attention (B, H_q,
 * L_q, D_v) and the logsumexp of each row's scaled, masked scores (B, H_q, L_q), float32
 * (float64 for float64 inputs), which the fused vjp reuses.
 */
class ScaledDotProductAttention : public Custom {
 public:
  /** `cudnn`: the GPU eval may run cuDNN's fused attention (KILN_SDPA_BACKEND when the node
   * was built, and a problem cuDNN can compute exactly); its logsumexp output then holds
   * cuDNN's softmax stats, which only the cuDNN backward reads (the vjp node inherits it). */
  ScaledDotProductAttention(Stream s, ArrayFn fallback, float scale, MaskKind mask, bool has_sinks,
                            bool cudnn = false)
      : Custom(s, std::move(fallback)),
        scale_(scale),
        mask_(mask),
        has_sinks_(has_sinks),
        cudnn_(cudnn) {}
  KILN_FAST_PRIMITIVE(ScaledDotProductAttention)
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums,
                         const std::vector<array>& outputs) override;
  float scale() const { return scale_; }
  MaskKind mask() const { return mask_; }
  bool has_sinks() const { return has_sinks_; }
  bool cudnn() const { return cudnn_; }

 private:
  float scale_;
  MaskKind mask_;
  bool has_sinks_;
  bool cudnn_;
};

/**
 * The gradient of scaled_dot_product_attention (FlashAttention-2's backward pass). Inputs:
 * q, k, v, [mask], [sinks], out, logsumexp, cotangent of out. Outputs: dq, dk, dv and, with
 * sinks, dsinks.
 */
class ScaledDotProductAttentionVJP : public Custom {
 public:
  /** `cudnn`: the forward node's flag; the GPU eval runs cuDNN's backward exactly when the
   * forward ran cuDNN (whose stats it then reads), else kiln's kernels. */
  ScaledDotProductAttentionVJP(Stream s, ArrayFn fallback, float scale, MaskKind mask,
                               bool has_sinks, bool cudnn = false)
      : Custom(s, std::move(fallback)),
        scale_(scale),
        mask_(mask),
        has_sinks_(has_sinks),
        cudnn_(cudnn) {}
  KILN_FAST_PRIMITIVE(ScaledDotProductAttentionVJP)
  float scale() const { return scale_; }
  MaskKind mask() const { return mask_; }
  bool has_sinks() const { return has_sinks_; }
  bool cudnn() const { return cudnn_; }

 private:
  float scale_;
  MaskKind mask_;
  bool has_sinks_;
  bool cudnn_;
};

/** cross_entropy. Inputs: logits (..., C), targets (int32, ...). Outputs: the loss and the
 * logsumexp of each row, both of the loss dtype. */
class CrossEntropy : public Custom {
 public:
  CrossEntropy(Stream s, ArrayFn fallback) : Custom(s, std::move(fallback)) {}
  KILN_FAST_PRIMITIVE(CrossEntropy)
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums,
                         const std::vector<array>& outputs) override;
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
};

/** global_norm. Inputs: the arrays (floating); output: their global L2 norm (0-d, float32
 * or float64). */
class GlobalNorm : public Custom {
 public:
  GlobalNorm(Stream s, ArrayFn fallback) : Custom(s, std::move(fallback)) {}
  KILN_FAST_PRIMITIVE(GlobalNorm)
};

/** The gradient of cross_entropy with respect to the logits: (softmax(logits) -
 * one_hot(target)) * cotangent. Inputs: logits, targets, logsumexp, cotangent. */
class CrossEntropyVJP : public Custom {
 public:
  CrossEntropyVJP(Stream s, ArrayFn fallback) : Custom(s, std::move(fallback)) {}
  KILN_FAST_PRIMITIVE(CrossEntropyVJP)
};

/**
 * The gradient of the core Softmax over the last axis, row by row: dx = y * (g - sum(y * g))
 * with y the softmax and g its cotangent, fused (y and g read once, dx written once; the
 * composite takes about nine passes). Inputs: y, g (same shape, the same real floating
 * dtype); output: dx. Half types accumulate in float32.
 */
class SoftmaxVJP : public Custom {
 public:
  SoftmaxVJP(Stream s, ArrayFn fallback) : Custom(s, std::move(fallback)) {}
  KILN_FAST_PRIMITIVE(SoftmaxVJP)
};

#undef KILN_FAST_PRIMITIVE

// The primitives built inside ops and vjps, with their fallbacks: the one way to make them,
// also used by import_function to rebuild them from their saved parameters.
std::shared_ptr<RoPE> make_rope(Stream s, int dims, bool traditional, float base, float scale,
                                bool forward);
std::shared_ptr<RMSNormVJP> make_rms_norm_vjp(Stream s, float eps, bool has_weight);
std::shared_ptr<LayerNormVJP> make_layer_norm_vjp(Stream s, float eps, bool has_weight,
                                                  bool has_bias);
std::shared_ptr<CrossEntropy> make_cross_entropy(Stream s);
std::shared_ptr<CrossEntropyVJP> make_cross_entropy_vjp(Stream s);
std::shared_ptr<SoftmaxVJP> make_softmax_vjp(Stream s);
/** `cudnn`: the flag of the forward node whose outputs the gradient reads (their pairing). */
std::shared_ptr<ScaledDotProductAttentionVJP> make_sdpa_vjp(Stream s, float scale, MaskKind mask,
                                                            bool has_sinks, bool cudnn);

}  // namespace kiln::fast
