// Fibers for CPU custom kernels: each GPU thread of a block that uses barriers or warp
// operations runs on its own fiber and switches out at those points.
//
// The context switch comes from Boost.Context's fcontext (KILN_HAVE_BOOST_CONTEXT, when its
// compiled library was found at configure time), else from glibc's ucontext, which is slower
// (each switch is a system call) but needs nothing. A fiber is long-lived: it runs one thread
// after another (assign, then switch to it), so a block costs no fiber creation. Fibers of one
// OS thread switch to each other directly, so that handing the CPU from one GPU thread to the
// next costs one context switch, not a round trip through a scheduler.
#pragma once

#include <cstddef>
#include <memory>

namespace kiln::cpu_rt {

// Hidden, so that the runtime's calls to it stay direct (no PLT), but for implementation().
class __attribute__((visibility("hidden"))) Fiber {
 public:
  using Fn = void (*)(void* arg);

  /** A fiber with its own stack of `stack_bytes` (plus a guard page below it). */
  explicit Fiber(size_t stack_bytes);
  /** Ends the fiber; it must not be inside its work (never assigned, or its last work ended
   * by switching away for good, see assign()). */
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  /** Gives the fiber its next work: the next switch into it calls fn(arg), once the previous
   * work (if any) has returned. `fn` must not throw, and must end by switching away
   * (switch_to or suspend) while the fiber is idle: that switch returns when the fiber is
   * next switched into, and then `fn` returns and the new work starts. */
  void assign(Fn fn, void* arg);
  /** Runs this fiber, and the fibers it switches to, until one of them calls suspend().
   * Called from the OS thread's own stack, outside any fiber. */
  void resume();
  /** Called on this fiber, the running one: continues `next` (another fiber of this OS
   * thread) and returns when some fiber switches back to this one. */
  void switch_to(Fiber& next);
  /** Called on this fiber, the running one: returns to the resume() that started the
   * current run, and returns when some fiber (or resume()) switches back to this one. */
  void suspend();
  /** Forgets a fiber that was left in the middle of its work (the launch was abandoned by a
   * jump out of it): nothing on its stack runs again and the stack is released. */
  static void abandon(std::unique_ptr<Fiber> fiber);

  /** ThreadSanitizer's context of the caller (a fiber or the OS thread itself); null in other
   * builds. For sanitizer_jump_to(). AddressSanitizer needs no context: the OS thread's stack
   * is the only place such a jump lands. */
  static void* sanitizer_context();
  /** Tells ThreadSanitizer that the running fiber leaves for `context` (taken earlier with
   * sanitizer_context() on this OS thread) by a non-local jump: call it immediately before
   * the siglongjmp, whose record TSan looks up in the context it jumps to. Tells
   * AddressSanitizer that the fiber is left for good, for the OS thread's stack. */
  static void sanitizer_jump_to(void* context);
  /** Called on the OS thread's stack where such a jump lands: AddressSanitizer's side of the
   * switch ends there. */
  static void sanitizer_landed();

  /** The switching library in use, for messages and benchmarks: "boost.context" or
   * "ucontext". */
  __attribute__((visibility("default"))) static const char* implementation();

 private:
  struct Impl;
  static void loop(Fiber* self);

  Impl* impl_ = nullptr;
  void* stack_ = nullptr;  // the whole mapping, guard page included
  size_t mapped_ = 0;
  Fn fn_ = nullptr;
  void* arg_ = nullptr;
  bool stop_ = false;
};

}  // namespace kiln::cpu_rt
