// scaled_dot_product_attention's backend switch (kiln/fast_sdpa_backend.h) and, on the GPU
// (KILN_DEVICE=gpu), its cuDNN path: outputs and gradients of q, k and v against float64
// references for bfloat16 and float16, head dims 64 and 128, causal and not, L_q == L_k and
// L_q < L_k (the lower-right causal alignment), grouped-query heads, odd lengths and
// transposed layouts; the cases the path leaves to kiln's kernels; and counters that show
// which path ran. Without a GPU only the switch tests run (the rest skip).
#include <cstdlib>

#include "fast_test.h"
#include "kiln/compile.h"
#include "kiln/fast_primitives.h"
#include "kiln/fast_sdpa_backend.h"

#ifdef KILN_WITH_CUDA
#include "kiln/backend/cuda/fast_attention_cudnn.h"
#endif

using namespace fast_test;

namespace {

/** Sets the backend override for a scope (and clears KILN_SDPA_BACKEND's effect). */
class BackendScope {
 public:
  explicit BackendScope(std::optional<fast::SdpaBackend> b) { fast::set_sdpa_backend(b); }
  ~BackendScope() { fast::set_sdpa_backend(std::nullopt); }
};

/** Sets an environment variable for a scope, restoring the previous value. */
class EnvScope {
 public:
  EnvScope(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~EnvScope() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/** Skips unless the tests run on the GPU with the cuDNN path compiled in; fails when it is
 * compiled in but cannot run (libcudnn.so.9 or libcudart missing: the reason is printed). */
#define REQUIRE_CUDNN_PATH()                                                           \
  do {                                                                                 \
    if (!on_gpu()) GTEST_SKIP() << "the cuDNN path runs on the GPU (KILN_DEVICE=gpu)"; \
    const std::string why = fast::sdpa_cudnn_status();                                 \
    if (why.find("built without") != std::string::npos) GTEST_SKIP() << why;           \
    ASSERT_EQ(why, "") << "the cuDNN path is compiled in but cannot run";              \
  } while (0)

const fast::ScaledDotProductAttention& node_of(const array& o) {
  return dynamic_cast<const fast::ScaledDotProductAttention&>(o.primitive());
}

struct Case {
  int B, Hq, Hk, Lq, Lk, D;
  bool causal;
  bool transposed = false;  // q, k, v as (B, L, H, D) buffers seen as (B, H, L, D)
};

std::string name(const Case& c, Dtype t) {
  return msg("B", c.B, " Hq", c.Hq, " Hk", c.Hk, " Lq", c.Lq, " Lk", c.Lk, " D", c.D,
             c.causal ? " causal" : "", c.transposed ? " transposed" : "", " ", t);
}

/**
 * Runs the attention and its vjp (q, k, v) under the current backend and compares both with
 * float64 references. Returns how many forward and backward calls cuDNN served meanwhile.
 */
std::pair<int64_t, int64_t> check_case(const Case& c, Dtype t, double out_tol = -1,
                                       double grad_tol = -1) {
  SCOPED_TRACE(name(c, t));
  const auto before = fast::sdpa_cudnn_counts();
  array q = random_q(c.B, c.Hq, c.Lq, c.D, t, c.transposed);
  array k = random_q(c.B, c.Hk, c.Lk, c.D, t, c.transposed);
  array v = random_q(c.B, c.Hk, c.Lk, c.D, t, c.transposed);
  array g = test::random_array({c.B, c.Hq, c.Lq, c.D}, t, -1, 1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  const std::string mode = c.causal ? "causal" : "";
  auto [o1, d1] = vjp(
      [&](const std::vector<array>& a) {
        return std::vector<array>{
            fast::scaled_dot_product_attention(a[0], a[1], a[2], scale, mode)};
      },
      {q, k, v}, {g});
  eval(o1[0]);
  eval(d1);
  auto [o2, d2] = vjp(
      [&](const std::vector<array>& a) {
        return std::vector<array>{
            ref_attention(a[0], a[1], a[2], scale, mode, std::nullopt, std::nullopt)};
      },
      {f64(q), f64(k), f64(v)}, {f64(g)});
  const double to = out_tol > 0 ? out_tol : (t == float32 ? 1e-4 : tol(t));
  const double r = grad_tol > 0 ? grad_tol : (t == float32 ? 2e-4 : 4 * tol(t));
  test::expect_allclose(o1[0], {c.B, c.Hq, c.Lq, c.D}, test::to_double(o2[0]), to);
  const Shape shapes[] = {q.shape(), k.shape(), v.shape()};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("gradient of input " + std::to_string(i));
    // dK and dV sum over every query row of the group: their rounding grows with it.
    test::expect_allclose(d1[i], shapes[i], test::to_double(d2[i]), i == 0 ? r : 4 * r);
  }
  const auto after = fast::sdpa_cudnn_counts();
  if (c.transposed) {
    // cuDNN writes out in q's layout and each gradient in its input's: (B, L, H, D) buffers,
    // whose transposes back to (B, L, H * D) need no copy.
    if (after.forward > before.forward) EXPECT_EQ(o1[0].strides(), q.strides());
    if (after.backward > before.backward) {
      EXPECT_EQ(d1[0].strides(), q.strides());
      EXPECT_EQ(d1[1].strides(), k.strides());
      EXPECT_EQ(d1[2].strides(), v.strides());
    }
  }
  return {after.forward - before.forward, after.backward - before.backward};
}

}  // namespace

// ================================================================ the switch (any device)

TEST(SdpaBackendSwitch, ParsesTheThreeNames) {
  EXPECT_EQ(fast::parse_sdpa_backend("kiln"), fast::SdpaBackend::kiln);
  EXPECT_EQ(fast::parse_sdpa_backend("cudnn"), fast::SdpaBackend::cudnn);
  EXPECT_EQ(fast::parse_sdpa_backend("auto"), fast::SdpaBackend::automatic);
  for (auto b : {fast::SdpaBackend::kiln, fast::SdpaBackend::cudnn, fast::SdpaBackend::automatic})
    EXPECT_EQ(fast::parse_sdpa_backend(fast::sdpa_backend_name(b)), b);
}

TEST(SdpaBackendSwitch, RejectsOtherNamesClearly) {
  for (const std::string bad : {"", "CUDNN", "Kiln", "flash", "cudnn ", "automatic"}) {
    SCOPED_TRACE("'" + bad + "'");
    try {
      fast::parse_sdpa_backend(bad);
      ADD_FAILURE() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("[scaled_dot_product_attention]"), std::string::npos) << m;
      EXPECT_NE(m.find("'" + bad + "'"), std::string::npos) << m;
      EXPECT_NE(m.find("'kiln', 'cudnn' or 'auto'"), std::string::npos) << m;
    }
  }
}

TEST(SdpaBackendSwitch, EnvironmentAndOverride) {
  BackendScope none(std::nullopt);
  {
    EnvScope e("KILN_SDPA_BACKEND", nullptr);
    EXPECT_EQ(fast::sdpa_backend(), fast::SdpaBackend::automatic);  // the default
  }
  {
    EnvScope e("KILN_SDPA_BACKEND", "");
    EXPECT_EQ(fast::sdpa_backend(), fast::SdpaBackend::automatic);
  }
  {
    EnvScope e("KILN_SDPA_BACKEND", "cudnn");
    EXPECT_EQ(fast::sdpa_backend(), fast::SdpaBackend::cudnn);
    fast::set_sdpa_backend(fast::SdpaBackend::kiln);  // the override wins
    EXPECT_EQ(fast::sdpa_backend(), fast::SdpaBackend::kiln);
    fast::set_sdpa_backend(std::nullopt);
    EXPECT_EQ(fast::sdpa_backend(), fast::SdpaBackend::cudnn);
  }
  {
    EnvScope e("KILN_SDPA_BACKEND", "auto");
    EXPECT_EQ(fast::sdpa_backend(), fast::SdpaBackend::automatic);
  }
  {
    EnvScope e("KILN_SDPA_BACKEND", "fastest");
    try {
      fast::sdpa_backend();
      ADD_FAILURE() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& ex) {
      const std::string m = ex.what();
      EXPECT_NE(m.find("KILN_SDPA_BACKEND='fastest'"), std::string::npos) << m;
      EXPECT_NE(m.find("'kiln', 'cudnn' or 'auto'"), std::string::npos) << m;
    }
    // The switch only concerns the GPU: CPU attention is unaffected by a bad value.
    array q = test::random_array({1, 2, 3, 8}, float32);
    array o = fast::scaled_dot_product_attention(q, q, q, 0.5f, "", std::nullopt, std::nullopt,
                                                 Device::cpu);
    EXPECT_FALSE(node_of(o).cudnn());
    eval(o);
    if (on_gpu()) {
      EXPECT_THROW(fast::scaled_dot_product_attention(q, q, q, 0.5f), std::invalid_argument);
    }
  }
}

TEST(SdpaBackendSwitch, CpuNodesNeverTakeCudnn) {
  BackendScope b(fast::SdpaBackend::cudnn);
  array q = test::random_array({1, 2, 64, 64}, bfloat16);
  array o = fast::scaled_dot_product_attention(q, q, q, 0.125f, "causal", std::nullopt,
                                               std::nullopt, Device::cpu);
  EXPECT_FALSE(node_of(o).cudnn());
  const auto c = fast::sdpa_cudnn_counts();
  eval(o);
  const auto c2 = fast::sdpa_cudnn_counts();
  EXPECT_EQ(c2.forward, c.forward);
  EXPECT_NO_THROW((void)fast::sdpa_cudnn_status());  // a reason or "", on any machine
}

// ================================================================ graphs, without a GPU

#ifdef KILN_WITH_CUDA
TEST(SdpaCudnnGraphs, HopperGraphsPassTheFrontendsValidation) {
  // The graphs kiln builds, for sm_90, checked by cudnn-frontend's validation without a device
  // (cuDNN's own support check needs the GPU). Needs the path compiled in and libcudnn.so.9.
  const std::string why = fast::cudnn_sdpa::status();
  if (!why.empty()) GTEST_SKIP() << why;
  for (Dtype t : {bfloat16, float16}) {
    for (int D : {64, 128}) {
      for (bool causal : {false, true}) {
        for (auto [Lq, Lk] : std::vector<std::pair<int, int>>{{77, 77}, {77, 300}, {512, 512}}) {
          SCOPED_TRACE(name({2, 8, 2, Lq, Lk, D, causal}, t));
          EXPECT_EQ(fast::cudnn_sdpa::validate_offline(t, {2, 8, Lq, D}, {2, 2, Lk, D},
                                                       {2, 2, Lk, D}, 0.125f, causal, 90),
                    "");
        }
      }
    }
  }
  EXPECT_EQ(fast::cudnn_sdpa::validate_offline(bfloat16, {32, 12, 512, 64}, {32, 12, 512, 64},
                                               {32, 12, 512, 64}, 0.125f, true, 90),
            "");
  // The validation is real: what the node flag keeps away from cuDNN fails it.
  const std::string lq_gt_lk = fast::cudnn_sdpa::validate_offline(
      bfloat16, {1, 2, 300, 64}, {1, 2, 77, 64}, {1, 2, 77, 64}, 0.125f, true, 90);
  EXPECT_NE(lq_gt_lk.find("ottom right"), std::string::npos) << lq_gt_lk;
  EXPECT_NE(fast::cudnn_sdpa::validate_offline(bfloat16, {1, 2, 9, 12}, {1, 2, 9, 12},
                                               {1, 2, 9, 12}, 0.125f, false, 90),
            "");
}
#endif

// ================================================================ the cuDNN path (GPU)

TEST(SdpaCudnn, StatusSaysWhy) {
  if (!on_gpu()) GTEST_SKIP() << "GPU only";
  const std::string why = fast::sdpa_cudnn_status();
  std::cout << "[ sdpa     ] cuDNN path: " << (why.empty() ? "available" : why) << std::endl;
  REQUIRE_CUDNN_PATH();
}

TEST(SdpaCudnn, NodeFlagFollowsTheSwitchAndTheProblem) {
  REQUIRE_CUDNN_PATH();
  auto flag = [](Dtype t, Shape qs, Shape ks, const std::string& mode,
                 std::optional<array> mask = std::nullopt, bool sinks = false) {
    array q = test::random_array(qs, t), k = test::random_array(ks, t);
    std::optional<array> sk;
    if (sinks) sk = test::random_array({qs[1]}, t);
    return node_of(fast::scaled_dot_product_attention(q, k, k, 0.1f, mode, mask, sk)).cudnn();
  };
  {
    BackendScope b(fast::SdpaBackend::kiln);
    EXPECT_FALSE(flag(bfloat16, {2, 8, 77, 64}, {2, 2, 77, 64}, "causal"));
  }
  BackendScope b(fast::SdpaBackend::cudnn);
  EXPECT_TRUE(flag(bfloat16, {2, 8, 77, 64}, {2, 2, 77, 64}, "causal"));
  EXPECT_TRUE(flag(float16, {2, 8, 77, 128}, {2, 2, 300, 128}, ""));
  EXPECT_TRUE(flag(bfloat16, {1, 4, 1, 64}, {1, 1, 300, 64}, ""));  // decode: cudnn takes it
  EXPECT_FALSE(flag(float32, {2, 8, 77, 64}, {2, 2, 77, 64}, "causal"));
  EXPECT_FALSE(flag(bfloat16, {2, 8, 300, 64}, {2, 2, 77, 64}, "causal"));  // L_q > L_k
  EXPECT_FALSE(flag(bfloat16, {1, 2, 9, 256}, {1, 2, 9, 256}, ""));         // D > 128
  EXPECT_FALSE(flag(bfloat16, {1, 2, 9, 36}, {1, 2, 9, 36}, ""));           // D % 8 != 0
  EXPECT_FALSE(
      flag(bfloat16, {1, 2, 9, 64}, {1, 2, 9, 64}, "", test::random_array({9, 9}, bool_, 0, 1.3)));
  EXPECT_FALSE(flag(bfloat16, {1, 2, 9, 64}, {1, 2, 9, 64}, "", std::nullopt, true));  // sinks
  {
    BackendScope a(fast::SdpaBackend::automatic);
    EXPECT_FALSE(flag(bfloat16, {1, 4, 1, 64}, {1, 1, 300, 64}, ""));  // decode stays on kiln
    EXPECT_TRUE(flag(bfloat16, {2, 8, 77, 64}, {2, 2, 77, 64}, "causal"));
  }
}

TEST(SdpaCudnn, OutputsAndGradientsMatchFloat64) {
  REQUIRE_CUDNN_PATH();
  BackendScope b(fast::SdpaBackend::cudnn);
  int n = 0;
  for (Dtype t : {bfloat16, float16}) {
    for (int D : {64, 128}) {
      for (bool causal : {false, true}) {
        for (auto [Lq, Lk] : std::vector<std::pair<int, int>>{{77, 77}, {77, 300}, {300, 300}}) {
          // GQA 8:2, batch 2; every other case reads q, k, v through a transposed layout.
          const Case c{2, 8, 2, Lq, Lk, D, causal, (n++ % 2) == 1};
          auto [f, bw] = check_case(c, t);
          EXPECT_EQ(f, 1) << name(c, t) << ": the forward did not run on cuDNN";
          EXPECT_EQ(bw, 1) << name(c, t) << ": the backward did not run on cuDNN";
        }
      }
    }
  }
}

TEST(SdpaCudnn, MultiQueryShortAndSingleRowCases) {
  REQUIRE_CUDNN_PATH();
  BackendScope b(fast::SdpaBackend::cudnn);
  for (const Case& c : {Case{1, 8, 1, 33, 129, 64, true}, Case{3, 4, 4, 1, 77, 64, false},
                        Case{1, 4, 2, 5, 5, 128, true}, Case{2, 2, 2, 512, 512, 64, true}}) {
    auto [f, bw] = check_case(c, bfloat16);
    // cuDNN may reject a shape (then kiln's kernels serve it, decision cached): either way
    // the results above must match; report which ran.
    std::cout << "[ sdpa     ] " << name(c, bfloat16) << ": forward on " << (f ? "cuDNN" : "kiln")
              << ", backward on " << (bw ? "cuDNN" : "kiln") << std::endl;
    // cuDNN's backward only ever follows cuDNN's forward (a rejected backward after an
    // accepted forward recomputes kiln's forward for kiln's backward: still right).
    EXPECT_GE(f, bw) << "the backward ran cuDNN after kiln's forward";
  }
}

TEST(SdpaCudnn, UnsupportedProblemsFallBackToKilnAndStayRight) {
  REQUIRE_CUDNN_PATH();
  BackendScope b(fast::SdpaBackend::cudnn);
  // float32, L_q > L_k causal, D = 256: kiln's kernels (no cuDNN call at all).
  for (auto [c, t] :
       std::vector<std::pair<Case, Dtype>>{{{2, 8, 2, 77, 77, 64, true}, float32},
                                           {{1, 4, 2, 300, 77, 64, true}, bfloat16},
                                           {{1, 2, 2, 40, 40, 256, false}, bfloat16}}) {
    auto [f, bw] = check_case(c, t);
    EXPECT_EQ(f, 0) << name(c, t);
    EXPECT_EQ(bw, 0) << name(c, t);
  }
  // An array mask: kiln's kernels, right results.
  const auto before = fast::sdpa_cudnn_counts();
  array q = random_q(2, 8, 77, 64, bfloat16, false);
  array k = random_q(2, 2, 77, 64, bfloat16, false);
  array v = random_q(2, 2, 77, 64, bfloat16, false);
  array m = test::random_array({77, 77}, bool_, 0, 1.3);
  array o = fast::scaled_dot_product_attention(q, k, v, 0.125f, "", m);
  array r = ref_attention(q, k, v, 0.125, "", m, std::nullopt);
  test::expect_allclose(o, {2, 8, 77, 64}, test::to_double(r), tol(bfloat16));
  EXPECT_EQ(fast::sdpa_cudnn_counts().forward, before.forward);
}

TEST(SdpaCudnn, NodesKeepTheBackendTheyWereBuiltWith) {
  REQUIRE_CUDNN_PATH();
  array q = random_q(2, 8, 77, 64, bfloat16, false);
  array k = random_q(2, 2, 77, 64, bfloat16, false);
  std::optional<array> o;
  {
    BackendScope b(fast::SdpaBackend::kiln);
    o = fast::scaled_dot_product_attention(q, k, k, 0.125f, "causal");
  }
  BackendScope b(fast::SdpaBackend::cudnn);
  const auto before = fast::sdpa_cudnn_counts();
  eval(*o);
  EXPECT_EQ(fast::sdpa_cudnn_counts().forward, before.forward);
  array r = ref_attention(q, k, k, 0.125, "causal", std::nullopt, std::nullopt);
  test::expect_allclose(*o, {2, 8, 77, 64}, test::to_double(r), tol(bfloat16));
}

TEST(SdpaCudnn, CompileAndVmap) {
  REQUIRE_CUDNN_PATH();
  BackendScope b(fast::SdpaBackend::cudnn);
  array q = random_q(2, 8, 77, 64, bfloat16, false);
  array k = random_q(2, 2, 77, 64, bfloat16, false);
  array v = random_q(2, 2, 77, 64, bfloat16, false);
  array g = test::random_array({2, 8, 77, 64}, bfloat16, -1, 1);
  // compile(value and gradient): the traced nodes carry the flag, so cuDNN runs.
  ArrayFn step = compile([g](const std::vector<array>& a) {
    auto [o, d] = vjp(
        [](const std::vector<array>& x) {
          return std::vector<array>{
              fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.125f, "causal")};
        },
        a, {g});
    return std::vector<array>{o[0], d[0], d[1], d[2]};
  });
  const auto before = fast::sdpa_cudnn_counts();
  auto out = step({q, k, v});
  eval(out);
  const auto after = fast::sdpa_cudnn_counts();
  EXPECT_GE(after.forward - before.forward, 1);
  EXPECT_GE(after.backward - before.backward, 1);
  auto [o2, d2] = vjp(
      [](const std::vector<array>& a) {
        return std::vector<array>{
            ref_attention(a[0], a[1], a[2], 0.125, "causal", std::nullopt, std::nullopt)};
      },
      {f64(q), f64(k), f64(v)}, {f64(g)});
  test::expect_allclose(out[0], {2, 8, 77, 64}, test::to_double(o2[0]), tol(bfloat16));
  for (int i = 0; i < 3; ++i) {
    test::expect_allclose(out[1 + i], d2[i].shape(), test::to_double(d2[i]),
                          (i == 0 ? 4 : 16) * tol(bfloat16));
  }
  // vmap runs the unfused form: right results whatever the backend.
  array qs = test::random_array({3, 1, 2, 9, 64}, bfloat16, -1, 1);
  array kk = test::random_array({1, 2, 9, 64}, bfloat16, -1, 1);
  auto f = [&](const array& a) { return fast::scaled_dot_product_attention(a, kk, kk, 0.125f); };
  array vm = vmap(UnaryFn(f))(qs);
  for (int i = 0; i < 3; ++i) {
    array qi = reshape(slice(qs, {i, 0, 0, 0, 0}, {i + 1, 1, 2, 9, 64}), {1, 2, 9, 64});
    array r = ref_attention(qi, kk, kk, 0.125, "", std::nullopt, std::nullopt);
    test::expect_allclose(slice(vm, {i, 0, 0, 0, 0}, {i + 1, 1, 2, 9, 64}), {1, 1, 2, 9, 64},
                          test::to_double(r), tol(bfloat16));
  }
}
