// Fibers for CPU custom kernels: each GPU thread of a block that uses barriers or warp
// operations runs on its own fiber and switches out at those points.
//
// The context switch comes from Boost.Context (KILN_HAVE_BOOST_CONTEXT, when its compiled
// library was found at configure time), else from glibc's ucontext, which is slower (each
// switch is a system call) but needs nothing. A fiber is long-lived: it runs one thread
// after another (assign, then resume until done), so a block costs no fiber creation.
#pragma once

#include <cstddef>
#include <memory>

namespace kiln::cpu_rt {

class Fiber {
 public:
  using Fn = void (*)(void* arg);

  /** A fiber with its own stack of `stack_bytes` (plus a guard page below it). */
  explicit Fiber(size_t stack_bytes);
  /** Ends the fiber; it must be idle (its last assignment done). */
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  /** Gives the idle fiber its next work: the next resume() calls fn(arg). `fn` must not
   * throw. */
  void assign(Fn fn, void* arg);
  /** Runs the fiber until it yields or its work returns. Called from outside any fiber. */
  void resume();
  /** Called on the fiber: switches back to the resume() that started this run. */
  void yield();
  /** Whether the last assigned work has returned. */
  bool done() const { return done_; }
  /** Forgets a fiber that was left in the middle of its work (the launch was abandoned by a
   * jump out of it): nothing on its stack runs again and the stack is released. */
  static void abandon(std::unique_ptr<Fiber> fiber);

  /** The switching library in use, for messages and benchmarks: "boost.context" or
   * "ucontext". */
  static const char* implementation();

 private:
  struct Impl;
  static void loop(Fiber* self);

  Impl* impl_ = nullptr;
  void* stack_ = nullptr;  // the whole mapping, guard page included
  size_t mapped_ = 0;
  Fn fn_ = nullptr;
  void* arg_ = nullptr;
  bool done_ = true;
  bool stop_ = false;
};

}  // namespace kiln::cpu_rt
