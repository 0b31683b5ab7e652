// Random distributions: moments and a Kolmogorov-Smirnov statistic (with bounds loose enough
// never to fail by chance), ranges, dtypes, broadcast parameters and shapes of uniform, normal
// and its relatives, the integer and bool samplers.
#include <cstring>
#include <limits>

#include "kiln/primitives_random.h"
#include "random_test.h"

using namespace random_test;

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
    // KS: kKolmogorovBound / sqrt(n) is exceeded by chance with probability 7e-10; the half
    // types add their resolution.
    double d = ks_statistic(v, [](double y) { return std::clamp((y + 3) / 8, 0.0, 1.0); });
    EXPECT_LT(d, kKolmogorovBound / std::sqrt(n) + spacing(t, 5.0) / 8) << "KS statistic";
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
    EXPECT_LE(v[i], h);  // as in MLX, range * u + low may round onto high
  }
}

// MLX's uniform, element by element: u = min(float(bits) / 2^32, the largest value below 1
// in T) rounded to T, then (high - low) * u + low with every operation rounded to T
// (float64, not in MLX: 64-bit words over 2^64).
template <typename T>
std::vector<double> uniform_reference(const array& key, int n, double low, double high) {
  std::vector<double> out(n);
  if constexpr (std::is_same_v<T, double>) {
    auto b = values<uint64_t>(rnd::bits({n}, 8, key));
    for (int i = 0; i < n; ++i) {
      double u = std::min(static_cast<double>(b[i]) / 0x1p64, std::nextafter(1.0, 0.0));
      volatile double r = high - low, p = r * u;  // no contraction into an fma
      out[i] = p + low;
    }
  } else {
    auto round = [](float x) { return static_cast<float>(static_cast<T>(x)); };
    const float below_one = std::is_same_v<T, float> ? std::nextafter(1.0f, 0.0f)
                            : std::is_same_v<T, float16_t>
                                ? static_cast<float>(float16_t::from_bits(0x3BFF))
                                : static_cast<float>(bfloat16_t::from_bits(0x3F7F));
    auto b = values<uint32_t>(rnd::bits({n}, 4, key));
    const float lo = round(static_cast<float>(low)), hi = round(static_cast<float>(high));
    for (int i = 0; i < n; ++i) {
      float u = round(std::min(static_cast<float>(b[i]) / 0x1p32f, below_one));
      volatile float r = round(hi - lo), p = round(r * u);
      out[i] = round(p + lo);
    }
  }
  return out;
}

TEST(RandomUniform, RoundsAsMlxDoesIncludingTheEdges) {
  // Wide, reversed and equal bounds, and a range of one ulp (where about half of the
  // samples round onto high, as they do in MLX).
  for (Dtype t : kFloatTypes) {
    SCOPED_TRACE(t);
    const double ulp1 = spacing(t, 1.0);
    for (auto [lo, hi] : std::vector<std::pair<double, double>>{
             {-3.0, 5.0}, {2.0, -2.0}, {0.5, 0.5}, {1.0, 1.0 + ulp1}, {-1e-3, 3e4}}) {
      SCOPED_TRACE(std::to_string(lo) + " .. " + std::to_string(hi));
      array key = fresh_key();
      const int n = 3001;
      auto v = test::to_double(rnd::uniform(array(lo, t), array(hi, t), {n}, t, key));
      std::vector<double> ref = t == float64   ? uniform_reference<double>(key, n, lo, hi)
                                : t == float32 ? uniform_reference<float>(key, n, lo, hi)
                                : t == float16 ? uniform_reference<float16_t>(key, n, lo, hi)
                                               : uniform_reference<bfloat16_t>(key, n, lo, hi);
      for (int i = 0; i < n; ++i) ASSERT_EQ(v[i], ref[i]) << i;
    }
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
    EXPECT_LT(d, kKolmogorovBound / std::sqrt(n) + spacing(t, 1.0) / 2) << "KS statistic";
  }
}

TEST(RandomNormal, LocAndScale) {
  auto v = test::to_double(rnd::normal({50000}, float32, 3.0f, 2.0f, fresh_key()));
  EXPECT_NEAR(mean(v), 3.0, 0.05);
  EXPECT_NEAR(std::sqrt(variance(v)), 2.0, 0.05);
}

TEST(RandomNormal, ArrayLocAndScaleBroadcast) {
  array key = fresh_key();
  array loc({1.0f, -2.0f, 30.0f});                     // (3,)
  array scale = reshape(array({0.5f, 4.0f}), {2, 1});  // (2, 1)
  array x = rnd::normal({2, 3}, float32, loc, scale, key);
  EXPECT_EQ(x.shape(), (Shape{2, 3}));
  // (sqrt(2) * scale) * e + loc against scale * (sqrt(2) * e) + loc: a rounding apart.
  array z = rnd::normal({2, 3}, key);
  auto zv = test::to_double(z), lv = test::to_double(loc), sv = test::to_double(scale);
  std::vector<double> ref(6);
  for (int i = 0; i < 6; ++i) ref[i] = sv[i / 3] * zv[i] + lv[i % 3];
  test::expect_allclose(x, {2, 3}, ref, 1e-6);
  // A loc wider than shape widens the result; one that does not broadcast is an error.
  EXPECT_EQ(
      rnd::normal({3}, float32, reshape(array({0.0f, 1.0f}), {2, 1}), std::nullopt, key).shape(),
      (Shape{2, 3}));
  EXPECT_THROW(rnd::normal({3}, float32, array({0.0f, 1.0f}), std::nullopt, key),
               std::invalid_argument);
  // Scalar loc and scale of 0 and 1 are no-ops.
  EXPECT_TRUE(
      all_equal(rnd::normal({5}, float16, 0.0f, 1.0f, key), rnd::normal({5}, float16, key)));
}

TEST(RandomNormal, Complex64HasHalfTheVarianceInEachPart) {
  const int n = 50000;
  array x = rnd::normal({n}, complex64, fresh_key());
  EXPECT_EQ(x.dtype(), complex64);
  auto c = test::to_complex(x);
  std::vector<double> re(n), im(n);
  for (int i = 0; i < n; ++i) re[i] = c[i].real(), im[i] = c[i].imag();
  for (const auto* part : {&re, &im}) {
    EXPECT_NEAR(mean(*part), 0.0, 0.02);
    EXPECT_NEAR(variance(*part), 0.5, 0.02);
  }
  // Parts are the erfinv of consecutive pairs of the float32 samples: real(z) * sqrt(2) is
  // the normal sample 2i, imag(z) * sqrt(2) sample 2i + 1.
  array key = fresh_key();
  auto z = test::to_complex(rnd::normal({3}, complex64, key));
  auto pairs = test::to_double(rnd::normal({6}, float32, key));
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(z[i].real() * std::numbers::sqrt2, pairs[2 * i], 1e-6);
    EXPECT_NEAR(z[i].imag() * std::numbers::sqrt2, pairs[2 * i + 1], 1e-6);
  }
  // loc and scale: scale * z + loc.
  auto w = test::to_complex(
      rnd::normal({3}, complex64, array(complex64_t(1.0f, -1.0f)), array(2.0f), key));
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(w[i].real(), 2 * z[i].real() + 1, 1e-6);
    EXPECT_NEAR(w[i].imag(), 2 * z[i].imag() - 1, 1e-6);
  }
  EXPECT_EQ(rnd::normal({}, complex64, fresh_key()).shape(), Shape{});
}

TEST(RandomLaplace, MomentsAndKolmogorovSmirnov) {
  const int n = 100000;
  for (Dtype t : kFloatTypes) {
    SCOPED_TRACE(t);
    array x = rnd::laplace({n}, t, 1.5f, 0.5f, fresh_key());
    EXPECT_EQ(x.dtype(), t);
    auto v = test::to_double(x);
    for (double y : v) ASSERT_TRUE(std::isfinite(y));
    // Mean 1.5, variance 2 b^2 = 0.5.
    EXPECT_NEAR(mean(v), 1.5, 0.02);
    EXPECT_NEAR(variance(v), 0.5, 0.03);
    auto cdf = [](double y) {
      double z = (y - 1.5) / 0.5;
      return z < 0 ? 0.5 * std::exp(z) : 1 - 0.5 * std::exp(-z);
    };
    EXPECT_LT(ks_statistic(v, cdf), kKolmogorovBound / std::sqrt(n) + spacing(t, 2.0) / 2)
        << "KS statistic";
  }
  array key = fresh_key();
  EXPECT_TRUE(
      all_equal(rnd::laplace({7}, float32, 0.0f, 1.0f, key), rnd::laplace({7}, float32, key)));
  EXPECT_EQ(rnd::laplace({2, 0}, float32, fresh_key()).shape(), (Shape{2, 0}));
}

TEST(RandomPermutation, IsTheArgsortOfRandomWords) {
  array key = fresh_key();
  for (int n : {0, 1, 2, 17, 1000}) {
    SCOPED_TRACE(n);
    array p = rnd::permutation(n, key);
    EXPECT_EQ(p.dtype(), uint32);
    EXPECT_EQ(p.shape(), (Shape{n}));
    auto v = test::to_double(p);
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
    auto w = values<uint32_t>(rnd::bits({n}, 4, key));
    for (int i = 0; i + 1 < n; ++i) {
      ASSERT_LE(w[static_cast<size_t>(v[i])], w[static_cast<size_t>(v[i + 1])]);
    }
  }
  // Along an axis: take of the permutation of that axis's length.
  array x = test::random_array({4, 5, 3}, float32);
  for (int axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    const int ax = axis < 0 ? axis + 3 : axis;
    array y = rnd::permutation(x, axis, key);
    EXPECT_TRUE(all_equal(y, take(x, rnd::permutation(x.shape(ax), key), ax)));
  }
  // Non-contiguous input, and an int array keeps its dtype.
  array xt = transpose(x);
  EXPECT_TRUE(all_equal(rnd::permutation(xt, 1, key), take(xt, rnd::permutation(5, key), 1)));
  EXPECT_EQ(rnd::permutation(array({1, 2, 3}), 0, key).dtype(), int32);
}

TEST(RandomMultivariateNormal, MomentsOrAClearErrorWithoutSvd) {
  array mean({4.0f, 7.0f});
  array cov({2.0f, 0.5f, 0.5f, 1.0f}, {2, 2});
  array x(0.0f);
  try {
    x = rnd::multivariate_normal(mean, cov, {50000}, float32, fresh_key(), Device::cpu);
    x.eval();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("[multivariate_normal] needs kiln::linalg::svd"),
              std::string::npos);
    GTEST_SKIP() << "kiln::linalg::svd is not in this build";
  }
  EXPECT_EQ(x.shape(), (Shape{50000, 2}));
  auto v = test::to_double(x);
  double m0 = 0, m1 = 0, c00 = 0, c01 = 0, c11 = 0;
  const int n = 50000;
  for (int i = 0; i < n; ++i) m0 += v[2 * i] / n, m1 += v[2 * i + 1] / n;
  for (int i = 0; i < n; ++i) {
    double a = v[2 * i] - m0, b = v[2 * i + 1] - m1;
    c00 += a * a / n, c01 += a * b / n, c11 += b * b / n;
  }
  EXPECT_NEAR(m0, 4.0, 0.05);
  EXPECT_NEAR(m1, 7.0, 0.05);
  EXPECT_NEAR(c00, 2.0, 0.08);
  EXPECT_NEAR(c01, 0.5, 0.05);
  EXPECT_NEAR(c11, 1.0, 0.05);
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
    EXPECT_LT(ks_statistic(v, cdf), kKolmogorovBound / std::sqrt(50000.0) + spacing(t, 2.0) / 2);
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
