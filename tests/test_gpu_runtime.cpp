// The CUDA runtime: availability without a GPU, the device allocator (statistics, limits,
// out-of-memory errors), buffers kept alive while the GPU uses them, JIT modules on a device,
// cuBLASLt GEMM, and the first GPU kernels (Add, Exp, AsType, Copy, Reshape, views) against
// the CPU on random inputs (streams, events and copies: test_gpu_streams.cpp). Tests that
// need a GPU skip with the reason when there is none.
#include <gtest/gtest.h>

#ifdef KILN_WITH_CUDA

#include <chrono>
#include <cmath>
#include <complex>
#include <functional>
#include <thread>

#include "gpu_test_utils.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/blas.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/backend/gpu.h"
#include "kiln/host_writes.h"
#include "kiln/primitives.h"
#include "test_utils.h"

using namespace kiln;
using namespace gpu_test;

namespace {

// Arrays of the same values in several layouts: row-contiguous, transposed (contiguous but
// not row-major), a broadcast view, and when slicing exists a strided slice (an offset
// view). Built on the CPU; the GPU reads them through lazily mirrored copies.
std::vector<std::pair<std::string, array>> layouts(const Shape& shape, Dtype dtype, double lo = -2,
                                                   double hi = 2) {
  std::vector<std::pair<std::string, array>> out;
  out.emplace_back("row", test::random_array(shape, dtype, lo, hi));
  Shape rev(shape.rbegin(), shape.rend());
  out.emplace_back("transposed", transpose(test::random_array(rev, dtype, lo, hi), kCpu));
  Shape one = shape;
  one[0] = 1;
  out.emplace_back("broadcast", broadcast_to(test::random_array(one, dtype, lo, hi), shape, kCpu));
  try {
    Shape big = shape;
    big.back() = 2 * shape.back() + 1;
    Shape start(shape.size(), 0), stop = big, step(shape.size(), 1);
    start.back() = 1;
    step.back() = 2;
    array s = slice(test::random_array(big, dtype, lo, hi), start, stop, step, kCpu);
    s.eval();
    out.emplace_back("strided_slice", s);
  } catch (const std::logic_error&) {
    // slice has not landed yet
  }
  for (auto& [name, a] : out) a.eval();
  return out;
}

const Dtype kAllDtypes[] = {bool_, uint8, uint16,  uint32,   uint64,  int8,    int16,
                            int32, int64, float16, bfloat16, float32, float64, complex64};

}  // namespace

// ---------------------------------------------------------------- without a GPU

TEST(GpuRuntime, WithoutAGpuNothingThrowsAndTheCpuIsTheDefault) {
  if (gpu::is_available()) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(gpu::unavailable_reason().empty());
  EXPECT_EQ(gpu::device_count(), 0);
  EXPECT_FALSE(is_available(kGpu));
  const char* env = std::getenv("KILN_DEVICE");
  if (!env || std::string(env) != "gpu") {
    EXPECT_EQ(default_device(), Device(kCpu));
  }
  EXPECT_THROW(new_stream(kGpu), std::invalid_argument);
  EXPECT_THROW(set_default_device(kGpu), std::invalid_argument);
  EXPECT_THROW(get_active_memory(kGpu), std::runtime_error);
  EXPECT_THROW(gpu::device_context(0), std::runtime_error);
  EXPECT_EQ(add(array(1.0f), array(2.0f), kCpu).item<float>(), 3.0f);
}

TEST(GpuRuntime, UnavailableReasonNamesTheDriver) {
  if (gpu::is_available()) GTEST_SKIP() << "a GPU is present";
  // On a machine without libcuda.so.1 (CI) the reason says so.
  std::string r = gpu::unavailable_reason();
  EXPECT_TRUE(r.find("libcuda.so.1") != std::string::npos ||
              r.find("device") != std::string::npos || r.find("driver") != std::string::npos)
      << r;
}

TEST(GpuAllocator, SizeClassesWasteAtMostAnEighth) {
  size_t prev = 0;
  for (size_t n = 1; n < (size_t(1) << 34); n = n * 3 / 2 + 1) {
    size_t b = gpu::DeviceAllocator::block_size_for(n);
    EXPECT_GE(b, n);
    EXPECT_GE(b, prev);
    EXPECT_EQ(b % 64, 0u) << n;
    if (n > 512) {
      EXPECT_LE(b - n, n / 8 + 1) << n;
    }
    EXPECT_EQ(gpu::DeviceAllocator::block_size_for(b), b) << "a class maps to itself";
    prev = b;
  }
}

TEST(GpuLaunch, KernelArgsKeepTypesAndAlignment) {
  struct alignas(8) Pair {
    int32_t a;
    double b;
  };
  gpu::KernelArgs args;
  args.append(int8_t{-3}).append(3.5).append(int32_t{7}).append(Pair{1, 2.5}).append(uint16_t{9});
  ASSERT_EQ(args.size(), 5u);
  void** p = args.params();
  EXPECT_EQ(*static_cast<int8_t*>(p[0]), -3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p[1]) % alignof(double), 0u);
  EXPECT_EQ(*static_cast<double*>(p[1]), 3.5);
  EXPECT_EQ(*static_cast<int32_t*>(p[2]), 7);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p[3]) % alignof(Pair), 0u);
  EXPECT_EQ(static_cast<Pair*>(p[3])->b, 2.5);
  EXPECT_EQ(*static_cast<uint16_t*>(p[4]), 9);
  EXPECT_EQ(p[5], nullptr);
  // Growing keeps earlier values.
  for (int i = 0; i < 1000; ++i) args.append(int64_t{i});
  p = args.params();
  EXPECT_EQ(*static_cast<double*>(p[1]), 3.5);
  EXPECT_EQ(*static_cast<int64_t*>(p[5 + 999]), 999);
}

// ---------------------------------------------------------------- device and kernels

TEST(GpuRuntime, DeviceProperties) {
  REQUIRE_GPU();
  EXPECT_GE(gpu::device_count(), 1);
  auto& ctx = gpu::device_context(0);
  EXPECT_FALSE(ctx.name().empty());
  EXPECT_GE(ctx.compute_capability(), 70);
  EXPECT_TRUE(ctx.target().starts_with("sm_") || ctx.target().starts_with("compute_"));
  EXPECT_GT(ctx.total_memory(), size_t(1) << 30);
  EXPECT_GT(ctx.sm_count(), 0);
  EXPECT_THROW(gpu::device_context(gpu::device_count()), std::invalid_argument);
}

TEST(GpuOps, AddMatchesCpuOnEveryDtypeAndLayout) {
  REQUIRE_GPU();
  for (Dtype d : kAllDtypes) {
    for (Shape shape : {Shape{1000003}, Shape{37, 129}, Shape{3, 5, 7, 11}}) {
      auto xs = layouts(shape, d), ys = layouts(shape, d);
      for (auto& [xn, x] : xs) {
        for (auto& [yn, y] : ys) {
          SCOPED_TRACE(msg(d, " ", shape_str(shape), " ", xn, " + ", yn));
          expect_gpu_matches_cpu([&](Device dev) { return add(x, y, dev); });
        }
      }
      SCOPED_TRACE(msg(d, " ", shape_str(shape), " with scalars"));
      array s = test::random_array({}, d);
      expect_gpu_matches_cpu([&](Device dev) { return add(xs[0].second, s, dev); });
      expect_gpu_matches_cpu([&](Device dev) { return add(s, xs[1].second, dev); });
      expect_gpu_matches_cpu([&](Device dev) { return add(s, s, dev); });
    }
  }
}

TEST(GpuOps, AddWrapsIntegersAndOrsBools) {
  REQUIRE_GPU();
  array a({int8_t{100}, int8_t{-128}}), b({int8_t{100}, int8_t{-1}});
  expect_gpu_matches_cpu([&](Device dev) { return add(a, b, dev); });
  array t({true, false, true}), f({false, false, true});
  array r = add(t, f, kGpu);
  EXPECT_EQ(test::to_double(r), (std::vector<double>{1, 0, 1}));
}

TEST(GpuOps, ExpMatchesCpu) {
  REQUIRE_GPU();
  for (Dtype d : {float16, bfloat16, float32, float64, complex64}) {
    for (Shape shape : {Shape{1 << 20}, Shape{3}, Shape{33, 65}}) {
      for (auto& [name, x] : layouts(shape, d, -5, 5)) {
        SCOPED_TRACE(msg(d, " ", shape_str(shape), " ", name));
        expect_gpu_matches_cpu([&](Device dev) { return exp(x, dev); });
      }
    }
  }
  // Integers compute in float32.
  array i = test::random_array({100}, int32, -10, 10);
  expect_gpu_matches_cpu([&](Device dev) { return exp(i, dev); });
}

TEST(GpuOps, AsTypeEveryPairMatchesCpu) {
  REQUIRE_GPU();
  for (Dtype from : kAllDtypes) {
    // Values every dtype holds exactly enough: non-negative, below 100.
    for (auto& [name, x] : layouts({13, 517}, from, 0, 100)) {
      for (Dtype to : kAllDtypes) {
        SCOPED_TRACE(msg(from, " -> ", to, " ", name));
        expect_gpu_matches_cpu([&](Device dev) { return astype(x, to, dev); });
      }
    }
  }
}

TEST(GpuOps, AsTypeTruncatesAndRoundsLikeTheCpu) {
  REQUIRE_GPU();
  // Truncation toward zero, within range (out-of-range conversions are undefined in C++).
  array f({-2.75f, -0.5f, 0.5f, 1.5f, 2.5f, 100.7f, -100.7f});
  for (Dtype to : {int8, int16, int32, int64, bool_}) {
    SCOPED_TRACE(msg("float32 -> ", to));
    expect_gpu_matches_cpu([&](Device dev) { return astype(f, to, dev); }, 0.0);
  }
  // Rounding to nearest even, overflow to infinity, subnormals.
  array g({1.0009765625f, 1.00048828125f, 65519.0f, 65520.0f, 1e-8f, 6e-5f, 3.3e38f, -3.3e38f});
  for (Dtype to : {float16, bfloat16, float64}) {
    SCOPED_TRACE(msg("float32 -> ", to));
    expect_gpu_matches_cpu([&](Device dev) { return astype(g, to, dev); }, 0.0);
  }
  array c(std::initializer_list<complex64_t>{{1.5f, -2.0f}, {0.0f, 3.0f}, {0.0f, 0.0f}});
  for (Dtype to : {float32, int32, bool_}) {
    SCOPED_TRACE(msg("complex64 -> ", to));
    expect_gpu_matches_cpu([&](Device dev) { return astype(c, to, dev); }, 0.0);
  }
}

TEST(GpuOps, CopyReshapeTransposeBroadcast) {
  REQUIRE_GPU();
  for (Dtype d : {bool_, int16, float32, complex64, float64}) {
    for (auto& [name, x] : layouts({6, 10, 14}, d)) {
      SCOPED_TRACE(msg(d, " ", name));
      expect_gpu_matches_cpu([&](Device dev) { return copy(x, dev); });
      expect_gpu_matches_cpu([&](Device dev) { return reshape(x, {60, 14}, dev); });
      expect_gpu_matches_cpu([&](Device dev) { return reshape(x, {-1}, dev); });
      expect_gpu_matches_cpu([&](Device dev) { return transpose(x, {2, 0, 1}, dev); });
      expect_gpu_matches_cpu([&](Device dev) {
        return copy(broadcast_to(reshape(x, {6, 1, 10, 14}, dev), {6, 3, 10, 14}, dev), dev);
      });
      // A reshape of a transposed array cannot be a view: the GPU copies.
      expect_gpu_matches_cpu([&](Device dev) { return reshape(transpose(x, dev), {-1}, dev); });
    }
  }
}

TEST(GpuOps, ViewsShareTheBufferOnTheGpu) {
  REQUIRE_GPU();
  array x = copy(test::random_array({8, 16}, float32), kGpu);
  x.eval();
  array t = transpose(x, kGpu), b = broadcast_to(x, {2, 8, 16}, kGpu), r = reshape(x, {128}, kGpu);
  eval(t, b, r);
  EXPECT_EQ(t.storage_ptr(), x.storage_ptr());
  EXPECT_EQ(b.storage_ptr(), x.storage_ptr());
  EXPECT_EQ(r.storage_ptr(), x.storage_ptr());
  EXPECT_FALSE(x.storage().has_host()) << "a view must not bring the data to the host";
}

// A host buffer written through a writable Python view (host_writes::add_writer) between
// GPU reads: each read sees the host's current values.
TEST(GpuOps, HostWritesThroughWritableViewsReachTheGpu) {
  REQUIRE_GPU();
  array x = test::random_array({257}, float32);
  x.eval();
  auto ref = test::to_double(x);
  auto twice = [&] { return test::to_double(multiply(x, array(2.0f), kGpu)); };
  auto expect_twice = [&](const std::vector<double>& v) {
    auto got = twice();
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], 2 * v[i]) << i;
  };
  expect_twice(ref);  // the first read uploads
  ASSERT_TRUE(x.storage().has_device());
  host_writes::add_writer(x.storage());
  float* host = x.data<float>();
  host[3] = 7.5f;
  ref[3] = 7.5;
  expect_twice(ref);  // refreshed while the writer lives
  host[100] = -1.25f;
  ref[100] = -1.25;
  host_writes::remove_writer(x.storage());
  expect_twice(ref);  // and once after it is released
  expect_twice(ref);
}

TEST(GpuOps, ManyDimensionsAndEmptyArrays) {
  REQUIRE_GPU();
  // Five non-mergeable dimensions: the kernel with a run-time dimension count.
  array x = test::random_array({2, 3, 4, 5, 6}, float32);
  array y = test::random_array({6, 5, 4, 3, 2}, float32);
  expect_gpu_matches_cpu([&](Device dev) {
    return add(transpose(x, {4, 2, 0, 3, 1}, dev), transpose(y, {0, 2, 4, 1, 3}, dev), dev);
  });
  expect_gpu_matches_cpu([&](Device dev) { return exp(transpose(x, {1, 3, 0, 4, 2}, dev), dev); });
  for (Shape shape : {Shape{0}, Shape{3, 0, 2}}) {
    array e = test::random_array(shape, float32);
    array g = add(exp(e, kGpu), e, kGpu);
    g.eval();
    EXPECT_EQ(g.shape(), shape);
    EXPECT_EQ(g.size(), 0u);
  }
}

TEST(GpuOps, UnsupportedDtypeThrowsAndTheStreamStaysUsable) {
  REQUIRE_GPU();
  array i = test::random_array({10}, int32);
  array bad({10}, int32, std::make_shared<Exp>(default_stream(kGpu)), {i});
  try {
    bad.eval();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[Exp::eval_gpu]"), std::string::npos) << e.what();
  }
  expect_gpu_matches_cpu([&](Device dev) { return add(i, i, dev); });
}

// ---------------------------------------------------------------- memory

TEST(GpuMemory, StatisticsCacheAndLimits) {
  REQUIRE_GPU();
  synchronize();
  clear_cache(kGpu);
  EXPECT_EQ(get_cache_memory(kGpu), 0u);
  const size_t base = get_active_memory(kGpu);
  reset_peak_memory(kGpu);
  const int n = 1 << 22;  // 16 MiB of float32
  {
    array x = test::random_array({n}, float32);
    array y = exp(x, kGpu);
    y.eval();
    // The mirrored input and the output.
    EXPECT_GE(get_active_memory(kGpu), base + 2 * n * sizeof(float));
    EXPECT_GE(get_peak_memory(kGpu), get_active_memory(kGpu));
  }
  synchronize();
  EXPECT_LE(get_active_memory(kGpu), base) << "buffers are released once the GPU is done";
  EXPECT_GE(get_cache_memory(kGpu), 2 * n * sizeof(float)) << "freed blocks are cached";
  EXPECT_GE(get_peak_memory(kGpu), base + 2 * n * sizeof(float));
  // A new allocation of the same size reuses a cached block.
  size_t cached = get_cache_memory(kGpu);
  {
    array y = exp(test::random_array({n}, float32), kGpu);
    y.eval();
    EXPECT_LT(get_cache_memory(kGpu), cached);
  }
  synchronize();
  size_t old_cache_limit = set_cache_limit(kGpu, 0);
  EXPECT_EQ(get_cache_memory(kGpu), 0u);
  set_cache_limit(kGpu, old_cache_limit);
  size_t old_limit = set_memory_limit(kGpu, 12345);
  EXPECT_EQ(get_memory_limit(kGpu), 12345u);
  set_memory_limit(kGpu, old_limit);
  EXPECT_EQ(get_memory_limit(kGpu), old_limit);
}

TEST(GpuMemory, LimitGivesAClearErrorAndRecovers) {
  REQUIRE_GPU();
  synchronize();
  const int n = 1 << 22;
  array x = test::random_array({n}, float32);
  size_t old = set_memory_limit(kGpu, get_active_memory(kGpu) + (1 << 20));
  array y = exp(x, kGpu);
  try {
    y.eval();
    set_memory_limit(kGpu, old);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    set_memory_limit(kGpu, old);
    std::string what = e.what();
    EXPECT_NE(what.find("[gpu::malloc]"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(size_t(n) * 4)), std::string::npos) << what;
    EXPECT_NE(what.find("memory limit"), std::string::npos) << what;
  }
  expect_gpu_matches_cpu([&](Device dev) { return exp(x, dev); });
}

TEST(GpuMemory, OutOfMemoryGivesAClearError) {
  REQUIRE_GPU();
  size_t old = set_memory_limit(kGpu, ~size_t(0));
  // 4 TiB: a broadcast view costs nothing until copied.
  array huge = broadcast_to(array(1.0f), {1 << 20, 1 << 20}, kGpu);
  array c = copy(huge, kGpu);
  try {
    c.eval();
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("out of memory"), std::string::npos) << what;
    EXPECT_NE(what.find("4398046511104"), std::string::npos) << what;
  }
  set_memory_limit(kGpu, old);
  array x = test::random_array({1000}, float32);
  expect_gpu_matches_cpu([&](Device dev) { return add(x, x, dev); });
}

// MLX had a use-after-free here: the user drops the input right after async_eval, the
// buffer returns to the allocator, and other work reuses it before the GPU has read it.
TEST(GpuMemory, BuffersLiveUntilTheGpuIsDone) {
  REQUIRE_GPU();
  Stream s1 = new_stream(kGpu), s2 = new_stream(kGpu);
  const int n = 1 << 22;
  array x = test::random_array({n}, float32);
  const auto xs = test::to_double(x);
  // Compile and load the kernels, and mirror x on the device, so that the timed part below
  // only enqueues (an upload of pageable memory behind a busy stream would block).
  eval(gpu_sleep(1, s1), exp(array({1.0f, 2.0f}), s1), add(x, x, s1), add(x, x, s2));
  synchronize();
  const size_t base = get_active_memory(kGpu);  // includes x's device copy
  const size_t bytes = n * sizeof(float);

  array delay = gpu_sleep(1000, s1);  // everything after it on s1 runs a second later
  array y = exp(x, s1);
  async_eval(delay, y);
  x = array(0.0f);  // drop the input: only the in-flight work holds its buffers now
  delay = array(0.0f);
  // Once s1's worker has enqueued exp, y is allocated and x's device copy still held.
  auto t0 = std::chrono::steady_clock::now();
  while (get_active_memory(kGpu) < base + bytes &&
         std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GE(get_active_memory(kGpu), base + bytes);
  EXPECT_FALSE(y.is_available());
  // Allocation pressure on another stream: a block freed early would be reused and
  // overwritten here, before exp reads it.
  for (int i = 0; i < 8; ++i) {
    array z = add(full({n}, 7.0f, kCpu), array(1.0f), s2);
    z.eval();
    EXPECT_EQ(z.data<float>()[n - 1], 8.0f);
  }
  y.eval();
  test::expect_allclose(y, {n}, test::map_ref(xs, [](double v) { return std::exp(v); }));
  y = array(0.0f);
  synchronize();
  EXPECT_LE(get_active_memory(kGpu), base - bytes) << "x's copy is released once the GPU is done";
}

// ---------------------------------------------------------------- JIT on a device

TEST(GpuJit, CustomKernelFromSourceRunsAndIsCached) {
  REQUIRE_GPU();
  int builds = 0;
  auto build = [&] {
    ++builds;
    return gpu::ModuleSource{
        "test_axpb",
        "#include \"kiln/backend/cuda/device/cast.cuh\"\n"
        "template <typename T>\n"
        "__global__ void axpb(const T* x, T* y, float a, float b, long long n) {\n"
        "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] = T(a * float(x[i]) + b);\n"
        "}\n",
        {"axpb<float>", "axpb<kiln::bfloat16>"}};
  };
  for (Dtype d : {float32, bfloat16}) {
    array x = test::random_array({1000}, d);
    array y = gpu_lambda(
        {1000}, d, {x},
        [&](const std::vector<array>& in, array& out, gpu::DeviceStream& s) {
          out.set_data(gpu::new_device_storage(out.nbytes(), s));
          const char* name = d == float32 ? "axpb<float>" : "axpb<kiln::bfloat16>";
          CUfunction f = gpu::get_kernel(s.context().index(), "test_axpb", build, name);
          // Through KernelArgs, as custom kernels pack parameters.
          gpu::KernelArgs args;
          args.append(gpu::device_address(in[0]))
              .append(gpu::device_address(out))
              .append(3.0f)
              .append(-1.0f)
              .append(int64_t{1000});
          gpu::launch(f, gpu::grid_1d(1000, 128), {128}, 0, s, args.params());
        },
        default_stream(kGpu));
    auto xs = test::to_double(x);
    test::expect_allclose(y, {1000}, test::map_ref(xs, [](double v) { return 3 * v - 1; }));
  }
  EXPECT_EQ(builds, 1) << "one module, built once, serves both kernels";
}

TEST(GpuJit, CompileErrorOnTheDeviceLeavesItUsable) {
  REQUIRE_GPU();
  array y = gpu_lambda(
      {1}, float32, {},
      [](auto&, array& out, gpu::DeviceStream& s) {
        gpu::get_kernel(
            s.context().index(), "test_broken",
            [] {
              return gpu::ModuleSource{"test_broken", "__global__ void k() { nope; }", {"k"}};
            },
            "k");
      },
      default_stream(kGpu));
  EXPECT_THROW(y.eval(), gpu::CompileError);
  array x = test::random_array({10}, float32);
  expect_gpu_matches_cpu([&](Device dev) { return add(x, x, dev); });
}

// ---------------------------------------------------------------- cuBLASLt

TEST(GpuBlas, GemmMatchesAFloat64Reference) {
  REQUIRE_GPU();
  struct Case {
    Dtype dtype;
    bool ta, tb, tf32;
    int batch, m, n, k;
  };
  const Case cases[] = {
      {float32, false, false, false, 1, 64, 48, 32}, {float32, true, false, false, 3, 17, 33, 65},
      {float32, false, true, true, 2, 128, 64, 256}, {float16, false, false, false, 4, 64, 64, 64},
      {bfloat16, true, true, false, 2, 96, 40, 72},  {float64, false, true, false, 2, 31, 29, 27},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(msg(c.dtype, " ta=", c.ta, " tb=", c.tb, " tf32=", c.tf32, " batch=", c.batch,
                     " m=", c.m, " n=", c.n, " k=", c.k));
    Shape sa = c.ta ? Shape{c.batch, c.k, c.m} : Shape{c.batch, c.m, c.k};
    Shape sb = c.tb ? Shape{c.batch, c.n, c.k} : Shape{c.batch, c.k, c.n};
    array a = test::random_array(sa, c.dtype, -1, 1), b = test::random_array(sb, c.dtype, -1, 1);
    array out = gpu_lambda(
        {c.batch, c.m, c.n}, c.dtype, {a, b},
        [c](const std::vector<array>& in, array& o, gpu::DeviceStream& s) {
          o.set_data(gpu::new_device_storage(o.nbytes(), s));
          gpu::GemmArgs g;
          g.dtype = c.dtype;
          g.transpose_a = c.ta;
          g.transpose_b = c.tb;
          g.m = c.m, g.n = c.n, g.k = c.k;
          g.a = gpu::device_address(in[0]), g.lda = c.ta ? c.m : c.k,
          g.stride_a = int64_t(c.m) * c.k;
          g.b = gpu::device_address(in[1]), g.ldb = c.tb ? c.k : c.n,
          g.stride_b = int64_t(c.k) * c.n;
          g.c = gpu::device_address(o), g.ldc = c.n, g.stride_c = int64_t(c.m) * c.n;
          g.batch = c.batch;
          g.allow_tf32 = c.tf32;
          gpu::gemm(g, s);
        },
        default_stream(kGpu));
    auto av = test::to_double(a), bv = test::to_double(b), ov = test::to_double(out);
    double tol = c.dtype == float64               ? 1e-12
                 : (c.tf32 || c.dtype == float16) ? 2e-3
                 : c.dtype == bfloat16            ? 1e-2
                                                  : 1e-5;
    int bad = 0;
    for (int p = 0; p < c.batch; ++p) {
      for (int i = 0; i < c.m; ++i) {
        for (int j = 0; j < c.n; ++j) {
          double ref = 0, mag = 0;
          for (int l = 0; l < c.k; ++l) {
            double x =
                c.ta ? av[(size_t(p) * c.k + l) * c.m + i] : av[(size_t(p) * c.m + i) * c.k + l];
            double y =
                c.tb ? bv[(size_t(p) * c.n + j) * c.k + l] : bv[(size_t(p) * c.k + l) * c.n + j];
            ref += x * y;
            mag += std::abs(x * y);
          }
          double got = ov[(size_t(p) * c.m + i) * c.n + j];
          if (std::abs(got - ref) > tol * (mag + 1) && bad++ < 5) {
            ADD_FAILURE() << "C[" << p << "," << i << "," << j << "] = " << got << ", expected "
                          << ref;
          }
        }
      }
    }
  }
}

TEST(GpuBlas, GemmRejectsBadArguments) {
  REQUIRE_GPU();
  auto run = [](gpu::GemmArgs g) {
    array y = gpu_lambda(
        {1}, float32, {},
        [g](auto&, array& out, gpu::DeviceStream& s) {
          out.set_data(gpu::new_device_storage(4, s));
          gpu::gemm(g, s);
        },
        default_stream(kGpu));
    y.eval();
  };
  gpu::GemmArgs g;
  g.m = g.n = g.k = 4;
  g.lda = g.ldb = g.ldc = 4;
  g.dtype = int32;
  EXPECT_THROW(run(g), std::invalid_argument);
  g.dtype = float32;
  g.lda = 2;
  EXPECT_THROW(run(g), std::invalid_argument);
  g.lda = 4;
  g.k = 0;
  EXPECT_THROW(run(g), std::invalid_argument);
}

#else

TEST(GpuRuntime, RequiresCuda) {
  GTEST_SKIP() << "kiln was built without CUDA";
}

#endif  // KILN_WITH_CUDA
