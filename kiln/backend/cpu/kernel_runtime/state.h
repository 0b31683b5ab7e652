// Internal state of the CPU kernel runtime: one launch, the OS threads running its blocks,
// and the scheduler of a block's fibers.
#pragma once

#include <pthread.h>
#include <setjmp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/backend/cpu/kernel_runtime/fiber.h"
#include "kiln/backend/cpu/kernel_runtime/launch.h"

namespace kiln::cpu_rt {

/** "(x, y, z)", for messages. */
std::string dim_str(const Dim3& d);

/** One launch in flight. */
struct LaunchState {
  const KernelEntry& kernel;
  const Launch& launch;
  const LaunchConfig& config;
  uint64_t total_blocks = 0;
  double timeout_s = 20;
  std::atomic<uint64_t> next_block{0};
  std::atomic<bool> failed{false};
  std::atomic<bool> printed{false};
  std::mutex mu;
  std::string error;  // the first failure

  LaunchState(const KernelEntry& k, const Launch& l, const LaunchConfig& c)
      : kernel(k), launch(l), config(c) {}
  /** Records a failure (the first one is reported) and stops the launch. */
  void fail(const std::string& message);
  /** "[cuda_kernel] Kernel 'name', block (1, 0, 0), thread (3, 0, 0): " */
  std::string where(const Thread& t) const;
};

/** What the watchdog needs to know about an OS thread running fiber blocks. */
struct Worker {
  pthread_t thread = pthread_self();
  std::atomic<LaunchState*> launch{nullptr};
  std::atomic<uint64_t> progress{0};  // barrier releases, warp completions, exits
  std::atomic<bool> in_fiber{false};  // a fiber runs (user code, or runtime code that
                                      // may be abandoned)
  std::atomic<const Thread*> running{nullptr};
  // Threads in the block it runs: the watchdog reads this, not running->block_dim, which
  // the next block rewrites (and a larger block reallocates) while the watchdog looks.
  std::atomic<uint32_t> block_threads{0};
  std::atomic<int> waiting{0};     // threads of the block parked at a barrier/warp op
  sigjmp_buf escape;               // where a stuck fiber is abandoned to
  void* escape_context = nullptr;  // ThreadSanitizer's context there (Fiber::sanitizer_context)
  std::atomic<bool> escape_armed{false};
  // Watchdog's own bookkeeping.
  const LaunchState* seen_launch = nullptr;
  uint64_t seen_progress = 0;
  std::chrono::steady_clock::time_point since;
  bool signalled = false;
};

/** The Worker of the calling OS thread (registered with the watchdog on first use). */
Worker& this_worker();
/** The launch the calling OS thread works on (for Runtime::fail). */
LaunchState*& current_launch();

/** Watchdog: call around every launch that runs fibers. */
void watchdog_launch_begins();
void watchdog_launch_ends();

/** Runs the blocks of a fiber-mode launch on one OS thread. The scheduler runs on the fibers
 * themselves: a thread that stops (barrier, warp operation, yield, end) picks the next one
 * and switches to it directly; only a finished, failed or stalled block goes back to run().
 * Hidden: calls between its functions on the hot path stay direct (no PLT). */
class __attribute__((visibility("hidden"))) BlockRunner {
 public:
  explicit BlockRunner(LaunchState& ls);
  ~BlockRunner();
  /** Runs every thread of block `b` to its end; returns early when the launch fails. */
  void run(uint64_t b);
  /** Gives up the block in progress (after an escape from a stuck fiber, or a failure):
   * its unfinished fibers are abandoned, never resumed. */
  void abandon();

  // Runtime entry points (Runtime table), called on a fiber.
  static int barrier(Thread* t, const char* file, int line, int predicate);
  static WarpResult* warp_exchange(Thread* t, const char* file, int line, uint32_t mask,
                                   const void* value, uint32_t bytes);
  static void yield(Thread* t);

 private:
  enum class State : uint8_t { ready, yielded, barrier, warp, done };
  struct Slot {
    Thread t;
    BlockRunner* runner;
    Fiber* fiber = nullptr;
    State state = State::done;
    const char* file = nullptr;  // barrier or warp call site
    int line = 0;
    int predicate = 0;
    uint32_t mask = 0;
    int count = 0;  // result of a barrier: threads with a non-zero predicate
  };
  struct Site {
    const char* file;
    int line;
    uint32_t mask;
    uint32_t completions;
  };
  struct Warp {
    alignas(64) unsigned char in[kWarpSize][kWarpSlotBytes];
    WarpResult out;
    std::vector<Site> sites;
  };
  static constexpr uint32_t kNone = ~0u;

  static void thread_main(void* slot);
  /** On the fiber of `s`, whose state says why it stops: runs the next thread (or goes back
   * to run()) and returns when `s` may go on. A finished thread's call returns only when its
   * fiber gets new work: it must touch nothing of this block afterwards. */
  void park(Slot& s);
  /** The next thread to run, once the ready ones have run releasing the parked ones that may
   * go on; kNone when the block has finished, failed or stalled. */
  uint32_t next_thread() {
    return pos_ < ready_.size() && !ls_.failed.load(std::memory_order_relaxed) ? ready_[pos_++]
                                                                               : next_round();
  }
  /** next_thread() at the end of a round: releases the threads that may go on. */
  uint32_t next_round();
  /** Marks `s` as running (for the watchdog), just before switching to it. */
  void enter(Slot& s) {
    s.state = State::ready;
    worker_.running.store(&s.t, std::memory_order_relaxed);
    worker_.in_fiber.store(true, std::memory_order_release);
  }
  bool resolve_warps();
  bool resolve_barrier();
  std::string site_str(const Slot& s) const;

  LaunchState& ls_;
  Worker& worker_;
  uint32_t n_ = 0;  // threads in the current block
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<Warp>> warps_;
  std::vector<uint32_t> ready_;  // this round's threads; ready_[pos_] runs next
  size_t pos_ = 0;
  std::vector<uint32_t> next_;  // threads that yielded: the next round's
  std::unique_ptr<unsigned char[]> dynamic_shared_;
};

}  // namespace kiln::cpu_rt
