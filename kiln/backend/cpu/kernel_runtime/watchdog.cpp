// The watchdog of fiber-mode launches: turns a block that stopped making progress (a GPU
// deadlock at a barrier) into an error instead of a hung process.
//
// Threads of a block are cooperative fibers, so a thread that loops forever waiting for
// another one (that sits at a barrier, or has not run yet) never gives the CPU back. Every
// OS thread running fiber blocks counts its progress (barrier releases, warp operations
// completed, threads finished); when it stays still for KILN_KERNEL_TIMEOUT seconds while a
// fiber runs, the watchdog fails the launch and sends that OS thread a signal whose handler
// jumps out of the stuck fiber, back to the block loop (launch.cpp), which abandons the
// block. This file is compiled without _FORTIFY_SOURCE's longjmp check, which refuses jumps
// between stacks.
#undef _FORTIFY_SOURCE
#include <signal.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "kiln/backend/cpu/kernel_runtime/state.h"

namespace kiln::cpu_rt {

namespace {

using Clock = std::chrono::steady_clock;

struct Registry {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Worker*> workers;
  int active = 0;  // fiber launches in flight
  bool started = false;
};

Registry& registry() {
  static auto* r = new Registry;  // used by thread exits until the end
  return *r;
}

thread_local Worker* tls_worker = nullptr;

#if defined(__SANITIZE_THREAD__)
#define KILN_TSAN_SIGNALS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KILN_TSAN_SIGNALS 1
#endif
#endif

int abort_signal() {
#if KILN_TSAN_SIGNALS
  // ThreadSanitizer defers an asynchronous signal until the thread enters one of its
  // interceptors, which a kernel spinning in a loop never does (the launch hung); it runs the
  // handler of a synchronous one (SIGSYS among them) at once.
  return SIGSYS;
#else
  return SIGRTMAX - 7;
#endif
}

void on_abort_signal(int) {
  Worker* w = tls_worker;
  if (w && w->escape_armed.load() && w->in_fiber.load()) {
    w->in_fiber.store(false);
    Fiber::sanitizer_jump_to(w->escape_context);
    siglongjmp(w->escape, 1);
  }
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa = {};
    sa.sa_handler = &on_abort_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(abort_signal(), &sa, nullptr);
  });
}

std::string deadlock_message(const LaunchState& ls, const Worker& w, double seconds) {
  const Thread* t = w.running.load();
  Thread copy = t ? *t : Thread{};
  const uint32_t threads = copy.block_dim.x * copy.block_dim.y * copy.block_dim.z;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.0f", seconds);
  return ls.where(copy) + "no progress for " + secs +
         " s: this thread has run without reaching a barrier or warp operation while the " +
         std::to_string(threads > 0 ? threads - 1 : 0) + " other thread(s) of its block wait (" +
         std::to_string(w.waiting.load()) +
         " at a barrier or warp operation). The kernel is deadlocked, e.g. a thread loops "
         "waiting for a value that another thread writes after a barrier (on a GPU it hangs). "
         "On the CPU the threads of a block take turns at barriers, warp operations and "
         "atomics. KILN_KERNEL_TIMEOUT sets this limit in seconds.";
}

void watchdog_loop() {
  Registry& r = registry();
  std::unique_lock lk(r.mu);
  while (true) {
    r.cv.wait(lk, [&] { return r.active > 0; });
    r.cv.wait_for(lk, std::chrono::milliseconds(100));
    const auto now = Clock::now();
    for (Worker* w : r.workers) {
      LaunchState* ls = w->launch.load();
      const uint64_t p = w->progress.load();
      if (!ls || ls != w->seen_launch || p != w->seen_progress) {
        w->seen_launch = ls;
        w->seen_progress = p;
        w->since = now;
        w->signalled = false;
        continue;
      }
      // Not through running->block_dim: the worker rewrites that Thread for its next block
      // (ThreadSanitizer: data race with BlockRunner::run).
      const bool alone = !w->running.load() || w->block_threads.load() <= 1;
      if (!w->in_fiber.load() || w->signalled || alone) continue;
      const double stuck = std::chrono::duration<double>(now - w->since).count();
      const bool failed = ls->failed.load();
      // Once the launch has failed, its other stuck fibers need not wait for the timeout.
      if (stuck < (failed ? 0.2 : ls->timeout_s)) continue;
      if (!failed) {
        std::string message = deadlock_message(*ls, *w, stuck);
        std::fprintf(stderr, "[kiln] %s Stopping the kernel.\n", message.c_str());
        ls->fail(message);
      }
      install_handler();
      w->signalled = true;
      pthread_kill(w->thread, abort_signal());
    }
  }
}

}  // namespace

Worker& this_worker() {
  struct Holder {
    Worker w;
    Holder() {
      tls_worker = &w;
      Registry& r = registry();
      std::lock_guard lk(r.mu);
      r.workers.push_back(&w);
    }
    ~Holder() {
      Registry& r = registry();
      std::lock_guard lk(r.mu);
      r.workers.erase(std::find(r.workers.begin(), r.workers.end(), &w));
      tls_worker = nullptr;
    }
  };
  thread_local Holder holder;
  return holder.w;
}

void watchdog_launch_begins() {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  ++r.active;
  if (!r.started) {
    r.started = true;
    std::thread(watchdog_loop).detach();  // lives as long as the process
  }
  r.cv.notify_all();
}

void watchdog_launch_ends() {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  --r.active;
}

}  // namespace kiln::cpu_rt
