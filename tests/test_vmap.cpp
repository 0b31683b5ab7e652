// vmap: axes in and out, unmapped inputs, broadcast outputs, nesting, errors, evaluation
// inside. Every op's batched rule is checked against a loop by tests/test_grad_check.cpp.
#include "test_utils.h"

using namespace kiln;

namespace {

std::vector<double> vals(const array& a) {
  return test::to_double(a);
}

template <typename F>
void expect_invalid(F&& f, const std::string& fragment) {
  test::expect_throw_with<std::invalid_argument>(f, {"[vmap]", fragment});
}

}  // namespace

TEST(Vmap, EachInputAxisAndOutputAxis) {
  array x = test::random_array({2, 3, 4}, float32);
  auto xv = vals(x);
  auto f = [](const array& a) { return exp(a); };
  for (int in_axis = 0; in_axis < 3; ++in_axis) {
    for (int out_axis = 0; out_axis < 3; ++out_axis) {
      array y = vmap(f, in_axis, out_axis)(x);
      // Element (i, j, k) of x lands at the position of its batch index moved to out_axis.
      std::vector<int> idx_shape{2, 3, 4};
      int b = idx_shape[in_axis];
      Shape rest;
      for (int d = 0; d < 3; ++d)
        if (d != in_axis) rest.push_back(idx_shape[d]);
      Shape out_shape = rest;
      out_shape.insert(out_shape.begin() + out_axis, b);
      std::vector<double> ref(24);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 4; ++k) {
            int idx[3] = {i, j, k};
            std::vector<int> r;
            for (int d = 0; d < 3; ++d)
              if (d != in_axis) r.push_back(idx[d]);
            r.insert(r.begin() + out_axis, idx[in_axis]);
            int flat = (r[0] * out_shape[1] + r[1]) * out_shape[2] + r[2];
            ref[flat] = std::exp(xv[(i * 3 + j) * 4 + k]);
          }
      test::expect_allclose(y, out_shape, ref);
    }
  }
}

TEST(Vmap, MappedAndUnmappedInputs) {
  array xs = test::random_array({3, 4}, float32), y = test::random_array({4}, float32);
  auto xv = vals(xs), yv = vals(y);
  auto r = vmap([](const array& a, const array& b) { return multiply(a, b); }, 0, -1)(xs, y);
  std::vector<double> ref(12);
  for (int i = 0; i < 12; ++i) ref[i] = xv[i] * yv[i % 4];
  test::expect_allclose(r, {3, 4}, ref);
  // Different mapped axes: a over its columns, b over its rows.
  array a = test::random_array({4, 3}, float32), b = test::random_array({3, 4}, float32);
  auto av = vals(a), bv = vals(b);
  auto s = vmap([](const array& p, const array& q) { return add(p, q); }, 1, 0)(a, b);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) ref[i * 4 + j] = av[j * 3 + i] + bv[i * 4 + j];
  test::expect_allclose(s, {3, 4}, ref);
}

TEST(Vmap, OutputsThatDoNotDependOnAMappedInputAreBroadcast) {
  array xs = test::random_array({5, 2}, float32), c = test::random_array({2}, float32);
  auto outs = vmap(
      [&](const std::vector<array>& a) {
        return std::vector<array>{exp(c), a[1], a[0]};
      },
      {0, -1}, {1, 0, 1})({xs, c});
  auto cv = vals(c), xv = vals(xs);
  std::vector<double> bc(10), rows(10), t(10);
  for (int i = 0; i < 2; ++i)
    for (int b = 0; b < 5; ++b) {
      bc[i * 5 + b] = std::exp(cv[i]);  // out axis 1: shape (2, 5)
      t[i * 5 + b] = xv[b * 2 + i];
    }
  for (int b = 0; b < 5; ++b)
    for (int i = 0; i < 2; ++i) rows[b * 2 + i] = cv[i];
  test::expect_allclose(outs[0], {2, 5}, bc);
  test::expect_allclose(outs[1], {5, 2}, rows);
  test::expect_allclose(outs[2], {2, 5}, t);  // the input itself, mapped axis moved
}

TEST(Vmap, NestedVmapIsAnOuterProduct) {
  array a = test::random_array({3}, float32), b = test::random_array({4}, float32);
  auto mul = [](const array& p, const array& q) { return multiply(p, q); };
  auto outer_fn = vmap(vmap(mul, -1, 0), 0, -1);
  array r = outer_fn(a, b);
  auto av = vals(a), bv = vals(b);
  std::vector<double> ref(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) ref[i * 4 + j] = av[i] * bv[j];
  test::expect_allclose(r, {3, 4}, ref);
}

TEST(Vmap, ReductionsInsideGiveAMatrixVectorProduct) {
  array m = test::random_array({5, 3}, float32), v = test::random_array({3}, float32);
  array r = vmap([&](const array& row) { return sum(multiply(row, v)); })(m);
  auto mv = vals(m), vv = vals(v);
  std::vector<double> ref(5, 0.0);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) ref[i] += mv[i * 3 + j] * vv[j];
  test::expect_allclose(r, {5}, ref);
  // The same over columns of the transpose (a non-contiguous input).
  array rt = vmap([&](const array& col) { return sum(multiply(col, v)); }, 1)(transpose(m));
  test::expect_allclose(rt, {5}, ref);
}

TEST(Vmap, EmptyBatch) {
  array x = test::random_array({0, 3}, float32);
  array y = vmap([](const array& a) { return exp(a); })(x);
  EXPECT_EQ(y.shape(), (Shape{0, 3}));
  y.eval();
}

TEST(Vmap, EvaluatingAMappedArrayInsideThrows) {
  array xs = test::random_array({4, 2}, float32);
  array c = test::random_array({2}, float32);
  auto bad = [&](const array& a) {
    array y = exp(a);
    y.eval();
    return y;
  };
  expect_invalid([&] { vmap(bad)(xs); }, "mapped input");
  // Arrays that do not depend on the mapped input can be evaluated inside.
  auto fine = [&](const array& a) {
    array k = exp(c);
    k.eval();
    return multiply(a, k);
  };
  array r = vmap(fine)(xs);
  auto xv = vals(xs), cv = vals(c);
  std::vector<double> ref(8);
  for (int i = 0; i < 8; ++i) ref[i] = xv[i] * std::exp(cv[i % 2]);
  test::expect_allclose(r, {4, 2}, ref);
  test::expect_allclose(exp(xs), {4, 2}, test::map_ref(xv, [](double v) { return std::exp(v); }));
}

TEST(Vmap, BadAxes) {
  array x = test::random_array({3, 4}, float32), y = test::random_array({5, 4}, float32);
  ArrayFn f = [](const std::vector<array>& a) { return std::vector<array>{add(a[0], a[1])}; };
  expect_invalid([&] { vmap(f, {0})({x, y}); }, "1 in_axes for 2 inputs");
  expect_invalid([&] { vmap(f, {0, 2})({x, y}); }, "in_axes[1] = 2");
  expect_invalid([&] { vmap(f, {-2, 0})({x, y}); }, "in_axes[0] = -2");
  expect_invalid([&] { vmap(f, {0, 0})({x, y}); }, "(5, 4)");
  expect_invalid([&] { vmap(f, {-1, -1})({x, y}); }, "At least one input");
  expect_invalid([&] { vmap(f, {0, 0}, {0, 1})({x, x}); }, "2 out_axes");
  expect_invalid([&] { vmap(f, {0, 0}, {2})({x, x}); }, "out_axes[0] = 2");
  expect_invalid([&] { vmap(f, {0, 0}, {-1})({x, x}); }, "out_axes[0] = -1");
  expect_invalid([&] { vmap([](const array& a) { return a; })(array(1.0f)); }, "0-d");
}
