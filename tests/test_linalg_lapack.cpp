// kiln::linalg's factorizations and solvers on fresh random matrices, checked by the
// identities that define them in float64 loops (a = L L^T, Q^T Q = I, a x = b, ...), in
// float32 and float64, batched and on non-contiguous views, plus the errors (shape, dtype,
// singular, not positive definite) and norms against direct loops. The derivatives are
// checked in test_grad_check.cpp (rows linalg::*).
#include <cmath>

#include "test_utils.h"

using namespace kiln;

namespace {

using Mat = std::vector<double>;  // row-major n x m

// Matrix b of a batch as doubles.
Mat matrix(const std::vector<double>& all, size_t b, int rows, int cols) {
  return Mat(all.begin() + b * rows * cols, all.begin() + (b + 1) * rows * cols);
}

Mat mul(const Mat& a, const Mat& b, int n, int k, int m, bool ta = false, bool tb = false) {
  Mat c(static_cast<size_t>(n) * m, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      double s = 0;
      for (int l = 0; l < k; ++l) {
        double x = ta ? a[l * n + i] : a[i * k + l];
        double y = tb ? b[j * k + l] : b[l * m + j];
        s += x * y;
      }
      c[i * m + j] = s;
    }
  return c;
}

void expect_near(const Mat& got, const Mat& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
  }
}

Mat identity(int n) {
  Mat e(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) e[i * n + i] = 1;
  return e;
}

// A well-conditioned batch: random plus n on the diagonal.
array well_conditioned(const Shape& shape, Dtype dtype) {
  const int n = shape.back();
  return add(test::random_array(shape, dtype),
             multiply(eye(n, dtype), array(static_cast<double>(n), dtype)));
}

double tol(Dtype d) {
  return d == float64 ? 1e-10 : 2e-4;
}

class Linalg : public ::testing::TestWithParam<Dtype> {};

TEST_P(Linalg, InverseSolveAndTriangular) {
  const Dtype d = GetParam();
  const auto dev = test::test_device();
  const int n = 5;
  array a = well_conditioned({2, 3, n, n}, d);
  // A transposed view: the same matrices, non-contiguous.
  array at = swapaxes(contiguous(swapaxes(a, -1, -2)), -1, -2);
  auto av = test::to_double(a);
  for (const array& in : {a, at}) {
    auto iv = test::to_double(linalg::inv(in, dev));
    for (size_t b = 0; b < 6; ++b) {
      expect_near(mul(matrix(av, b, n, n), matrix(iv, b, n, n), n, n, n), identity(n), tol(d),
                  "a @ inv(a)");
    }
  }
  array rhs = test::random_array({2, 1, n, 3}, d);  // batch broadcasts against a's
  auto xv = test::to_double(linalg::solve(a, rhs, dev));
  auto rv = test::to_double(broadcast_to(rhs, {2, 3, n, 3}));
  for (size_t b = 0; b < 6; ++b) {
    expect_near(mul(matrix(av, b, n, n), matrix(xv, b, n, 3), n, n, 3), matrix(rv, b, n, 3), tol(d),
                "solve");
  }
  for (bool upper : {false, true}) {
    array t = upper ? triu(a) : tril(a);
    auto tv = test::to_double(t);
    auto sv =
        test::to_double(linalg::solve_triangular(a, broadcast_to(rhs, {2, 3, n, 3}), upper, dev));
    auto ti = test::to_double(linalg::tri_inv(a, upper, dev));
    for (size_t b = 0; b < 6; ++b) {
      expect_near(mul(matrix(tv, b, n, n), matrix(sv, b, n, 3), n, n, 3), matrix(rv, b, n, 3),
                  tol(d), "solve_triangular");
      expect_near(mul(matrix(tv, b, n, n), matrix(ti, b, n, n), n, n, n), identity(n), tol(d),
                  "tri_inv");
    }
  }
}

TEST_P(Linalg, CholeskyQrSvdEigh) {
  const Dtype d = GetParam();
  const auto dev = test::test_device();
  const int n = 6;
  array r = test::random_array({3, n, n}, d);
  array spd =
      add(matmul(r, swapaxes(r, -1, -2)), multiply(eye(n, d), array(static_cast<double>(n), d)));
  auto sv = test::to_double(spd);
  for (bool upper : {false, true}) {
    auto f = test::to_double(linalg::cholesky(spd, upper, dev));
    for (size_t b = 0; b < 3; ++b) {
      Mat m = matrix(f, b, n, n);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          if (upper ? j < i : j > i) {
            EXPECT_EQ(m[i * n + j], 0.0);
          }
      // L L^T or U^T U
      expect_near(upper ? mul(m, m, n, n, n, true, false) : mul(m, m, n, n, n, false, true),
                  matrix(sv, b, n, n), tol(d), "cholesky");
    }
  }
  // QR of a tall and a wide batch.
  for (Shape shape : {Shape{2, 7, 4}, Shape{2, 3, 5}}) {
    array a = test::random_array(shape, d);
    auto [q, rr] = linalg::qr(a, dev);
    const int m = shape[1], k = std::min(shape[1], shape[2]), c = shape[2];
    auto qv = test::to_double(q), rv = test::to_double(rr), av = test::to_double(a);
    for (size_t b = 0; b < 2; ++b) {
      expect_near(mul(matrix(qv, b, m, k), matrix(rv, b, k, c), m, k, c), matrix(av, b, m, c),
                  tol(d), "QR");
      expect_near(mul(matrix(qv, b, m, k), matrix(qv, b, m, k), k, m, k, true, false), identity(k),
                  tol(d), "Q^T Q");
    }
    // SVD: U diag(S) Vt reconstructs a; S descending.
    auto usv = linalg::svd(a, true, dev);
    auto uv = test::to_double(usv[0]), s = test::to_double(usv[1]), vt = test::to_double(usv[2]);
    for (size_t b = 0; b < 2; ++b) {
      Mat us(static_cast<size_t>(m) * k);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < k; ++j) us[i * k + j] = uv[b * m * m + i * m + j] * s[b * k + j];
      Mat vk(vt.begin() + b * c * c, vt.begin() + b * c * c + static_cast<size_t>(k) * c);
      expect_near(mul(us, vk, m, k, c), matrix(av, b, m, c), tol(d), "SVD");
      for (int j = 1; j < k; ++j) EXPECT_GE(s[b * k + j - 1], s[b * k + j]);
    }
    auto s_only = test::to_double(linalg::svd(a, false, dev)[0]);
    expect_near(s_only, s, tol(d), "svd without vectors");
  }
  // eigh from each triangle: a V = V diag(w), w ascending.
  array sym = add(r, swapaxes(r, -1, -2));
  auto symv = test::to_double(sym);
  for (const char* uplo : {"L", "U"}) {
    auto [w, v] = linalg::eigh(sym, uplo, dev);
    auto wv = test::to_double(w), vv = test::to_double(v);
    for (size_t b = 0; b < 3; ++b) {
      Mat V = matrix(vv, b, n, n), AV = mul(matrix(symv, b, n, n), V, n, n, n);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) V[i * n + j] *= wv[b * n + j];
      expect_near(AV, V, 10 * tol(d), "eigh");
      for (int j = 1; j < n; ++j) EXPECT_LE(wv[b * n + j - 1], wv[b * n + j]);
    }
    expect_near(test::to_double(linalg::eigvalsh(sym, uplo, dev)), wv, tol(d), "eigvalsh");
  }
}

TEST_P(Linalg, LuDetAndNorms) {
  const Dtype d = GetParam();
  const auto dev = test::test_device();
  for (Shape shape : {Shape{2, 5, 5}, Shape{1, 4, 6}, Shape{1, 6, 3}}) {
    array a = test::random_array(shape, d);
    auto plu = linalg::lu(a, dev);
    const int m = shape[1], n = shape[2], k = std::min(m, n);
    auto p = test::to_double(plu[0]), l = test::to_double(plu[1]), u = test::to_double(plu[2]);
    auto av = test::to_double(a);
    for (size_t b = 0; b < static_cast<size_t>(shape[0]); ++b) {
      Mat lu = mul(matrix(l, b, m, k), matrix(u, b, k, n), m, k, n);
      Mat want = matrix(av, b, m, n), got(want.size());
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) got[i * n + j] = lu[static_cast<int>(p[b * m + i]) * n + j];
      expect_near(got, want, tol(d), "L[P] @ U");
    }
  }
  // det against cofactor expansion of a 4x4, and slogdet's parts.
  array a = test::random_array({4, 4}, d);
  auto v = test::to_double(a);
  std::function<double(const Mat&, int)> cof = [&](const Mat& m, int n) -> double {
    if (n == 1) return m[0];
    double s = 0;
    for (int c = 0; c < n; ++c) {
      Mat sub;
      for (int i = 1; i < n; ++i)
        for (int j = 0; j < n; ++j)
          if (j != c) sub.push_back(m[i * n + j]);
      s += (c % 2 ? -1 : 1) * m[c] * cof(sub, n - 1);
    }
    return s;
  };
  const double want = cof(v, 4);
  EXPECT_NEAR(linalg::det(a, dev).item<double>(), want, tol(d) * 10 * (1 + std::abs(want)));
  auto [sg, la] = linalg::slogdet(a, dev);
  EXPECT_EQ(sg.item<double>(), want < 0 ? -1.0 : 1.0);
  EXPECT_NEAR(la.item<double>(), std::log(std::abs(want)), tol(d) * 10);
  // Norms: the nuclear norm is the sum of singular values; ord 1 the largest column sum.
  double colmax = 0;
  for (int j = 0; j < 4; ++j) {
    double s = 0;
    for (int i = 0; i < 4; ++i) s += std::abs(v[i * 4 + j]);
    colmax = std::max(colmax, s);
  }
  EXPECT_NEAR(linalg::norm(a, 1.0, std::nullopt, false, dev).item<double>(), colmax,
              tol(d) * colmax);
  auto s = test::to_double(linalg::svd(a, false, dev)[0]);
  EXPECT_NEAR(linalg::norm(a, std::string("nuc"), std::nullopt, false, dev).item<double>(),
              s[0] + s[1] + s[2] + s[3], 10 * tol(d) * s[0]);
  EXPECT_NEAR(linalg::norm(a, 2.0, std::nullopt, false, dev).item<double>(), s[0],
              10 * tol(d) * s[0]);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Linalg, ::testing::Values(float32, float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(LinalgErrors, ShapesDtypesAndFailures) {
  const auto dev = test::test_device();
  EXPECT_THROW(linalg::inv(zeros({2, 3}), dev), std::invalid_argument);
  EXPECT_THROW(linalg::inv(zeros({3})), std::invalid_argument);
  EXPECT_THROW(linalg::inv(eye(2, int32)), std::invalid_argument);
  EXPECT_THROW(linalg::cholesky(eye(2, float16)), std::invalid_argument);
  EXPECT_THROW(linalg::eigh(eye(2), "X"), std::invalid_argument);
  EXPECT_THROW(linalg::solve(eye(3), ones({2})), std::invalid_argument);
  EXPECT_THROW(linalg::norm(ones({2, 2, 2}), 2.0), std::invalid_argument);
  EXPECT_THROW(linalg::norm(ones({2, 2}), std::string("abc")), std::invalid_argument);
  try {
    linalg::inv(zeros({2, 3}));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[linalg::inv]"), std::string::npos) << e.what();
  }
  // Failures of the factorization surface at evaluation, naming the op; the stream recovers.
  array singular({1.0f, 2.0f, 2.0f, 4.0f}, {2, 2});
  EXPECT_THROW(eval(linalg::inv(singular, dev)), std::runtime_error);
  EXPECT_THROW(eval(linalg::solve(singular, ones({2}), dev)), std::runtime_error);
  EXPECT_THROW(eval(linalg::cholesky(array({1.0f, 2.0f, 2.0f, 1.0f}, {2, 2}), false, dev)),
               std::runtime_error);
  try {
    eval(linalg::inv(stack({eye(2), singular}), dev));
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("singular"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("matrix 1"), std::string::npos) << e.what();
  }
  test::expect_allclose(linalg::inv(multiply(eye(2), array(2.0f)), dev), {2, 2}, {0.5, 0, 0, 0.5});
  // Empty batches and matrices.
  EXPECT_EQ(linalg::inv(zeros({0, 3, 3}), dev).shape(), (Shape{0, 3, 3}));
  EXPECT_EQ(linalg::det(zeros({0, 0}), dev).item<float>(), 1.0f);
}

}  // namespace
