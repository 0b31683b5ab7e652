// CPU custom kernels against kiln's built-in ops, in one process; JSON on stdout.
//
//  - elementwise: out = a + b on 2^24 float32 (a Metal-flavour kernel, no barriers: the
//    block loop) against kiln::add. Memory-bound: 3 * 4 * 2^24 bytes.
//  - rmsnorm: y = x * rsqrt(mean(x^2) + eps) * w on (4096, 4096) float32, one threadgroup
//    of 256 per row with simd_sum and threadgroup memory and barriers (fibers), against the
//    same formula composed of kiln ops (kiln has no fused rms_norm).
//  - compile: first use of each kernel with a cold disk cache, then a load from the disk
//    cache (memory cache cleared), in this process.
// Kernel and built-in runs alternate, so both see the same load; medians after warm-up.
//
// Built and run by benchmarks/cpu/custom_kernel.py.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kiln/backend/cpu/kernel_runtime/compiled_kernel.h"
#include "kiln/backend/cpu/kernel_runtime/fiber.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/fast.h"
#include "kiln/kiln.h"

using namespace kiln;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times `a` and `b` alternately, `reps` each after `warmup` each; returns both medians.
std::pair<double, double> alternate(const std::function<void()>& a, const std::function<void()>& b,
                                    int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) a(), b();
  std::vector<double> ta, tb;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    a();
    ta.push_back(seconds_since(t0));
    t0 = Clock::now();
    b();
    tb.push_back(seconds_since(t0));
  }
  return {median(ta), median(tb)};
}

const char* kAddSource = R"(
  uint i = thread_position_in_grid.x;
  out[i] = a[i] + b[i];
)";

// One threadgroup of 256 threads per row: per-thread sums of squares over a strided slice,
// simd_sum, partial sums of the 8 simdgroups through threadgroup memory, one barrier.
const char* kRmsSource = R"(
  uint row = threadgroup_position_in_grid.x;
  uint t = thread_position_in_threadgroup.x;
  uint lane = thread_index_in_simdgroup, sg = simdgroup_index_in_threadgroup;
  const device float* xr = x + row * N;
  float acc = 0.0f;
  for (uint j = t; j < N; j += 256) acc += xr[j] * xr[j];
  acc = simd_sum(acc);
  threadgroup float partial[8];
  if (lane == 0) partial[sg] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float total = 0.0f;
  for (uint k = 0; k < 8; ++k) total += partial[k];
  float scale = metal::rsqrt(total / float(N) + 1e-5f);
  for (uint j = t; j < N; j += 256) out[row * N + j] = xr[j] * scale * w[j];
)";

fast::KernelFunction add_kernel(const std::string& tag) {
  return fast::metal_kernel("bench_add", {"a", "b"}, {"out"}, "// " + tag + kAddSource);
}
fast::KernelFunction rms_kernel(const std::string& tag) {
  return fast::metal_kernel("bench_rmsnorm", {"x", "w"}, {"out"}, "// " + tag + kRmsSource);
}

array run_add(const fast::KernelFunction& k, const array& a, const array& b) {
  int n = static_cast<int>(a.size());
  return k({a, b}, {a.shape()}, {float32}, {n, 1, 1}, {256, 1, 1}, {}, std::nullopt, false,
           Device::cpu)[0];
}

array run_rms(const fast::KernelFunction& k, const array& x, const array& w) {
  int rows = x.shape(0);
  return k({x, w}, {x.shape()}, {float32}, {rows * 256, 1, 1}, {256, 1, 1},
           {{"N", static_cast<int>(x.shape(1))}}, std::nullopt, false, Device::cpu)[0];
}

array builtin_rms(const array& x, const array& w) {
  array ms = mean(multiply(x, x, Device::cpu), std::vector<int>{-1}, true, Device::cpu);
  return multiply(multiply(x, rsqrt(add(ms, array(1e-5f), Device::cpu), Device::cpu), Device::cpu),
                  w, Device::cpu);
}

double max_abs_diff(const array& a, const array& b) {
  array d = max(abs(subtract(a, b, Device::cpu), Device::cpu), false, Device::cpu);
  return d.item<float>();
}

// Cold compile with a fresh disk cache, then a disk load (memory cache cleared); seconds.
std::pair<double, double> compile_times(
    const std::function<fast::KernelFunction(std::string)>& make, const std::vector<Dtype>& in,
    const std::vector<int>& nd,
    const std::vector<std::pair<std::string, fast::TemplateArg>>& targs) {
  const std::string tag = std::to_string(Clock::now().time_since_epoch().count());
  auto k = make(tag);
  auto t0 = Clock::now();
  k.compile(in, nd, {float32}, targs, "cpu");
  double cold = seconds_since(t0);
  cpu_rt::clear_kernel_memory_cache();
  t0 = Clock::now();
  k.compile(in, nd, {float32}, targs, "cpu");
  return {cold, seconds_since(t0)};
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int warmup = 2, reps = quick ? 3 : 9;
  // A private cache, so that first-use compile times are cold.
  const auto cache =
      std::filesystem::temp_directory_path() /
      ("kiln-bench-cache-" + std::to_string(Clock::now().time_since_epoch().count()));
  setenv("KILN_CACHE_DIR", cache.c_str(), 1);

  std::string json = "{\n";
  auto field = [&](const std::string& k, const std::string& v, bool last = false) {
    json += "  \"" + k + "\": " + v + (last ? "\n" : ",\n");
  };
  auto num = [](double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.6g", v);
    return std::string(b);
  };
  field("threads", std::to_string(cpu::num_threads()));
  field("fibers", "\"" + std::string(cpu_rt::Fiber::implementation()) + "\"");

  // Elementwise.
  const int n = 1 << 24;
  array a = random::uniform(-1, 1, {n}, float32, std::nullopt, Device::cpu);
  array b = random::uniform(-1, 1, {n}, float32, std::nullopt, Device::cpu);
  eval({a, b});
  auto addk = add_kernel("main");
  {
    array c = run_add(addk, a, b), r = add(a, b, Device::cpu);
    eval({c, r});
    field("add_max_abs_diff", num(max_abs_diff(c, r)));
  }
  auto [t_add_k, t_add_b] = alternate([&] { run_add(addk, a, b).eval(); },
                                      [&] { add(a, b, Device::cpu).eval(); }, warmup, reps);
  field("add_kernel_seconds", num(t_add_k));
  field("add_builtin_seconds", num(t_add_b));

  // RMSNorm.
  const int rows = 4096, cols = 4096;
  array x = random::normal({rows, cols}, float32, 0, 1, std::nullopt, Device::cpu);
  array w = random::uniform(0.5, 1.5, {cols}, float32, std::nullopt, Device::cpu);
  eval({x, w});
  auto rmsk = rms_kernel("main");
  {
    array c = run_rms(rmsk, x, w), r = builtin_rms(x, w);
    eval({c, r});
    field("rmsnorm_max_abs_diff", num(max_abs_diff(c, r)));
  }
  auto [t_rms_k, t_rms_b] = alternate([&] { run_rms(rmsk, x, w).eval(); },
                                      [&] { builtin_rms(x, w).eval(); }, 1, quick ? 3 : 5);
  field("rmsnorm_kernel_seconds", num(t_rms_k));
  field("rmsnorm_builtin_seconds", num(t_rms_b));

  // Compile and disk-cache load, at -O2 (the default) and -O1 (KILN_CXXFLAGS).
  auto [add_cold, add_disk] = compile_times(add_kernel, {float32, float32}, {1, 1}, {});
  auto [rms_cold, rms_disk] = compile_times(rms_kernel, {float32, float32}, {2, 1}, {{"N", cols}});
  field("add_compile_seconds", num(add_cold));
  field("add_disk_load_seconds", num(add_disk));
  field("rmsnorm_compile_seconds", num(rms_cold));
  field("rmsnorm_disk_load_seconds", num(rms_disk));
  setenv("KILN_CXXFLAGS", "-O1", 1);
  auto [add_o1, add_o1_disk] = compile_times(add_kernel, {float32, float32}, {1, 1}, {});
  auto [rms_o1, rms_o1_disk] = compile_times(rms_kernel, {float32, float32}, {2, 1}, {{"N", cols}});
  field("add_compile_seconds_O1", num(add_o1));
  field("rmsnorm_compile_seconds_O1", num(rms_o1));
  {
    auto add1 = add_kernel("o1"), rms1 = rms_kernel("o1");
    auto [t1, t2] = alternate([&] { run_add(add1, a, b).eval(); },
                              [&] { run_rms(rms1, x, w).eval(); }, 1, quick ? 3 : 5);
    field("add_kernel_seconds_O1", num(t1));
    field("rmsnorm_kernel_seconds_O1", num(t2), true);
  }
  unsetenv("KILN_CXXFLAGS");
  (void)add_o1_disk;
  (void)rms_o1_disk;
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
  std::printf("%s}\n", json.c_str());
  return 0;
}
