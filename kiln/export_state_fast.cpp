// Export codecs of the fused fast operations, so an imported function keeps the fused
// kernels. The forward ops are rebuilt through their op, called on placeholders of the saved
// input shapes and dtypes, which must give one node of the same primitive on exactly those
// inputs; rope and the vjps (built inside vjp rules) through their factory, after checking the
// inputs as the kernels need them; the attention's vjp after rebuilding its forward on its primal
// inputs, whose cuDNN flag it takes (the flag the rebuilt forward node has: the gradient reads
// that node's outputs). Any node that does not rebuild so is exported as its fallback's
// operations (export_program.cpp).
#include "kiln/export_state.h"
#include "kiln/fast.h"
#include "kiln/fast_primitives.h"
#include "kiln/primitives_compile.h"
#include "kiln/utils.h"

namespace kiln {

using export_detail::Registry;
using export_detail::StateReader;
using export_detail::StateWriter;

namespace {

std::vector<array> placeholders(const std::vector<Shape>& shapes, const std::vector<Dtype>& dtypes,
                                Stream s) {
  std::vector<array> out;
  for (size_t i = 0; i < shapes.size(); ++i)
    out.emplace_back(shapes[i], dtypes[i], std::make_shared<CompileInput>(s), std::vector<array>{});
  return out;
}

// The primitive of `out` when it is one node of T on exactly `ins`.
template <typename T>
std::shared_ptr<Primitive> node_of(const array& out, const std::vector<array>& ins,
                                   StateReader& in) {
  bool ok = out.has_primitive() && dynamic_cast<T*>(&out.primitive()) &&
            out.inputs().size() == ins.size();
  for (size_t i = 0; ok && i < ins.size(); ++i) ok = out.inputs()[i].id() == ins[i].id();
  if (!ok) in.fail("its op no longer builds a single node on these inputs");
  return out.primitive_ptr();
}

// Fails unless `ok`: a file whose inputs do not fit the kernel is refused, never run.
void require(bool ok, StateReader& in, const char* what) {
  if (!ok) in.fail(std::string("inputs that do not fit: ") + what);
}

bool is_float(Dtype d) {
  return d == float16 || d == bfloat16 || d == float32 || d == float64;
}

// Inputs x, [w], g of the norms' vjps: a float x of rank >= 1, w of x's last axis, g as x.
void check_norm_vjp(StateReader& in, const std::vector<Shape>& shapes,
                    const std::vector<Dtype>& dtypes, bool has_weight) {
  require(shapes.size() == (has_weight ? 3u : 2u), in, "the number of inputs");
  require(!shapes[0].empty() && is_float(dtypes[0]), in, "x");
  require(shapes.back() == shapes[0] && dtypes.back() == dtypes[0], in, "the cotangent");
  if (has_weight) {
    require(shapes[1] == Shape{shapes[0].back()} && is_float(dtypes[1]), in, "the weight");
  }
}

// Logits (..., C) and int32 targets (...).
void check_loss_inputs(StateReader& in, const std::vector<Shape>& shapes,
                       const std::vector<Dtype>& dtypes) {
  require(!shapes[0].empty() && is_float(dtypes[0]), in, "the logits");
  require(dtypes[1] == int32 && shapes[1] == Shape(shapes[0].begin(), shapes[0].end() - 1), in,
          "the targets");
}

// The saved parameters of the attention nodes.
struct AttentionParams {
  float scale;
  fast::MaskKind kind;
  bool has_sinks;
  bool has_mask() const {
    return kind == fast::MaskKind::boolean || kind == fast::MaskKind::additive;
  }
  // q, k, v, [mask], [sinks].
  size_t num_primals() const { return 3u + has_mask() + has_sinks; }
};

AttentionParams read_attention(StateReader& in) {
  const float scale = static_cast<float>(in.f());
  const int64_t mask = in.i();
  const bool has_sinks = in.b();
  if (mask < 0 || mask > 3) in.fail("an unknown mask kind");
  return {scale, static_cast<fast::MaskKind>(mask), has_sinks};
}

// scaled_dot_product_attention on the primals x (q, k, v, [mask], [sinks]) as the node had.
array attention_on(const std::vector<array>& x, const AttentionParams& a, Stream s) {
  std::optional<array> m, sinks;
  if (a.has_mask()) m = x[3];
  if (a.has_sinks) sinks = x[3 + a.has_mask()];
  const std::string mode = a.kind == fast::MaskKind::causal ? "causal"
                           : a.has_mask()                   ? "array"
                                                            : "";
  return fast::scaled_dot_product_attention(x[0], x[1], x[2], a.scale, mode, m, sinks, s);
}

// rms_norm and fused_rms_silu (node type P, rebuilt by `op`): eps and whether the weight is
// an input.
template <typename P, typename Op>
void add_rms(Registry& r, const char* name, Op op) {
  r.add_rebuilt<P>(
      name, [](const P& p, StateWriter& w) { w.f(p.eps()).b(p.has_weight()); },
      [op](StateReader& in, Stream s, const std::vector<Shape>& shapes,
           const std::vector<Dtype>& dtypes) {
        float eps = static_cast<float>(in.f());
        bool has_weight = in.b();
        if (shapes.size() != (has_weight ? 2u : 1u)) in.fail("the number of inputs");
        auto x = placeholders(shapes, dtypes, s);
        std::optional<array> w;
        if (has_weight) w = x[1];
        return node_of<P>(op(x[0], w, eps, s), x, in);
      });
}

}  // namespace

void ExportAccess::register_fast(Registry& r) {
  add_rms<fast::RMSNorm>(r, "RMSNorm", fast::rms_norm);
  add_rms<fast::RMSNormSiLU>(r, "RMSNormSiLU", fast::fused_rms_silu);
  r.add_rebuilt<fast::LayerNorm>(
      "LayerNorm",
      [](const fast::LayerNorm& p, StateWriter& w) {
        w.f(p.eps()).b(p.has_weight()).b(p.has_bias());
      },
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) {
        float eps = static_cast<float>(in.f());
        bool has_weight = in.b();
        bool has_bias = in.b();
        if (shapes.size() != 1u + has_weight + has_bias) in.fail("the number of inputs");
        auto x = placeholders(shapes, dtypes, s);
        std::optional<array> w, b;
        if (has_weight) w = x[1];
        if (has_bias) b = x[1 + has_weight];
        return node_of<fast::LayerNorm>(fast::layer_norm(x[0], w, b, eps, s), x, in);
      });
  // Both attention nodes save (scale, mask kind, has_sinks).
  auto save_attention = [](const auto& p, StateWriter& w) {
    w.f(p.scale()).i(static_cast<int>(p.mask())).b(p.has_sinks());
  };
  r.add_rebuilt<fast::ScaledDotProductAttention>(
      "ScaledDotProductAttention", save_attention,
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) {
        const AttentionParams a = read_attention(in);
        if (shapes.size() != a.num_primals()) in.fail("the number of inputs");
        auto x = placeholders(shapes, dtypes, s);
        return node_of<fast::ScaledDotProductAttention>(attention_on(x, a, s), x, in);
      });
  r.add_rebuilt<fast::ScaledDotProductAttentionVJP>(
      "ScaledDotProductAttentionVJP", save_attention,
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) -> std::shared_ptr<Primitive> {
        const AttentionParams a = read_attention(in);
        // Inputs: the primals q, k, v, [mask], [sinks], then out, logsumexp, cotangent of out.
        const size_t np = a.num_primals();
        require(shapes.size() == np + 3, in, "the number of inputs");
        // The forward as its op builds it on these primals (which checks them) and as the
        // rebuilt forward node is: its outputs are what this gradient reads.
        auto x = placeholders({shapes.begin(), shapes.begin() + np},
                              {dtypes.begin(), dtypes.begin() + np}, s);
        const array out = attention_on(x, a, s);
        const auto* fwd = dynamic_cast<const fast::ScaledDotProductAttention*>(
            out.has_primitive() ? &out.primitive() : nullptr);
        require(fwd != nullptr, in, "the forward does not build one fused node");
        // The saved outputs must be the forward's: the inputs were cast to the output dtype.
        require(dtypes[0] == out.dtype() && dtypes[1] == out.dtype() && dtypes[2] == out.dtype(),
                in, "q, k and v of the output dtype");
        const Shape lse_shape(out.shape().begin(), out.shape().end() - 1);
        const Dtype lse_dtype = out.dtype() == float64 ? float64 : float32;
        require(shapes[np] == out.shape() && dtypes[np] == out.dtype(), in, "the output");
        require(shapes[np + 1] == lse_shape && dtypes[np + 1] == lse_dtype, in, "the logsumexp");
        require(shapes[np + 2] == out.shape() && dtypes[np + 2] == out.dtype(), in,
                "the cotangent");
        return fast::make_sdpa_vjp(s, a.scale, a.kind, a.has_sinks, fwd->cudnn());
      });
  r.add_rebuilt<fast::RoPE>(
      "RoPE",
      [](const fast::RoPE& p, StateWriter& w) {
        w.i(p.dims()).b(p.traditional()).f(p.base()).f(p.scale()).b(p.forward());
      },
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) -> std::shared_ptr<Primitive> {
        const int64_t dims = in.i();
        const bool traditional = in.b();
        const float base = static_cast<float>(in.f());
        const float scale = static_cast<float>(in.f());
        const bool forward = in.b();
        // Inputs: x (B, *, T, D), int32 offset (one, or one per batch element), [freqs].
        require(shapes.size() == 2 || shapes.size() == 3, in, "the number of inputs");
        require(shapes[0].size() >= 3 && is_float(dtypes[0]), in, "x");
        require(dims > 0 && dims % 2 == 0 && dims <= shapes[0].back(), in, "dims");
        const int64_t n_offsets = shape_size(shapes[1]);
        require(dtypes[1] == int32 && shapes[1].size() <= 1 &&
                    (n_offsets == 1 || n_offsets == shapes[0][0]),
                in, "the offset");
        if (shapes.size() == 3) {
          require(dtypes[2] == float32 && shapes[2] == Shape{static_cast<int>(dims / 2)}, in,
                  "the frequencies");
        }
        return fast::make_rope(s, static_cast<int>(dims), traditional, base, scale, forward);
      });
  r.add_rebuilt<fast::RMSNormVJP>(
      "RMSNormVJP",
      [](const fast::RMSNormVJP& p, StateWriter& w) { w.f(p.eps()).b(p.has_weight()); },
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) -> std::shared_ptr<Primitive> {
        const float eps = static_cast<float>(in.f());
        const bool has_weight = in.b();
        check_norm_vjp(in, shapes, dtypes, has_weight);
        return fast::make_rms_norm_vjp(s, eps, has_weight);
      });
  r.add_rebuilt<fast::LayerNormVJP>(
      "LayerNormVJP",
      [](const fast::LayerNormVJP& p, StateWriter& w) {
        w.f(p.eps()).b(p.has_weight()).b(p.has_bias());
      },
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) -> std::shared_ptr<Primitive> {
        const float eps = static_cast<float>(in.f());
        const bool has_weight = in.b();
        const bool has_bias = in.b();
        check_norm_vjp(in, shapes, dtypes, has_weight);  // the bias is not an input
        return fast::make_layer_norm_vjp(s, eps, has_weight, has_bias);
      });
  r.add_rebuilt<fast::CrossEntropy>(
      "CrossEntropy", [](const fast::CrossEntropy&, StateWriter&) {},
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) -> std::shared_ptr<Primitive> {
        require(shapes.size() == 2, in, "the number of inputs");
        check_loss_inputs(in, shapes, dtypes);
        return fast::make_cross_entropy(s);
      });
  r.add_rebuilt<fast::CrossEntropyVJP>(
      "CrossEntropyVJP", [](const fast::CrossEntropyVJP&, StateWriter&) {},
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) -> std::shared_ptr<Primitive> {
        // Inputs: logits, targets, the forward's logsumexp and the loss's cotangent.
        require(shapes.size() == 4, in, "the number of inputs");
        check_loss_inputs(in, shapes, dtypes);
        require(shapes[2] == shapes[1] && shapes[3] == shapes[1], in,
                "the logsumexp and the cotangent");
        return fast::make_cross_entropy_vjp(s);
      });
  r.add_rebuilt<fast::SoftmaxVJP>(
      "SoftmaxVJP", [](const fast::SoftmaxVJP&, StateWriter&) {},
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) -> std::shared_ptr<Primitive> {
        // Inputs: the softmax y (rank >= 1, float) and its cotangent, of y's shape and dtype.
        require(shapes.size() == 2, in, "the number of inputs");
        require(!shapes[0].empty() && is_float(dtypes[0]), in, "the softmax");
        require(shapes[1] == shapes[0] && dtypes[1] == dtypes[0], in, "the cotangent");
        return fast::make_softmax_vjp(s);
      });
}

}  // namespace kiln
