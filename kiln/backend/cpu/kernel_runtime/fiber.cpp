#include "kiln/backend/cpu/kernel_runtime/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#if KILN_HAVE_BOOST_CONTEXT
#include <boost/context/detail/fcontext.hpp>
#else
#include <ucontext.h>
#endif

#if defined(__SANITIZE_THREAD__)
#define KILN_TSAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KILN_TSAN_FIBERS 1
#endif
#endif
#if KILN_TSAN_FIBERS
#include <sanitizer/tsan_interface.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KILN_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_ASAN_FIBERS 1
#endif
#endif
#if KILN_ASAN_FIBERS
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace kiln::cpu_rt {

namespace {

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

// A stack of at least `stack_bytes` with a guard page below it (an overflow faults instead
// of corrupting); `mapped` gets the size of the whole mapping.
void* map_stack(size_t stack_bytes, size_t& mapped) {
  const size_t page = page_size();
  mapped = (stack_bytes + page - 1) / page * page + page;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) {
    throw std::runtime_error(std::string("[custom kernel] Cannot map a fiber stack: ") +
                             std::strerror(errno));
  }
  mprotect(p, page, PROT_NONE);
  return p;
}

// ThreadSanitizer keeps a shadow call stack, a clock and held locks per thread: told of
// every switch, it gives each fiber its own (a switch synchronizes the two fibers, as it
// does on the CPU). Untold, it sees one thread's stack jump between fibers, and the
// fiber's frames and accesses mix with the OS thread's. No-ops in other builds.
#if KILN_TSAN_FIBERS
void* tsan_current() {
  return __tsan_get_current_fiber();
}
void* tsan_create() {
  return __tsan_create_fiber(0);
}
void tsan_destroy(void* f) {
  if (f) __tsan_destroy_fiber(f);
}
// Immediately before the switch itself: no instrumented code may run in between.
void tsan_switch(void* to) {
  __tsan_switch_to_fiber(to, 0);
}
#else
void* tsan_current() {
  return nullptr;
}
void* tsan_create() {
  return nullptr;
}
void tsan_destroy(void*) {}
void tsan_switch(void*) {}
#endif

// AddressSanitizer keeps the running stack's bounds (its reports name the frame and variable
// an address belongs to) and, with detect_stack_use_after_return, a fake stack per context:
// every switch is announced before the jump (start) and completed after it (finish). The OS
// thread's own stack ("home", where resume() runs) is learnt when a fiber lands from it.
#if KILN_ASAN_FIBERS
struct AsanStacks {
  const void* home_bottom = nullptr;
  size_t home_size = 0;
  void* home_fake = nullptr;  // home's fake stack while a fiber runs
  bool from_home = false;     // the switch in progress left home
};
thread_local AsanStacks asan;

void asan_leave_home(const void* bottom, size_t size) {
  asan.from_home = true;
  __sanitizer_start_switch_fiber(&asan.home_fake, bottom, size);
}
void asan_back_home() {
  __sanitizer_finish_switch_fiber(asan.home_fake, nullptr, nullptr);
}
// After a jump back home from a fiber (Fiber::sanitizer_landed): the home frames that ran the
// fibers were left without returning, their redzones still poisoned. Everything below `top`
// (the landing frame's stack pointer) is dead.
void asan_clear_below(const void* top) {
  const auto bottom = reinterpret_cast<uintptr_t>(asan.home_bottom);
  const auto end = reinterpret_cast<uintptr_t>(top);
  if (bottom && end > bottom) __asan_unpoison_memory_region(asan.home_bottom, end - bottom);
}
// On a fiber, after a jump into it; `fake` is null on its first landing.
void asan_land(void* fake) {
  const void* bottom = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fake, &bottom, &size);
  if (std::exchange(asan.from_home, false)) {
    asan.home_bottom = bottom;
    asan.home_size = size;
  }
}
// On a fiber, before a jump to another fiber's stack; `save` null when it leaves for good.
void asan_leave(void** save, const void* bottom, size_t size) {
  __sanitizer_start_switch_fiber(save, bottom, size);
}
void asan_leave_for_home(void** save) {
  asan_leave(save, asan.home_bottom, asan.home_size);
}
// Frames that never returned (an abandoned fiber) leave their redzones poisoned: a later
// mapping at the same addresses must not inherit them.
void asan_unpoison(void* p, size_t n) {
  __asan_unpoison_memory_region(p, n);
}
#else
void asan_leave_home(const void*, size_t) {}
void asan_back_home() {}
void asan_clear_below(const void*) {}
void asan_land(void*) {}
void asan_leave(void**, const void*, size_t) {}
void asan_leave_for_home(void**) {}
void asan_unpoison(void*, size_t) {}
#endif

}  // namespace

#if KILN_HAVE_BOOST_CONTEXT

// fcontext, the layer under boost::context::fiber: a jump passes one pointer, which lets two
// fibers switch directly (boost::context::fiber would hand the suspended side's handle to
// the resumed one, which cannot know where to keep it).
namespace fctx = boost::context::detail;

struct Fiber::Impl {
  fctx::fcontext_t ctx = nullptr;    // where this fiber continues, while it does not run
  fctx::fcontext_t* home = nullptr;  // while it runs: where resume()'s caller continues
  void* tsan = nullptr;              // ThreadSanitizer's fiber (null in other builds)
  void* tsan_home = nullptr;         // ... and resume()'s caller's
  const void* bottom = nullptr;      // the usable stack, for AddressSanitizer
  size_t size = 0;
  void* asan_fake = nullptr;  // AddressSanitizer's fake stack while another context runs

  // Every jump passes the address where the side that jumps away is to be kept; the side
  // that wakes up stores it there (null: the side that jumped has ended).
  static void land(fctx::transfer_t t) {
    if (t.data) *static_cast<fctx::fcontext_t*>(t.data) = t.fctx;
  }

  static void entry(fctx::transfer_t t) {
    auto* self = static_cast<Fiber*>(t.data);
    asan_land(nullptr);
    tsan_switch(self->impl_->tsan_home);
    asan_leave_for_home(&self->impl_->asan_fake);
    land(fctx::jump_fcontext(t.fctx, nullptr));  // back to the constructor, until first use
    asan_land(self->impl_->asan_fake);
    loop(self);
    tsan_switch(self->impl_->tsan_home);
    asan_leave_for_home(nullptr);
    fctx::jump_fcontext(*self->impl_->home, nullptr);  // for good: the destructor unmaps
  }
};

Fiber::Fiber(size_t stack_bytes) {
  stack_ = map_stack(stack_bytes, mapped_);
  impl_ = new Impl;
  impl_->tsan = tsan_create();
  impl_->tsan_home = tsan_current();
  impl_->bottom = static_cast<char*>(stack_) + page_size();
  impl_->size = mapped_ - page_size();
  fctx::fcontext_t c = fctx::make_fcontext(static_cast<char*>(stack_) + mapped_,
                                           mapped_ - page_size(), &Impl::entry);
  asan_leave_home(impl_->bottom, impl_->size);
  tsan_switch(impl_->tsan);
  impl_->ctx = fctx::jump_fcontext(c, this).fctx;  // the fiber learns its Fiber*
  asan_back_home();
}

void Fiber::resume() {
  fctx::fcontext_t home = nullptr;
  impl_->home = &home;
  impl_->tsan_home = tsan_current();
  asan_leave_home(impl_->bottom, impl_->size);
  tsan_switch(impl_->tsan);
  Impl::land(fctx::jump_fcontext(impl_->ctx, &home));
  asan_back_home();
}

void Fiber::switch_to(Fiber& next) {
  next.impl_->home = impl_->home;
  next.impl_->tsan_home = impl_->tsan_home;
  asan_leave(&impl_->asan_fake, next.impl_->bottom, next.impl_->size);
  tsan_switch(next.impl_->tsan);
  Impl::land(fctx::jump_fcontext(next.impl_->ctx, &impl_->ctx));
  asan_land(impl_->asan_fake);
}

void Fiber::suspend() {
  asan_leave_for_home(&impl_->asan_fake);
  tsan_switch(impl_->tsan_home);
  Impl::land(fctx::jump_fcontext(*impl_->home, &impl_->ctx));
  asan_land(impl_->asan_fake);
}

const char* Fiber::implementation() {
  return "boost.context";
}

#else  // glibc ucontext

struct Fiber::Impl {
  ucontext_t ctx;
  ucontext_t* home = nullptr;    // while it runs: where resume()'s caller continues
  void* tsan = nullptr;          // ThreadSanitizer's fiber (null in other builds)
  void* tsan_home = nullptr;     // ... and resume()'s caller's
  const void* bottom = nullptr;  // the usable stack, for AddressSanitizer
  size_t size = 0;
  void* asan_fake = nullptr;  // AddressSanitizer's fake stack while another context runs
};

namespace {
// makecontext passes int arguments only: the Fiber* goes through a thread-local slot, read
// once when the fiber starts (on the thread that created it).
thread_local Fiber* starting_fiber = nullptr;
}  // namespace

Fiber::Fiber(size_t stack_bytes) {
  stack_ = map_stack(stack_bytes, mapped_);
  impl_ = new Impl;
  impl_->tsan = tsan_create();
  getcontext(&impl_->ctx);
  impl_->bottom = static_cast<char*>(stack_) + page_size();
  impl_->size = mapped_ - page_size();
  impl_->ctx.uc_stack.ss_sp = const_cast<void*>(impl_->bottom);
  impl_->ctx.uc_stack.ss_size = impl_->size;
  impl_->ctx.uc_link = nullptr;
  makecontext(&impl_->ctx, reinterpret_cast<void (*)()>(+[] {
    Fiber* self = starting_fiber;
    asan_land(nullptr);
    self->suspend();  // back to the constructor, until first use
    loop(self);
    tsan_switch(self->impl_->tsan_home);
    asan_leave_for_home(nullptr);
    setcontext(self->impl_->home);  // for good (uc_link is null: never return)
  }),
              0);
  // ASan's swapcontext interceptor clears the shadow of the stack a context names, on every
  // switch into it: the fiber's live frames would lose their redzones. makecontext was the
  // last reader of uc_stack; without it, nothing is cleared.
  impl_->ctx.uc_stack.ss_sp = nullptr;
  impl_->ctx.uc_stack.ss_size = 0;
  starting_fiber = this;
  resume();
}

void Fiber::resume() {
  ucontext_t home;
  home.uc_stack.ss_sp = nullptr;  // as above: swapcontext does not fill it in
  home.uc_stack.ss_size = 0;
  impl_->home = &home;
  impl_->tsan_home = tsan_current();
  asan_leave_home(impl_->bottom, impl_->size);
  tsan_switch(impl_->tsan);
  swapcontext(&home, &impl_->ctx);
  asan_back_home();
}

void Fiber::switch_to(Fiber& next) {
  next.impl_->home = impl_->home;
  next.impl_->tsan_home = impl_->tsan_home;
  asan_leave(&impl_->asan_fake, next.impl_->bottom, next.impl_->size);
  tsan_switch(next.impl_->tsan);
  swapcontext(&impl_->ctx, &next.impl_->ctx);
  asan_land(impl_->asan_fake);
}

void Fiber::suspend() {
  asan_leave_for_home(&impl_->asan_fake);
  tsan_switch(impl_->tsan_home);
  swapcontext(&impl_->ctx, impl_->home);
  asan_land(impl_->asan_fake);
}

const char* Fiber::implementation() {
  return "ucontext";
}

#endif

Fiber::~Fiber() {
  if (!impl_) return;  // abandoned
  stop_ = true;
  resume();  // its last work returns, and loop() ends
  tsan_destroy(impl_->tsan);
  delete impl_;
  asan_unpoison(stack_, mapped_);
  munmap(stack_, mapped_);
}

void Fiber::abandon(std::unique_ptr<Fiber> fiber) {
  // Nothing may resume it: its stack goes without running what is on it.
  tsan_destroy(fiber->impl_->tsan);
  delete fiber->impl_;
  fiber->impl_ = nullptr;
  asan_unpoison(fiber->stack_, fiber->mapped_);
  munmap(fiber->stack_, fiber->mapped_);
}

void* Fiber::sanitizer_context() {
  return tsan_current();
}

void Fiber::sanitizer_jump_to(void* context) {
  asan_leave_for_home(nullptr);  // the fiber is left for good
  tsan_switch(context);
}

// Not inlined: its canonical frame address is the landing frame's stack pointer.
__attribute__((noinline)) void Fiber::sanitizer_landed() {
  asan_back_home();
  asan_clear_below(__builtin_dwarf_cfa());
}

void Fiber::assign(Fn fn, void* arg) {
  fn_ = fn;
  arg_ = arg;
}

void Fiber::loop(Fiber* self) {
  while (!self->stop_) {
    // The work switches away at its end; it returns once the fiber is switched into again.
    if (Fn fn = std::exchange(self->fn_, nullptr))
      fn(self->arg_);
    else
      self->suspend();  // switched into with nothing to do: back to resume()
  }
}

}  // namespace kiln::cpu_rt
