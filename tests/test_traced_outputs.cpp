// Graphs kept for a vjp while part of them is evaluated (a model reading routing indices
// on the host mid-trace): buffers the vjp reads must survive the eval, both inputs an op
// could overwrite in place and outputs nobody holds. Plus MLX's tie rule for
// maximum/minimum and its choice of sampler for one categorical distribution.
#include <cmath>

#include "kiln/kiln.h"
#include "kiln/primitive.h"
#include "test_utils.h"

using namespace kiln;

namespace {

std::vector<double> vals(const array& a) {
  return test::to_double(a);
}

// Two outputs (x^2, 2x); the vjp of the first reads the second, as fused attention's
// reads its logsumexp.
class SquareWithSlope : public Primitive {
 public:
  explicit SquareWithSlope(Stream s) : Primitive(s) {}
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    const array& in = inputs[0];
    for (auto& o : outputs) o.set_data(Storage::host(o.nbytes()));
    const float* p = in.data<float>();
    for (size_t i = 0; i < in.size(); ++i) {
      float v = p[elem_to_loc(i, in.shape(), in.strides())];
      outputs[0].data<float>()[i] = v * v;
      outputs[1].data<float>()[i] = 2 * v;
    }
  }
  void eval_gpu(const std::vector<array>&, std::vector<array>&) override {
    throw std::runtime_error("[SquareWithSlope] cpu only");
  }
  std::vector<array> vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                         const std::vector<int>&, const std::vector<array>& outputs) override {
    return {multiply(cotangents[0], outputs[1])};
  }
  const char* name() const override { return "SquareWithSlope"; }
  static array square(const array& x) {
    return array::make_arrays({x.shape(), x.shape()}, {float32, float32},
                              std::make_shared<SquareWithSlope>(default_stream(Device::cpu)),
                              {x})[0];
  }
};

}  // namespace

TEST(TracedOutputs, EvalInsideVjpKeepsInputsTheVjpReads) {
  // sin's vjp reads its input; evaluating sin mid-trace must not write sin into it.
  array x({0.3f, -1.2f, 2.0f});
  for (bool force : {false, true}) {
    auto f = [force](const std::vector<array>& in) {
      array h = sin(multiply(in[0], array(1.5f)));
      if (force) h.eval();
      return std::vector<array>{sum(multiply(h, h))};
    };
    auto g = vjp(f, {x}, {array(1.0f)}).second[0];
    auto got = vals(g);
    const double xs[] = {0.3, -1.2, 2.0};
    for (int i = 0; i < 3; ++i) {
      double ref = 2 * std::sin(1.5 * xs[i]) * std::cos(1.5 * xs[i]) * 1.5;
      EXPECT_NEAR(got[i], ref, 1e-5) << "force " << force << " i " << i;
    }
  }
}

TEST(TracedOutputs, DroppedSiblingComesBackEvaluated) {
  // Only the first output is held; it is evaluated mid-trace, then the vjp asks for the
  // second, whose desc was dropped in between.
  array x({0.5f, -2.0f, 3.0f, 1.0f});
  auto f = [](const std::vector<array>& in) {
    array y = SquareWithSlope::square(in[0]);
    y.eval();
    return std::vector<array>{sum(multiply(y, array(3.0f)))};
  };
  auto g = vjp(f, {x}, {array(1.0f)}).second[0];
  EXPECT_EQ(vals(g), (std::vector<double>{3.0, -12.0, 18.0, 6.0}));
  // The same graph differentiated twice (a second vjp rebuilds the sibling again).
  auto g2 = vjp(f, {x}, {array(2.0f)}).second[0];
  EXPECT_EQ(vals(g2), (std::vector<double>{6.0, -24.0, 36.0, 12.0}));
}

TEST(TracedOutputs, AttentionEvaluatedMidTraceMatchesUnevaluated) {
  std::vector<float> qv, kv, vv;
  for (int i = 0; i < 2 * 4 * 8; ++i) {
    qv.push_back(std::sin(0.37f * i));
    kv.push_back(std::cos(0.21f * i));
    vv.push_back(std::sin(0.13f * i + 1.0f));
  }
  array q(qv.data(), Shape{1, 2, 4, 8}), k(kv.data(), Shape{1, 2, 4, 8}),
      v(vv.data(), Shape{1, 2, 4, 8});
  std::vector<std::vector<double>> grads;
  for (bool force : {false, true}) {
    auto f = [&, force](const std::vector<array>& in) {
      array o = fast::scaled_dot_product_attention(in[0], k, v, 0.35f, "causal");
      if (force) o.eval();
      return std::vector<array>{sum(multiply(o, o))};
    };
    grads.push_back(vals(vjp(f, {q}, {array(1.0f)}).second[0]));
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) EXPECT_NEAR(grads[0][i], grads[1][i], 1e-6);
}

TEST(TracedOutputs, MaximumMinimumTiesGoToTheSecondInput) {
  array a({1.0f, 2.0f, 3.0f}), b({2.0f, 2.0f, 2.0f});
  auto grads = [&](auto op) {
    auto f = [&](const std::vector<array>& in) {
      return std::vector<array>{sum(op(in[0], in[1]))};
    };
    auto g = vjp(f, {a, b}, {array(1.0f)}).second;
    return std::make_pair(vals(g[0]), vals(g[1]));
  };
  auto [ma, mb] = grads([](const array& x, const array& y) { return maximum(x, y); });
  EXPECT_EQ(ma, (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(mb, (std::vector<double>{1, 1, 0}));
  auto [na, nb] = grads([](const array& x, const array& y) { return minimum(x, y); });
  EXPECT_EQ(na, (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(nb, (std::vector<double>{0, 1, 1}));
}

TEST(TracedOutputs, CategoricalOfOneRowInvertsItsCdf) {
  std::vector<float> lv;
  for (int i = 0; i < 24; ++i) lv.push_back(std::sin(1.7f * i) * 2);
  array logits(lv.data(), Shape{1, 24});
  double total = 0;
  std::vector<double> w;
  for (float l : lv) w.push_back(std::exp(static_cast<double>(l)));
  for (double x : w) total += x;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    array key = random::key(seed);
    array got = random::categorical(logits, -1, key);
    ASSERT_EQ(got.shape(), (Shape{1}));
    double u = vals(random::uniform(Shape{1}, key))[0] * total;
    // The category whose [start, start + w) holds u * sum(w).
    int ref = 0;
    double start = 0;
    for (int i = 0; i < 24; ++i) {
      if (start <= u) ref = i;
      start += w[i];
    }
    EXPECT_EQ(vals(got)[0], ref) << "seed " << seed;
  }
}
