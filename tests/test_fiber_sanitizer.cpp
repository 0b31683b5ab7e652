// The CPU kernel runtime's fibers under AddressSanitizer, in any build: a small program built
// here with -fsanitize=address from kiln/backend/cpu/kernel_runtime/fiber.cpp (with ucontext,
// the sanitizer presets' switch, and with Boost.Context where installed) runs two fibers that
// switch back and forth, and one writes past a local array after it was switched out and back
// in. ASan must report it with the frame and variable: its swapcontext interceptor clears the
// shadow of the stack a context names (so fiber.cpp names none once makecontext is done), and
// the fiber-switch annotations tell it which stack runs. With fake stacks
// (detect_stack_use_after_return) too, and with a fiber left by a jump (the watchdog's
// escape), after which the OS thread's stack must hold no stale poison.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "kiln/backend/kernels/host_compiler.h"

namespace kiln {
namespace {

constexpr const char* kDriver = R"(#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include "kiln/backend/cpu/kernel_runtime/fiber.h"
using kiln::cpu_rt::Fiber;
Fiber* A;
Fiber* B;
int bad = 0;  // 4: write past `local`; 9: leave fiber a by a jump, as the watchdog does
sigjmp_buf escape;
// A frame no instrumentation prepares, whose buffer reaches where the abandoned frames were:
// memset's interceptor checks the shadow there.
__attribute__((no_sanitize_address, noinline)) void scrub() {
  char buf[32768];
  void* (*volatile set)(void*, int, size_t) = std::memset;
  set(buf, 1, sizeof buf);
  asm volatile("" : : "r"(buf) : "memory");
}
__attribute__((noinline)) int deep(int n) {
  volatile char pad[64];
  pad[n % 64] = static_cast<char>(n);
  return n ? deep(n - 1) + pad[n % 64] : 0;
}
void work_b(void*) {
  volatile int buf[32];
  for (int i = 0; i < 32; ++i) buf[i] = i;
  deep(20);
  B->suspend();
  deep(10);
  std::printf("b %d\n", buf[31]);
  B->suspend();
}
void work_a(void*) {
  int local[4] = {0, 0, 0, 0};
  int* volatile p = local;
  deep(30);
  A->switch_to(*B);
  deep(5);
  if (bad == 9) {
    Fiber::sanitizer_jump_to(nullptr);
    siglongjmp(escape, 1);
  }
  p[bad] = 1;  // one past the end when bad == 4
  std::printf("a %d\n", local[0] + local[3]);
  A->suspend();
}
int main(int argc, char** argv) {
  bad = std::atoi(argv[1]);
  for (int round = 0; round < 3; ++round) {
    A = new Fiber(256 << 10);
    B = new Fiber(256 << 10);
    B->assign(work_b, nullptr);
    A->assign(work_a, nullptr);
    if (sigsetjmp(escape, 1) == 0) {
      A->resume();  // a, then b, which suspends
      A->resume();  // a again, after its switch to b
    } else {
      Fiber::sanitizer_landed();
      scrub();
      Fiber::abandon(std::unique_ptr<Fiber>(A));
      A = nullptr;
    }
    B->resume();
    B->resume();  // b's work returns
    if (A) A->resume();  // a's work returns
    delete A;
    delete B;
    deep(40);
    scrub();
  }
  std::puts("done");
}
)";

struct Ran {
  int status = -1;
  std::string output;  // stdout and stderr
};

Ran run(const std::string& command) {
  Ran r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(FiberAsan, SwitchedFibersStayCheckedAndReportsNameTheFrame) {
  std::string cxx;
  try {
    cxx = kernels::host_compiler().command.front();
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no host compiler: " << e.what();
  }
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kiln_fiber_asan_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "driver.cpp") << kDriver;
  const std::string src = KILN_SOURCE_DIR;
  // Both switch implementations: ucontext (the sanitizer presets') and Boost.Context where
  // its library is installed (libboost-context-dev).
  int variants = 0;
  for (const std::string variant : {"ucontext", "boost.context"}) {
    const bool boost = variant == "boost.context";
    const std::string exe = (dir / ("driver_" + std::to_string(boost))).string();
    const Ran built = run(cxx + " -std=c++20 -O1 -g -fsanitize=address -fno-omit-frame-pointer " +
                          (boost ? "-DKILN_HAVE_BOOST_CONTEXT=1 " : "") + "-I" + src + " " +
                          (dir / "driver.cpp").string() + " " + src +
                          "/kiln/backend/cpu/kernel_runtime/fiber.cpp -o " + exe +
                          (boost ? " -lboost_context" : ""));
    if (built.status != 0) {
      std::cerr << variant << " not built with AddressSanitizer here:\n" << built.output;
      continue;
    }
    ++variants;
    for (const char* uar : {"0", "1"}) {
      const std::string env = std::string("ASAN_OPTIONS=detect_stack_use_after_return=") + uar +
                              ":exitcode=86 UBSAN_OPTIONS= ";
      const std::string what = variant + ", detect_stack_use_after_return=" + uar + ":\n";
      const Ran clean = run(env + exe + " 0");
      EXPECT_EQ(clean.status, 0) << what << clean.output;
      EXPECT_NE(clean.output.find("done"), std::string::npos) << what << clean.output;
      EXPECT_EQ(clean.output.find("AddressSanitizer"), std::string::npos) << what << clean.output;

      // Fiber a left by a jump in each of 3 rounds, as the watchdog leaves a stuck one.
      const Ran jumped = run(env + exe + " 9");
      EXPECT_EQ(jumped.status, 0) << what << jumped.output;
      EXPECT_NE(jumped.output.find("done"), std::string::npos) << what << jumped.output;
      EXPECT_EQ(jumped.output.find("AddressSanitizer"), std::string::npos) << what << jumped.output;

      const Ran bad = run(env + exe + " 4");
      EXPECT_EQ(bad.status, 86) << what << bad.output;
      EXPECT_NE(bad.output.find("AddressSanitizer: stack-buffer-overflow"), std::string::npos)
          << what << bad.output;
      EXPECT_NE(bad.output.find("WRITE of size 4"), std::string::npos) << what << bad.output;
      // The frame and variable: ASan knew the fiber's stack was the running one.
      EXPECT_NE(bad.output.find("is located in stack of thread T0"), std::string::npos)
          << what << bad.output;
      EXPECT_NE(bad.output.find("'local'"), std::string::npos) << what << bad.output;
    }
  }
  fs::remove_all(dir);
  if (variants == 0) GTEST_SKIP() << "the host compiler cannot build with AddressSanitizer";
}

}  // namespace
}  // namespace kiln
