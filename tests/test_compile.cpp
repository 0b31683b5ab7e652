// compile (kiln/compile.h): tracing and replay, the cache key, shapeless traces, transforms
// in both orders, errors (simplification, fusion and replay: test_compile_fusion.cpp).
// Results are compared with the uncompiled function on fresh random inputs: bit for bit
// where the math is the same.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>

#include "compile_test.h"
#include "graph_test.h"
#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "kiln/primitive.h"
#include "kiln/primitives_compile.h"
#include "test_utils.h"

namespace kiln {
namespace {

using test::random_array;

using test::graph_primitives;

using namespace compile_test;

// ---------------------------------------------------------------- tracing and the cache

TEST_F(Compile, TracesOncePerShapesAndDtypes) {
  int calls = 0;
  auto fun = [&](const std::vector<array>& x) {
    ++calls;
    return std::vector<array>{exp(x[0]) * x[1] + 1.0f};
  };
  auto cfun = compile(fun);
  for (int rep = 0; rep < 3; ++rep) {
    array a = random_array({4, 5}, float32), b = random_array({4, 5}, float32);
    expect_bitwise_equal(cfun({a, b})[0], fun({a, b})[0], "replay");
  }
  EXPECT_EQ(calls, 1 + 3);  // one trace, three uncompiled references
  EXPECT_EQ(detail::compile_stats().traces, 1u);
  EXPECT_EQ(detail::compile_stats().replays, 2u);
  array c = random_array({3}, float32), d = random_array({3}, float32);
  cfun({c, d});
  EXPECT_EQ(detail::compile_stats().traces, 2u);  // new shapes
  array e = random_array({3}, float64), f = random_array({3}, float64);
  expect_bitwise_equal(cfun({e, f})[0], fun({e, f})[0], "float64");
  EXPECT_EQ(detail::compile_stats().traces, 3u);  // new dtypes
  cfun({c, d});
  EXPECT_EQ(detail::compile_stats().traces, 3u);
}

std::vector<array> plain_function(const std::vector<array>& x) {
  return {sin(x[0]) + cos(x[0])};
}

TEST_F(Compile, PlainFunctionPointer) {
  auto cfun = compile(plain_function);
  array a = random_array({7}, float32);
  expect_bitwise_equal(cfun({a})[0], plain_function({a})[0]);
  expect_bitwise_equal(compile(plain_function)({a})[0], plain_function({a})[0]);
  EXPECT_EQ(detail::compile_stats().traces, 1u);  // the same function: the same cache
}

TEST_F(Compile, CacheLivesWithTheFunction) {
  int calls = 0;
  {
    auto cfun = compile([&](const std::vector<array>& x) {
      ++calls;
      return std::vector<array>{x[0] * 2.0f};
    });
    auto copy = cfun;
    array a = random_array({3}, float32);
    cfun({a});
    copy({a});
    EXPECT_EQ(calls, 1);
  }
  auto again = compile([&](const std::vector<array>& x) {
    ++calls;
    return std::vector<array>{x[0] * 2.0f};
  });
  again({random_array({3}, float32)});
  EXPECT_EQ(calls, 2);
}

TEST_F(Compile, ShapelessTracesOncePerRanks) {
  int calls = 0;
  auto fun = [&](const std::vector<array>& x) {
    ++calls;
    return std::vector<array>{tanh(x[0]) * 0.5f + x[1]};
  };
  auto cfun = compile(fun, /*shapeless=*/true);
  for (Shape s : {Shape{2, 3}, Shape{5, 1}, Shape{7, 9}}) {
    array a = random_array(s, float32), b = random_array({s[1]}, float32);
    expect_bitwise_equal(cfun({a, b})[0], fun({a, b})[0], shape_str(s));
  }
  EXPECT_EQ(detail::compile_stats().traces, 1u);
  array a = random_array({2, 2, 2}, float32), b = random_array({2}, float32);
  expect_bitwise_equal(cfun({a, b})[0], fun({a, b})[0], "rank 3");
  EXPECT_EQ(detail::compile_stats().traces, 2u);
}

TEST_F(Compile, ShapelessReshapeInfersAgainOrThrows) {
  auto cfun = compile(
      [](const std::vector<array>& x) {
        return std::vector<array>{reshape(x[0], {x[0].shape(0) * x[0].shape(1), -1})};
      },
      true);
  EXPECT_EQ(cfun({zeros({2, 3, 4})})[0].shape(), (Shape{6, 4}));
  EXPECT_EQ(cfun({zeros({2, 3, 8})})[0].shape(), (Shape{6, 8}));
  EXPECT_THROW(cfun({zeros({5, 5, 5})}), std::invalid_argument);
}

TEST_F(Compile, ShapelessGatherFollowsAxesTakenWhole) {
  // Random indices in range for every source below (axis 1 has at least 4 entries).
  array idx = astype(random_array({2, 3}, float32, 0.0, 3.99), int32);
  auto take_fun = [&](const std::vector<array>& x) {
    return std::vector<array>{take(x[0], idx, 1) * 2.0f};
  };
  auto cfun = compile(take_fun, /*shapeless=*/true);
  // Traced on size-1 axes, which a guessing reshape would confuse with the dropped one.
  for (Shape s : {Shape{1, 4, 1}, Shape{3, 6, 5}, Shape{2, 4, 1}}) {
    array a = random_array(s, float32);
    expect_bitwise_equal(cfun({a})[0], take_fun({a})[0], shape_str(s));
  }
  EXPECT_EQ(detail::compile_stats().traces, 1u);
  // A slice taking part of an axis keeps meaning only for the traced size of that axis.
  auto part = compile(
      [&](const std::vector<array>& x) {
        return std::vector<array>{gather(x[0], {array({1}, int32)}, {0}, {1, 2})};
      },
      true);
  EXPECT_EQ(part({random_array({3, 4}, float32)})[0].shape(), (Shape{1, 1, 2}));
  EXPECT_EQ(part({random_array({5, 4}, float32)})[0].shape(), (Shape{1, 1, 2}));  // indexed
  try {
    part({random_array({3, 6}, float32)});
    FAIL() << "a partial slice of another axis size was replayed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[gather] A shapeless compiled function"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Compile, ShapelessGatherMMFollowsMatrixAndBatchShapes) {
  array b = random_array({6, 8, 3}, float32);
  array lhs = astype(random_array({2, 2}, float32, 0.0, 5.99), int32);
  array rhs = astype(random_array({2, 2}, float32, 0.0, 5.99), uint32);
  auto fun = [&](const std::vector<array>& x) {
    return std::vector<array>{gather_mm(x[0], b, lhs, rhs)};
  };
  auto cfun = compile(fun, true);
  for (Shape s : {Shape{2, 3, 1, 8}, Shape{2, 3, 5, 8}, Shape{3, 2, 2, 8}, Shape{1, 6, 1, 8}}) {
    array a = random_array(s, float32);
    expect_bitwise_equal(cfun({a})[0], fun({a})[0], shape_str(s));
  }
  EXPECT_EQ(detail::compile_stats().traces, 1u);
  EXPECT_THROW(cfun({random_array({2, 3, 5, 4}, float32)}), std::invalid_argument);  // K
}

TEST_F(Compile, MatrixStackOutsideShapelessTracesIsAReshape) {
  array x = random_array({2, 3, 4, 5}, float32);
  array m = detail::matrix_stack(x);
  EXPECT_EQ(m.shape(), (Shape{6, 4, 5}));
  expect_bitwise_equal(m, reshape(x, {6, 4, 5}));
  EXPECT_EQ(detail::matrix_stack(random_array({4, 5}, float32)).shape(), (Shape{1, 4, 5}));
  EXPECT_EQ(detail::matrix_stack(zeros({0, 4, 5})).shape(), (Shape{0, 4, 5}));
  EXPECT_EQ(detail::matrix_stack(zeros({2, 3, 0, 5})).shape(), (Shape{6, 0, 5}));
  EXPECT_THROW(detail::matrix_stack(zeros({5})), std::invalid_argument);
}

TEST_F(Compile, ShapelessZerosLikeFollowsTheInput) {
  auto cfun = compile(
      [](const std::vector<array>& x) {
        return std::vector<array>{zeros_like(x[0]), ones_like(x[0]) + x[0]};
      },
      true);
  auto r = cfun({zeros({1, 1, 32})});
  EXPECT_EQ(r[0].shape(), (Shape{1, 1, 32}));
  array y = random_array({2, 2, 16}, float32);
  r = cfun({y});
  EXPECT_EQ(r[0].shape(), (Shape{2, 2, 16}));
  expect_bitwise_equal(r[1], ones_like(y) + y);
}

TEST_F(Compile, ClosureValuesAreFrozenAtTrace) {
  array captured = array(1.0f);
  auto cfun =
      compile([&](const std::vector<array>& x) { return std::vector<array>{x[0] + captured}; });
  EXPECT_EQ(cfun({array(1.0f)})[0].item<float>(), 2.0f);
  captured = array(5.0f);
  EXPECT_EQ(cfun({array(1.0f)})[0].item<float>(), 2.0f);
}

TEST_F(Compile, IdentityAndConstantOutputs) {
  auto cfun = compile([](const std::vector<array>& x) {
    return std::vector<array>{x[0], array(3.0f), x[0] + 1.0f};
  });
  array a = random_array({3}, float32);
  auto r = cfun({a});
  EXPECT_EQ(r[0].id(), a.id());
  EXPECT_EQ(r[1].item<float>(), 3.0f);
  expect_bitwise_equal(r[2], a + 1.0f);
}

TEST_F(Compile, InputsWithPendingGraphs) {
  array x = array({1, 2, 3}), y = array({1, 2, 3});
  for (int i = 0; i < 5; ++i) {
    x = x + y;
    y = y + 1;
  }
  auto fun = [](const std::vector<array>& v) { return std::vector<array>{v[0] * v[1]}; };
  expect_bitwise_equal(compile(fun)({x, y})[0], fun({x, y})[0]);
}

TEST_F(Compile, MultiOutputPrimitives) {
  auto fun = [](const std::vector<array>& x) {
    auto qr = divmod(abs(x[0]) + 1.0f, abs(x[1]) + 0.5f);
    return std::vector<array>{qr[1] * 2.0f, qr[0]};
  };
  array a = random_array({5, 3}, float32), b = random_array({5, 3}, float32);
  auto c = compile(fun)({a, b});
  auto e = fun({a, b});
  expect_bitwise_equal(c[0], e[0]);
  expect_bitwise_equal(c[1], e[1]);
}

TEST_F(Compile, LongChainsDoNotOverflowTheStack) {
  auto fun = [](const std::vector<array>& x) {
    array y = x[0];
    for (int i = 0; i < 20000; ++i) y = (i % 2) ? y + 1.0f : y * 0.999f;
    return std::vector<array>{y};
  };
  array a = random_array({4}, float32);
  expect_bitwise_equal(compile(fun)({a})[0], fun({a})[0]);
}

// ---------------------------------------------------------------- disable / enable

TEST_F(Compile, DisableRunsTheFunction) {
  int calls = 0;
  auto cfun = compile([&](const std::vector<array>& x) {
    ++calls;
    return std::vector<array>{x[0] + 1.0f};
  });
  array a = random_array({3}, float32);
  cfun({a});
  cfun({a});
  EXPECT_EQ(calls, 1);
  disable_compile();
  cfun({a});
  cfun({a});
  EXPECT_EQ(calls, 3);
  enable_compile();
  cfun({a});
  EXPECT_EQ(calls, 3);
}

TEST(CompileEnvironment, DisablesCompile) {
  if (std::getenv("KILN_COMPILE_CHILD")) {
    // In the child: KILN_DISABLE_COMPILE=1 set before start.
    EXPECT_EQ(compile_mode(), CompileMode::disabled);
    int calls = 0;
    auto cfun = compile([&](const std::vector<array>& x) {
      ++calls;
      return std::vector<array>{x[0] + 1.0f};
    });
    cfun({array(1.0f)});
    cfun({array(1.0f)});
    EXPECT_EQ(calls, 2);
    return;
  }
  pid_t pid = test::spawn_self("CompileEnvironment.DisablesCompile",
                               {"KILN_DISABLE_COMPILE=1", "KILN_COMPILE_CHILD=1"});
  ASSERT_GT(pid, 0);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// ---------------------------------------------------------------- errors

TEST_F(Compile, EvaluatingDuringTheTraceThrows) {
  auto cfun = compile([](const std::vector<array>& x) {
    float v = (x[0] + 1.0f).item<float>();
    return std::vector<array>{x[0] * v};
  });
  try {
    cfun({array(1.0f)});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[compile]"), std::string::npos) << e.what();
  }
  // The process and the function stay usable.
  EXPECT_EQ((array(2.0f) + 1.0f).item<float>(), 3.0f);
  EXPECT_THROW(cfun({array(1.0f)}), std::invalid_argument);
}

TEST_F(Compile, UncapturedInputsThrow) {
  array x = array({1, 2, 3}) + 2;
  auto cfun =
      compile([&](const std::vector<array>& a) { return std::vector<array>{a[0] + (x + 1)}; });
  EXPECT_THROW(cfun({x}), std::invalid_argument);
  array y = array({4, 5, 6});
  EXPECT_NO_THROW(cfun({y}));
}

// ---------------------------------------------------------------- transforms

TEST_F(Compile, CompileOfGrad) {
  auto loss = [](const std::vector<array>& x) { return sum(exp(x[0]) * x[1]); };
  auto g = grad(loss, {0, 1});
  auto cg = compile(g);
  for (int rep = 0; rep < 2; ++rep) {
    array a = random_array({6}, float32), b = random_array({6}, float32);
    auto e = g({a, b});
    auto c = cg({a, b});
    expect_bitwise_equal(c[0], e[0], "d/da");
    expect_bitwise_equal(c[1], e[1], "d/db");
  }
  EXPECT_EQ(detail::compile_stats().traces, 1u);
}

TEST_F(Compile, GradOfCompiled) {
  auto f = [](const std::vector<array>& x) { return std::vector<array>{sin(x[0]) * x[0]}; };
  auto cf = compile(f);
  auto loss = [&](const std::vector<array>& x) { return sum(cf(x)[0]); };
  array a = random_array({5}, float32);
  auto ge = grad([&](const std::vector<array>& x) { return sum(f(x)[0]); })({a})[0];
  expect_bitwise_equal(grad(loss)({a})[0], ge);
  // vjp, jvp and vmap of a compiled function, and a compiled function of vmap.
  array ct = random_array({5}, float32);
  auto [o1, v1] = vjp(cf, {a}, {ct});
  auto [o2, v2] = vjp(f, {a}, {ct});
  expect_bitwise_equal(v1[0], v2[0], "vjp");
  auto [p1, t1] = jvp(cf, {a}, {ct});
  auto [p2, t2] = jvp(f, {a}, {ct});
  expect_bitwise_equal(t1[0], t2[0], "jvp");
  array m = random_array({3, 5}, float32);
  expect_bitwise_equal(vmap(cf)({m})[0], vmap(f)({m})[0], "vmap of compiled");
  expect_bitwise_equal(compile(vmap(f, {1}, {0}))({m})[0], vmap(f, {1}, {0})({m})[0],
                       "compiled vmap");
}

TEST_F(Compile, CustomFunctionAndCheckpointInside) {
  auto inner = custom_vjp(
      [](const std::vector<array>& x) { return std::vector<array>{exp(x[0])}; },
      [](const std::vector<array>&, const std::vector<array>& ct, const std::vector<array>& out) {
        return std::vector<array>{ct[0] * out[0] * 2.0f};  // deliberately not the true vjp
      });
  auto step = [&](const std::vector<array>& x) {
    auto [v, g] = value_and_grad(
        [&](const std::vector<array>& y) {
          return std::vector<array>{sum(checkpoint(inner)(y)[0] * 3.0f)};
        },
        0)(x);
    return std::vector<array>{v[0], g[0]};
  };
  array a = random_array({4}, float32);
  auto e = step({a});
  auto c = compile(step)({a});
  expect_bitwise_equal(c[0], e[0], "value");
  expect_bitwise_equal(c[1], e[1], "custom vjp gradient");
  expect_bitwise_equal(c[1], exp(a) * 6.0f, "the custom rule ran");
}

TEST_F(Compile, NestedCompile) {
  auto inner =
      compile([](const std::vector<array>& x) { return std::vector<array>{x[0] * x[0] + 1.0f}; });
  auto outer = compile([&](const std::vector<array>& x) {
    return std::vector<array>{inner({x[0]})[0] - inner({x[0] * 2.0f})[0]};
  });
  array a = random_array({8}, float32);
  expect_bitwise_equal(outer({a})[0], (a * a + 1.0f) - ((a * 2.0f) * (a * 2.0f) + 1.0f));
}

TEST_F(Compile, RandomWithAKeyArgument) {
  auto fun = [](const std::vector<array>& x) {
    auto [k1, k2] = random::split(x[0]);
    return std::vector<array>{random::uniform({3, 3}, float32, k2) + x[1], k1};
  };
  auto cfun = compile(fun);
  array key = random::key(42), b = random_array({3, 3}, float32);
  auto c = cfun({key, b});
  auto e = fun({key, b});
  expect_bitwise_equal(c[0], e[0]);
  expect_bitwise_equal(c[1], e[1]);
  auto c2 = cfun({c[1], b});  // the next key gives other numbers
  EXPECT_FALSE(array_equal(c2[0], c[0]).item<bool>());
}

}  // namespace
}  // namespace kiln
