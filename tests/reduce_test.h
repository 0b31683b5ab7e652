// Shared pieces of the reduction tests (test_reduce.cpp, test_reduce_grad.cpp): float64
// references over the groups of input values each output combines, and complex comparisons.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_utils.h"

namespace reduce_test {

using namespace kiln;

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------- host references

/** Normalized, sorted axes (the reference keeps its own copy of the rule). */
inline std::vector<int> norm_axes(std::vector<int> axes, int nd) {
  for (int& a : axes) a = a < 0 ? a + nd : a;
  std::sort(axes.begin(), axes.end());
  return axes;
}

inline Shape reduced_shape(const Shape& shape, const std::vector<int>& axes_in, bool keepdims) {
  auto axes = norm_axes(axes_in, static_cast<int>(shape.size()));
  Shape out;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    bool red = std::binary_search(axes.begin(), axes.end(), i);
    if (!red)
      out.push_back(shape[i]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

/** For each output (row-major), the input values it reduces, in input order. */
template <typename T>
std::vector<std::vector<T>> groups(const std::vector<T>& x, const Shape& shape,
                                   const std::vector<int>& axes_in) {
  auto axes = norm_axes(axes_in, static_cast<int>(shape.size()));
  Shape out_shape = reduced_shape(shape, axes, true);
  std::vector<std::vector<T>> g(shape_size(out_shape));
  for (size_t i = 0; i < x.size(); ++i) {
    size_t rem = i, o = 0, mul = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      size_t c = rem % shape[d];
      rem /= shape[d];
      if (!std::binary_search(axes.begin(), axes.end(), d)) o += c * mul;
      mul *= out_shape[d];
    }
    g[o].push_back(x[i]);
  }
  return g;
}

using Ref = std::function<double(const std::vector<double>&)>;

inline double ref_sum(const std::vector<double>& v) {
  long double s = 0;
  for (double x : v) s += x;
  return static_cast<double>(s);
}
inline double ref_prod(const std::vector<double>& v) {
  long double p = 1;
  for (double x : v) p *= x;
  return static_cast<double>(p);
}
inline double ref_max(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) m = std::isnan(x) || std::isnan(m) ? kNaN : std::max(m, x);
  return m;
}
inline double ref_min(const std::vector<double>& v) {
  double m = kInf;
  for (double x : v) m = std::isnan(x) || std::isnan(m) ? kNaN : std::min(m, x);
  return m;
}
inline double ref_mean(const std::vector<double>& v) {
  return ref_sum(v) / v.size();
}
inline double ref_var(const std::vector<double>& v, int ddof) {
  double m = ref_mean(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / (static_cast<double>(v.size()) - ddof);
}
inline double ref_logsumexp(const std::vector<double>& v) {
  double m = ref_max(v);
  if (std::isinf(m)) m = 0;
  long double s = 0;
  for (double x : v) s += std::exp(x - m);
  return std::log(static_cast<double>(s)) + m;
}

using cd = std::complex<double>;

/** MLX's order for complex numbers: by real part, then imaginary part. */
inline cd lex_max(const std::vector<cd>& v) {
  cd m = v[0];
  for (cd z : v) {
    if (z.real() > m.real() || (z.real() == m.real() && z.imag() > m.imag())) m = z;
  }
  return m;
}

inline void expect_complex_near(cd got, cd want, double rtol, const std::string& what) {
  EXPECT_LE(std::abs(got - want), rtol * (1 + std::abs(want)))
      << what << ": " << got << " vs " << want;
}

/** The reduction of `x` (any layout) over `axes` must match `ref` on every group. */
inline void expect_reduction(const array& y, const array& x, const std::vector<int>& axes,
                             bool keepdims, const Ref& ref, Dtype dtype, double rtol = -1) {
  SCOPED_TRACE(msg("input ", x.dtype(), " ", shape_str(x.shape()), " axes ",
                   shape_str(Shape(axes.begin(), axes.end())), " keepdims ", keepdims));
  EXPECT_EQ(y.dtype(), dtype);
  std::vector<double> e;
  for (auto& g : groups(test::to_double(x), x.shape(), axes)) e.push_back(ref(g));
  test::expect_allclose(y, reduced_shape(x.shape(), axes, keepdims), e, rtol);
}

}  // namespace reduce_test
