// Scans: cumsum and cumprod along any axis, forward or reversed, inclusive or exclusive.
// Checked against float64 loops over each line on every dtype, on transposed, strided and
// broadcast inputs, on lines long enough to split across threads and on tiles of columns,
// on empty arrays and each argument check. Gradients (cumprod with zeros included) are
// checked against loops over the set of inputs each output combines.
#include <cmath>
#include <complex>
#include <limits>

#include "kiln/primitives.h"
#include "test_utils.h"

using namespace kiln;

namespace {

/** Calls f(line offsets) for every line of `shape` along `axis` (row-major offsets). */
template <typename F>
void for_lines(const Shape& shape, int axis, F f) {
  int64_t n = shape[axis], inner = 1, outer = 1;
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  std::vector<int64_t> idx(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < n; ++k) idx[k] = o * n * inner + k * inner + i;
      f(idx);
    }
  }
}

/** Line positions combined into output i. */
std::vector<int64_t> members(int64_t i, int64_t n, bool reverse, bool inclusive) {
  std::vector<int64_t> m;
  for (int64_t k = 0; k < n; ++k) {
    bool in = reverse ? (inclusive ? k >= i : k > i) : (inclusive ? k <= i : k < i);
    if (in) m.push_back(k);
  }
  return m;
}

/** Sequential float64 scan of x (row-major values of `shape`). */
std::vector<double> scan_ref(const std::vector<double>& x, const Shape& shape, int axis,
                             bool is_sum, bool reverse, bool inclusive) {
  if (axis < 0) axis += static_cast<int>(shape.size());
  std::vector<double> y(x.size());
  for_lines(shape, axis, [&](const std::vector<int64_t>& line) {
    long double acc = is_sum ? 0 : 1;
    int64_t n = line.size();
    for (int64_t s = 0; s < n; ++s) {
      int64_t k = reverse ? n - 1 - s : s;
      long double next = is_sum ? acc + x[line[k]] : acc * x[line[k]];
      y[line[k]] = static_cast<double>(inclusive ? next : acc);
      acc = next;
    }
  });
  return y;
}

void expect_scan(const array& x, int axis, bool is_sum, bool reverse, bool inclusive,
                 double rtol = -1) {
  SCOPED_TRACE(msg(is_sum ? "cumsum " : "cumprod ", x.dtype(), " ", shape_str(x.shape()), " axis ",
                   axis, " reverse ", reverse, " inclusive ", inclusive));
  array y = is_sum ? cumsum(x, axis, reverse, inclusive) : cumprod(x, axis, reverse, inclusive);
  EXPECT_EQ(y.dtype(), detail::sum_dtype(x.dtype()));
  test::expect_allclose(y, x.shape(),
                        scan_ref(test::to_double(x), x.shape(), axis, is_sum, reverse, inclusive),
                        rtol);
}

array input(const Shape& shape, Dtype dtype, bool for_prod) {
  if (for_prod) {
    return is_integral(dtype) && dtype != bool_
               ? test::random_array(shape, dtype, is_unsigned(dtype) ? 0 : -3, 3)
               : test::random_array(shape, dtype, 0.5, 1.5);
  }
  if (is_unsigned(dtype)) return test::random_array(shape, dtype, 0, 10);
  if (is_signed_integer(dtype)) return test::random_array(shape, dtype, -10, 10);
  return test::random_array(shape, dtype);
}

}  // namespace

TEST(Scan, EveryDtypeAxisAndDirection) {
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;
    for (bool is_sum : {true, false}) {
      array x = input({3, 4, 5}, dt, !is_sum);
      for (int axis : {0, 1, 2, -1, -3}) {
        for (bool reverse : {false, true}) {
          for (bool inclusive : {true, false}) expect_scan(x, axis, is_sum, reverse, inclusive);
        }
      }
    }
  }
}

TEST(Scan, Complex) {
  array x = test::random_array({3, 4}, complex64);
  auto xv = test::to_complex(x);
  for (bool reverse : {false, true}) {
    array s = cumsum(x, 1, reverse), p = cumprod(x, 1, reverse, false);
    EXPECT_EQ(s.dtype(), complex64);
    auto sv = test::to_complex(s), pv = test::to_complex(p);
    for (int r = 0; r < 3; ++r) {
      for (int i = 0; i < 4; ++i) {
        std::complex<double> es = 0, ep = 1;
        for (int64_t k : members(i, 4, reverse, true)) es += xv[r * 4 + k];
        for (int64_t k : members(i, 4, reverse, false)) ep *= xv[r * 4 + k];
        EXPECT_NEAR(std::abs(sv[r * 4 + i] - es), 0, 1e-5 * (1 + std::abs(es)));
        EXPECT_NEAR(std::abs(pv[r * 4 + i] - ep), 0, 1e-5 * (1 + std::abs(ep)));
      }
    }
  }
}

TEST(Scan, HalfTypesAccumulateInFloat32) {
  // A float16 running total stops at 2048 (2048 + 1 rounds back); each output is the
  // float32 total rounded once, so 3000 ones count to 3000.
  array h = full({3000}, 1.0f, float16);
  auto y = test::to_double(cumsum(h, 0));
  EXPECT_EQ(y.back(), 3000.0);
  EXPECT_EQ(y[2048], 2048.0);  // 2049 rounds to even
  array b = full({2, 3000}, 1.0f, bfloat16);
  EXPECT_EQ(test::to_double(cumsum(b, 1)).back(), 3008.0);  // 3000 rounded to bfloat16
  // int8 widens to int32 instead of wrapping.
  EXPECT_EQ(test::to_double(cumsum(full({100}, 100, int8), 0)).back(), 10000.0);
}

TEST(Scan, NonContiguousAndLargeInputs) {
  array base = test::random_array({6, 8, 10}, float32);
  std::vector<array> views = {
      transpose(base, {2, 0, 1}),
      slice(base, {0, 1, 0}, {6, 8, 10}, {2, 3, 3}),
      broadcast_to(slice(base, {0, 0, 0}, {6, 1, 10}), {6, 7, 10}),
  };
  for (const array& v : views) {
    for (int axis : {0, 1, 2}) {
      expect_scan(v, axis, true, false, true);
      expect_scan(v, axis, true, true, false);
      expect_scan(v, axis, false, true, true, 1e-4);
    }
  }
  // Long lines split across threads; column tiles wider than one tile; many short lines.
  // Running totals round at every step (as NumPy's), so long float64 lines get 1e-9.
  array rows = test::random_array({3, 100000}, float64);
  expect_scan(rows, 1, true, false, true, 1e-9);
  expect_scan(rows, 1, true, true, false, 1e-9);
  array cols = test::random_array({300, 2100}, float32);
  expect_scan(cols, 0, true, false, true, 1e-4);
  expect_scan(cols, 0, true, true, false, 1e-4);
  array ints = input({40000, 3}, int32, false);
  expect_scan(ints, 1, true, false, true);
  expect_scan(ints, 0, true, true, true);
}

TEST(Scan, EmptyArraysAndErrors) {
  for (const Shape& s : {Shape{0, 3}, Shape{3, 0}, Shape{0}}) {
    for (int axis = 0; axis < static_cast<int>(s.size()); ++axis) {
      array y = cumsum(zeros(s, int8), axis);
      EXPECT_EQ(y.shape(), s);
      EXPECT_EQ(y.dtype(), int32);
      EXPECT_EQ(cumprod(zeros(s), axis, true, false).shape(), s);
      eval(y);
    }
  }
  EXPECT_EQ(cumsum(array({1.0f}), 0).item<float>(), 1.0f);
  EXPECT_EQ(cumsum(array({1.0f}), 0, false, false).item<float>(), 0.0f);
  auto expect_tag = [](auto fn, const std::string& tag) {
    try {
      fn();
      ADD_FAILURE() << "expected " << tag;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(tag), std::string::npos) << e.what();
    }
  };
  array x = zeros({2, 3});
  expect_tag([&] { cumsum(x, 2); }, "[cumsum]");
  expect_tag([&] { cumsum(x, -3); }, "[cumsum]");
  expect_tag([&] { cumprod(x, 5); }, "[cumprod]");
  expect_tag([&] { cumsum(array(1.0f), 0); }, "[cumsum]");  // 0-d has no axis
}

// ---------------------------------------------------------------- transforms

namespace {

/** d(output i)/d(input k) of one line: sum -> 1, prod -> product of the other members. */
double partial(const std::vector<double>& x, int64_t i, int64_t k, bool is_sum, bool reverse,
               bool inclusive) {
  auto m = members(i, x.size(), reverse, inclusive);
  if (std::find(m.begin(), m.end(), k) == m.end()) return 0;
  if (is_sum) return 1;
  double p = 1;
  for (int64_t j : m) p *= j == k ? 1 : x[j];
  return p;
}

}  // namespace

TEST(ScanGrad, VjpAndJvpMatchTheJacobian) {
  // Lines with no zero, one zero, two zeros, and a zero at the first position.
  const int n = 6;
  array x = array({1.5f, -2.0f, 0.5f,  3.0f, 1.25f, -1.0f,  //
                   2.0f, 0.5f,  0.0f,  3.0f, -1.5f, 2.0f,   //
                   0.0f, 2.0f,  1.5f,  0.0f, 3.0f,  -0.5f,  //
                   1.0f, 0.0f,  -2.0f, 0.5f, 4.0f,  1.0f},
                  {4, n});
  auto xv = test::to_double(x);
  array g = test::random_array({4, n}, float32);
  auto gv = test::to_double(g);
  for (bool is_sum : {true, false}) {
    for (bool reverse : {false, true}) {
      for (bool inclusive : {true, false}) {
        SCOPED_TRACE(
            msg(is_sum ? "cumsum" : "cumprod", " reverse ", reverse, " inclusive ", inclusive));
        UnaryFn f = [=](const array& a) {
          return is_sum ? cumsum(a, 1, reverse, inclusive) : cumprod(a, 1, reverse, inclusive);
        };
        auto dx = test::to_double(vjp(f, x, g).second);
        auto dy = test::to_double(jvp(f, x, g).second);
        for (int r = 0; r < 4; ++r) {
          std::vector<double> line(xv.begin() + r * n, xv.begin() + (r + 1) * n);
          for (int k = 0; k < n; ++k) {
            double want_dx = 0, want_dy = 0;
            for (int i = 0; i < n; ++i) {
              want_dx += gv[r * n + i] * partial(line, i, k, is_sum, reverse, inclusive);
              want_dy += gv[r * n + i] * partial(line, k, i, is_sum, reverse, inclusive);
            }
            EXPECT_NEAR(dx[r * n + k], want_dx, 1e-4 * (1 + std::abs(want_dx))) << r << "," << k;
            EXPECT_NEAR(dy[r * n + k], want_dy, 1e-4 * (1 + std::abs(want_dy))) << r << "," << k;
          }
        }
      }
    }
  }
}

TEST(ScanVmap, MatchesALoop) {
  array x = test::random_array({4, 3, 5}, float32);
  for (int in_axis : {0, 1, 2}) {
    for (bool is_sum : {true, false}) {
      UnaryFn f = [=](const array& a) {
        return is_sum ? cumsum(a, -1, true, false) : cumprod(a, 0);
      };
      array y = vmap(f, in_axis)(x);
      for (int b = 0; b < x.shape()[in_axis]; ++b) {
        Shape start(3, 0), stop = x.shape();
        start[in_axis] = b;
        stop[in_axis] = b + 1;
        array want = f(squeeze(slice(x, start, stop), in_axis));
        array got = squeeze(slice(y, {b, 0, 0}, {b + 1, y.shape()[1], y.shape()[2]}), 0);
        test::expect_allclose(got, want.shape(), test::to_double(want));
      }
    }
  }
}
