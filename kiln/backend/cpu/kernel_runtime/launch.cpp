// run_launch: blocks handed out dynamically to the CPU thread pool, one block at a time in
// fiber mode and in batches in the block loop; the runtime's function table.
#include "kiln/backend/cpu/kernel_runtime/launch.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "kiln/backend/cpu/kernel_runtime/state.h"
#include "kiln/backend/cpu/threading.h"

namespace kiln::cpu_rt {

namespace {

void rt_fail(const Thread* t, const char* message) {
  LaunchState* ls = current_launch();
  throw std::runtime_error((ls ? ls->where(*t) : std::string("[custom kernel] ")) + message);
}

void rt_print(const char* text, size_t n) {
  // Never abandon a fiber while it holds stdout's lock.
  Worker& w = this_worker();
  bool in_fiber = w.in_fiber.exchange(false);
  std::fwrite(text, 1, n, stdout);
  if (LaunchState* ls = current_launch()) ls->printed.store(true, std::memory_order_relaxed);
  w.in_fiber.store(in_fiber);
}

const Runtime kRuntime = {
    kAbiVersion, &BlockRunner::barrier, &BlockRunner::warp_exchange, &BlockRunner::yield, &rt_fail,
    &rt_print,
};

double timeout_seconds() {
  if (const char* e = std::getenv("KILN_KERNEL_TIMEOUT")) {
    double v = std::atof(e);
    if (v > 0) return v;
  }
  return 20;
}

// The blocks a thread of the pool runs without fibers: batches, so that the shared counter
// is not a hot spot when blocks are small.
void work_plain(LaunchState& ls) {
  const Launch& L = ls.launch;
  std::unique_ptr<unsigned char[]> dynamic_shared(
      L.dynamic_shared ? new unsigned char[L.dynamic_shared] : nullptr);
  const uint64_t batch =
      std::max<uint64_t>(1, ls.total_blocks / (16 * static_cast<uint64_t>(cpu::num_threads())));
  while (!ls.failed.load(std::memory_order_relaxed)) {
    uint64_t begin = ls.next_block.fetch_add(batch, std::memory_order_relaxed);
    if (begin >= ls.total_blocks) break;
    uint64_t end = std::min(ls.total_blocks, begin + batch);
    try {
      ls.kernel.run_blocks(&L, begin, end, dynamic_shared.get());
    } catch (const std::exception& e) {
      ls.fail(e.what());
    } catch (...) {
      ls.fail(ls.config.tag + " Kernel '" + ls.config.name + "' threw an unknown exception.");
    }
  }
}

// The blocks a thread of the pool runs with fibers. A fiber that the watchdog finds stuck
// is left by a jump back here (see watchdog.cpp): no object may be created between the
// sigsetjmp and the loop.
void work_fibers(LaunchState& ls) {
  Worker& w = this_worker();
  std::unique_ptr<BlockRunner> runner;
  try {
    runner = std::make_unique<BlockRunner>(ls);
  } catch (const std::exception& e) {
    ls.fail(ls.config.tag + " Kernel '" + ls.config.name + "': " + e.what());
    return;
  }
  w.launch.store(&ls);
  w.escape_context = Fiber::sanitizer_context();
  if (sigsetjmp(w.escape, 1) != 0) {
    Fiber::sanitizer_landed();
    w.escape_armed.store(false);
    runner->abandon();
    w.launch.store(nullptr);
    return;
  }
  w.escape_armed.store(true);
  while (!ls.failed.load(std::memory_order_relaxed)) {
    uint64_t b = ls.next_block.fetch_add(1, std::memory_order_relaxed);
    if (b >= ls.total_blocks) break;
    runner->run(b);
  }
  w.escape_armed.store(false);
  w.launch.store(nullptr);
}

}  // namespace

std::string dim_str(const Dim3& d) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%u, %u, %u)", d.x, d.y, d.z);
  return buf;
}

void LaunchState::fail(const std::string& message) {
  std::lock_guard lk(mu);
  if (error.empty()) error = message;
  failed.store(true);
}

std::string LaunchState::where(const Thread& t) const {
  return config.tag + " Kernel '" + config.name + "', block " + dim_str(t.block_idx) + ", thread " +
         dim_str(t.thread_idx) + ": ";
}

LaunchState*& current_launch() {
  thread_local LaunchState* ls = nullptr;
  return ls;
}

const Runtime* runtime() {
  return &kRuntime;
}

void run_launch(const KernelEntry& kernel, const Launch& launch, const LaunchConfig& config) {
  LaunchState ls(kernel, launch, config);
  ls.total_blocks = uint64_t(launch.blocks.x) * launch.blocks.y * launch.blocks.z;
  ls.timeout_s = timeout_seconds();
  if (ls.total_blocks == 0) return;
  const size_t workers = std::min<uint64_t>(cpu::num_threads(), ls.total_blocks);
  if (config.fibers) watchdog_launch_begins();
  cpu::parallel_for(workers, 1, [&](size_t begin, size_t end) {
    LaunchState*& current = current_launch();
    LaunchState* outer = current;
    current = &ls;
    for (size_t i = begin; i < end; ++i) {
      if (config.fibers)
        work_fibers(ls);
      else
        work_plain(ls);
    }
    current = outer;
  });
  if (config.fibers) watchdog_launch_ends();
  if (ls.printed.load()) std::fflush(stdout);
  if (ls.failed.load()) throw std::runtime_error(ls.error);
}

}  // namespace kiln::cpu_rt
