// compile (kiln/compile.h): tracing and replay, the cache key, shapeless traces, transforms
// in both orders, errors, simplification and fusion. Results are compared with the
// uncompiled function on fresh random inputs: bit for bit where the math is the same.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "kiln/backend/gpu.h"
#ifdef KILN_WITH_CUDA
#include "kiln/backend/cuda/compiled.h"
#endif
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

size_t count_prefix(const std::multiset<std::string>& names, const std::string& prefix) {
  size_t n = 0;
  for (const auto& s : names) n += s.rfind(prefix, 0) == 0;
  return n;
}

// Distance in units in the last place between two floats of the same sign, else large.
template <typename F, typename U>
uint64_t ulp_distance(const char* x, const char* y) {
  U ux, uy;
  std::memcpy(&ux, x, sizeof(U));
  std::memcpy(&uy, y, sizeof(U));
  F fx, fy;
  std::memcpy(&fx, x, sizeof(F));
  std::memcpy(&fy, y, sizeof(F));
  if (std::isnan(fx) && std::isnan(fy)) return 0;
  if ((fx < 0) != (fy < 0)) return fx == fy ? 0 : ~0ull;
  return ux > uy ? ux - uy : uy - ux;
}

// Whether an element of a floating or complex dtype is (or holds) a NaN. Which NaN an
// operation on two NaNs returns is the instruction's choice (x86 keeps the first operand's,
// and a compiler may commute the op), so NaNs compare equal whatever their bits.
bool is_nan_at(Dtype d, const char* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  float f[2];
  double g;
  if (d == float16) return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
  if (d == bfloat16) return (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0;
  if (d == float32 || d == complex64) {
    std::memcpy(f, p, d == float32 ? 4 : 8);
    return std::isnan(f[0]) || (d == complex64 && std::isnan(f[1]));
  }
  if (d == float64) {
    std::memcpy(&g, p, 8);
    return std::isnan(g);
  }
  return false;
}

// Equality of two arrays' elements bit for bit (shapes and dtypes equal too), NaNs equal
// whatever their bits (is_nan_at). On a GPU,
// float32, float64 and complex64 results may differ by 2 ulp: NVCC may contract a multiply
// inside one op's functor with an add of the next (fusion reorders the rounding there).
void expect_bitwise_equal(array a, array b, const std::string& what = "") {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  eval(a, b);
  const bool gpu = test::test_device().type == Device::gpu;
  const size_t n = a.size(), w = a.itemsize();
  const char* pa = static_cast<const char*>(a.data<void>());
  const char* pb = static_cast<const char*>(b.data<void>());
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const char* x = pa + test::elem_to_loc_ref(i, a) * static_cast<int64_t>(w);
    const char* y = pb + test::elem_to_loc_ref(i, b) * static_cast<int64_t>(w);
    if (std::memcmp(x, y, w) == 0 || (a.dtype() == bool_ && (*x != 0) == (*y != 0))) continue;
    if (is_nan_at(a.dtype(), x) && is_nan_at(a.dtype(), y)) continue;
    if (gpu) {
      uint64_t d = ~0ull;
      if (a.dtype() == float32) d = ulp_distance<float, uint32_t>(x, y);
      if (a.dtype() == float64) d = ulp_distance<double, uint64_t>(x, y);
      if (a.dtype() == complex64)
        d = std::max(ulp_distance<float, uint32_t>(x, y),
                     ulp_distance<float, uint32_t>(x + 4, y + 4));
      if (d <= 2) continue;
    }
    if (++bad < 4) ADD_FAILURE() << what << ": element " << i << " differs";
  }
  EXPECT_EQ(bad, 0u) << what;
}

struct CompileReset : ::testing::Test {
  void SetUp() override {
    enable_compile();
    detail::reset_compile_stats();
  }
  void TearDown() override { enable_compile(); }
};

using Compile = CompileReset;

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

namespace kiln {
namespace {

// ---------------------------------------------------------------- simplification

struct CompileMode_ : CompileReset {
  void TearDown() override {
    set_compile_mode(CompileMode::enabled);
    CompileReset::TearDown();
  }
};
using CompileSimplify = CompileMode_;

TEST_F(CompileSimplify, CommonSubexpressionsAreComputedOnce) {
  set_compile_mode(CompileMode::no_fuse);
  auto fun = [](const std::vector<array>& x) {
    array a = exp(x[0]) * (x[0] + 1.0f);
    array b = exp(x[0]) * (x[0] + 1.0f);
    return std::vector<array>{a + b, sin(x[0]) - sin(x[0])};
  };
  array x = random_array({6}, float32);
  auto c = compile(fun)({x});
  auto names = graph_primitives(c);
  EXPECT_EQ(names.count("Exp"), 1u);
  EXPECT_EQ(names.count("Sin"), 1u);
  EXPECT_EQ(names.count("Multiply"), 1u);
  auto e = fun({x});
  expect_bitwise_equal(c[0], e[0]);
  expect_bitwise_equal(c[1], e[1]);
}

TEST_F(CompileSimplify, NoOpsAreRemoved) {
  set_compile_mode(CompileMode::no_fuse);
  auto fun = [](const std::vector<array>& x) {
    array y = stop_gradient(copy(astype(x[0], float32)));
    return std::vector<array>{reshape(y, x[0].shape()) * 2.0f};
  };
  array x = random_array({3, 4}, float32);
  auto names = graph_primitives(compile(fun)({x}));
  EXPECT_EQ(names.count("StopGradient") + names.count("Copy") + names.count("AsType") +
                names.count("Reshape"),
            0u);
  expect_bitwise_equal(compile(fun)({x})[0], fun({x})[0]);
}

TEST_F(CompileSimplify, EqualConstantsMerge) {
  set_compile_mode(CompileMode::no_fuse);
  auto fun = [](const std::vector<array>& x) {
    return std::vector<array>{x[0] * array(2.5f) + array(2.5f) * x[0]};
  };
  array x = random_array({5}, float32);
  auto c = compile(fun)({x});
  // x * 2.5 and 2.5 * x differ (operand order) but read the one merged constant.
  std::unordered_set<uintptr_t> leaves;
  std::vector<array> stack = c;
  while (!stack.empty()) {
    array a = stack.back();
    stack.pop_back();
    if (!a.has_primitive()) {
      if (a.ndim() == 0) leaves.insert(a.id());
      continue;
    }
    for (const auto& in : a.inputs()) stack.push_back(in);
  }
  EXPECT_EQ(leaves.size(), 1u);
  expect_bitwise_equal(c[0], fun({x})[0]);
}

TEST_F(CompileSimplify, OutputsAreNotMergedIntoEachOther) {
  auto fun = [](const std::vector<array>& x) {
    return std::vector<array>{x[0] + 1.0f, x[0] + 1.0f};
  };
  array x = random_array({5}, float32);
  auto c = compile(fun)({x});
  EXPECT_NE(c[0].id(), c[1].id());
  expect_bitwise_equal(c[0], c[1]);
}

// ---------------------------------------------------------------- fusion

array gelu_tanh(const array& x) {
  return 0.5f * x * (1.0f + tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

TEST_F(Compile, AChainBecomesOneKernel) {
  auto fun = [](const std::vector<array>& x) {
    return std::vector<array>{gelu_tanh(x[0]) * 1.5f + x[1]};
  };
  for (Dtype d : {float32, float16, bfloat16}) {
    array a = random_array({33, 65}, d), b = random_array({33, 65}, d);
    auto c = compile(fun)({a, b});
    auto names = graph_primitives(c);
    EXPECT_EQ(names.size(), 1u) << "dtype " << d;
    EXPECT_EQ(count_prefix(names, "Compiled"), 1u);
    detail::reset_compile_stats();
    const uint64_t launches = gpu::kernel_launches();
    expect_bitwise_equal(c[0], fun({a, b})[0], msg("dtype ", d));
    EXPECT_EQ(detail::compile_stats().fused_runs, 1u);
    EXPECT_EQ(detail::compile_stats().fallback_runs, 0u);
    if (test::test_device().type == Device::gpu) {
      // One fused kernel; the uncompiled reference launches one per op.
      EXPECT_GT(gpu::kernel_launches() - launches, 10u);
      eval(compile(fun)({a, b})[0]);
      const uint64_t before = gpu::kernel_launches();
      eval(compile(fun)({a, b})[0]);
      EXPECT_EQ(gpu::kernel_launches() - before, 1u);
    }
  }
}

TEST_F(Compile, FusionStopsAtReductionsAndAbsorbsBroadcasts) {
  auto fun = [](const std::vector<array>& x) {
    array e = exp(x[0] - max(x[0], -1, true));
    array s = e / sum(e, -1, true);
    return std::vector<array>{s * x[1] + 2.0f, e};
  };
  array a = random_array({7, 9}, float32), b = random_array({9}, float32);
  auto c = compile(fun)({a, b});
  auto names = graph_primitives(c);
  EXPECT_EQ(count_prefix(names, "Compiled"), 2u);
  EXPECT_EQ(names.count("Broadcast"), 0u);
  EXPECT_EQ(names.count("Max") + names.count("Sum"), 2u);
  auto e = fun({a, b});
  expect_bitwise_equal(c[0], e[0]);
  expect_bitwise_equal(c[1], e[1]);
}

TEST_F(Compile, FusedKernelsTakeEveryLayout) {
  auto fun = [](const std::vector<array>& x) {
    return std::vector<array>{sigmoid(x[0] * x[1]) - x[1] / 3.0f};
  };
  auto cfun = compile(fun, true);
  array base = random_array({12, 10}, float32);
  std::vector<std::pair<array, array>> cases = {
      {transpose(random_array({10, 12}, float32)), random_array({12, 10}, float32)},
      {slice(base, {0, 0}, {12, 10}, {2, 3}), random_array({6, 4}, float32)},
      {broadcast_to(random_array({1, 10}, float32), {12, 10}), random_array({10}, float32)},
      {random_array({5, 1}, float32), random_array({1, 6}, float32)},
      {random_array({4, 4}, float32), array(0.5f)},
      {zeros({0, 4}), zeros({0, 4})},
  };
  for (auto& [a, b] : cases) {
    expect_bitwise_equal(cfun({a, b})[0], fun({a, b})[0],
                         shape_str(a.shape()) + " " + shape_str(b.shape()));
  }
}

TEST_F(Compile, EveryDtypeFusesBitwise) {
  for (Dtype d : {bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64, float16,
                  bfloat16, float32, float64, complex64}) {
    if (d == float64 && test::test_device().type == Device::gpu) continue;
    auto fun = [d](const std::vector<array>& x) {
      if (d == bool_) return std::vector<array>{logical_or(logical_not(x[0]), x[1]) == x[0]};
      array y = d == complex64 ? x[0] * x[1] - x[0] : maximum(x[0], x[1]) * x[0] + x[1];
      return std::vector<array>{astype(y, float32) * 2.0f, y};
    };
    array a = random_array({17}, d, -5, 5), b = random_array({17}, d, 1, 5);
    auto c = compile(fun)({a, b});
    auto e = fun({a, b});
    for (size_t i = 0; i < c.size(); ++i) expect_bitwise_equal(c[i], e[i], msg(d, " output ", i));
  }
}

// The vectorized GPU kernel adds, subtracts and multiplies half types two at a time with
// packed instructions: every bit pattern (zeros, subnormals, infinities, NaNs) against
// random partners gives the eager ops' bits.
TEST_F(Compile, PackedHalfArithmeticIsBitwiseTheScalarOps) {
  auto fun = [](const std::vector<array>& x) {
    const array& a = x[0];
    const array& b = x[1];
    array h = astype(array(0.75f), a.dtype());
    return std::vector<array>{
        a + b, a - b, a * b, square(a), (a * b - a) * h + tanh(b) * a, where(a > b, a * a, b + h)};
  };
  for (Dtype d : {float16, bfloat16}) {
    array a = view(arange(0, 65536, uint16), d);
    array b = view(astype(random::randint(0, 65536, {65536}, int32), uint16), d);
    auto c = compile(fun)({a, b});
    auto e = fun({a, b});
    for (size_t i = 0; i < c.size(); ++i) expect_bitwise_equal(c[i], e[i], msg(d, " output ", i));
    // Odd lengths and offsets take the element-by-element kernels around the vectorized one.
    array s = slice(a, {1}, {4098}), t = slice(b, {3}, {4100});
    c = compile(fun)({s, t});
    e = fun({s, t});
    for (size_t i = 0; i < c.size(); ++i) expect_bitwise_equal(c[i], e[i], msg(d, " sliced ", i));
  }
}

TEST_F(Compile, CompiledNodesTransformAsTheirOps) {
  auto fun = [](const std::vector<array>& x) {
    return std::vector<array>{sin(x[0]) * exp(x[1]) + x[0]};
  };
  array a = random_array({6}, float32), b = random_array({6}, float32);
  array y = compile(fun)({a, b})[0];
  ASSERT_EQ(std::string(y.primitive().name()).rfind("Compiled", 0), 0u);
  Primitive& p = y.primitive();
  array t = random_array({6}, float32);
  auto jv = p.jvp(y.inputs(), {t}, {0});
  auto ref = jvp(fun, {a, b}, {t, zeros_like(b)}).second;
  expect_bitwise_equal(jv[0], ref[0], "jvp");
  auto vj = p.vjp(y.inputs(), {t}, {0, 1}, {y});
  auto vref = vjp(fun, {a, b}, {t}).second;
  expect_bitwise_equal(vj[0], vref[0], "vjp a");
  expect_bitwise_equal(vj[1], vref[1], "vjp b");
  array m = random_array({3, 6}, float32);
  auto [vm, axes] = p.vmap({m, b}, {0, -1});
  EXPECT_EQ(axes[0], 0);
  expect_bitwise_equal(vm[0], vmap(fun, {0, -1})({m, b})[0], "vmap");
}

TEST(CompileFallback, AKernelThatCannotBuildRunsUnfused) {
  if (test::test_device().type == Device::gpu) GTEST_SKIP() << "the host compiler's path";
  if (std::getenv("KILN_COMPILE_CHILD")) {
    detail::reset_compile_stats();
    auto fun = [](const std::vector<array>& x) {
      return std::vector<array>{exp(x[0]) * 3.0f - x[0] / 7.0f};
    };
    array a = random_array({40}, float32);
    expect_bitwise_equal(compile(fun)({a})[0], fun({a})[0]);
    EXPECT_EQ(detail::compile_stats().fallback_runs, 1u);
    EXPECT_EQ(detail::compile_stats().fused_runs, 0u);
    return;
  }
  pid_t pid =
      test::spawn_self("CompileFallback.AKernelThatCannotBuildRunsUnfused",
                       {"KILN_CXX=/nonexistent/c++", "KILN_CACHE=0", "KILN_COMPILE_CHILD=1"});
  ASSERT_GT(pid, 0);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// The GPU kernels of real fused tapes (literals, several outputs, shape-only inputs of
// shapeless traces, broadcast inputs; float32 and the packed half types), compiled by NVRTC
// for three architectures without a GPU: no error, no warning. The catalog (tests/test_jit.cpp)
// covers every op and dtype.
TEST_F(Compile, GpuKernelsOfRealTapesCompile) {
#ifndef KILN_WITH_CUDA
  GTEST_SKIP() << "kiln was built without CUDA";
#else
  std::vector<std::pair<ArrayFn, bool>> funs = {
      {[](const std::vector<array>& x) {
         return std::vector<array>{gelu_tanh(x[0]) * 1.5f + x[1], sigmoid(x[1]) > 0.5f};
       },
       false},
      {[](const std::vector<array>& x) {
         array z = zeros_like(x[0]) + x[0] * 2.0f;
         return std::vector<array>{z - ones_like(x[1]) * x[1], astype(z, int32)};
       },
       true},
      {[](const std::vector<array>& x) {
         return std::vector<array>{where(x[0] > x[1], x[0], array(-1.0f)) + 1.0f};
       },
       false},
      {[](const std::vector<array>& x) {
         // Literals of the inputs' dtype: no float32 promotion, so half types compute in pairs.
         array h = astype(array(0.75f), x[0].dtype());
         return std::vector<array>{(x[0] * x[0] - x[1] * h) + tanh(x[0]), x[0] > x[1]};
       },
       false},
  };
  size_t compiled = 0;
  for (auto& [fun, shapeless] : funs) {
    for (Dtype d : {float32, float16, bfloat16}) {
      array a = random_array({4, 5}, d), b = random_array({5}, d);
      for (const auto& out : compile(fun, shapeless)({a, b})) {
        if (!out.has_primitive()) continue;
        std::vector<array> stack{out};
        while (!stack.empty()) {
          array n = stack.back();
          stack.pop_back();
          if (!n.has_primitive()) continue;
          if (auto* c = dynamic_cast<Compiled*>(&n.primitive())) {
            auto m = gpu::fused_module(c->tape(), c->name());
            // sm_90 and sm_80 take different packed bfloat16 instructions, sm_75 none.
            for (const char* arch : {"sm_90", "sm_80", "sm_75"}) {
              auto r = gpu::compile(m, arch);
              EXPECT_TRUE(r.log.empty()) << c->name() << " " << arch << ":\n" << r.log;
              EXPECT_EQ(r.kernels.size(), 6u);
            }
            ++compiled;
          }
          for (const auto& in : n.inputs()) stack.push_back(in);
        }
      }
    }
  }
  EXPECT_GE(compiled, 12u);
#endif
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// ---------------------------------------------------------------- replay as one node (CUDA
// graphs on the GPU; on the CPU the node runs the steps directly)

struct CompileGraphReplay : CompileReset {
  void TearDown() override {
    detail::set_graph_replay(detail::GraphReplay::off);
    CompileReset::TearDown();
  }
};

TEST_F(CompileGraphReplay, OneNodeRunsTheProgram) {
  detail::set_graph_replay(detail::GraphReplay::always);
  auto fun = [](const std::vector<array>& x) {
    array h = matmul(x[0], x[1]);
    array y = gelu_tanh(h) + sum(h, -1, true);
    return std::vector<array>{y, x[0], h * 2.0f};
  };
  auto cfun = compile(fun);
  for (int call = 0; call < 4; ++call) {
    array a = random_array({4, 5}, float32), b = random_array({5, 3}, float32);
    auto c = cfun({a, b});
    auto e = fun({a, b});
    EXPECT_EQ(graph_primitives({c[0]}).count("CompiledGraph"), 1u);
    EXPECT_EQ(c[1].id(), a.id());  // an input returned as is
    for (size_t i = 0; i < c.size(); ++i) expect_bitwise_equal(c[i], e[i], msg("output ", i));
  }
  // Transforms of the node see the program's ops.
  array a = random_array({4, 5}, float32), b = random_array({5, 3}, float32);
  array y = cfun({a, b})[0];
  Primitive& p = y.primitive();
  array ct = random_array({4, 3}, float32);
  auto g = p.vjp(y.inputs(), {ct, zeros({4, 3})}, {0, 1}, y.outputs());
  auto ge = vjp(
                [&](const std::vector<array>& x) {
                  return std::vector<array>{fun(x)[0], fun(x)[2]};
                },
                {a, b}, {ct, zeros({4, 3})})
                .second;
  // The cotangents of h add up in another order than in the reference's graph.
  test::expect_allclose(g[0], ge[0].shape(), test::to_double(ge[0]), 1e-5);
  test::expect_allclose(g[1], ge[1].shape(), test::to_double(ge[1]), 1e-5);
}

TEST_F(CompileGraphReplay, GpuCallsAfterTheCaptureLaunchOneGraph) {
  if (test::test_device().type != Device::gpu) GTEST_SKIP() << "CUDA graphs need a GPU";
  detail::set_graph_replay(detail::GraphReplay::gpu);
  auto fun = [](const std::vector<array>& x) {
    array y = x[0];
    for (int i = 0; i < 8; ++i) y = sum(sin(y) * x[1], -1, true) + y;  // reductions: 16 kernels
    return std::vector<array>{y};
  };
  auto cfun = compile(fun);
  for (int call = 0; call < 5; ++call) {
    array a = random_array({16, 16}, float32), b = random_array({16}, float32);
    eval(a, b);
    const uint64_t before = gpu::kernel_launches();
    array c = cfun({a, b})[0];
    eval(c);
    // From the third call: the two inputs' staging copies, then one graph launch for the 24
    // steps (which the launch counter does not count).
    if (call >= 2) {
      EXPECT_EQ(gpu::kernel_launches() - before, 2u) << "call " << call;
    }
    expect_bitwise_equal(c, fun({a, b})[0], msg("call ", call));
  }
}

}  // namespace
}  // namespace kiln
