// fast::fused_rms_silu (MLX's mx.fast.fused_rms_silu): silu(rms_norm(x, weight, eps)) in one
// pass, on the default device (KILN_DEVICE=gpu runs the GPU kernels), against a float64
// reference on the CPU: every float dtype, with and without a weight, rows of the GPU's
// register, shared-memory (staged) and looped kernels, non-contiguous and empty inputs;
// gradients against finite differences in float64 and against the composition's; vmap;
// argument checks.
#include "fast_test.h"

using namespace fast_test;

namespace {

array ref_rms_silu(const array& x, const std::optional<array>& w, double eps) {
  array h = ref_rms_norm(x, w, eps);
  return multiply(h, sigmoid(h, kCpu), kCpu);
}

}  // namespace

TEST(FastRmsSilu, MatchesFloat64Reference) {
  for (Dtype t : {float32, float16, bfloat16, float64}) {
    // {140, 17000}: 16-bit rows through the GPU's staged kernel; {3, 40000}: looped rows.
    for (const Shape& shape :
         std::vector<Shape>{{2, 31}, {3, 4, 32}, {5, 1000}, {4099}, {140, 17000}, {3, 40000}}) {
      array x = test::random_array(shape, t, -3, 3);
      array w = test::random_array({shape.back()}, t, 0.5, 1.5);
      for (bool with_w : {true, false}) {
        SCOPED_TRACE(msg(t, " ", shape_str(shape), with_w ? " weight" : ""));
        std::optional<array> wo = with_w ? std::optional(w) : std::nullopt;
        array y = fast::fused_rms_silu(x, wo, 1e-5f);
        EXPECT_EQ(y.dtype(), t);
        test::expect_allclose(y, shape, test::to_double(ref_rms_silu(x, wo, 1e-5)), tol(t));
      }
    }
  }
}

TEST(FastRmsSilu, StridesEmptyAndPromotion) {
  array x = test::random_array({64, 6}, float32, -2, 2);
  array xt = transpose(x);  // rows of a transposed view
  array w = test::random_array({64}, float16, 0.5, 1.5);
  array y = fast::fused_rms_silu(xt, w, 1e-6f);
  EXPECT_EQ(y.dtype(), float32);
  test::expect_allclose(y, {6, 64}, test::to_double(ref_rms_silu(xt, w, 1e-6)), tol(float32));
  EXPECT_EQ(fast::fused_rms_silu(zeros({0, 5}), ones({5}), 1e-5f).shape(), (Shape{0, 5}));
}

TEST(FastRmsSilu, GradientsMatchFiniteDifferencesAndComposition) {
  array x = test::random_array({3, 7}, float64, -2, 2);
  array w = test::random_array({7}, float64, 0.5, 1.5);
  check_grad([](const auto& a) { return fast::fused_rms_silu(a[0], a[1], 1e-5f); }, {x, w}, {0, 1});
  check_grad([](const auto& a) { return fast::fused_rms_silu(a[0], std::nullopt, 1e-5f); }, {x},
             {0});
  // float32 rows through the fused gradient against the composition's.
  array xf = test::random_array({6, 1000}, float32, -2, 2);
  array wf = test::random_array({1000}, float32, 0.5, 1.5);
  array g = test::random_array({6, 1000}, float32, -1, 1);
  auto [o1, v1] = vjp(
      [](const std::vector<array>& a) {
        return std::vector<array>{fast::fused_rms_silu(a[0], a[1], 1e-5f)};
      },
      {xf, wf}, {g});
  auto [o2, v2] = vjp(
      [](const std::vector<array>& a) {
        return std::vector<array>{ref_rms_silu(a[0], a[1], 1e-5)};
      },
      {f64(xf), f64(wf)}, {f64(g)});
  test::expect_allclose(v1[0], xf.shape(), test::to_double(v2[0]), 4 * tol(float32));
  test::expect_allclose(v1[1], wf.shape(), test::to_double(v2[1]), 8 * tol(float32));
}

TEST(FastRmsSilu, VmapAndArgumentChecks) {
  array xs = test::random_array({3, 4, 16}, float32, -2, 2);
  array w = test::random_array({16}, float32, 0.5, 1.5);
  array vm = vmap([&](const array& a) { return fast::fused_rms_silu(a, w, 1e-5f); }, 1, 0)(xs);
  test::expect_allclose(vm, {4, 3, 16},
                        test::to_double(ref_rms_silu(transpose(xs, {1, 0, 2}), w, 1e-5)),
                        tol(float32));
  expect_invalid([] { fast::fused_rms_silu(array(1.0f), std::nullopt, 1e-5f); },
                 "[fused_rms_silu]");
  expect_invalid([] { fast::fused_rms_silu(ones({4, 8}), ones({4}), 1e-5f); }, "[fused_rms_silu]");
  expect_invalid(
      [] {
        fast::fused_rms_silu(ones({4, 8}, int32), std::nullopt, 1e-5f);
      },
      "[fused_rms_silu]");
  // The process and other arrays stay usable.
  EXPECT_EQ(fast::fused_rms_silu(ones({2, 8}), std::nullopt, 1e-5f).shape(), (Shape{2, 8}));
}
