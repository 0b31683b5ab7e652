// Random numbers: the Threefry generator against its published answers, the layout of the
// key streams, determinism and independence of keys, transforms, devices and errors (the
// distributions: test_random_distributions.cpp).
#include <cstring>
#include <limits>

#include "kiln/backend/gpu.h"
#include "kiln/primitives_random.h"
#include "random_test.h"

using namespace random_test;

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
