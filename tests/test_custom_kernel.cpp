// Custom kernels (kiln/fast.h) on the GPU: every case of custom_kernel_cases.h runs on a GPU
// when there is one, and every kernel of the table is compiled for sm_90 with NVRTC without
// one (CI). Also: the generator (which parameters a body gets, Metal keyword rewriting),
// argument errors at call time, compile errors with the user's line numbers, the caches
// (same name with a new source; a new process loading from disk), transforms that point to
// custom_function, and verbose output. The GPU Metal headers against an emulated warp:
// test_custom_kernel_warp.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "custom_kernel_cases.h"
#include "kiln/backend/kernels/signature.h"
#include "kiln/primitives_custom.h"

#ifdef KILN_WITH_CUDA
#include <spawn.h>
#include <sys/wait.h>

#include "kiln/backend/cuda/jit.h"
extern char** environ;
#endif

using namespace kiln;
namespace ck = kiln::test::custom_kernels;
namespace fs = std::filesystem;

namespace {

bool has_gpu() {
  return is_available(Device::gpu);
}

using test::expect_throw_with;

std::string random_tag() {
  static std::mt19937_64 rng(std::random_device{}());
  return std::to_string(rng());
}

fast::KernelFunction copy_kernel(const std::string& name = "copy") {
  return fast::metal_kernel(name, {"x"}, {"out"},
                            "uint i = thread_position_in_grid.x;\nout[i] = x[i];\n");
}

}  // namespace

// ---------------------------------------------------------------- the table

class CustomKernelCase : public ::testing::TestWithParam<size_t> {};

// Every kernel of the table compiles for sm_90 without a GPU: CI's check of the suite.
TEST_P(CustomKernelCase, CompilesForSm90) {
#ifndef KILN_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (NVRTC)";
#else
  const ck::Case& c = ck::cases()[GetParam()];
  for (const ck::Kernel& k : c.kernels) {
    for (const ck::Instance& inst : k.instances) {
      try {
        std::string src = k.fn.compile(inst.inputs, inst.ndims, inst.outputs, inst.targs, "sm_90");
        EXPECT_NE(src.find("custom_kernel_" + k.fn.name()), std::string::npos);
      } catch (const std::exception& e) {
        ADD_FAILURE() << c.name << "/" << k.fn.name() << ": " << e.what();
      }
    }
  }
#endif
}

TEST_P(CustomKernelCase, RunsOnGpu) {
  if (!has_gpu()) GTEST_SKIP() << "no GPU";
  const ck::Case& c = ck::cases()[GetParam()];
  c.run(c.kernels, Device::gpu);
}

INSTANTIATE_TEST_SUITE_P(CustomKernel, CustomKernelCase,
                         ::testing::Range<size_t>(0, ck::cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return ck::cases()[info.param].name;
                         });

// ---------------------------------------------------------------- the generator

TEST(CustomKernelGenerator, OptionalParametersOnlyWhenMentioned) {
  kernels::KernelSpec spec{fast::KernelFlavour::metal,
                           "k",
                           {"a", "b"},
                           {"out"},
                           R"(
      // b_shape in a comment and "b_strides" in a string do not count, nor a_shape2.
      int a_shape2 = 0;
      uint i = thread_position_in_grid.x;
      out[i] = a[elem_to_loc(i, a_shape, a_strides, a_ndim)] + b[i] + a_shape2;
  )"};
  auto u = kernels::analyze(spec);
  EXPECT_EQ(u.input_shape, (std::vector<bool>{true, false}));
  EXPECT_EQ(u.input_strides, (std::vector<bool>{true, false}));
  EXPECT_EQ(u.input_ndim, (std::vector<bool>{true, false}));
  EXPECT_EQ(u.attributes, std::vector<std::string>{"thread_position_in_grid"});
  EXPECT_FALSE(u.barriers);
  EXPECT_FALSE(u.warp_ops);

  kernels::KernelInstance inst{{float32, int32}, {false, false}, {float32}, {}};
  auto g = kernels::generate(spec, inst, kernels::Target::gpu);
  EXPECT_NE(g.source.find("const int32_t* a_shape = kiln_p.a_shape;"), std::string::npos);
  EXPECT_EQ(g.source.find("b_shape ="), std::string::npos);
  EXPECT_EQ(g.source.find("thread_index_in_threadgroup ="), std::string::npos);
  EXPECT_EQ(g.entry, "kiln_user::custom_kernel_k");
  EXPECT_NE(g.signature.find("const float* __restrict__ a"), std::string::npos);
  EXPECT_NE(g.signature.find("const int32_t* __restrict__ b"), std::string::npos);
  EXPECT_EQ(g.hash.size(), 32u);
}

// Template arguments only change the GPU entry (the name expression), not the source: the
// module name must still differ, or a second instantiation finds the first one's module.
TEST(CustomKernelGenerator, TemplateInstancesNameDifferentModules) {
  kernels::KernelSpec spec{fast::KernelFlavour::cuda, "k", {"a"}, {"out"}, R"(
      out[threadIdx.x] = W && a[threadIdx.x] > T(0) ? a[threadIdx.x] : T(N);
  )"};
  auto instance = [](int n, bool w) {
    return kernels::KernelInstance{
        {float32}, {false}, {float32}, {{"T", float32}, {"N", n}, {"W", w}}};
  };
  auto g1 = kernels::generate(spec, instance(0, true), kernels::Target::gpu);
  auto g2 = kernels::generate(spec, instance(128, true), kernels::Target::gpu);
  auto g3 = kernels::generate(spec, instance(0, false), kernels::Target::gpu);
  EXPECT_EQ(g1.entry, "kiln_user::custom_kernel_k<float, 0, true>");
  EXPECT_EQ(g2.entry, "kiln_user::custom_kernel_k<float, 128, true>");
  EXPECT_NE(g1.hash, g2.hash);
  EXPECT_NE(g1.hash, g3.hash);
  EXPECT_NE(g2.hash, g3.hash);
  EXPECT_EQ(g1.hash, kernels::generate(spec, instance(0, true), kernels::Target::gpu).hash);
}

// A CUDA body that names nothing of the Metal layer gets the light GPU prelude (NVRTC parses
// a fraction of the code); a half or complex dtype, or a Metal-layer name, brings it back.
TEST(CustomKernelGenerator, CudaFlavourPreludeIsLightUnlessTheMetalLayerIsNeeded) {
  const std::string light = "kiln/backend/kernels/cuda_gpu_lite.h", full = "cuda_gpu.h\"";
  kernels::KernelSpec spec{fast::KernelFlavour::cuda, "k", {"a"}, {"out"}, R"(
      // float16_t in a comment does not count
      out[threadIdx.x] = a[elem_to_loc(threadIdx.x, a_shape, a_strides, a_ndim)];
  )"};
  kernels::KernelInstance f32{{float32}, {false}, {float32}, {}};
  auto prelude_of = [&](const kernels::KernelInstance& inst, kernels::Target t) {
    auto src = kernels::generate(spec, inst, t).source;
    return src.substr(0, src.find("namespace kiln_user"));
  };
  EXPECT_NE(prelude_of(f32, kernels::Target::gpu).find(light), std::string::npos);
  EXPECT_NE(prelude_of(f32, kernels::Target::cpu).find("cuda_cpu.h"), std::string::npos);
  for (Dtype d : {float16, bfloat16, complex64}) {
    EXPECT_NE(prelude_of({{d}, {false}, {float32}, {}}, kernels::Target::gpu).find(full),
              std::string::npos);
    EXPECT_NE(prelude_of({{float32}, {false}, {d}, {}}, kernels::Target::gpu).find(full),
              std::string::npos);
    EXPECT_NE(
        prelude_of({{float32}, {false}, {float32}, {{"T", d}}}, kernels::Target::gpu).find(full),
        std::string::npos);
  }
  for (const char* body : {"out[0] = metal::exp(a[0]);", "out[0] = float(float16_t(a[0]));",
                           "out[0] = complex64_t(a[0], 0).real;"}) {
    spec.source = body;
    EXPECT_NE(prelude_of(f32, kernels::Target::gpu).find(full), std::string::npos) << body;
  }
  spec.source = "out[0] = helper(a[0]);";
  spec.header = "__device__ float helper(float x) { return float(bfloat16_t(x)); }";
  EXPECT_NE(prelude_of(f32, kernels::Target::gpu).find(full), std::string::npos);
}

// NVRTC's -minimal (no CUDA runtime device API, textures or surfaces) is kept off for a
// kernel that names them or includes a header.
TEST(CustomKernelGenerator, RuntimeNamesAndIncludesAreFound) {
  kernels::KernelSpec spec{fast::KernelFlavour::cuda, "k", {"a"}, {"out"}, ""};
  auto uses_runtime = [&](const std::string& source, const std::string& header = "") {
    spec.source = source;
    spec.header = header;
    return kernels::analyze(spec).runtime_names;
  };
  EXPECT_FALSE(uses_runtime("float texel = a[0]; out[0] = texel; // cudaMalloc"));
  EXPECT_FALSE(uses_runtime("printf(\"%f cudaError_t\\n\", a[0]); out[0] = a[0];"));
  EXPECT_TRUE(uses_runtime("cudaError_t e = cudaSuccess; out[0] = e;"));
  EXPECT_TRUE(uses_runtime("out[0] = tex1Dfetch<float>(t, 0);"));
  EXPECT_TRUE(uses_runtime("out[0] = f(a[0]);", "#include <curand_kernel.h>\n"));
  // Headers whose declarations kiln's prelude provides are dropped: no runtime needed.
  EXPECT_FALSE(uses_runtime("out[0] = f(a[0]);", "#include <cuda_fp16.h>\n"));
  EXPECT_FALSE(uses_runtime("out[0] = a[0];", "#include <cooperative_groups.h>\n"));
  EXPECT_FALSE(uses_runtime("out[0] = a[0];", "#include <cooperative_groups/reduce.h>\n"));
  EXPECT_TRUE(uses_runtime("out[0] = f(a[0]);", "  #  include \"x.h\"\n"));
  EXPECT_FALSE(uses_runtime("out[0] = a[0];", "#pragma once\n"));
}

#ifdef KILN_WITH_CUDA
// What the light prelude offers compiles without a GPU: MLX's scalar utilities, Limits,
// METAL_FUNC, INFINITY, and printf under NVRTC's -minimal.
TEST(CustomKernelGenerator, LightPreludeCompilesForSm90) {
  auto k = fast::cuda_kernel("light", {"a"}, {"out"}, R"(
      uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i >= uint32_t(ceildiv(a_shape[0], 1))) return;
      float v = a[elem_to_loc(i, a_shape, a_strides, a_ndim)] + elem_to_loc_1(i, 0);
      out[i] = clip(v) + (Limits<int32_t>::max > 0 ? 0.f : INFINITY);
      if (i == 0) printf("out[0] = %f\n", out[0]);
  )",
                             "METAL_FUNC __device__ float clip(float v) { return "
                             "fminf(v, Limits<float>::finite_max); }");
  std::string src = k.compile({float32}, {1}, {float32}, {}, "sm_90");
  EXPECT_NE(src.find("cuda_gpu_lite.h"), std::string::npos);
}
#endif

TEST(CustomKernelGenerator, BarriersAndWarpOperationsAreFound) {
  kernels::KernelSpec spec{fast::KernelFlavour::metal,
                           "k",
                           {"x"},
                           {"out"},
                           "out[0] = helper(x[0]);",
                           "float helper(float v) { return simd_sum(v); }"};
  auto u = kernels::analyze(spec);
  EXPECT_TRUE(u.warp_ops);
  EXPECT_FALSE(u.barriers);
  spec.source = "__syncthreads();";
  spec.header = "";
  u = kernels::analyze(spec);
  EXPECT_TRUE(u.barriers);
  EXPECT_FALSE(u.warp_ops);
}

TEST(CustomKernelGenerator, MetalKeywordsAreRewritten) {
  kernels::KernelSpec spec{fast::KernelFlavour::metal,
                           "k",
                           {"x"},
                           {"out"},
                           R"(threadgroup float buf[64];
threadgroup float* p = buf;
threadgroup atomic_int counter;
const constant float c = 2.0f;
device float* o = (device float*)out;
thread float t = x.device + 1;
#pragma clang loop unroll(full)
for (int k = 0; k < 2; ++k) {}
)"};
  kernels::KernelInstance inst{{float32}, {false}, {float32}, {}};
  std::string s = kernels::generate(spec, inst, kernels::Target::gpu).source;
  EXPECT_NE(s.find("__shared__ float buf[64];"), std::string::npos) << s;
  EXPECT_NE(s.find("\n float* p = buf;"), std::string::npos) << s;
  EXPECT_NE(s.find("__shared__ atomic_int counter;"), std::string::npos) << s;
  EXPECT_NE(s.find("const  float c"), std::string::npos) << s;
  EXPECT_NE(s.find(" float* o = ( float*)out;"), std::string::npos) << s;
  EXPECT_NE(s.find(" float t = x.device + 1;"), std::string::npos) << s;
  // In a parameter list (a helper in the header) threadgroup storage is a pointer.
  spec.header = "void f(threadgroup float buf[32], threadgroup int& n);\n";
  s = kernels::generate(spec, inst, kernels::Target::gpu).source;
  EXPECT_NE(s.find("void f( float buf[32],  int& n);"), std::string::npos) << s;
  EXPECT_NE(s.find("#pragma unroll\n"), std::string::npos) << s;
  // Line structure is kept: the loop is still on line 8 of "source".
  size_t src = s.find("#line 1 \"source\"\n");
  ASSERT_NE(src, std::string::npos);
  size_t loop = s.find("for (int k");
  EXPECT_EQ(std::count(s.begin() + src, s.begin() + loop, '\n'), 8);
}

TEST(CustomKernelGenerator, ParamBlockMatchesTheGeneratedStruct) {
  kernels::BodyUsage u;
  u.input_shape = {true, false, true};
  u.input_strides = {false, true, true};
  u.input_ndim = {true, true, false};
  EXPECT_EQ(kernels::param_block_size(u), 40u + 2 * 80 + 2 * 40 + 2 * 4);
  kernels::LaunchGeometry geo;
  geo.grid[0] = 7;
  geo.threadgroup[1] = 3;
  kernels::ParamBlock p(u, {{2, 3}, {4}, {5, 6, 7}}, {{3, 1}, {-2}, {42, 7, 1}}, geo);
  p.set_block_offset(9, 8, 7);
  ASSERT_EQ(p.size(), kernels::param_block_size(u));
  const auto* w = static_cast<const uint32_t*>(p.data());
  EXPECT_EQ(w[0], 7u);
  EXPECT_EQ(w[4], 3u);
  EXPECT_EQ(w[6], 9u);
  EXPECT_EQ(w[8], 7u);
  const auto* strides = reinterpret_cast<const int64_t*>(static_cast<const char*>(p.data()) + 40);
  EXPECT_EQ(strides[0], -2);   // input 1's strides come first
  EXPECT_EQ(strides[10], 42);  // then input 2's
  const auto* shapes = reinterpret_cast<const int32_t*>(static_cast<const char*>(p.data()) + 200);
  EXPECT_EQ(shapes[1], 3);   // input 0's shape
  EXPECT_EQ(shapes[12], 7);  // input 2's
  EXPECT_EQ(shapes[20], 2);  // ndims: input 0, input 1
  EXPECT_EQ(shapes[21], 1);
}

TEST(CustomKernelGenerator, VerbosePrintsTheGeneratedSource) {
  auto k = fast::metal_kernel("myexp", {"inp"}, {"out"}, ck::kMyExp);
  array a = test::random_array({8}, float16);
  ::testing::internal::CaptureStdout();
  auto out = k({a}, {a.shape()}, {a.dtype()}, {8, 1, 1}, {256, 1, 1}, {{"T", float32}},
               std::nullopt, true);
  std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("template <typename T>"), std::string::npos) << printed;
  EXPECT_NE(printed.find("custom_kernel_myexp("), std::string::npos) << printed;
  EXPECT_NE(printed.find("out[elem] = metal::exp(tmp);"), std::string::npos) << printed;
}

// ---------------------------------------------------------------- argument errors

TEST(CustomKernelErrors, DefinitionNames) {
  using E = std::invalid_argument;
  expect_throw_with<E>([] { fast::metal_kernel("my kernel", {"x"}, {"y"}, ""); },
                       {"[metal_kernel]", "my kernel"});
  expect_throw_with<E>(
      [] {
        fast::cuda_kernel("k", {"x", "x"}, {"y"}, "");
      },
      {"[cuda_kernel]", "'x'", "twice"});
  expect_throw_with<E>([] { fast::metal_kernel("k", {"x"}, {"x"}, ""); }, {"'x'", "twice"});
  expect_throw_with<E>([] { fast::metal_kernel("k", {"2x"}, {"y"}, ""); }, {"'2x'"});
  expect_throw_with<E>([] { fast::metal_kernel("k", {"kiln_x"}, {"y"}, ""); }, {"reserved"});
  expect_throw_with<E>([] { fast::metal_kernel("k", {"x"}, {}, ""); }, {"output"});
  expect_throw_with<E>([] { fast::cuda_kernel("k", {"x"}, {"y"}, "", "", true, false, -1); },
                       {"shared_memory", "-1"});
}

TEST(CustomKernelErrors, CallArguments) {
  using E = std::invalid_argument;
  auto k = copy_kernel();
  array x = test::random_array({16}, float32);
  auto call = [&](std::vector<array> in, std::vector<Shape> shapes, std::vector<Dtype> dtypes,
                  std::tuple<int, int, int> grid, std::tuple<int, int, int> tg,
                  ck::TemplateArgs targs = {}) { return k(in, shapes, dtypes, grid, tg, targs); };
  expect_throw_with<E>(
      [&] {
        call({x, x}, {{16}}, {float32}, {16, 1, 1}, {16, 1, 1});
      },
      {"[metal_kernel]", "takes 1 inputs; got 2"});
  expect_throw_with<E>(
      [&] {
        call({x}, {{16}, {16}}, {float32}, {16, 1, 1}, {16, 1, 1});
      },
      {"2 output shapes"});
  expect_throw_with<E>([&] { call({x}, {{16}}, {}, {16, 1, 1}, {16, 1, 1}); }, {"0 output dtypes"});
  expect_throw_with<E>(
      [&] {
        call({x}, {{-1}}, {float32}, {16, 1, 1}, {16, 1, 1});
      },
      {"negative", "-1"});
  expect_throw_with<E>(
      [&] {
        call({x}, {{16}}, {float32}, {0, 1, 1}, {16, 1, 1});
      },
      {"grid", "(0, 1, 1)"});
  expect_throw_with<E>(
      [&] {
        call({x}, {{16}}, {float32}, {16, 1, 1}, {16, 0, 1});
      },
      {"threadgroup", "(16, 0, 1)"});
  expect_throw_with<E>(
      [&] {
        call({x}, {{16}}, {float32}, {4096, 1, 1}, {2048, 1, 1});
      },
      {"threadgroup", "1024"});
  expect_throw_with<E>(
      [&] {
        call({x}, {{16}}, {float32}, {16, 16, 128}, {1, 1, 128});
      },
      {"64 in z"});
  expect_throw_with<E>(
      [&] {
        call({x}, {{16}}, {float32}, {16, 1, 1}, {16, 1, 1}, {{"T", float32}, {"T", 2}});
      },
      {"template argument", "'T'"});
  expect_throw_with<E>(
      [&] {
        call({x}, {{16}}, {float32}, {16, 1, 1}, {16, 1, 1}, {{"x", 2}});
      },
      {"template argument", "'x'"});
  expect_throw_with<E>(
      [&] {
        call({x}, {{16}}, {float32}, {16, 1, 1}, {16, 1, 1}, {{"not valid", true}});
      },
      {"template argument", "'not valid'"});
  // Nothing ran: these are call-time errors, and the kernel still works.
  EXPECT_NO_THROW(call({x}, {{16}}, {float32}, {16, 1, 1}, {16, 1, 1}));
}

TEST(CustomKernelErrors, TooManyDimensionsOnlyWhenTheBodyReadsThem) {
  Shape big(fast::kMaxNdim + 1, 1);
  array x = reshape(
      test::random_array({4}, float32),
      [&] {
        Shape s = big;
        s.back() = 4;
        return s;
      }(),
      Device::cpu);
  auto strided = fast::metal_kernel("strided", {"x"}, {"out"},
                                    "uint i = thread_position_in_grid.x;\nout[i] = "
                                    "x[elem_to_loc(i, x_shape, x_strides, x_ndim)];\n",
                                    "", false);
  expect_throw_with<std::invalid_argument>(
      [&] {
        strided({x}, {{4}}, {float32}, {4, 1, 1}, {4, 1, 1});
      },
      {"[metal_kernel]", "11 dimensions", "at most 10"});
  EXPECT_NO_THROW(copy_kernel()({x}, {{4}}, {float32}, {4, 1, 1}, {4, 1, 1}));
}

TEST(CustomKernelErrors, TransformsPointToCustomFunction) {
  auto k = copy_kernel("copy_transform");
  ArrayFn f = [&](const std::vector<array>& in) {
    return k(in, {in[0].shape()}, {float32}, {int(in[0].size()), 1, 1}, {32, 1, 1});
  };
  array x = test::random_array({8}, float32);
  expect_throw_with<std::invalid_argument>([&] { vjp(f, {x}, {x}); },
                                           {"[vjp]", "copy_transform", "custom_function"});
  expect_throw_with<std::invalid_argument>([&] { jvp(f, {x}, {x}); }, {"[jvp]", "custom_function"});
  expect_throw_with<std::invalid_argument>(
      [&] {
        vmap(f)({test::random_array({2, 8}, float32)});
      },
      {"[vmap]", "custom_function"});
}

TEST(CustomKernelPrimitive, EquivalenceComparesEverything) {
  auto k = copy_kernel("copy_eq");
  array x = test::random_array({8}, float32);
  auto a = k({x}, {{8}}, {float32}, {8, 1, 1}, {8, 1, 1})[0];
  auto b = k({x}, {{8}}, {float32}, {8, 1, 1}, {8, 1, 1})[0];
  auto c = k({x}, {{8}}, {float32}, {8, 1, 1}, {4, 1, 1})[0];
  auto d = k({x}, {{8}}, {float32}, {8, 1, 1}, {8, 1, 1}, {}, 0.0f)[0];
  auto e = copy_kernel("copy_eq")({x}, {{8}}, {float32}, {8, 1, 1}, {8, 1, 1})[0];
  EXPECT_TRUE(a.primitive().is_equivalent(b.primitive()));
  EXPECT_TRUE(a.primitive().is_equivalent(e.primitive()));  // same definition, new object
  EXPECT_FALSE(a.primitive().is_equivalent(c.primitive()));
  EXPECT_FALSE(a.primitive().is_equivalent(d.primitive()));
  std::ostringstream os;
  a.primitive().print(os);
  EXPECT_EQ(os.str(), "CustomKernel(copy_eq)");
}

// ---------------------------------------------------------------- compile errors

#ifdef KILN_WITH_CUDA

TEST(CustomKernelCompileErrors, PointAtTheUsersLines) {
  auto bad = fast::metal_kernel("broken", {"x"}, {"out"},
                                "uint i = thread_position_in_grid.x;\n"
                                "float v = x[i];\n"
                                "out[i] = undefined_function(v);\n");
  expect_throw_with<fast::KernelCompileError>(
      [&] { bad.compile({float32}, {1}, {float32}); },
      {"[metal_kernel]", "'broken'", "source(3)", "undefined_function", "Generated signature",
       "custom_kernel_broken("});
  auto bad_header = fast::cuda_kernel("broken_header", {"x"}, {"out"}, "out[0] = f(x[0]);\n",
                                      "// helpers\n__device__ float f(float v) { return v +; }\n");
  expect_throw_with<fast::KernelCompileError>(
      [&] { bad_header.compile({float32}, {1}, {float32}); }, {"[cuda_kernel]", "header(2)"});
  // A KernelCompileError is a runtime_error, and a failure is not cached: the same name
  // with a fixed source compiles.
  EXPECT_THROW(bad.compile({float32}, {1}, {float32}), std::runtime_error);
  auto fixed = fast::metal_kernel("broken", {"x"}, {"out"},
                                  "uint i = thread_position_in_grid.x;\nout[i] = x[i];\n");
  EXPECT_NO_THROW(fixed.compile({float32}, {1}, {float32}));
}

TEST(CustomKernelCompileErrors, AtEvalOnTheGpuLeaveOtherArraysUsable) {
  if (!has_gpu()) GTEST_SKIP() << "no GPU";
  auto bad = fast::metal_kernel("broken_eval", {"x"}, {"out"}, "out[0] = nope;\n");
  array x = test::random_array({32}, float32);
  array good = copy_kernel("good_eval")({x}, {{32}}, {float32}, {32, 1, 1}, {32, 1, 1}, {},
                                        std::nullopt, false, Device::gpu)[0];
  array broken =
      bad({x}, {{32}}, {float32}, {32, 1, 1}, {32, 1, 1}, {}, std::nullopt, false, Device::gpu)[0];
  expect_throw_with<fast::KernelCompileError>(
      [&] {
        eval({good, broken});
      },
      {"broken_eval", "source(1)"});
  test::expect_allclose(good, {32}, ck::values(x), 0.0);
  array again = copy_kernel("good_eval")({x}, {{32}}, {float32}, {32, 1, 1}, {32, 1, 1}, {},
                                         std::nullopt, false, Device::gpu)[0];
  test::expect_allclose(again, {32}, ck::values(x), 0.0);
}

// ---------------------------------------------------------------- caches

// Points the JIT's disk cache at a fresh private directory for the test.
class CustomKernelCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("KILN_CUSTOM_KERNEL_CHILD")) return;  // the child uses the parent's
    root_ = fs::temp_directory_path() / ("kiln-ck-test-" + random_tag());
    setenv("KILN_CACHE_DIR", (root_ / "cache").c_str(), 1);
    gpu::clear_jit_memory_cache();
    gpu::reset_jit_stats();
  }
  void TearDown() override {
    if (std::getenv("KILN_CUSTOM_KERNEL_CHILD")) return;
    unsetenv("KILN_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  fs::path root_;
};

fast::KernelFunction tagged_kernel(const std::string& tag) {
  return fast::metal_kernel(
      "tagged", {"x"}, {"out"},
      "// " + tag + "\nuint i = thread_position_in_grid.x;\nout[i] = x[i] * 2;\n");
}

TEST_F(CustomKernelCache, SameNameNewSourceIsANewModule) {
  auto one = fast::metal_kernel("same", {"x"}, {"out"}, "out[0] = 1;\n");
  auto two = fast::metal_kernel("same", {"x"}, {"out"}, "out[0] = 2;\n");
  std::string s1 = one.compile({float32}, {1}, {float32});
  std::string s2 = two.compile({float32}, {1}, {float32});
  EXPECT_NE(s1, s2);
  EXPECT_EQ(gpu::jit_stats().compiles, 2u);
  one.compile({float32}, {1}, {float32});
  EXPECT_EQ(gpu::jit_stats().compiles, 2u);
  EXPECT_EQ(gpu::jit_stats().memory_hits, 1u);
  // Another instance (dtype) of the same kernel is another module.
  one.compile({float16}, {1}, {float32});
  EXPECT_EQ(gpu::jit_stats().compiles, 3u);
}

TEST_F(CustomKernelCache, SameNameNewSourceInOneEvalAndAcrossEvals) {
  if (!has_gpu()) GTEST_SKIP() << "no GPU";
  auto make = [](int v) {
    return fast::metal_kernel(
        "same_eval", {"x"}, {"out"},
        "uint i = thread_position_in_grid.x;\nout[i] = x[i] + " + std::to_string(v) + ";\n");
  };
  array x = test::random_array({64}, float32);
  auto run = [&](int v) {
    return make(v)({x}, {{64}}, {float32}, {64, 1, 1}, {64, 1, 1}, {}, std::nullopt, false,
                   Device::gpu)[0];
  };
  array a = run(1), b = run(2);
  eval({a, b});
  auto vx = ck::values(x);
  test::expect_allclose(a, {64}, test::map_ref(vx, [](double v) { return double(float(v) + 1); }));
  test::expect_allclose(b, {64}, test::map_ref(vx, [](double v) { return double(float(v) + 2); }));
  array c = run(3);
  test::expect_allclose(c, {64}, test::map_ref(vx, [](double v) { return double(float(v) + 3); }));
}

// The child half of DiskHitInANewProcess: skipped unless spawned by it.
TEST_F(CustomKernelCache, Child) {
  const char* tag = std::getenv("KILN_CUSTOM_KERNEL_CHILD");
  if (!tag) GTEST_SKIP() << "runs only as the child of DiskHitInANewProcess";
  gpu::reset_jit_stats();
  tagged_kernel(tag).compile({float32}, {1}, {float32});
  EXPECT_EQ(gpu::jit_stats().disk_hits, 1u);
  EXPECT_EQ(gpu::jit_stats().compiles, 0u);
}

TEST_F(CustomKernelCache, DiskHitInANewProcess) {
  const std::string tag = random_tag();
  tagged_kernel(tag).compile({float32}, {1}, {float32});
  ASSERT_EQ(gpu::jit_stats().compiles, 1u);
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=CustomKernelCache.Child";
  std::vector<char*> argv = {exe.data(), filter.data(), nullptr};
  std::vector<std::string> env = {"KILN_CUSTOM_KERNEL_CHILD=" + tag};
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child did not load the kernel from disk";
}

#endif  // KILN_WITH_CUDA
