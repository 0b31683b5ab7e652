// The transforms of the reductions: vjp, jvp and vmap of sum, prod, max, min, mean, var, std,
// logsumexp and softmax (the fused softmax gradient included) against float64 loop references.
#include <cmath>
#include <complex>

#include "graph_test.h"
#include "kiln/primitives.h"
#include "reduce_test.h"

using namespace reduce_test;

// ---------------------------------------------------------------- transforms

namespace {

std::vector<double> vjp_of(const UnaryFn& f, const array& x, const array& g) {
  return test::to_double(vjp(f, x, g).second);
}

}  // namespace

TEST(ReduceGrad, SumBroadcastsTheCotangent) {
  array x = test::random_array({3, 4}, float32);
  array g = test::random_array({3}, float32);
  auto gv = test::to_double(g);
  auto d = vjp_of([](const array& a) { return sum(a, 1); }, x, g);
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(d[i], gv[i / 4]);
  // jvp is the sum of the tangent.
  array t = test::random_array({3, 4}, float32);
  auto [y, dy] = jvp([](const array& a) { return sum(a, 0, true); }, x, t);
  expect_reduction(dy, t, {0}, true, ref_sum, float32);
  // mean divides by the count.
  auto dm = vjp_of([](const array& a) { return mean(a); }, x, array(2.0f));
  for (double v : dm) EXPECT_FLOAT_EQ(v, 2.0 / 12);
}

TEST(ReduceGrad, ProdHandlesZeros) {
  // Rows with no zero, one zero and two zeros.
  array x = array({2.0f, 3.0f, 4.0f, 2.0f, 0.0f, 5.0f, 0.0f, 3.0f, 0.0f}, {3, 3});
  auto d = vjp_of([](const array& a) { return prod(a, 1); }, x, array({1.0f, 1.0f, 1.0f}));
  std::vector<double> want = {12, 8, 6, 0, 10, 0, 0, 0, 0};
  EXPECT_EQ(d, want);
  // Over axis 0 of the transpose, and with a random cotangent, against the loop.
  array r = test::random_array({4, 5}, float32);
  r = where(greater(r, array(1.5f)), array(0.0f), r);  // some zeros
  array g = test::random_array({5}, float32);
  auto rv = test::to_double(r), gv = test::to_double(g);
  auto dr = vjp_of([](const array& a) { return prod(a, 0); }, r, g);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 5; ++j) {
      double others = 1;
      for (int k = 0; k < 4; ++k) others *= k == i ? 1 : rv[k * 5 + j];
      EXPECT_NEAR(dr[i * 5 + j], gv[j] * others, 1e-5);
    }
  }
  auto [y, dy] = jvp([](const array& a) { return prod(a, 0); }, r, ones({4, 5}));
  auto dyv = test::to_double(dy);
  for (int j = 0; j < 5; ++j) {
    double want_j = 0;
    for (int i = 0; i < 4; ++i) {
      double others = 1;
      for (int k = 0; k < 4; ++k) others *= k == i ? 1 : rv[k * 5 + j];
      want_j += others;
    }
    EXPECT_NEAR(dyv[j], want_j, 1e-5);
  }
}

TEST(ReduceGrad, MaxMinShareAmongTies) {
  array x = array({1.0f, 3.0f, 3.0f, 2.0f, 5.0f, 4.0f, -1.0f, -1.0f}, {2, 4});
  auto d = vjp_of([](const array& a) { return max(a, 1); }, x, array({1.0f, 2.0f}));
  EXPECT_EQ(d, (std::vector<double>{0, 0.5, 0.5, 0, 2, 0, 0, 0}));
  auto dm = vjp_of([](const array& a) { return min(a, 1); }, x, array({1.0f, 2.0f}));
  EXPECT_EQ(dm, (std::vector<double>{1, 0, 0, 0, 0, 0, 1, 1}));
  auto [y, dy] = jvp([](const array& a) { return max(a); }, x, ones({2, 4}));
  EXPECT_FLOAT_EQ(dy.item<float>(), 1.0f);
}

TEST(ReduceGrad, LogSumExpAndSoftmax) {
  array x = test::random_array({3, 5}, float32, -3, 3);
  // d logsumexp = softmax.
  auto d = vjp_of([](const array& a) { return logsumexp(a, 1); }, x, ones({3}));
  test::expect_allclose(softmax(x, 1), {3, 5}, d);
  // softmax vjp: y * (g - sum(g * y)).
  array g = test::random_array({3, 5}, float32);
  auto ys = test::to_double(softmax(x, 1)), gv = test::to_double(g);
  auto ds = vjp_of([](const array& a) { return softmax(a, 1); }, x, g);
  for (int i = 0; i < 3; ++i) {
    double dot = 0;
    for (int j = 0; j < 5; ++j) dot += gv[i * 5 + j] * ys[i * 5 + j];
    for (int j = 0; j < 5; ++j) {
      EXPECT_NEAR(ds[i * 5 + j], ys[i * 5 + j] * (gv[i * 5 + j] - dot), 1e-5);
    }
  }
  auto [sy, sdy] = jvp([](const array& a) { return softmax(a, -1); }, x, g);
  auto jv = test::to_double(sdy);
  for (int i = 0; i < 3; ++i) {
    double dot = 0;
    for (int j = 0; j < 5; ++j) dot += gv[i * 5 + j] * ys[i * 5 + j];
    for (int j = 0; j < 5; ++j) {
      EXPECT_NEAR(jv[i * 5 + j], ys[i * 5 + j] * (gv[i * 5 + j] - dot), 1e-5);
    }
  }
  // std: d/dx sqrt(var) = (x - mean) / (n * std).
  auto dstd = vjp_of([](const array& a) { return kiln::std(a); }, x, array(1.0f));
  auto xv = test::to_double(x);
  double m = ref_mean(xv), sd = std::sqrt(ref_var(xv, 0));
  for (int i = 0; i < 15; ++i) EXPECT_NEAR(dstd[i], (xv[i] - m) / (15 * sd), 1e-5);
}

// The fused gradient (fast::SoftmaxVJP) on the default device: every float dtype, rows in
// registers and looped (long, odd and unaligned rows), a transposed cotangent, empty arrays;
// against y * (g - sum(y * g)) in float64 from the rounded y and g.
TEST(ReduceGrad, SoftmaxGradientIsFusedForEveryFloatDtype) {
  for (Dtype d : {float16, bfloat16, float32, float64}) {
    for (Shape shape : {Shape{3, 8}, Shape{2, 7}, Shape{4, 1000}, Shape{2, 20000}, Shape{5},
                        Shape{0, 4}, Shape{3, 0}}) {
      SCOPED_TRACE(::testing::Message() << d << " " << shape.size() << "-d, last "
                                        << (shape.empty() ? 0 : shape.back()));
      array x = test::random_array(shape, d, -3, 3);
      // A transposed (non-contiguous) cotangent for the 2-d shapes.
      Shape ts = shape;
      if (ts.size() == 2) std::swap(ts[0], ts[1]);
      array g = test::random_array(ts, d);
      if (ts.size() == 2) g = transpose(g);
      std::vector<array> dx =
          vjp([](const std::vector<array>& a) { return std::vector<array>{softmax(a[0], -1)}; },
              {x}, {g})
              .second;
      if (x.size() > 0) {
        EXPECT_EQ(test::graph_primitives(dx).count("SoftmaxVJP"), 1u);
      }
      EXPECT_EQ(dx[0].dtype(), d);
      const int64_t n = shape.back(), rows = n == 0 ? 0 : x.size() / n;
      auto ys = test::to_double(softmax(x, -1)), gv = test::to_double(g);
      std::vector<double> want(ys.size());
      for (int64_t r = 0; r < rows; ++r) {
        double dot = 0;
        for (int64_t j = 0; j < n; ++j) dot += ys[r * n + j] * gv[r * n + j];
        for (int64_t j = 0; j < n; ++j) want[r * n + j] = ys[r * n + j] * (gv[r * n + j] - dot);
      }
      test::expect_allclose(dx[0], shape, want);
    }
  }
}

// Holomorphic, so (MLX's convention) vjp(c) = conj(J)^T c and jvp(t) = J t, with
// J = diag(y) - y y^T for softmax y and J = y for logsumexp.
TEST(ReduceGrad, ComplexLogSumExpAndSoftmax) {
  array x = test::random_array({3, 4}, complex64, -2, 2);
  array c = test::random_array({3, 4}, complex64);
  array cl = test::random_array({3}, complex64);
  auto y = test::to_complex(softmax(x, -1));
  auto cv = test::to_complex(c), clv = test::to_complex(cl);
  auto dl = test::to_complex(vjp([](const array& a) { return logsumexp(a, 1); }, x, cl).second);
  auto ds = test::to_complex(vjp([](const array& a) { return softmax(a, -1); }, x, c).second);
  auto jl = test::to_complex(jvp([](const array& a) { return logsumexp(a, -1); }, x, c).second);
  auto js = test::to_complex(jvp([](const array& a) { return softmax(a, 1); }, x, c).second);
  for (int i = 0; i < 3; ++i) {
    cd dot_conj = 0, dot = 0;
    for (int j = 0; j < 4; ++j) {
      dot_conj += cv[i * 4 + j] * std::conj(y[i * 4 + j]);
      dot += cv[i * 4 + j] * y[i * 4 + j];
    }
    expect_complex_near(jl[i], dot, 1e-5, "jvp logsumexp");
    for (int j = 0; j < 4; ++j) {
      int k = i * 4 + j;
      expect_complex_near(dl[k], clv[i] * std::conj(y[k]), 1e-5, "vjp logsumexp");
      expect_complex_near(ds[k], std::conj(y[k]) * (cv[k] - dot_conj), 1e-5, "vjp softmax");
      expect_complex_near(js[k], y[k] * (cv[k] - dot), 1e-5, "jvp softmax");
    }
  }
}

TEST(ReduceGrad, IntegerAndBoolOutputsHaveZeroGradient) {
  array x = test::random_array({3, 4}, float32);
  // argmax and all/any outputs are integer/bool: nothing flows back through them.
  auto d = vjp_of(
      [](const array& a) {
        return multiply(a, astype(add(astype(argmax(a, 1, true), float32),
                                      astype(all(greater(a, array(0.0f)), 1, true), float32)),
                                  float32));
      },
      x, ones({3, 4}));
  auto idx = test::to_double(argmax(x, 1)), allp = test::to_double(all(greater(x, array(0.0f)), 1));
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(d[i], idx[i / 4] + allp[i / 4]);
}

TEST(ReduceVmap, MatchesALoop) {
  array x = test::random_array({4, 3, 5}, float32);
  const std::vector<UnaryFn> fns = {
      [](const array& a) { return sum(a, 0); },
      [](const array& a) { return max(a, -1, true); },
      [](const array& a) {
        return prod(a, {0, 1});
      },
      [](const array& a) { return astype(argmin(a, 0), float32); },
      [](const array& a) { return any(greater(a, array(1.0f)), 1); },
      [](const array& a) { return softmax(a, -1); },
      [](const array& a) { return softmax(a, std::vector<int>{0}); },
  };
  for (int in_axis : {0, 1, 2}) {
    for (const auto& f : fns) {
      array y = vmap(f, in_axis)(x);  // the batch axis comes out first
      for (int b = 0; b < x.shape()[in_axis]; ++b) {
        Shape start(3, 0), stop = x.shape();
        start[in_axis] = b;
        stop[in_axis] = b + 1;
        array want = f(squeeze(slice(x, start, stop), in_axis));
        Shape ys(y.ndim(), 0), ye = y.shape();
        ys[0] = b;
        ye[0] = b + 1;
        array got = squeeze(slice(y, ys, ye), 0);
        test::expect_allclose(got, want.shape(), test::to_double(want));
      }
    }
  }
}
