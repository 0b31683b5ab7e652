#include "kiln/backend/cpu/threading.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kiln::cpu {

namespace {

struct Job {
  const std::function<void(size_t, size_t)>* f;
  size_t n, chunks;
  std::atomic<size_t> next{0};
  std::atomic<size_t> remaining;
  std::mutex mu;
  std::condition_variable done;
  std::exception_ptr error;

  // Runs chunks until none are left; returns once this thread has nothing more to take.
  void work() {
    size_t c;
    while ((c = next.fetch_add(1)) < chunks) {
      size_t begin = n * c / chunks, end = n * (c + 1) / chunks;
      try {
        (*f)(begin, end);
      } catch (...) {
        std::lock_guard lk(mu);
        if (!error) error = std::current_exception();
      }
      if (remaining.fetch_sub(1) == 1) {
        std::lock_guard lk(mu);
        done.notify_all();
      }
    }
  }
};

class Pool {
 public:
  explicit Pool(int threads) : threads_(threads) {
    for (int i = 1; i < threads_; ++i) {
      std::thread([this] { loop(); }).detach();  // the pool lives for the whole process
    }
  }
  int threads() const { return threads_; }

  void run(const std::shared_ptr<Job>& job) {
    {
      std::lock_guard lk(mu_);
      jobs_.push_back(job);
    }
    cv_.notify_all();
    job->work();
    std::unique_lock lk(job->mu);
    job->done.wait(lk, [&] { return job->remaining.load() == 0; });
  }

 private:
  void loop() {
    while (true) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return !jobs_.empty(); });
        job = jobs_.front();
        // A job whose chunks are all claimed leaves the queue.
        if (job->next.load() >= job->chunks) {
          jobs_.pop_front();
          continue;
        }
      }
      job->work();
    }
  }

  int threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
};

int configured_threads() {
  if (const char* env = std::getenv("KILN_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

Pool& pool() {
  static auto* p = new Pool(configured_threads());
  return *p;
}

}  // namespace

int num_threads() { return pool().threads(); }

void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& f) {
  grain = std::max<size_t>(grain, 1);
  size_t chunks = std::min<size_t>(num_threads(), n / grain);
  if (chunks <= 1) {
    if (n > 0) f(0, n);
    return;
  }
  auto job = std::make_shared<Job>();
  job->f = &f;
  job->n = n;
  job->chunks = chunks;
  job->remaining = chunks;
  pool().run(job);
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace kiln::cpu
