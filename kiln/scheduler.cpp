#include "kiln/scheduler.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "kiln/backend/cpu/eval.h"
#include "kiln/backend/gpu.h"
#include "kiln/primitive.h"

namespace kiln::scheduler {

namespace {

class Executor;
Executor& get_executor(const Stream& s);

// Tasks of one stream with their sequence numbers, in submission order.
using Batch = std::vector<std::pair<uint64_t, Task>>;

class Executor {
 public:
  explicit Executor(Stream s) : stream_(s), is_gpu_(s.device.type == Device::gpu) {}

  // Both called with the global submit lock held, so values follow one global order.
  uint64_t reserve(size_t n) {
    uint64_t first = next_;
    next_ += n;
    return first;
  }
  uint64_t last_reserved() const { return next_ - 1; }

  // The first error a task raised since it was last taken or forgotten.
  std::exception_ptr take_error() {
    std::lock_guard lk(err_mu_);
    return std::exchange(pending_error_, nullptr);
  }
  void forget_error(const std::exception_ptr& err) {
    std::lock_guard lk(err_mu_);
    if (pending_error_ == err) pending_error_ = nullptr;
  }

  void push(Batch&& items) {
    {
      std::lock_guard lk(mu_);
      for (auto& it : items) queue_.push_back(std::move(it));
      queued_.fetch_add(items.size(), std::memory_order_relaxed);
      if (!thread_.joinable()) thread_ = std::thread([this] { worker_loop(); });
    }
    cv_.notify_one();
  }

  // Claims the stream for the calling thread if it is idle (nothing queued or running).
  // Called under the submit lock, so nothing is queued meanwhile; queued_ only falls.
  std::unique_lock<std::mutex> try_claim() {
    std::unique_lock run(run_mu_, std::try_to_lock);
    if (run.owns_lock() && queued_.load(std::memory_order_acquire) != 0) run.unlock();
    return run;
  }

  // Runs tasks on the calling thread, which holds the claim from try_claim().
  void run_claimed(Batch& items) {
    for (auto& [value, task] : items) {
      {
        Task t = std::move(task);  // its arrays are released before the next task runs
        execute(t);
      }
      finish(value, take_publish(value));
    }
    commit_pending();
  }

  // Another stream waits for the work of `value`: commit it as soon as it is launched
  // rather than with the rest of the batch, so that stream can start meanwhile.
  void publish_after(uint64_t value) {
    if (!is_gpu_) return;  // CPU tasks are marked done one by one anyway
    std::lock_guard lk(mu_);
    publish_.insert(value);
  }

  void wait_done(uint64_t value) {
    if (done_.load(std::memory_order_acquire) >= value) return;
    std::unique_lock lk(done_mu_);
    waiters_.fetch_add(1, std::memory_order_seq_cst);  // pairs with mark_done's store and load
    done_cv_.wait(lk, [&] { return done_.load(std::memory_order_seq_cst) >= value; });
    --waiters_;
  }
  bool is_done(uint64_t value) const { return done_.load(std::memory_order_acquire) >= value; }
  bool is_gpu() const { return is_gpu_; }

 private:
  void worker_loop() {
    while (true) {
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return !queue_.empty(); });
      }
      drain();
    }
  }

  void drain() {
    std::lock_guard run(run_mu_);
    while (true) {
      std::optional<std::pair<uint64_t, Task>> item;
      bool publish = false;
      {
        std::lock_guard lk(mu_);
        if (queue_.empty()) break;
        item.emplace(std::move(queue_.front()));
        queue_.pop_front();
        queued_.fetch_sub(1, std::memory_order_release);
        publish = take_publish_locked(item->first);
      }
      execute(item->second);
      uint64_t value = item->first;
      item.reset();  // release the task's arrays before the next one runs
      finish(value, publish);
    }
    commit_pending();
  }

  // Whether `value` was asked for by publish_after; forgets requests up to it (values
  // run in increasing order, so older requests were for work already committed).
  bool take_publish_locked(uint64_t value) {
    if (publish_.empty()) return false;
    auto end = publish_.upper_bound(value);
    bool found = end != publish_.begin() && *std::prev(end) == value;
    publish_.erase(publish_.begin(), end);
    return found;
  }
  bool take_publish(uint64_t value) {
    if (!is_gpu_) return false;
    std::lock_guard lk(mu_);
    return take_publish_locked(value);
  }

  // After a task ran: CPU work is done; GPU work is only launched and becomes visible to
  // waiters when committed (an event recorded), which happens in batches unless another
  // stream waits for it.
  void finish(uint64_t value, bool publish) {
    if (!is_gpu_) return mark_done(value);
    executed_ = value;
    if (publish) commit_pending();
  }

  // Commits the GPU work launched since the last commit (caller holds run_mu_).
  void commit_pending() {
    if (!is_gpu_ || executed_ <= committed_) return;
    gpu::commit(stream_, executed_);
    committed_ = executed_;
    mark_done(executed_);
  }

  void execute(Task& task) {
    array& arr = task.arr;
    // Publish launched GPU work before blocking on another stream, which may itself be
    // waiting for it (streams that wait on each other in one graph).
    if (!task.deps.empty()) commit_pending();
    try {
      for (auto& e : task.deps) {
        if (is_gpu_ && e.stream().device.type == Device::gpu) {
          // GPU to GPU: make the stream wait on the device, not the host.
          get_executor(e.stream()).wait_done(e.value());
          gpu::wait_on_stream(stream_, e.stream(), e.value());
        } else {
          e.wait();
        }
      }
      for (auto& in : arr.inputs()) {
        if (auto err = in.error()) {
          for (auto& out : arr.outputs()) out.set_error(err);  // not this task's own error
          if (!arr.is_tracer()) arr.detach();
          return;
        }
      }
      // A traced graph is differentiated later: holding its inputs here keeps their
      // buffers from being donated to the output (the vjp still reads them).
      std::vector<array> held;
      if (arr.is_tracer()) held = arr.inputs();
      if (is_gpu_)
        gpu::eval(arr);
      else
        cpu::eval(arr);
    } catch (...) {
      auto err = std::current_exception();
      for (auto& out : arr.outputs()) out.set_error(err);
      // Kept for synchronize(), which raises it once (MLX's async error semantics).
      std::lock_guard lk(err_mu_);
      if (!pending_error_) pending_error_ = err;
    }
    if (!arr.is_tracer()) arr.detach();
  }

  void mark_done(uint64_t value) {
    // Sequentially consistent: this store and the load of waiters_ must not reorder (a
    // store-load pair, which release/acquire allows), or a waiter that has just registered
    // can miss both the new value and the notification and sleep forever.
    done_.store(value, std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard lk(done_mu_);
      done_cv_.notify_all();
    }
  }

  Stream stream_;
  bool is_gpu_;
  uint64_t next_ = 1;
  uint64_t executed_ = 0, committed_ = 0;  // GPU only; guarded by run_mu_

  std::mutex mu_;  // guards queue_ and thread_ start
  std::condition_variable cv_;
  std::deque<std::pair<uint64_t, Task>> queue_;
  std::set<uint64_t> publish_;     // values other streams wait for (GPU only)
  std::atomic<size_t> queued_{0};  // queue_.size(), readable without mu_
  std::thread thread_;

  std::mutex run_mu_;  // held by whichever thread executes this stream's tasks

  std::mutex err_mu_;
  std::exception_ptr pending_error_;  // guarded by err_mu_

  std::atomic<uint64_t> done_{0};
  std::atomic<int> waiters_{0};
  std::mutex done_mu_;
  std::condition_variable done_cv_;
};

constexpr int kMaxStreams = 1024;

// Executors live for the whole process (never destroyed) so that worker threads never
// race with static destruction at exit.
std::array<std::atomic<Executor*>, kMaxStreams>& executors() {
  static auto* e = new std::array<std::atomic<Executor*>, kMaxStreams>{};
  return *e;
}

std::mutex& submit_mutex() {
  static auto* m = new std::mutex;
  return *m;
}

Executor& get_executor(const Stream& s) {
  if (s.index == -1 && s.device.type == Device::gpu) {
    // The placeholder of a GPU kernel exported without a GPU (kiln/fast.cpp).
    throw std::invalid_argument(
        "[eval] A kernel recorded for the GPU while exporting on a machine without one can be "
        "exported, not evaluated.");
  }
  if (s.index < 0 || s.index >= kMaxStreams) {
    throw std::invalid_argument("[scheduler] Invalid stream index " + std::to_string(s.index) +
                                ".");
  }
  Executor* e = executors()[s.index].load(std::memory_order_acquire);
  if (!e) {
    throw std::invalid_argument("[scheduler] Stream " + std::to_string(s.index) +
                                " does not exist.");
  }
  return *e;
}

}  // namespace

void add_stream(const Stream& s) {
  if (s.index < 0 || s.index >= kMaxStreams) {
    throw std::invalid_argument("[new_stream] At most " + std::to_string(kMaxStreams) +
                                " streams are supported.");
  }
  auto& slot = executors()[s.index];
  if (!slot.load()) slot.store(new Executor(s), std::memory_order_release);
}

void submit(std::vector<Task>&& tasks, bool run_inline) {
  if (tasks.empty()) return;
  // Grouped by stream, keeping topological order within each stream. Almost every graph
  // is on one stream: that group lives in `first` and `others` stays unallocated.
  Executor* first_ex = nullptr;
  Batch first;
  std::vector<std::pair<Executor*, Batch>> others;
  auto group_of = [&](Executor* e) -> Batch& {
    if (!first_ex || first_ex == e) {
      first_ex = e;
      return first;
    }
    for (auto& g : others)
      if (g.first == e) return g.second;
    return others.emplace_back(e, Batch{}).second;
  };
  first.reserve(tasks.size());

  std::unique_lock lk(submit_mutex());
  for (auto& t : tasks) {
    const Stream& s = t.arr.primitive().stream();
    Executor& ex = get_executor(s);
    uint64_t value = ex.reserve(1);
    Event ev(s, value);
    for (auto& in : t.arr.inputs()) {
      if (in.status() == array::Status::scheduled && in.event().stream().index != s.index) {
        t.deps.push_back(in.event());
        get_executor(in.event().stream()).publish_after(in.event().value());
      }
    }
    if (t.arr.is_multi_output()) {
      for (auto& out : t.arr.outputs()) {
        out.set_event(ev);
        out.set_status(array::Status::scheduled);
      }
    } else {
      t.arr.set_event(ev);
      t.arr.set_status(array::Status::scheduled);
    }
    group_of(&ex).emplace_back(value, std::move(t));
  }
  tasks.clear();
  // A blocking eval on one idle stream runs on this thread: no hand-off latency. The
  // claim is taken under the submit lock, so later submissions queue behind these tasks.
  if (run_inline && others.empty()) {
    if (auto claim = first_ex->try_claim(); claim.owns_lock()) {
      lk.unlock();
      first_ex->run_claimed(first);
      return;
    }
  }
  first_ex->push(std::move(first));
  for (auto& [ex, items] : others) ex->push(std::move(items));
}

void wait(const Stream& stream, uint64_t value) {
  auto& ex = get_executor(stream);
  ex.wait_done(value);
  if (ex.is_gpu()) gpu::wait(stream, value);
}

bool is_done(const Stream& stream, uint64_t value) {
  auto& ex = get_executor(stream);
  if (!ex.is_done(value)) return false;
  return !ex.is_gpu() || gpu::is_done(stream, value);
}

std::exception_ptr take_error(const Stream& stream) {
  return get_executor(stream).take_error();
}

void forget_error(const std::exception_ptr& err) {
  if (!err) return;
  for (auto& slot : executors()) {
    if (Executor* e = slot.load(std::memory_order_acquire)) e->forget_error(err);
  }
}

uint64_t last_value(const Stream& stream) {
  std::lock_guard lk(submit_mutex());
  return get_executor(stream).last_reserved();
}

}  // namespace kiln::scheduler
