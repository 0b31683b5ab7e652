// Quantization: quantize / dequantize / quantized_matmul / gather_qmm against a float64 loop
// over MLX's packed layout (every mode, bits and group size, transposed and not, batch sizes
// 1, 3, 16, 17 and more, float32/float16/bfloat16), round-trip bounds, and argument errors.
// Runs on the default device (KILN_DEVICE=gpu for the GPU kernels).
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "kiln/quantized.h"
#include "test_utils.h"

namespace kiln {
namespace {

using test::random_array;
using test::to_double;

constexpr double kFP4[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};

double fp8(uint32_t c) {
  const int e = (c >> 3) & 15, m = c & 7;
  double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7);
  return (c & 0x80) ? -v : v;
}

// Dequantized rows of (rows, K) from the packed words, as float64 (the reference).
std::vector<double> ref_dequantize(const array& wq, const array& scales,
                                   const std::optional<array>& biases, int gs, int bits,
                                   const std::string& mode) {
  array w = astype(wq, uint64);
  std::vector<double> words = to_double(wq);
  std::vector<double> s = to_double(scales);
  std::vector<double> b = biases ? to_double(*biases) : std::vector<double>{};
  const int64_t wpr = wq.shape(-1), K = wpr * 32 / bits, rows = wq.size() / wpr;
  std::vector<double> out(rows * K);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < K; ++k) {
      uint64_t code = 0;
      for (int i = 0; i < bits; ++i) {
        const int64_t bit = k * bits + i;
        const uint64_t word = static_cast<uint64_t>(words[r * wpr + bit / 32]);
        code |= ((word >> (bit % 32)) & 1u) << i;
      }
      const int64_t g = r * (K / gs) + k / gs;
      double v;
      if (mode == "affine") {
        v = s[g] * static_cast<double>(code) + b[g];
      } else {
        const double sc = mode == "nvfp4" ? fp8(static_cast<uint32_t>(s[g]))
                                          : std::ldexp(1.0, static_cast<int>(s[g]) - 127);
        v = (mode == "mxfp8" ? fp8(static_cast<uint32_t>(code)) : kFP4[code]) * sc;
      }
      out[r * K + k] = v;
    }
  }
  return out;
}

struct Case {
  std::string mode;
  int gs, bits;
};

std::vector<Case> all_cases() {
  std::vector<Case> v;
  for (int b : {1, 2, 3, 4, 5, 6, 8})
    for (int g : {32, 64, 128}) v.push_back({"affine", g, b});
  v.push_back({"mxfp4", 32, 4});
  v.push_back({"mxfp8", 32, 8});
  v.push_back({"nvfp4", 16, 4});
  return v;
}

TEST(Quantized, RoundTripMatchesTheReferenceForEveryMode) {
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.mode + " bits " + std::to_string(c.bits) + " gs " + std::to_string(c.gs));
    array w = random_array({5, 3 * c.gs}, float32, -3, 3);
    auto q = quantize(w, c.gs, c.bits, c.mode);
    ASSERT_EQ(q.size(), c.mode == "affine" ? 3u : 2u);
    EXPECT_EQ(q[0].dtype(), uint32);
    EXPECT_EQ(q[0].shape(), (Shape{5, 3 * c.gs * c.bits / 32}));
    EXPECT_EQ(q[1].shape(), (Shape{5, 3}));
    std::optional<array> b;
    if (q.size() > 2) b = q[2];
    array d = dequantize(q[0], q[1], b, c.gs, c.bits, c.mode, std::nullopt, float32);
    auto ref = ref_dequantize(q[0], q[1], b, c.gs, c.bits, c.mode);
    test::expect_allclose(d, {5, 3 * c.gs}, ref, 1e-6);
    // Round trip within half a step (affine) or a quarter of the block maximum (fp4).
    auto wv = to_double(w), dv = to_double(d);
    auto sv = to_double(q[1]);
    for (size_t i = 0; i < wv.size(); ++i) {
      const size_t g = i / c.gs;
      double bound;
      if (c.mode == "affine") {
        bound = std::abs(sv[g]) * 1.5 + 1e-5;  // a step, plus the edge clip (see the Python test)
      } else {
        double amax = 0;
        for (int j = 0; j < c.gs; ++j) amax = std::max(amax, std::abs(wv[g * c.gs + j]));
        bound = amax * (c.bits == 4 ? 0.4 : 0.1);
      }
      ASSERT_LE(std::abs(dv[i] - wv[i]), bound) << i;
    }
  }
}

TEST(Quantized, MatmulMatchesDequantizeThenMatmulInFloat64) {
  for (const Case& c : all_cases()) {
    for (Dtype dt : {float32, float16, bfloat16}) {
      for (bool tr : {true, false}) {
        for (int M : {1, 3, 16, 17, 40}) {
          SCOPED_TRACE(c.mode + " bits " + std::to_string(c.bits) + " gs " + std::to_string(c.gs) +
                       " M " + std::to_string(M) + " tr " + std::to_string(tr));
          const int K = 2 * std::max(c.gs, 64), N = 3 * c.gs;
          array w = astype(random_array(tr ? Shape{N, K} : Shape{K, N}, float32), dt);
          auto q = quantize(w, c.gs, c.bits, c.mode);
          std::optional<array> b;
          if (q.size() > 2) b = q[2];
          array x = astype(random_array({M, K}, float32), dt);
          array y = quantized_matmul(x, q[0], q[1], b, tr, c.gs, c.bits, c.mode);
          EXPECT_EQ(y.dtype(), dt);
          auto wd = ref_dequantize(q[0], q[1], b, c.gs, c.bits, c.mode);
          auto xv = to_double(x);
          std::vector<double> ref(M * N, 0.0);
          for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
              double acc = 0;
              for (int k = 0; k < K; ++k)
                acc += xv[m * K + k] * (tr ? wd[n * K + k] : wd[k * N + n]);
              ref[m * N + n] = acc;
            }
          auto yv = to_double(y);
          double scale = 1e-30;
          for (double r : ref) scale = std::max(scale, std::abs(r));
          const double tol = dt == float32 ? 1e-5 : 2e-2;
          for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(yv[i], ref[i], tol * scale) << i;
        }
      }
    }
  }
}

// The matvec sizes of a language model's decode step: K long enough to split over blocks,
// N not a multiple of the rows a block owns, M from 1 to 9, an nvfp4 tensor scale, and an
// x slice whose rows are not 16-byte aligned (the unvectorized path).
TEST(Quantized, MatvecLargeShapesSplitsAndGlobalScale) {
  struct Big {
    std::string mode;
    int gs, bits;
  };
  for (const Big& c : {Big{"affine", 64, 4}, Big{"affine", 32, 8}, Big{"affine", 128, 2},
                       Big{"mxfp4", 32, 4}, Big{"nvfp4", 16, 4}, Big{"affine", 64, 3}}) {
    for (Dtype dt : {bfloat16, float16, float32}) {
      for (int M : {1, 2, 5, 9}) {
        for (bool offset : {false, true}) {
          SCOPED_TRACE(c.mode + " bits " + std::to_string(c.bits) + " M " + std::to_string(M) +
                       " offset " + std::to_string(offset));
          const int K = 2048, N = 333;
          array w = astype(random_array({N, K}, float32), dt);
          std::optional<array> gscale;
          if (c.mode == "nvfp4") gscale = array(3.5f);
          auto q = quantize(w, c.gs, c.bits, c.mode, gscale);
          std::optional<array> b;
          if (q.size() > 2) b = q[2];
          // offset: rows start 1 element past a 16-byte boundary.
          array xf = astype(random_array({M, K + 1}, float32), dt);
          array x = offset ? slice(xf, {0, 1}, {M, K + 1}) : slice(xf, {0, 0}, {M, K});
          array y = gather_qmm(x, q[0], q[1], b, std::nullopt, std::nullopt, true, c.gs, c.bits,
                               c.mode, gscale);
          auto wd = ref_dequantize(q[0], q[1], b, c.gs, c.bits, c.mode);
          const double g = gscale ? 3.5 / (448.0 * 6.0) : 1.0;
          auto xv = to_double(x);
          std::vector<double> ref(M * N, 0.0);
          double scale = 1e-30;
          for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
              double acc = 0;
              for (int k = 0; k < K; ++k) acc += xv[m * K + k] * wd[n * K + k] * g;
              ref[m * N + n] = acc;
              scale = std::max(scale, std::abs(acc));
            }
          auto yv = to_double(y);
          const double tol = dt == float32 ? 1e-5 : 2e-2;
          for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(yv[i], ref[i], tol * scale) << i;
        }
      }
    }
  }
}

// The shapes of the GPU's tensor-core matvec (affine 2/4-bit, half types): every group size,
// M from 1 to 16 (the column tiles of 8 (x row, group) pairs fill at different M per group
// size), N not a multiple of its 16 rows, K long enough to split (N = 40 -> 2 splits on the
// GPU), a batch of weights, and the dequantize of the large-batch path on the same weights.
TEST(Quantized, TensorCoreMatvecShapes) {
  for (int bits : {2, 4}) {
    for (int gs : {32, 64, 128}) {
      for (Dtype dt : {bfloat16, float16}) {
        const int K = 8192, N = 40, B = 2;
        array w = astype(random_array({B, N, K}, float32), dt);
        auto q = quantize(w, gs, bits);
        auto wd = ref_dequantize(q[0], q[1], q[2], gs, bits, "affine");
        test::expect_allclose(dequantize(q[0], q[1], q[2], gs, bits), {B, N, K}, wd, 1e-2);
        for (int M : {1, 2, 3, 4, 5, 8, 9, 16}) {
          SCOPED_TRACE("bits " + std::to_string(bits) + " gs " + std::to_string(gs) + " M " +
                       std::to_string(M) + " " + std::string(type_to_name(dt)));
          array x = astype(random_array({B, M, K}, float32), dt);
          array y = quantized_matmul(x, q[0], q[1], q[2], true, gs, bits);
          ASSERT_EQ(y.shape(), (Shape{B, M, N}));
          auto xv = to_double(x), yv = to_double(y);
          std::vector<double> ref(B * M * N);
          double scale = 1e-30;
          for (int b = 0; b < B; ++b)
            for (int m = 0; m < M; ++m)
              for (int n = 0; n < N; ++n) {
                double acc = 0;
                const double* wr = wd.data() + (static_cast<int64_t>(b) * N + n) * K;
                const double* xr = xv.data() + (static_cast<int64_t>(b) * M + m) * K;
                for (int k = 0; k < K; ++k) acc += xr[k] * wr[k];
                ref[(b * M + m) * N + n] = acc;
                scale = std::max(scale, std::abs(acc));
              }
          // The output's rounding (2^-9 of the largest for bfloat16) and float sums.
          for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(yv[i], ref[i], 8e-3 * scale) << i;
        }
      }
    }
  }
}

// The shapes of the GPU's fp4 tensor-core matvec (mxfp4/nvfp4, bfloat16 x): M from 1 to 16
// (one or two column tiles), N not a multiple of its 16 rows, a K that splits, a batch of
// weights, nvfp4 with a global scale, and mxfp4 rows scaled by 2^24 (e8m0 scales past the
// one-multiply range: the kernel's two-multiply branch).
TEST(Quantized, Fp4TensorCoreMatvecShapes) {
  for (const std::string mode : {"mxfp4", "nvfp4"}) {
    const int K = 8192, N = 40, B = 2, gs = mode == "nvfp4" ? 16 : 32;
    array w = random_array({B, N, K}, float32);
    if (mode == "mxfp4") {
      // Rows 3 and 21 of every matrix 2^24 times larger.
      std::vector<float> f(N, 1.0f);
      f[3] = f[21] = 16777216.0f;
      w = multiply(w, array(f.data(), {N, 1}, float32));
    }
    w = astype(w, bfloat16);
    std::optional<array> g;
    if (mode == "nvfp4") g = array(0.75f);
    auto q = quantize(w, gs, 4, mode, g);
    auto wd = ref_dequantize(q[0], q[1], std::nullopt, gs, 4, mode);
    if (g)
      for (double& v : wd) v *= 0.75 / (448.0 * 6.0);
    for (int M : {1, 3, 8, 9, 16}) {
      SCOPED_TRACE(mode + " M " + std::to_string(M));
      array x = astype(random_array({B, M, K}, float32), bfloat16);
      array y = gather_qmm(x, q[0], q[1], std::nullopt, std::nullopt, std::nullopt, true, gs, 4,
                           mode, g);
      ASSERT_EQ(y.shape(), (Shape{B, M, N}));
      auto xv = to_double(x), yv = to_double(y);
      for (int b = 0; b < B; ++b)
        for (int n = 0; n < N; ++n) {
          // Per output (the 2^24 rows would hide the others' errors): bfloat16's rounding of
          // the result and float sums of the products.
          for (int m = 0; m < M; ++m) {
            double acc = 0, mag = 0;
            const double* wr = wd.data() + (static_cast<int64_t>(b) * N + n) * K;
            const double* xr = xv.data() + (static_cast<int64_t>(b) * M + m) * K;
            for (int k = 0; k < K; ++k) acc += xr[k] * wr[k], mag += std::abs(xr[k] * wr[k]);
            ASSERT_NEAR(yv[(b * M + m) * N + n], acc, 4e-3 * std::abs(acc) + 1e-5 * mag)
                << "matrix " << b << " row " << n << " x row " << m;
          }
        }
    }
  }
}

TEST(Quantized, BatchedAndGathered) {
  array w = random_array({3, 32, 64}, float32);
  auto q = quantize(w, 32, 4);
  array x = random_array({2, 1, 5, 64}, float32);
  array y = quantized_matmul(x, q[0], q[1], q[2], true, 32, 4);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 5, 32}));
  array ref = matmul(x, swapaxes(dequantize(q[0], q[1], q[2], 32, 4), -1, -2));
  test::expect_allclose(y, y.shape(), to_double(ref), 1e-5);
  array lhs = array({1, 0, 1}, {3}, uint32), rhs = array({2, 2, 0}, {3}, uint32);
  array xs = random_array({2, 4, 64}, float32);
  array g = gather_qmm(xs, q[0], q[1], q[2], lhs, rhs, true, 32, 4);
  array gref = gather_mm(xs, swapaxes(dequantize(q[0], q[1], q[2], 32, 4), -1, -2), lhs, rhs);
  test::expect_allclose(g, {3, 4, 32}, to_double(gref), 1e-5);
}

// nvfp4 experts with one global scale each (gather_qmm's global_scale of shape (E,)): each
// picked matrix takes its own expert's scale, on the matvec path (M = 1, 3) and the large-batch
// path (M = 20), transposed and not, repeated and out-of-order experts.
TEST(Quantized, GatherWithPerExpertGlobalScales) {
  const int E = 5, K = 256, N = 48;
  for (Dtype dt : {bfloat16, float32}) {
    for (bool transpose : {true, false}) {
      const int rows = transpose ? N : K, cols = transpose ? K : N;
      std::vector<array> wq, sc, gs;
      std::vector<std::vector<double>> wd;
      for (int e = 0; e < E; ++e) {
        array w = astype(multiply(random_array({rows, cols}, float32), array(float(1 << e))), dt);
        array g = astype(max(abs(w)), float32);
        auto q = quantize(w, 16, 4, "nvfp4", g);
        wq.push_back(q[0]);
        sc.push_back(q[1]);
        gs.push_back(g);
        wd.push_back(ref_dequantize(q[0], q[1], std::nullopt, 16, 4, "nvfp4"));
        const double f = to_double(g)[0] / (448.0 * 6.0);
        for (double& v : wd.back()) v *= f;
      }
      array w_all = stack(wq), s_all = stack(sc), g_all = stack(gs);
      ASSERT_EQ(g_all.shape(), Shape{E});
      const std::vector<int> picks = {3, 0, 4, 3, 1};
      array rhs = array(std::vector<uint32_t>(picks.begin(), picks.end()).data(),
                        {static_cast<int>(picks.size())}, uint32);
      for (int M : {1, 3, 20}) {
        SCOPED_TRACE(std::string(type_to_name(dt)) + " transpose " + std::to_string(transpose) +
                     " M " + std::to_string(M));
        const int B = static_cast<int>(picks.size());
        array x = astype(random_array({B, M, K}, float32), dt);
        array y = gather_qmm(x, w_all, s_all, std::nullopt, std::nullopt, rhs, transpose, 16, 4,
                             "nvfp4", g_all);
        ASSERT_EQ(y.shape(), (Shape{B, M, N}));
        auto xv = to_double(x), yv = to_double(y);
        for (int b = 0; b < B; ++b) {
          const std::vector<double>& w = wd[picks[b]];
          double scale = 1e-30;
          std::vector<double> ref(M * N);
          for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
              double acc = 0;
              for (int k = 0; k < K; ++k)
                acc += xv[(b * M + m) * K + k] * (transpose ? w[n * K + k] : w[k * N + n]);
              ref[m * N + n] = acc;
              scale = std::max(scale, std::abs(acc));
            }
          const double tol = dt == float32 ? 1e-5 : 1e-2;
          for (int i = 0; i < M * N; ++i)
            ASSERT_NEAR(yv[b * M * N + i], ref[i], tol * scale) << "matrix " << b << " " << i;
        }
      }
    }
  }
  // The scale must be a scalar or one per matrix of w.
  array w = random_array({2, 16, 64}, float32);
  auto q = quantize(w, 16, 4, "nvfp4");
  array x = random_array({2, 1, 64}, float32);
  EXPECT_THROW(gather_qmm(x, q[0], q[1], std::nullopt, std::nullopt, std::nullopt, true, 16, 4,
                          "nvfp4", ones({3}, float32)),
               std::invalid_argument);
}

// gather_qqmm: x rounded through the mode (as quantize + dequantize), then the picked packed
// (or float, rounded too) matrices of w; nvfp4 with scalar and per-expert global scales, mxfp8.
TEST(Quantized, GatherQqmmMatchesRoundedGatherMm) {
  const int E = 3, K = 128, N = 32;
  array lhs = array({0, 1, 1, 0}, {4}, uint32), rhs = array({2, 0, 2, 1}, {4}, uint32);
  for (const std::string mode : {"nvfp4", "mxfp8"}) {
    for (int M : {1, 4}) {
      SCOPED_TRACE(mode + " M " + std::to_string(M));
      array x = random_array({2, M, K}, float32);
      array w = random_array({E, N, K}, float32);
      const bool nv = mode == "nvfp4";
      std::optional<array> gx, gw;
      if (nv) gx = max(abs(x)), gw = max(abs(w), std::vector<int>{1, 2});
      std::vector<array> wq, sc, wh;
      for (int e = 0; e < E; ++e) {
        std::optional<array> g;
        if (nv) g = take(*gw, array(e), 0);
        auto q = quantize(take(w, array(e), 0), std::nullopt, std::nullopt, mode, g);
        wq.push_back(q[0]);
        sc.push_back(q[1]);
        wh.push_back(
            dequantize(q[0], q[1], std::nullopt, std::nullopt, std::nullopt, mode, g, float32));
      }
      auto xq = quantize(x, std::nullopt, std::nullopt, mode, gx);
      array xh =
          dequantize(xq[0], xq[1], std::nullopt, std::nullopt, std::nullopt, mode, gx, float32);
      array ref = gather_mm(xh, swapaxes(stack(wh), -1, -2), lhs, rhs);
      array y =
          gather_qqmm(x, stack(wq), stack(sc), lhs, rhs, std::nullopt, std::nullopt, mode, gx, gw);
      test::expect_allclose(y, {4, M, N}, to_double(ref), 1e-4);
      if (!nv) {
        // A float w is rounded on the fly (one tensor scale at most).
        array yf = gather_qqmm(x, w, std::nullopt, lhs, rhs, std::nullopt, std::nullopt, mode);
        test::expect_allclose(yf, {4, M, N}, to_double(ref), 1e-4);
      }
    }
  }
  array x = random_array({1, 1, 64}, float32);
  array w = random_array({2, 16, 64}, float32);
  EXPECT_THROW(gather_qqmm(x, w, std::nullopt, std::nullopt, std::nullopt, 64, 4, "affine"),
               std::invalid_argument);
  auto q = quantize(w, 16, 4, "nvfp4");
  EXPECT_THROW(gather_qqmm(x, q[0]), std::invalid_argument);  // packed w without scales
  EXPECT_THROW(gather_qqmm(x, q[0], q[1], array({0.5f}, {1}), std::nullopt), std::invalid_argument);
}

TEST(Quantized, VjpWithRespectToX) {
  array w = random_array({32, 64}, float32);
  auto q = quantize(w, 32, 4);
  array x = random_array({3, 64}, float32), c = random_array({3, 32}, float32);
  auto [out, g] = vjp(
      [&](const std::vector<array>& in) {
        return std::vector<array>{quantized_matmul(in[0], q[0], q[1], q[2], true, 32, 4)};
      },
      {x}, {c});
  array ref = matmul(c, dequantize(q[0], q[1], q[2], 32, 4));
  test::expect_allclose(g[0], {3, 64}, to_double(ref), 1e-5);
}

TEST(Quantized, BadArgumentsThrowTaggedErrors) {
  array w = random_array({32, 256}, float32);
  EXPECT_THROW(quantize(w, 48, 4), std::invalid_argument);
  EXPECT_THROW(quantize(w, 64, 7), std::invalid_argument);
  EXPECT_THROW(quantize(w, 64, 4, "foo"), std::invalid_argument);
  EXPECT_THROW(quantize(random_array({32, 100}, float32), 64, 4), std::invalid_argument);
  EXPECT_THROW(quantize(random_array({256}, float32), 64, 4), std::invalid_argument);
  EXPECT_THROW(quantize(w, 64, 4, "mxfp4"), std::invalid_argument);
  auto q = quantize(w);
  array x = random_array({2, 256}, float32);
  EXPECT_THROW(quantized_matmul(x, q[0], q[1]), std::invalid_argument);
  EXPECT_THROW(quantized_matmul(x, q[0], q[1], q[2], true, 32), std::invalid_argument);
  EXPECT_THROW(quantized_matmul(random_array({2, 100}, float32), q[0], q[1], q[2]),
               std::invalid_argument);
  try {
    quantize(w, 48, 4);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[quantize]"), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln
