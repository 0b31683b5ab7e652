// Function transformations: vjp, jvp, grad, value_and_grad, nesting, stop_gradient,
// custom_function, checkpoint, memory and graph size. vmap has tests/test_vmap.cpp, and
// every op's derivatives are checked by the table in tests/test_grad_check.cpp.
#include <atomic>
#include <cmath>

#include "kiln/primitive.h"
#include "test_utils.h"

using namespace kiln;

namespace {

std::vector<double> vals(const array& a) {
  return test::to_double(a);
}

// A two-output primitive: (x^2, x^3) of a float32 array, with all three transforms.
class SquareCube : public Primitive {
 public:
  explicit SquareCube(Stream s) : Primitive(s) {}
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    const array& in = inputs[0];
    for (auto& o : outputs) o.set_data(Storage::host(o.nbytes()));
    const float* p = in.data<float>();
    for (size_t i = 0; i < in.size(); ++i) {
      float v = p[elem_to_loc(i, in.shape(), in.strides())];
      outputs[0].data<float>()[i] = v * v;
      outputs[1].data<float>()[i] = v * v * v;
    }
  }
  void eval_gpu(const std::vector<array>&, std::vector<array>&) override {
    throw std::runtime_error("[SquareCube] cpu only");
  }
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>&) override {
    const array& x = primals[0];
    return {multiply(tangents[0], multiply(array(2.0f), x)),
            multiply(tangents[0], multiply(array(3.0f), square(x)))};
  }
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>&, const std::vector<array>&) override {
    const array& x = primals[0];
    return {add(multiply(cotangents[0], multiply(array(2.0f), x)),
                multiply(cotangents[1], multiply(array(3.0f), square(x))))};
  }
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override {
    return {make(inputs[0]), {axes[0], axes[0]}};
  }
  const char* name() const override { return "SquareCube"; }
  static std::vector<array> make(const array& x) {
    return array::make_arrays({x.shape(), x.shape()}, {float32, float32},
                              std::make_shared<SquareCube>(default_stream(Device::cpu)), {x});
  }
};

// A primitive whose vjp returns the wrong shape, as a buggy extension might.
class BadVjp : public UnaryPrimitive {
 public:
  explicit BadVjp(Stream s) : UnaryPrimitive(s) {}
  void eval_cpu(const std::vector<array>& inputs, array& out) override {
    out.copy_shared_buffer(inputs[0]);
  }
  void eval_gpu(const std::vector<array>& inputs, array& out) override {
    out.copy_shared_buffer(inputs[0]);
  }
  std::vector<array> vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                         const std::vector<int>&, const std::vector<array>&) override {
    return {sum(cotangents[0])};
  }
  const char* name() const override { return "BadVjp"; }
};

template <typename F>
void expect_invalid(F&& f, const std::string& tag, const std::string& fragment = "") {
  test::expect_throw_with<std::invalid_argument>(f, {tag, fragment});
}

}  // namespace

// ---------------------------------------------------------------- vjp and jvp

TEST(Transforms, VjpOfAnElementwiseFunction) {
  array x = test::random_array({3, 4}, float32);
  array u = test::random_array({3, 4}, float32);
  auto [out, g] = vjp([](const array& a) { return multiply(sin(a), exp(a)); }, x, u);
  auto xs = vals(x), us = vals(u);
  std::vector<double> ref_out(xs.size()), ref_g(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    ref_out[i] = std::sin(xs[i]) * std::exp(xs[i]);
    ref_g[i] = us[i] * (std::cos(xs[i]) + std::sin(xs[i])) * std::exp(xs[i]);
  }
  test::expect_allclose(out, {3, 4}, ref_out);
  test::expect_allclose(g, {3, 4}, ref_g, 1e-5);
}

TEST(Transforms, JvpOfAFunctionOfTwoArrays) {
  array x = test::random_array({5}, float32), y = test::random_array({5}, float32);
  array tx = test::random_array({5}, float32), ty = test::random_array({5}, float32);
  auto [outs, tans] = jvp(
      [](const std::vector<array>& a) {
        return std::vector<array>{multiply(a[0], a[1]), exp(a[1])};
      },
      {x, y}, {tx, ty});
  ASSERT_EQ(outs.size(), 2u);
  ASSERT_EQ(tans.size(), 2u);
  auto xs = vals(x), ys = vals(y), txs = vals(tx), tys = vals(ty);
  std::vector<double> t0(5), t1(5);
  for (int i = 0; i < 5; ++i) {
    t0[i] = txs[i] * ys[i] + xs[i] * tys[i];
    t1[i] = tys[i] * std::exp(ys[i]);
  }
  test::expect_allclose(tans[0], {5}, t0);
  test::expect_allclose(tans[1], {5}, t1);
}

TEST(Transforms, VjpSumsOverOutputsAndRepeatedOutputs) {
  array x = test::random_array({4}, float32);
  array u = test::random_array({4}, float32), w = test::random_array({4}, float32);
  // d/dx <u, 2x> + <w, x> where the second output is the input itself.
  auto [outs, g] = vjp(
      [](const std::vector<array>& a) {
        return std::vector<array>{add(a[0], a[0]), a[0]};
      },
      {x}, {u, w});
  auto us = vals(u), ws = vals(w);
  std::vector<double> ref(4);
  for (int i = 0; i < 4; ++i) ref[i] = 2 * us[i] + ws[i];
  test::expect_allclose(g[0], {4}, ref);
}

TEST(Transforms, OutputsThatDoNotDependOnAnInputGiveZeros) {
  array x = test::random_array({2, 3}, float32), y = test::random_array({3}, float32);
  auto [outs, g] = vjp([&](const std::vector<array>& a) { return std::vector<array>{exp(a[1])}; },
                       {x, y}, {test::random_array({3}, float32)});
  test::expect_allclose(g[0], {2, 3}, std::vector<double>(6, 0.0));
  auto [o2, t] = jvp([&](const std::vector<array>& a) { return std::vector<array>{exp(y)}; }, {x},
                     {test::random_array({2, 3}, float32)});
  test::expect_allclose(t[0], {3}, std::vector<double>(3, 0.0));
}

// ---------------------------------------------------------------- grad and value_and_grad

TEST(Transforms, GradOfSeveralArgumentsFollowsArgnumsOrder) {
  array x = test::random_array({2, 3}, float32), y = test::random_array({2, 3}, float32);
  array z = test::random_array({3}, float32);
  auto f = [](const std::vector<array>& a) { return sum(add(multiply(a[0], a[1]), exp(a[2]))); };
  auto g = grad(f, {2, 0})({x, y, z});
  ASSERT_EQ(g.size(), 2u);
  auto zs = vals(z);
  // z is broadcast over the 2 rows: its gradient sums them.
  test::expect_allclose(g[0], {3}, test::map_ref(zs, [](double v) { return 2 * std::exp(v); }));
  test::expect_allclose(g[1], {2, 3}, vals(y));
  auto last = grad(f, -1)({x, y, z});
  test::expect_allclose(last[0], {3}, test::map_ref(zs, [](double v) { return 2 * std::exp(v); }));
}

TEST(Transforms, ValueAndGradReturnsAuxiliaryOutputs) {
  array x = test::random_array({4}, float32);
  auto f = [](const std::vector<array>& a) {
    array aux = multiply(a[0], array(3.0f));
    return std::vector<array>{sum(square(a[0])), aux};
  };
  auto [outs, grads] = value_and_grad(f)({x});
  ASSERT_EQ(outs.size(), 2u);
  auto xs = vals(x);
  double loss = 0;
  for (double v : xs) loss += v * v;
  test::expect_allclose(outs[0], {}, {loss});
  test::expect_allclose(outs[1], {4}, test::map_ref(xs, [](double v) { return 3 * v; }));
  // The auxiliary output does not contribute.
  test::expect_allclose(grads[0], {4}, test::map_ref(xs, [](double v) { return 2 * v; }));

  auto [value, g] = value_and_grad([](const array& a) { return sum(exp(a)); })(x);
  test::expect_allclose(g, {4}, test::map_ref(xs, [](double v) { return std::exp(v); }));
  EXPECT_EQ(value.shape(), Shape{});
}

TEST(Transforms, LossOfShapeOneIsAScalar) {
  array x = test::random_array({3}, float32);
  auto g = grad([](const array& a) { return reshape(sum(square(a)), {1, 1}); })(x);
  test::expect_allclose(g, {3}, test::map_ref(vals(x), [](double v) { return 2 * v; }));
}

// ---------------------------------------------------------------- what gradients flow through

TEST(Transforms, GradientsThroughBroadcasting) {
  array x = test::random_array({3, 1}, float32), y = test::random_array({4}, float32);
  auto g =
      grad([](const std::vector<array>& a) { return sum(multiply(a[0], a[1])); }, {0, 1})({x, y});
  auto xs = vals(x), ys = vals(y);
  double sx = xs[0] + xs[1] + xs[2], sy = ys[0] + ys[1] + ys[2] + ys[3];
  test::expect_allclose(g[0], {3, 1}, {sy, sy, sy});
  test::expect_allclose(g[1], {4}, {sx, sx, sx, sx});
}

TEST(Transforms, GradientsThroughViews) {
  // out = sum(w * slice(transpose(reshape(x))) ) + sum(broadcast(x row)); check by hand.
  array x = test::random_array({4, 6}, float32);
  array w = test::random_array({3, 2}, float32);
  auto f = [&](const array& a) {
    array t = transpose(reshape(a, {6, 4}));                   // (4, 6), t[i][j] = flat[j*4 + i]
    array s = slice(t, {1, 0}, {4, 6}, {1, 3});                // rows 1..3, columns 0 and 3
    array b = broadcast_to(slice(a, {0, 0}, {1, 6}), {5, 6});  // the first row, 5 times
    return add(sum(multiply(s, w)), sum(b));
  };
  auto g = grad(f)(x);
  auto ws = vals(w);
  std::vector<double> ref(24, 0.0);
  for (int i = 1; i < 4; ++i) {
    for (int c = 0; c < 2; ++c) ref[(3 * c) * 4 + i] += ws[(i - 1) * 2 + c];  // flat = j*4 + i
  }
  for (int j = 0; j < 6; ++j) ref[j] += 5.0;
  test::expect_allclose(g, {4, 6}, ref);
}

TEST(Transforms, GradientsThroughNonContiguousInputs) {
  array base = test::random_array({6, 4}, float32);
  array x = transpose(base);  // a view, passed as the primal
  x.eval();
  auto g = grad([](const array& a) { return sum(multiply(a, a)); })(x);
  test::expect_allclose(g, {4, 6}, test::map_ref(vals(x), [](double v) { return 2 * v; }));
}

TEST(Transforms, MultiOutputPrimitives) {
  array x = test::random_array({5}, float32);
  auto xs = vals(x);
  // Both outputs used.
  auto g = grad([](const array& a) {
    auto sc = SquareCube::make(a);
    return sum(add(sc[0], sc[1]));
  })(x);
  test::expect_allclose(g, {5}, test::map_ref(xs, [](double v) { return 2 * v + 3 * v * v; }));
  // Only the second output used (the first is dropped: its cotangent is zero).
  auto g2 = grad([](const array& a) { return sum(SquareCube::make(a)[1]); })(x);
  test::expect_allclose(g2, {5}, test::map_ref(xs, [](double v) { return 3 * v * v; }));
  // Forward mode gives a tangent per output.
  array t = test::random_array({5}, float32);
  auto [outs, tans] =
      jvp([](const std::vector<array>& a) { return SquareCube::make(a[0]); }, {x}, {t});
  auto ts = vals(t);
  std::vector<double> t0(5), t1(5);
  for (int i = 0; i < 5; ++i) {
    t0[i] = 2 * xs[i] * ts[i];
    t1[i] = 3 * xs[i] * xs[i] * ts[i];
  }
  test::expect_allclose(tans[0], {5}, t0);
  test::expect_allclose(tans[1], {5}, t1);
}

TEST(Transforms, HalfPrecisionInputsGetGradientsOfTheirOwnDtype) {
  for (Dtype d : {float16, bfloat16}) {
    array x = test::random_array({8}, d, -1, 1);
    array y = test::random_array({8}, float32, -1, 1);
    auto f = [](const std::vector<array>& a) { return sum(multiply(astype(a[0], float32), a[1])); };
    auto g = grad(f, {0, 1})({x, y});
    EXPECT_EQ(g[0].dtype(), d);
    EXPECT_EQ(g[1].dtype(), float32);
    test::expect_allclose(g[0], {8}, vals(y), test::tolerance(d));
    test::expect_allclose(g[1], {8}, vals(x));
    // Computing in the half type: the gradient stays in it.
    auto gh = grad([](const array& a) { return sum(square(a)); })(x);
    EXPECT_EQ(gh.dtype(), d);
    test::expect_allclose(gh, {8}, test::map_ref(vals(x), [](double v) { return 2 * v; }),
                          test::tolerance(d));
  }
}

TEST(Transforms, IntegerPathsCarryNoDerivative) {
  array x = test::random_array({6}, float32, 0.5, 4);
  // The cast to int32 is piecewise constant: only the direct path contributes.
  auto g = grad([](const array& a) { return sum(add(astype(astype(a, int32), float32), a)); })(x);
  test::expect_allclose(g, {6}, std::vector<double>(6, 1.0));
  // vjp w.r.t. an integer primal is zero in its dtype.
  array idx({0, 2, 1}, int32);
  auto [outs, g2] = vjp(
      [](const std::vector<array>& a) {
        return std::vector<array>{multiply(a[0], astype(a[1], float32))};
      },
      {test::random_array({3}, float32), idx}, {test::random_array({3}, float32)});
  EXPECT_EQ(g2[1].dtype(), int32);
  test::expect_allclose(g2[1], {3}, {0, 0, 0});
  auto [o3, t3] = jvp([](const array& a) { return astype(astype(a, int32), float32); }, x,
                      test::random_array({6}, float32));
  test::expect_allclose(t3, {6}, std::vector<double>(6, 0.0));
}

TEST(Transforms, StopGradient) {
  array x = test::random_array({4}, float32);
  array s = stop_gradient(x);
  test::expect_allclose(s, {4}, vals(x));
  auto xs = vals(x);
  // d/dx sum(sg(x) * x) = sg(x)
  auto g = grad([](const array& a) { return sum(multiply(stop_gradient(a), a)); })(x);
  test::expect_allclose(g, {4}, xs);
  array t = test::random_array({4}, float32);
  auto [o, tan] = jvp([](const array& a) { return multiply(stop_gradient(a), a); }, x, t);
  auto ts = vals(t);
  std::vector<double> ref(4);
  for (int i = 0; i < 4; ++i) ref[i] = xs[i] * ts[i];
  test::expect_allclose(tan, {4}, ref);
  auto gz = grad([](const array& a) { return sum(stop_gradient(exp(a))); })(x);
  test::expect_allclose(gz, {4}, std::vector<double>(4, 0.0));
}

// ---------------------------------------------------------------- nesting

TEST(Transforms, GradOfGrad) {
  array x = test::random_array({5}, float32);
  auto xs = vals(x);
  UnaryFn d1 = grad([](const array& a) { return sum(sin(a)); });
  UnaryFn d2 = grad([&](const array& a) { return sum(d1(a)); });
  UnaryFn d3 = grad([&](const array& a) { return sum(d2(a)); });
  test::expect_allclose(d1(x), {5}, test::map_ref(xs, [](double v) { return std::cos(v); }));
  test::expect_allclose(d2(x), {5}, test::map_ref(xs, [](double v) { return -std::sin(v); }));
  test::expect_allclose(d3(x), {5}, test::map_ref(xs, [](double v) { return -std::cos(v); }));
}

TEST(Transforms, HessianVectorProductAsJvpOfGrad) {
  // f = sum(x^3) / 3 + x0 * x1: H = diag(2x) + offdiag(0,1).
  array x = test::random_array({3}, float32), v = test::random_array({3}, float32);
  auto df = grad([](const array& a) {
    array p = multiply(slice(a, {0}, {1}), slice(a, {1}, {2}));
    return add(divide(sum(multiply(a, square(a))), array(3.0f)), sum(p));
  });
  auto [g, hv] = jvp(df, x, v);
  auto xs = vals(x), vs = vals(v);
  test::expect_allclose(
      hv, {3}, {2 * xs[0] * vs[0] + vs[1], 2 * xs[1] * vs[1] + vs[0], 2 * xs[2] * vs[2]}, 1e-5);
  // The same through reverse over reverse: grad of <grad f, v>.
  auto hv2 = grad([&](const array& a) { return sum(multiply(df(a), v)); })(x);
  test::expect_allclose(hv2, {3}, vals(hv), 1e-5);
}

TEST(Transforms, VmapOfGradGivesPerExampleGradients) {
  array w = test::random_array({3}, float32);
  array xs = test::random_array({4, 3}, float32);
  // loss(w, x) = (w . x)^2; d/dw = 2 (w . x) x, one per example.
  auto loss = [](const std::vector<array>& a) { return square(sum(multiply(a[0], a[1]))); };
  auto per_example = vmap(grad(loss, 0), {-1, 0});
  auto g = per_example({w, xs})[0];
  auto wv = vals(w), xv = vals(xs);
  std::vector<double> ref(12);
  for (int b = 0; b < 4; ++b) {
    double dot = 0;
    for (int i = 0; i < 3; ++i) dot += wv[i] * xv[b * 3 + i];
    for (int i = 0; i < 3; ++i) ref[b * 3 + i] = 2 * dot * xv[b * 3 + i];
  }
  test::expect_allclose(g, {4, 3}, ref, 1e-5);
}

TEST(Transforms, GradOfVmap) {
  array xs = test::random_array({4, 3}, float32);
  // sum over examples of sum(exp(x_b) * x_b)
  auto f = [](const array& a) {
    auto inner = vmap([](const array& x) { return sum(multiply(exp(x), x)); });
    return sum(inner(a));
  };
  auto g = grad(f)(xs);
  test::expect_allclose(g, {4, 3},
                        test::map_ref(vals(xs), [](double v) { return std::exp(v) * (1 + v); }));
  // And vmap over axis 1 inside.
  auto f1 = [](const array& a) {
    auto inner = vmap([](const array& x) { return sum(square(x)); }, 1);
    return sum(multiply(inner(a), arange(3.0)));
  };
  auto g1 = grad(f1)(xs);
  auto x1 = vals(xs);
  std::vector<double> ref(12);
  for (int i = 0; i < 12; ++i) ref[i] = 2 * x1[i] * (i % 3);
  test::expect_allclose(g1, {4, 3}, ref);
}

TEST(Transforms, VjpOfJvp) {
  // Reverse over forward: d/dx <u, J(x) t> for f = sin: u * t * -sin(x)... per element.
  array x = test::random_array({4}, float32), t = test::random_array({4}, float32);
  auto g = grad([&](const array& a) {
    return sum(jvp([](const array& b) { return sin(b); }, a, t).second);
  })(x);
  auto xs = vals(x), ts = vals(t);
  std::vector<double> ref(4);
  for (int i = 0; i < 4; ++i) ref[i] = -std::sin(xs[i]) * ts[i];
  test::expect_allclose(g, {4}, ref);
}

TEST(Transforms, ClosingOverAnOuterTracer) {
  // d/dy of grad_x(x * y * x) at fixed x: d/dy (2 x y) = 2x.
  array x = test::random_array({3}, float32), y = test::random_array({3}, float32);
  auto outer = grad([&](const array& yy) {
    auto inner = grad([&](const array& xx) { return sum(multiply(multiply(xx, yy), xx)); });
    return sum(inner(x));
  });
  test::expect_allclose(outer(y), {3}, test::map_ref(vals(x), [](double v) { return 2 * v; }));
}

// ---------------------------------------------------------------- evaluation and memory

TEST(Transforms, TransformationsDoNotEvaluate) {
  array x = test::random_array({4}, float32);
  auto [value, g] = value_and_grad([](const array& a) { return sum(exp(a)); })(x);
  EXPECT_EQ(value.status(), array::Status::unscheduled);
  EXPECT_EQ(g.status(), array::Status::unscheduled);
  auto [o, t] = jvp([](const array& a) { return exp(a); }, x, x);
  EXPECT_EQ(t.status(), array::Status::unscheduled);
  auto v = vmap([](const array& a) { return exp(a); })(reshape(x, {2, 2}));
  EXPECT_EQ(v.status(), array::Status::unscheduled);
  // The results are ordinary arrays: evaluating them drops their graph.
  eval(value, g);
  EXPECT_FALSE(g.has_primitive());
  EXPECT_FALSE(g.is_tracer());
}

TEST(Transforms, EvalInsideATracedFunction) {
  array x = test::random_array({5}, float32, -1, 1);
  array kept(0.0f);
  auto f = [&](const array& a) {
    array y = exp(a);
    y.eval();                        // the function looks at a value mid-way
    EXPECT_TRUE(y.has_primitive());  // a tracer keeps its graph
    EXPECT_GT(sum(y).item<float>(), 0.0f);
    kept = y;
    return sum(multiply(y, a));
  };
  auto g = grad(f)(x);
  test::expect_allclose(g, {5},
                        test::map_ref(vals(x), [](double v) { return std::exp(v) * (1 + v); }));
  // Once the transformation is done, the evaluated intermediate releases its graph.
  EXPECT_FALSE(kept.is_tracer());
  EXPECT_FALSE(kept.has_primitive());
  // Nested: the inner evaluation keeps what the outer transformation needs.
  auto gg = grad([&](const array& a) { return sum(grad(f)(a)); })(x);
  test::expect_allclose(
      gg, {5}, test::map_ref(vals(x), [](double v) { return std::exp(v) * (2 + v); }), 1e-5);
}

TEST(Transforms, TrainingLoopKeepsMemoryFlat) {
  // A two-layer MLP trained by plain SGD; memory must not grow with the step count.
  const int batch = 32, in = 16, hidden = 64, out = 4;
  array w1 = test::random_array({in, hidden}, float32, -0.3, 0.3);
  array b1 = test::random_array({hidden}, float32, -0.1, 0.1);
  array w2 = test::random_array({hidden, out}, float32, -0.3, 0.3);
  array b2 = test::random_array({out}, float32, -0.1, 0.1);
  array xb = test::random_array({batch, in}, float32);
  array yb = test::random_array({batch, out}, float32);
  auto loss_fn = [&](const std::vector<array>& p) {
    array h = tanh(add(matmul(xb, p[0]), p[1]));
    array pred = add(matmul(h, p[2]), p[3]);
    return mean(square(subtract(pred, yb)));
  };
  auto step_fn = value_and_grad(ScalarFn(loss_fn), {0, 1, 2, 3});
  std::vector<array> params{w1, b1, w2, b2};
  float first_loss = 0, last_loss = 0;
  size_t base_active = 0, base_peak = 0;
  for (int step = 0; step < 1000; ++step) {
    if (step == 100) {
      synchronize();
      base_active = get_active_memory(test::test_device());
      reset_peak_memory(test::test_device());
    }
    auto [loss, grads] = step_fn(params);
    for (size_t i = 0; i < params.size(); ++i) {
      params[i] = subtract(params[i], multiply(array(0.05f), grads[i]));
    }
    eval(params);
    eval(loss);
    if (step == 0) first_loss = loss.item<float>();
    last_loss = loss.item<float>();
    if (step == 100) base_peak = get_peak_memory(test::test_device());
    for (auto& p : params) ASSERT_FALSE(p.has_primitive() || p.is_tracer()) << "step " << step;
  }
  synchronize();
  size_t end_active = get_active_memory(test::test_device());
  size_t peak = get_peak_memory(test::test_device());
  EXPECT_LT(last_loss, first_loss);  // it trains
  EXPECT_LE(end_active, base_active + 4096) << "active memory grew from " << base_active;
  // One step's working set, measured at step 100, bounds the peak of the next 900.
  EXPECT_LE(peak, base_active + 2 * (base_peak - base_active) + 4096)
      << "peak " << peak << " vs base " << base_active << " + one step " << base_peak - base_active;
}

TEST(Transforms, DeepGraphsOfHundredThousandNodes) {
  array x(0.5f);
  const int n = 100000;
  auto f = [&](const array& a) {
    array y = a;
    for (int i = 0; i < n; ++i) y = add(y, a);
    return y;
  };
  auto [value, g] = value_and_grad(f)(x);
  EXPECT_FLOAT_EQ(g.item<float>(), n + 1.0f);
  EXPECT_FLOAT_EQ(value.item<float>(), 0.5f * (n + 1));
  auto [o, t] = jvp(f, x, array(2.0f));
  EXPECT_FLOAT_EQ(t.item<float>(), 2.0f * (n + 1));
  auto v = vmap(f)(array({1.0f, 2.0f}));
  test::expect_allclose(v, {2}, {n + 1.0, 2.0 * (n + 1)});
}

// ---------------------------------------------------------------- custom_function and checkpoint

TEST(Transforms, CustomFunctionUsesTheGivenRules) {
  std::atomic<int> vjp_calls{0}, jvp_calls{0}, vmap_calls{0};
  // The rules deliberately differ from the true derivative (x 10) to show they are used.
  auto f = custom_function(
      [](const std::vector<array>& a) { return std::vector<array>{exp(a[0])}; },
      [&](const std::vector<array>& primals, const std::vector<array>& cotangents,
          const std::vector<array>& outputs) {
        ++vjp_calls;
        return std::vector<array>{multiply(array(10.0f), multiply(cotangents[0], outputs[0]))};
      },
      [&](const std::vector<array>& primals, const std::vector<array>& tangents,
          const std::vector<int>& argnums) {
        ++jvp_calls;
        EXPECT_EQ(argnums, std::vector<int>{0});
        return std::vector<array>{multiply(array(10.0f), multiply(tangents[0], exp(primals[0])))};
      },
      [&](const std::vector<array>& inputs, const std::vector<int>& axes) {
        ++vmap_calls;
        return std::make_pair(std::vector<array>{exp(inputs[0])}, axes);
      });
  array x = test::random_array({3}, float32);
  auto xs = vals(x);
  auto e10 = test::map_ref(xs, [](double v) { return 10 * std::exp(v); });
  test::expect_allclose(f({x})[0], {3}, test::map_ref(xs, [](double v) { return std::exp(v); }));
  auto g = grad([&](const array& a) { return sum(f({a})[0]); })(x);
  test::expect_allclose(g, {3}, e10);
  auto [o, t] = jvp([&](const array& a) { return f({a})[0]; }, x, array({1.0f, 1.0f, 1.0f}));
  test::expect_allclose(t, {3}, e10);
  auto v = vmap([&](const array& a) { return f({a})[0]; })(reshape(x, {3, 1}));
  test::expect_allclose(v, {3, 1}, test::map_ref(xs, [](double v) { return std::exp(v); }));
  EXPECT_EQ(vjp_calls.load(), 1);
  EXPECT_EQ(jvp_calls.load(), 1);
  EXPECT_EQ(vmap_calls.load(), 1);
}

TEST(Transforms, CustomFunctionDefaultsTransformTheFunction) {
  auto f = custom_vjp(
      [](const std::vector<array>& a) { return std::vector<array>{multiply(a[0], sin(a[1]))}; },
      [](const std::vector<array>& p, const std::vector<array>& c, const std::vector<array>&) {
        return std::vector<array>{multiply(c[0], sin(p[1])),
                                  multiply(c[0], multiply(p[0], cos(p[1])))};
      });
  array x = test::random_array({4}, float32), y = test::random_array({4}, float32);
  auto xs = vals(x), ys = vals(y);
  auto g = grad([&](const std::vector<array>& a) { return sum(f(a)[0]); }, {0, 1})({x, y});
  std::vector<double> gx(4), gy(4);
  for (int i = 0; i < 4; ++i) {
    gx[i] = std::sin(ys[i]);
    gy[i] = xs[i] * std::cos(ys[i]);
  }
  test::expect_allclose(g[0], {4}, gx);
  test::expect_allclose(g[1], {4}, gy);
  // No jvp or vmap rule: both come from the function itself.
  array tx = test::random_array({4}, float32);
  auto [o, t] = jvp(f, {x, y}, {tx, zeros({4})});
  auto txs = vals(tx);
  for (int i = 0; i < 4; ++i) gx[i] *= txs[i];
  test::expect_allclose(t[0], {4}, gx);
  auto v = vmap(f, {0, -1})({reshape(x, {4, 1}), slice(y, {0}, {1})});
  std::vector<double> ref(4);
  for (int i = 0; i < 4; ++i) ref[i] = xs[i] * std::sin(ys[0]);
  test::expect_allclose(v[0], {4, 1}, ref);
}

TEST(Transforms, CustomFunctionRuleErrors) {
  auto wrong_count = custom_vjp(
      [](const std::vector<array>& a) { return std::vector<array>{exp(a[0])}; },
      [](const std::vector<array>&, const std::vector<array>& c, const std::vector<array>&) {
        return std::vector<array>{c[0], c[0]};
      });
  array x = test::random_array({3}, float32);
  expect_invalid([&] { grad([&](const array& a) { return sum(wrong_count({a})[0]); })(x); },
                 "[custom_function]", "2 cotangents");
  auto wrong_shape =
      custom_vjp([](const std::vector<array>& a) { return std::vector<array>{exp(a[0])}; },
                 [](const std::vector<array>&, const std::vector<array>& c,
                    const std::vector<array>&) { return std::vector<array>{sum(c[0])}; });
  expect_invalid([&] { grad([&](const array& a) { return sum(wrong_shape({a})[0]); })(x); },
                 "[custom_function]", "(3,)");
  // The arrays and the functions stay usable.
  test::expect_allclose(exp(x), {3}, test::map_ref(vals(x), [](double v) { return std::exp(v); }));
}

TEST(Transforms, CheckpointGivesTheSameGradients) {
  array x = test::random_array({6}, float32, -1, 1);
  auto block = [](const std::vector<array>& a) {
    return std::vector<array>{sin(multiply(exp(a[0]), a[1])), a[1]};
  };
  array w = test::random_array({6}, float32, -1, 1);
  auto plain = [&](const std::vector<array>& a) { return sum(block(block(a))[0]); };
  auto ck = checkpoint(block);
  auto checkpointed = [&](const std::vector<array>& a) { return sum(ck(ck(a))[0]); };
  auto g1 = grad(plain, {0, 1})({x, w});
  auto g2 = grad(checkpointed, {0, 1})({x, w});
  test::expect_allclose(g2[0], {6}, vals(g1[0]), 1e-5);
  test::expect_allclose(g2[1], {6}, vals(g1[1]), 1e-5);
  // Forward mode and batching fall back to the function.
  array t = test::random_array({6}, float32);
  auto [o1, t1] = jvp([&](const array& a) { return block({a, w})[0]; }, x, t);
  auto [o2, t2] = jvp([&](const array& a) { return ck({a, w})[0]; }, x, t);
  test::expect_allclose(t2, {6}, vals(t1));
}

TEST(Transforms, CheckpointLowersPeakMemory) {
  // Ten blocks of ten exps on 1 MiB arrays: without checkpointing the backward pass keeps
  // all 100 intermediates; with it, about one block's worth plus the block outputs.
  const int n = 1 << 18;
  auto block = [](const std::vector<array>& a) {
    array y = a[0];
    for (int i = 0; i < 10; ++i) y = sin(y);
    return std::vector<array>{y};
  };
  auto run = [&](bool use_checkpoint) {
    array x = test::random_array({n}, float32);
    x.eval();
    synchronize();
    size_t base = get_active_memory(test::test_device());
    reset_peak_memory(test::test_device());
    ArrayFn b = use_checkpoint ? checkpoint(block) : ArrayFn(block);
    auto g = grad([&](const array& a) {
      std::vector<array> y{a};
      for (int i = 0; i < 10; ++i) y = b(y);
      return sum(y[0]);
    })(x);
    g.eval();
    synchronize();
    return get_peak_memory(test::test_device()) - base;
  };
  size_t plain = run(false), checkpointed = run(true);
  const size_t mib = n * sizeof(float);
  EXPECT_GE(plain, 90 * mib) << "the plain backward should keep ~100 intermediates";
  if (test::test_device() == Device::cpu) {
    EXPECT_LE(checkpointed, 40 * mib)
        << "plain " << plain / mib << " MiB, checkpointed " << checkpointed / mib << " MiB";
  } else {
    // The GPU also holds the buffers of launches still in flight (the host runs up to
    // hundreds of launches ahead; stream.h), so only the saving itself is checked.
    EXPECT_LE(checkpointed, plain * 3 / 4)
        << "plain " << plain / mib << " MiB, checkpointed " << checkpointed / mib << " MiB";
  }
}

// ---------------------------------------------------------------- bad input

TEST(Transforms, ArgnumErrors) {
  array x = test::random_array({3}, float32), y = test::random_array({3}, float32);
  auto f = [](const std::vector<array>& a) { return sum(multiply(a[0], a[1])); };
  expect_invalid([&] { grad(f, std::vector<int>{}); }, "[grad]", "argnums");
  expect_invalid([&] { grad(f, 2)({x, y}); }, "[grad]", "argnums[0] = 2");
  expect_invalid([&] { grad(f, -3)({x, y}); }, "[grad]", "2 arguments of shapes (3,), (3,)");
  expect_invalid([&] { grad(f, {0, -2})({x, y}); }, "[grad]", "a second time");
}

// As MLX: integer arguments and losses are differentiated, giving integer gradients.
TEST(Transforms, IntegerGradients) {
  auto f = [](const std::vector<array>& a) { return sum(multiply(a[0], a[1])); };
  array x({1.5f, 2.0f, -3.0f}), i({1, 2, 3});
  array g = grad(f, 1)({x, i})[0];
  EXPECT_EQ(g.dtype(), int32);
  EXPECT_EQ(test::to_double(g), (std::vector<double>{1, 2, -3}));
  array gi = grad([](const array& a) { return sum(multiply(a, array(3, int32))); })(i);
  EXPECT_EQ(test::to_double(gi), (std::vector<double>{3, 3, 3}));
  auto [outs, tans] = jvp([](const std::vector<array>& a) { return std::vector<array>{sum(a[0])}; },
                          {i}, {array({3, 2, 1})});
  EXPECT_EQ(tans[0].item<int32_t>(), 6);
}

TEST(Transforms, NonScalarLossErrors) {
  array x = test::random_array({2, 3}, float32);
  expect_invalid([&] { grad([](const array& a) { return exp(a); })(x); }, "[grad]", "(2, 3)");
  expect_invalid(
      [&] { value_and_grad([](const std::vector<array>&) { return std::vector<array>{}; })({x}); },
      "[grad]", "no outputs");
}

TEST(Transforms, CotangentAndTangentErrors) {
  array x = test::random_array({2, 3}, float32);
  ArrayFn f = [](const std::vector<array>& a) { return std::vector<array>{exp(a[0])}; };
  expect_invalid([&] { vjp(f, {x}, {}); }, "[vjp]", "0 cotangents");
  expect_invalid([&] { vjp(f, {x}, {test::random_array({3, 2}, float32)}); }, "[vjp]", "(3, 2)");
  // A cotangent of another dtype is converted to the output's (MLX accepts it).
  EXPECT_EQ(vjp(f, {x}, {test::random_array({2, 3}, float16)}).second[0].dtype(), x.dtype());
  expect_invalid([&] { jvp(f, {x}, {x, x}); }, "[jvp]", "2 tangents");
  expect_invalid([&] { jvp(f, {x}, {test::random_array({6}, float32)}); }, "[jvp]", "(6,)");
  expect_invalid([&] { jvp(f, {x}, {test::random_array({2, 3}, float64)}); }, "[jvp]", "float64");
  // Nothing was left half-traced: x still evaluates, transforms still work.
  auto [o, g] = vjp(f, {x}, {x});
  test::expect_allclose(o[0], {2, 3}, test::map_ref(vals(x), [](double v) { return std::exp(v); }));
}

TEST(Transforms, APrimitiveReturningAWrongShapeIsNamed) {
  array x = test::random_array({3}, float32);
  auto f = [](const array& a) {
    return sum(
        array(a.shape(), a.dtype(), std::make_shared<BadVjp>(default_stream(Device::cpu)), {a}));
  };
  try {
    grad(f)(x);
    ADD_FAILURE() << "expected an error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("BadVjp"), std::string::npos) << e.what();
  }
}
