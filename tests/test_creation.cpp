// Creation ops: arange, linspace, full, zeros/ones and *_like, eye, identity, tril, triu.
// References are plain loops in float64 (NumPy's rules written out); every dtype, empty
// results, non-contiguous inputs for tril/triu, and every argument check.
#include <cmath>
#include <complex>
#include <limits>
#include <string>

#include "kiln/primitives.h"
#include "test_utils.h"

using namespace kiln;
using cd = std::complex<double>;

namespace {

std::vector<cd> values(const array& a) {
  if (a.dtype() == complex64) return test::to_complex(a);
  auto d = test::to_double(a);
  return {d.begin(), d.end()};
}

/** Expects `a` to have `shape` and `expected` values (exact unless rtol > 0). */
void expect_values(const array& a, const Shape& shape, const std::vector<cd>& expected,
                   const std::string& what = "", double rtol = 0) {
  ASSERT_EQ(a.shape(), shape) << what;
  auto got = values(a);
  ASSERT_EQ(got.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    auto close = [&](double g, double e) {
      return rtol > 0 ? std::abs(g - e) <= rtol * (1 + std::abs(e)) : g == e;
    };
    if (!(close(got[i].real(), expected[i].real()) && close(got[i].imag(), expected[i].imag())) &&
        reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << expected[i]
                    << " (dtype " << a.dtype() << ", seed " << test::seed() << ")";
    }
  }
}

template <typename F>
void expect_invalid(F&& f, const std::string& tag) {
  test::expect_throw_with<std::invalid_argument>(f, {tag});
}

// A value converted to `to` as NumPy casts: truncation toward zero for integers, nonzero
// test for bool.
cd cast_ref(double v, Dtype to) {
  if (to == bool_) return v != 0 ? 1.0 : 0.0;
  if (is_integral(to)) return std::trunc(v);
  return v;
}

double rtol_of(Dtype d) {
  return is_inexact(d) ? test::tolerance(d) : 0.0;
}

}  // namespace

// ---------------------------------------------------------------- arange

TEST(Creation, ArangeLengthFollowsNumPy) {
  struct Case {
    double start, stop, step;
    int n;
  };
  for (auto c : std::vector<Case>{{0, 10, 1, 10},
                                  {0, 10, 3, 4},
                                  {10, 0, -3, 4},
                                  {0.5, 3, 0.7, 4},
                                  {0, 0.3, 0.1, 3},
                                  {-3, 3.5, 1.5, 5},
                                  {1, 1, 1, 0},
                                  {5, 0, 1, 0},
                                  {0, 5, -1, 0},
                                  {0, 1, 0.25, 4},
                                  {0, 1e-300, 1e300, 1},
                                  {0, -1e-300, 1e300, 0}}) {
    array y = arange(c.start, c.stop, c.step, float64);
    std::vector<cd> expected;
    for (int i = 0; i < c.n; ++i) expected.push_back(c.start + i * c.step);
    expect_values(y, {c.n}, expected, msg("arange(", c.start, ", ", c.stop, ", ", c.step, ")"),
                  1e-15);
  }
}

TEST(Creation, ArangeEveryDtype) {
  std::uniform_real_distribution<double> u(0, 20), s(0.3, 3);
  for (Dtype d : all_dtypes) {
    if (d == bool_) continue;
    for (int trial = 0; trial < 5; ++trial) {
      // Non-negative ranges fit every dtype; signed ones also run downwards below zero.
      double start = u(test::rng()), step = s(test::rng()),
             stop = start + 20 * step * u(test::rng()) / 20;
      if (trial % 2 && !is_unsigned(d)) {
        std::swap(start, stop);
        start -= 10;
        step = -step;
      }
      array y = arange(start, stop, step, d);
      ASSERT_EQ(y.dtype(), d);
      int n = std::max(0, static_cast<int>(std::ceil((stop - start) / step)));
      std::vector<cd> expected;
      // NumPy: integral ranges start at int(start) and advance by int(start + step) - int(start).
      double first = std::trunc(start), delta = std::trunc(start + step) - first;
      for (int i = 0; i < n; ++i) {
        expected.push_back(is_integral(d) ? first + i * delta : start + i * step);
      }
      expect_values(y, {n}, expected, msg(d, " arange(", start, ", ", stop, ", ", step, ")"),
                    rtol_of(d));
    }
  }
  expect_values(arange(0.5, 3, 0.7, int32), {4}, {0, 1, 2, 3});
  expect_values(arange(2.5, 9, 2.2, int16), {3}, {2, 4, 6});
  expect_values(arange(0, 5, 0.5, int32), {10}, std::vector<cd>(10, 0.0));
  expect_values(arange(5, 0, -1, uint8), {5}, {5, 4, 3, 2, 1});
  expect_values(arange(-3, 3, 2, int8), {3}, {-3, -1, 1});
  expect_values(arange(0, 2, 0.5, complex64), {4}, {0, 0.5, 1, 1.5});
}

TEST(Creation, ArangeLargeIntegersAreExact) {
  // 1e19 and steps of 4096 are exact in float64; the values exceed int64.
  array u = arange(1e19, 1e19 + 4 * 4096, 4096, uint64);
  u.eval();
  ASSERT_EQ(u.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(u.data<uint64_t>()[i], 10000000000000000000ull + 4096ull * i);
  }
  array s = arange(-4e18, -4e18 - 3 * 1024, -1024, int64);
  s.eval();
  ASSERT_EQ(s.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.data<int64_t>()[i], -4000000000000000000ll - 1024ll * i);
}

TEST(Creation, ArangeOverloadsAndDefaults) {
  EXPECT_EQ(arange(5.0).dtype(), float32);
  expect_values(arange(5.0), {5}, {0, 1, 2, 3, 4});
  expect_values(arange(0.0, 1.0, 0.25), {4}, {0, 0.25, 0.5, 0.75});
  EXPECT_EQ(arange(0.0, 1.0, 0.25).dtype(), float32);
  expect_values(arange(1.0, 4.0, float16), {3}, {1, 2, 3});
  EXPECT_EQ(arange(1.0, 4.0, float16).dtype(), float16);
  expect_values(arange(2.0, 4.0), {2}, {2, 3});
  expect_values(arange(3.0, int64), {3}, {0, 1, 2});
  EXPECT_EQ(arange(3.0, int64).dtype(), int64);
  // Integer arguments give int32.
  EXPECT_EQ(arange(10).dtype(), int32);
  expect_values(arange(4), {4}, {0, 1, 2, 3});
  expect_values(arange(2, 11, 3), {3}, {2, 5, 8});
  expect_values(arange(10, 0, -3), {4}, {10, 7, 4, 1});
  expect_values(arange(-2, 2), {4}, {-2, -1, 0, 1});
  expect_values(arange(5, 5), {0}, {});
  expect_values(arange(-5), {0}, {});
  constexpr int kMax = std::numeric_limits<int>::max(), kMin = std::numeric_limits<int>::min();
  expect_values(arange(kMax - 2, kMax), {2}, {kMax - 2.0, kMax - 1.0});
  expect_values(arange(kMin, kMin + 2), {2}, {double(kMin), kMin + 1.0});
  expect_values(arange(kMin, kMax, kMax), {3}, {double(kMin), -1, kMax - 1.0});
  expect_values(arange(kMax, kMin, kMin), {2}, {double(kMax), -1});
}

TEST(Creation, ArangeErrors) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_invalid([] { arange(0.0, 1.0, 0.0); }, "[arange]");
  expect_invalid([] { arange(0, 1, 0); }, "[arange]");
  expect_invalid([&] { arange(nan, 1.0, 1.0); }, "[arange]");
  expect_invalid([&] { arange(0.0, inf, 1.0); }, "[arange]");
  expect_invalid([&] { arange(0.0, 1.0, -nan); }, "[arange]");
  expect_invalid([] { arange(0.0, 3.0, 1.0, bool_); }, "[arange]");
  expect_invalid([] { arange(0.0, 1e10, 1.0); }, "[arange]");
  expect_invalid([] { arange(-1e308, 1e308, 1e300); }, "[arange]");
  // An explicit narrow integer dtype wraps, as MLX's; an infinite step gives the start alone.
  EXPECT_EQ(test::to_double(arange(-2.0, 1.0, 1.0, uint8)), (std::vector<double>{254, 255, 0}));
  EXPECT_EQ(test::to_double(arange(126.0, 130.0, 1.0, int8)),
            (std::vector<double>{126, 127, -128, -127}));
  EXPECT_EQ(test::to_double(arange(0.0, 1.0, inf)), (std::vector<double>{0}));
  EXPECT_EQ(arange(1.0, 0.0, inf).size(), 0u);
  expect_invalid([] { arange(1e19, 1e19 + 4096, 4096, int64); }, "[arange]");
}

// ---------------------------------------------------------------- linspace

TEST(Creation, Linspace) {
  for (Dtype d : {float16, bfloat16, float32, float64, complex64}) {
    for (auto [start, stop, num] : std::vector<std::tuple<double, double, int>>{
             {0, 1, 5}, {-2.5, 7, 7}, {3, -1, 4}, {1.5, 1.5, 3}, {2, 5, 1}, {2, 5, 0}, {0, 1, 2}}) {
      array y = linspace(start, stop, num, d);
      ASSERT_EQ(y.dtype(), d);
      std::vector<cd> expected;
      for (int i = 0; i < num; ++i) {
        expected.push_back(num == 1 ? start : start + i * (stop - start) / (num - 1));
      }
      expect_values(y, {num}, expected, msg(d, " linspace(", start, ", ", stop, ", ", num, ")"),
                    test::tolerance(d));
    }
  }
  // The default is 50 float32 values; the endpoint is exact.
  array y = linspace(0.1, 0.7);
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_EQ(y.shape(), (Shape{50}));
  y.eval();
  EXPECT_EQ(y.data<float>()[49], 0.7f);
  array z = linspace(-1.0 / 3, 1e-8, 3001, float64);
  z.eval();
  EXPECT_EQ(z.data<double>()[3000], 1e-8);
  // Integral dtypes truncate, as astype (MLX).
  expect_values(linspace(0, 10, 4, int32), {4}, {0, 3, 6, 10});
  expect_values(linspace(0, -10, 4, int16), {4}, {0, -3, -6, -10});
  expect_values(linspace(0, 1, 3, bool_), {3}, {0, 1, 1});
  expect_values(linspace(0, 200, 3, uint8), {3}, {0, 100, 200});
  expect_invalid([] { linspace(0, 1, -1); }, "[linspace]");
}

// ---------------------------------------------------------------- full, zeros, ones

TEST(Creation, FullEveryDtype) {
  for (Dtype d : all_dtypes) {
    array y = full({2, 3}, array(2.5), d);
    ASSERT_EQ(y.dtype(), d);
    expect_values(y, {2, 3}, std::vector<cd>(6, cast_ref(2.5, d)), msg(d));
    y.eval();
    EXPECT_TRUE(y.flags().row_contiguous);
    EXPECT_EQ(y.data_size(), y.size());

    // Values broadcast along the missing and size-1 axes, then convert.
    array vals = test::random_array({3, 1}, float64, 0, 50);
    auto v = test::to_double(vals);
    std::vector<cd> expected;
    for (int a = 0; a < 2; ++a)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) expected.push_back(cast_ref(v[i], d));
    expect_values(full({2, 3, 4}, vals, d), {2, 3, 4}, expected, msg(d, " broadcast"), rtol_of(d));

    // Non-contiguous values keep their logical order.
    array base = test::random_array({4, 3}, d, 0, 50);
    auto b = values(base);
    std::vector<cd> tr;
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) tr.push_back(b[j * 3 + i]);
    array t = full({2, 3, 4}, transpose(base));
    EXPECT_EQ(t.dtype(), d);
    expect_values(t, {2, 3, 4}, tr, msg(d, " transposed"));

    expect_values(full({0, 3}, array(1), d), {0, 3}, {});
    expect_values(full({}, array(3), d), {}, {cast_ref(3, d)});
  }
  EXPECT_EQ(full({2}, 7).dtype(), int32);
  expect_values(full({2}, 7), {2}, {7, 7});
  EXPECT_EQ(full({2}, 1.5f, float16).dtype(), float16);
  expect_values(full({3}, complex64_t(1, -2)), {3}, std::vector<cd>(3, cd(1, -2)));
  expect_values(full({2}, -1.9, int8), {2}, {-1, -1});
  // A buffer of its own, never the values' buffer.
  array vals = test::random_array({4}, float32);
  array f = full({4}, vals);
  f.eval();
  EXPECT_NE(f.storage_ptr(), vals.storage_ptr());
  expect_values(f, {4}, values(vals));
  expect_invalid([] { full({2, -1}, array(1.0f)); }, "[full]");
  expect_invalid([] { full({2, 3}, array({1, 2})); }, "[full]");
  expect_invalid([] { full({3}, zeros({2, 3})); }, "[full]");
  expect_invalid([] { full({3}, zeros({1, 3}), int32); }, "[full]");
}

TEST(Creation, ZerosOnesAndLike) {
  for (Dtype d : all_dtypes) {
    array z = zeros({3, 2}, d), o = ones({3, 2}, d);
    EXPECT_EQ(z.dtype(), d);
    EXPECT_EQ(o.dtype(), d);
    expect_values(z, {3, 2}, std::vector<cd>(6, 0.0), msg(d));
    expect_values(o, {3, 2}, std::vector<cd>(6, 1.0), msg(d));
    array x = transpose(test::random_array({2, 4}, d));
    for (array like : {zeros_like(x), ones_like(x), full_like(x, array(3.7))}) {
      EXPECT_EQ(like.shape(), (Shape{4, 2}));
      EXPECT_EQ(like.dtype(), d);
    }
    expect_values(zeros_like(x), {4, 2}, std::vector<cd>(8, 0.0));
    expect_values(ones_like(x), {4, 2}, std::vector<cd>(8, 1.0));
    expect_values(full_like(x, array(3.7)), {4, 2}, std::vector<cd>(8, cast_ref(3.7, d)), msg(d),
                  rtol_of(d));
    expect_values(full_like(x, array({1, 0})), {4, 2}, {1, 0, 1, 0, 1, 0, 1, 0}, msg(d));
  }
  EXPECT_EQ(zeros({2}).dtype(), float32);
  EXPECT_EQ(ones({2}).dtype(), float32);
  expect_values(zeros({0}), {0}, {});
  expect_values(ones({}), {}, {1});
  expect_invalid([] { zeros({-1}); }, "[zeros]");
  expect_invalid([] { ones({2, -3}, int8); }, "[ones]");
  expect_invalid([] { full_like(zeros({2, 2}), array({1, 2, 3})); }, "[full_like]");
}

// ---------------------------------------------------------------- eye, identity

TEST(Creation, EyeAndIdentity) {
  for (Dtype d : all_dtypes) {
    for (auto [n, m, k] : std::vector<std::tuple<int, int, int>>{{3, 3, 0},
                                                                 {3, 5, 1},
                                                                 {5, 3, -2},
                                                                 {4, 4, 7},
                                                                 {4, 4, -7},
                                                                 {0, 3, 0},
                                                                 {3, 0, 0},
                                                                 {1, 1, 0}}) {
      array y = eye(n, m, k, d);
      ASSERT_EQ(y.dtype(), d);
      std::vector<cd> expected;
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < m; ++j) expected.push_back(j - i == k ? 1.0 : 0.0);
      expect_values(y, {n, m}, expected, msg(d, " eye(", n, ", ", m, ", ", k, ")"));
    }
    std::vector<cd> id3;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) id3.push_back(i == j ? 1.0 : 0.0);
    expect_values(identity(3, d), {3, 3}, id3, msg(d));
    expect_values(eye(3, d), {3, 3}, id3, msg(d));
  }
  EXPECT_EQ(eye(2).dtype(), float32);
  EXPECT_EQ(identity(2).dtype(), float32);
  expect_values(eye(2, 3), {2, 3}, {1, 0, 0, 0, 1, 0});
  // Large enough to run on several threads.
  array big = eye(700, 500, 3, int8);
  big.eval();
  int64_t ones_found = 0, misplaced = 0;
  for (int i = 0; i < 700; ++i)
    for (int j = 0; j < 500; ++j) {
      int8_t v = big.data<int8_t>()[i * 500 + j];
      ones_found += v == 1;
      misplaced += v != (j - i == 3 ? 1 : 0);
    }
  EXPECT_EQ(ones_found, 497);
  EXPECT_EQ(misplaced, 0);
  expect_invalid([] { eye(-1, 2, 0); }, "[eye]");
  expect_invalid([] { eye(2, -1, 0); }, "[eye]");
  expect_invalid([] { identity(-1); }, "[identity]");
}

// ---------------------------------------------------------------- tril, triu

namespace {
/** Inputs of logical shape (b, r, c): contiguous, transposed, strided and broadcast
 * along the batch, each with its row-major values. */
std::vector<std::pair<array, std::vector<cd>>> matrices(int b, int r, int c, Dtype d) {
  std::vector<std::pair<array, std::vector<cd>>> out;
  array x = test::random_array({b, r, c}, d);
  out.emplace_back(x, values(x));
  array t = test::random_array({b, c, r}, d);
  auto tv = values(t);
  std::vector<cd> tr;
  for (int k = 0; k < b; ++k)
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) tr.push_back(tv[(k * c + j) * r + i]);
  out.emplace_back(swapaxes(t, -1, -2), tr);
  array w = test::random_array({b, r, 2 * c}, d);
  auto wv = values(w);
  std::vector<cd> st;
  for (int k = 0; k < b; ++k)
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) st.push_back(wv[(k * r + i) * 2 * c + 2 * j]);
  out.emplace_back(slice(w, {0, 0, 0}, {b, r, 2 * c}, {1, 1, 2}), st);
  array one = test::random_array({1, r, c}, d);
  auto ov = values(one);
  std::vector<cd> bc;
  for (int k = 0; k < b; ++k) bc.insert(bc.end(), ov.begin(), ov.end());
  out.emplace_back(broadcast_to(one, {b, r, c}), bc);
  return out;
}
}  // namespace

TEST(Creation, TrilTriu) {
  for (Dtype d : all_dtypes) {
    for (auto [b, r, c] : std::vector<std::tuple<int, int, int>>{{2, 3, 4}, {1, 5, 2}, {2, 0, 3}}) {
      for (auto& [x, xv] : matrices(b, r, c, d)) {
        for (int k : {-4, -1, 0, 1, 2, 5}) {
          std::vector<cd> lower, upper;
          for (int m = 0; m < b; ++m)
            for (int i = 0; i < r; ++i)
              for (int j = 0; j < c; ++j) {
                cd v = xv[(m * r + i) * c + j];
                lower.push_back(j - i <= k ? v : 0.0);
                upper.push_back(j - i >= k ? v : 0.0);
              }
          expect_values(tril(x, k), {b, r, c}, lower, msg(d, " tril k=", k));
          expect_values(triu(x, k), {b, r, c}, upper, msg(d, " triu k=", k));
        }
      }
    }
  }
  array m = array({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(tril(m), {2, 3}, {1, 0, 0, 4, 5, 0});
  expect_values(triu(m), {2, 3}, {1, 2, 3, 0, 5, 6});
  expect_values(triu(m, 1), {2, 3}, {0, 2, 3, 0, 0, 6});
  expect_values(tril(m, -1), {2, 3}, {0, 0, 0, 4, 0, 0});
  expect_invalid([] { tril(array({1, 2, 3})); }, "[tril]");
  expect_invalid([] { triu(array(1.0f)); }, "[triu]");
}

// ---------------------------------------------------------------- transformations

TEST(CreationTransforms, TrilTriuAreTheirOwnDerivatives) {
  array x = test::random_array({2, 4, 3}, float64);
  array c = test::random_array({2, 4, 3}, float64);
  for (int k : {-1, 0, 2}) {
    auto [out, g] = vjp([k](const array& a) { return tril(a, k); }, x, c);
    expect_values(g, x.shape(), values(tril(c, k)), "tril vjp");
    auto [out2, t] = jvp([k](const array& a) { return triu(a, k); }, x, c);
    expect_values(t, x.shape(), values(triu(c, k)), "triu jvp");
    // Batched along a middle axis: each example of (4, 2, 3) -> the last two axes (4, 3).
    array xb = test::random_array({4, 2, 3}, float32);
    array yb = vmap([k](const array& a) { return triu(a, k); }, 1, 1)(xb);
    expect_values(yb, xb.shape(), values(swapaxes(triu(swapaxes(xb, 0, 1), k), 0, 1)), "vmap");
  }
}

TEST(CreationTransforms, CreationPrimitivesHaveNoDifferentiableInputs) {
  for (array y : {arange(0.0, 3.0, 1.0, float32), linspace(0, 1, 4), eye(2, 3, 1)}) {
    auto p = y.primitive_ptr();  // evaluating y drops its node
    EXPECT_TRUE(p->vjp({}, {ones_like(y)}, {}, {y}).empty()) << p->name();
    EXPECT_EQ(p->output_shapes({}), std::vector<Shape>{y.shape()});
    auto t = p->jvp({}, {}, {});
    ASSERT_EQ(t.size(), 1u);
    expect_values(t[0], y.shape(), std::vector<cd>(y.size(), 0.0), p->name());
    auto [outs, axes] = p->vmap({}, {});
    ASSERT_EQ(outs.size(), 1u);
    EXPECT_EQ(axes, std::vector<int>{-1});
    EXPECT_TRUE(p->is_equivalent(outs[0].primitive()));
    expect_values(outs[0], y.shape(), values(y), p->name());
  }
  EXPECT_FALSE(arange(0.0, 3.0, 1.0).primitive().is_equivalent(arange(0.0, 3.0, 0.5).primitive()));
  // Functions that only create arrays have zero gradients with respect to anything else.
  array x = test::random_array({3}, float32);
  auto [out, g] = vjp([](const array& a) { return add(a, arange(0.0, 3.0, 1.0)); }, x, ones({3}));
  expect_values(g, {3}, {1, 1, 1});
}
