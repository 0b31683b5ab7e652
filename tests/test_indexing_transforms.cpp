// Transformations of the indexing primitives, checked through the primitives directly:
// vjp and jvp against central differences and against each other, vmap against a loop
// over the mapped axis (source, indices, or both mapped).
#include "indexing_test.h"

using namespace indexing_test;

// ---------------------------------------------------------------- transforms

namespace {

/** sum(c * fn(inputs)) for real inputs, with c fixed: the scalar whose gradient is vjp(c). */
double dot(const array& x, const array& y) {
  auto a = values(x), b = values(y);
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] * b[i]).real();
  return s;
}

array perturbed(const array& x, size_t i, double h) {
  auto v = values(x);
  std::vector<double> r;
  for (auto c : v) r.push_back(c.real());
  r[i] += h;
  return array(r.begin(), x.shape(), x.dtype());
}

/**
 * Checks the primitive behind `build(inputs)` on float64 inputs: for the inputs in
 * `diff`, its vjp against central differences of <c, f>, its jvp against the directional
 * difference, and vjp/jvp against each other. Integer inputs must get zero vjps.
 */
void check_grads(const std::function<array(const std::vector<array>&)>& build,
                 const std::vector<array>& inputs, const std::vector<int>& diff) {
  const double h = 1e-6, tol = 1e-6;
  array out = build(inputs);
  auto prim = out.primitive_ptr();
  auto prim_inputs = out.inputs();
  array c = random_values(out.shape(), float64);
  std::vector<int> argnums;
  for (size_t i = 0; i < prim_inputs.size(); ++i) argnums.push_back(static_cast<int>(i));
  auto vjps = prim->vjp(prim_inputs, {c}, argnums, {out});
  // Finite differences through the op on the same inputs.
  for (int k : diff) {
    const array& g = vjps[k];
    ASSERT_EQ(g.shape(), prim_inputs[k].shape());
    auto gv = values(g);
    for (size_t i = 0; i < prim_inputs[k].size(); ++i) {
      auto plus = prim_inputs, minus = prim_inputs;
      plus[k] = perturbed(prim_inputs[k], i, h);
      minus[k] = perturbed(prim_inputs[k], i, -h);
      auto rebuild = [&](const std::vector<array>& in) {
        return array(out.shape(), out.dtype(), prim, in);
      };
      double fd = (dot(c, rebuild(plus)) - dot(c, rebuild(minus))) / (2 * h);
      EXPECT_NEAR(gv[i].real(), fd, tol * (1 + std::abs(fd))) << "input " << k << " element " << i;
    }
  }
  for (size_t k = 0; k < prim_inputs.size(); ++k) {
    if (is_integral(prim_inputs[k].dtype())) {
      for (auto v : values(vjps[k])) EXPECT_EQ(v, 0.0);
    }
  }
  // jvp with random tangents of the differentiable inputs; <c, J t> = sum <vjp_k, t_k>.
  std::vector<array> tangents;
  double want = 0.0;
  for (int k : diff) {
    tangents.push_back(random_values(prim_inputs[k].shape(), float64));
    want += dot(vjps[k], tangents.back());
  }
  auto jv = prim->jvp(prim_inputs, tangents, diff);
  ASSERT_EQ(jv[0].shape(), out.shape());
  EXPECT_NEAR(dot(c, jv[0]), want, tol * (1 + std::abs(want)));
}

}  // namespace

TEST(IndexingGrad, GatherIsLinearInTheSource) {
  // Repeated indices: the vjp sums their cotangents.
  array a = random_values({5, 4}, float64);
  array i0 = array({1, -4, 3, 1}, {4, 1}, int32), i1 = array({0, 2}, {1, 2}, int64);
  check_grads(
      [](const std::vector<array>& in) {
        return gather(in[0], {in[1], in[2]}, {0, 1}, {1, 2});
      },
      {a, i0, i1}, {0});
  array out = gather(a, {i0, i1}, {0, 1}, {1, 2});
  array c = random_values(out.shape(), float64);
  auto g = out.primitive().vjp(out.inputs(), {c}, {0}, {out})[0];
  // Reference: every cotangent element added at its source element.
  std::vector<cd> want(20, 0.0);
  auto cv = values(c);
  int64_t rows[4] = {1, 1, 3, 1}, cols[2] = {0, 2};
  for (int p = 0; p < 4; ++p)
    for (int q = 0; q < 2; ++q)
      for (int s = 0; s < 2; ++s) want[rows[p] * 4 + cols[q] + s] += cv[(p * 2 + q) * 2 + s];
  expect_values(g, {5, 4}, want, 1e-12);
}

TEST(IndexingGrad, ScatterEveryReduce) {
  array a = random_values({6, 3}, float64);
  // Distinct indices for `none` (a duplicate's loser has no derivative); repeats otherwise.
  array distinct = array({4, 0, -1}, int32);
  array repeats = array({4, 1, 4, -2, 1}, int32);
  for (auto [reduce, fn] : kScatters) {
    array idx = reduce == ScatterReduce::none ? distinct : repeats;
    array u = test::random_array({idx.shape(0), 1, 3}, float64, 0.5, 2.0);
    check_grads(
        [fn = fn](const std::vector<array>& in) { return fn(in[0], {in[1]}, in[2], {0}, {}); },
        {a, idx, u}, {0, 2});
  }
}

TEST(IndexingGrad, ScatterProdWithZeroUpdatesIsExact) {
  // Target 0 gets one zero update, target 2 two of them: d out / d u is the product of the
  // others, never a division by zero.
  array a = array({2.0, 3.0, 5.0}, float64);
  array idx = array({0, 0, 2, 2, 2}, int32);
  array u = array({0.0, 4.0, 0.0, 0.0, 7.0}, {5, 1}, float64);
  array out = scatter_prod(a, {idx}, u, {0});
  array c = array({1.0, 1.0, 1.0}, float64);
  auto g = out.primitive().vjp(out.inputs(), {c}, {0, 2}, {out});
  expect_values(g[0], {3}, {0.0, 1.0, 0.0}, 1e-12);
  expect_values(g[1], {5, 1}, {2.0 * 4.0, 0.0, 0.0, 0.0, 0.0}, 1e-12);
  array u2 = array({0.0, 4.0, 0.0, 6.0, 7.0}, {5, 1}, float64);
  out = scatter_prod(a, {idx}, u2, {0});
  g = out.primitive().vjp(out.inputs(), {c}, {2}, {out});
  expect_values(g[0], {5, 1}, {8.0, 0.0, 5.0 * 6 * 7, 0.0, 0.0}, 1e-12);
}

// As MLX: every value tied with the result gets the whole cotangent (updates tied with each
// other, and an update tied with the source), and the jvp sums the tied values' tangents.
TEST(IndexingGrad, ScatterMaxTiesEachGetTheCotangent) {
  array a = array({1.0, 5.0, 4.0}, float64);
  array idx = array({0, 0, 1, 2}, int32);
  array u = array({3.0, 3.0, 2.0, 4.0}, {4, 1}, float64);
  for (bool max : {true, false}) {
    array out =
        max ? scatter_max(a, {idx}, u, {0}) : scatter_min(negative(a), {idx}, negative(u), {0});
    std::vector<array> primals = out.inputs();
    array c = array({6.0, 4.0, 7.0}, float64);
    array ta = array({0.5, 0.25, 0.125}, float64);
    array tu = array({1.0, 2.0, 4.0, 8.0}, {4, 1}, float64);
    // Both transforms before anything evaluates `out` (which drops its primitive).
    auto t = out.primitive().jvp(primals, {ta, tu}, {0, 2});
    auto g = out.primitive().vjp(primals, {c}, {0, 2}, {out});
    expect_values(g[0], {3}, {0.0, 4.0, 7.0}, 1e-12);
    expect_values(g[1], {4, 1}, {6.0, 6.0, 0.0, 7.0}, 1e-12);
    expect_values(t[0], {3}, {3.0, 0.25, 8.125}, 1e-12);
  }
}

TEST(IndexingGrad, AlongAxisPrimitives) {
  array a = random_values({3, 5}, float64);
  array idx = random_indices({3, 4}, int32, 5);
  check_grads([](const std::vector<array>& in) { return take_along_axis(in[0], in[1], 1); },
              {a, idx}, {0});
  // Distinct targets per row for put_along_axis; repeats for the accumulating form.
  array perm = array({0, 3, 4, 1, 2, 0}, {3, 2}, int32);
  array v = random_values({3, 2}, float64);
  check_grads([](const std::vector<array>& in) { return put_along_axis(in[0], in[1], in[2], 1); },
              {a, perm, v}, {0, 2});
  array rep = random_indices({3, 6}, int32, 5);
  array w = random_values({3, 6}, float64);
  check_grads(
      [](const std::vector<array>& in) {
        return detail::scatter_along_axis(ScatterReduce::sum, in[0], in[1], in[2], 1);
      },
      {a, rep, w}, {0, 2});
}

TEST(IndexingGrad, ThroughTheTransforms) {
  // End to end through grad: d/da sum(take(a, idx)^2) = 2 * counts * a.
  array a = random_values({6}, float64);
  array idx = array({5, 0, 5, -1, 2}, int32);
  auto g =
      grad([&](const std::vector<array>& in) { return sum(square(take(in[0], idx))); })({a})[0];
  auto av = values(a);
  std::vector<cd> want(6, 0.0);
  for (int i : {5, 0, 5, 5, 2}) want[i] += 2.0 * av[i];
  expect_values(g, {6}, want, 1e-12);
}

// ---------------------------------------------------------------- vmap

namespace {

/** One batch of a mapped array. */
array batch_of(const array& x, int axis, int b) {
  return axis < 0 ? x : take(x, b, axis);
}

/**
 * Checks the primitive behind `build(inputs)` against a loop: inputs mapped along `axes`
 * (-1: unmapped), every batch of the vmapped output equals the op on that batch's inputs.
 */
void check_vmap(const std::function<array(const std::vector<array>&)>& build,
                const std::vector<array>& batched, const std::vector<int>& axes, int batch,
                double rtol = 0.0) {
  std::vector<array> first;
  for (size_t i = 0; i < batched.size(); ++i) first.push_back(batch_of(batched[i], axes[i], 0));
  array proto = build(first);
  // The primitive's own inputs (broadcast/cast by the op) carry the mapped axes through
  // the same views: rebuild them batched from `build`'s argument order.
  auto [outs, out_axes] = proto.primitive().vmap(
      [&] {
        std::vector<array> in;
        auto pins = proto.inputs();
        for (size_t i = 0; i < pins.size(); ++i)
          in.push_back(i < batched.size() ? batched[i] : pins[i]);
        return in;
      }(),
      [&] {
        std::vector<int> ax(proto.inputs().size(), -1);
        for (size_t i = 0; i < axes.size() && i < ax.size(); ++i) ax[i] = axes[i];
        return ax;
      }());
  for (int b = 0; b < batch; ++b) {
    std::vector<array> in;
    for (size_t i = 0; i < batched.size(); ++i) in.push_back(batch_of(batched[i], axes[i], b));
    array want = build(in);
    array got = batch_of(outs[0], out_axes[0], b);
    expect_values(got, want.shape(), values(want), rtol);
  }
}

Shape with_batch(Shape s, int axis, int batch) {
  s.insert(s.begin() + axis, batch);
  return s;
}

}  // namespace

TEST(IndexingVmap, Gather) {
  const int B = 3;
  auto build = [](const std::vector<array>& in) {
    return gather(in[0], {in[1], in[2]}, {0, 2}, {1, 2, 1});
  };
  for (auto [aa, ia] :
       std::vector<std::pair<int, int>>{{0, -1}, {-1, 0}, {1, 1}, {2, 0}, {-1, 2}}) {
    array a = aa < 0 ? random_values({4, 3, 5}, float32)
                     : random_values(with_batch({4, 3, 5}, aa, B), float32);
    Shape is{2, 3};
    array i0 =
        ia < 0 ? random_indices(is, int32, 4) : random_indices(with_batch(is, ia, B), int32, 4);
    array i2 =
        ia < 0 ? random_indices(is, int64, 5) : random_indices(with_batch(is, ia, B), int64, 5);
    SCOPED_TRACE(testing::Message() << "source axis " << aa << ", index axis " << ia);
    check_vmap(build, {a, i0, i2}, {aa, ia, ia}, B);
  }
}

TEST(IndexingVmap, Scatter) {
  const int B = 3;
  for (auto [reduce, fn] : kScatters) {
    auto build = [fn = fn](const std::vector<array>& in) {
      return fn(in[0], {in[1]}, in[2], {1}, {});
    };
    for (auto [aa, ia, ua] : std::vector<std::tuple<int, int, int>>{{0, -1, -1},
                                                                    {-1, -1, 0},
                                                                    {1, -1, 3},
                                                                    {-1, 0, -1},
                                                                    {0, 1, 2},
                                                                    {2, 0, -1},
                                                                    {-1, 1, 0}}) {
      array a = aa < 0 ? random_values({4, 5}, float64)
                       : random_values(with_batch({4, 5}, aa, B), float64);
      Shape is{3};
      array idx =
          ia < 0 ? random_indices(is, int32, 5) : random_indices(with_batch(is, ia, B), int32, 5);
      Shape us{3, 4, 1};
      array u = ua < 0 ? random_values(us, float64) : random_values(with_batch(us, ua, B), float64);
      SCOPED_TRACE(testing::Message()
                   << "reduce " << int(reduce) << ", axes " << aa << " " << ia << " " << ua);
      if (reduce == ScatterReduce::none) {
        // Duplicates make `none` pick any update: compare with distinct indices only.
        array distinct = array({0, 4, 2}, int32);
        idx = ia < 0 ? distinct : broadcast_to(expand_dims(distinct, ia), idx.shape());
      }
      check_vmap(build, {a, idx, u}, {aa, ia, ua}, B, 1e-12);
    }
  }
}

TEST(IndexingVmap, AlongAxis) {
  const int B = 2;
  auto take_fn = [](const std::vector<array>& in) { return take_along_axis(in[0], in[1], 1); };
  auto put_fn = [](const std::vector<array>& in) { return put_along_axis(in[0], in[1], in[2], 1); };
  auto add_fn = [](const std::vector<array>& in) {
    return detail::scatter_along_axis(ScatterReduce::sum, in[0], in[1], in[2], 1);
  };
  for (auto [aa, ia] : std::vector<std::pair<int, int>>{{0, -1}, {-1, 0}, {2, 1}, {1, 2}}) {
    array a =
        aa < 0 ? random_values({3, 5}, float32) : random_values(with_batch({3, 5}, aa, B), float32);
    array idx = ia < 0 ? random_indices({3, 4}, int32, 5)
                       : random_indices(with_batch({3, 4}, ia, B), int32, 5);
    array v =
        ia < 0 ? random_values({3, 4}, float32) : random_values(with_batch({3, 4}, ia, B), float32);
    SCOPED_TRACE(testing::Message() << "source axis " << aa << ", index axis " << ia);
    check_vmap(take_fn, {a, idx}, {aa, ia}, B);
    check_vmap(add_fn, {a, idx, v}, {aa, ia, ia}, B, 1e-5);
    array perm = array({0, 3, 4, 1, 2, 0, 1, 3, 4, 2, 0, 1}, {3, 4}, int32);
    array p = ia < 0 ? perm : broadcast_to(expand_dims(perm, ia), idx.shape());
    check_vmap(put_fn, {a, p, v}, {aa, ia, ia}, B);
  }
}

TEST(IndexingVmap, ThroughTheTransforms) {
  // vmap over rows of a with a shared index array, and over index rows with a shared a.
  array a = random_values({4, 6}, float32);
  array idx = random_indices({4, 3}, int32, 6);
  auto rows = vmap([&](const array& x) { return take(x, array({5, 0, -1}, int32)); })(a);
  expect_values(rows, {4, 3}, values(take(a, array({5, 0, -1}, int32), 1)), 0.0);
  auto per = vmap([&](const array& x, const array& i) { return take(x, i); })(a, idx);
  expect_values(per, {4, 3}, values(take_along_axis(a, idx, 1)), 0.0);
}
