// The sort family's GPU kernels (kiln/backend/cuda/device/radix_sort.cuh, radix_select.cuh,
// select_sampled.cuh, sort_search.cuh) compiled by the host compiler against the CUDA-on-CPU
// prelude of custom kernels (kiln/backend/kernels/cuda_cpu.h), and launched on kiln's CPU kernel
// runtime with the GPU's block, barrier, warp and atomic semantics. Kept apart from the tests
// themselves (test_sort_kernels.cpp): the prelude defines CUDA's names (threadIdx,
// __shared__, assert, ...) as macros.
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/backend/cpu/kernel_runtime/launch.h"
#include "test_sort_emu.h"

#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#pragma GCC diagnostic ignored "-Wattributes"
#include "kiln/backend/kernels/cuda_cpu.h"

namespace emu {
#include "kiln/backend/cuda/device/radix_sort.cuh"
#include "kiln/backend/cuda/device/select_sampled.cuh"
#include "kiln/backend/cuda/device/sort_search.cuh"
}  // namespace emu

namespace kiln::test {

namespace {

namespace sp = kiln::sortplan;
namespace dev = emu::kiln;
using kiln::cpu_rt::RunThreadFn;

/** A kernel parameter read from cuLaunchKernel's array (pointers travel as uint64_t). */
template <typename T>
T param(void* p) {
  T v;
  std::memcpy(static_cast<void*>(&v), p, sizeof(T));
  return v;
}

template <typename F>
struct Arity;
template <typename... P>
struct Arity<void (*)(P...)> {
  static constexpr size_t value = sizeof...(P);
};

template <typename... P, size_t... I>
void invoke(void (*f)(P...), void* const* args, std::index_sequence<I...>) {
  f(param<std::remove_cv_t<std::remove_reference_t<P>>>(args[I])...);
}

/** The runtime's per-thread entry of kernel F. */
template <auto F>
void run_thread(const kiln::cpu_rt::Launch* launch, kiln::cpu_rt::Thread* t) {
  kiln::cpu_rt::current_thread = t;
  invoke(F, launch->args, std::make_index_sequence<Arity<decltype(F)>::value>{});
}

using Registry = std::map<std::string, RunThreadFn>;

template <typename U, int KIND>
void add_key(Registry& r) {
  const sp::KeyType k{static_cast<int>(sizeof(U)), KIND};
  using M = std::conditional_t<KIND == 5, unsigned long long,
                               std::conditional_t<KIND == 2 && sizeof(U) == 8, double, float>>;
  r[sp::row_hist_name(k, 0)] = &run_thread<&dev::radix_row_hist<U, KIND, 0>>;
  r[sp::row_hist_name(k, 1)] = &run_thread<&dev::radix_row_hist<U, KIND, 1>>;
  r[sp::upsweep_name(k, 0, false)] = &run_thread<&dev::radix_upsweep<U, KIND, 0, false>>;
  r[sp::upsweep_name(k, 0, true)] = &run_thread<&dev::radix_upsweep<U, KIND, 0, true>>;
  r[sp::upsweep_name(k, 1, false)] = &run_thread<&dev::radix_upsweep<U, KIND, 1, false>>;
  r[sp::upsweep_name(k, 1, true)] = &run_thread<&dev::radix_upsweep<U, KIND, 1, true>>;
  r[sp::downsweep_name(k, 0, false, false)] =
      &run_thread<&dev::radix_downsweep<U, KIND, 0, false, false>>;
  r[sp::downsweep_name(k, 0, false, true)] =
      &run_thread<&dev::radix_downsweep<U, KIND, 0, false, true>>;
  r[sp::downsweep_name(k, 0, true, false)] =
      &run_thread<&dev::radix_downsweep<U, KIND, 0, true, false>>;
  r[sp::downsweep_name(k, 0, true, true)] =
      &run_thread<&dev::radix_downsweep<U, KIND, 0, true, true>>;
  r[sp::downsweep_name(k, 1, false, false)] =
      &run_thread<&dev::radix_downsweep<U, KIND, 1, false, false>>;
  r[sp::downsweep_name(k, 1, false, true)] =
      &run_thread<&dev::radix_downsweep<U, KIND, 1, false, true>>;
  r[sp::downsweep_name(k, 1, true, false)] =
      &run_thread<&dev::radix_downsweep<U, KIND, 1, true, false>>;
  r[sp::downsweep_name(k, 1, true, true)] =
      &run_thread<&dev::radix_downsweep<U, KIND, 1, true, true>>;
  r[sp::select_rows_name(k, 0)] = &run_thread<&dev::select_rows<U, KIND, 0, float>>;
  r[sp::select_rows_name(k, 1)] = &run_thread<&dev::select_rows<U, KIND, 1, M>>;
  r[sp::select_sampled_name(k)] = &run_thread<&dev::select_sampled<U, KIND>>;
  r[sp::select_hist_name(k, 0)] = &run_thread<&dev::select_hist<U, KIND, 0>>;
  r[sp::select_hist_name(k, 1)] = &run_thread<&dev::select_hist<U, KIND, 1>>;
  r[sp::select_pick_name(k)] = &run_thread<&dev::select_pick<U>>;
  r[sp::select_min_above_name(k)] = &run_thread<&dev::select_min_above<U, KIND>>;
  r[sp::select_median_finish_name(k)] = &run_thread<&dev::select_median_finish<U, KIND, M>>;
  r[sp::select_count_name(k)] = &run_thread<&dev::select_count<U, KIND>>;
  r[sp::select_write_name(k)] = &run_thread<&dev::select_write<U, KIND>>;
  r[sp::searchsorted_name(k, false)] = &run_thread<&dev::searchsorted<U, KIND, false>>;
  r[sp::searchsorted_name(k, true)] = &run_thread<&dev::searchsorted<U, KIND, true>>;
  r[sp::unique_flags_name(k)] = &run_thread<&dev::unique_flags<U, KIND>>;
  r[sp::unique_write_name(k)] = &run_thread<&dev::unique_write<U, KIND>>;
  r[sp::unique_finish_name(k)] = &run_thread<&dev::unique_finish<U>>;
}

const Registry& registry() {
  static const Registry r = [] {
    Registry r;
    r[sp::scan_lists_name()] = &run_thread<&dev::scan_lists>;
    add_key<unsigned int, 2>(r);        // float32
    add_key<unsigned int, 1>(r);        // int32
    add_key<unsigned long long, 2>(r);  // float64
    add_key<unsigned long long, 1>(r);  // int64
    add_key<unsigned char, 0>(r);       // uint8, bool
    add_key<unsigned short, 3>(r);      // float16
    add_key<unsigned long long, 5>(r);  // complex64
    return r;
  }();
  return r;
}

class EmulatedLauncher final : public sp::Launcher {
 public:
  explicit EmulatedLauncher(int multiprocessors) : sms_(multiprocessors) {}

  void launch(sp::Family, const std::string& kernel, int64_t blocks, uint32_t threads,
              void** params) override {
    auto it = registry().find(kernel);
    if (it == registry().end()) throw std::runtime_error("no emulated kernel " + kernel);
    kiln::cpu_rt::Launch l{};
    l.args = params;
    l.grid = {threads, 1, 1};
    l.threadgroup = {threads, 1, 1};
    l.blocks = {static_cast<uint32_t>(blocks), 1, 1};
    l.rt = kiln::cpu_rt::runtime();
    kiln::cpu_rt::LaunchConfig config{"[sort emulation]", kernel, true, false};
    kiln::cpu_rt::run_launch({nullptr, it->second}, l, config);
  }

  uint64_t scratch(size_t bytes) override {
    // Poisoned, as fresh device memory holds anything.
    buffers_.push_back(std::make_unique<unsigned char[]>(bytes + 16));
    std::memset(buffers_.back().get(), 0xCD, bytes + 16);
    return reinterpret_cast<uint64_t>(buffers_.back().get());
  }

  void zero(uint64_t ptr, size_t bytes) override {
    std::memset(reinterpret_cast<void*>(ptr), 0, bytes);
  }

  int multiprocessors() const override { return sms_; }

 private:
  int sms_;
  std::vector<std::unique_ptr<unsigned char[]>> buffers_;
};

}  // namespace

std::unique_ptr<sortplan::Launcher> make_emulated_sort_launcher(int multiprocessors) {
  return std::make_unique<EmulatedLauncher>(multiprocessors);
}

}  // namespace kiln::test
