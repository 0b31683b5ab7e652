// Checking mode (KILN_KERNEL_CHECK=1) on the GPU: the kernel's input and output pointers
// become kiln_check::ptr (bounds carried with the pointer, packed by the launcher) and its
// shared arrays kiln_check::array, so that every access through them is checked. The first
// violation of a launch is recorded in `kiln_check_report` (this module's global, read by
// the launcher after the launch) with the array, the index, the valid range, the block and
// the thread; the access then goes to a scratch location instead of corrupting memory, and
// the kernel runs on (no trap), so the context and the stream stay usable.
//
// As on the CPU (cuda_cpu_check.h), a checked pointer behaves like the raw pointer it wraps:
// indexing, *, ->, arithmetic, comparisons, conversion to a raw pointer (unchecked from then
// on); reinterpret_cast keeps the checks (the generator routes it through
// kiln_check::reinterpret); atomics on a checked pointer check the element first.
#pragma once

#include "kiln/backend/kernels/metal/atomic.h"
#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/gpu_atomic.h"

namespace kiln_check {

/** The first out-of-bounds access of a launch (`flag` 1). Layout read by the launcher
 * (backend/cuda/custom_kernel.cpp). */
struct Report {
  unsigned int flag;
  unsigned int array;  // argument index, or number of arguments + shared array index
  long long index;     // the element accessed
  long long lo, hi;    // the valid element indices [lo, hi)
  unsigned int block[3];
  unsigned int thread[3];
};

}  // namespace kiln_check

extern "C" __device__ kiln_check::Report kiln_check_report;
__device__ kiln_check::Report kiln_check_report;

namespace kiln_check {

// Where a refused access goes (its value is garbage; the launch is reported as failed).
__device__ __align__(16) unsigned char scratch[256];

__device__ __noinline__ void report(unsigned int array, long long index, long long lo,
                                    long long hi) {
  if (atomicCAS(&kiln_check_report.flag, 0u, 2u) == 0u) {
    kiln_check_report.array = array;
    kiln_check_report.index = index;
    kiln_check_report.lo = lo;
    kiln_check_report.hi = hi;
    kiln_check_report.block[0] = blockIdx.x;
    kiln_check_report.block[1] = blockIdx.y;
    kiln_check_report.block[2] = blockIdx.z;
    kiln_check_report.thread[0] = threadIdx.x;
    kiln_check_report.thread[1] = threadIdx.y;
    kiln_check_report.thread[2] = threadIdx.z;
    __threadfence();
    atomicExch(&kiln_check_report.flag, 1u);
  }
}

template <typename T>
KILN_HD T* refused() {
  static_assert(sizeof(T) <= sizeof(scratch), "checking mode: element type over 256 bytes");
  return reinterpret_cast<T*>(scratch);
}

/** A pointer into the bytes [base + begin, base + end) of argument or array `id`. Layout
 * packed by the launcher: p, base, begin, end, id. */
template <typename T>
struct ptr {
  T* p_;
  const void* base_;
  long long begin_, end_;
  unsigned int id_, pad_;

  typedef T element_type;

  template <typename I, typename = metal::detail::enable_if_t<metal::detail::is_integral_v<I>>>
  KILN_HD T& operator[](I i) const {
    return *at(p_ + i);
  }
  KILN_HD T& operator*() const { return *at(p_); }
  KILN_HD T* operator->() const { return at(p_); }

  template <typename I, typename = metal::detail::enable_if_t<metal::detail::is_integral_v<I>>>
  KILN_HD ptr operator+(I i) const {
    return with(p_ + i);
  }
  template <typename I, typename = metal::detail::enable_if_t<metal::detail::is_integral_v<I>>>
  friend KILN_HD ptr operator+(I i, const ptr& q) {
    return q.with(q.p_ + i);
  }
  template <typename I, typename = metal::detail::enable_if_t<metal::detail::is_integral_v<I>>>
  KILN_HD ptr operator-(I i) const {
    return with(p_ - i);
  }
  KILN_HD long long operator-(const ptr& o) const { return p_ - o.p_; }
  template <typename I>
  KILN_HD ptr& operator+=(I i) {
    p_ += i;
    return *this;
  }
  template <typename I>
  KILN_HD ptr& operator-=(I i) {
    p_ -= i;
    return *this;
  }
  KILN_HD ptr& operator++() { return ++p_, *this; }
  KILN_HD ptr& operator--() { return --p_, *this; }
  KILN_HD ptr operator++(int) { return with(p_++); }
  KILN_HD ptr operator--(int) { return with(p_--); }
  friend KILN_HD bool operator==(const ptr& a, const ptr& b) { return a.p_ == b.p_; }
  friend KILN_HD bool operator!=(const ptr& a, const ptr& b) { return a.p_ != b.p_; }
  friend KILN_HD bool operator<(const ptr& a, const ptr& b) { return a.p_ < b.p_; }
  friend KILN_HD bool operator<=(const ptr& a, const ptr& b) { return a.p_ <= b.p_; }
  friend KILN_HD bool operator>(const ptr& a, const ptr& b) { return a.p_ > b.p_; }
  friend KILN_HD bool operator>=(const ptr& a, const ptr& b) { return a.p_ >= b.p_; }
  KILN_HD explicit operator bool() const { return p_ != nullptr; }

  /** A raw pointer for code that takes one (no checks beyond this point). */
  KILN_HD operator T*() const { return p_; }
  template <typename U, typename = metal::detail::enable_if_t<!metal::detail::is_same_v<U, T>>>
  KILN_HD explicit operator U*() const {
    return (U*)p_;
  }
  /** Adding const. */
  template <typename U,
            typename = metal::detail::enable_if_t<metal::detail::is_same_v<const T, U> &&
                                                  !metal::detail::is_same_v<T, U>>>
  KILN_HD operator ptr<U>() const {
    return {p_, base_, begin_, end_, id_, 0};
  }

  KILN_HD T* get() const { return p_; }
  KILN_HD ptr with(T* q) const { return {q, base_, begin_, end_, id_, 0}; }

 private:
  static KILN_HD long long elements(long long bytes) {  // rounds toward minus infinity
    const long long s = static_cast<long long>(sizeof(T));
    return bytes >= 0 ? bytes / s : -((-bytes + s - 1) / s);
  }
  KILN_HD T* at(T* q) const {
    const long long off = reinterpret_cast<const char*>(q) - static_cast<const char*>(base_);
    if (off < begin_ || off + static_cast<long long>(sizeof(T)) > end_) {
      report(id_, elements(off), elements(begin_ + static_cast<long long>(sizeof(T)) - 1),
             elements(end_));
      return refused<T>();
    }
    return q;
  }
};

/** reinterpret_cast that keeps a checked pointer checked (as a pointer to the new type). */
template <typename To, typename From>
struct reinterpret_impl {
  static KILN_HD To cast(From x) { return reinterpret_cast<To>(x); }
};
template <typename V, typename T>
struct reinterpret_impl<V*, ptr<T>> {
  static KILN_HD ptr<V> cast(const ptr<T>& x) {
    return {reinterpret_cast<V*>(x.p_), x.base_, x.begin_, x.end_, x.id_, 0};
  }
};
template <typename To, typename From>
KILN_HD auto reinterpret(From&& x) {
  typedef metal::detail::remove_cv_t<typename metal::detail::remove_ref<From>::type> F;
  return reinterpret_impl<To, F>::cast(x);
}

/** A shared (threadgroup) array of N elements, array `Id` of the kernel, checked. */
template <typename T, size_t N, unsigned Id>
struct array {
  T data_[N];

  template <typename I, typename = metal::detail::enable_if_t<metal::detail::is_integral_v<I>>>
  KILN_HD T& operator[](I i) {
    if (i < 0 || static_cast<unsigned long long>(i) >= N) {
      report(Id, static_cast<long long>(i), 0, static_cast<long long>(N));
      return *refused<T>();
    }
    return data_[i];
  }
  template <typename I, typename = metal::detail::enable_if_t<metal::detail::is_integral_v<I>>>
  KILN_HD const T& operator[](I i) const {
    return const_cast<array&>(*this)[i];
  }
  KILN_HD ptr<T> get_ptr() { return {data_, data_, 0, static_cast<long long>(sizeof(data_)), Id, 0}; }
  template <typename I, typename = metal::detail::enable_if_t<metal::detail::is_integral_v<I>>>
  KILN_HD ptr<T> operator+(I i) {
    return get_ptr() + i;
  }
  KILN_HD T& operator*() { return (*this)[0]; }
  KILN_HD operator ptr<T>() { return get_ptr(); }
  KILN_HD operator T*() { return data_; }
  template <typename U, typename = metal::detail::enable_if_t<!metal::detail::is_same_v<U, T>>>
  KILN_HD explicit operator U*() {
    return (U*)data_;
  }
};

}  // namespace kiln_check

// Atomics on a checked pointer check the element, then act on it.
#define KILN_ATOMIC_CHECKED(NAME)                                   \
  template <typename A, typename... Args>                           \
  KILN_HD auto NAME(kiln_check::ptr<A> p, Args... args) {           \
    return NAME(&*p, args...);                                      \
  }
KILN_ATOMIC_CHECKED(atomicAdd)
KILN_ATOMIC_CHECKED(atomicSub)
KILN_ATOMIC_CHECKED(atomicExch)
KILN_ATOMIC_CHECKED(atomicMin)
KILN_ATOMIC_CHECKED(atomicMax)
KILN_ATOMIC_CHECKED(atomicInc)
KILN_ATOMIC_CHECKED(atomicDec)
KILN_ATOMIC_CHECKED(atomicCAS)
KILN_ATOMIC_CHECKED(atomicAnd)
KILN_ATOMIC_CHECKED(atomicOr)
KILN_ATOMIC_CHECKED(atomicXor)
namespace metal {
KILN_ATOMIC_CHECKED(atomic_load_explicit)
KILN_ATOMIC_CHECKED(atomic_store_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_add_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_sub_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_max_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_min_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_and_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_or_explicit)
KILN_ATOMIC_CHECKED(atomic_fetch_xor_explicit)
KILN_ATOMIC_CHECKED(atomic_exchange_explicit)
KILN_ATOMIC_CHECKED(atomic_compare_exchange_weak_explicit)
KILN_ATOMIC_CHECKED(atomic_compare_exchange_strong_explicit)
}  // namespace metal
#undef KILN_ATOMIC_CHECKED
