// Checking mode (KILN_KERNEL_CHECK=1) on the CPU: the kernel's input and output pointers
// become checked_ptr and its shared arrays checked_array, so that every access through them
// is bounds-checked and a violation stops the launch with an error naming the kernel, the
// array, the index, the block and the thread (instead of corrupting memory).
//
// A checked_ptr behaves like the raw pointer it wraps: indexing, *, ->, arithmetic,
// comparisons, differences, and conversion to a raw pointer (unchecked from then on) when
// passed to a function that takes one. Casts made with reinterpret_cast keep the checks
// (the generator routes them through checked_reinterpret_cast); C-style casts give raw
// pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "kiln/backend/kernels/cuda_cpu_runtime.h"

namespace kiln::cpu_rt {

/** Reports an access to element `index` of `name`, whose valid indices are [lo, hi). */
[[noreturn]] inline void out_of_bounds(const char* name, int64_t index, int64_t lo, int64_t hi,
                                       const char* what) {
  char message[320];
  if (lo == 0) {
    std::snprintf(message, sizeof message,
                  "out-of-bounds %s '%s' at index %lld; it has %lld element%s (valid indices 0 "
                  "to %lld).",
                  what, name, static_cast<long long>(index), static_cast<long long>(hi),
                  hi == 1 ? "" : "s", static_cast<long long>(hi - 1));
  } else {
    std::snprintf(message, sizeof message,
                  "out-of-bounds %s '%s' at index %lld (valid indices %lld to %lld).", what, name,
                  static_cast<long long>(index), static_cast<long long>(lo),
                  static_cast<long long>(hi - 1));
  }
  trap(message);
}

/** A string usable as a template argument (the name of a shared array). */
template <size_t N>
struct fixed_name {
  char s[N];
  constexpr fixed_name(const char (&v)[N]) {
    for (size_t i = 0; i < N; ++i) s[i] = v[i];
  }
};

template <typename T>
class checked_ptr {
 public:
  using element_type = T;

  checked_ptr() = default;
  checked_ptr(std::nullptr_t) {}
  /** A kernel argument: its bounds and name come from the launch (a pointer that is no
   * argument stays unchecked). */
  checked_ptr(T* raw) : p_(raw), base_(raw) {
    const Launch* L = current_thread ? current_thread->launch : nullptr;
    const void* key = const_cast<const void*>(static_cast<const volatile void*>(raw));
    for (uint32_t i = 0; L && i < L->num_args; ++i) {
      if (L->args[i] == key) {
        begin_ = L->arg_begin[i];
        end_ = L->arg_end[i];
        name_ = L->arg_names[i];
        return;
      }
    }
  }
  /** A pointer `p` into the bytes [base + begin, base + end) of array `name`. */
  checked_ptr(T* p, const void* base, int64_t begin, int64_t end, const char* name)
      : p_(p), base_(base), begin_(begin), end_(end), name_(name) {}
  /** From a pointer to a convertible type (adding const). */
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  checked_ptr(const checked_ptr<U>& o)
      : p_(o.get()), base_(o.base()), begin_(o.begin()), end_(o.end()), name_(o.name()) {}

  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  T& operator[](I i) const {
    return *at(p_ + i, "access to");
  }
  T& operator*() const { return *at(p_, "access to"); }
  T* operator->() const { return at(p_, "access to"); }

  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  checked_ptr operator+(I i) const {
    return with(p_ + i);
  }
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  friend checked_ptr operator+(I i, const checked_ptr& q) {
    return q.with(q.p_ + i);
  }
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  checked_ptr operator-(I i) const {
    return with(p_ - i);
  }
  std::ptrdiff_t operator-(const checked_ptr& o) const { return p_ - o.p_; }
  template <typename I>
  checked_ptr& operator+=(I i) {
    p_ += i;
    return *this;
  }
  template <typename I>
  checked_ptr& operator-=(I i) {
    p_ -= i;
    return *this;
  }
  checked_ptr& operator++() { return ++p_, *this; }
  checked_ptr& operator--() { return --p_, *this; }
  checked_ptr operator++(int) { return with(p_++); }
  checked_ptr operator--(int) { return with(p_--); }

  friend bool operator==(const checked_ptr& a, const checked_ptr& b) { return a.p_ == b.p_; }
  friend bool operator!=(const checked_ptr& a, const checked_ptr& b) { return a.p_ != b.p_; }
  friend bool operator<(const checked_ptr& a, const checked_ptr& b) { return a.p_ < b.p_; }
  friend bool operator<=(const checked_ptr& a, const checked_ptr& b) { return a.p_ <= b.p_; }
  friend bool operator>(const checked_ptr& a, const checked_ptr& b) { return a.p_ > b.p_; }
  friend bool operator>=(const checked_ptr& a, const checked_ptr& b) { return a.p_ >= b.p_; }
  explicit operator bool() const { return p_ != nullptr; }

  /** A raw pointer for code that takes one (no checks beyond this point). */
  operator T*() const { return p_; }
  template <typename U, typename = std::enable_if_t<!std::is_same_v<U, T>>>
  explicit operator U*() const {
    return (U*)p_;
  }

  T* get() const { return p_; }
  const void* base() const { return base_; }
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }
  const char* name() const { return name_; }
  checked_ptr with(T* p) const { return checked_ptr(p, base_, begin_, end_, name_); }

 private:
  static int64_t elements(int64_t bytes) {  // rounds toward minus infinity
    const int64_t s = static_cast<int64_t>(sizeof(T));
    return bytes >= 0 ? bytes / s : -((-bytes + s - 1) / s);
  }
  T* at(T* q, const char* what) const {
    if (!name_) return q;  // not a kernel argument: unchecked
    const int64_t off = reinterpret_cast<const char*>(q) - static_cast<const char*>(base_);
    if (off < begin_ || off + static_cast<int64_t>(sizeof(T)) > end_) {
      out_of_bounds(name_, elements(off), elements(begin_ + static_cast<int64_t>(sizeof(T)) - 1),
                    elements(end_), what);
    }
    return q;
  }

  T* p_ = nullptr;
  const void* base_ = nullptr;
  int64_t begin_ = 0, end_ = 0;
  const char* name_ = nullptr;
};

/** reinterpret_cast that keeps a checked pointer checked (as a pointer to the new type). */
template <typename To, typename From>
auto checked_reinterpret_cast(From&& x) {
  using F = std::remove_cv_t<std::remove_reference_t<From>>;
  if constexpr (std::is_pointer_v<To> && requires { typename F::element_type; } &&
                std::is_same_v<F, checked_ptr<typename F::element_type>>) {
    using V = std::remove_pointer_t<To>;
    return checked_ptr<V>(reinterpret_cast<V*>(x.get()), x.base(), x.begin(), x.end(), x.name());
  } else {
    return reinterpret_cast<To>(x);
  }
}

/** A shared (threadgroup) array of N elements named Name, bounds-checked. */
template <typename T, size_t N, fixed_name Name>
struct checked_array {
  T data_[N];

  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  T& operator[](I i) {
    if (i < 0 || static_cast<uint64_t>(i) >= N) {
      out_of_bounds(Name.s, static_cast<int64_t>(i), 0, static_cast<int64_t>(N),
                    "access to shared array");
    }
    return data_[i];
  }
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  const T& operator[](I i) const {
    return const_cast<checked_array&>(*this)[i];
  }
  checked_ptr<T> ptr() { return checked_ptr<T>(data_, data_, 0, sizeof(data_), Name.s); }
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  checked_ptr<T> operator+(I i) {
    return ptr() + i;
  }
  T& operator*() { return (*this)[0]; }
  operator checked_ptr<T>() { return ptr(); }
  operator T*() { return data_; }
  template <typename U, typename = std::enable_if_t<!std::is_same_v<U, T>>>
  explicit operator U*() {
    return (U*)data_;
  }
};

}  // namespace kiln::cpu_rt
