// scaled_dot_product_attention of kiln/fast.h on the default device (KILN_DEVICE=gpu runs the
// GPU kernels: flash, decode and the simple kernels) against a float64 reference on the CPU:
// every mask kind, grouped- and multi-query heads, L_q != L_k, sinks, head dims, long
// sequences, non-contiguous inputs, fully masked rows; gradients against central
// differences and the unfused composition, second order, jvp and vmap.
#include "fast_test.h"
#include "kiln/fast_sdpa_backend.h"

using namespace fast_test;

namespace {

struct AttnCase {
  int B, Hq, Hk, Lq, Lk, D;
  std::string mask;  // "", "causal", "bool", "additive", "bool_bcast", "additive_bcast"
  bool sinks = false;
  int Dv = -1;
};

std::string attn_name(const AttnCase& c, Dtype t) {
  return msg("B", c.B, " Hq", c.Hq, " Hk", c.Hk, " Lq", c.Lq, " Lk", c.Lk, " D", c.D, " mask '",
             c.mask, "'", c.sinks ? " sinks" : "", " ", t);
}

std::optional<array> make_mask(const AttnCase& c) {
  if (c.mask == "bool") return test::random_array({c.B, c.Hq, c.Lq, c.Lk}, bool_, 0, 1.3);
  if (c.mask == "additive") return test::random_array({c.B, c.Hq, c.Lq, c.Lk}, float32, -2, 1);
  if (c.mask == "bool_bcast") return test::random_array({c.Lq, c.Lk}, bool_, 0, 1.3);
  if (c.mask == "additive_bcast") return test::random_array({c.B, 1, 1, c.Lk}, float32, -3, 0);
  return std::nullopt;
}

void run_attention_case(const AttnCase& c, Dtype t, bool transposed_layout = false) {
  SCOPED_TRACE(attn_name(c, t));
  const int Dv = c.Dv > 0 ? c.Dv : c.D;
  array q = random_q(c.B, c.Hq, c.Lq, c.D, t, transposed_layout);
  array k = random_q(c.B, c.Hk, c.Lk, c.D, t, transposed_layout);
  array v = random_q(c.B, c.Hk, c.Lk, Dv, t, transposed_layout);
  std::optional<array> mask = make_mask(c);
  if (mask && mask->dtype() != bool_) mask = astype(*mask, t == float64 ? float64 : t);
  std::optional<array> sinks;
  if (c.sinks) sinks = test::random_array({c.Hq}, t, -1, 2);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  const std::string mode = c.mask == "causal" ? "causal" : "";
  array o = fast::scaled_dot_product_attention(q, k, v, scale, mode, mask, sinks);
  EXPECT_EQ(o.dtype(), t);
  array r = ref_attention(q, k, v, scale, mode, mask, sinks);
  test::expect_allclose(o, {c.B, c.Hq, c.Lq, Dv}, test::to_double(r),
                        t == float32   ? 1e-4
                        : t == float64 ? 1e-10
                                       : tol(t));
}

}  // namespace

// kiln's own kernels: the default backend sends most half-precision GPU calls to cuDNN,
// whose path test_fast_attention_cudnn.cpp tests.
class FastAttention : public ::testing::Test {
 protected:
  void SetUp() override { fast::set_sdpa_backend(fast::SdpaBackend::kiln); }
  void TearDown() override { fast::set_sdpa_backend(std::nullopt); }
};

TEST_F(FastAttention, MasksHeadsAndLengths) {
  for (Dtype t : {float32, float16, bfloat16}) {
    for (const std::string mask :
         {"", "causal", "bool", "additive", "bool_bcast", "additive_bcast"}) {
      for (auto [Lq, Lk] :
           std::vector<std::pair<int, int>>{{7, 7}, {1, 7}, {7, 19}, {19, 7}, {1, 1}}) {
        run_attention_case({1, 4, 2, Lq, Lk, 64, mask}, t);
      }
    }
  }
  // Multi-query, several batches, sinks with every mask kind.
  for (const std::string mask : {"", "causal", "bool", "additive"}) {
    run_attention_case({2, 6, 1, 9, 13, 32, mask, true}, float32);
    run_attention_case({2, 6, 3, 13, 9, 32, mask, true}, float16);
  }
  run_attention_case({2, 4, 4, 5, 11, 64, "", false, 48}, float32);  // D_v != D
  run_attention_case({1, 2, 2, 6, 6, 16, "causal"}, float64);
}

TEST_F(FastAttention, HeadDimsAndLongSequences) {
  for (int D : {64, 80, 96, 128, 256}) {
    for (Dtype t : {float32, bfloat16}) {
      run_attention_case({1, 2, 1, 33, 70, D, "causal"}, t);
      run_attention_case({1, 2, 2, 1, 300, D, "bool"}, t);
    }
  }
  run_attention_case({1, 2, 1, 1000, 1000, 64, "causal"}, float32);
  run_attention_case({1, 4, 2, 1000, 1000, 128, "", true}, bfloat16);
  run_attention_case({1, 8, 2, 1, 1000, 128, "additive_bcast"}, float16);
  if (on_gpu()) {
    // The GPU's tiles: lengths past several blocks, decode with a long context.
    run_attention_case({1, 4, 2, 4097, 4097, 128, "causal"}, bfloat16);
    run_attention_case({2, 8, 2, 1, 4097, 128, ""}, bfloat16);
    run_attention_case({1, 2, 2, 4097, 4097, 64, "bool"}, float16);
    run_attention_case({1, 2, 1, 257, 4097, 256, "causal", true}, bfloat16);
  }
}

// The decode path's shapes (few rows per key/value head, Lk >= 256): every group size up to
// 16 (R x Lq), D 64 and 128 (and 80, 96, 256 in 16 bits), no mask or causal with Lq > 1, sinks,
// ragged key counts that split unevenly, a transposed (B, L, H, D) layout; and sizes next to it
// that leave the path.
TEST_F(FastAttention, DecodeGroupsAndLongContexts) {
  for (Dtype t : {bfloat16, float16, float32}) {
    for (int D : {64, 128}) {
      run_attention_case({2, 8, 8, 1, 300, D, ""}, t);              // R 1
      run_attention_case({1, 8, 4, 1, 1000, D, ""}, t);             // R 2
      run_attention_case({2, 8, 2, 1, 2049, D, "", true}, t);       // R 4, sinks
      run_attention_case({1, 16, 2, 1, 777, D, "causal"}, t);       // R 8
      run_attention_case({1, 4, 2, 3, 5000, D, "causal"}, t);       // R 2 x Lq 3
      run_attention_case({1, 8, 2, 2, 300, D, "causal", true}, t);  // 8 rows
    }
  }
  // Head dims only the tensor-core kernel (16-bit inputs) takes.
  for (Dtype t : {bfloat16, float16}) {
    for (int D : {80, 96, 256}) {
      run_attention_case({1, 8, 2, 1, 1000, D, ""}, t);
      run_attention_case({2, 4, 1, 2, 333, D, "causal", true}, t);
    }
  }
  run_attention_case({1, 8, 2, 1, 3000, 128, ""}, bfloat16, true);  // transposed layout
  // 9 to 16 rows: the tensor-core kernel's second tile of rows (16-bit), else simple_fwd.
  for (Dtype t : {bfloat16, float16, float32}) {
    run_attention_case({1, 12, 1, 1, 600, 64, ""}, t);          // 12 rows
    run_attention_case({2, 16, 4, 4, 1500, 128, "causal"}, t);  // R 4 x Lq 4
    run_attention_case({1, 16, 1, 1, 700, 96, "", true}, t);    // R 16, sinks
  }
  run_attention_case({1, 8, 1, 3, 400, 128, "causal"}, bfloat16);  // 24 rows: not decode
  run_attention_case({1, 4, 2, 1, 255, 128, ""}, bfloat16);        // short: not decode
}

TEST_F(FastAttention, NonContiguousAndFullyMasked) {
  // Inputs as (B, L, H, D) transposed to (B, H, L, D).
  run_attention_case({2, 4, 2, 17, 23, 64, "causal"}, float32, true);
  run_attention_case({2, 4, 1, 1, 23, 128, "bool"}, bfloat16, true);
  // A query that sees no key: the mean of v under a bool or causal mask (L_q > L_k).
  array q = test::random_array({1, 1, 3, 8}, float32);
  array k = test::random_array({1, 1, 4, 8}, float32);
  array v = test::random_array({1, 1, 4, 8}, float32);
  array none = zeros({3, 4}, bool_);
  auto o = test::to_double(fast::scaled_dot_product_attention(q, k, v, 0.3f, "", none));
  auto vm = test::to_double(mean(v, 2));
  for (int i = 0; i < 3; ++i)
    for (int d = 0; d < 8; ++d) EXPECT_NEAR(o[i * 8 + d], vm[d], 1e-6);
  run_attention_case({1, 2, 2, 9, 4, 16, "causal"}, float32);
  // An additive -inf row is NaN, as its unfused formula.
  array inf_mask = full({3, 4}, -std::numeric_limits<float>::infinity());
  auto on = test::to_double(fast::scaled_dot_product_attention(q, k, v, 0.3f, "", inf_mask));
  EXPECT_TRUE(std::isnan(on[0]));
  // MLX's window mask: no NaN.
  array idx = arange(32);
  array win = logical_and(greater_equal(reshape(idx, {32, 1}), reshape(idx, {1, 32})),
                          less_equal(reshape(idx, {32, 1}), add(reshape(idx, {1, 32}), array(11))));
  array q2 = test::random_array({1, 1, 32, 16}, float32, 0, 1);
  array k2 = test::random_array({1, 1, 32, 16}, float32, 0, 1);
  array o2 = fast::scaled_dot_product_attention(q2, k2, k2, 1.0f, "", win);
  test::expect_allclose(o2, {1, 1, 32, 16},
                        test::to_double(ref_attention(q2, k2, k2, 1.0, "", win, std::nullopt)),
                        1e-4);
  // Empty queries and empty keys.
  EXPECT_EQ(fast::scaled_dot_product_attention(zeros({1, 2, 0, 8}), zeros({1, 2, 5, 8}),
                                               zeros({1, 2, 5, 8}), 1.0f)
                .shape(),
            (Shape{1, 2, 0, 8}));
  test::expect_allclose(fast::scaled_dot_product_attention(ones({1, 2, 3, 8}), zeros({1, 2, 0, 8}),
                                                           zeros({1, 2, 0, 8}), 1.0f),
                        {1, 2, 3, 8}, std::vector<double>(48, 0.0));
}

TEST_F(FastAttention, ArgumentChecks) {
  array q = ones({2, 4, 5, 8}), k = ones({2, 2, 7, 8}), v = ones({2, 2, 7, 6});
  const std::string tag = "[scaled_dot_product_attention]";
  auto sdpa = [&](const array& a, const array& b, const array& c, const std::string& mode = "",
                  std::optional<array> m = std::nullopt, std::optional<array> s = std::nullopt) {
    return fast::scaled_dot_product_attention(a, b, c, 1.0f, mode, m, s);
  };
  expect_invalid([&] { sdpa(ones({4, 5, 8}), k, v); }, tag);
  expect_invalid([&] { sdpa(q, ones({2, 3, 7, 8}), ones({2, 3, 7, 8})); }, tag);
  expect_invalid([&] { sdpa(q, ones({2, 2, 7, 4}), v); }, tag);
  expect_invalid([&] { sdpa(q, k, ones({2, 1, 7, 6})); }, tag);
  expect_invalid([&] { sdpa(q, k, ones({2, 2, 6, 6})); }, tag);
  expect_invalid([&] { sdpa(q, ones({1, 2, 7, 8}), ones({1, 2, 7, 6})); }, tag);
  expect_invalid([&] { sdpa(q, k, v, "foo"); }, tag);
  expect_invalid([&] { sdpa(q, k, v, "causal", ones({5, 7})); }, tag);
  expect_invalid([&] { sdpa(q, k, v, "", ones({3, 7})); }, tag);
  expect_invalid([&] { sdpa(q, k, v, "", ones({1, 1, 1, 2, 5, 7})); }, tag);
  expect_invalid(
      [&] {
        sdpa(astype(q, float16), astype(k, float16), astype(v, float16), "", ones({5, 7}));
      },
      tag);
  expect_invalid([&] { sdpa(q, k, v, "", std::nullopt, ones({2})); }, tag);
  expect_invalid([&] { sdpa(astype(q, int32), astype(k, int32), astype(v, int32)); }, tag);
  // Accepted: integer additive masks, float16 masks for float32 inputs.
  EXPECT_EQ(sdpa(q, k, v, "", ones({5, 7}, int32)).shape(), (Shape{2, 4, 5, 6}));
  EXPECT_EQ(sdpa(q, k, v, "", ones({5, 7}, float16)).dtype(), float32);
}

TEST_F(FastAttention, GradientsMatchFiniteDifferences) {
  const int B = 1, Hq = 4, Hk = 2, Lq = 3, Lk = 5, D = 4;
  array q = test::random_array({B, Hq, Lq, D}, float64);
  array k = test::random_array({B, Hk, Lk, D}, float64);
  array v = test::random_array({B, Hk, Lk, D}, float64);
  array sinks = test::random_array({Hq}, float64);
  array bmask = test::random_array({Lq, Lk}, bool_, 0, 1.4);
  array amask = test::random_array({1, Hq, 1, Lk}, float64, -1, 1);
  for (const std::string mode : {"", "causal"}) {
    check_grad(
        [mode](const auto& a) {
          return fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.7f, mode);
        },
        {q, k, v}, {0, 1, 2});
    check_grad(
        [mode](const auto& a) {
          return fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.7f, mode, std::nullopt,
                                                    a[3]);
        },
        {q, k, v, sinks}, {0, 1, 2, 3});
  }
  check_grad(
      [bmask](const auto& a) {
        return fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.7f, "", bmask);
      },
      {q, k, v}, {0, 1, 2});
  // The additive mask's own gradient comes from the unfused form.
  check_grad(
      [](const auto& a) {
        return fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.7f, "", a[3]);
      },
      {q, k, v, amask}, {0, 1, 2, 3});
  // Causal with more queries than keys (rows that see nothing).
  array q2 = test::random_array({1, 2, 6, D}, float64);
  array k2 = test::random_array({1, 2, 3, D}, float64);
  check_grad(
      [](const auto& a) {
        return fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.7f, "causal");
      },
      {q2, k2, k2}, {0, 1, 2});
}

TEST_F(FastAttention, FusedGradientsMatchComposition) {
  // Larger problems through the fused backward, against float64 vjps of the reference.
  struct G {
    AttnCase c;
    Dtype t;
  };
  std::vector<G> cases = {{{1, 4, 2, 70, 70, 64, "causal"}, float32},
                          {{2, 2, 1, 33, 150, 64, "bool_bcast", true}, float32},
                          {{1, 4, 4, 40, 20, 80, "additive"}, float32},
                          {{1, 4, 2, 64, 64, 128, "causal"}, bfloat16},
                          {{1, 2, 2, 17, 300, 96, ""}, float16}};
  if (on_gpu()) {
    cases.push_back({{1, 4, 2, 1000, 1000, 128, "causal"}, bfloat16});
    cases.push_back({{1, 2, 1, 257, 513, 64, "", true}, float16});
    cases.push_back({{1, 2, 2, 128, 128, 256, "causal"}, bfloat16});
  }
  for (const auto& [c, t] : cases) {
    SCOPED_TRACE(attn_name(c, t));
    array q = random_q(c.B, c.Hq, c.Lq, c.D, t, false);
    array k = random_q(c.B, c.Hk, c.Lk, c.D, t, true);
    array v = random_q(c.B, c.Hk, c.Lk, c.D, t, false);
    std::optional<array> mask = make_mask(c);
    if (mask && mask->dtype() != bool_) mask = astype(*mask, t);
    array g = test::random_array({c.B, c.Hq, c.Lq, c.D}, t, -1, 1);
    const std::string mode = c.mask == "causal" ? "causal" : "";
    std::vector<array> prim{q, k, v};
    if (c.sinks) prim.push_back(test::random_array({c.Hq}, t, -1, 1));
    const bool sinks = c.sinks;
    auto [o1, v1] = vjp(
        [&](const std::vector<array>& a) {
          return std::vector<array>{fast::scaled_dot_product_attention(
              a[0], a[1], a[2], 0.125f, mode, mask, sinks ? std::optional(a[3]) : std::nullopt)};
        },
        prim, {g});
    std::vector<array> prim64;
    for (const auto& p : prim) prim64.push_back(f64(p));
    auto [o2, v2] = vjp(
        [&](const std::vector<array>& a) {
          return std::vector<array>{ref_attention(a[0], a[1], a[2], 0.125, mode, mask,
                                                  sinks ? std::optional(a[3]) : std::nullopt)};
        },
        prim64, {f64(g)});
    const double r = t == float32 ? 2e-4 : 4 * tol(t);
    for (size_t i = 0; i < prim.size(); ++i) {
      SCOPED_TRACE("input " + std::to_string(i));
      // Sums over many rows (dK, dV, dsinks) grow their rounding with the rows.
      test::expect_allclose(v1[i], prim[i].shape(), test::to_double(v2[i]), i == 0 ? r : 4 * r);
    }
  }
}

TEST_F(FastAttention, SecondOrderJvpAndVmap) {
  array q = test::random_array({1, 2, 3, 4}, float64);
  array k = test::random_array({1, 1, 5, 4}, float64);
  array v = test::random_array({1, 1, 5, 4}, float64);
  array y = test::random_array({1, 2, 3, 4}, float64);
  auto outer = [&](bool fused) {
    return ScalarFn([fused, y](const std::vector<array>& a) {
      ScalarFn inner = [fused, y](const std::vector<array>& p) {
        array o = fused
                      ? fast::scaled_dot_product_attention(p[0], p[1], p[2], 0.5f, "causal")
                      : ref_attention(p[0], p[1], p[2], 0.5, "causal", std::nullopt, std::nullopt);
        return sum(multiply(o, y));
      };
      auto g = grad(inner, {0, 1, 2})(a);
      return add(sum(square(g[0])), sum(multiply(g[2], g[1])));
    });
  };
  auto g1 = grad(outer(true), {0, 1, 2})({q, k, v});
  auto g2 = grad(outer(false), {0, 1, 2})({q, k, v});
  for (int i = 0; i < 3; ++i)
    test::expect_allclose(g1[i], g2[i].shape(), test::to_double(g2[i]), 1e-8);
  array tq = test::random_array(q.shape(), float64);
  auto f = [&](const array& a) { return fast::scaled_dot_product_attention(a, k, v, 0.5f); };
  auto fr = [&](const array& a) {
    return ref_attention(a, k, v, 0.5, "", std::nullopt, std::nullopt);
  };
  auto [p1, t1] = jvp(f, q, tq);
  auto [p2, t2] = jvp(fr, q, tq);
  test::expect_allclose(t1, t2.shape(), test::to_double(t2), 1e-9);
  array qs = test::random_array({3, 1, 2, 3, 4}, float64);
  auto vm = vmap(UnaryFn(f))(qs);
  for (int i = 0; i < 3; ++i) {
    array qi = reshape(slice(qs, {i, 0, 0, 0, 0}, {i + 1, 1, 2, 3, 4}), {1, 2, 3, 4});
    test::expect_allclose(slice(vm, {i, 0, 0, 0, 0}, {i + 1, 1, 2, 3, 4}), {1, 1, 2, 3, 4},
                          test::to_double(fr(qi)), 1e-10);
  }
}

// ================================================================ cross_entropy
