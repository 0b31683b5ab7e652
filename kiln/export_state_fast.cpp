// Export codecs of the fused fast operations that can be rebuilt through their op, so an
// imported function keeps the fused kernel: the op is called on placeholders of the saved
// input shapes and dtypes, and must give one node of the same primitive on exactly those
// inputs. The others (and any node that does not rebuild so) are exported as their
// fallback's operations (export_program.cpp).
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

}  // namespace

void ExportAccess::register_fast(Registry& r) {
  r.add_rebuilt<fast::RMSNorm>(
      "RMSNorm", [](const fast::RMSNorm& p, StateWriter& w) { w.f(p.eps()).b(p.has_weight()); },
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) {
        float eps = static_cast<float>(in.f());
        bool has_weight = in.b();
        if (shapes.size() != (has_weight ? 2u : 1u)) in.fail("the number of inputs");
        auto x = placeholders(shapes, dtypes, s);
        std::optional<array> w;
        if (has_weight) w = x[1];
        return node_of<fast::RMSNorm>(fast::rms_norm(x[0], w, eps, s), x, in);
      });
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
  r.add_rebuilt<fast::ScaledDotProductAttention>(
      "ScaledDotProductAttention",
      [](const fast::ScaledDotProductAttention& p, StateWriter& w) {
        w.f(p.scale()).i(static_cast<int>(p.mask())).b(p.has_sinks());
      },
      [](StateReader& in, Stream s, const std::vector<Shape>& shapes,
         const std::vector<Dtype>& dtypes) {
        float scale = static_cast<float>(in.f());
        int64_t mask = in.i();
        bool has_sinks = in.b();
        if (mask < 0 || mask > 3) in.fail("an unknown mask kind");
        const auto kind = static_cast<fast::MaskKind>(mask);
        const bool has_mask = kind == fast::MaskKind::boolean || kind == fast::MaskKind::additive;
        if (shapes.size() != 3u + has_mask + has_sinks) in.fail("the number of inputs");
        auto x = placeholders(shapes, dtypes, s);
        std::optional<array> m, sinks;
        if (has_mask) m = x[3];
        if (has_sinks) sinks = x[3 + has_mask];
        const std::string mode = kind == fast::MaskKind::causal ? "causal"
                                 : has_mask                     ? "array"
                                                                : "";
        return node_of<fast::ScaledDotProductAttention>(
            fast::scaled_dot_product_attention(x[0], x[1], x[2], scale, mode, m, sinks, s), x, in);
      });
}

}  // namespace kiln
