// compile's horizontal fusion (compile_group.cpp, CompiledGroup): Compiled nodes running the
// same code whose values only leave the function become one node, one launch per table of
// segments on the GPU. Every member's result must be bit for bit what it computes alone
// (compile_test.h), whatever its size, layout or alignment; values other nodes read stay
// apart.
#include <gtest/gtest.h>

#ifdef KILN_WITH_CUDA
#include "kiln/backend/cuda/compiled.h"
#endif
#include "compile_test.h"
#include "graph_test.h"
#include "kiln/primitives_compile.h"

namespace kiln {
namespace {

using namespace compile_test;
using test::graph_primitives;
using test::random_array;

// An optimizer-like update of each parameter: new value and new moment, sharing two scalars.
std::vector<array> update(const array& p, const array& g, const array& m, const array& lr,
                          const array& beta) {
  array m1 = beta * m + (1.0f - beta) * g;
  return {p - lr * (m1 / (sqrt(abs(m1)) + 1e-6f) + 0.01f * p), m1};
}

// Inputs: (lr, beta), then per parameter p, g, m. Outputs: per parameter p', m'.
std::vector<array> update_all(const std::vector<array>& x) {
  std::vector<array> out;
  for (size_t i = 2; i + 2 < x.size(); i += 3) {
    auto r = update(x[i], x[i + 1], x[i + 2], x[0], x[1]);
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

Shape concatenate_shape(int lead, const Shape& s) {
  Shape r{lead};
  r.insert(r.end(), s.begin(), s.end());
  return r;
}

const CompiledGroup* find_group(const std::vector<array>& outputs) {
  for (const auto& o : outputs)
    if (o.has_primitive())
      if (auto* g = dynamic_cast<const CompiledGroup*>(&o.primitive())) return g;
  return nullptr;
}

TEST_F(Compile, IndependentNodesOfOneCodeBecomeOneGroup) {
  // Sizes around the kernels' block sizes, one element, empty, and more parameters than one
  // launch's table holds (at most 64 segments).
  std::vector<Shape> shapes = {{7, 3}, {1}, {0, 4}, {1024}, {1025}, {33, 65}, {256, 4}, {3}};
  for (int i = 0; i < 70; ++i) shapes.push_back({1 + (i * 37) % 300});
  for (Dtype d : {float32, bfloat16}) {
    std::vector<array> x = {astype(array(0.01f), d), astype(array(0.9f), d)};
    for (const auto& s : shapes)
      for (int k = 0; k < 3; ++k) x.push_back(random_array(s, d));
    auto c = compile(update_all)(x);
    auto e = update_all(x);
    ASSERT_EQ(c.size(), e.size());
    auto names = graph_primitives(c);
    EXPECT_EQ(count_prefix(names, "CompiledGroup"), 1u) << d;
    const CompiledGroup* g = find_group(c);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->members().size(), shapes.size()) << d << ": every update is in the group";
    for (size_t i = 0; i < c.size(); ++i) expect_bitwise_equal(c[i], e[i], msg(d, " output ", i));
  }
}

TEST_F(Compile, GroupMembersTakeEveryLayout) {
  // Members whose inputs are views (transposed, strided, offset by one element, broadcast)
  // run as they would alone; the contiguous ones stay in the group's launch.
  array base = random_array({4099}, float32);
  std::vector<array> x = {array(0.01f), array(0.9f)};
  auto add = [&](array p, array g, array m) {
    x.push_back(p);
    x.push_back(g);
    x.push_back(m);
  };
  add(transpose(random_array({12, 10}, float32)), random_array({10, 12}, float32),
      random_array({10, 12}, float32));
  add(slice(base, {1}, {4097}), slice(base, {2}, {4098}), random_array({4096}, float32));
  add(slice(random_array({40}, float32), {0}, {40}, {2}), random_array({20}, float32),
      random_array({20}, float32));
  add(random_array({5, 6}, float32), broadcast_to(random_array({6}, float32), {5, 6}),
      random_array({5, 6}, float32));
  add(random_array({4096}, float32), random_array({4096}, float32), random_array({4096}, float32));
  auto c = compile(update_all)(x);
  auto e = update_all(x);
  EXPECT_EQ(count_prefix(graph_primitives(c), "CompiledGroup"), 1u);
  for (size_t i = 0; i < c.size(); ++i) expect_bitwise_equal(c[i], e[i], msg("output ", i));
}

TEST_F(Compile, ValuesOtherNodesReadStayApart) {
  // A chain of the same update: each step reads the last one's result.
  auto chain = [](const std::vector<array>& x) {
    array p = x[2], m = x[4];
    for (int k = 0; k < 3; ++k) {
      auto r = update(p, x[3], m, x[0], x[1]);
      p = r[0];
      m = r[1];
    }
    return std::vector<array>{p, m};
  };
  std::vector<array> x = {array(0.01f), array(0.9f), random_array({9}, float32),
                          random_array({9}, float32), random_array({9}, float32)};
  auto c = compile(chain)(x);
  EXPECT_EQ(count_prefix(graph_primitives(c), "CompiledGroup"), 0u);
  auto e = chain(x);
  expect_bitwise_equal(c[0], e[0], "p");
  expect_bitwise_equal(c[1], e[1], "m");

  // Values other nodes read are not grouped, even where grouping them would be possible:
  // a1 and b1 (same code, independent) feed the rest of the function.
  auto inner = [](const std::vector<array>& x) {
    array a1 = exp(x[0]) * 2.0f + x[0];
    array b1 = exp(x[1]) * 2.0f + x[1];
    return std::vector<array>{sum(a1, false) + sum(b1, false)};
  };
  std::vector<array> y = {random_array({5}, float32), random_array({6}, float32)};
  auto cc = compile(inner)(y);
  EXPECT_EQ(count_prefix(graph_primitives(cc), "CompiledGroup"), 0u);
  expect_bitwise_equal(cc[0], inner(y)[0], "inner");
}

TEST_F(Compile, GroupsTransformAsTheirMembers) {
  // vjp, jvp and vmap of a compiled function whose graph holds a group reach CompiledGroup's
  // transforms; they must equal the uncompiled function's.
  std::vector<array> x = {array(0.01f), array(0.9f)};
  for (const Shape& s : std::vector<Shape>{{6}, {2, 3}, {4}})
    for (int k = 0; k < 3; ++k) x.push_back(random_array(s, float32, 0.5, 2.0));
  auto cfun = compile(update_all);
  ASSERT_NE(find_group(cfun(x)), nullptr);
  std::vector<array> cot, tan;
  for (const auto& o : update_all(x)) cot.push_back(random_array(o.shape(), float32));
  for (const auto& a : x) tan.push_back(random_array(a.shape(), float32));
  auto vc = vjp(cfun, x, cot).second;
  auto ve = vjp(update_all, x, cot).second;
  for (size_t i = 0; i < x.size(); ++i) expect_bitwise_equal(vc[i], ve[i], msg("vjp ", i));
  auto jc = jvp(cfun, x, tan).second;
  auto je = jvp(update_all, x, tan).second;
  for (size_t i = 0; i < jc.size(); ++i) expect_bitwise_equal(jc[i], je[i], msg("jvp ", i));
  // vmap over a leading axis of every parameter array (the scalars are shared).
  std::vector<array> xb = {x[0], x[1]};
  std::vector<int> axes = {-1, -1};
  for (size_t i = 2; i < x.size(); ++i) {
    xb.push_back(random_array(concatenate_shape(3, x[i].shape()), float32, 0.5, 2.0));
    axes.push_back(0);
  }
  auto mc = vmap(cfun, axes)(xb);
  auto me = vmap(update_all, axes)(xb);
  for (size_t i = 0; i < mc.size(); ++i) expect_bitwise_equal(mc[i], me[i], msg("vmap ", i));
}

TEST_F(Compile, GpuGroupKernelsOfRealTapesCompile) {
#ifndef KILN_WITH_CUDA
  GTEST_SKIP() << "kiln was built without CUDA";
#else
  for (Dtype d : {float32, float16, bfloat16}) {
    std::vector<array> x = {astype(array(0.01f), d), astype(array(0.9f), d)};
    for (const Shape& s : std::vector<Shape>{{6}, {2, 3}})
      for (int k = 0; k < 3; ++k) x.push_back(random_array(s, d));
    auto c = compile(update_all)(x);
    const CompiledGroup* g = find_group(c);
    ASSERT_NE(g, nullptr) << d;
    const FusedTape& t = g->members()[0]->tape();
    auto m = gpu::fused_group_module(t, g->name());
    EXPECT_LE(gpu::fused_group_capacity(t) * gpu::fused_segment_bytes(t) + 8,
              gpu::kFusedGroupParamBytes);
    for (const char* arch : {"sm_90", "sm_80", "sm_75"}) {
      auto r = gpu::compile(m, arch);
      EXPECT_TRUE(r.log.empty()) << g->name() << " " << arch << ":\n" << r.log;
      EXPECT_EQ(r.kernels.size(), 1u);
    }
  }
#endif
}

}  // namespace
}  // namespace kiln
