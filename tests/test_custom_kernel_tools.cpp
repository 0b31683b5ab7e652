// Custom kernels' compilation and debugging tools: MLX's math modes (compile_options),
// printf and Metal's os_log (output captured, in order), the GPU's checking mode
// (KILN_KERNEL_CHECK=1: compiled for sm_90 here, run on a GPU when there is one), the
// parallel compilation of an evaluation's kernels (a counter proves the overlap),
// precompiled kernels (PTX and cubins made by NVRTC here, inspected without a GPU, run on
// one), the Metal features kiln refuses by name, and the table of supported Metal names in
// docs/metal_support.md (every name in it exists in the headers, and every function the
// headers define is in it).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "kiln/backend/cpu/kernel_runtime/compiled_kernel.h"
#include "kiln/backend/kernels/embedded.h"
#include "kiln/backend/kernels/precompiled.h"
#include "kiln/fast.h"
#include "kiln/primitives_custom.h"
#include "scoped_env.h"
#include "test_utils.h"

#ifdef KILN_WITH_CUDA
#include "kiln/backend/cuda/jit.h"
#endif

namespace kiln {
namespace {

std::tuple<int, int, int> d1(int n) {
  return {n, 1, 1};
}

bool has_gpu() {
  return is_available(Device::gpu);
}

std::string random_tag() {
  static std::mt19937_64 g(std::random_device{}());
  return std::to_string(g());
}

using test::ScopedEnv;

using test::expect_throw_with;

// ---------------------------------------------------------------- math modes

// safe keeps IEEE special values (exp(-inf) == 0, NaN propagates, x / inf == 0); relaxed and
// fast give the same finite results within their error. Every mode compiles for sm_90 with
// its own flags (the mode is part of the module's name) and runs on the CPU and the GPU.
TEST(CustomKernelTools, MathModes) {
  const char* source = R"(
    uint i = thread_position_in_grid.x;
    float v = x[i];
    out[i * 4 + 0] = metal::exp(v) + metal::log(abs(v) + 1.0f);
    out[i * 4 + 1] = v / 3.0f + metal::sqrt(abs(v));
    out[i * 4 + 2] = metal::exp(-INFINITY);
    out[i * 4 + 3] = 1.0f / INFINITY;
  )";
  const std::vector<std::pair<fast::MathMode, const char*>> modes = {
      {fast::MathMode::safe, "safe"},
      {fast::MathMode::relaxed, "relaxed"},
      {fast::MathMode::fast, "fast"}};
  array x = test::random_array({64}, float32);
  auto xv = test::to_double(x);
  for (const auto& [mode, name] : modes) {
    SCOPED_TRACE(name);
    auto k = fast::metal_kernel(std::string("math_mode_") + name, {"x"}, {"out"}, source, "", true,
                                false, fast::CompileOptions{mode});
#ifdef KILN_WITH_CUDA
    std::string src = k.compile({float32}, {1}, {float32}, {}, "sm_90");
    EXPECT_EQ(src.find("math mode: ") != std::string::npos, mode != fast::MathMode::safe);
#endif
    std::vector<Device> devices = {Device::cpu};
    if (has_gpu()) devices.push_back(Device::gpu);
    for (Device dev : devices) {
      auto out = test::to_double(
          k({x}, {{256}}, {float32}, d1(64), d1(32), {}, std::nullopt, false, dev)[0]);
      for (int i = 0; i < 64; ++i) {
        const double v = xv[i];
        EXPECT_NEAR(out[i * 4], std::exp(v) + std::log(std::abs(v) + 1), 1e-4 * (1 + std::exp(v)));
        EXPECT_NEAR(out[i * 4 + 1], v / 3 + std::sqrt(std::abs(v)), 1e-4);
        if (mode != fast::MathMode::fast) {  // fast assumes no infinities
          EXPECT_EQ(out[i * 4 + 2], 0.0);
          EXPECT_EQ(out[i * 4 + 3], 0.0);
        }
      }
    }
  }
  // A fast-math kernel's library must not switch the process to flush-to-zero (crtfastmath.o).
  volatile float tiny = 1e-38f;
  EXPECT_GT(tiny / 16.0f, 0.0f) << "subnormal results flushed to zero after loading a kernel";
}

// ---------------------------------------------------------------- printf and os_log

// printf (CUDA and Metal bodies) and Metal's os_log print whole lines, flushed at eval; a
// kernel's output comes before what the program prints after the eval.
TEST(CustomKernelTools, PrintfAndOsLogAreFlushedAtEval) {
  auto metal = fast::metal_kernel("print_metal", {"x"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    os_log_default.log("os_log thread %u value %d", i, x[i]);
    metal::os_log logger("kiln.tests", "custom");
    logger.log_info("info from %u", i);
    printf("printf thread %u\n", i);
    out[i] = x[i];
  )");
  auto cuda = fast::cuda_kernel("print_cuda", {"x"}, {"out"}, R"(
    int i = threadIdx.x;
    printf("cuda thread %d value %d\n", i, x[i]);
    out[i] = x[i];
  )");
#ifdef KILN_WITH_CUDA
  metal.compile({int32}, {1}, {int32}, {}, "sm_90");
  cuda.compile({int32}, {1}, {int32}, {}, "sm_90");
#endif
  std::vector<Device> devices = {Device::cpu};
  if (has_gpu()) devices.push_back(Device::gpu);
  for (Device dev : devices) {
    SCOPED_TRACE(dev == Device::cpu ? "CPU" : "GPU");
    array x = array({7, 8, 9}, int32);
    testing::internal::CaptureStdout();
    auto a = metal({x}, {{3}}, {int32}, d1(3), d1(3), {}, std::nullopt, false, dev)[0];
    auto b = cuda({x}, {{3}}, {int32}, d1(3), d1(3), {}, std::nullopt, false, dev)[0];
    eval({a, b});
    std::printf("after eval\n");
    std::fflush(stdout);
    const std::string text = testing::internal::GetCapturedStdout();
    for (int t = 0; t < 3; ++t) {
      for (const std::string& line :
           {"os_log thread " + std::to_string(t) + " value " + std::to_string(7 + t) + "\n",
            "info from " + std::to_string(t) + "\n", "printf thread " + std::to_string(t) + "\n",
            "cuda thread " + std::to_string(t) + " value " + std::to_string(7 + t) + "\n"}) {
        const size_t at = text.find(line);
        EXPECT_NE(at, std::string::npos) << line << " in:\n" << text;
        EXPECT_LT(at, text.find("after eval")) << line;
      }
    }
  }
}

// ---------------------------------------------------------------- GPU checking mode

// Kernels with one out-of-bounds access each: a read of an input, a write of an output, a
// shared (threadgroup) array, an atomic on an atomic output, a vector cast of an input.
struct OobCase {
  fast::KernelFunction fn;
  std::vector<Dtype> in;
  std::vector<int> ndims;
  std::vector<Dtype> out;
  std::vector<std::string> expect;  // in the error message
  std::function<std::vector<array>(const fast::KernelFunction&, Device)> run;
};

std::vector<OobCase> oob_cases() {
  std::vector<OobCase> cs;
  cs.push_back({fast::cuda_kernel("gpu_oob_read", {"x"}, {"out"}, R"(
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < 64) out[i] = x[i + (i == 63 ? 1 : 0)];
    )"),
                {float32},
                {1},
                {float32},
                {"[cuda_kernel]", "gpu_oob_read", "'x'", "index 64", "64 elements",
                 "block (1, 0, 0)", "thread (31, 0, 0)"},
                [](const fast::KernelFunction& k, Device dev) {
                  return k({test::random_array({64}, float32)}, {{64}}, {float32}, d1(64), d1(32),
                           {}, std::nullopt, false, dev);
                }});
  cs.push_back({fast::metal_kernel("gpu_oob_write", {"inp"}, {"out"}, R"(
      uint i = thread_position_in_grid.x;
      out[i == 40 ? 64 : i] = inp[i];
    )"),
                {float32},
                {1},
                {float32},
                {"[metal_kernel]", "gpu_oob_write", "'out'", "index 64", "block (1, 0, 0)",
                 "thread (8, 0, 0)"},
                [](const fast::KernelFunction& k, Device dev) {
                  return k({test::random_array({64}, float32)}, {{64}}, {float32}, d1(64), d1(32),
                           {}, std::nullopt, false, dev);
                }});
  cs.push_back({fast::metal_kernel("gpu_oob_shared", {"x"}, {"out"}, R"(
      threadgroup float tile[32];
      uint t = thread_position_in_threadgroup.x;
      tile[t] = x[thread_position_in_grid.x];
      threadgroup_barrier(mem_flags::mem_threadgroup);
      out[thread_position_in_grid.x] = tile[t == 5 ? 32 : t];
    )"),
                {float32},
                {1},
                {float32},
                {"gpu_oob_shared", "shared array 'tile'", "index 32", "thread (5, 0, 0)"},
                [](const fast::KernelFunction& k, Device dev) {
                  return k({test::random_array({32}, float32)}, {{32}}, {float32}, d1(32), d1(32),
                           {}, std::nullopt, false, dev);
                }});
  cs.push_back({fast::cuda_kernel("gpu_oob_dynamic_shared", {"x"}, {"out"}, R"(
      extern __shared__ float buf[];
      int t = threadIdx.x;
      buf[t] = x[t];
      __syncthreads();
      out[t] = buf[t == 3 ? 16 : t];
    )",
                                  "", true, false, 16 * sizeof(float)),
                {float32},
                {1},
                {float32},
                {"gpu_oob_dynamic_shared", "'buf'", "index 16", "thread (3, 0, 0)"},
                [](const fast::KernelFunction& k, Device dev) {
                  return k({test::random_array({16}, float32)}, {{16}}, {float32}, d1(16), d1(16),
                           {}, std::nullopt, false, dev);
                }});
  cs.push_back(
      {fast::metal_kernel("gpu_oob_atomic", {"idx"}, {"hist"}, R"(
      uint i = thread_position_in_grid.x;
      atomic_fetch_add_explicit(hist + idx[i], 1, memory_order_relaxed);
    )",
                          "", true, true),
       {int32},
       {1},
       {int32},
       {"gpu_oob_atomic", "'hist'", "index 8", "thread (3, 0, 0)"},
       [](const fast::KernelFunction& k, Device dev) {
         return k({array({0, 3, 7, 8}, int32)}, {{8}}, {int32}, d1(4), d1(4), {}, 0.0f, false, dev);
       }});
  cs.push_back({fast::cuda_kernel("gpu_oob_float4", {"x"}, {"out"}, R"(
      const int i = blockIdx.x * blockDim.x + threadIdx.x;
      float4 v = reinterpret_cast<const float4*>(x)[i];
      out[i] = v.x + v.y + v.z + v.w;
    )"),
                {float32},
                {1},
                {float32},
                {"gpu_oob_float4", "'x'", "index 8", "thread (8, 0, 0)"},
                [](const fast::KernelFunction& k, Device dev) {
                  return k({test::random_array({32}, float32)}, {{9}}, {float32}, d1(9), d1(9), {},
                           std::nullopt, false, dev);
                }});
  return cs;
}

// The checking variants compile for sm_90 without a GPU (CI's check).
TEST(CustomKernelTools, GpuCheckingModeCompilesForSm90) {
#ifndef KILN_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (NVRTC)";
#else
  for (const OobCase& c : oob_cases()) {
    try {
      // compile() instantiates the program; the checking variant of the same program.
      c.fn.compile(c.in, c.ndims, c.out, {}, "sm_90");
      ScopedEnv check("KILN_KERNEL_CHECK", "1");
      auto outs = c.run(c.fn, Device::cpu);  // builds the node, holding the program
      auto* prim = dynamic_cast<CustomKernel*>(&outs[0].primitive());
      ASSERT_NE(prim, nullptr);
      std::string src = kernels::compile_gpu_checked(prim->program(), "sm_90");
      EXPECT_NE(src.find("kiln_check::ptr<"), std::string::npos) << c.fn.name();
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.fn.name() << ": " << e.what();
    }
  }
#endif
}

// On the GPU: the first out-of-bounds access is reported with the kernel, array, index,
// block and thread; the launch's other accesses go on, and the process, the stream and
// other arrays stay usable.
TEST(CustomKernelTools, GpuCheckingModeReportsTheFirstViolation) {
  if (!has_gpu()) GTEST_SKIP() << "no GPU";
  ScopedEnv check("KILN_KERNEL_CHECK", "1");
  array kept = exp(test::random_array({16}, float32), Device::gpu);
  kept.eval();
  for (const OobCase& c : oob_cases()) {
    SCOPED_TRACE(c.fn.name());
    auto outs = c.run(c.fn, Device::gpu);
    std::string m;
    try {
      outs[0].eval();
    } catch (const std::runtime_error& e) {
      m = e.what();
    }
    for (const auto& p : c.expect) EXPECT_NE(m.find(p), std::string::npos) << p << " in: " << m;
  }
  // A correct kernel runs in checking mode, on the same stream, after the failures.
  auto ok = fast::metal_kernel("gpu_check_ok", {"x"}, {"out"},
                               "uint i = thread_position_in_grid.x;\nout[i] = x[i] * 2.0f;\n");
  array x = test::random_array({40}, float32);
  auto out = ok({x}, {{40}}, {float32}, d1(40), d1(32), {}, std::nullopt, false, Device::gpu)[0];
  test::expect_allclose(out, {40},
                        test::map_ref(test::to_double(x), [](double v) { return 2 * v; }), 0.0);
  EXPECT_EQ(test::to_double(kept).size(), 16u);
}

// ---------------------------------------------------------------- parallel compilation

// Kernels nobody compiled yet, evaluated together, compile at the same time: the host
// compiler's runs overlap (KernelCacheStats::max_concurrent), and each result is right.
TEST(CustomKernelTools, ColdEvalCompilesItsKernelsInParallel) {
  ScopedEnv no_disk("KILN_CACHE", "0");  // every kernel compiles
  const std::string tag = random_tag();
  std::vector<fast::KernelFunction> ks;
  for (int i = 0; i < 4; ++i) {
    ks.push_back(fast::metal_kernel("parallel_" + std::to_string(i), {"x"}, {"y"},
                                    "// " + tag +
                                        "\nuint i = thread_position_in_grid.x;\ny[i] = x[i] * " +
                                        std::to_string(i + 2) + ".0f;\n"));
  }
  array x = test::random_array({32}, float32);
  std::vector<array> outs;
  for (auto& k : ks)
    outs.push_back(
        k({x}, {{32}}, {float32}, d1(32), d1(32), {}, std::nullopt, false, Device::cpu)[0]);
  cpu_rt::reset_kernel_cache_stats();
  eval(outs);
  const auto stats = cpu_rt::kernel_cache_stats();
  EXPECT_EQ(stats.compiles, 4u);
  EXPECT_GE(stats.max_concurrent, 2u) << "the host compilers ran one after the other";
  auto xv = test::to_double(x);
  for (int i = 0; i < 4; ++i)
    test::expect_allclose(outs[i], {32}, test::map_ref(xv, [&](double v) { return v * (i + 2); }),
                          1e-6);
}

// NVRTC compiles different kernels at the same time (it is thread-safe): the JIT's counter
// sees them overlap. On a GPU, a cold eval of several kernels does the same by itself.
TEST(CustomKernelTools, NvrtcCompilesInParallel) {
#ifndef KILN_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (NVRTC)";
#else
  ScopedEnv no_disk("KILN_CACHE", "0");
  const std::string tag = random_tag();
  gpu::reset_jit_stats();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto k = fast::metal_kernel("nvrtc_parallel_" + std::to_string(i), {"x"}, {"y"},
                                  "// " + tag +
                                      "\nuint i = thread_position_in_grid.x;\n"
                                      "y[i] = metal::exp(x[i]) * " +
                                      std::to_string(i) + ";\n");
      k.compile({float16}, {1}, {float16}, {}, "sm_90");
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GE(gpu::jit_stats().compiles, 4u);
  EXPECT_GE(gpu::jit_stats().max_concurrent, 2u);
  if (has_gpu()) {
    gpu::reset_jit_stats();
    std::vector<array> outs;
    array x = test::random_array({32}, float32);
    for (int i = 0; i < 4; ++i) {
      auto k = fast::metal_kernel("gpu_parallel_" + std::to_string(i), {"x"}, {"y"},
                                  "// " + tag +
                                      "\nuint i = thread_position_in_grid.x;\n"
                                      "y[i] = x[i] + " +
                                      std::to_string(i) + ";\n");
      outs.push_back(
          k({x}, {{32}}, {float32}, d1(32), d1(32), {}, std::nullopt, false, Device::gpu)[0]);
    }
    eval(outs);
    EXPECT_GE(gpu::jit_stats().max_concurrent, 2u);
  }
#endif
}

// ---------------------------------------------------------------- precompiled kernels

#ifdef KILN_WITH_CUDA
const char* kAddOne = R"(
extern "C" __global__ void add_scaled(const float* x, float* y, int n, float s, bool twice) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * s + (twice ? 2.0f : 1.0f);
}
)";

std::string nvrtc_image(const std::string& target) {
  gpu::ModuleSource src{"precompiled_test", kAddOne, {"add_scaled"}};
  return gpu::compile(src, target).image;
}
#endif

// PTX and cubins as NVRTC makes them: their kernels, architectures and parameter lists are
// read without a GPU, and a call that does not match is refused at the call.
TEST(CustomKernelTools, PrecompiledImagesAreCheckedAtTheCall) {
#ifndef KILN_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (NVRTC makes the test images)";
#else
  const std::string ptx = nvrtc_image("compute_80"), cubin = nvrtc_image("sm_90");
  auto p = kernels::inspect_image(ptx);
  EXPECT_EQ(p.kind, kernels::PrecompiledImage::Kind::ptx);
  EXPECT_EQ(p.arch, 80);
  EXPECT_EQ(p.entries, std::vector<std::string>{"add_scaled"});
  auto c = kernels::inspect_image(cubin);
  EXPECT_EQ(c.kind, kernels::PrecompiledImage::Kind::cubin);
  EXPECT_EQ(c.arch, 90);
  EXPECT_EQ(c.entries, std::vector<std::string>{"add_scaled"});
  for (const std::string* img : {&ptx, &cubin}) {
    bool known = false;
    auto params = kernels::kernel_params(*img, kernels::inspect_image(*img), "add_scaled", known);
    ASSERT_TRUE(known);
    ASSERT_EQ(params.size(), 5u);
    EXPECT_EQ(params[2].offset, 16u);
    EXPECT_EQ(params[3].offset, 20u);
    EXPECT_EQ(params[4].offset, 24u);
  }
  // Architectures: a cubin runs on its own major version; PTX on its arch or newer.
  EXPECT_EQ(kernels::arch_mismatch(c, 90), "");
  EXPECT_NE(kernels::arch_mismatch(c, 80).find("built for sm_90"), std::string::npos);
  EXPECT_NE(kernels::arch_mismatch(c, 100).find("sm_100"), std::string::npos);
  EXPECT_EQ(kernels::arch_mismatch(p, 90), "");
  EXPECT_NE(kernels::arch_mismatch(p, 75).find("newer than this GPU"), std::string::npos);

  array x = test::random_array({100}, float32);
  auto call = [&](const std::string& img, const std::string& name,
                  const std::vector<fast::ScalarArg>& scalars, Device dev) {
    return fast::precompiled_cuda_kernel(name, img, {x}, {{100}}, {float32}, scalars, {100, 1, 1},
                                         {64, 1, 1}, 0, std::nullopt, false, dev);
  };
  const std::vector<fast::ScalarArg> good = {100, 1.5f, true};
  expect_throw_with<std::invalid_argument>(
      [&] { call("not a kernel", "add_scaled", good, Device::cpu); },
      {"[precompiled_cuda_kernel]", "neither PTX"});
  expect_throw_with<std::invalid_argument>([&] { call(ptx, "add_one", good, Device::cpu); },
                                           {"no kernel named 'add_one'", "'add_scaled'"});
  expect_throw_with<std::invalid_argument>([&] { call(cubin, "add_one", good, Device::cpu); },
                                           {"cubin has no kernel named 'add_one'"});
  expect_throw_with<std::invalid_argument>([&] { call(ptx, "add_scaled", {100}, Device::cpu); },
                                           {"takes 5 parameters", "the call passes 3"});
  expect_throw_with<std::invalid_argument>(
      [&] {
        call(cubin, "add_scaled", {100, 1.5f}, Device::cpu);
      },
      {"takes 5 parameters", "the call passes 4"});
  expect_throw_with<std::invalid_argument>([&] { call(ptx, "add_scaled", good, Device::cpu); },
                                           {"GPU streams only"});
  if (has_gpu()) {
    // A cubin for another architecture than this GPU's.
    const int cc = kernels::gpu_compute_capability(0);
    const std::string other = nvrtc_image(cc / 10 == 8 ? "sm_90" : "sm_80");
    expect_throw_with<std::invalid_argument>([&] { call(other, "add_scaled", good, Device::gpu); },
                                             {"cannot run on this GPU", "cubin was built for"});
  }
#endif
}

// On a GPU: the PTX and the cubin for this GPU run, with scalars of each kind, init_value,
// and a grid that is not a multiple of the threadgroup.
TEST(CustomKernelTools, PrecompiledKernelsRunOnGpu) {
  if (!has_gpu()) GTEST_SKIP() << "no GPU";
#ifdef KILN_WITH_CUDA
  const int cc = kernels::gpu_compute_capability(0);
  for (const std::string& target : {std::string("compute_80"), "sm_" + std::to_string(cc)}) {
    SCOPED_TRACE(target);
    const std::string img = nvrtc_image(target);
    array x = test::random_array({100}, float32);
    auto out =
        fast::precompiled_cuda_kernel("add_scaled", img, {x}, {{100}}, {float32}, {100, 1.5f, true},
                                      {100, 1, 1}, {64, 1, 1}, 0, -1.0f, false, Device::gpu)[0];
    test::expect_allclose(
        out, {100}, test::map_ref(test::to_double(x), [](double v) { return v * 1.5 + 2; }), 1e-6);
  }
#endif
}

// ---------------------------------------------------------------- refused Metal features

TEST(CustomKernelTools, UnsupportedMetalFeaturesAreNamed) {
  struct Case {
    const char* source;
    const char* header;
    std::vector<std::string> expect;
  };
  const Case cases[] = {
      {"texture2d<float, access::read> t;\nout[0] = x[0];",
       "",
       {"[metal_kernel]", "Metal textures", "`texture2d` at source line 1", "buffers"}},
      {"out[0] = x[0];",
       "\n\nfloat f(sampler s) { return 0; }",
       {"Metal samplers", "`sampler` at header line 3"}},
      {"out[0] = x[0];\nintersector<triangle_data> i;",
       "",
       {"ray tracing", "`intersector` at source line 2"}},
      {"imageblock<float> b;\nout[0] = x[0];", "", {"imageblocks", "`imageblock`"}},
  };
  for (const Case& c : cases) {
    auto k = fast::metal_kernel("refused", {"x"}, {"out"}, c.source, c.header);
    expect_throw_with<fast::KernelCompileError>(
        [&] {
          k({array({1.0f})}, {{1}}, {float32}, d1(1), d1(1), {}, std::nullopt, false, Device::cpu);
        },
        c.expect);
  }
  // A variable named like a feature is no use of it.
  auto k = fast::metal_kernel("not_refused", {"x"}, {"out"},
                              "float sampler = x[0];\nout[0] = sampler * 2.0f;");
  auto out =
      k({array({1.5f})}, {{1}}, {float32}, d1(1), d1(1), {}, std::nullopt, false, Device::cpu)[0];
  EXPECT_EQ(test::to_double(out)[0], 3.0);
  // What the layer refuses on purpose is summarized before the compiler's messages.
  auto sync = fast::cuda_kernel("grid_sync", {"x"}, {"out"},
                                "cooperative_groups::this_grid().sync();\nout[0] = x[0];");
  expect_throw_with<fast::KernelCompileError>(
      [&] { sync.compile({float32}, {1}, {float32}, {}, "cpu"); },
      {"Not supported: grid_group::sync()", "cooperative launch"});
}

// ---------------------------------------------------------------- the support table

// docs/metal_support.md lists the Metal names kiln supports: each `name` in its table exists
// in the custom-kernel headers, and each function or type the Metal layer's headers define
// under metal:: is listed, so the table cannot go stale.
TEST(CustomKernelTools, MetalSupportTableMatchesTheHeaders) {
  std::ifstream f(std::string(KILN_SOURCE_DIR) + "/docs/metal_support.md");
  ASSERT_TRUE(f) << "docs/metal_support.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  std::set<std::string> listed;
  const std::regex code("`([A-Za-z_][A-Za-z0-9_]*)(<[^`]*>)?`");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), code); it != std::sregex_iterator();
       ++it)
    listed.insert((*it)[1]);
  std::string headers;
  for (const auto& h : kernels::embedded_headers()) headers += std::string(h.text) + "\n";
  auto defined = [&](const std::string& name) {
    return std::regex_search(headers, std::regex("\\b" + name + "\\b"));
  };
  // Type families (`floatN`, `packed_halfN`) are checked by compiling a kernel naming each
  // member; other names by their presence in the headers.
  std::string uses;
  int k = 0;
  for (const auto& name : listed) {
    if (name.size() > 1 && name.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") == name.size() - 1 &&
        name.back() == 'N') {
      for (int n = 2; n <= 4; ++n)
        uses += "using kiln_type_" + std::to_string(k++) + " = " + name.substr(0, name.size() - 1) +
                std::to_string(n) + ";\n";
      continue;
    }
    EXPECT_TRUE(defined(name)) << "`" << name << "` is in the table but not in the headers";
  }
  EXPECT_GT(k, 60);
  auto types = fast::metal_kernel("support_table_types", {"x"}, {"out"},
                                  "out[0] = x[0] + sizeof(kiln_type_0);", uses);
  try {
    types.compile({float32}, {1}, {float32}, {}, "cpu");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a type family of the table does not compile: " << e.what();
  }
  // Names the Metal layer defines: function templates and functions of namespace metal
  // (KILN_MATH1/2 lists, declarations `KILN_HD ... name(`), the simd/quad functions.
  std::set<std::string> defined_names;
  const std::regex macro_list(
      "KILN_(?:MATH1|MATH2|VMAP1|VMAP2|VMAP3|FAST|QUAD_REDUCE|SIMD_REDUCE)\\(([a-z_0-9]+)");
  const std::regex decl("\\n(?:template <[^\\n]*>\\n)?KILN_HD [^\\n(]*?\\b([a-z][a-z_0-9]*)\\(");
  for (const auto& h : kernels::embedded_headers()) {
    const std::string path(h.path), text(h.text);
    if (!path.starts_with("kiln/backend/kernels/metal/") || path.find("cpu_") != std::string::npos)
      continue;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), macro_list);
         it != std::sregex_iterator(); ++it)
      defined_names.insert((*it)[1]);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), decl);
         it != std::sregex_iterator(); ++it)
      defined_names.insert((*it)[1]);
  }
  // Internal helpers, not Metal names.
  for (const char* internal : {"lane_id",
                               "shuffle",
                               "reduce",
                               "inclusive_scan",
                               "exclusive_scan",
                               "cas_small",
                               "cas_rmw",
                               "relaxed_load",
                               "relaxed_store",
                               "native_ptr",
                               "native_value",
                               "mat_row",
                               "mat_col",
                               "mat_lane",
                               "mma_shuffle",
                               "mma_tensor",
                               "mma_m16n8k8",
                               "rsqrt_f",
                               "rsqrt_d",
                               "exp10_f",
                               "exp10_d",
                               "sinpi_f",
                               "cospi_f",
                               "tanpi_f",
                               "sinpi_d",
                               "cospi_d",
                               "tanpi_d",
                               "fract_f",
                               "fract_d",
                               "powr_f",
                               "float_to_half_bits",
                               "half_bits_to_float",
                               "float_to_bfloat_bits",
                               "bfloat_bits_to_float",
                               "from_bits",
                               "quad_fold",
                               "int_max",
                               "int_min",
                               "decltype",
                               "add_overflow",
                               "sub_overflow"}) {
    defined_names.erase(internal);
  }
  for (const auto& name : defined_names)
    EXPECT_TRUE(listed.count(name))
        << "metal::" << name << " is defined but not in docs/metal_support.md";

  // A header included on demand lists what brings it in ("// kiln-on-demand: ..."): each
  // function it defines must match one of its patterns, or a body naming it would not
  // compile on the GPU.
  for (const auto& h : kernels::embedded_headers()) {
    const std::string text(h.text);
    const size_t at = text.find("// kiln-on-demand:");
    if (at == std::string::npos) continue;
    std::vector<std::string> patterns;
    std::stringstream words(text.substr(at + 18, text.find('\n', at) - at - 18));
    for (std::string w; words >> w;) patterns.push_back(w);
    auto matches = [&](const std::string& name) {
      for (const auto& p : patterns) {
        const bool lead = p.front() == '*', trail = p.back() == '*';
        const std::string core = p.substr(lead, p.size() - lead - trail);
        if (lead && trail ? name.find(core) != std::string::npos
            : trail       ? name.rfind(core, 0) == 0
            : lead        ? name.size() >= core.size() &&
                         name.compare(name.size() - core.size(), core.size(), core) == 0
                   : name == core)
          return true;
      }
      return false;
    };
    for (auto it = std::sregex_iterator(text.begin(), text.end(), decl);
         it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1];
      if (name == "decltype" || name == "leaf" || name.find("overflow") != std::string::npos)
        continue;  // internal helpers
      // Functions of complex values: those come with a complex64 dtype or complex64_t, which
      // bring the header in.
      if (std::string(h.path).ends_with("cuda/complex.h") &&
          (name == "abs" || name == "exp" || name == "log" || name == "sqrt"))
        continue;
      EXPECT_TRUE(matches(name)) << name << " of " << h.path
                                 << " matches no kiln-on-demand pattern";
    }
  }
}

}  // namespace
}  // namespace kiln
