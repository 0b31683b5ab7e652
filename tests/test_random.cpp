// Random numbers: the Threefry generator against its published answers, the layout of the
// key streams, determinism and independence of keys, distributions (moments and a
// Kolmogorov-Smirnov statistic, with bounds loose enough never to fail by chance), ranges,
// dtypes, shapes, transforms and errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "kiln/primitives_random.h"
#include "kiln/random.h"
#include "test_utils.h"

using namespace kiln;
namespace rnd = kiln::random;

namespace {

constexpr Dtype kFloatTypes[] = {float32, float64, float16, bfloat16};

// A fresh key per run (the seed of the test run is printed on failure).
array fresh_key() {
  return rnd::key(test::rng()());
}

std::pair<uint32_t, uint32_t> key_words(const array& key) {
  auto v = test::to_double(key);
  return {static_cast<uint32_t>(v[0]), static_cast<uint32_t>(v[1])};
}

template <typename T>
std::vector<T> values(array a) {
  a = contiguous(a);
  a.eval();
  return std::vector<T>(a.data<T>(), a.data<T>() + a.size());
}

double mean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s / x.size();
}

double variance(const std::vector<double>& x) {
  double m = mean(x), s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return s / x.size();
}

// Kolmogorov-Smirnov statistic of the samples against the continuous CDF `cdf`.
double ks_statistic(std::vector<double> x, const std::function<double(double)>& cdf) {
  std::sort(x.begin(), x.end());
  double d = 0, n = static_cast<double>(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double f = cdf(x[i]);
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  return d;
}

double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::numbers::sqrt2);
}
double normal_pdf(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
}

// Spacing of `dtype` around magnitude `x` (the resolution of samples near it).
double spacing(Dtype dtype, double x) {
  int mantissa = dtype == float16 ? 10 : dtype == bfloat16 ? 7 : dtype == float32 ? 23 : 52;
  return std::ldexp(1.0, std::ilogb(std::max(std::abs(x), 1e-30)) - mantissa);
}

bool all_equal(const array& a, const array& b) {
  return a.shape() == b.shape() && test::to_double(a) == test::to_double(b);
}

}  // namespace

// ---------------------------------------------------------------- the generator and the keys

TEST(RandomBits, ThreefryMatchesRandom123KnownAnswers) {
  using random_impl::threefry2x32;
  // (key, counter) -> output, from Random123's kat_vectors (threefry2x32, 20 rounds).
  auto r = threefry2x32(0, 0, 0, 0);
  EXPECT_EQ(r.x0, 0x6b200159u);
  EXPECT_EQ(r.x1, 0x99ba4efeu);
  r = threefry2x32(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(r.x0, 0x1cb996fcu);
  EXPECT_EQ(r.x1, 0xbb002be7u);
  r = threefry2x32(0x13198a2eu, 0x03707344u, 0x243f6a88u, 0x85a308d3u);
  EXPECT_EQ(r.x0, 0xc4923a9cu);
  EXPECT_EQ(r.x1, 0x483df7a0u);
  static_assert(threefry2x32(0, 0, 0, 0).x0 == 0x6b200159u, "usable at compile time");
}

TEST(RandomBits, KeyHoldsTheSeedsWords) {
  array k = rnd::key(0x0123456789abcdefull);
  EXPECT_EQ(k.dtype(), uint32);
  EXPECT_EQ(k.shape(), (Shape{2}));
  auto [k0, k1] = key_words(k);
  EXPECT_EQ(k0, 0x01234567u);
  EXPECT_EQ(k1, 0x89abcdefu);
}

TEST(RandomBits, EveryWidthReadsTheKeyStream) {
  array key = fresh_key();
  auto [k0, k1] = key_words(key);
  std::vector<uint32_t> words;
  for (uint64_t i = 0; i < 8; ++i) {
    auto w = random_impl::stream_block(k0, k1, i);
    words.push_back(w.x0);
    words.push_back(w.x1);
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(words.data());
  // Odd sizes end inside a block.
  auto b4 = values<uint32_t>(rnd::bits({7}, 4, key));
  for (int i = 0; i < 7; ++i) EXPECT_EQ(b4[i], words[i]) << i;
  auto b8 = values<uint64_t>(rnd::bits({3}, 8, key));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b8[i], words[2 * i] | uint64_t(words[2 * i + 1]) << 32);
  auto b2 = values<uint16_t>(rnd::bits({2, 5}, 2, key));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(b2[i], bytes[2 * i] | bytes[2 * i + 1] << 8) << i;
  auto b1 = values<uint8_t>(rnd::bits({13}, 1, key));
  for (int i = 0; i < 13; ++i) EXPECT_EQ(b1[i], bytes[i]) << i;
  EXPECT_EQ(rnd::bits({3}, 1, key).dtype(), uint8);
  EXPECT_EQ(rnd::bits({3}, key).dtype(), uint32);
}

TEST(RandomBits, LargeOutputsSplitAcrossThreadsStayIdentical) {
  // Block i must not depend on how the blocks were divided among threads.
  array key = fresh_key();
  auto [k0, k1] = key_words(key);
  const int n = 1 << 18;
  auto big = values<uint32_t>(rnd::bits({n}, 4, key));
  for (int i : {0, 1, 2, 8191 * 2, 8192 * 2 + 1, n / 2, n - 2, n - 1}) {
    auto w = random_impl::stream_block(k0, k1, i / 2);
    EXPECT_EQ(big[i], i % 2 ? w.x1 : w.x0) << i;
  }
}

TEST(RandomSplit, NewKeysAreBlocksOfTheStream) {
  array key = fresh_key();
  auto [k0, k1] = key_words(key);
  array keys = rnd::split(key, 5);
  EXPECT_EQ(keys.shape(), (Shape{5, 2}));
  EXPECT_EQ(keys.dtype(), uint32);
  auto v = values<uint32_t>(keys);
  for (int i = 0; i < 5; ++i) {
    auto w = random_impl::stream_block(k0, k1, i);
    EXPECT_EQ(v[2 * i], w.x0);
    EXPECT_EQ(v[2 * i + 1], w.x1);
  }
  auto [a, b] = rnd::split(key);
  EXPECT_EQ(a.shape(), (Shape{2}));
  EXPECT_TRUE(all_equal(a, reshape(slice(keys, {0, 0}, {1, 2}), {2})));
  EXPECT_TRUE(all_equal(b, reshape(slice(keys, {1, 0}, {2, 2}), {2})));
  EXPECT_EQ(rnd::split(key, 0).shape(), (Shape{0, 2}));
}

TEST(RandomSplit, GlobalKeyAdvancesAsSplit) {
  rnd::seed(1234);
  array a = rnd::uniform({16});
  array b = rnd::uniform({16});
  EXPECT_FALSE(all_equal(a, b));
  // seed -> key; each sampler takes the second key of split and keeps the first.
  auto [keep, use] = rnd::split(rnd::key(1234));
  EXPECT_TRUE(all_equal(a, rnd::uniform({16}, use)));
  EXPECT_TRUE(all_equal(b, rnd::uniform({16}, rnd::split(keep).second)));
  rnd::seed(1234);
  EXPECT_TRUE(all_equal(a, rnd::uniform({16})));
}

TEST(RandomSplit, SameKeySameNumbersOtherKeysOthers) {
  array key = fresh_key();
  auto [k1, k2] = rnd::split(key);
  for (Dtype t : kFloatTypes) {
    EXPECT_TRUE(all_equal(rnd::uniform({100}, t, key), rnd::uniform({100}, t, key)));
    EXPECT_FALSE(all_equal(rnd::uniform({100}, t, k1), rnd::uniform({100}, t, k2)));
    EXPECT_FALSE(all_equal(rnd::uniform({100}, t, key), rnd::uniform({100}, t, k1)));
  }
  EXPECT_TRUE(
      all_equal(rnd::randint(0, 1000, {50}, int32, k1), rnd::randint(0, 1000, {50}, int32, k1)));
  EXPECT_FALSE(
      all_equal(rnd::randint(0, 1000, {50}, int32, k1), rnd::randint(0, 1000, {50}, int32, k2)));
  EXPECT_TRUE(all_equal(rnd::normal({50}, key), rnd::normal({50}, key)));
  EXPECT_FALSE(all_equal(rnd::normal({50}, k1), rnd::normal({50}, k2)));
  // Neighbouring seeds give unrelated streams.
  auto a = values<uint32_t>(rnd::bits({1000}, 4, rnd::key(7)));
  auto b = values<uint32_t>(rnd::bits({1000}, 4, rnd::key(8)));
  int same = 0;
  for (int i = 0; i < 1000; ++i) same += a[i] == b[i];
  EXPECT_LT(same, 3);
}

// ---------------------------------------------------------------- uniform

TEST(RandomUniform, RangeMomentsAndKolmogorovSmirnov) {
  const int n = 100000;
  for (Dtype t : kFloatTypes) {
    SCOPED_TRACE(t);
    array x = rnd::uniform(-3.0, 5.0, {n}, t, fresh_key());
    EXPECT_EQ(x.dtype(), t);
    EXPECT_EQ(x.shape(), (Shape{n}));
    auto v = test::to_double(x);
    EXPECT_GE(*std::min_element(v.begin(), v.end()), -3.0);
    EXPECT_LT(*std::max_element(v.begin(), v.end()), 5.0);
    // Mean 1, variance 64 / 12; the standard error of the mean is 0.007.
    EXPECT_NEAR(mean(v), 1.0, 0.05);
    EXPECT_NEAR(variance(v), 64.0 / 12, 0.15);
    // KS: 2.5 / sqrt(n) is exceeded by chance with probability 1e-5; the half types add
    // their resolution.
    double d = ks_statistic(v, [](double y) { return std::clamp((y + 3) / 8, 0.0, 1.0); });
    EXPECT_LT(d, 2.5 / std::sqrt(n) + spacing(t, 5.0) / 8) << "KS statistic";
  }
}

TEST(RandomUniform, DefaultsAreUnitIntervalFloat32) {
  array x = rnd::uniform({1000}, fresh_key());
  EXPECT_EQ(x.dtype(), float32);
  auto v = test::to_double(x);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0);
  EXPECT_LT(*std::max_element(v.begin(), v.end()), 1.0);
  EXPECT_NEAR(mean(v), 0.5, 0.05);
}

TEST(RandomUniform, ArrayBoundsBroadcast) {
  array low = test::random_array({3, 1}, float32, -10, 0);
  array high = test::random_array({4}, float32, 1, 10);
  array x = rnd::uniform(low, high, {2, 3, 4}, float32, fresh_key());
  EXPECT_EQ(x.shape(), (Shape{2, 3, 4}));
  auto v = test::to_double(x), lo = test::to_double(low), hi = test::to_double(high);
  for (size_t i = 0; i < v.size(); ++i) {
    double l = lo[(i / 4) % 3], h = hi[i % 4];
    EXPECT_GE(v[i], l);
    EXPECT_LT(v[i], h);
  }
}

TEST(RandomUniform, NeverReturnsHigh) {
  // A range of one ulp: half of low + range * u rounds onto high and must step back.
  for (Dtype t : kFloatTypes) {
    SCOPED_TRACE(t);
    double high = 1.0 + spacing(t, 1.0);
    auto v = test::to_double(rnd::uniform(array(1.0, t), array(high, t), {1000}, t, fresh_key()));
    for (double y : v) ASSERT_EQ(y, 1.0);
    // Reversed bounds: values in (high, low].
    v = test::to_double(rnd::uniform(array(2.0, t), array(-2.0, t), {1000}, t, fresh_key()));
    for (double y : v) {
      ASSERT_GT(y, -2.0);
      ASSERT_LE(y, 2.0);
    }
    // Equal bounds.
    v = test::to_double(rnd::uniform(array(0.5, t), array(0.5, t), {10}, t, fresh_key()));
    for (double y : v) ASSERT_EQ(y, 0.5);
  }
}

TEST(RandomUniform, ShapesIncludingEmptyAndScalar) {
  EXPECT_EQ(rnd::uniform({}, fresh_key()).shape(), Shape{});
  EXPECT_EQ(rnd::uniform({0}, fresh_key()).size(), 0u);
  array e = rnd::uniform({3, 0, 2}, fresh_key());
  e.eval();
  EXPECT_EQ(e.shape(), (Shape{3, 0, 2}));
  EXPECT_EQ(rnd::bits({0, 4}, 1, fresh_key()).shape(), (Shape{0, 4}));
}

// ---------------------------------------------------------------- normal and friends

TEST(RandomNormal, MomentsAndKolmogorovSmirnov) {
  const int n = 100000;
  for (Dtype t : kFloatTypes) {
    SCOPED_TRACE(t);
    array x = rnd::normal({n}, t, fresh_key());
    EXPECT_EQ(x.dtype(), t);
    auto v = test::to_double(x);
    for (double y : v) ASSERT_TRUE(std::isfinite(y));
    EXPECT_NEAR(mean(v), 0.0, 0.02);
    EXPECT_NEAR(variance(v), 1.0, 0.03);
    double d = ks_statistic(v, normal_cdf);
    EXPECT_LT(d, 2.5 / std::sqrt(n) + spacing(t, 1.0) / 2) << "KS statistic";
  }
}

TEST(RandomNormal, LocAndScale) {
  auto v = test::to_double(rnd::normal({50000}, float32, 3.0f, 2.0f, fresh_key()));
  EXPECT_NEAR(mean(v), 3.0, 0.05);
  EXPECT_NEAR(std::sqrt(variance(v)), 2.0, 0.05);
}

TEST(RandomTruncatedNormal, StaysInBoundsWithTheRightMean) {
  const double a = -1.0, b = 2.0;
  for (Dtype t : {float32, float64, bfloat16}) {
    SCOPED_TRACE(t);
    auto v = test::to_double(rnd::truncated_normal(array(a), array(b), {50000}, t, fresh_key()));
    for (double y : v) {
      ASSERT_GE(y, a);
      ASSERT_LE(y, b);
    }
    double z = normal_cdf(b) - normal_cdf(a);
    double expected_mean = (normal_pdf(a) - normal_pdf(b)) / z;
    EXPECT_NEAR(mean(v), expected_mean, 0.02);
    auto cdf = [&](double y) { return (normal_cdf(y) - normal_cdf(a)) / z; };
    EXPECT_LT(ks_statistic(v, cdf), 2.5 / std::sqrt(50000.0) + spacing(t, 2.0) / 2);
  }
  // Bounds broadcast: per-column intervals.
  array lo({-1.0f, 0.0f, 5.0f}), hi({1.0f, 0.5f, 5.5f});
  array x = rnd::truncated_normal(lo, hi, {100, 3}, float32, fresh_key());
  auto v = test::to_double(x);
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_GE(v[i], test::to_double(lo)[i % 3]);
    ASSERT_LE(v[i], test::to_double(hi)[i % 3]);
  }
  EXPECT_EQ(rnd::truncated_normal(lo, hi, float32, fresh_key()).shape(), (Shape{3}));
}

TEST(RandomGumbel, Moments) {
  auto v = test::to_double(rnd::gumbel({100000}, float32, fresh_key()));
  for (double y : v) ASSERT_TRUE(std::isfinite(y));
  EXPECT_NEAR(mean(v), std::numbers::egamma, 0.02);
  EXPECT_NEAR(variance(v), std::numbers::pi * std::numbers::pi / 6, 0.08);
  EXPECT_EQ(rnd::gumbel({3}, float16, fresh_key()).dtype(), float16);
}

// ---------------------------------------------------------------- integers and bools

TEST(RandomRandint, RangeAndUniformityForEveryIntegerType) {
  const int n = 60000;
  for (Dtype t : {int8, uint8, int16, uint16, int32, uint32, int64, uint64}) {
    SCOPED_TRACE(t);
    const int lo = is_unsigned(t) ? 3 : -5, hi = lo + 12;
    array x = rnd::randint(lo, hi, {n}, t, fresh_key());
    EXPECT_EQ(x.dtype(), t);
    std::vector<int> counts(12, 0);
    for (double y : test::to_double(x)) {
      ASSERT_GE(y, lo);
      ASSERT_LT(y, hi);
      ++counts[static_cast<int>(y) - lo];
    }
    // Each count is binomial(n, 1/12): mean 5000, standard deviation 68.
    for (int c : counts) EXPECT_NEAR(c, n / 12, 400);
  }
}

TEST(RandomRandint, FullRangesAndBroadcastBounds) {
  // The whole int64 range: values spread over both halves.
  array x = rnd::randint(array(std::numeric_limits<int64_t>::min()),
                         array(std::numeric_limits<int64_t>::max()), {4000}, int64, fresh_key());
  auto v = values<int64_t>(x);
  int negative = 0;
  for (auto y : v) negative += y < 0;
  EXPECT_NEAR(negative, 2000, 200);
  array u = rnd::randint(array(0u), array(std::numeric_limits<uint32_t>::max()), {4000}, uint32,
                         fresh_key());
  int high_half = 0;
  for (auto y : values<uint32_t>(u)) high_half += y >= (1u << 31);
  EXPECT_NEAR(high_half, 2000, 200);
  // Per-row bounds; an empty interval gives low.
  array lo({0, 10, 5}), hi({1, 20, 5});
  auto r = test::to_double(
      rnd::randint(reshape(lo, {3, 1}), reshape(hi, {3, 1}), {3, 50}, int32, fresh_key()));
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(r[i], 0);
    EXPECT_GE(r[50 + i], 10);
    EXPECT_LT(r[50 + i], 20);
    EXPECT_EQ(r[100 + i], 5);
  }
}

TEST(RandomBernoulli, FrequenciesFollowP) {
  auto v = test::to_double(rnd::bernoulli(array(0.3f), {100000}, fresh_key()));
  EXPECT_NEAR(mean(v), 0.3, 0.01);
  array p({0.0f, 0.5f, 1.0f});
  array x = rnd::bernoulli(p, {2000, 3}, fresh_key());
  EXPECT_EQ(x.dtype(), bool_);
  auto b = test::to_double(x);
  double ones = 0;
  for (int i = 0; i < 2000; ++i) {
    EXPECT_EQ(b[3 * i], 0.0);
    EXPECT_EQ(b[3 * i + 2], 1.0);
    ones += b[3 * i + 1];
  }
  EXPECT_NEAR(ones / 2000, 0.5, 0.06);
  EXPECT_EQ(rnd::bernoulli(p, fresh_key()).shape(), (Shape{3}));
  EXPECT_EQ(rnd::bernoulli(array(0.5, float16), {4}, fresh_key()).dtype(), bool_);
}

TEST(RandomCategorical, FrequenciesAndShapes) {
  std::vector<double> probs{0.1, 0.2, 0.7};
  array logits({std::log(0.1f), std::log(0.2f), std::log(0.7f)});
  const int n = 30000;
  array x = rnd::categorical(logits, 0, Shape{n}, fresh_key());
  EXPECT_EQ(x.dtype(), uint32);
  std::vector<int> counts(3, 0);
  for (double y : test::to_double(x)) ++counts[static_cast<int>(y)];
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(counts[c] / double(n), probs[c], 0.015);

  // Two distributions along the last axis; one certain.
  array l2 = stack({logits, array({-1e9f, 0.0f, -1e9f})});  // (2, 3)
  EXPECT_EQ(rnd::categorical(l2, -1, fresh_key()).shape(), (Shape{2}));
  array s = rnd::categorical(l2, -1, 50, fresh_key());
  EXPECT_EQ(s.shape(), (Shape{2, 50}));
  auto sv = test::to_double(s);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sv[50 + i], 1.0);
  EXPECT_EQ(rnd::categorical(l2, -1, Shape{7, 2}, fresh_key()).shape(), (Shape{7, 2}));
  // Along axis 0: (3, 2) logits give 2 samples.
  EXPECT_EQ(rnd::categorical(transpose(l2), 0, fresh_key()).shape(), (Shape{2}));
  auto t = test::to_double(rnd::categorical(transpose(l2), 0, Shape{5, 2}, fresh_key()));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t[2 * i + 1], 1.0);
}

// ---------------------------------------------------------------- transforms

TEST(RandomTransforms, VmapOverKeysMatchesEachKey) {
  array keys = rnd::split(fresh_key(), 4);
  auto f = [](const array& k) { return rnd::uniform({3, 2}, float32, k); };
  array batched = vmap(f)(keys);
  ASSERT_EQ(batched.shape(), (Shape{4, 3, 2}));
  for (int i = 0; i < 4; ++i) {
    array k = reshape(slice(keys, {i, 0}, {i + 1, 2}), {2});
    EXPECT_TRUE(all_equal(reshape(slice(batched, {i, 0, 0}, {i + 1, 3, 2}), {3, 2}), f(k))) << i;
  }
  // Keys mapped along axis 1 of a transposed array.
  array batched_t = vmap(f, 1)(transpose(keys));
  EXPECT_TRUE(all_equal(batched, batched_t));
}

TEST(RandomTransforms, GradientsFlowToTheBounds) {
  array key = fresh_key();
  array lo = test::random_array({64}, float32, -2, 0), hi = test::random_array({64}, float32, 1, 3);
  auto f = [&](const std::vector<array>& in) {
    return std::vector<array>{rnd::uniform(in[0], in[1], {64}, float32, key)};
  };
  array cot = test::random_array({64}, float32);
  auto [outs, grads] = vjp(f, {lo, hi}, {cot});
  auto u = test::to_double(rnd::uniform({64}, float32, key));
  auto c = test::to_double(cot);
  std::vector<double> g_lo(64), g_hi(64);
  for (int i = 0; i < 64; ++i) {
    g_lo[i] = c[i] * (1 - u[i]);
    g_hi[i] = c[i] * u[i];
  }
  test::expect_allclose(grads[0], {64}, g_lo);
  test::expect_allclose(grads[1], {64}, g_hi);
  // Forward mode agrees.
  auto [o2, tangents] = jvp(f, {lo, hi}, {cot, cot});
  test::expect_allclose(tangents[0], {64}, c);
}

// ---------------------------------------------------------------- errors

TEST(RandomErrors, BadArgumentsThrowTaggedErrors) {
  auto expect_error = [](auto f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "no exception; expected " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  array key = fresh_key();
  expect_error(
      [&] {
        rnd::uniform({3}, float32, array({1.0f, 2.0f}));
      },
      "[uniform] A key must be a uint32 array of shape (2,); got float32");
  expect_error([&] { rnd::bits({3}, 4, array({1u, 2u, 3u})); }, "[bits] A key must be");
  expect_error([&] { rnd::bits({3}, 3, key); }, "[bits] width must be 1, 2, 4 or 8 bytes; got 3.");
  expect_error([&] { rnd::bits({-1}, 4, key); }, "[bits] Negative dimension");
  expect_error([&] { rnd::uniform({3}, int32, key); }, "[uniform] dtype must be a real floating");
  expect_error(
      [&] {
        rnd::uniform(array({0.0f, 1.0f}), array(2.0f), {3}, float32, key);
      },
      "[uniform] low of shape (2,) cannot be broadcast to shape (3,).");
  expect_error([&] { rnd::normal({3}, complex64, key); }, "[normal] dtype");
  expect_error([&] { rnd::randint(0, 5, {3}, float32, key); },
               "[randint] dtype must be an integer type; got float32.");
  expect_error([&] { rnd::randint(0, 5, {3}, bool_, key); }, "[randint]");
  expect_error([&] { rnd::randint(array({1, 2}), array(5), {3}, int32, key); }, "[randint] low");
  expect_error([&] { rnd::bernoulli(array(1), {3}, key); }, "[bernoulli] p must be a real");
  expect_error([&] { rnd::bernoulli(array({0.5f, 0.5f}), {3}, key); }, "[bernoulli] p of shape");
  expect_error([&] { rnd::split(key, -1); }, "[split] The number of keys must be non-negative");
  expect_error([&] { rnd::split(array({1, 2})); }, "[split] A key must be");
  expect_error([&] { rnd::truncated_normal(array(0.0f), array(1.0f), {3}, int32, key); },
               "[truncated_normal]");
  expect_error([&] { rnd::gumbel({2}, uint8, key); }, "[gumbel]");
  array logits = rnd::uniform({2, 3}, key);
  expect_error([&] { rnd::categorical(logits, 2, key); }, "[categorical] Axis 2");
  expect_error([&] { rnd::categorical(logits, -1, Shape{3}, key); }, "[categorical]");
  expect_error([&] { rnd::categorical(logits, -1, -2, key); }, "[categorical] num_samples");
  expect_error([&] { rnd::categorical(array({1, 2}), 0, key); }, "[categorical] logits must be");
}

TEST(RandomErrors, ARejectedCallLeavesTheGlobalKeyAlone) {
  rnd::seed(99);
  EXPECT_THROW(rnd::uniform({3}, int32), std::invalid_argument);
  EXPECT_THROW(rnd::randint(0, 3, {-2}), std::invalid_argument);
  array a = rnd::uniform({8});
  rnd::seed(99);
  EXPECT_TRUE(all_equal(a, rnd::uniform({8})));
}
