#include "kiln/backend/cpu/kernel_runtime/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#if KILN_HAVE_BOOST_CONTEXT
#include <boost/context/fiber.hpp>
#else
#include <ucontext.h>
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

}  // namespace

#if KILN_HAVE_BOOST_CONTEXT

namespace bctx = boost::context;

// Hands Boost.Context the stack this Fiber owns.
struct BorrowedStack {
  bctx::stack_context sc;
  bctx::stack_context allocate() { return sc; }
  void deallocate(bctx::stack_context&) noexcept {}
};

struct Fiber::Impl {
  bctx::fiber callee;  // the suspended fiber, while it does not run
  bctx::fiber caller;  // where yield() returns to, while it runs
};

Fiber::Fiber(size_t stack_bytes) {
  stack_ = map_stack(stack_bytes, mapped_);
  impl_ = new Impl;
  bctx::stack_context sc;
  sc.size = mapped_ - page_size();
  sc.sp = static_cast<char*>(stack_) + mapped_;
  impl_->callee = bctx::fiber(std::allocator_arg, BorrowedStack{sc}, [this](bctx::fiber&& c) {
    impl_->caller = std::move(c);
    loop(this);
    return std::move(impl_->caller);
  });
}

Fiber::~Fiber() {
  if (!impl_) return;  // abandoned
  if (impl_->callee) {
    stop_ = true;
    impl_->callee = std::move(impl_->callee).resume();  // leaves loop() and finishes
  }
  delete impl_;
  munmap(stack_, mapped_);
}

void Fiber::resume() {
  impl_->callee = std::move(impl_->callee).resume();
}

void Fiber::yield() {
  impl_->caller = std::move(impl_->caller).resume();
}

void Fiber::abandon(std::unique_ptr<Fiber> fiber) {
  // Destroying a Boost.Context handle resumes its fiber to unwind it: leak the handles.
  new bctx::fiber(std::move(fiber->impl_->callee));
  new bctx::fiber(std::move(fiber->impl_->caller));
  delete fiber->impl_;
  fiber->impl_ = nullptr;
  munmap(fiber->stack_, fiber->mapped_);
}

const char* Fiber::implementation() {
  return "boost.context";
}

#else  // glibc ucontext

struct Fiber::Impl {
  ucontext_t callee;
  ucontext_t caller;
};

namespace {
// makecontext passes int arguments only: the Fiber* goes through a thread-local slot, read
// once when the fiber starts (on the thread that created it).
thread_local Fiber* starting_fiber = nullptr;
}  // namespace

Fiber::Fiber(size_t stack_bytes) {
  stack_ = map_stack(stack_bytes, mapped_);
  impl_ = new Impl;
  getcontext(&impl_->callee);
  impl_->callee.uc_stack.ss_sp = static_cast<char*>(stack_) + page_size();
  impl_->callee.uc_stack.ss_size = mapped_ - page_size();
  impl_->callee.uc_link = nullptr;
  makecontext(&impl_->callee, reinterpret_cast<void (*)()>(+[] { loop(starting_fiber); }), 0);
  // Enter once so that the fiber picks up its pointer; loop() yields back at once.
  starting_fiber = this;
  swapcontext(&impl_->caller, &impl_->callee);
}

Fiber::~Fiber() {
  if (!impl_) return;  // abandoned
  if (!stop_) {
    stop_ = true;
    resume();  // loop() returns to the final switch
  }
  delete impl_;
  munmap(stack_, mapped_);
}

void Fiber::resume() {
  swapcontext(&impl_->caller, &impl_->callee);
}

void Fiber::yield() {
  swapcontext(&impl_->callee, &impl_->caller);
}

void Fiber::abandon(std::unique_ptr<Fiber> fiber) {
  delete fiber->impl_;
  fiber->impl_ = nullptr;
  munmap(fiber->stack_, fiber->mapped_);
}

const char* Fiber::implementation() {
  return "ucontext";
}

#endif

void Fiber::assign(Fn fn, void* arg) {
  fn_ = fn;
  arg_ = arg;
  done_ = false;
}

void Fiber::loop(Fiber* self) {
#if !KILN_HAVE_BOOST_CONTEXT
  self->yield();  // back to the constructor
#endif
  while (!self->stop_) {
    if (!self->done_) {
      self->fn_(self->arg_);
      self->done_ = true;
    }
    self->yield();
  }
#if !KILN_HAVE_BOOST_CONTEXT
  // A ucontext function must not return (uc_link is null): switch away for good.
  setcontext(&self->impl_->caller);
#endif
}

}  // namespace kiln::cpu_rt
