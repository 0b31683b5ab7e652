// CPU custom kernels under AddressSanitizer and UBSan (the asan preset): the host compiler
// instruments the kernels (host_compiler.cpp), so a user's kernel body that writes out of
// bounds, or overflows a signed integer, is reported where it happens instead of silently
// corrupting memory. Each case runs in a fresh process (a death test) that must die with
// the sanitizer's report; in other builds the cases skip.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kiln/backend/kernels/host_compiler.h"
#include "kiln/fast.h"
#include "scoped_env.h"
#include "test_utils.h"

namespace kiln {
namespace {

bool address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

// UBSan's run-time library is in the process (the asan preset has it; GCC defines no macro).
bool ubsan_loaded() {
  return dlsym(RTLD_DEFAULT, "__ubsan_handle_type_mismatch_v1") != nullptr;
}

using test::ScopedEnv;

// The caller's sanitizer options (make sanitize's) with `extra` last: later settings win.
std::string with(const char* var, const std::string& extra) {
  const char* old = std::getenv(var);
  return (old && *old ? std::string(old) + ":" : std::string()) + extra;
}

array ints(const std::vector<int>& v) {
  return array(v.begin(), Shape{static_cast<int>(v.size())}, int32);
}

class CustomKernelAsan : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!address_sanitizer()) GTEST_SKIP() << "an AddressSanitizer build's test";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    // A fixed exit status (make sanitize sets abort_on_error=1, plain ctest does not).
    asan_.emplace("ASAN_OPTIONS", with("ASAN_OPTIONS", "abort_on_error=0:exitcode=86"));
    ubsan_.emplace("UBSAN_OPTIONS",
                   with("UBSAN_OPTIONS", "halt_on_error=1:abort_on_error=0:exitcode=87"));
  }
  std::optional<ScopedEnv> asan_, ubsan_;
};

TEST_F(CustomKernelAsan, HostCompilerInstrumentsKernels) {
  // Part of the command, so of the compiler identity and every cache key: an instrumented
  // kernel is never loaded by an uninstrumented build from the disk cache, nor the reverse.
  const auto cc = kernels::host_compiler();
  std::string command;
  for (const auto& w : cc.command) command += w + " ";
  const std::string flag = ubsan_loaded() ? "-fsanitize=address,undefined" : "-fsanitize=address";
  EXPECT_NE(command.find(flag + " "), std::string::npos) << command;
  EXPECT_NE(cc.identity.find(flag + " "), std::string::npos) << cc.identity;
}

// Each thread writes the element its input names (an index read at run time, so the
// compiler cannot see it); one index is one past the end. In the block loop and in fiber
// mode (a barrier), where the kernel runs on a fiber's stack. The output (64 int32) is a
// buffer of its own, so the element after it is in ASan's redzone; the report's first frame
// is in the kernel's object.
fast::KernelFunction scatter(bool fibers) {
  return fast::cuda_kernel(fibers ? "asan_scatter_fibers" : "asan_scatter_plain", {"x"}, {"out"},
                           std::string(fibers ? "__syncthreads();\n" : "") +
                               "int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                               "out[x[i]] = i;\n");
}

TEST_F(CustomKernelAsan, OutOfBoundsWriteInAKernelIsReported) {
  std::vector<int> perm(64);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), test::rng());
  for (const bool fibers : {false, true}) {
    auto k = scatter(fibers);
    // In bounds, the kernel runs clean in this process: out is the inverse permutation.
    auto v = test::to_double(k({ints(perm)}, {{64}}, {int32}, {64, 1, 1}, {32, 1, 1}, {},
                               std::nullopt, false, Device::cpu)[0]);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(v[perm[i]], i) << i;
    auto bad = perm;
    bad[std::uniform_int_distribution<int>(0, 63)(test::rng())] = 64;
    EXPECT_EXIT(
        {
          k({ints(bad)}, {{64}}, {int32}, {64, 1, 1}, {32, 1, 1}, {}, std::nullopt, false,
            Device::cpu)[0]
              .eval();
          std::exit(0);
        },
        testing::ExitedWithCode(86),
        "AddressSanitizer: heap-buffer-overflow.*WRITE of size 4.*#0 "
        "[^\n]*kernel-[0-9]+-[0-9]+\\.so")
        << (fibers ? "fiber mode" : "block loop");
  }
}

// An overflow of an array local to the kernel body: only instrumented kernel code puts
// redzones around its own stack frames. Written through a pointer the compiler cannot follow
// (an index on the array itself is caught first by UBSan's bounds check).
TEST_F(CustomKernelAsan, StackOverflowInAKernelIsReported) {
  auto k = fast::cuda_kernel("asan_stack_oob", {"x"}, {"out"},
                             "int local[4] = {0, 0, 0, 0};\n"
                             "int* volatile p = local;\n"
                             "p[x[threadIdx.x]] = 1;\n"
                             "out[threadIdx.x] = local[threadIdx.x & 3];\n");
  EXPECT_EXIT(
      {
        k({ints({0, 1, 2, 4})}, {{4}}, {int32}, {4, 1, 1}, {4, 1, 1}, {}, std::nullopt, false,
          Device::cpu)[0]
            .eval();
        std::exit(0);
      },
      testing::ExitedWithCode(86), "AddressSanitizer: stack-buffer-overflow.*WRITE of size 4");
}

// UBSan's checks reach the kernel body too: a signed overflow is undefined in CUDA C++ as
// in C++. UBSan's report names the body's line ("source:1").
TEST_F(CustomKernelAsan, SignedOverflowInAKernelIsReported) {
  if (!ubsan_loaded()) GTEST_SKIP() << "an AddressSanitizer build without UBSan";
  auto k = fast::cuda_kernel("ubsan_overflow", {"x"}, {"out"},
                             "out[threadIdx.x] = x[threadIdx.x] + 2147483647;\n");
  EXPECT_EXIT(
      {
        k({ints({0, 1})}, {{2}}, {int32}, {2, 1, 1}, {2, 1, 1}, {}, std::nullopt, false,
          Device::cpu)[0]
            .eval();
        std::exit(0);
      },
      testing::ExitedWithCode(87),
      "source:1:[0-9]+: runtime error: signed integer overflow: 1 \\+ 2147483647");
}

}  // namespace
}  // namespace kiln
