// Custom kernels (kiln/fast.h) on the GPU: every case of custom_kernel_cases.h runs on a GPU
// when there is one, and every kernel of the table is compiled for sm_90 with NVRTC without
// one (CI). Also: the generator (which parameters a body gets, Metal keyword rewriting),
// argument errors at call time, compile errors with the user's line numbers, the caches
// (same name with a new source; a new process loading from disk), transforms that point to
// custom_function, and verbose output.
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

// Expects `f` to throw E with every one of `parts` in its message.
template <typename E, typename F>
void expect_throw_with(F&& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    std::string what = e.what();
    for (const char* p : parts) EXPECT_NE(what.find(p), std::string::npos) << what;
  }
}

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

// ---------------------------------------------------------------- warp logic, emulated
// The GPU-specific Metal headers (simdgroup functions, simdgroup matrices, 16-bit atomics)
// compiled for the host against an emulated warp: one std::thread per active lane, each
// CUDA warp intrinsic an exchange through a barrier, PTX's m16n8k8 from its fragment
// tables. CI checks their lane bookkeeping (partial warps, scans, the matrix layout and
// tensor-core fragments) this way; the GPU cases above check them on hardware.

#include <barrier>
#include <thread>

namespace warp_emulation {

// One warp: the active lanes, the lane of the calling thread, a barrier among them.
struct Warp {
  unsigned mask = 0;
  std::barrier<>* barrier = nullptr;
  uint32_t slots[32] = {};
  uint32_t a01[32], a23[32], b01[32];
  float c[32][4];
};
Warp warp;
thread_local unsigned this_lane;

// Every active lane publishes `v`; returns the value of lane `src` (its own when `src`
// is outside the warp, as CUDA's shuffles do).
uint32_t exchange(uint32_t v, int src) {
  warp.slots[this_lane] = v;
  warp.barrier->arrive_and_wait();
  uint32_t r = src >= 0 && src < 32 ? warp.slots[src] : v;
  warp.barrier->arrive_and_wait();
  return r;
}

// Runs `body(lane)` on every lane of `mask`, each on its own thread.
void run_warp(unsigned mask, const std::function<void(unsigned)>& body) {
  warp.mask = mask;
  std::barrier<> b(__builtin_popcount(mask));
  warp.barrier = &b;
  std::vector<std::thread> lanes;
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l) & 1)
      lanes.emplace_back([&, l] {
        this_lane = l;
        body(l);
      });
  for (auto& t : lanes) t.join();
}

}  // namespace warp_emulation

namespace {
// The CUDA intrinsics the headers use, on the emulated warp (file-local).
using warp_emulation::exchange;
[[maybe_unused]] unsigned __activemask() {
  return warp_emulation::warp.mask;
}
[[maybe_unused]] uint32_t __shfl_sync(unsigned, uint32_t v, unsigned src) {
  return exchange(v, int(src & 31));
}
[[maybe_unused]] uint32_t __shfl_up_sync(unsigned, uint32_t v, unsigned d) {
  int s = int(warp_emulation::this_lane) - int(d);
  return exchange(v, s < 0 ? int(warp_emulation::this_lane) : s);
}
[[maybe_unused]] uint32_t __shfl_down_sync(unsigned, uint32_t v, unsigned d) {
  int s = int(warp_emulation::this_lane + d);
  return exchange(v, s > 31 ? int(warp_emulation::this_lane) : s);
}
[[maybe_unused]] uint32_t __shfl_xor_sync(unsigned, uint32_t v, unsigned m) {
  return exchange(v, int(warp_emulation::this_lane ^ m));
}
[[maybe_unused]] unsigned __ballot_sync(unsigned mask, int p) {
  unsigned bits = 0;
  for (int l = 0; l < 32; ++l)
    if (exchange(p != 0, l) && ((mask >> l) & 1)) bits |= 1u << l;
  return bits;
}
[[maybe_unused]] int __any_sync(unsigned mask, int p) {
  return __ballot_sync(mask, p) != 0;
}
[[maybe_unused]] int __all_sync(unsigned mask, int p) {
  return __ballot_sync(mask, p) == mask;
}
[[maybe_unused]] void __syncwarp(unsigned) {}
[[maybe_unused]] int __ffs(unsigned x) {
  return __builtin_ffs(x);
}
[[maybe_unused]] int __clz(unsigned x) {
  return x ? __builtin_clz(x) : 32;
}
// CUDA's atomics, as host atomics on the same addresses.
template <typename T>
T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
template <typename T, typename F>
T rmw(T* p, F f) {
  T old = *p;
  while (!__atomic_compare_exchange_n(p, &old, f(old), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
template <typename T, typename U>
T atomicAdd(T* p, U v) {
  return rmw(p, [&](T x) { return T(x + v); });
}
template <typename T, typename U>
T atomicMax(T* p, U v) {
  return rmw(p, [&](T x) { return x < T(v) ? T(v) : x; });
}
template <typename T, typename U>
T atomicMin(T* p, U v) {
  return rmw(p, [&](T x) { return T(v) < x ? T(v) : x; });
}
template <typename T, typename U>
T atomicAnd(T* p, U v) {
  return rmw(p, [&](T x) { return T(x & v); });
}
template <typename T, typename U>
T atomicOr(T* p, U v) {
  return rmw(p, [&](T x) { return T(x | v); });
}
template <typename T, typename U>
T atomicXor(T* p, U v) {
  return rmw(p, [&](T x) { return T(x ^ v); });
}
template <typename T, typename U>
T atomicExch(T* p, U v) {
  return rmw(p, [&](T) { return T(v); });
}
}  // namespace

// Standard headers first, so that the kernel headers' own includes are no-ops inside the
// namespace below; the namespace keeps these host instantiations apart from any other
// copy of the layer in this binary. The only inline assembly (the lane id) reads the
// emulated lane.
#include <cmath>
#include <cstddef>
#include <cstdint>
namespace warp_emulation {
#define asm(...) (l = this_lane)
#include "kiln/backend/kernels/metal/common.h"
#include "kiln/backend/kernels/metal/gpu_simd.h"
#undef asm
namespace metal::detail {
// PTX's mma.sync.m16n8k8 (16-bit inputs, float accumulators), from its fragment tables:
// lane g*4+t holds A[g][2t..2t+1] (a01), A[g+8][..] (a23), B[2t..2t+1][g] (b01), and
// C/D rows g and g+8 at columns 2t, 2t+1.
template <typename TI>
void mma_m16n8k8(float (&d)[4], uint32_t a01, uint32_t a23, uint32_t b01, const float (&c)[4]) {
  const unsigned me = this_lane;
  warp.a01[me] = a01, warp.a23[me] = a23, warp.b01[me] = b01;
  for (int i = 0; i < 4; ++i) warp.c[me][i] = c[i];
  warp.barrier->arrive_and_wait();
  auto h = [](uint32_t w, int hi) { return float(TI::from_bits(uint16_t(hi ? w >> 16 : w))); };
  float A[16][8], B[8][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    int g = l >> 2, t = l & 3;
    for (int j = 0; j < 2; ++j) {
      A[g][2 * t + j] = h(warp.a01[l], j);
      A[g + 8][2 * t + j] = h(warp.a23[l], j);
      B[2 * t + j][g] = h(warp.b01[l], j);
      C[g][2 * t + j] = warp.c[l][j];
      C[g + 8][2 * t + j] = warp.c[l][2 + j];
    }
  }
  warp.barrier->arrive_and_wait();
  const int g = me >> 2, t = me & 3;
  for (int i = 0; i < 4; ++i) {
    int r = g + (i / 2) * 8, col = 2 * t + (i & 1);
    float acc = C[r][col];
    for (int k = 0; k < 8; ++k) acc += A[r][k] * B[k][col];
    d[i] = acc;
  }
}
}  // namespace metal::detail
#define KILN_SIMDGROUP_MMA 1
#define asm(...) (l = this_lane)
#include "kiln/backend/kernels/metal/gpu_atomic.h"
#include "kiln/backend/kernels/metal/gpu_matrix.h"
#undef asm
#undef KILN_SIMDGROUP_MMA
}  // namespace warp_emulation

namespace {
namespace wm = warp_emulation::metal;
using warp_emulation::run_warp;

const unsigned kMasks[] = {0xffffffffu, 0x0000ffffu, 0x0000000fu,
                           0x80000001u, 0x5a5a1234u, 0x00000001u};
}  // namespace

TEST(CustomKernelWarpEmulated, ReductionsScansAndVotesOnPartialWarps) {
  for (unsigned mask : kMasks) {
    float x[32];
    int xi[32];
    for (int l = 0; l < 32; ++l) {
      x[l] = float(int(test::rng()() % 9) - 4);  // small integers: exact sums in any order
      xi[l] = int(test::rng()() % 1000) - 500;
    }
    float sum[32], mx[32], inc[32], exc[32], first[32];
    int isum[32], iand[32];
    wm::float4 vsum[32];
    bool any[32], all[32];
    uint64_t ballot[32];
    run_warp(mask, [&](unsigned l) {
      sum[l] = wm::simd_sum(x[l]);
      mx[l] = wm::simd_max(x[l]);
      isum[l] = wm::simd_sum(xi[l]);
      iand[l] = wm::simd_and(xi[l]);
      inc[l] = wm::simd_prefix_inclusive_sum(x[l]);
      exc[l] = wm::simd_prefix_exclusive_sum(x[l]);
      vsum[l] = wm::simd_sum(wm::float4(x[l], 1.0f, 2.0f * x[l], -x[l]));
      first[l] = wm::simd_broadcast_first(x[l]);
      any[l] = wm::simd_any(x[l] > 3.0f);
      all[l] = wm::simd_all(x[l] > -4.0f);
      ballot[l] = static_cast<uint64_t>(wm::simd_ballot(x[l] > 0.0f));
    });
    float s = 0, m = -1e30f, running = 0;
    int is = 0, ia = -1;
    bool an = false, al = true;
    uint64_t bits = 0;
    for (int l = 0; l < 32; ++l) {
      if (!((mask >> l) & 1)) continue;
      s += x[l], m = std::max(m, x[l]), is += xi[l], ia &= xi[l];
      an = an || x[l] > 3, al = al && x[l] > -4;
      if (x[l] > 0) bits |= uint64_t(1) << l;
    }
    const int lowest = __builtin_ffs(mask) - 1;
    for (int l = 0; l < 32; ++l) {
      if (!((mask >> l) & 1)) continue;
      SCOPED_TRACE(testing::Message() << "mask " << std::hex << mask << std::dec << " lane " << l);
      EXPECT_EQ(sum[l], s);
      EXPECT_EQ(mx[l], m);
      EXPECT_EQ(isum[l], is);
      EXPECT_EQ(iand[l], ia);
      EXPECT_EQ(exc[l], running);
      running += x[l];
      EXPECT_EQ(inc[l], running);
      EXPECT_EQ(vsum[l].x, s);
      EXPECT_EQ(vsum[l].y, float(__builtin_popcount(mask)));
      EXPECT_EQ(vsum[l].z, 2 * s);
      EXPECT_EQ(vsum[l].w, -s);
      EXPECT_EQ(first[l], x[lowest]);
      EXPECT_EQ(any[l], an);
      EXPECT_EQ(all[l], al);
      EXPECT_EQ(ballot[l], bits);
    }
  }
}

TEST(CustomKernelWarpEmulated, Shuffles) {
  float x[32], idx[32], up[32], down[32], bfly[32], rot[32];
  double wide[32];
  for (int l = 0; l < 32; ++l) x[l] = float(test::rng()() % 1000);
  run_warp(0xffffffffu, [&](unsigned l) {
    idx[l] = wm::simd_shuffle(x[l], (l + 3) % 32);
    up[l] = wm::simd_shuffle_up(x[l], 2);
    down[l] = wm::simd_shuffle_down(x[l], 1);
    bfly[l] = wm::simd_shuffle_xor(x[l], 5);
    rot[l] = wm::simd_shuffle_rotate_up(x[l], 4);
    wide[l] = wm::simd_broadcast(double(x[l]) * 3, 7);
  });
  for (int l = 0; l < 32; ++l) {
    EXPECT_EQ(idx[l], x[(l + 3) % 32]);
    EXPECT_EQ(up[l], l >= 2 ? x[l - 2] : x[l]);
    EXPECT_EQ(down[l], l < 31 ? x[l + 1] : x[l]);
    EXPECT_EQ(bfly[l], x[l ^ 5]);
    EXPECT_EQ(rot[l], x[(l + 28) % 32]);
    EXPECT_EQ(wide[l], double(x[7]) * 3);
  }
}

// simdgroup_matrix through both paths: shuffles (float) and the tensor-core fragments
// (half, bfloat), transposed loads, the diagonal constructor and thread_elements().
TEST(CustomKernelWarpEmulated, SimdgroupMatrix) {
  auto small = [] { return float(int(test::rng()() % 7) - 3); };
  float A[64], B[128], C0[64], D[64], T[64], E[64], HD[64], BD[64], elems[64];
  wm::half H[64];
  for (int i = 0; i < 64; ++i) A[i] = small(), C0[i] = small(), H[i] = wm::half(small());
  for (int i = 0; i < 128; ++i) B[i] = small();
  run_warp(0xffffffffu, [&](unsigned l) {
    wm::simdgroup_float8x8 a, b, c, d, t, e, id(2.0f);
    wm::simdgroup_load(a, A, 8);
    wm::simdgroup_load(b, B, 16, wm::ulong2(8, 0));  // columns 8..15 of an 8x16 matrix
    wm::simdgroup_load(c, C0, 8);
    wm::simdgroup_multiply_accumulate(d, a, b, c);
    wm::simdgroup_store(d, D, 8);
    wm::simdgroup_load(t, A, 8, wm::ulong2(0, 0), true);
    wm::simdgroup_store(t, T, 8);
    wm::simdgroup_multiply(e, id, a);
    wm::simdgroup_store(e, E, 8);
    elems[2 * l] = a.thread_elements()[0];
    elems[2 * l + 1] = a.thread_elements()[1];
    wm::simdgroup_half8x8 h;
    wm::simdgroup_bfloat8x8 hb;
    wm::simdgroup_float8x8 acc;
    wm::simdgroup_load(h, H, 8);
    wm::simdgroup_load(hb, H, 8);
    wm::simdgroup_load(acc, C0, 8);
    wm::simdgroup_multiply_accumulate(acc, h, h, acc);  // tensor-core path
    wm::simdgroup_store(acc, HD, 8);
    acc = wm::make_filled_simdgroup_matrix<float, 8, 8>(0.5f);
    wm::simdgroup_multiply_accumulate(acc, hb, hb, acc);
    wm::simdgroup_store(acc, BD, 8);
  });
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 8; ++c) {
      float d = C0[r * 8 + c], hh = 0;
      for (int k = 0; k < 8; ++k) {
        d += A[r * 8 + k] * B[k * 16 + 8 + c];
        hh += float(H[r * 8 + k]) * float(H[k * 8 + c]);
      }
      EXPECT_EQ(D[r * 8 + c], d) << r << "," << c;
      EXPECT_EQ(T[r * 8 + c], A[c * 8 + r]);
      EXPECT_EQ(E[r * 8 + c], 2 * A[r * 8 + c]);
      EXPECT_EQ(HD[r * 8 + c], hh + C0[r * 8 + c]);
      EXPECT_EQ(BD[r * 8 + c], hh + 0.5f);
    }
  }
  // Metal's layout: lane l holds row 4*l4 + 2*l2 + l1, columns 4*l3 + 2*l0 and the next.
  for (int l = 0; l < 32; ++l) {
    int row = ((l >> 4) & 1) * 4 + ((l >> 2) & 1) * 2 + ((l >> 1) & 1);
    int col = ((l >> 3) & 1) * 4 + (l & 1) * 2;
    EXPECT_EQ(elems[2 * l], A[row * 8 + col]);
    EXPECT_EQ(elems[2 * l + 1], A[row * 8 + col + 1]);
  }
}

// Atomics on 16- and 8-bit values replace their part of the enclosing word only.
TEST(CustomKernelWarpEmulated, SubwordAtomics) {
  alignas(8) wm::half hs[4] = {wm::half(1.0f), wm::half(2.0f), wm::half(3.0f), wm::half(4.0f)};
  auto* ah = reinterpret_cast<wm::atomic<wm::half>*>(hs);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        wm::atomic_fetch_add_explicit(&ah[1], wm::half(1.0f), wm::memory_order_relaxed);
        wm::atomic_fetch_add_explicit(&ah[2], wm::half(0.5f), wm::memory_order_relaxed);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(float(hs[0]), 1.0f);
  EXPECT_EQ(float(hs[1]), 802.0f);
  EXPECT_EQ(float(hs[2]), 403.0f);
  EXPECT_EQ(float(hs[3]), 4.0f);
  alignas(4) bool flags[4] = {false, false, false, false};
  auto* af = reinterpret_cast<wm::atomic<bool>*>(flags);
  bool expected = false;
  EXPECT_FALSE(wm::atomic_exchange_explicit(&af[3], true, wm::memory_order_relaxed));
  EXPECT_TRUE(wm::atomic_compare_exchange_weak_explicit(
      &af[1], &expected, true, wm::memory_order_relaxed, wm::memory_order_relaxed));
  expected = false;
  EXPECT_FALSE(wm::atomic_compare_exchange_weak_explicit(
      &af[1], &expected, false, wm::memory_order_relaxed, wm::memory_order_relaxed));
  EXPECT_TRUE(expected);
  EXPECT_EQ((std::vector<bool>{flags[0], flags[1], flags[2], flags[3]}),
            (std::vector<bool>{false, true, false, true}));
}
