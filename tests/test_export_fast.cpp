// Exported functions keep the fused fast kernels: a training step's gradient through rope,
// rms_norm, layer_norm, softmax and cross_entropy comes back from import_function as the same fused
// primitives (forward and vjp), with the values of direct evaluation; a file whose inputs do
// not fit a fused kernel is refused.
#include <unistd.h>

#include <filesystem>

#include "graph_test.h"
#include "kiln/export.h"
#include "kiln/export_state.h"
#include "kiln/fast.h"
#include "kiln/fast_primitives.h"
#include "test_utils.h"

using namespace kiln;

namespace {

std::string temp_path(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("kiln_export_fast_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A small model's loss: rope on (B, H, T, D) activations, both norms and fused_rms_silu, then
// cross entropy
// against int32 targets. Inputs: x (2, 2, 4, 8), w (8), b (8), targets (2, 2, 4).
std::vector<array> model_loss(const std::vector<array>& in) {
  array h = fast::rope(in[0], 8, false, 10000.0f, 1.0f, 3);
  h = fast::rms_norm(h, in[1], 1e-5f);
  h = fast::layer_norm(h, in[1], in[2], 1e-5f);
  h = fast::fused_rms_silu(h, in[1], 1e-5f);
  h = multiply(h, softmax(h, -1));
  return {mean(fast::cross_entropy(h, in[3]))};
}

std::vector<array> step_inputs() {
  return {test::random_array({2, 2, 4, 8}, float32), test::random_array({8}, float32, 0.5, 1.5),
          test::random_array({8}, float32),
          astype(test::random_array({2, 2, 4}, float32, 0, 7.99), int32)};
}

// The imported function's outputs against direct evaluation.
void expect_near(const std::vector<array>& got, const std::vector<array>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    auto g = test::to_double(got[i]), w = test::to_double(want[i]);
    ASSERT_EQ(g.size(), w.size());
    for (size_t j = 0; j < g.size(); ++j) EXPECT_NEAR(g[j], w[j], 1e-5 + 1e-5 * std::abs(w[j]));
  }
}

}  // namespace

TEST(ExportFast, GradientsKeepTheirFusedKernels) {
  const std::string path = temp_path("step.kilnfn");
  auto step = value_and_grad(ArrayFn(model_loss), std::vector<int>{0, 1, 2});
  ArrayFn flat = [step](const std::vector<array>& in) {
    auto [values, grads] = step(in);
    values.insert(values.end(), grads.begin(), grads.end());
    return values;
  };
  export_function(path, flat, step_inputs());
  ImportedFunction f = import_function(path);
  for (int round = 0; round < 3; ++round) {  // fresh inputs each round
    auto x = step_inputs();
    auto got = f(x);
    auto names = test::graph_primitives(got);
    for (const char* p :
         {"RoPE", "RMSNorm", "RMSNormSiLU", "RMSNormVJP", "LayerNorm", "LayerNormVJP",
          "CrossEntropy", "CrossEntropyVJP", "Softmax", "SoftmaxVJP"}) {
      EXPECT_GE(names.count(p), 1u) << p << " was exported unfused";
    }
    EXPECT_EQ(names.count("RoPE"), 2u);  // the forward and its transpose (the vjp)
    expect_near(got, flat(x));
  }
  std::filesystem::remove(path);
}

// Attention's gradient comes back fused too, for each mask kind and with sinks: the loader
// rebuilds the forward on the primals and takes its cuDNN flag (false on the CPU).
TEST(ExportFast, AttentionGradientKeepsItsFusedKernel) {
  struct Case {
    std::string mode;
    bool array_mask, sinks;
  };
  for (const Case& c :
       {Case{"", false, false}, Case{"causal", false, true}, Case{"array", true, false}}) {
    SCOPED_TRACE(c.mode + (c.sinks ? " with sinks" : ""));
    const std::string path = temp_path("attn.kilnfn");
    ArrayFn loss = [c](const std::vector<array>& in) {
      std::optional<array> mask, sinks;
      size_t k = 3;
      if (c.array_mask) mask = in[k++];
      if (c.sinks) sinks = in[k++];
      array o = fast::scaled_dot_product_attention(in[0], in[1], in[2], 0.35f, c.mode, mask, sinks);
      return std::vector<array>{sum(multiply(o, o))};
    };
    auto grad = value_and_grad(loss, std::vector<int>{0, 1, 2});
    ArrayFn flat = [grad](const std::vector<array>& in) {
      auto [values, grads] = grad(in);
      values.insert(values.end(), grads.begin(), grads.end());
      return values;
    };
    auto inputs = [&c] {
      std::vector<array> x{test::random_array({2, 4, 5, 8}, float32),
                           test::random_array({2, 2, 7, 8}, float32),
                           test::random_array({2, 2, 7, 8}, float32)};
      if (c.array_mask) x.push_back(test::random_array({2, 4, 5, 7}, float32, -1, 0));
      if (c.sinks) x.push_back(test::random_array({4}, float32));
      return x;
    };
    export_function(path, flat, inputs());
    ImportedFunction f = import_function(path);
    for (int round = 0; round < 2; ++round) {
      auto x = inputs();
      auto got = f(x);
      auto names = test::graph_primitives(got);
      EXPECT_EQ(names.count("ScaledDotProductAttentionVJP"), 1u) << "exported unfused";
      expect_near(got, flat(x));
    }
    std::filesystem::remove(path);
  }
}

// The rebuilt primitives' loaders check the saved input shapes and dtypes as the kernels need
// them: a damaged file is refused with the primitive's name, never run.
TEST(ExportFast, LoadersRefuseInputsTheKernelCannotTake) {
  const auto& reg = export_detail::registry();
  const Stream s = default_stream(Device(Device::cpu));
  auto load = [&](const fast::Custom& prim, const std::vector<Shape>& shapes,
                  const std::vector<Dtype>& dtypes) {
    const auto* codec = reg.by_type(prim);
    ASSERT_NE(codec, nullptr) << prim.name();
    ASSERT_TRUE(codec->load_inputs) << prim.name();
    export_detail::StateWriter w;
    codec->save(prim, w);
    auto state = w.take();
    export_detail::StateReader r(state, codec->key);
    test::expect_throw_with<std::runtime_error>([&] { codec->load_inputs(r, s, shapes, dtypes); },
                                                {prim.name(), "inputs that do not fit"});
  };
  auto rope = fast::make_rope(s, 8, false, 10000.0f, 1.0f, true);
  load(*rope, {{2, 4, 8}, {}}, {float32, float32});              // a float offset
  load(*rope, {{2, 4, 8}, {3}}, {float32, int32});               // 3 offsets for a batch of 2
  load(*rope, {{2, 4, 6}, {}}, {float32, int32});                // dims past the last axis
  load(*rope, {{4, 8}, {}}, {float32, int32});                   // rank 2
  load(*rope, {{2, 4, 8}, {}, {3}}, {float32, int32, float32});  // 3 frequencies, not 4
  auto rms = fast::make_rms_norm_vjp(s, 1e-5f, true);
  load(*rms, {{4, 8}, {4}, {4, 8}}, {float32, float32, float32});  // weight of the wrong size
  load(*rms, {{4, 8}, {8}, {4, 7}}, {float32, float32, float32});  // cotangent unlike x
  load(*rms, {{4, 8}, {4, 8}}, {float32, float32});                // weight missing
  auto ln = fast::make_layer_norm_vjp(s, 1e-5f, false, true);
  load(*ln, {{4, 8}, {4, 8}}, {int32, int32});  // an integer x
  auto ce = fast::make_cross_entropy(s);
  load(*ce, {{4, 8}, {5}}, {float32, int32});    // targets of the wrong rows
  load(*ce, {{4, 8}, {4}}, {float32, float32});  // float targets
  auto ce_vjp = fast::make_cross_entropy_vjp(s);
  load(*ce_vjp, {{4, 8}, {4}, {4}, {3}}, {float32, int32, float32, float32});
  auto attn = fast::make_sdpa_vjp(s, 0.35f, fast::MaskKind::causal, false, false);
  const Shape q{2, 4, 5, 8}, kv{2, 2, 7, 8}, o{2, 4, 5, 8}, lse{2, 4, 5};
  load(*attn, {q, kv, kv, o, lse}, {float32, float32, float32, float32, float32});  // no cotangent
  load(*attn, {q, kv, kv, {2, 4, 5, 7}, lse, o},
       {float32, float32, float32, float32, float32, float32});  // an output unlike v's rows
  load(*attn, {q, kv, kv, o, {2, 4}, o},
       {float32, float32, float32, float32, float32, float32});  // a logsumexp of the wrong shape
  load(*attn, {q, kv, kv, o, lse, o},
       {float32, float32, float32, float16, float32, float16});  // outputs of another dtype
  auto sm = fast::make_softmax_vjp(s);
  load(*sm, {{4, 8}, {4, 7}}, {float32, float32});  // cotangent unlike y
  load(*sm, {{4, 8}, {4, 8}}, {int32, int32});      // integers
  load(*sm, {{}, {}}, {float32, float32});          // a scalar
}
