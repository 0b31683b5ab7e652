// Shared pieces of the fused built-ins' tests (test_fast_builtins.cpp, test_fast_attention.cpp):
// float64 references written independently of the primitives, tolerances, finite
// differences and argument-check helpers.
#pragma once

#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

#include "kiln/fast.h"
#include "test_utils.h"

#ifdef KILN_WITH_CUDA
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/gpu.h"
#endif

using namespace kiln;

namespace fast_test {

inline constexpr Device kCpu = Device::cpu;
inline const double kLowest = std::numeric_limits<float>::lowest();

inline array f64(const array& a) {
  return astype(a, float64, kCpu);
}

inline bool on_gpu() {
  return test::test_device().type == Device::gpu;
}

/** Tolerance of a fused result in dtype d against a float64 reference (the final rounding
 * of half types, float32 accumulation otherwise). */
inline double tol(Dtype d) {
  if (d == float64) return 1e-10;
  if (d == float32) return 2e-5;
  return test::tolerance(d);
}

template <typename F>
void expect_invalid(F&& f, const std::string& tag) {
  test::expect_throw_with<std::invalid_argument>(f, {tag});
}

// ---------------------------------------------------------------- finite differences

/**
 * Checks the gradient of sum(f(inputs) * u), u random, with respect to each input in
 * `argnums` against central differences (float64 inputs; up to `samples` elements each).
 */
inline void check_grad(const std::function<array(const std::vector<array>&)>& f,
                       std::vector<array> inputs, const std::vector<int>& argnums,
                       double rtol = 1e-6, double eps = 1e-6, int samples = 24) {
  const array y0 = f(inputs);
  const array u = test::random_array(y0.shape(), y0.dtype(), -1, 1);
  ScalarFn loss = [&](const std::vector<array>& x) { return sum(multiply(f(x), u)); };
  auto grads = grad(loss, argnums)(inputs);
  std::uniform_int_distribution<size_t> pick;
  for (size_t k = 0; k < argnums.size(); ++k) {
    const int a = argnums[k];
    std::vector<double> x = test::to_double(inputs[a]);
    std::vector<double> g = test::to_double(grads[k]);
    ASSERT_EQ(g.size(), x.size());
    const size_t n = std::min<size_t>(x.size(), samples);
    for (size_t s = 0; s < n; ++s) {
      const size_t i = x.size() <= static_cast<size_t>(samples) ? s : pick(test::rng()) % x.size();
      auto eval_at = [&](double v) {
        std::vector<double> xv = x;
        xv[i] = v;
        std::vector<array> in = inputs;
        in[a] = array(xv.begin(), inputs[a].shape(), float64);
        return loss(in).item<double>();
      };
      const double fd = (eval_at(x[i] + eps) - eval_at(x[i] - eps)) / (2 * eps);
      EXPECT_NEAR(g[i], fd, rtol * (1 + std::abs(fd)))
          << "input " << a << " element " << i << " (seed " << test::seed() << ")";
    }
  }
}

// ---------------------------------------------------------------- references

// eps is rounded to float as the ops take it.
inline array ref_rms_norm(const array& x, const std::optional<array>& w, double eps) {
  eps = static_cast<float>(eps);
  array x64 = f64(x);
  array y = multiply(
      x64, rsqrt(add(mean(square(x64, kCpu), -1, true, kCpu), array(eps, float64), kCpu), kCpu),
      kCpu);
  return w ? multiply(y, f64(*w), kCpu) : y;
}

inline array ref_layer_norm(const array& x, const std::optional<array>& w,
                            const std::optional<array>& b, double eps) {
  eps = static_cast<float>(eps);
  array x64 = f64(x);
  array xc = subtract(x64, mean(x64, -1, true, kCpu), kCpu);
  array v = mean(square(xc, kCpu), -1, true, kCpu);
  array y = multiply(xc, rsqrt(add(v, array(eps, float64), kCpu), kCpu), kCpu);
  if (w) y = multiply(y, f64(*w), kCpu);
  if (b) y = add(y, f64(*b), kCpu);
  return y;
}

/** rope by a loop in double: x (B, *, T, D); offsets has one or B entries. */
inline std::vector<double> ref_rope(const array& x, int dims, bool traditional, double base,
                                    double scale, const std::vector<int>& offsets,
                                    const std::vector<double>& freqs = {}, bool forward = true) {
  std::vector<double> v = test::to_double(x);
  const int nd = static_cast<int>(x.ndim());
  const int64_t B = x.shape(0), T = x.shape(nd - 2), D = x.shape(nd - 1);
  const int64_t rows = x.size() / D, per_batch = rows / B;
  const int half = dims / 2;
  std::vector<double> out = v;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / per_batch, t = r % T;
    const double pos = (offsets[offsets.size() > 1 ? b : 0] + t) * scale;
    for (int i = 0; i < half; ++i) {
      const double inv =
          freqs.empty() ? std::pow(base, -static_cast<double>(i) / half) : 1.0 / freqs[i];
      const double th = pos * inv * (forward ? 1 : -1);
      const int64_t j1 = traditional ? 2 * i : i, j2 = traditional ? 2 * i + 1 : i + half;
      const double a = v[r * D + j1], c = v[r * D + j2];
      out[r * D + j1] = a * std::cos(th) - c * std::sin(th);
      out[r * D + j2] = a * std::sin(th) + c * std::cos(th);
    }
  }
  return out;
}

/** Attention in float64 from core ops on the CPU, k and v tiled to the query heads. mode:
 * "", "causal"; mask: bool (false hides: lowest float32 score, as MLX's composite) or
 * additive. */
inline array ref_attention(const array& q, const array& k, const array& v, double scale,
                           const std::string& mode, const std::optional<array>& mask,
                           const std::optional<array>& sinks) {
  const int Hq = q.shape(1), Hk = k.shape(1), Lq = q.shape(2), Lk = k.shape(2);
  auto tile_heads = [&](const array& a) {
    std::vector<array> heads;
    for (int h = 0; h < Hq; ++h)
      heads.push_back(slice(f64(a), {0, h / (Hq / Hk), 0, 0},
                            {a.shape(0), h / (Hq / Hk) + 1, a.shape(2), a.shape(3)}, kCpu));
    return concatenate(heads, 1, kCpu);
  };
  array s = multiply(matmul(f64(q), swapaxes(tile_heads(k), 2, 3, kCpu), kCpu),
                     array(scale, float64), kCpu);
  if (mode == "causal") {
    array qi = reshape(arange(Lk - Lq, Lk, kCpu), {Lq, 1}, kCpu);
    array ki = reshape(arange(0, Lk, kCpu), {1, Lk}, kCpu);
    s = where(greater_equal(qi, ki, kCpu), s, array(kLowest, float64), kCpu);
  } else if (mask) {
    s = mask->dtype() == bool_ ? where(*mask, s, array(kLowest, float64), kCpu)
                               : add(s, f64(*mask), kCpu);
  }
  if (sinks) {
    array sk =
        broadcast_to(reshape(f64(*sinks), {1, Hq, 1, 1}, kCpu), {q.shape(0), Hq, Lq, 1}, kCpu);
    s = concatenate({sk, s}, 3, kCpu);
  }
  array p = softmax(s, -1, kCpu);
  if (sinks) p = slice(p, {0, 0, 0, 1}, p.shape(), kCpu);
  return matmul(p, tile_heads(v), kCpu);
}

inline array random_q(int B, int H, int L, int D, Dtype t, bool transposed_layout) {
  // A (B, L, H, D) tensor seen as (B, H, L, D): the layout of projections split into heads.
  if (transposed_layout) return swapaxes(test::random_array({B, L, H, D}, t, -1, 1), 1, 2);
  return test::random_array({B, H, L, D}, t, -1, 1);
}

}  // namespace fast_test
