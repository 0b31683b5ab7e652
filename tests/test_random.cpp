// Random numbers: the Threefry generator against its published answers, the layout of the
// key streams, determinism and independence of keys, distributions (moments and a
// Kolmogorov-Smirnov statistic, with bounds loose enough never to fail by chance), ranges,
// dtypes, shapes, transforms and errors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "kiln/backend/gpu.h"
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

// The KS bound's multiple of 1 / sqrt(n): sqrt(n) D exceeds t with probability
// 2 exp(-2 t^2) (Kolmogorov), 7e-10 at 3.3 (2.5 gave 7.5e-6 per check, ~1e-4 over the
// 15 checks of a run).
constexpr double kKolmogorovBound = 3.3;

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

// MLX's numbers (MLX 0.32.4's CPU build, C++ mlx::core::random::bits and split).
TEST(RandomBits, MlxsKnownAnswers) {
  array k3 = rnd::key(3);
  EXPECT_EQ(values<uint32_t>(rnd::split(k3, 2)),
            (std::vector<uint32_t>{1024511538u, 47757680u, 2603795180u, 1437962712u}));
  EXPECT_EQ(values<uint8_t>(rnd::bits({5}, 1, k3)), (std::vector<uint8_t>{75, 52, 5, 116, 142}));
  EXPECT_EQ(values<uint16_t>(rnd::bits({5}, 2, k3)),
            (std::vector<uint16_t>{52786, 15632, 46739, 1376, 49900}));
  EXPECT_EQ(
      values<uint32_t>(rnd::bits({5}, 4, k3)),
      (std::vector<uint32_t>{877192987u, 1614509672u, 4140764773u, 3448417067u, 2823528474u}));
  EXPECT_EQ(values<uint8_t>(rnd::bits({}, 1, k3)), (std::vector<uint8_t>{155}));
}

TEST(RandomBits, EveryWidthReadsTheKeyStreamOfItsByteCount) {
  array key = fresh_key();
  auto [k0, k1] = key_words(key);
  // The n bytes of a key are the first n bytes of the words of StreamLayout(n).
  auto stream_bytes = [&](size_t n) {
    random_impl::StreamLayout l(n);
    std::vector<uint32_t> words(l.words);
    for (uint64_t j = 0; j < l.words; ++j) words[j] = l.word(k0, k1, j);
    std::vector<uint8_t> bytes(n);
    if (n) std::memcpy(bytes.data(), words.data(), n);
    return bytes;
  };
  auto as_bytes = [](auto v) {
    std::vector<uint8_t> b(v.size() * sizeof(v[0]));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  for (int n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 33}) {
    SCOPED_TRACE(n);
    EXPECT_EQ(as_bytes(values<uint8_t>(rnd::bits({n}, 1, key))), stream_bytes(n));
    EXPECT_EQ(as_bytes(values<uint16_t>(rnd::bits({n}, 2, key))), stream_bytes(2 * n));
    EXPECT_EQ(as_bytes(values<uint32_t>(rnd::bits({n}, 4, key))), stream_bytes(4 * n));
    EXPECT_EQ(as_bytes(values<uint64_t>(rnd::bits({n}, 8, key))), stream_bytes(8 * n));
  }
  // The shape only counts bytes.
  EXPECT_EQ(as_bytes(values<uint16_t>(rnd::bits({2, 5}, 2, key))), stream_bytes(20));
  EXPECT_EQ(rnd::bits({3}, 1, key).dtype(), uint8);
  EXPECT_EQ(rnd::bits({3}, 8, key).dtype(), uint64);
  EXPECT_EQ(rnd::bits({3}, key).dtype(), uint32);
}

TEST(RandomBits, LargeOutputsSplitAcrossThreadsStayIdentical) {
  // Each block's words must not depend on how the blocks were divided among threads.
  array key = fresh_key();
  auto [k0, k1] = key_words(key);
  for (int n : {1 << 18, (1 << 18) + 1}) {
    SCOPED_TRACE(n);
    random_impl::StreamLayout l(4 * static_cast<uint64_t>(n));
    auto big = values<uint32_t>(rnd::bits({n}, 4, key));
    for (int i : {0, 1, 2, 8191, 8192, 8193, n / 2 - 1, n / 2, n / 2 + 1, n - 2, n - 1}) {
      EXPECT_EQ(big[i], l.word(k0, k1, i)) << i;
    }
  }
}

TEST(RandomBits, BatchedKeysFillTheirOwnRows) {
  // A transposed view: the keys are read through their strides.
  array keys = transpose(contiguous(transpose(rnd::split(fresh_key(), 3))));
  // Keys of shape (3, 2) give (3,) + shape, each row from its key.
  array out(Shape{3, 5}, uint8, std::make_shared<RandomBits>(to_stream({}), Shape{5}, 1), {keys});
  auto v = values<uint8_t>(out);
  for (int i = 0; i < 3; ++i) {
    array k = reshape(slice(keys, {i, 0}, {i + 1, 2}), {2});
    auto row = values<uint8_t>(rnd::bits({5}, 1, k));
    EXPECT_EQ(std::vector<uint8_t>(v.begin() + 5 * i, v.begin() + 5 * i + 5), row) << i;
  }
}

TEST(RandomSplit, NewKeysAreTheFirstWordsOfTheKeysStream) {
  array key = fresh_key();
  auto [k0, k1] = key_words(key);
  array keys = rnd::split(key, 5);
  EXPECT_EQ(keys.shape(), (Shape{5, 2}));
  EXPECT_EQ(keys.dtype(), uint32);
  EXPECT_TRUE(all_equal(keys, reshape(rnd::bits({10}, 4, key), {5, 2})));
  random_impl::StreamLayout l(40);
  auto v = values<uint32_t>(keys);
  for (int j = 0; j < 10; ++j) EXPECT_EQ(v[j], l.word(k0, k1, j)) << j;
  auto [a, b] = rnd::split(key);
  EXPECT_EQ(a.shape(), (Shape{2}));
  array two = rnd::split(key, 2);
  EXPECT_TRUE(all_equal(a, reshape(slice(two, {0, 0}, {1, 2}), {2})));
  EXPECT_TRUE(all_equal(b, reshape(slice(two, {1, 0}, {2, 2}), {2})));
  auto [h0, h1] = random_impl::split2(k0, k1);
  EXPECT_EQ(values<uint32_t>(a), (std::vector<uint32_t>{h0.x0, h0.x1}));
  EXPECT_EQ(values<uint32_t>(b), (std::vector<uint32_t>{h1.x0, h1.x1}));
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

TEST(RandomTransforms, GradientsFlowToLocAndScale) {
  array key = fresh_key();
  array loc = test::random_array({32}, float32), scale = test::random_array({32}, float32, 0.5, 2);
  auto f = [&](const std::vector<array>& in) {
    return std::vector<array>{rnd::normal({32}, float32, in[0], in[1], key)};
  };
  auto [outs, grads] = vjp(f, {loc, scale}, {ones({32})});
  test::expect_allclose(grads[0], {32}, std::vector<double>(32, 1.0));
  test::expect_allclose(grads[1], {32}, test::to_double(rnd::normal({32}, key)));
}

// The single-precision erf and erfinv the samplers use, as a function of x.
array erf_f32_of(const array& x, StreamOrDevice s = {}) {
  return array(x.shape(), x.dtype(), std::make_shared<ErfF32>(to_stream(s)), {x});
}
array erfinv_f32_of(const array& x, StreamOrDevice s = {}) {
  return array(x.shape(), x.dtype(), std::make_shared<ErfInvF32>(to_stream(s)), {x});
}

TEST(RandomErfF32, AccurateInSinglePrecisionAndRoundedOnceForHalfTypes) {
  std::vector<float> xs;
  for (int i = -4000; i <= 4000; ++i) xs.push_back(i / 1000.0f);
  array x(xs.begin(), {static_cast<int>(xs.size())}, float32);
  auto e = test::to_double(erf_f32_of(x));
  for (size_t i = 0; i < xs.size(); ++i) ASSERT_NEAR(e[i], std::erf(double(xs[i])), 5e-7) << xs[i];
  std::vector<float> us;
  for (int i = -9990; i <= 9990; ++i) us.push_back(i / 10000.0f);
  array u(us.begin(), {static_cast<int>(us.size())}, float32);
  auto g = test::to_double(erfinv_f32_of(u));
  auto ref = test::to_double(erfinv(astype(u, float64)));
  for (size_t i = 0; i < us.size(); ++i) {
    ASSERT_NEAR(g[i], ref[i], 4 * std::abs(ref[i]) * 0x1p-23) << us[i];  // 2.4 ulp (Juffa)
  }
  // Half types compute in float32 and round once.
  for (Dtype t : {float16, bfloat16}) {
    SCOPED_TRACE(t);
    array xt = astype(x, t), ut = astype(u, t);
    auto via_f32 = test::to_double(astype(erf_f32_of(astype(xt, float32)), t));
    EXPECT_EQ(test::to_double(erf_f32_of(xt)), via_f32);
    via_f32 = test::to_double(astype(erfinv_f32_of(astype(ut, float32)), t));
    EXPECT_EQ(test::to_double(erfinv_f32_of(ut)), via_f32);
  }
  // Non-contiguous input, empty input, and the ends.
  array xt = slice(x, {1}, {static_cast<int>(xs.size())}, {7});
  EXPECT_EQ(test::to_double(erf_f32_of(xt)), test::to_double(erf_f32_of(contiguous(xt))));
  EXPECT_EQ(erf_f32_of(zeros({0})).size(), 0u);
  auto ends = test::to_double(erfinv_f32_of(array({-1.0f, 1.0f})));
  EXPECT_EQ(ends[0], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(ends[1], std::numeric_limits<double>::infinity());
}

TEST(RandomErfF32, DerivativesAndVmap) {
  array x = test::random_array({40}, float32, -0.9, 0.9);
  auto xv = test::to_double(x);
  auto [o1, g1] = vjp([](const std::vector<array>& in) { return std::vector{erf_f32_of(in[0])}; },
                      {x}, {ones({40})});
  test::expect_allclose(g1[0], {40}, test::map_ref(xv, [](double v) {
                          return 2 / std::sqrt(std::numbers::pi) * std::exp(-v * v);
                        }));
  auto [o2, g2] =
      vjp([](const std::vector<array>& in) { return std::vector{erfinv_f32_of(in[0])}; }, {x},
          {ones({40})});
  auto inv = test::to_double(erfinv(astype(x, float64)));
  std::vector<double> ref(40);
  for (int i = 0; i < 40; ++i) ref[i] = std::sqrt(std::numbers::pi) / 2 * std::exp(inv[i] * inv[i]);
  test::expect_allclose(g2[0], {40}, ref, 1e-4);
  auto [p3, t3] =
      jvp([](const std::vector<array>& in) { return std::vector{erfinv_f32_of(in[0])}; }, {x},
          {ones({40})});
  test::expect_allclose(t3[0], {40}, ref, 1e-4);
  array x2 = reshape(x, {5, 8});
  auto f = [](const array& a) { return erf_f32_of(a); };
  auto finv = [](const array& a) { return erfinv_f32_of(a); };
  EXPECT_TRUE(all_equal(vmap(f, 1)(x2), transpose(erf_f32_of(x2))));
  EXPECT_TRUE(all_equal(vmap(finv)(x2), erfinv_f32_of(x2)));
}

// The GPU computes the same bits; samples that pass through a logarithm may differ in the
// last place where the C library's logf (the CPU's, as MLX's) rounds differently.
TEST(RandomDevices, TheGpuGivesTheCpusNumbers) {
#ifdef KILN_WITH_CUDA
  if (!gpu::is_available()) GTEST_SKIP() << "no GPU: " << gpu::unavailable_reason();
#else
  GTEST_SKIP() << "kiln was built without CUDA";
#endif
  array key = fresh_key();
  auto both = [&](auto f) { return std::pair{f(Device::cpu), f(Device::gpu)}; };
  auto exact = [&](auto f) {
    auto [c, g] = both(f);
    EXPECT_TRUE(all_equal(c, g));
  };
  for (int n : {0, 1, 3, 5, 1000, 4097}) {
    for (int w : {1, 2, 4, 8}) exact([&](Device d) { return rnd::bits({n}, w, key, d); });
  }
  exact([&](Device d) { return rnd::split(take(rnd::split(key, 7, d), 3, 0, d), 5, d); });
  for (Dtype t : kFloatTypes) {
    exact([&](Device d) { return rnd::uniform(-3.0, 5.0, {1001}, t, key, d); });
  }
  exact([&](Device d) { return rnd::randint(-5, 100, {1001}, int32, key, d); });
  exact([&](Device d) { return rnd::bernoulli(array(0.3f), {1001}, key, d); });
  exact([&](Device d) { return rnd::permutation(1001, key, d); });
  array x = test::random_array({1001}, float32, -4, 4);
  exact([&](Device d) { return erf_f32_of(x, d); });
  for (Dtype t : {float32, float16, bfloat16}) {
    auto [c, g] = both([&](Device d) { return rnd::normal({20000}, t, key, d); });
    auto cv = test::to_double(c), gv = test::to_double(g);
    int differ = 0;
    for (size_t i = 0; i < cv.size(); ++i) {
      differ += cv[i] != gv[i];
      ASSERT_NEAR(gv[i], cv[i], 4 * spacing(t, cv[i])) << i;
    }
    EXPECT_LT(differ, 40) << t;  // about 1 in 3000 in float32
  }
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
  expect_error([&] { rnd::uniform({3}, complex64, key); }, "[uniform] dtype must be a real");
  expect_error(
      [&] {
        rnd::uniform(array({0.0f, 1.0f}), array(2.0f), {3}, float32, key);
      },
      "[uniform] low of shape (2,) cannot be broadcast to shape (3,).");
  expect_error([&] { rnd::normal({3}, int32, key); },
               "[normal] dtype must be a real floating-point type or complex64; got int32.");
  expect_error([&] { rnd::normal({-3}, float32, key); }, "[normal] Negative dimension");
  expect_error([&] { rnd::randint(0, 5, {3}, float32, key); },
               "[randint] dtype must be an integer type or bool; got float32.");
  expect_error([&] { rnd::randint(0, 5, {3}, complex64, key); }, "[randint]");
  expect_error([&] { rnd::randint(array({1, 2}), array(5), {3}, int32, key); }, "[randint] low");
  expect_error([&] { rnd::bernoulli(array(1), {3}, key); }, "[bernoulli] p must be a real");
  expect_error([&] { rnd::bernoulli(array({0.5f, 0.5f}), {3}, key); }, "[bernoulli] p of shape");
  expect_error([&] { rnd::split(key, -1); }, "[split] The number of keys must be non-negative");
  expect_error([&] { rnd::split(array({1, 2})); }, "[split] A key must be");
  expect_error([&] { rnd::truncated_normal(array(0.0f), array(1.0f), {3}, int32, key); },
               "[truncated_normal]");
  expect_error([&] { rnd::gumbel({2}, uint8, key); }, "[gumbel]");
  expect_error([&] { rnd::laplace({2}, int32, key); }, "[laplace] dtype must be a real");
  expect_error([&] { rnd::permutation(-1, key); }, "[permutation] The number of elements");
  array logits = rnd::uniform({2, 3}, key);
  expect_error([&] { rnd::categorical(logits, -1, Shape{3}, key); }, "[categorical]");
  expect_error([&] { rnd::categorical(logits, -1, -2, key); }, "[categorical] num_samples");
  expect_error([&] { rnd::categorical(array({1, 2}), 0, key); }, "[categorical] logits must be");
  // multivariate_normal: MLX's checks, in MLX's order.
  array m2 = zeros({2}), c22 = zeros({2, 2});
  expect_error([&] { rnd::multivariate_normal(m2, c22, {}, float16, key); },
               "[multivariate_normal] dtype must be float32; got float16.");
  expect_error([&] { rnd::multivariate_normal(zeros(Shape{}), c22, {}, float32, key); },
               "[multivariate_normal] mean must have at least one dimension.");
  expect_error([&] { rnd::multivariate_normal(m2, zeros({2}), {}, float32, key); },
               "[multivariate_normal] cov must have at least two dimensions");
  expect_error(
      [&] {
        rnd::multivariate_normal(m2, zeros({2, 3}), {}, float32, key);
      },
      "[multivariate_normal] The last two dimensions of cov must be equal");
  expect_error([&] { rnd::multivariate_normal(zeros({3}), c22, {}, float32, key); },
               "[multivariate_normal] mean of shape (3,) and cov of shape (2, 2)");
  expect_error(
      [&] {
        rnd::multivariate_normal(zeros({2, 2}), c22, {3}, float32, key);
      },
      "[multivariate_normal]");
  expect_error(
      [&] {
        rnd::multivariate_normal(m2, zeros({2, 2, 2}), {3}, float32, key);
      },
      "[multivariate_normal]");
  // Bad axes are IndexErrors (std::out_of_range), as in MLX.
  auto expect_range = [](auto f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "no exception; expected " << text;
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_range([&] { rnd::categorical(logits, 2, key); }, "[categorical] Axis 2");
  expect_range([&] { rnd::categorical(logits, -3, 4, key); }, "[categorical] Axis -3");
  expect_range([&] { rnd::permutation(logits, 2, key); }, "[permutation] Axis 2");
  expect_range([&] { rnd::permutation(array(1.0f), 0, key); }, "[permutation] Axis 0");
}

TEST(RandomErrors, ARejectedCallLeavesTheGlobalKeyAlone) {
  rnd::seed(99);
  EXPECT_THROW(rnd::uniform({3}, int32), std::invalid_argument);
  EXPECT_THROW(rnd::randint(0, 3, {-2}), std::invalid_argument);
  array a = rnd::uniform({8});
  rnd::seed(99);
  EXPECT_TRUE(all_equal(a, rnd::uniform({8})));
}
