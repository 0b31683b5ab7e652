// The extension API (kiln/extension.h): the registry of kernel libraries that
// kiln_add_kernel_sources fills, the translation unit it gives NVRTC (#line directives naming
// the extension's files), and compile-only builds of extension kernels, which need no GPU.
// The whole path through CMake, out of tree, is ctest's extension.axpby
// (tests/test_extension.cmake).
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kiln/extension.h"

namespace {

using kiln::ext::KernelFile;
using kiln::ext::KernelLibrary;

// Library names are process-wide: each test uses its own.
KernelLibrary library(const std::string& name, const std::string& text,
                      std::vector<KernelFile> headers = {}) {
  return {name, {{"k.cu", "/src/" + name + "/k.cu", text}}, std::move(headers)};
}

// The message of what `f` throws as E; fails the test when it throws nothing.
template <typename E, typename F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "nothing was thrown";
  return "";
}

TEST(Extension, RegisteredLibraryHasLineDirectives) {
  kiln::ext::register_kernel_library(library("ext_test_lines", "int a;\nint b;"));
  EXPECT_TRUE(kiln::ext::has_kernel_library("ext_test_lines"));
  auto names = kiln::ext::kernel_library_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "ext_test_lines"), names.end());
  auto src = kiln::ext::kernel_library_source("ext_test_lines", "op");
  EXPECT_EQ(src.source, "#line 1 \"/src/ext_test_lines/k.cu\"\nint a;\nint b;\n");
}

TEST(Extension, SourcesJoinInOrderAndHeadersKeepTheirNames) {
  KernelLibrary lib{"ext_test_two",
                    {{"a.cu", "/x/a.cu", "A\n"}, {"b.cu", "/x/b\"q.cu", "B"}},
                    {{"inc/h.cuh", "/x/inc/h.cuh", "H\n"}}};
  kiln::ext::register_kernel_library(lib);
  auto src = kiln::ext::kernel_library_source("ext_test_two", "op");
  // Each file starts at its own line 1; a quote in a path is escaped.
  EXPECT_EQ(src.source, "#line 1 \"/x/a.cu\"\nA\n#line 1 \"/x/b\\\"q.cu\"\nB\n");
  ASSERT_EQ(src.headers.size(), 1u);
  EXPECT_EQ(src.headers[0].first, "inc/h.cuh");
  EXPECT_EQ(src.headers[0].second, "#line 1 \"/x/inc/h.cuh\"\nH\n");
}

TEST(Extension, MissingLibraryIsTaggedWithTheOp) {
  EXPECT_FALSE(kiln::ext::has_kernel_library("ext_test_missing"));
  auto what = thrown<std::runtime_error>(
      [] { kiln::ext::kernel_library_source("ext_test_missing", "axpby"); });
  EXPECT_EQ(what.rfind("[axpby] No CUDA kernel library 'ext_test_missing' is registered", 0), 0u)
      << what;
  EXPECT_NE(what.find("kiln_add_kernel_sources"), std::string::npos) << what;
}

TEST(Extension, SameLibraryTwiceIsHarmlessDifferentOnesConflict) {
  // A static library's registration compiled into two consumers registers twice, identically.
  kiln::ext::register_kernel_library(library("ext_test_twice", "int a;"));
  kiln::ext::register_kernel_library(library("ext_test_twice", "int a;"));
  EXPECT_NO_THROW(kiln::ext::kernel_library_source("ext_test_twice", "op"));

  kiln::ext::register_kernel_library(library("ext_test_clash", "int a;"));
  KernelLibrary other{"ext_test_clash", {{"k.cu", "/elsewhere/k.cu", "int b;"}}, {}};
  kiln::ext::register_kernel_library(other);
  auto what = thrown<std::runtime_error>(
      [] { kiln::ext::kernel_library_source("ext_test_clash", "myop"); });
  EXPECT_NE(what.find("[myop] Two different CUDA kernel libraries are registered as "
                      "'ext_test_clash'"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("/elsewhere/k.cu"), std::string::npos) << what;
}

#ifdef KILN_WITH_CUDA

TEST(ExtensionJit, CompilesAKernelByNameWithoutAGpu) {
  kiln::ext::register_kernel_library(library(
      "ext_test_ok",
      "#include \"kiln/backend/cuda/device/types.cuh\"\n"
      "#include \"scale.cuh\"\n"
      "extern \"C\" __global__ void scale_float32(float* x) {\n"
      "  x[threadIdx.x] = scale(x[threadIdx.x]);\n"
      "}\n"
      "template <typename T>\n"
      "__global__ void twice(T* x) { x[0] = x[0] + x[0]; }\n",
      {{"scale.cuh", "/src/scale.cuh", "__device__ float scale(float v) { return 2 * v; }\n"}}));
  auto m = kiln::ext::compile_kernels("ext_test_ok", {"scale_float32"}, "op", "sm_90");
  EXPECT_TRUE(m.is_cubin());
  ASSERT_NE(m.lowered_name("scale_float32"), nullptr);
  EXPECT_EQ(*m.lowered_name("scale_float32"), "scale_float32");  // extern "C": unmangled
  // Template instantiations are named like built-in kernels' name expressions.
  auto t = kiln::ext::compile_kernels("ext_test_ok", {"twice<kiln::float16>"}, "op", "compute_90");
  EXPECT_FALSE(t.is_cubin());
  EXPECT_NE(t.lowered_name("twice<kiln::float16>"), nullptr);
}

TEST(ExtensionJit, DimsMirrorTheDeviceHeaders) {
  kiln::ext::register_kernel_library(
      library("ext_test_dims",
              "#include \"kiln/backend/cuda/device/indexing.cuh\"\n"
              "static_assert(kiln::kMaxDims == HOST_MAX_DIMS, \"kMaxDims\");\n"
              "static_assert(sizeof(kiln::Dims<int>) == HOST_INT_BYTES, \"Dims<int>\");\n"
              "static_assert(sizeof(kiln::Dims<long long>) == HOST_LL_BYTES, \"Dims<ll>\");\n"
              "extern \"C\" __global__ void dims(const __grid_constant__ kiln::Dims<int> d,\n"
              "                                  int* out) { out[0] = d.v[0]; }\n"));
  const std::vector<std::string> options = {
      "-DHOST_MAX_DIMS=" + std::to_string(kiln::ext::kMaxDims),
      "-DHOST_INT_BYTES=" + std::to_string(sizeof(kiln::ext::Dims<int32_t>)),
      "-DHOST_LL_BYTES=" + std::to_string(sizeof(kiln::ext::Dims<int64_t>))};
  EXPECT_NO_THROW(kiln::ext::compile_kernels("ext_test_dims", {"dims"}, "op", "sm_90", options));
}

TEST(ExtensionJit, CompileErrorsNameTheExtensionsFileAndLine) {
  kiln::ext::register_kernel_library(
      {"ext_test_broken",
       {{"ok.cu", "/src/ext/ok.cu", "__device__ int fine() { return 1; }\n"},
        {"broken.cu", "/src/ext/broken.cu",
         "// line 1\n"
         "extern \"C\" __global__ void k(float* x) {\n"
         "  x[0] = not_declared;\n"
         "}\n"}},
       {}});
  auto what = thrown<kiln::gpu::CompileError>(
      [] { kiln::ext::compile_kernels("ext_test_broken", {"k"}, "op", "sm_90"); });
  EXPECT_NE(what.find("/src/ext/broken.cu(3): error"), std::string::npos) << what;
  EXPECT_NE(what.find("not_declared"), std::string::npos) << what;
  // The module is named after the library and kernel, as built-in modules are.
  EXPECT_NE(what.find("ext_test_broken/k"), std::string::npos) << what;

  // An error in a header names the header's file.
  kiln::ext::register_kernel_library({"ext_test_bad_header",
                                      {{"main.cu", "/src/ext/main.cu", "#include \"bad.cuh\"\n"}},
                                      {{"bad.cuh", "/src/ext/bad.cuh", "\n\nint oops = ;\n"}}});
  what = thrown<kiln::gpu::CompileError>(
      [] { kiln::ext::compile_kernels("ext_test_bad_header", {"oops"}, "op", "sm_90"); });
  EXPECT_NE(what.find("/src/ext/bad.cuh(3): error"), std::string::npos) << what;
}

TEST(ExtensionJit, UnknownKernelAndMissingLibrary) {
  kiln::ext::register_kernel_library(
      library("ext_test_names", "extern \"C\" __global__ void present() {}\n"));
  auto what = thrown<kiln::gpu::CompileError>(
      [] { kiln::ext::compile_kernels("ext_test_names", {"absent"}, "op", "sm_90"); });
  EXPECT_NE(what.find("absent"), std::string::npos) << what;
  what = thrown<std::runtime_error>(
      [] { kiln::ext::compile_kernels("ext_test_nowhere", {"present"}, "axpby", "sm_90"); });
  EXPECT_EQ(what.rfind("[axpby] No CUDA kernel library 'ext_test_nowhere'", 0), 0u) << what;
}

TEST(ExtensionJit, GetKernelLoadsOnceOnAGpu) {
  if (!kiln::gpu::is_available()) GTEST_SKIP() << "no GPU";
  kiln::ext::register_kernel_library(
      library("ext_test_run",
              "extern \"C\" __global__ void fill(float* x, int n) {\n"
              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  if (i < n) x[i] = 0.5f * i;\n"
              "}\n"));
  auto s = kiln::default_stream(kiln::Device::gpu);
  CUfunction f1 = kiln::ext::get_kernel(s, "ext_test_run", "fill", "op");
  CUfunction f2 = kiln::ext::get_kernel(s, "ext_test_run", "fill", "op");
  EXPECT_EQ(f1, f2);  // compiled and loaded once
  EXPECT_THROW(
      kiln::ext::get_kernel(kiln::default_stream(kiln::Device::cpu), "ext_test_run", "fill", "op"),
      std::invalid_argument);
}

#endif  // KILN_WITH_CUDA

}  // namespace
