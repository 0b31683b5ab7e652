// Metal's packed vectors (packed_float3, packed_half2, ...), included on demand: the
// generator adds this header on the GPU when a body or header names a packed type (the CPU
// prelude always has it).
// kiln-on-demand: packed_*
#pragma once

#include "kiln/backend/kernels/metal/vec.h"

namespace metal {

namespace detail {
template <typename T, int N>
struct vec_traits<packed_vec<T, N>> {
  static constexpr bool value = true;
  typedef vec<T, N> type;
  typedef T elem;
  static constexpr int size = N;
};
}  // namespace detail

// ---------------------------------------------------------------- packed vectors

// Metal's packed_floatN, packed_half2, ...: N components without padding, aligned like one
// component (packed_float3 is 12 bytes, packed_half2 4 with 2-byte alignment). They convert
// to and from vec<T, N> implicitly, and their arithmetic gives vectors.
namespace detail {

#define KILN_PACKED_BINARY(op)                                                          \
  friend KILN_HD V operator op(const P& a, const P& b) { return V(a) op V(b); }         \
  friend KILN_HD V operator op(const P& a, const V& b) { return V(a) op b; }            \
  friend KILN_HD V operator op(const V& a, const P& b) { return a op V(b); }            \
  friend KILN_HD V operator op(const P& a, T s) { return V(a) op s; }                   \
  friend KILN_HD V operator op(T s, const P& b) { return s op V(b); }                   \
  friend KILN_HD P& operator op##=(P& a, const V& b) { return a = P(V(a) op b); }       \
  friend KILN_HD P& operator op##=(P& a, T s) { return a = P(V(a) op s); }
#define KILN_PACKED_COMPARE(op)                                                        \
  friend KILN_HD vec<bool, N> operator op(const P& a, const P& b) { return V(a) op V(b); } \
  friend KILN_HD vec<bool, N> operator op(const P& a, const V& b) { return V(a) op b; }    \
  friend KILN_HD vec<bool, N> operator op(const V& a, const P& b) { return a op V(b); }    \
  friend KILN_HD vec<bool, N> operator op(const P& a, T s) { return V(a) op s; }

template <typename T, int N>
struct packed_ops {
  typedef packed_vec<T, N> P;
  typedef vec<T, N> V;
  KILN_PACKED_BINARY(+)
  KILN_PACKED_BINARY(-)
  KILN_PACKED_BINARY(*)
  KILN_PACKED_BINARY(/)
  KILN_PACKED_BINARY(%)
  KILN_PACKED_BINARY(&)
  KILN_PACKED_BINARY(|)
  KILN_PACKED_BINARY(^)
  KILN_PACKED_BINARY(<<)
  KILN_PACKED_BINARY(>>)
  KILN_PACKED_COMPARE(==)
  KILN_PACKED_COMPARE(!=)
  KILN_PACKED_COMPARE(<)
  KILN_PACKED_COMPARE(<=)
  KILN_PACKED_COMPARE(>)
  KILN_PACKED_COMPARE(>=)
  friend KILN_HD V operator-(const P& a) { return -V(a); }
  friend KILN_HD V operator+(const P& a) { return V(a); }
};
#undef KILN_PACKED_BINARY
#undef KILN_PACKED_COMPARE

}  // namespace detail

#define KILN_PACKED_COMMON(N_)                                          \
  static constexpr int N = N_;                                          \
  typedef T value_type;                                                 \
  packed_vec() = default;                                               \
  KILN_HD packed_vec(const vec<T, N_>& v) {                             \
    for (int i = 0; i < N_; ++i) d_[i] = v[i];                          \
  }                                                                     \
  template <typename S, detail::enable_if_t<detail::half_convertible_v<S>, int> = 0> \
  KILN_HD packed_vec(S s) {                                             \
    for (int i = 0; i < N_; ++i) d_[i] = static_cast<T>(s);             \
  }                                                                     \
  template <typename U>                                                 \
  KILN_HD explicit packed_vec(const vec<U, N_>& v) {                    \
    for (int i = 0; i < N_; ++i) d_[i] = static_cast<T>(v[i]);          \
  }                                                                     \
  KILN_HD operator vec<T, N_>() const {                                 \
    vec<T, N_> r;                                                       \
    for (int i = 0; i < N_; ++i) r[i] = d_[i];                          \
    return r;                                                           \
  }                                                                     \
  KILN_HD T& operator[](int i) { return d_[i]; }                        \
  KILN_HD const T& operator[](int i) const { return d_[i]; }

template <typename T>
struct packed_vec<T, 2> : detail::packed_ops<T, 2> {
  union {
    T d_[2];
    struct {
      T x, y;
    };
    struct {
      T r, g;
    };
  };
  KILN_HD packed_vec(T a, T b) : d_{a, b} {}
  KILN_PACKED_COMMON(2)
};
template <typename T>
struct packed_vec<T, 3> : detail::packed_ops<T, 3> {
  union {
    T d_[3];
    struct {
      T x, y, z;
    };
    struct {
      T r, g, b;
    };
  };
  KILN_HD packed_vec(T a, T b, T c) : d_{a, b, c} {}
  KILN_PACKED_COMMON(3)
};
template <typename T>
struct packed_vec<T, 4> : detail::packed_ops<T, 4> {
  union {
    T d_[4];
    struct {
      T x, y, z, w;
    };
    struct {
      T r, g, b, a;
    };
  };
  KILN_HD packed_vec(T a0, T a1, T a2, T a3) : d_{a0, a1, a2, a3} {}
  KILN_PACKED_COMMON(4)
};
#undef KILN_PACKED_COMMON

#define KILN_PACKED_NAMES(T, name)        \
  typedef packed_vec<T, 2> packed_##name##2; \
  typedef packed_vec<T, 3> packed_##name##3; \
  typedef packed_vec<T, 4> packed_##name##4;
KILN_PACKED_NAMES(float, float)
KILN_PACKED_NAMES(half, half)
KILN_PACKED_NAMES(bfloat, bfloat)
KILN_PACKED_NAMES(int, int)
KILN_PACKED_NAMES(uint, uint)
KILN_PACKED_NAMES(short, short)
KILN_PACKED_NAMES(ushort, ushort)
KILN_PACKED_NAMES(char, char)
KILN_PACKED_NAMES(uchar, uchar)
KILN_PACKED_NAMES(int64_t, long)
KILN_PACKED_NAMES(ulong, ulong)
#undef KILN_PACKED_NAMES

#ifndef KILN_JIT
static_assert(sizeof(packed_float3) == 12 && alignof(packed_float3) == 4 &&
                  sizeof(packed_half2) == 4 && alignof(packed_half2) == 2,
              "Metal's packed vector layouts");
#endif

}  // namespace metal
