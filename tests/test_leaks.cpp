// Memory held by the transformations: after many rounds of grad, vjp, jvp, vmap,
// value_and_grad, custom_function and checkpoint (and nestings of them), active memory on
// the device under test is back where it started, so nothing the transform built (tape,
// closures, cached cotangents) outlives the call. The per-round data is large (1 MiB) so
// that one leaked array per round shows far above any allocator rounding.
#include <atomic>
#include <thread>

#include "test_utils.h"

using namespace kiln;

namespace {

constexpr int kRounds = 200;
constexpr int kN = 1 << 18;  // float32 elements per array: 1 MiB

// Active memory of the device under test once everything queued has finished.
size_t active() {
  synchronize();
  return get_active_memory(test::test_device());
}

// Runs `round` kRounds times and expects active memory to end where it started, with a
// first round outside the measurement so that lazily created state (random keys, kernel
// caches) does not count. Also bounds the peak: a few rounds' worth, never all of them.
void expect_no_growth(const char* what, const std::function<void()>& round) {
  round();
  const size_t before = active();
  reset_peak_memory(test::test_device());
  for (int i = 0; i < kRounds; ++i) round();
  const size_t after = active();
  EXPECT_EQ(after, before) << what << ": " << (after - before) << " bytes left after " << kRounds
                           << " rounds";
  const size_t peak = get_peak_memory(test::test_device());
  EXPECT_LE(peak, before + 64u * kN * sizeof(float))
      << what << ": the peak grows with the number of rounds";
}

array fresh() {
  return test::random_array({kN}, float32, -1.0, 1.0);
}

array loss(const array& x) {
  return sum(multiply(sin(x), x));
}

}  // namespace

TEST(Leaks, Grad) {
  expect_no_growth("grad", [] {
    array x = fresh();
    auto g = grad(UnaryFn([](const array& a) { return loss(a); }))(x);
    g.eval();
  });
}

TEST(Leaks, GradCapturingAnArray) {
  // The closure holds an array; the returned gradient function is dropped each round.
  expect_no_growth("grad with a captured array", [] {
    array w = fresh();
    auto f = grad(UnaryFn([w](const array& a) { return sum(multiply(a, w)); }));
    array g = f(fresh());
    g.eval();
  });
}

TEST(Leaks, ValueAndGrad) {
  expect_no_growth("value_and_grad", [] {
    array x = fresh(), y = fresh();
    auto vg = value_and_grad(
        ScalarFn([](const std::vector<array>& a) { return sum(square(subtract(a[0], a[1]))); }),
        std::vector<int>{0, 1});
    auto [v, g] = vg({x, y});
    eval(v, g[0], g[1]);
  });
}

TEST(Leaks, Vjp) {
  expect_no_growth("vjp", [] {
    array x = fresh();
    auto [out, ct] = vjp([](const array& a) { return exp(multiply(a, a)); }, x, fresh());
    eval(out, ct);
  });
}

TEST(Leaks, Jvp) {
  expect_no_growth("jvp", [] {
    array x = fresh();
    auto [out, t] = jvp([](const array& a) { return tanh(multiply(a, a)); }, x, fresh());
    eval(out, t);
  });
}

TEST(Leaks, Vmap) {
  expect_no_growth("vmap", [] {
    array x = reshape(fresh(), {512, 512});
    array w = test::random_array({512}, float32);
    auto f = vmap(UnaryFn([w](const array& row) { return sum(multiply(row, w)); }));
    f(x).eval();
  });
}

TEST(Leaks, CustomFunction) {
  expect_no_growth("custom_function", [] {
    array w = fresh();
    auto f = custom_function(
        [w](const std::vector<array>& in) { return std::vector<array>{multiply(in[0], w)}; },
        CustomVjpFn(
            [w](const std::vector<array>&, const std::vector<array>& ct,
                const std::vector<array>&) { return std::vector<array>{multiply(ct[0], w)}; }));
    array x = fresh();
    auto [outs, cts] = vjp(f, {x}, {fresh()});
    eval(outs[0], cts[0]);
  });
}

TEST(Leaks, Checkpoint) {
  expect_no_growth("checkpoint", [] {
    auto f = checkpoint([](const std::vector<array>& in) {
      array h = exp(in[0]);
      return std::vector<array>{sum(multiply(h, h))};
    });
    array x = fresh();
    auto g = grad(ScalarFn([&](const std::vector<array>& a) { return f(a)[0]; }))({x});
    g[0].eval();
  });
}

TEST(Leaks, NestedTransforms) {
  expect_no_growth("grad of vmap and jvp of grad", [] {
    array x = reshape(fresh(), {512, 512});
    auto inner = vmap(UnaryFn([](const array& r) { return sum(sin(r)); }));
    auto g = grad(UnaryFn([&](const array& a) { return sum(inner(a)); }))(x);
    auto [o, t] = jvp(grad(UnaryFn([](const array& a) { return loss(a); })), fresh(), fresh());
    eval(g, o, t);
  });
}

TEST(Leaks, UnevaluatedTransformOutputsAreFreedWhenDropped) {
  // Graphs built by a transform but never evaluated hold their inputs only while reachable.
  expect_no_growth("unevaluated grad", [] {
    array x = fresh();
    x.eval();
    array g = grad(UnaryFn([](const array& a) { return loss(a); }))(x);
    (void)g;
  });
}

TEST(Leaks, TrainingLoopStaysFlat) {
  // A two-layer regression trained by SGD for 2,000 steps: active memory after the last
  // step equals that after the first (parameters replaced, not accumulated) and the peak
  // of the late steps is no higher than that of the early ones.
  const Device dev = test::test_device();
  array w1 = test::random_array({64, 128}, float32, -0.1, 0.1);
  array w2 = test::random_array({128, 1}, float32, -0.1, 0.1);
  array xs = test::random_array({256, 64}, float32);
  array ys = sum(xs, std::vector<int>{1}, true);
  eval(w1, w2, ys);
  auto step = [&] {
    auto vg = value_and_grad(ScalarFn([&](const std::vector<array>& p) {
                               array h = maximum(matmul(xs, p[0]), array(0.0f));
                               return mean(square(subtract(matmul(h, p[1]), ys)));
                             }),
                             std::vector<int>{0, 1});
    auto [l, g] = vg({w1, w2});
    w1 = subtract(w1, multiply(array(1e-3f), g[0]));
    w2 = subtract(w2, multiply(array(1e-3f), g[1]));
    eval(l, w1, w2);
    return l.item<float>();
  };
  for (int i = 0; i < 50; ++i) step();
  const size_t early = active();
  reset_peak_memory(dev);
  float first = step();
  for (int i = 0; i < 50; ++i) step();
  const size_t early_peak = get_peak_memory(dev);
  float last = 0;
  for (int i = 0; i < 2000; ++i) last = step();
  reset_peak_memory(dev);
  for (int i = 0; i < 50; ++i) last = step();
  EXPECT_EQ(active(), early);
  EXPECT_LE(get_peak_memory(dev), early_peak);
  EXPECT_LT(last, first) << "the loss went down";
}

TEST(Leaks, ConcurrentTransformsFromSeveralThreads) {
  // 8 threads each run grad and vmap rounds on their own arrays; memory returns to its
  // starting point once all have joined.
  auto run = [] {
    std::vector<std::thread> ts;
    std::atomic<int> failures{0};
    for (int t = 0; t < 8; ++t) {
      ts.emplace_back([&failures] {
        try {
          for (int i = 0; i < 20; ++i) {
            array x = test::random_array({4096}, float32);
            array g = grad(UnaryFn([](const array& a) { return sum(exp(a)); }))(x);
            array e = exp(x);
            g.eval();
            e.eval();
            if (!array_equal(g, e).item<bool>()) failures.fetch_add(1);
          }
        } catch (...) {
          failures.fetch_add(1);
        }
      });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(failures.load(), 0);
  };
  run();
  const size_t before = active();
  for (int i = 0; i < 5; ++i) run();
  EXPECT_EQ(active(), before);
}
