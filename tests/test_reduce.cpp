// Reductions: sum, prod, max, min, mean, all, any, logsumexp, var, std, argmax, argmin and
// softmax. Every result is checked against a float64 loop over the groups of input values
// each output combines, on every dtype an op claims, over axis lists with keepdims and
// negative axes, on inputs laid out to reach each kernel path (all-reduce, rows, columns,
// strided and broadcast fallbacks, several threads), on empty arrays, and on each argument
// check. Their transforms: test_reduce_grad.cpp.
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <numeric>

#include "kiln/primitives.h"
#include "reduce_test.h"

using namespace reduce_test;

namespace {

/** Random values that suit `dtype` and keep exact integer sums/products small. */
array input(const Shape& shape, Dtype dtype, double lo = -2.0, double hi = 2.0) {
  if (is_unsigned(dtype)) return test::random_array(shape, dtype, 0, 10);
  if (is_signed_integer(dtype)) return test::random_array(shape, dtype, -10, 10);
  return test::random_array(shape, dtype, lo, hi);
}

/** Axis lists covering single, several, negative and all axes of a 3-d array. */
const std::vector<std::vector<int>> kAxes3 = {{0},    {1},    {2},      {-1},   {0, 1},
                                              {0, 2}, {1, 2}, {-3, -1}, {2, 0}, {0, 1, 2}};

using ReduceFn = std::function<array(const array&, const std::vector<int>&, bool)>;

}  // namespace

// ---------------------------------------------------------------- sum, prod

TEST(Reduce, SumEveryDtypeAxesAndKeepdims) {
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;  // below
    array x = input({3, 4, 5}, dt);
    Dtype want = dt == bool_ || dt == int8 || dt == int16 ? int32
                 : dt == uint8 || dt == uint16            ? uint32
                                                          : dt;
    for (const auto& axes : kAxes3) {
      for (bool keep : {false, true}) {
        expect_reduction(sum(x, axes, keep), x, axes, keep, ref_sum, want);
      }
    }
    expect_reduction(sum(x), x, {0, 1, 2}, false, ref_sum, want);
    expect_reduction(sum(x, true), x, {0, 1, 2}, true, ref_sum, want);
    expect_reduction(sum(x, -2), x, {1}, false, ref_sum, want);
    expect_reduction(sum(x, 0, true), x, {0}, true, ref_sum, want);
  }
}

TEST(Reduce, ProdEveryDtype) {
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;
    // Values near 1 (and small integers) keep products of 20 elements finite and exact.
    array x = is_integral(dt) && dt != bool_
                  ? test::random_array({3, 4, 5}, dt, is_unsigned(dt) ? 0 : -3, 3)
                  : input({3, 4, 5}, dt, 0.5, 1.5);
    Dtype want = detail::sum_dtype(dt);
    for (const auto& axes : kAxes3) {
      for (bool keep : {false, true}) {
        expect_reduction(prod(x, axes, keep), x, axes, keep, ref_prod, want);
      }
    }
    expect_reduction(prod(x), x, {0, 1, 2}, false, ref_prod, want);
  }
}

TEST(Reduce, ComplexSumProdMean) {
  array x = test::random_array({4, 6}, complex64);
  auto xv = test::to_complex(x);
  for (int axis : {0, 1, -1}) {
    auto g = groups(xv, x.shape(), {axis});
    array s = sum(x, axis), p = prod(x, axis), m = mean(x, axis);
    EXPECT_EQ(s.dtype(), complex64);
    EXPECT_EQ(m.dtype(), complex64);
    auto sv = test::to_complex(s), pv = test::to_complex(p), mv = test::to_complex(m);
    for (size_t i = 0; i < g.size(); ++i) {
      std::complex<double> es = 0, ep = 1;
      for (auto v : g[i]) es += v, ep *= v;
      EXPECT_NEAR(std::abs(sv[i] - es), 0, 1e-5 * (1 + std::abs(es)));
      EXPECT_NEAR(std::abs(pv[i] - ep), 0, 1e-5 * (1 + std::abs(ep)));
      EXPECT_NEAR(std::abs(mv[i] - es / double(g[i].size())), 0, 1e-5 * (1 + std::abs(es)));
    }
  }
}

TEST(Reduce, IntegerSumsAreExactAndWrapLikeTheirDtype) {
  // int8 widens to int32, so 200 * 127 does not wrap.
  array x = full({200}, 127, int8);
  EXPECT_EQ(sum(x).item<int32_t>(), 200 * 127);
  array u = full({300}, 255, uint8);
  EXPECT_EQ(sum(u).dtype(), uint32);
  EXPECT_EQ(sum(u).item<uint32_t>(), 300u * 255u);
  // int32 keeps its dtype (MLX): the total wraps as two's complement.
  array big = array({std::numeric_limits<int32_t>::max(), 1}, int32);
  EXPECT_EQ(sum(big).item<int32_t>(), std::numeric_limits<int32_t>::min());
  array i64 = array({int64_t{1} << 40, int64_t{1} << 40, -(int64_t{1} << 41) + 3});
  EXPECT_EQ(sum(i64).item<int64_t>(), 3);
  EXPECT_EQ(prod(array({-2, 3, -5}, int8)).item<int32_t>(), 30);
  EXPECT_EQ(sum(array({true, true, false, true})).item<int32_t>(), 3);
}

TEST(Reduce, FloatSumsStayAccurateOnLongInputs) {
  // A running float32 total of 2^22 copies of 0.1 drifts by ~1e-2 relative; pairwise
  // blocks with several accumulators must stay within a few ulps.
  const int n = 1 << 22;
  float v = 0.1f;
  double exact = static_cast<double>(v) * n;
  std::vector<float> data(n, v);
  array x(data.begin(), {n});
  EXPECT_NEAR(sum(x).item<float>(), exact, exact * 1e-6);
  // The same through the strided fallback (a broadcast scalar) and the column path.
  EXPECT_NEAR(sum(broadcast_to(array(v), {n})).item<float>(), exact, exact * 1e-6);
  array cols = reshape(x, {n / 4, 4});
  auto c = test::to_double(sum(cols, 0));
  for (double ci : c) EXPECT_NEAR(ci, exact / 4, exact / 4 * 1e-5);
  // float16 accumulates in float32: 10^5 ones sum to 10^5, far past float16's 2048
  // where a float16 running total stops growing; the mean must be exactly 1.
  array h = full({100000}, 1.0f, float16);
  EXPECT_EQ(sum(h).dtype(), float16);
  EXPECT_TRUE(std::isinf(sum(h).item<float>()));  // 10^5 overflows float16 (max 65504)
  EXPECT_EQ(mean(h).item<float>(), 1.0f);
  EXPECT_EQ(sum(full({3000}, 1.0f, bfloat16)).item<float>(), 3008.0f);  // 3000 rounded once
}

// ---------------------------------------------------------------- max, min, all, any

TEST(Reduce, MaxMinEveryRealDtype) {
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;
    array x = input({3, 4, 5}, dt);
    for (const auto& axes : kAxes3) {
      for (bool keep : {false, true}) {
        expect_reduction(max(x, axes, keep), x, axes, keep, ref_max, dt);
        expect_reduction(min(x, axes, keep), x, axes, keep, ref_min, dt);
      }
    }
    expect_reduction(max(x), x, {0, 1, 2}, false, ref_max, dt);
    expect_reduction(min(x, 1), x, {1}, false, ref_min, dt);
  }
}

TEST(Reduce, MaxMinPropagateNaN) {
  for (Dtype dt : {float16, bfloat16, float32, float64}) {
    // NaN at the start, middle and end of rows; long rows reach the vectorized loop.
    std::vector<double> v(4 * 100);
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i));
    v[0] = v[150] = v[299] = kNaN;  // rows 0, 1, 2; row 3 has none
    array x = reshape(array(v.begin(), {400}, dt), {4, 100});
    for (int axis : {0, 1}) {
      expect_reduction(max(x, axis), x, {axis}, false, ref_max, dt);
      expect_reduction(min(x, axis), x, {axis}, false, ref_min, dt);
    }
    EXPECT_TRUE(std::isnan(max(x).item<float>()));
    EXPECT_TRUE(std::isnan(min(transpose(x)).item<float>()));
    array inf = array({-kInf, -kInf}, dt);
    EXPECT_EQ(max(inf).item<double>(), -kInf);
  }
}

TEST(Reduce, AllAnyEveryDtype) {
  for (Dtype dt : all_dtypes) {
    // Mostly non-zero values with some zeros, so all() is mixed across groups.
    array x = dt == complex64 ? test::random_array({3, 4, 5}, dt)
                              : test::random_array({3, 4, 5}, dt, -1.2, 4);
    auto nz = [](const std::vector<double>& v, bool all_of) {
      for (double a : v) {
        if ((a != 0) != all_of) return all_of ? 0.0 : 1.0;
      }
      return all_of ? 1.0 : 0.0;
    };
    for (const auto& axes : kAxes3) {
      for (bool keep : {false, true}) {
        Ref ref_all = [&](const std::vector<double>& g) { return nz(g, true); };
        Ref ref_any = [&](const std::vector<double>& g) { return nz(g, false); };
        if (dt != complex64) {
          expect_reduction(all(x, axes, keep), x, axes, keep, ref_all, bool_);
          expect_reduction(any(x, axes, keep), x, axes, keep, ref_any, bool_);
        }
      }
    }
    if (dt == complex64) {
      array c = array({complex64_t(0, 1), complex64_t(0, 0)});
      EXPECT_FALSE(all(c).item<bool>());
      EXPECT_TRUE(any(c).item<bool>());
      EXPECT_EQ(all(c).dtype(), bool_);
    }
  }
  EXPECT_TRUE(all(zeros({0, 3})).item<bool>());
  EXPECT_FALSE(any(zeros({0, 3})).item<bool>());
}

// ---------------------------------------------------------------- mean, var, std

TEST(Reduce, MeanDtypesAndValues) {
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;
    array x = input({3, 4, 5}, dt);
    Dtype want = is_floating_point(dt) ? dt : float32;
    for (const auto& axes : kAxes3) {
      for (bool keep : {false, true}) {
        expect_reduction(mean(x, axes, keep), x, axes, keep, ref_mean, want);
      }
    }
    expect_reduction(mean(x), x, {0, 1, 2}, false, ref_mean, want);
  }
}

TEST(Reduce, VarStdWithDdof) {
  for (Dtype dt : {float32, float64, float16, bfloat16, int32, uint8, bool_}) {
    array x = input({4, 5, 6}, dt);
    Dtype want = is_floating_point(dt) ? dt : float32;
    for (int ddof : {0, 1, 2}) {
      for (const auto& axes : std::vector<std::vector<int>>{{0}, {-1}, {0, 2}, {0, 1, 2}}) {
        Ref rv = [&](const std::vector<double>& g) { return ref_var(g, ddof); };
        Ref rs = [&](const std::vector<double>& g) { return std::sqrt(ref_var(g, ddof)); };
        expect_reduction(var(x, axes, false, ddof), x, axes, false, rv, want);
        expect_reduction(kiln::std(x, axes, true, ddof), x, axes, true, rs, want);
      }
    }
    expect_reduction(
        var(x), x, {0, 1, 2}, false, [](auto& g) { return ref_var(g, 0); }, want);
    expect_reduction(
        kiln::std(x, 1, true, 1), x, {1}, true, [](auto& g) { return std::sqrt(ref_var(g, 1)); },
        want);
  }
  // A large offset would cancel catastrophically in E[x^2] - E[x]^2.
  array off = add(test::random_array({1000}, float32), array(1e4f));
  expect_reduction(
      var(off), off, {0}, false, [](auto& g) { return ref_var(g, 0); }, float32, 1e-3);
  // Too few elements for ddof: inf or NaN as NumPy.
  EXPECT_TRUE(std::isnan(var(array({1.0f}), false, 1).item<float>()));
}

// ---------------------------------------------------------------- logsumexp, softmax

TEST(Reduce, LogSumExpIsStable) {
  for (Dtype dt : {float32, float64, float16, bfloat16, int32}) {
    array x = input({3, 4, 5}, dt, -5, 5);
    Dtype want = is_floating_point(dt) ? dt : float32;
    for (const auto& axes : kAxes3) {
      for (bool keep : {false, true}) {
        expect_reduction(logsumexp(x, axes, keep), x, axes, keep, ref_logsumexp, want);
      }
    }
  }
  // exp(1000) overflows float32; the shifted form does not.
  array big = array({1000.0f, 1000.0f, 999.0f});
  EXPECT_NEAR(logsumexp(big).item<float>(), 1000 + std::log(2 + std::exp(-1.0)), 1e-3);
  array edge = array({-kInf, -kInf, kInf, 1.0, kNaN, 1.0}, {3, 2}, float32);
  auto r = test::to_double(logsumexp(edge, 1));
  EXPECT_EQ(r[0], -kInf);
  EXPECT_EQ(r[1], kInf);
  EXPECT_TRUE(std::isnan(r[2]));
  EXPECT_EQ(logsumexp(zeros({0, 2}), 0).shape(), Shape{2});
  EXPECT_EQ(test::to_double(logsumexp(zeros({0, 2}), 0))[0], -kInf);
}

TEST(Reduce, SoftmaxOverAxes) {
  for (Dtype dt : {float32, float64, float16, bfloat16}) {
    array x = input({3, 4, 5}, dt, -10, 10);
    for (const auto& axes : std::vector<std::vector<int>>{{-1}, {0}, {1}, {0, 2}, {0, 1, 2}}) {
      array y = softmax(x, axes);
      EXPECT_EQ(y.dtype(), dt);
      // Reference: exp(x - logsumexp(group)) elementwise, in float64.
      array l = logsumexp(astype(x, float64), axes, true);
      auto e = test::to_double(exp(subtract(astype(x, float64), l)));
      test::expect_allclose(y, x.shape(), e);
      auto totals = test::to_double(sum(y, axes));
      for (double t : totals) EXPECT_NEAR(t, 1.0, 10 * test::tolerance(dt));
    }
  }
  array big = array({1000.0f, 0.0f, 1000.0f});
  auto y = test::to_double(softmax(big));
  EXPECT_NEAR(y[0], 0.5, 1e-6);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_EQ(softmax(array({1, 2, 3})).dtype(), float32);
  // The fused last-axis kernel on long rows, on several threads, and on a transposed input.
  for (Dtype dt : {float32, float16, float64}) {
    array x = input({40, 3000}, dt, -20, 20);
    for (const array& v : {x, transpose(reshape(x, {3000, 40}))}) {
      array l = logsumexp(astype(v, float64), -1, true);
      auto e = test::to_double(exp(subtract(astype(v, float64), l)));
      test::expect_allclose(softmax(v, -1), v.shape(), e);
    }
  }
  // A NaN anywhere in a row, or an infinite maximum, makes the row NaN (as the formula).
  array edge = array({1.0, kNaN, 2.0, kInf, 0.0, 1.0, -kInf, 0.0, 1.0}, {3, 3}, float32);
  auto ev = test::to_double(softmax(edge, 1));
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(std::isnan(ev[i])) << i;
  EXPECT_EQ(ev[6], 0.0);
  EXPECT_EQ(softmax(zeros({2, 0}), -1).shape(), (Shape{2, 0}));
}

// complex64 as MLX: shifted by the lexicographic maximum m, so logsumexp's imaginary part is
// Im(m) + Arg(sum exp(z - m)) (possibly outside NumPy's (-pi, pi]); softmax stays complex64.
TEST(Reduce, ComplexLogSumExpAndSoftmax) {
  array base = test::random_array({3, 4, 5}, complex64, -3, 3);
  for (const array& x : {base, transpose(base, {2, 0, 1})}) {
    for (const auto& axes : kAxes3) {
      auto g = groups(test::to_complex(x), x.shape(), axes);
      for (bool keep : {false, true}) {
        array l = logsumexp(x, axes, keep);
        EXPECT_EQ(l.dtype(), complex64);
        EXPECT_EQ(l.shape(), reduced_shape(x.shape(), axes, keep));
        auto lv = test::to_complex(l);
        for (size_t i = 0; i < g.size(); ++i) {
          cd m = lex_max(g[i]), s = 0;
          for (cd z : g[i]) s += std::exp(z - m);
          expect_complex_near(lv[i], std::log(s) + m, 2e-5, "logsumexp");
        }
      }
      // softmax: exp(z - m) / sum, compared position by position through the same groups.
      array y = softmax(x, axes);
      EXPECT_EQ(y.dtype(), complex64);
      EXPECT_EQ(y.shape(), x.shape());
      auto gy = groups(test::to_complex(y), x.shape(), axes);
      for (size_t i = 0; i < g.size(); ++i) {
        cd m = lex_max(g[i]), s = 0;
        for (cd z : g[i]) s += std::exp(z - m);
        for (size_t j = 0; j < g[i].size(); ++j) {
          expect_complex_near(gy[i][j], std::exp(g[i][j] - m) / s, 2e-5, "softmax");
        }
      }
    }
  }
  // The lexicographic shift keeps Im(m): a row whose maximum has imaginary part 4 gives
  // 4 + Arg(...) rather than the principal value (MLX's result, 2 pi above NumPy's here).
  using cf = std::complex<float>;
  array z = array({cf(2, -1), cf(0.1f, 0.1f), cf(3, 4)});
  auto zv = test::to_complex(z);
  cd shifted = 0;
  for (cd w : zv) shifted += std::exp(w - zv[2]);
  cd got = test::to_complex(logsumexp(z))[0];
  expect_complex_near(got, std::log(shifted) + zv[2], 1e-5, "shifted");
  EXPECT_GT(got.imag(), M_PI);
  // An infinite maximum is the result (MLX); a row of -inf gives -inf; empty gives log(0).
  const float inf = std::numeric_limits<float>::infinity();
  array edge = array({cf(inf, 0), cf(1, 2), cf(-inf, 0), cf(-inf, 0)}, {2, 2});
  auto ev = test::to_complex(logsumexp(edge, 1));
  EXPECT_EQ(ev[0], cd(kInf, 0));
  EXPECT_EQ(ev[1], cd(-kInf, 0));
  EXPECT_EQ(logsumexp(zeros({0, 2}, complex64), 0).shape(), Shape{2});
  EXPECT_EQ(test::to_complex(logsumexp(zeros({0, 2}, complex64), 0))[0].real(), -kInf);
  EXPECT_EQ(softmax(zeros({2, 0}, complex64), -1).dtype(), complex64);
  EXPECT_EQ(softmax(zeros({2, 0}, complex64), -1).shape(), (Shape{2, 0}));
}

// ---------------------------------------------------------------- argmax, argmin

TEST(Reduce, ArgMaxArgMinEveryRealDtype) {
  auto arg_ref = [](bool is_max) {
    return [is_max](const std::vector<double>& g) {
      size_t best = 0;
      for (size_t i = 1; i < g.size(); ++i) {
        if (std::isnan(g[best])) break;
        if (std::isnan(g[i]) || (is_max ? g[i] > g[best] : g[i] < g[best])) best = i;
      }
      return static_cast<double>(best);
    };
  };
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;
    // Few distinct values: many ties, so "first occurrence" is exercised.
    array x = is_inexact(dt) ? astype(test::random_array({3, 4, 1500}, int32, -3, 3), dt)
                             : input({3, 4, 1500}, dt);
    for (int axis : {0, 1, 2, -1}) {
      for (bool keep : {false, true}) {
        expect_reduction(argmax(x, axis, keep), x, {axis}, keep, arg_ref(true), uint32);
        expect_reduction(argmin(x, axis, keep), x, {axis}, keep, arg_ref(false), uint32);
      }
    }
    // Flattened.
    expect_reduction(reshape(argmax(x), {1}), reshape(x, {-1}), {0}, true, arg_ref(true), uint32);
    EXPECT_EQ(argmin(x, true).shape(), (Shape{1, 1, 1}));
    expect_reduction(reshape(argmin(x, true), {1}), reshape(x, {-1}), {0}, true, arg_ref(false),
                     uint32);
  }
  // NaN counts as the extreme; the first one wins.
  array n = array({1.0f, std::nanf(""), 5.0f, std::nanf("")});
  EXPECT_EQ(argmax(n).item<uint32_t>(), 1u);
  EXPECT_EQ(argmin(n).item<uint32_t>(), 1u);
  array nt = transpose(reshape(array({1.0f, 2.0f, std::nanf(""), 0.0f}), {2, 2}));
  EXPECT_EQ(test::to_double(argmax(nt, 1)), (std::vector<double>{1, 0}));
}

// ---------------------------------------------------------------- layouts and kernel paths

TEST(Reduce, NonContiguousInputs) {
  array base = test::random_array({6, 8, 10}, float32);
  std::vector<array> views = {
      transpose(base, {2, 0, 1}),                                    // permuted (dense)
      slice(base, {0, 1, 0}, {6, 8, 10}, {2, 3, 3}),                 // strided
      slice(base, {5, 7, 9}, {-7, -9, -11}, {-1, -2, -1}),           // reversed
      broadcast_to(slice(base, {0, 0, 0}, {6, 1, 10}), {6, 7, 10}),  // broadcast
      broadcast_to(array(2.5f), {3, 4, 5}),                          // scalar broadcast
  };
  for (const array& v : views) {
    for (const auto& axes : kAxes3) {
      expect_reduction(sum(v, axes), v, axes, false, ref_sum, float32);
      expect_reduction(max(v, axes, true), v, axes, true, ref_max, float32);
      expect_reduction(prod(v, axes), v, axes, false, ref_prod, float32, 1e-4);
    }
    for (int axis : {0, 1, 2}) {
      auto first_max = [](const std::vector<double>& g) {
        return double(std::max_element(g.begin(), g.end()) - g.begin());
      };
      expect_reduction(argmax(v, axis), v, {axis}, false, first_max, uint32);
    }
  }
}

TEST(Reduce, LargeInputsReachEveryPathAndThread) {
  // Rows (reduced innermost), columns wider than one tile (kept innermost, > 1024) with
  // more than one block of rows, strided columns, and an all-reduce split into chunks.
  array x = test::random_array({300, 2100}, float32);
  expect_reduction(sum(x, 1), x, {1}, false, ref_sum, float32);
  expect_reduction(sum(x, 0), x, {0}, false, ref_sum, float32);
  expect_reduction(max(x, 0), x, {0}, false, ref_max, float32);
  expect_reduction(sum(x), x, {0, 1}, false, ref_sum, float32, 1e-4);
  array strided = slice(x, {0, 0}, {300, 2100}, {1, 3});
  expect_reduction(sum(strided, 0), strided, {0}, false, ref_sum, float32);
  expect_reduction(sum(strided, 1), strided, {1}, false, ref_sum, float32);
  array t = transpose(x);
  expect_reduction(sum(t, 1), t, {1}, false, ref_sum, float32);
  expect_reduction(min(t, 0), t, {0}, false, ref_min, float32);
  // Many short rows, and few very long ones.
  array shortrows = test::random_array({50000, 3}, float64);
  expect_reduction(sum(shortrows, 1), shortrows, {1}, false, ref_sum, float64);
  array longrows = test::random_array({2, 1, 200000}, float32);
  expect_reduction(sum(longrows, -1), longrows, {-1}, false, ref_sum, float32, 1e-4);
  expect_reduction(
      argmin(longrows, 2), longrows, {2}, false,
      [](auto& g) { return double(std::min_element(g.begin(), g.end()) - g.begin()); }, uint32);
  // Column argmax/argmin with the rows split across threads: ties must still resolve to
  // the first occurrence across the parts.
  array ties = astype(test::random_array({600, 300}, int32, -3, 3), float32);
  auto first = [](bool is_max) {
    return [is_max](const std::vector<double>& g) {
      auto it =
          is_max ? std::max_element(g.begin(), g.end()) : std::min_element(g.begin(), g.end());
      return double(it - g.begin());
    };
  };
  expect_reduction(argmax(ties, 0), ties, {0}, false, first(true), uint32);
  expect_reduction(argmin(ties, 0, true), ties, {0}, true, first(false), uint32);
  array ints = input({400, 1000}, int16);
  expect_reduction(sum(ints), ints, {0, 1}, false, ref_sum, int32);
  expect_reduction(sum(ints, 0), ints, {0}, false, ref_sum, int32);
  array halves = input({64, 3000}, float16);
  expect_reduction(sum(halves, 1), halves, {1}, false, ref_sum, float16);
}

TEST(Reduce, EmptyArrays) {
  array e = zeros({0, 3});
  expect_reduction(sum(e, 0), e, {0}, false, ref_sum, float32);
  EXPECT_EQ(test::to_double(sum(e, 0)), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(test::to_double(prod(e, 0)), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(sum(e).item<float>(), 0.0f);
  EXPECT_EQ(prod(e).item<float>(), 1.0f);
  EXPECT_TRUE(std::isnan(mean(e).item<float>()));
  EXPECT_TRUE(std::isnan(mean(zeros({0}, int32)).item<float>()));
  // Reducing a non-empty axis of an empty array gives an empty result, with no error.
  EXPECT_EQ(max(e, 1).shape(), Shape{0});
  EXPECT_EQ(argmax(e, 1).shape(), Shape{0});
  EXPECT_EQ(sum(zeros({2, 0, 4}), {0, 2}, true).shape(), (Shape{1, 0, 1}));
  eval(max(e, 1), argmax(e, 1), sum(zeros({2, 0, 4}), {0, 2}));
  // Zero-dimensional arrays reduce over no axes.
  array s(3.5f);
  EXPECT_EQ(sum(s).item<float>(), 3.5f);
  EXPECT_EQ(max(s).item<float>(), 3.5f);
  EXPECT_EQ(argmax(s).item<uint32_t>(), 0u);
  EXPECT_EQ(sum(s, std::vector<int>{}).shape(), Shape{});
}

TEST(Reduce, ArgumentErrors) {
  array x = zeros({2, 3});
  auto expect_tag = [](auto fn, const std::string& tag) {
    try {
      fn();
      ADD_FAILURE() << "expected " << tag;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(tag), std::string::npos) << e.what();
    }
  };
  expect_tag([&] { sum(x, 2); }, "[sum]");
  expect_tag([&] { sum(x, -3); }, "[sum]");
  expect_tag([&] { prod(x, {0, -2}); }, "[prod]");  // duplicate
  expect_tag([&] { max(x, {1, 1}); }, "[max]");
  expect_tag([&] { mean(x, 5); }, "[mean]");
  expect_tag([&] { var(x, 2); }, "[var]");
  expect_tag([&] { kiln::std(x, {0, 0}); }, "[std]");
  expect_tag([&] { logsumexp(x, 3); }, "[logsumexp]");
  expect_tag([&] { all(x, 9); }, "[all]");
  expect_tag([&] { any(x, -9); }, "[any]");
  expect_tag([&] { argmax(x, 2); }, "[argmax]");
  expect_tag([&] { argmin(x, -3); }, "[argmin]");
  expect_tag([&] { softmax(x, {0, 0}); }, "[softmax]");
  // No identity for an empty reduction.
  expect_tag([&] { max(zeros({0, 3}), 0); }, "[max]");
  expect_tag([&] { min(zeros({0})); }, "[min]");
  expect_tag([&] { argmax(zeros({0, 3}), 0); }, "[argmax]");
  expect_tag([&] { argmin(zeros({0})); }, "[argmin]");
  // No ordering for complex numbers in argmax (max, logsumexp and softmax order them
  // lexicographically, as MLX).
  array c = zeros({2}, complex64);
  expect_tag([&] { argmax(c); }, "[argmax]");
  // The input stays usable.
  EXPECT_EQ(sum(x).item<float>(), 0.0f);
}
