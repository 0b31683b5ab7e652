// The scheduler of one block's fibers.
//
// Threads run in order of their index until each has finished or parked: at a barrier, at a
// warp operation, or after a voluntary yield (atomics in spin loops). Then the parked
// threads are released, as the GPU would release them, and run again in order of index:
// - A warp operation completes for the lanes of a warp that wait at the same call (same
//   site and mask) once every other lane of that warp has finished or parked at a barrier
//   or another warp operation: lanes that returned early, or that took another branch, are
//   not waited for (Metal's active lanes, CUDA's independent thread scheduling). When lanes
//   wait at different calls, the call completed fewer times in this warp goes first (then
//   the earlier line): the lanes of a divergent branch finish their branch before the
//   others move on, as after the GPU's reconvergence.
// - A barrier completes once every thread that has not finished waits at one. In checking
//   mode, a thread that finished, or threads at different barriers, make it an error.
// A thread that parks runs this scheduler itself (park) and switches straight to the next
// thread's fiber: one context switch per hand-over.
#include <algorithm>
#include <cstring>

#include "kiln/backend/cpu/kernel_runtime/state.h"

namespace kiln::cpu_rt {

namespace {

// Large enough for deep helper calls and printf's formatting; pages are touched lazily.
constexpr size_t kFiberStackBytes = 256 << 10;

// Each OS thread keeps its fibers for the blocks it runs (null: to be created).
std::vector<std::unique_ptr<Fiber>>& fiber_pool() {
  thread_local std::vector<std::unique_ptr<Fiber>> pool;
  return pool;
}

bool same_file(const char* a, const char* b) {
  return a == b || (a && b && std::strcmp(a, b) == 0);
}

// Counters only this OS thread writes (the watchdog reads them): no locked instruction.
void bump(std::atomic<uint64_t>& c) {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
void add(std::atomic<int>& c, int d) {
  c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}

}  // namespace

BlockRunner::BlockRunner(LaunchState& ls) : ls_(ls), worker_(this_worker()) {
  const Dim3 tg = ls.launch.threadgroup;
  const uint32_t max_threads = tg.x * tg.y * tg.z;
  slots_.resize(max_threads);
  for (auto& s : slots_) s.runner = this;
  warps_.resize((max_threads + kWarpSize - 1) / kWarpSize);
  for (auto& w : warps_) w = std::make_unique<Warp>();
  ready_.reserve(max_threads);
  next_.reserve(max_threads);
  // operator new[] aligns to 16 bytes, as CUDA's dynamic shared memory.
  if (ls.launch.dynamic_shared) dynamic_shared_.reset(new unsigned char[ls.launch.dynamic_shared]);
  auto& pool = fiber_pool();
  if (pool.size() < max_threads) pool.resize(max_threads);
  for (uint32_t i = 0; i < max_threads; ++i) {
    if (!pool[i]) pool[i] = std::make_unique<Fiber>(kFiberStackBytes);
  }
}

BlockRunner::~BlockRunner() = default;

void BlockRunner::run(uint64_t b) {
  const Launch& L = ls_.launch;
  const Dim3 nb = L.blocks, tg = L.threadgroup;
  Dim3 bid{static_cast<uint32_t>(b % nb.x), static_cast<uint32_t>(b / nb.x % nb.y),
           static_cast<uint32_t>(b / (uint64_t(nb.x) * nb.y))};
  // Metal dispatch: an edge threadgroup holds only the threads inside the grid.
  Dim3 bdim = tg;
  if (L.metal_dispatch) {
    bdim.x = std::min(tg.x, L.grid.x - bid.x * tg.x);
    bdim.y = std::min(tg.y, L.grid.y - bid.y * tg.y);
    bdim.z = std::min(tg.z, L.grid.z - bid.z * tg.z);
  }
  n_ = bdim.x * bdim.y * bdim.z;
  worker_.block_threads.store(n_, std::memory_order_relaxed);
  auto& pool = fiber_pool();
  ready_.clear();
  next_.clear();
  pos_ = 0;
  for (uint32_t i = 0; i < n_; ++i) {
    Slot& s = slots_[i];
    s.t.thread_idx = {i % bdim.x, i / bdim.x % bdim.y, i / (bdim.x * bdim.y)};
    s.t.block_idx = bid;
    s.t.block_dim = bdim;
    s.t.grid_dim = nb;
    s.t.linear = i;
    s.t.spins = 0;
    s.t.fiber = &s;
    s.t.dynamic_shared = dynamic_shared_.get();
    s.t.rt = L.rt;
    s.t.launch = &L;
    if (!pool[i]) pool[i] = std::make_unique<Fiber>(kFiberStackBytes);
    s.fiber = pool[i].get();
    s.fiber->assign(&BlockRunner::thread_main, &s);
    s.state = State::ready;
    ready_.push_back(i);
  }
  for (auto& w : warps_) w->sites.clear();

  // The threads run until the block has finished, failed or stalled.
  if (const uint32_t first = next_thread(); first != kNone) {
    enter(slots_[first]);
    slots_[first].fiber->resume();
    worker_.in_fiber.store(false, std::memory_order_release);
  }
  if (ls_.failed.load(std::memory_order_relaxed)) {
    abandon();
    return;
  }
  for (uint32_t i = 0; i < n_; ++i) {
    if (slots_[i].state != State::done) {
      ls_.fail(ls_.where(slots_[i].t) + "internal error: the block scheduler stalled.");
      abandon();
      return;
    }
  }
}

void BlockRunner::park(Slot& s) {
  // Runtime code from here on: the watchdog must not abandon it halfway.
  worker_.in_fiber.store(false, std::memory_order_release);
  const uint32_t i = s.t.linear;
  if (s.state == State::done) {
    bump(worker_.progress);
  } else if (s.state == State::yielded) {
    next_.push_back(i);
  } else {
    add(worker_.waiting, 1);
  }
  const uint32_t n = next_thread();
  if (n == i) {  // its own turn again at once (say, the only thread left that yields)
    enter(s);
  } else if (n == kNone) {
    s.fiber->suspend();  // back to run()
  } else {
    Slot& next = slots_[n];
    enter(next);
    s.fiber->switch_to(*next.fiber);
  }
}

uint32_t BlockRunner::next_round() {
  while (!ls_.failed.load(std::memory_order_relaxed)) {
    if (pos_ < ready_.size()) return ready_[pos_++];
    ready_.swap(next_);  // threads that yielded run again next round
    next_.clear();
    pos_ = 0;
    bool released = resolve_warps();
    if (!released && ready_.empty()) released = resolve_barrier();
    if (!released && ready_.empty()) break;
  }
  return kNone;
}

void BlockRunner::thread_main(void* p) {
  Slot& s = *static_cast<Slot*>(p);
  LaunchState& ls = s.runner->ls_;
  try {
    ls.kernel.run_thread(&ls.launch, &s.t);
  } catch (const std::exception& e) {
    ls.fail(e.what());
  } catch (...) {
    ls.fail(ls.where(s.t) + "the kernel threw an unknown exception.");
  }
  s.state = State::done;
  s.runner->park(s);
}

int BlockRunner::barrier(Thread* t, const char* file, int line, int predicate) {
  auto* s = static_cast<Slot*>(t->fiber);
  if (!s) {
    t->rt->fail(t,
                "a barrier was reached in a kernel run without fibers; kiln found no "
                "barrier in its source (is it hidden behind a macro?).");
  }
  s->state = State::barrier;
  s->file = file;
  s->line = line;
  s->predicate = predicate;
  s->runner->park(*s);
  return s->count;
}

WarpResult* BlockRunner::warp_exchange(Thread* t, const char* file, int line, uint32_t mask,
                                       const void* value, uint32_t bytes) {
  auto* s = static_cast<Slot*>(t->fiber);
  if (!s) {
    t->rt->fail(t,
                "a warp operation was reached in a kernel run without fibers; kiln found "
                "none in its source (is it hidden behind a macro?).");
  }
  if (bytes > kWarpSlotBytes) t->rt->fail(t, "a warp operation on a value over 64 bytes.");
  Warp& w = *s->runner->warps_[t->linear / kWarpSize];
  unsigned char* in = w.in[t->linear % kWarpSize];
  if (bytes == 4) {  // the common sizes without a call
    std::memcpy(in, value, 4);
  } else if (bytes == 8) {
    std::memcpy(in, value, 8);
  } else {
    std::memcpy(in, value, bytes);
  }
  s->state = State::warp;
  s->file = file;
  s->line = line;
  s->mask = mask;
  s->runner->park(*s);
  return &w.out;
}

void BlockRunner::yield(Thread* t) {
  t->spins = 0;
  auto* s = static_cast<Slot*>(t->fiber);
  if (!s) return;  // the block loop: no other thread to let through
  s->state = State::yielded;
  s->runner->park(*s);
}

bool BlockRunner::resolve_warps() {
  bool released = false;
  const uint32_t n_warps = (n_ + kWarpSize - 1) / kWarpSize;
  for (uint32_t wi = 0; wi < n_warps; ++wi) {
    const uint32_t first = wi * kWarpSize, end = std::min(n_, first + kWarpSize);
    // Lanes still running or yielded may yet join a warp operation: wait for them.
    int leader = -1;
    bool busy = false;
    Warp& w = *warps_[wi];
    uint32_t best_completions = 0;
    for (uint32_t i = first; i < end && !busy; ++i) {
      const Slot& s = slots_[i];
      if (s.state == State::ready || s.state == State::yielded) busy = true;
      if (s.state != State::warp) continue;
      uint32_t done_here = 0;
      for (const Site& site : w.sites) {
        if (site.line == s.line && site.mask == s.mask && same_file(site.file, s.file)) {
          done_here = site.completions;
        }
      }
      if (leader < 0) {
        leader = static_cast<int>(i), best_completions = done_here;
        continue;
      }
      const Slot& l = slots_[leader];
      bool same_group = l.line == s.line && l.mask == s.mask && same_file(l.file, s.file);
      if (!same_group &&
          (done_here < best_completions ||
           (done_here == best_completions && same_file(l.file, s.file) && s.line < l.line))) {
        leader = static_cast<int>(i), best_completions = done_here;
      }
    }
    if (busy || leader < 0) continue;
    // CUDA's collectives name their lanes (an explicit mask): one completes only when every
    // lane of its mask that has not finished waits at it, as the GPU requires; lanes parked
    // at another call of the warp are on their way. Metal's (mask 0: the lanes that arrive)
    // complete without the lanes of other branches. When no named group is complete the
    // choice above stands (a kernel whose lanes wait at different calls with full masks).
    auto complete = [&](const Slot& l) {
      if (l.mask == 0) return true;
      for (uint32_t i = first; i < end; ++i) {
        const Slot& s = slots_[i];
        if (!((l.mask >> (i - first)) & 1u) || s.state == State::done) continue;
        if (s.state != State::warp || s.line != l.line || s.mask != l.mask ||
            !same_file(s.file, l.file))
          return false;
      }
      return true;
    };
    if (!complete(slots_[leader])) {
      int alternative = -1;
      uint32_t alt_completions = 0;
      for (uint32_t i = first; i < end; ++i) {
        const Slot& s = slots_[i];
        if (s.state != State::warp || !complete(s)) continue;
        uint32_t done_here = 0;
        for (const Site& site : w.sites) {
          if (site.line == s.line && site.mask == s.mask && same_file(site.file, s.file)) {
            done_here = site.completions;
          }
        }
        if (alternative < 0 || done_here < alt_completions) {
          alternative = static_cast<int>(i), alt_completions = done_here;
        }
      }
      if (alternative >= 0) leader = alternative;
    }
    const Slot& l = slots_[leader];
    uint32_t lanes = 0;
    for (uint32_t i = first; i < end; ++i) {
      const Slot& s = slots_[i];
      if (s.state == State::warp && s.line == l.line && s.mask == l.mask &&
          same_file(s.file, l.file)) {
        lanes |= 1u << (i - first);
      }
    }
    // Results are read from `out`, so lanes may publish their next value into `in` at once.
    for (uint32_t lane = 0; lane < kWarpSize; ++lane) {
      if (lanes >> lane & 1) std::memcpy(w.out.values[lane], w.in[lane], kWarpSlotBytes);
    }
    w.out.lanes = lanes;
    w.out.cache_tag = nullptr;
    bool known = false;
    for (Site& site : w.sites) {
      if (site.line == l.line && site.mask == l.mask && same_file(site.file, l.file)) {
        ++site.completions, known = true;
      }
    }
    if (!known) w.sites.push_back({l.file, l.line, l.mask, 1});
    for (uint32_t i = first; i < end; ++i) {
      if (lanes >> (i - first) & 1) {
        slots_[i].state = State::ready;
        ready_.push_back(i);
      }
    }
    add(worker_.waiting, -__builtin_popcount(lanes));
    released = true;
  }
  if (released) {
    bump(worker_.progress);
    // Yielded threads, then released lanes warp by warp: in order but for a mix of both.
    if (!std::is_sorted(ready_.begin(), ready_.end())) std::sort(ready_.begin(), ready_.end());
  }
  return released;
}

bool BlockRunner::resolve_barrier() {
  int first_waiting = -1, first_done = -1, count = 0, waiting = 0;
  for (uint32_t i = 0; i < n_; ++i) {
    const Slot& s = slots_[i];
    if (s.state == State::done) {
      if (first_done < 0) first_done = static_cast<int>(i);
      continue;
    }
    if (s.state != State::barrier) return false;  // a warp operation still waits
    if (first_waiting < 0) first_waiting = static_cast<int>(i);
    ++waiting;
    count += s.predicate != 0;
  }
  if (first_waiting < 0) return false;  // all done
  const Slot& w = slots_[first_waiting];
  if (ls_.config.check) {
    if (first_done >= 0) {
      const Slot& d = slots_[first_done];
      ls_.fail(ls_.where(w.t) + "divergent barrier: " + std::to_string(waiting) +
               " thread(s) of the block wait at the barrier at " + site_str(w) + ", but thread " +
               dim_str(d.t.thread_idx) +
               " returned without reaching it. Every thread of a block must reach every "
               "barrier (on a GPU this hangs or corrupts shared memory).");
      return false;
    }
    for (uint32_t i = 0; i < n_; ++i) {
      const Slot& s = slots_[i];
      if (s.line != w.line || !same_file(s.file, w.file)) {
        ls_.fail(ls_.where(w.t) + "divergent barrier: this thread waits at the barrier at " +
                 site_str(w) + ", but thread " + dim_str(s.t.thread_idx) +
                 " waits at the barrier at " + site_str(s) +
                 ". Every thread of a block must reach the same barriers in the same order.");
        return false;
      }
    }
  }
  for (uint32_t i = 0; i < n_; ++i) {
    Slot& s = slots_[i];
    if (s.state != State::barrier) continue;
    s.count = count;
    s.state = State::ready;
    ready_.push_back(i);
  }
  add(worker_.waiting, -waiting);
  bump(worker_.progress);
  return true;
}

std::string BlockRunner::site_str(const Slot& s) const {
  return std::string(s.file ? s.file : "?") + ":" + std::to_string(s.line);
}

void BlockRunner::abandon() {
  auto& pool = fiber_pool();
  for (uint32_t i = 0; i < n_; ++i) {
    Slot& s = slots_[i];
    if (s.fiber && s.state != State::done) {
      // Its stack holds the frames of a thread that will never continue.
      for (auto& f : pool) {
        if (f.get() == s.fiber) Fiber::abandon(std::move(f));
      }
      s.fiber = nullptr;
    }
    s.state = State::done;
  }
  worker_.waiting.store(0, std::memory_order_relaxed);
  n_ = 0;
}

}  // namespace kiln::cpu_rt
