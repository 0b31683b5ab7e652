// The GPU kernels of the reduction, scan, sort, linear-algebra, random and indexing families
// against the CPU on random inputs: every dtype, layouts (row-major, transposed, broadcast,
// strided slices), the shapes that select each kernel path (warp and block rows, split rows
// and columns, reductions of everything, sorts in shared memory and by merging), the CPU's
// semantics (NaN propagation, first-occurrence argmax, integer wrap-around, stable sorts with
// NaN last, identical random bits) and errors (out-of-range indices found on the host and on
// the device). Tests skip with the reason when there is no GPU.
#include <gtest/gtest.h>

#ifdef KILN_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "kiln/backend/cuda/matmul.h"
#include "kiln/backend/gpu.h"
#include "kiln/primitives_random.h"
#include "kiln/random.h"
#include "test_utils.h"

using namespace kiln;

#define REQUIRE_GPU()                                        \
  if (!gpu::is_available()) {                                \
    GTEST_SKIP() << "no GPU: " << gpu::unavailable_reason(); \
  }

namespace {

constexpr Device kGpu = Device::gpu;
constexpr Device kCpu = Device::cpu;

const Dtype kAllDtypes[] = {bool_, uint8, uint16,  uint32,   uint64,  int8,    int16,
                            int32, int64, float16, bfloat16, float32, float64, complex64};
const Dtype kRealDtypes[] = {bool_, uint8, uint16,  uint32,   uint64,  int8,   int16,
                             int32, int64, float16, bfloat16, float32, float64};
const Dtype kFloatDtypes[] = {float16, bfloat16, float32, float64};

// Expects the GPU result to equal the CPU's within `rtol` (the dtype's tolerance by default;
// integers exactly).
void expect_same(const array& gpu_result, const array& cpu_result, double rtol = -1) {
  ASSERT_EQ(gpu_result.dtype(), cpu_result.dtype());
  ASSERT_EQ(gpu_result.shape(), cpu_result.shape());
  if (gpu_result.dtype() == complex64) {
    auto g = test::to_complex(gpu_result), c = test::to_complex(cpu_result);
    const double tol = rtol < 0 ? test::tolerance(complex64) : rtol;
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_LE(std::abs(g[i] - c[i]), tol * (1 + std::abs(c[i]))) << "element " << i;
    }
    return;
  }
  test::expect_allclose(gpu_result, cpu_result.shape(), test::to_double(cpu_result), rtol);
}

void expect_gpu_matches_cpu(const std::function<array(Device)>& f, double rtol = -1) {
  array g = f(kGpu), c = f(kCpu);
  eval(g, c);
  expect_same(g, c, rtol);
}

// The elements' bytes in row-major order (read on the CPU).
std::vector<unsigned char> bytes_of(const array& a) {
  array c = contiguous(a, false, kCpu);
  c.eval();
  const auto* p = c.data<unsigned char>();
  return std::vector<unsigned char>(p, p + c.nbytes());
}

// Bit-for-bit equality of the GPU and CPU results.
void expect_gpu_identical(const std::function<array(Device)>& f) {
  array g = f(kGpu), c = f(kCpu);
  eval(g, c);
  ASSERT_EQ(g.dtype(), c.dtype());
  ASSERT_EQ(g.shape(), c.shape());
  EXPECT_TRUE(bytes_of(g) == bytes_of(c)) << "GPU and CPU results differ in their bits";
}

// The same values in several layouts, built on the CPU: row-major, transposed, a broadcast
// view and a strided slice (an offset view with a step).
std::vector<std::pair<std::string, array>> layouts(const Shape& shape, Dtype dtype, double lo = -2,
                                                   double hi = 2) {
  std::vector<std::pair<std::string, array>> out;
  out.emplace_back("row", test::random_array(shape, dtype, lo, hi));
  Shape rev(shape.rbegin(), shape.rend());
  out.emplace_back("transposed", transpose(test::random_array(rev, dtype, lo, hi), kCpu));
  Shape one = shape;
  one[0] = 1;
  out.emplace_back("broadcast", broadcast_to(test::random_array(one, dtype, lo, hi), shape, kCpu));
  Shape big = shape;
  big.back() = 2 * shape.back() + 1;
  Shape start(shape.size(), 0), step(shape.size(), 1);
  start.back() = 1;
  step.back() = 2;
  out.emplace_back("strided_slice",
                   slice(test::random_array(big, dtype, lo, hi), start, big, step, kCpu));
  for (auto& [name, a] : out) a.eval();
  return out;
}

// Float32 sums over many elements differ from the CPU's pairwise order by rounding.
double sum_tolerance(Dtype d, size_t n) {
  const double t = test::tolerance(d);
  return d == float32 || d == complex64 ? std::max(t, 1e-7 * std::sqrt(double(n))) : t;
}

}  // namespace

// ---------------------------------------------------------------- Reduce

TEST(GpuReduce, EveryOpDtypeLayoutAndAxes) {
  REQUIRE_GPU();
  using Fn = array (*)(const array&, const std::vector<int>&, bool, StreamOrDevice);
  const std::pair<const char*, Fn> ops[] = {{"sum", sum}, {"prod", prod}, {"max", max},
                                            {"min", min}, {"all", all},   {"any", any}};
  const std::pair<Shape, std::vector<std::vector<int>>> cases[] = {
      {{37, 129}, {{0}, {1}, {0, 1}}},
      {{3, 5, 7, 11}, {{3}, {0}, {1, 2}, {0, 2}, {1, 3}, {0, 1, 2, 3}}},
  };
  for (auto [name, fn] : ops) {
    const bool extreme = std::string(name) == "max" || std::string(name) == "min";
    const bool product = std::string(name) == "prod";
    for (Dtype d : kAllDtypes) {
      if (extreme && d == complex64) continue;
      for (const auto& [shape, axes_list] : cases) {
        // Products stay near 1 (complex numbers near modulus 1) so they neither overflow nor
        // vanish: on overflow the CPU's complex product recovers infinities (C99 Annex G)
        // where the GPU's gives NaN.
        const double lo = product ? (d == complex64 ? 0.55 : 0.5) : -3;
        const double hi = product ? (d == complex64 ? 0.85 : 1.5) : 3;
        for (auto& [layout, x] : layouts(shape, d, lo, hi)) {
          for (const auto& axes : axes_list) {
            SCOPED_TRACE(msg(name, " ", d, " ", shape_str(shape), " ", layout, " axes ",
                             shape_str(Shape(axes.begin(), axes.end()))));
            expect_gpu_matches_cpu([&](Device dev) { return fn(x, axes, false, dev); },
                                   sum_tolerance(d, x.size()));
          }
        }
      }
    }
  }
}

TEST(GpuReduce, LongRowsManyRowsColumnsAndEverything) {
  REQUIRE_GPU();
  // Each shape selects a path: warp rows, block rows split along the run, columns with and
  // without splits, a reduction of everything (one row split across the GPU).
  const std::pair<Shape, std::vector<int>> cases[] = {
      {{32768, 256}, {1}},  {{4, 1 << 20}, {1}}, {{1 << 20, 3}, {0}},     {{4096, 3000}, {0}},
      {{3, 4096, 17}, {1}}, {{1 << 23}, {0}},    {{256, 1024, 8}, {0, 2}}};
  for (Dtype d : {float32, bfloat16, int32, uint8, float64}) {
    for (const auto& [shape, axes] : cases) {
      array x = test::random_array(shape, d, -3, 3);
      SCOPED_TRACE(msg(d, " ", shape_str(shape)));
      expect_gpu_matches_cpu([&](Device dev) { return sum(x, axes, false, dev); },
                             d == float32 ? 1e-4 : -1);
      expect_gpu_matches_cpu([&](Device dev) { return max(x, axes, false, dev); });
      expect_gpu_matches_cpu([&](Device dev) { return argmin(x, axes[0], false, dev); });
    }
  }
}

TEST(GpuReduce, MeanSumsIntegersAndHalvesIntoFloat32) {
  REQUIRE_GPU();
  for (Dtype d : {bool_, uint8, int8, int16, int32, int64, uint64, float16, bfloat16}) {
    array x = test::random_array({33, 1000}, d, -100, 100);
    SCOPED_TRACE(msg(d));
    expect_gpu_matches_cpu([&](Device dev) { return mean(x, 1, false, dev); }, 1e-5);
    expect_gpu_matches_cpu([&](Device dev) { return mean(x, false, dev); }, 1e-5);
  }
}

TEST(GpuReduce, NanPropagatesAndIntegersWrapLikeTheCpu) {
  REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  array f({1.0f, nan, 3.0f, -2.0f, 5.0f, nan}, {2, 3});
  for (int axis : {0, 1}) {
    expect_gpu_matches_cpu([&](Device dev) { return max(f, axis, false, dev); });
    expect_gpu_matches_cpu([&](Device dev) { return min(f, axis, false, dev); });
  }
  array i8({int8_t{100}, int8_t{100}, int8_t{-128}, int8_t{-128}});
  array s8 = sum(i8, false, kGpu);
  EXPECT_EQ(s8.dtype(), int32);
  EXPECT_EQ(s8.item<int32_t>(), -56);
  const int64_t big = std::numeric_limits<int64_t>::max();
  array i64({big, int64_t{1}});
  EXPECT_EQ(sum(i64, false, kGpu).item<int64_t>(), std::numeric_limits<int64_t>::min());
  array u32({0xffffffffu, 2u});
  EXPECT_EQ(sum(u32, false, kGpu).item<uint32_t>(), 1u);
  EXPECT_EQ(prod(u32, false, kGpu).item<uint32_t>(), 0xfffffffeu);
}

TEST(GpuReduce, EmptyAxesGiveTheIdentityAndEmptyOutputsWork) {
  REQUIRE_GPU();
  using Fn = array (*)(const array&, const std::vector<int>&, bool, StreamOrDevice);
  for (Dtype d : {float32, int32, float16}) {
    array x = zeros({4, 0, 3}, d);
    for (Fn fn : {Fn(sum), Fn(prod)}) {
      expect_gpu_matches_cpu([&](Device dev) { return fn(x, std::vector<int>{1}, false, dev); });
    }
    expect_gpu_matches_cpu([&](Device dev) { return all(x, std::vector<int>{1}, false, dev); });
    expect_gpu_matches_cpu([&](Device dev) { return any(x, std::vector<int>{1}, false, dev); });
    expect_gpu_matches_cpu([&](Device dev) { return sum(x, std::vector<int>{0}, false, dev); });
  }
}

// ---------------------------------------------------------------- ArgReduce

TEST(GpuArgReduce, FirstOccurrenceWinsAndNanIsTheExtreme) {
  REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  array a({1.0f, 3.0f, 3.0f, 2.0f, -1.0f, -1.0f});
  EXPECT_EQ(argmax(a, false, kGpu).item<uint32_t>(), 1u);
  EXPECT_EQ(argmin(a, false, kGpu).item<uint32_t>(), 4u);
  array n({1.0f, nan, 3.0f, nan});
  EXPECT_EQ(argmax(n, false, kGpu).item<uint32_t>(), 1u);
  EXPECT_EQ(argmin(n, false, kGpu).item<uint32_t>(), 1u);
  // A long vector (split across blocks) with its maximum twice: the first wins.
  const int len = 1 << 22;
  array x = test::random_array({len}, float32, -1, 1);
  array pos = arange(0, len, int32, kCpu);
  array big = where(logical_or(equal(pos, array(3000001), kCpu), equal(pos, array(17), kCpu), kCpu),
                    array(5.0f), x, kCpu);
  EXPECT_EQ(argmax(big, false, kGpu).item<uint32_t>(), 17u);
  // Columns with ties, through splits.
  array ties = test::random_array({5000, 40}, int8, -2, 2);
  expect_gpu_matches_cpu([&](Device dev) { return argmax(ties, 0, false, dev); });
  expect_gpu_matches_cpu([&](Device dev) { return argmin(ties, 0, false, dev); });
}

TEST(GpuArgReduce, EveryDtypeAndLayoutMatchesCpu) {
  REQUIRE_GPU();
  for (Dtype d : kRealDtypes) {
    for (auto& [layout, x] : layouts({19, 301}, d, -50, 50)) {
      for (int axis : {0, 1}) {
        SCOPED_TRACE(msg(d, " ", layout, " axis ", axis));
        expect_gpu_matches_cpu([&](Device dev) { return argmax(x, axis, false, dev); });
        expect_gpu_matches_cpu([&](Device dev) { return argmin(x, axis, true, dev); });
      }
    }
  }
}

// ---------------------------------------------------------------- Softmax

TEST(GpuSoftmax, MatchesCpuWithNanAndInfinityRows) {
  REQUIRE_GPU();
  for (Dtype d : kFloatDtypes) {
    // {140, 17000} (16-bit types) and {140, 6000} (float64) take the staged kernel (rows of a
    // whole 1024-thread block through shared memory), with more rows than resident blocks.
    for (Shape shape :
         {Shape{7, 33}, Shape{5, 3000}, Shape{2, 3, 1}, Shape{140, 17000}, Shape{140, 6000}}) {
      for (auto& [layout, x] : layouts(shape, d, -5, 5)) {
        SCOPED_TRACE(msg(d, " ", shape_str(shape), " ", layout));
        expect_gpu_matches_cpu([&](Device dev) { return softmax(x, -1, dev); });
      }
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  array special({1.0f, nan, 2.0f, inf, 1.0f, 2.0f, -inf, -inf, -inf, -inf, 0.0f, 1.0f}, {4, 3});
  expect_gpu_matches_cpu([&](Device dev) { return softmax(special, -1, dev); });
}

// ---------------------------------------------------------------- Scan

TEST(GpuScan, EveryDtypeAxisDirectionAndLayout) {
  REQUIRE_GPU();
  for (Dtype d : kAllDtypes) {
    // Complex values near modulus 1: cumprod neither overflows nor vanishes.
    const double lo = d == complex64 ? 0.62 : 0.9, hi = d == complex64 ? 0.78 : 1.1;
    for (auto& [layout, x] : layouts({6, 7, 300}, d, lo, hi)) {
      for (int axis : {0, 1, 2}) {
        for (bool reverse : {false, true}) {
          for (bool inclusive : {true, false}) {
            SCOPED_TRACE(msg(d, " ", layout, " axis ", axis, reverse ? " reverse" : "",
                             inclusive ? " inclusive" : " exclusive"));
            // Half outputs round each float partial once: a different order may flip an ulp.
            const double rtol = std::max(1e-4, test::tolerance(d));
            expect_gpu_matches_cpu(
                [&](Device dev) { return cumsum(x, axis, reverse, inclusive, dev); }, rtol);
            expect_gpu_matches_cpu(
                [&](Device dev) { return cumprod(x, axis, reverse, inclusive, dev); }, rtol);
          }
        }
      }
    }
  }
}

TEST(GpuScan, LongLinesSplitIntoChunks) {
  REQUIRE_GPU();
  for (Dtype d : {int32, int64, float32}) {
    for (Shape shape : {Shape{1, 3000001}, Shape{3, 1 << 20}, Shape{1000, 4000}}) {
      // Positive floats: prefix sums grow steadily, so float32's rounding stays relative
      // (a random walk through zero would make any relative tolerance meaningless).
      array x = test::random_array(shape, d, d == float32 ? 0 : -3, 3);
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(msg(d, " ", shape_str(shape), reverse ? " reverse" : ""));
        expect_gpu_matches_cpu([&](Device dev) { return cumsum(x, 1, reverse, true, dev); },
                               d == float32 ? 1e-3 : -1);
      }
    }
  }
}

// ---------------------------------------------------------------- Sort

TEST(GpuSort, StableAscendingWithNanLastOnEveryDtype) {
  REQUIRE_GPU();
  for (Dtype d : kRealDtypes) {
    // Few distinct values: many ties, so argsort checks stability exactly.
    for (Shape shape : {Shape{10, 100}, Shape{3, 2049}, Shape{2, 5000}, Shape{1, 70001}}) {
      for (auto& [layout, x] : layouts(shape, d, -4, 4)) {
        for (int axis : {-1, 0}) {
          SCOPED_TRACE(msg(d, " ", shape_str(shape), " ", layout, " axis ", axis));
          expect_gpu_identical([&](Device dev) { return sort(x, axis, dev); });
          expect_gpu_identical([&](Device dev) { return argsort(x, axis, dev); });
        }
      }
    }
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  array v({3.0f, nan, -0.0f, 1.0f, 0.0f, nan, -0.0f, -5.0f});
  expect_gpu_identical([&](Device dev) { return sort(v, 0, dev); });
  expect_gpu_identical([&](Device dev) { return argsort(v, 0, dev); });
  // NaN among many values, in a merged (long) line.
  array w = test::random_array({10000}, float32, -1, 1);
  array pos = arange(0, 10000, int32, kCpu);
  array wn = where(equal(remainder(pos, array(7), kCpu), array(0), kCpu), array(nan), w, kCpu);
  expect_gpu_identical([&](Device dev) { return sort(wn, 0, dev); });
  expect_gpu_identical([&](Device dev) { return argsort(wn, 0, dev); });
}

// ---------------------------------------------------------------- Matmul and AddMM

TEST(GpuMatmul, DtypesShapesAndTransposedViews) {
  REQUIRE_GPU();
  const bool tf32 = gpu::set_matmul_allow_tf32(false);
  for (Dtype d : kFloatDtypes) {
    for (auto [m, k, n] : {std::tuple{1, 1, 1}, {7, 13, 5}, {64, 128, 32}, {129, 65, 257}}) {
      array a = test::random_array({m, k}, d), at = transpose(test::random_array({k, m}, d), kCpu);
      array b = test::random_array({k, n}, d), bt = transpose(test::random_array({n, k}, d), kCpu);
      for (auto& [an, x] : {std::pair{"a", a}, {"a^T", at}}) {
        for (auto& [bn, y] : {std::pair{"b", b}, {"b^T", bt}}) {
          SCOPED_TRACE(msg(d, " ", m, "x", k, "x", n, " ", an, " @ ", bn));
          // Half types: both sides accumulate in float32 and round once.
          expect_gpu_matches_cpu([&](Device dev) { return matmul(x, y, dev); },
                                 d == float32 ? 1e-5 : -1);
        }
      }
    }
  }
  gpu::set_matmul_allow_tf32(tf32);
}

TEST(GpuMatmul, BatchesBroadcastAndStridedOperands) {
  REQUIRE_GPU();
  for (Dtype d : {float32, bfloat16, float64}) {
    array a = test::random_array({2, 3, 9, 11}, d), b = test::random_array({3, 11, 6}, d);
    expect_gpu_matches_cpu([&](Device dev) { return matmul(a, b, dev); });
    array one_b = test::random_array({11, 6}, d);  // one B for the batch: folded rows
    expect_gpu_matches_cpu([&](Device dev) { return matmul(a, one_b, dev); });
    array bcast_a = broadcast_to(test::random_array({1, 3, 9, 11}, d), {4, 3, 9, 11}, kCpu);
    expect_gpu_matches_cpu([&](Device dev) { return matmul(bcast_a, b, dev); });
    // Batch axes that do not merge (a transposed batch) loop on the host.
    array tb = transpose(test::random_array({11, 3, 6}, d), {1, 0, 2}, kCpu);
    expect_gpu_matches_cpu([&](Device dev) { return matmul(a, tb, dev); });
    // No unit stride in either matrix dimension: copied first.
    array big = test::random_array({18, 22}, d);
    array sl = slice(big, {0, 0}, {18, 22}, {2, 2}, kCpu);
    expect_gpu_matches_cpu([&](Device dev) { return matmul(sl, one_b, dev); });
    // Vectors.
    array v = test::random_array({11}, d);
    expect_gpu_matches_cpu([&](Device dev) { return matmul(v, one_b, dev); });
  }
}

TEST(GpuMatmul, AddmmAndEmptyInnerDimension) {
  REQUIRE_GPU();
  for (Dtype d : kFloatDtypes) {
    array a = test::random_array({2, 7, 5}, d), b = test::random_array({5, 3}, d);
    array c = test::random_array({3}, d);
    expect_gpu_matches_cpu([&](Device dev) { return addmm(c, a, b, 0.5f, 2.0f, dev); });
    // beta = 0 never reads c: NaN there does not propagate.
    array nan_c = full({7, 3}, std::numeric_limits<float>::quiet_NaN(), d);
    expect_gpu_matches_cpu([&](Device dev) { return addmm(nan_c, a, b, 1.0f, 0.0f, dev); });
    // K = 0: zeros, or beta * c.
    array a0 = zeros({4, 0}, d), b0 = zeros({0, 3}, d), c0 = test::random_array({4, 3}, d);
    expect_gpu_matches_cpu([&](Device dev) { return matmul(a0, b0, dev); });
    expect_gpu_matches_cpu([&](Device dev) { return addmm(c0, a0, b0, 1.0f, 3.0f, dev); });
  }
}

TEST(GpuMatmul, Tf32IsASettingOffByDefault) {
  REQUIRE_GPU();
  array a = test::random_array({256, 512}, float32), b = test::random_array({512, 128}, float32);
  const bool before = gpu::set_matmul_allow_tf32(false);
  EXPECT_FALSE(before) << "TF32 must be off by default (PyTorch's default for matmul)";
  // float32 rounding of a 512-term sum (any summation order); TF32 errs ~30x more.
  expect_gpu_matches_cpu([&](Device dev) { return matmul(a, b, dev); }, 1e-4);
  gpu::set_matmul_allow_tf32(true);
  array g = matmul(a, b, kGpu), c = matmul(a, b, kCpu);
  // TF32 keeps 10 mantissa bits of the inputs: each product errs by up to ~2^-10 of
  // |a_ik b_kj|, so an element is bounded by 2^-9 * sum_k |a_ik||b_kj| (the classic bound;
  // a relative check fails on elements that cancel to near zero).
  auto got = test::to_double(g), want = test::to_double(c);
  auto scale = test::to_double(matmul(abs(a, kCpu), abs(b, kCpu), kCpu));
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / scale[i]);
  EXPECT_LE(worst, 1.0 / 512) << "largest error relative to sum |a||b|";
  EXPECT_GT(worst, 1e-6) << "TF32 on should differ from float32 somewhere";
  gpu::set_matmul_allow_tf32(before);
}

// ---------------------------------------------------------------- Random

TEST(GpuRandom, BitsAreTheCpusBitForBit) {
  REQUIRE_GPU();
  // RandomBits with any batch of keys (random::bits takes one; vmap makes batches).
  auto bits = [](const array& keys, const Shape& shape, int width, Device dev) {
    Shape out(keys.shape().begin(), keys.shape().end() - 1);
    out.insert(out.end(), shape.begin(), shape.end());
    return array(out, RandomBits::bits_dtype(width),
                 std::make_shared<RandomBits>(to_stream(dev), shape, width), {keys});
  };
  array k1 = random::key(1234);
  array keys = random::split(random::key(99), 4, kCpu);                              // (4, 2)
  array keys_col = transpose(contiguous(transpose(keys, kCpu), false, kCpu), kCpu);  // strided
  for (int width : {1, 2, 4, 8}) {
    for (Shape shape : {Shape{}, Shape{1}, Shape{3}, Shape{5, 7}, Shape{1001}, Shape{64, 64}}) {
      SCOPED_TRACE(msg("width ", width, " shape ", shape_str(shape)));
      expect_gpu_identical([&](Device dev) { return random::bits(shape, width, k1, dev); });
      for (const array& ks : {keys, keys_col}) {
        expect_gpu_identical([&](Device dev) { return bits(ks, shape, width, dev); });
      }
    }
  }
}

TEST(GpuRandom, UniformAndRandintAreTheCpusBitForBit) {
  REQUIRE_GPU();
  array key = random::key(7);
  for (Dtype d : kFloatDtypes) {
    SCOPED_TRACE(msg(d));
    expect_gpu_identical([&](Device dev) { return random::uniform({1000, 33}, d, key, dev); });
    array lo = test::random_array({33}, d, -3, 0), hi = test::random_array({1000, 1}, d, 0, 3);
    expect_gpu_identical([&](Device dev) {
      return random::uniform(lo, hi, {1000, 33}, d, key, dev);
    });
    // Narrow ranges round onto `high` often (as in MLX), identically on both devices.
    array nlo = full({}, 1.0, d), nhi = full({}, 1.0078125, d);
    expect_gpu_identical(
        [&](Device dev) { return random::uniform(nlo, nhi, {4096}, d, key, dev); });
  }
  for (Dtype d : {int8, uint8, int16, uint16, int32, uint32, int64, uint64}) {
    SCOPED_TRACE(msg(d));
    expect_gpu_identical(
        [&](Device dev) { return random::randint(array(-5), array(100), {777}, d, key, dev); });
  }
  // Compositions run other kernels too: equal within tolerance.
  expect_gpu_matches_cpu([&](Device dev) { return random::normal({5000}, float32, key, dev); },
                         1e-4);
}

// ---------------------------------------------------------------- Indexing

TEST(GpuIndexing, TakeAndGatherMatchCpu) {
  REQUIRE_GPU();
  for (Dtype d : {bool_, int8, float16, float32, int64, complex64}) {
    array a = test::random_array({13, 17, 5}, d, -9, 9);
    for (Dtype id : {int8, uint8, int32, uint32, int64, uint64}) {
      const bool sgn = id == int8 || id == int32 || id == int64;
      array idx = test::random_array({4, 6}, id, sgn ? -13 : 0, 13);
      SCOPED_TRACE(msg(d, " indices ", id));
      expect_gpu_identical([&](Device dev) { return take(a, idx, 0, dev); });
      expect_gpu_identical([&](Device dev) { return take(a, idx, dev); });
      array idx1 = test::random_array({4, 6}, id, 0, 5);
      expect_gpu_identical([&](Device dev) { return take(a, idx1, 2, dev); });
      expect_gpu_identical([&](Device dev) {
        return gather(a, {idx, idx1}, {0, 2}, {1, 4, 1}, dev);
      });
      array along = test::random_array({13, 3, 5}, id, 0, 17);
      expect_gpu_identical([&](Device dev) { return take_along_axis(a, along, 1, dev); });
    }
    // A transposed source and an empty index.
    array at = transpose(a, kCpu);
    array idx = test::random_array({7}, int32, -5, 5);
    expect_gpu_identical([&](Device dev) { return take(at, idx, 1, dev); });
    expect_gpu_identical([&](Device dev) { return take(a, zeros({0}, int32), 1, dev); });
  }
}

TEST(GpuIndexing, ScattersWithDuplicatesMatchCpu) {
  REQUIRE_GPU();
  for (Dtype d : kAllDtypes) {
    array a = test::random_array({11, 6}, d, -4, 4);
    array idx = test::random_array({40}, int32, -11, 11);  // many duplicates
    array upd = test::random_array({40, 1, 6}, d, -2, 2);
    SCOPED_TRACE(msg(d));
    // Integers are exact whatever the order of the atomic updates; floats within tolerance
    // (half types round at every step, so the order moves results by a few ulps).
    const double rtol = d == float16 || d == bfloat16 ? 5e-2 : 1e-3;
    expect_gpu_matches_cpu([&](Device dev) { return scatter_add(a, {idx}, upd, {0}, dev); }, rtol);
    if (d != complex64) {
      array pu = test::random_array({40, 1, 6}, d, 0.5, 1.5);
      expect_gpu_matches_cpu([&](Device dev) { return scatter_prod(a, {idx}, pu, {0}, dev); },
                             rtol);
      expect_gpu_identical([&](Device dev) { return scatter_max(a, {idx}, upd, {0}, dev); });
      expect_gpu_identical([&](Device dev) { return scatter_min(a, {idx}, upd, {0}, dev); });
    }
    // Distinct targets: assignment is deterministic.
    array perm = argsort(test::random_array({11}, float32), 0, kCpu);
    array pupd = test::random_array({11, 1, 6}, d, -2, 2);
    expect_gpu_identical([&](Device dev) { return scatter(a, {perm}, pupd, {0}, dev); });
    array vals = test::random_array({11, 2}, d, -2, 2);
    array distinct = stack({zeros({11}, int64), full({11}, 5, int64)}, 1, kCpu);
    expect_gpu_identical([&](Device dev) { return put_along_axis(a, distinct, vals, 1, dev); });
  }
  // NaN updates propagate through max and min.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  array a = zeros({3}, float32);
  array idx({0, 0, 1});
  array upd({nan, 1.0f, 2.0f}, {3, 1});
  expect_gpu_identical([&](Device dev) { return scatter_max(a, {idx}, upd, {0}, dev); });
}

// Many whole rows summed into few targets (an embedding's gradient): the GPU sorts the
// positions by target and sums each run before one atomic. Half of the positions hit one
// row; the rest spread with negative indices. float32/float64 are checked tightly against
// float64 sums (a lost or doubled run would show); half types within their rounding; a
// transposed update (the general per-element scatter) gives the same sums.
TEST(GpuIndexing, RowSumsOfManyPositionsSortByTarget) {
  REQUIRE_GPU();
  const int V = 300, D = 96, P = 5000;
  array spread = test::random_array({P}, int32, -V, V);
  array idx = where(arange(P, int32) % 2 == 0, full({P}, 7, int32), spread, kCpu);
  for (Dtype d : {float32, float64, float16, bfloat16}) {
    array a = test::random_array({V, D}, d, -4, 4);
    array upd = test::random_array({P, 1, D}, d, -2, 2);
    const auto want = test::to_double(
        scatter_add(astype(a, float64, kCpu), {idx}, astype(upd, float64, kCpu), {0}, kCpu));
    const auto mag = test::to_double(scatter_add(abs(astype(a, float64, kCpu), kCpu), {idx},
                                                 abs(astype(upd, float64, kCpu), kCpu), {0}, kCpu));
    // The same values with the features strided: the per-element scatter.
    array strided = transpose(contiguous(transpose(upd, {2, 1, 0}, kCpu), false, kCpu), {2, 1, 0});
    for (const auto& [name, u] : {std::pair{"rows", upd}, std::pair{"strided", strided}}) {
      SCOPED_TRACE(msg(d, " ", name));
      const auto got = test::to_double(scatter_add(a, {idx}, u, {0}, kGpu));
      // Runs sum in float (double); half types also round each run's sum and each add.
      const double eps = d == float64 ? 1e-15 : d == float32 ? 1e-7 : d == float16 ? 1e-3 : 8e-3;
      int bad = 0;
      for (size_t i = 0; i < got.size() && bad < 5; ++i) {
        if (!(std::abs(got[i] - want[i]) <= 4 * eps * mag[i])) {
          ++bad;
          ADD_FAILURE() << "element " << i << " (row " << i / D << "): " << got[i] << " vs "
                        << want[i] << " (sum of magnitudes " << mag[i] << ")";
        }
      }
    }
  }
}

// NumPy's rule for `a[idx] = v` with repeated indices: the last index position wins. The
// CPU applies updates in order; the GPU must pick the same winners whatever its thread order.
TEST(GpuIndexing, AssignmentWithRepeatedIndicesKeepsTheLast) {
  REQUIRE_GPU();
  // Distinct values per position, so that any other winner shows (bool excepted).
  auto distinct_updates = [](const Shape& shape, Dtype d) {
    array v =
        reshape(arange(0, static_cast<double>(shape_size(shape)), 1, float32, kCpu), shape, kCpu);
    return astype(d == bool_ ? v : remainder(v, array(100.0f), kCpu), d, kCpu);
  };
  for (Dtype d : kAllDtypes) {
    SCOPED_TRACE(msg(d));
    array a = test::random_array({11, 6}, d, -4, 4);
    array idx = test::random_array({40}, int32, -11, 11);
    // One indexed axis: positions keyed by their start.
    expect_gpu_identical([&](Device dev) {
      return scatter(a, {idx}, distinct_updates({40, 1, 6}, d), {0}, dev);
    });
    // Outer slice axes before the indexed one, and a transposed (column-major) target.
    array b = transpose(test::random_array({11, 6}, d, -4, 4), kCpu);
    expect_gpu_identical([&](Device dev) {
      return scatter(b, {idx}, distinct_updates({40, 6, 1}, d), {1}, dev);
    });
    // Two indexed axes of a 3-d array: starts combine strides of both.
    array c = test::random_array({5, 4, 7}, d, -4, 4);
    array i0 = test::random_array({3, 30}, int64, 0, 5), i2 = test::random_array({30}, uint8, 0, 7);
    expect_gpu_identical([&](Device dev) {
      return scatter(c, {i0, i2}, distinct_updates({3, 30, 1, 4, 1}, d), {0, 2}, dev);
    });
    // Slices of 3 rows along the indexed axis overlap at different offsets: keyed by element.
    array w = test::random_array({25}, int32, 0, 9);
    expect_gpu_identical([&](Device dev) {
      return scatter(a, {w}, distinct_updates({25, 3, 6}, d), {0}, dev);
    });
    // put_along_axis with indices repeating along the axis.
    array along = test::random_array({11, 9}, int32, -6, 6);
    expect_gpu_identical([&](Device dev) {
      return put_along_axis(a, along, distinct_updates({11, 9}, d), 1, dev);
    });
  }
  // Many threads racing for a few rows, checked against the rule itself.
  const int rows = 7, n = 200000;
  array idx = test::random_array({n}, int32, 0, rows);
  array upd = reshape(arange(0, static_cast<double>(2 * n), 1, float32, kCpu), {n, 1, 2}, kCpu);
  array got = scatter(zeros({rows, 2}, float32), {idx}, upd, {0}, kGpu);
  got.eval();
  idx.eval();
  std::vector<double> expected(2 * rows, 0.0);
  const auto* ip = idx.data<int32_t>();
  for (int k = 0; k < n; ++k) {
    expected[2 * ip[k]] = 2.0 * k;
    expected[2 * ip[k] + 1] = 2.0 * k + 1;
  }
  test::expect_allclose(got, {rows, 2}, expected, 0);
}

TEST(GpuIndexing, OutOfRangeIndicesRaiseTheCpusErrorFromHostAndDevice) {
  REQUIRE_GPU();
  array a = test::random_array({5, 4}, float32);
  using Build = std::function<array(const array& idx, Device dev)>;
  // The CPU's error for the host indices, then the GPU's with the indices on the host or
  // (computed on the GPU, with no host copy) on the device only.
  auto expect_error = [&](const array& host_idx, bool on_device, const Build& build) {
    std::string expected;
    try {
      build(host_idx, kCpu).eval();
      ADD_FAILURE() << "the CPU raised nothing";
    } catch (const std::out_of_range& e) {
      expected = e.what();
    }
    array idx = host_idx;
    if (on_device) {
      idx = add(host_idx, array(0), kGpu);
      idx.eval();
      ASSERT_FALSE(idx.storage().has_host());
    }
    try {
      build(idx, kGpu).eval();
      ADD_FAILURE() << "the GPU raised nothing";
    } catch (const std::out_of_range& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  };
  const Build cases[] = {
      [&](const array& i, Device dev) { return take(a, i, 0, dev); },
      [&](const array& i, Device dev) {
        return scatter_add(a, {i}, ones({3, 1, 4}, float32), {0}, dev);
      },
      [&](const array& i, Device dev) {
        return take_along_axis(a, reshape(i, {3, 1}, dev), 0, dev);
      },
      [&](const array& i, Device dev) {
        return put_along_axis(a, reshape(i, {3, 1}, dev), ones({3, 1}, float32), 0, dev);
      },
  };
  for (bool on_device : {false, true}) {
    for (const array& idx : {array({0, 7, 1}), array({-1, 2, -9})}) {
      for (size_t c = 0; c < std::size(cases); ++c) {
        SCOPED_TRACE(msg("case ", c, on_device ? " (device indices)" : " (host indices)"));
        expect_error(idx, on_device, cases[c]);
      }
    }
  }
  // Host rows and device columns: the device's flags are armed for the second operand
  // although the first needed none, so its bad index (9 of 4) is still found.
  array cols = add(array({0, 9, 1}), array(0), kGpu);
  cols.eval();
  ASSERT_FALSE(cols.storage().has_host());
  EXPECT_THROW(gather(a, {array({0, 1, 2}), cols}, {0, 1}, {1, 1}, kGpu).eval(),
               std::out_of_range);
  array good = add(array({0, 3, 1}), array(0), kGpu);
  expect_same(gather(a, {array({0, 1, 2}), good}, {0, 1}, {1, 1}, kGpu),
              gather(a, {array({0, 1, 2}), array({0, 3, 1})}, {0, 1}, {1, 1}, kCpu));
  // The stream and the other arrays stay usable.
  expect_gpu_matches_cpu([&](Device dev) { return take(a, array({1, -1}), 0, dev); });
}

#else

TEST(GpuReduce, RequiresCuda) {
  GTEST_SKIP() << "kiln was built without CUDA";
}

#endif  // KILN_WITH_CUDA
