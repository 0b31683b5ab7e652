// where, clip, isclose, allclose and array_equal against float64 loop references on fresh
// random inputs: every dtype, broadcasting, non-contiguous and empty operands, NaN and
// infinity semantics (NumPy), errors and transforms.
#include <cmath>
#include <complex>
#include <limits>

#include "test_utils.h"

using namespace kiln;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

array operand(const Shape& shape, Dtype d) {
  return test::random_array(shape, d, is_unsigned(d) ? 0.0 : -5.0, 5.0);
}

// where(c, x, y) against a loop over the broadcast operands.
void check_where(const array& c, const array& x, const array& y, const std::string& what) {
  SCOPED_TRACE(what + " " + std::string(dtype_name(x.dtype())));
  array out = where(c, x, y);
  Shape shape = broadcast_shapes({c, x, y});
  ASSERT_EQ(out.shape(), shape);
  ASSERT_EQ(out.dtype(), promote_types(x.dtype(), y.dtype()));
  auto cs = test::to_double(broadcast_to(c, shape));
  if (is_complex(out.dtype())) {
    auto xs = test::to_complex(broadcast_to(x, shape)),
         ys = test::to_complex(broadcast_to(y, shape));
    auto got = test::to_complex(out);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], cs[i] != 0 ? xs[i] : ys[i]) << i;
    return;
  }
  auto xs = test::to_double(broadcast_to(x, shape)), ys = test::to_double(broadcast_to(y, shape));
  std::vector<double> want(cs.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = cs[i] != 0 ? xs[i] : ys[i];
  test::expect_allclose(out, shape, want, 0.0);  // a selection is exact
}

// NumPy's isclose in float64.
double isclose_ref(double a, double b, double rtol, double atol, bool equal_nan) {
  bool close = (std::abs(a - b) <= atol + rtol * std::abs(b) && std::isfinite(b)) || a == b;
  return close || (equal_nan && std::isnan(a) && std::isnan(b));
}

}  // namespace

TEST(Where, EveryDtypeEveryLayout) {
  for (Dtype d : all_dtypes) {
    array c = test::random_array({4, 5}, bool_);
    check_where(c, operand({4, 5}, d), operand({4, 5}, d), "contiguous");
    check_where(test::random_array({3, 1}, bool_), operand({1, 4}, d), operand({}, d),
                "(3,1) x (1,4) x scalar");
    check_where(test::random_array({}, bool_), operand({2, 3}, d), operand({2, 3}, d),
                "scalar condition");
    check_where(transpose(test::random_array({5, 4}, bool_)), operand({4, 5}, d),
                transpose(operand({5, 4}, d)), "transposed");
    check_where(c, slice(operand({4, 10}, d), {0, 0}, {4, 10}, {1, 2}),
                slice(operand({5, 10}, d), {4, 9}, {0, 0}, {-1, -2}), "strided and reversed");
    check_where(test::random_array({0, 5}, bool_), operand({5}, d), operand({0, 5}, d), "empty");
  }
  // Large enough for the threaded flat and strided paths.
  check_where(test::random_array({3, 100000}, bool_), operand({3, 100000}, float32),
              operand({3, 100000}, float32), "large");
  check_where(test::random_array({100000, 1}, bool_), operand({1, 3}, float32),
              transpose(operand({3, 100000}, float32)), "large strided");
}

TEST(Where, ConditionOfAnyDtypeAndPromotion) {
  // A non-bool condition means "non-zero"; x and y promote.
  array c({0.0f, 2.5f, -1.0f, 0.0f});
  array out = where(c, array({1, 2, 3, 4}, int8), array({10.5, 20.5, 30.5, 40.5}, float64));
  EXPECT_EQ(out.dtype(), float64);
  EXPECT_EQ(test::to_double(out), (std::vector<double>{10.5, 2, 3, 40.5}));
  check_where(test::random_array({3, 4}, int32, -1, 2), operand({3, 4}, uint8),
              operand({4}, float16), "mixed");
  check_where(test::random_array({3}, bool_), operand({3}, complex64), operand({3}, float32),
              "complex");
}

TEST(Where, Errors) {
  EXPECT_EQ(message_of([] {
              where(array({true, false}), array({1, 2, 3}), array(0));
            }),
            "[where] Shapes (2,) and (3,) cannot be broadcast.");
}

TEST(Where, Gradients) {
  array c = test::random_array({5}, bool_);
  array x = test::random_array({5}, float64), y = test::random_array({5}, float64);
  array ct = test::random_array({5}, float64);
  auto fn = [](const std::vector<array>& in) {
    return std::vector<array>{where(in[0], in[1], in[2])};
  };
  auto [outs, grads] = vjp(fn, {c, x, y}, {ct});
  auto cs = test::to_double(c), cts = test::to_double(ct);
  std::vector<double> gx(5), gy(5);
  for (int i = 0; i < 5; ++i) gx[i] = cs[i] ? cts[i] : 0, gy[i] = cs[i] ? 0 : cts[i];
  test::expect_allclose(grads[1], {5}, gx, 0.0);
  test::expect_allclose(grads[2], {5}, gy, 0.0);
  auto [outs2, tangents] = jvp(fn, {c, x, y}, {zeros_like(c), ct, negative(ct)});
  std::vector<double> t(5);
  for (int i = 0; i < 5; ++i) t[i] = cs[i] ? cts[i] : -cts[i];
  test::expect_allclose(tangents[0], {5}, t, 0.0);
}

TEST(Clip, BoundsEveryRealDtype) {
  for (Dtype d : all_dtypes) {
    if (d == complex64) continue;
    SCOPED_TRACE(dtype_name(d));
    array a = operand({4, 5}, d);
    array lo = operand({5}, d), hi = add(lo, astype(array(2), d));
    auto xa = test::to_double(a), xl = test::to_double(lo), xh = test::to_double(hi);
    std::vector<double> both(20), lower(20), upper(20);
    for (int i = 0; i < 20; ++i) {
      lower[i] = std::max(xa[i], xl[i % 5]);
      upper[i] = std::min(xa[i], xh[i % 5]);
      both[i] = std::min(std::max(xa[i], xl[i % 5]), xh[i % 5]);
    }
    test::expect_allclose(clip(a, lo, hi), {4, 5}, both, 0.0);
    test::expect_allclose(clip(a, lo, std::nullopt), {4, 5}, lower, 0.0);
    test::expect_allclose(clip(transpose(transpose(a)), std::nullopt, hi), {4, 5}, upper, 0.0);
    EXPECT_EQ(clip(a, lo, hi).dtype(), d);
  }
}

TEST(Clip, ScalarsNaNPromotionAndErrors) {
  array a({-3.0f, -0.5f, 0.5f, 3.0f, NAN});
  test::expect_allclose(clip(a, array(-1.0f), array(1.0f)), {5}, {-1, -0.5, 0.5, 1, kNaN});
  // Crossed bounds: a_max wins, as in NumPy.
  test::expect_allclose(clip(a, array(2.0f), array(1.0f)), {5}, {1, 1, 1, 1, kNaN});
  // Bounds promote: int32 data clipped by a float bound becomes float32.
  array c = clip(array({1, 5, 9}), array(2.5f), std::nullopt);
  EXPECT_EQ(c.dtype(), float32);
  test::expect_allclose(c, {3}, {2.5, 5, 9});
  test::expect_allclose(clip(zeros({0, 2}), array(0.0f), array(1.0f)), {0, 2}, {});
  EXPECT_EQ(message_of([] { clip(array(1.0f), std::nullopt, std::nullopt); }),
            "[clip] At least one of a_min and a_max must be given.");
  EXPECT_THROW(clip(array(complex64_t(1, 1)), array(0.0f), std::nullopt), std::invalid_argument);
  EXPECT_THROW(clip(array({1.0f, 2.0f}), array({0.0f, 1.0f, 2.0f}), std::nullopt),
               std::invalid_argument);
}

TEST(IsClose, MatchesNumPyFormula) {
  for (Dtype d : {float16, bfloat16, float32, float64, int32, uint8, bool_}) {
    SCOPED_TRACE(dtype_name(d));
    array a = operand({4, 6}, d);
    // b: a nudged by random relative amounts around the tolerance, in b's dtype.
    array noise = test::random_array({4, 6}, float64, -3e-5, 3e-5);
    array b = astype(add(astype(a, float64), multiply(astype(a, float64), noise)), d);
    for (bool equal_nan : {false, true}) {
      for (auto [rtol, atol] : {std::pair{1e-5, 1e-8}, std::pair{1e-3, 0.5}}) {
        array out = isclose(a, b, rtol, atol, equal_nan);
        EXPECT_EQ(out.dtype(), bool_);
        // The reference works on the values in the compute dtype (integers: float32).
        Dtype t = is_inexact(d) ? d : float32;
        auto xa = test::to_double(astype(a, t)), xb = test::to_double(astype(b, t));
        std::vector<double> want(xa.size());
        for (size_t i = 0; i < want.size(); ++i) {
          want[i] = isclose_ref(xa[i], xb[i], rtol, atol, equal_nan);
        }
        // Within rounding of the bound the float computation may decide either way.
        auto got = test::to_double(out);
        for (size_t i = 0; i < got.size(); ++i) {
          double margin = std::abs(std::abs(xa[i] - xb[i]) - (atol + rtol * std::abs(xb[i])));
          if (margin > 4 * test::tolerance(t) * (1 + std::abs(xb[i]))) {
            EXPECT_EQ(got[i], want[i]) << xa[i] << " vs " << xb[i];
          }
        }
      }
    }
  }
}

TEST(IsClose, SpecialValuesBroadcastingAndComplex) {
  array a({kInf, kInf, -kInf, kNaN, kNaN, 1.0, 0.0, 1e-9}, float32);
  array b({kInf, -kInf, -kInf, kNaN, 1.0, kInf, 0.0, 0.0}, float32);
  EXPECT_EQ(test::to_double(isclose(a, b)), (std::vector<double>{1, 0, 1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(test::to_double(isclose(a, b, 1e-5, 1e-8, true)),
            (std::vector<double>{1, 0, 1, 1, 0, 0, 1, 1}));
  array m =
      isclose(array({1.0f, 2.0f, 3.0f}, {3, 1}), array({1.0f, 2.000001f, 4.0f, 3.0f}, {1, 4}));
  EXPECT_EQ(m.shape(), (Shape{3, 4}));
  EXPECT_EQ(test::to_double(m), (std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}));
  array z = array(std::vector<complex64_t>{{1, 1}, {1, 1}}.begin(), {2}, complex64);
  array w = array(std::vector<complex64_t>{{1, 1.000001f}, {1, 1.1f}}.begin(), {2}, complex64);
  EXPECT_EQ(test::to_double(isclose(z, w)), (std::vector<double>{1, 0}));
  EXPECT_EQ(isclose(zeros({0, 2}), array(1.0f)).shape(), (Shape{0, 2}));
  EXPECT_THROW(isclose(array({1.0f, 2.0f}), array({1.0f, 2.0f, 3.0f})), std::invalid_argument);
}

TEST(AllClose, ReducesIsClose) {
  array a = test::random_array({3, 4}, float32);
  array b = add(a, multiply(a, array(1e-7f)));
  EXPECT_TRUE(allclose(a, b).item<bool>());
  EXPECT_EQ(allclose(a, b).shape(), Shape{});
  EXPECT_FALSE(allclose(a, add(a, array(1e-3f))).item<bool>());
  EXPECT_TRUE(allclose(a, add(a, array(1e-3f)), 0.0, 1e-2).item<bool>());
  array n({1.0f, NAN});
  EXPECT_FALSE(allclose(n, n).item<bool>());
  EXPECT_TRUE(allclose(n, n, 1e-5, 1e-8, true).item<bool>());
  EXPECT_TRUE(allclose(zeros({0, 3}), array(5.0f)).item<bool>());  // vacuous
  EXPECT_TRUE(allclose(transpose(a), transpose(b)).item<bool>());
}

TEST(ArrayEqual, ShapesValuesDtypesAndNaN) {
  array a = test::random_array({3, 4}, int32, -5, 5);
  EXPECT_TRUE(array_equal(a, a).item<bool>());
  EXPECT_TRUE(array_equal(a, astype(a, float32)).item<bool>());  // values, not dtypes
  EXPECT_TRUE(array_equal(transpose(transpose(a)), copy(a)).item<bool>());
  EXPECT_FALSE(array_equal(a, reshape(a, {4, 3})).item<bool>());  // shapes differ
  EXPECT_FALSE(array_equal(a, broadcast_to(a, {2, 3, 4})).item<bool>());
  array b = add(a, astype(test::random_array({3, 4}, bool_), int32));
  auto xa = test::to_double(a), xb = test::to_double(b);
  bool differs = xa != xb;
  EXPECT_EQ(array_equal(a, b).item<bool>(), !differs);
  array n({1.0, kNaN});
  EXPECT_FALSE(array_equal(n, n).item<bool>());
  EXPECT_TRUE(array_equal(n, n, true).item<bool>());
  EXPECT_TRUE(array_equal(array({1, 2}), array({1, 2}), true).item<bool>());  // ints ignore it
  array z(std::vector<complex64_t>{{NAN, 1}}.begin(), {1}, complex64);
  EXPECT_TRUE(array_equal(z, z, true).item<bool>());
  EXPECT_TRUE(array_equal(zeros({0}), zeros({0}, int8)).item<bool>());
}
