// The checks of the transformation table (grad_check_table.h, test_grad_check_table.cpp).
//
// Ops/GradCheck.VjpJvp/<row>: on random float64 inputs, vjp and jvp against the Jacobian from
// central finite differences, and <vjp(u), v> == <u, jvp(v)>. Integer and bool outputs
// have zero derivatives. Complex arrays (complex64, so looser tolerances) pair cotangents
// with tangents by Re(sum(conj(u) * v)), MLX's convention (docs/transforms.md): the vjp's
// real and imaginary parts are the derivatives by the input's real and imaginary parts.
// Ops/VmapCheck.Loop/<row>: vmap against a loop of the op over the mapped axis, with the mapped
// axis first, second and last in every input, and with only the first or last input mapped.
#include <algorithm>
#include <complex>
#include <optional>

#include <gtest/gtest-spi.h>

#include "grad_check_table.h"

using namespace kiln;
using grad_check::all_rows;
using grad_check::Input;
using grad_check::Row;

namespace {

using cd = std::complex<double>;

// ---------------------------------------------------------------- host values

// An array's values as complex doubles (real arrays have zero imaginary parts).
std::vector<cd> host(const array& a) {
  if (a.dtype() == complex64) return test::to_complex(a);
  auto v = test::to_double(a);
  return std::vector<cd>(v.begin(), v.end());
}

array from_host(const std::vector<cd>& v, const Shape& shape, Dtype dtype) {
  if (dtype == complex64) {
    std::vector<complex64_t> c(v.begin(), v.end());
    return array(c.begin(), shape, dtype);
  }
  std::vector<double> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = v[i].real();
  return array(r.begin(), shape, dtype);
}

array make_input(const Input& in, const Shape& shape) {
  if (in.dtype == bool_) return test::random_array(shape, bool_);
  if (is_integral(in.dtype)) {
    std::uniform_int_distribution<int64_t> u(static_cast<int64_t>(in.lo),
                                             static_cast<int64_t>(in.hi) - 1);
    std::vector<double> v(shape_size(shape));
    for (auto& x : v) x = static_cast<double>(u(test::rng()));
    return array(v.begin(), shape, in.dtype);
  }
  return test::random_array(shape, in.dtype, in.lo, in.hi);
}

// Real coordinates of the floating outputs: one per real element, two per complex element.
std::vector<double> coords(const std::vector<array>& outs) {
  std::vector<double> c;
  for (const auto& o : outs) {
    if (!is_inexact(o.dtype())) continue;
    for (auto v : host(o)) {
      c.push_back(v.real());
      if (o.dtype() == complex64) c.push_back(v.imag());
    }
  }
  return c;
}

bool close(double got, double want, double rtol) {
  if (std::isnan(want)) return std::isnan(got);
  return std::abs(got - want) <= rtol * (1.0 + std::abs(want));
}

// ---------------------------------------------------------------- vjp and jvp

void check_derivatives(const Row& row) {
  // Jacobian by central differences, one column per real coordinate of each floating input.
  struct Column {
    size_t input, elem;
    bool imag;
    std::vector<double> d;  // d outputs / d this coordinate
  };
  std::vector<array> xs, outs;
  std::vector<Column> cols;
  size_t m = 0;
  for (int draw = 0;; ++draw) {
    xs.clear();
    cols.clear();
    for (const auto& in : row.inputs) xs.push_back(make_input(in, in.shape));
    outs = row.fn(xs);
    eval(outs);
    const auto at_x = coords(outs);
    m = at_x.size();
    // A piecewise linear function is linear across the stencil unless a kink or jump lies
    // inside it; there plus - 2 f(x) + minus is the slope change times the overshoot and
    // the quotient is off by half of it / eps. Past 1e-13 (rounding is ~1e-15) it could
    // reach the tolerance: such inputs are drawn again.
    bool straddles = false;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!is_inexact(xs[i].dtype())) continue;
      auto base = host(xs[i]);
      for (size_t k = 0; k < base.size(); ++k) {
        for (bool imag : {false, true}) {
          if (imag && xs[i].dtype() != complex64) continue;
          Column col{i, k, imag, std::vector<double>(m, 0.0)};
          if (!row.zero_grad) {
            auto at = [&](double h) {
              auto v = base;
              v[k] += imag ? cd(0, h) : cd(h, 0);
              auto args = xs;
              args[i] = from_host(v, xs[i].shape(), xs[i].dtype());
              return coords(row.fn(args));
            };
            auto plus = at(row.eps), minus = at(-row.eps);
            for (size_t r = 0; r < m; ++r) {
              col.d[r] = (plus[r] - minus[r]) / (2 * row.eps);
              const double second = plus[r] - 2 * at_x[r] + minus[r];
              if (row.piecewise && std::abs(second) > 1e-13 * (1 + std::abs(at_x[r])))
                straddles = true;
            }
          }
          cols.push_back(std::move(col));
        }
      }
    }
    if (!straddles) break;
    if (draw == 20) {
      ADD_FAILURE() << row.unique_name << ": 20 draws in a row put a kink within the step "
                    << row.eps << " of an input; is the function piecewise linear?";
      return;
    }
  }

  // Random cotangents and tangents; integer and bool arrays get zeros of their dtype.
  auto random_like = [](const array& a) {
    return is_inexact(a.dtype()) ? test::random_array(a.shape(), a.dtype(), -1, 1)
                                 : astype(array(0), a.dtype());
  };
  std::vector<array> us, vs;
  for (const auto& o : outs) {
    array u = random_like(o);
    us.push_back(u.shape() == o.shape() ? u : broadcast_to(u, o.shape()));
  }
  for (const auto& x : xs) {
    array v = random_like(x);
    vs.push_back(v.shape() == x.shape() ? v : broadcast_to(v, x.shape()));
  }
  auto [vjp_outs, grads] = vjp(row.fn, xs, us);
  auto [jvp_outs, tangents] = jvp(row.fn, xs, vs);
  ASSERT_EQ(grads.size(), xs.size());
  ASSERT_EQ(tangents.size(), outs.size());

  // The real pairing of cotangent coordinates: Re(conj(u) w) = ur wr + ui wi.
  std::vector<double> upair;
  for (const auto& u : us) {
    if (!is_inexact(u.dtype())) continue;
    for (auto c : host(u)) {
      upair.push_back(c.real());
      if (u.dtype() == complex64) upair.push_back(c.imag());
    }
  }
  // vjp: each real coordinate of each floating input against u^T J.
  std::vector<std::vector<cd>> g;
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(grads[i].shape(), xs[i].shape()) << "vjp of input " << i;
    EXPECT_EQ(grads[i].dtype(), xs[i].dtype()) << "vjp of input " << i;
    g.push_back(host(grads[i]));
    if (!is_inexact(xs[i].dtype())) {
      for (auto v : g.back()) EXPECT_EQ(v, cd(0)) << "an integer input must get a zero cotangent";
    }
  }
  int reported = 0;
  for (const auto& col : cols) {
    double want = 0;
    for (size_t r = 0; r < m; ++r) want += upair[r] * col.d[r];
    // Re(conj(w) v) pairs w's real part with v's real part and Im(w) with Im(v).
    cd w = g[col.input][col.elem];
    double got = col.imag ? w.imag() : w.real();
    if (!close(got, want, row.rtol) && reported++ < 5) {
      ADD_FAILURE() << row.unique_name << ": vjp of input " << col.input << " element " << col.elem
                    << (col.imag ? " (imaginary part)" : "") << " is " << got
                    << ", finite differences give " << want << " (seed " << test::seed() << ")";
    }
  }
  // jvp: J v per output coordinate.
  std::vector<double> want_t(m, 0.0);
  for (const auto& col : cols) {
    cd v = host(vs[col.input])[col.elem];
    double vc = col.imag ? v.imag() : v.real();
    for (size_t r = 0; r < m; ++r) want_t[r] += col.d[r] * vc;
  }
  for (size_t j = 0; j < outs.size(); ++j) {
    EXPECT_EQ(tangents[j].shape(), outs[j].shape()) << "jvp of output " << j;
    EXPECT_EQ(tangents[j].dtype(), outs[j].dtype()) << "jvp of output " << j;
    if (!is_inexact(outs[j].dtype())) {
      for (auto v : host(tangents[j]))
        EXPECT_EQ(v, cd(0)) << "an integer output must get a zero tangent";
    }
  }
  auto got_t = coords(tangents);
  ASSERT_EQ(got_t.size(), m);
  reported = 0;
  for (size_t r = 0; r < m; ++r) {
    if (!close(got_t[r], want_t[r], row.rtol) && reported++ < 5) {
      ADD_FAILURE() << row.unique_name << ": jvp coordinate " << r << " is " << got_t[r]
                    << ", finite differences give " << want_t[r] << " (seed " << test::seed()
                    << ")";
    }
  }
  // <vjp(u), v> == <u, jvp(v)>, independent of finite differences.
  double lhs = 0, rhs = 0, scale = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    auto vv = host(vs[i]);
    for (size_t k = 0; k < vv.size(); ++k) {
      lhs += (std::conj(g[i][k]) * vv[k]).real();
      scale += std::abs(g[i][k] * vv[k]);
    }
  }
  for (size_t r = 0; r < m; ++r) rhs += upair[r] * got_t[r];
  EXPECT_LE(std::abs(lhs - rhs), std::max(row.rtol, 1e-10) * (1 + scale))
      << row.unique_name << ": <vjp(u), v> = " << lhs << " but <u, jvp(v)> = " << rhs;
}

// ---------------------------------------------------------------- vmap

// Slice `b` of host values of `shape` along `axis`.
std::vector<cd> host_slice(const std::vector<cd>& v, const Shape& shape, int axis, int b) {
  size_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<cd> out;
  out.reserve(outer * inner);
  for (size_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < inner; ++i) out.push_back(v[(o * shape[axis] + b) * inner + i]);
  return out;
}

void check_vmap(const Row& row, const std::vector<int>& axes) {
  const int batch = 3;
  std::vector<array> xs;
  for (size_t i = 0; i < row.inputs.size(); ++i) {
    Shape s = row.inputs[i].shape;
    if (axes[i] >= 0) s.insert(s.begin() + axes[i], batch);
    xs.push_back(make_input(row.inputs[i], s));
  }
  auto batched = vmap(row.fn, axes)(xs);
  eval(batched);
  std::vector<std::vector<cd>> xh;
  for (const auto& x : xs) xh.push_back(host(x));
  for (int b = 0; b < batch; ++b) {
    std::vector<array> args;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (axes[i] < 0) {
        args.push_back(xs[i]);
        continue;
      }
      args.push_back(from_host(host_slice(xh[i], xs[i].shape(), axes[i], b), row.inputs[i].shape,
                               xs[i].dtype()));
    }
    auto outs = row.fn(args);
    ASSERT_EQ(batched.size(), outs.size());
    for (size_t j = 0; j < outs.size(); ++j) {
      Shape expect = outs[j].shape();
      expect.insert(expect.begin(), batch);
      ASSERT_EQ(batched[j].shape(), expect) << row.unique_name << " output " << j;
      ASSERT_EQ(batched[j].dtype(), outs[j].dtype()) << row.unique_name << " output " << j;
      auto got = host_slice(host(batched[j]), batched[j].shape(), 0, b);
      auto want = host(outs[j]);
      double tol = is_inexact(outs[j].dtype()) ? 10 * test::tolerance(outs[j].dtype()) : 0.0;
      int reported = 0;
      for (size_t k = 0; k < want.size(); ++k) {
        bool ok = std::isnan(want[k].real())
                      ? std::isnan(got[k].real())
                      : std::abs(got[k] - want[k]) <= tol * (1 + std::abs(want[k]));
        if (!ok && reported++ < 5) {
          ADD_FAILURE() << row.unique_name << ": vmap output " << j << " slice " << b << " element "
                        << k << " is " << got[k] << ", the loop gives " << want[k] << " (seed "
                        << test::seed() << ")";
        }
      }
    }
  }
}

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "in_axes (";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + ")";
}

// Mapped axis first, second (where the input has one) and last in every input, then only
// the first and only the last input mapped.
std::vector<std::vector<int>> vmap_cases(const Row& row) {
  std::vector<std::vector<int>> cases;
  const size_t n = row.inputs.size();
  for (int kind : {0, 1, 2}) {
    std::vector<int> axes;
    for (const auto& in : row.inputs) {
      int nd = static_cast<int>(in.shape.size());
      axes.push_back(kind == 0 ? 0 : kind == 1 ? std::min(1, nd) : nd);
    }
    cases.push_back(axes);
  }
  if (n > 1) {
    std::vector<int> first(n, -1), last(n, -1);
    first[0] = 0;
    last[n - 1] = static_cast<int>(row.inputs[n - 1].shape.size());
    cases.push_back(first);
    cases.push_back(last);
  }
  std::sort(cases.begin(), cases.end());
  cases.erase(std::unique(cases.begin(), cases.end()), cases.end());
  return cases;
}

std::vector<Row> differentiable_rows() {
  std::vector<Row> out;
  for (const auto& r : all_rows()) {
    if (std::any_of(r.inputs.begin(), r.inputs.end(),
                    [](const Input& in) { return is_inexact(in.dtype); })) {
      out.push_back(r);
    }
  }
  return out;
}

class GradCheck : public ::testing::TestWithParam<Row> {};
class VmapCheck : public ::testing::TestWithParam<Row> {};

TEST_P(GradCheck, VjpJvp) {
  const Row& row = GetParam();
  check_derivatives(row);
}

TEST_P(VmapCheck, Loop) {
  const Row& row = GetParam();
  for (const auto& axes : vmap_cases(row)) {
    SCOPED_TRACE(axes_str(axes));
    check_vmap(row, axes);
  }
}

std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  return info.param.unique_name;
}

INSTANTIATE_TEST_SUITE_P(Ops, GradCheck, ::testing::ValuesIn(differentiable_rows()), row_name);
INSTANTIATE_TEST_SUITE_P(Ops, VmapCheck, ::testing::ValuesIn(all_rows()), row_name);

}  // namespace

// The checks can fail: a function whose attached transforms are wrong (2x with the
// derivative of x, or a batched rule computing x) is caught by each of them.
namespace {
Row wrong_rule(std::optional<CustomVjpFn> v, std::optional<CustomJvpFn> j,
               std::optional<CustomVmapFn> m) {
  ArrayFn twice = [](const std::vector<array>& a) { return std::vector<array>{add(a[0], a[0])}; };
  Row r{"custom_function", "wrong", custom_function(twice, v, j, m), {Input{{3}}}};
  r.unique_name = "wrong_rule";
  return r;
}
void check_wrong_vjp() {
  check_derivatives(wrong_rule([](const std::vector<array>&, const std::vector<array>& c,
                                  const std::vector<array>&) { return c; },
                               std::nullopt, std::nullopt));
}
void check_wrong_jvp() {
  check_derivatives(wrong_rule(
      std::nullopt,
      [](const std::vector<array>&, const std::vector<array>& t, const std::vector<int>&) {
        return t;
      },
      std::nullopt));
}
void check_wrong_vmap() {
  check_vmap(wrong_rule(std::nullopt, std::nullopt,
                        [](const std::vector<array>& x, const std::vector<int>& ax) {
                          return std::make_pair(x, ax);
                        }),
             {0});
}
// Failures `check` reports whose message contains `fragment` (intercepted, not counted).
int failures_of(void (*check)(), const std::string& fragment) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    check();
  }
  int n = 0;
  for (int i = 0; i < results.size(); ++i) {
    n += std::string(results.GetTestPartResult(i).message()).find(fragment) != std::string::npos;
  }
  return n;
}
}  // namespace

TEST(GradCheckTable, TheChecksCatchWrongTransforms) {
  EXPECT_EQ(failures_of(check_wrong_vjp, "finite differences give"), 3);
  EXPECT_EQ(failures_of(check_wrong_vjp, "<vjp(u), v>"), 1);
  EXPECT_EQ(failures_of(check_wrong_jvp, "jvp coordinate"), 3);
  EXPECT_EQ(failures_of(check_wrong_jvp, "<vjp(u), v>"), 1);
  EXPECT_GE(failures_of(check_wrong_vmap, "the loop gives"), 3);
}
