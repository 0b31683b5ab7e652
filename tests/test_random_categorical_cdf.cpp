// random::categorical's choice of sampler, as MLX 0.32 makes it: a single distribution
// (every axis but the sampled one of size 1) drawn to a non-scalar result inverts the CDF
// of exp(logits - max) with one float32 uniform per sample; batched logits, and a single
// distribution drawn to a scalar, take argmax(logits + Gumbel noise).
#include <cmath>
#include <limits>

#include "kiln/random.h"
#include "test_utils.h"

using namespace kiln;
namespace rnd = kiln::random;

namespace {

// The inverse-CDF draw in float64 from the same uniforms: the index whose cumulative
// weight interval holds u * total.
std::vector<double> inverse_cdf_reference(const std::vector<double>& logits,
                                          const std::vector<double>& u) {
  double m = -std::numeric_limits<double>::infinity();
  for (double l : logits) m = std::max(m, l);
  std::vector<double> cdf;
  double total = 0.0;
  for (double l : logits) cdf.push_back(total += std::exp(l - m));
  std::vector<double> out;
  for (double ui : u) {
    const double t = ui * total;
    size_t i = 0;
    while (i + 1 < cdf.size() && cdf[i] <= t) ++i;
    out.push_back(static_cast<double>(i));
  }
  return out;
}

std::vector<float> logits_values() {
  return {0.3f, -1.2f, 2.0f, 0.7f, -0.4f, 1.1f, 0.0f};
}

array vec(const std::vector<float>& v) {
  return array(v.begin(), Shape{static_cast<int>(v.size())});
}

}  // namespace

TEST(RandomCategoricalCdf, BatchOfOneRowInvertsTheCdf) {
  const auto lv = logits_values();
  array logits = reshape(vec(lv), {1, static_cast<int>(lv.size())});
  std::vector<double> ld(lv.begin(), lv.end());
  for (uint64_t seed = 0; seed < 40; ++seed) {
    array key = rnd::key(seed);
    array got = rnd::categorical(logits, -1, key);
    EXPECT_EQ(got.shape(), (Shape{1}));
    auto u = test::to_double(rnd::uniform(Shape{1}, float32, key));
    // float32 weights in kiln against float64 here: only a draw within an ulp of a
    // boundary could differ, which these fixed seeds do not produce.
    EXPECT_EQ(test::to_double(got), inverse_cdf_reference(ld, u)) << "seed " << seed;
  }
}

TEST(RandomCategoricalCdf, ShapeOverloadAndAxisZero) {
  const auto lv = logits_values();
  std::vector<double> ld(lv.begin(), lv.end());
  array key = rnd::key(77);
  auto u = test::to_double(rnd::uniform(Shape{3, 4}, float32, key));
  auto want = inverse_cdf_reference(ld, u);
  EXPECT_EQ(test::to_double(rnd::categorical(vec(lv), 0, Shape{3, 4}, key)), want);
  // The same distribution laid along axis 0 of a (7, 1) array.
  array column = reshape(vec(lv), {static_cast<int>(lv.size()), 1});
  auto u1 = test::to_double(rnd::uniform(Shape{1}, float32, key));
  EXPECT_EQ(test::to_double(rnd::categorical(column, 0, key)), inverse_cdf_reference(ld, u1));
}

TEST(RandomCategoricalCdf, BatchedAndScalarKeepGumbelMax) {
  const auto lv = logits_values();
  const int c = static_cast<int>(lv.size());
  array key = rnd::key(5);
  // Two rows: Gumbel-max over the (2, C) noise.
  array two = reshape(concatenate({vec(lv), vec(lv)}, 0), {2, c});
  array g2 = rnd::gumbel(Shape{2, c}, float32, key);
  EXPECT_EQ(test::to_double(rnd::categorical(two, -1, key)),
            test::to_double(argmax(add(two, g2), -1)));
  // One distribution drawn to a scalar.
  array g1 = rnd::gumbel(Shape{c}, float32, key);
  EXPECT_EQ(test::to_double(rnd::categorical(vec(lv), 0, key)),
            test::to_double(argmax(add(vec(lv), g1), 0)));
}

TEST(RandomCategoricalCdf, InfiniteLogitsOfOneRow) {
  const float inf = std::numeric_limits<float>::infinity();
  array pos = reshape(array({0.0f, inf, 1.0f, inf}), {1, 4});
  array neg = reshape(array({-inf, -inf, -inf}), {1, 3});
  std::vector<int> seen_pos(4, 0), seen_neg(3, 0);
  for (uint64_t seed = 0; seed < 60; ++seed) {
    ++seen_pos[static_cast<int>(test::to_double(rnd::categorical(pos, -1, rnd::key(seed)))[0])];
    ++seen_neg[static_cast<int>(test::to_double(rnd::categorical(neg, -1, rnd::key(seed)))[0])];
  }
  // +inf entries share the draws; a row of -inf is uniform, not always category 0.
  EXPECT_EQ(seen_pos[0] + seen_pos[2], 0);
  EXPECT_GT(seen_pos[1], 0);
  EXPECT_GT(seen_pos[3], 0);
  for (int n : seen_neg) EXPECT_GT(n, 0);
}
