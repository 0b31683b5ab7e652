// compile's simplification (CSE, no-ops, constants), fusion into generated kernels (every
// layout and dtype, packed half arithmetic, transforms of fused nodes, the unfused fallback),
// the GPU kernels of real tapes compiled by NVRTC, and replay as one node. Results are compared
// with the uncompiled function bit for bit where the math is the same (compile_test.h).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <unordered_set>

#include "kiln/backend/gpu.h"
#ifdef KILN_WITH_CUDA
#include "kiln/backend/cuda/compiled.h"
#endif
#include "compile_test.h"
#include "graph_test.h"
#include "kiln/primitive.h"
#include "kiln/primitives_compile.h"

namespace kiln {
namespace {

using namespace compile_test;
using test::graph_primitives;
using test::random_array;

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

// A value used past the reduction (as a forward value is by the backward pass) is one more
// output of the kernel that computes it, not a kernel of its own.
TEST_F(Compile, ValuesUsedAfterTheRootAreMoreOutputs) {
  auto fun = [](const std::vector<array>& x) {
    array a = sin(x[0]);
    array b = exp(a * x[1]);
    array r = sum(b, -1, true);
    return std::vector<array>{a * r};
  };
  for (Dtype d : {float32, bfloat16}) {
    array a = random_array({6, 11}, d), b = random_array({6, 11}, d);
    auto c = compile(fun)({a, b});
    auto names = graph_primitives(c);
    // {sin, multiply, exp} as one kernel writing a and b; the sum; the last multiply alone.
    EXPECT_EQ(count_prefix(names, "Compiled"), 1u) << "dtype " << d;
    EXPECT_EQ(names.count("Sin") + names.count("Exp"), 0u) << "dtype " << d;
    EXPECT_EQ(names.count("Multiply"), 1u) << "dtype " << d;
    expect_bitwise_equal(c[0], fun({a, b})[0], msg("dtype ", d));
    // Its gradient: the forward kernel's extra output feeds the backward pass.
    auto loss = [&](const std::vector<array>& x) {
      return std::vector<array>{sum(fun(x)[0] * fun(x)[0])};
    };
    auto g = compile(
        [&](const std::vector<array>& x) { return vjp(loss, x, {array(1.0f)}).second; })({a, b});
    auto e = vjp(loss, {a, b}, {array(1.0f)}).second;
    expect_bitwise_equal(g[0], e[0], msg("dtype ", d, " grad 0"));
    expect_bitwise_equal(g[1], e[1], msg("dtype ", d, " grad 1"));
  }
}

TEST_F(Compile, AChainOfManyInputsBecomesSeveralKernels) {
  // The global norm of many gradients (MLX's clip_grad_norm): each add reads one more
  // reduction. One kernel cannot take all 100 inputs; the chain is cut into kernels that can.
  auto fun = [](const std::vector<array>& x) {
    array acc = sum(square(x[0]));
    for (size_t i = 1; i < x.size(); ++i) acc = acc + sum(square(x[i]));
    return std::vector<array>{sqrt(acc)};
  };
  for (Dtype d : {float32, bfloat16}) {
    std::vector<array> xs;
    double ref = 0;
    for (int i = 0; i < 100; ++i) {
      xs.push_back(random_array({3 + i % 5}, d));
      for (double v : test::to_double(xs.back())) ref += v * v;
    }
    auto c = compile(fun)(xs);
    auto names = graph_primitives(c);
    const size_t kernels = count_prefix(names, "Compiled");
    EXPECT_GE(kernels, 4u) << "dtype " << d;
    EXPECT_LE(kernels, 8u) << "dtype " << d;
    EXPECT_LE(names.count("Add"), 4u) << "dtype " << d << ": the adds are fused, not left alone";
    expect_bitwise_equal(c[0], fun(xs)[0], msg("dtype ", d));
    test::expect_allclose(c[0], {}, {std::sqrt(ref)}, d == float32 ? 1e-5 : 2e-2);
  }
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
