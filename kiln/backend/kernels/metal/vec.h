// Metal's vector types: vec<T, N> for N = 2, 3, 4 and the names float2 ... bool4.
//
// Layout as in Metal: a 3-vector occupies (and is aligned like) a 4-vector, so buffers of
// float3 or uint3 have the same addresses as on an Apple GPU. Components are x, y, z, w
// (and r, g, b, a); v[i] indexes them. Read swizzles (.xy, .zyx, .xyzw, ...) are members
// overlaying the same storage that convert to a vector. Arithmetic, bitwise and shift
// operators work elementwise on two vectors or a vector and a scalar; comparisons give a
// bool vector (see all/any/select in math.h). Conversions between element types are
// explicit, as in Metal: float4(h), (half4)f.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/half.h"

namespace metal {

template <typename T, int N>
struct vec;
template <typename T, int N>
struct packed_vec;

namespace detail {

// Metal aligns a vector to its size (a 3-vector to that of a 4-vector).
template <typename T, int N>
inline constexpr int vec_slots_v = N == 3 ? 4 : N;
template <typename T, int N>
inline constexpr int vec_align_v = ((sizeof(T) * vec_slots_v<T, N>)&(sizeof(T) * vec_slots_v<T, N> -
                                                                     1)) == 0
                                       ? static_cast<int>(sizeof(T) * vec_slots_v<T, N>)
                                       : static_cast<int>(alignof(T));

/** A read-only swizzle: it overlays the storage of a vector of `Slots` slots and converts to
 * V holding the components I... of it. */
template <typename T, int Slots, typename V, int... I>
struct swizzle {
  T d_[Slots];
  KILN_HD operator V() const { return V(d_[I]...); }
  KILN_HD V operator()() const { return V(d_[I]...); }
};

// What counts as a vector in function templates: vectors and swizzles (as their vector).
template <typename X>
struct vec_traits {
  static constexpr bool value = false;
};
template <typename T, int N>
struct vec_traits<vec<T, N>> {
  static constexpr bool value = true;
  typedef vec<T, N> type;
  typedef T elem;
  static constexpr int size = N;
};
template <typename T, int Slots, typename V, int... I>
struct vec_traits<swizzle<T, Slots, V, I...>> {
  static constexpr bool value = true;
  typedef V type;
  typedef T elem;
  static constexpr int size = sizeof...(I);
};

}  // namespace detail

template <typename X>
inline constexpr bool is_vec_v = detail::vec_traits<detail::remove_cv_t<X>>::value;
/** The vector type of a vector or swizzle. */
template <typename X>
using vec_t = typename detail::vec_traits<detail::remove_cv_t<X>>::type;

// The operators every vector has: hidden friends of a base class that vec<T, N> derives from,
// found through the vector type or a swizzle of it (the base is an associated class), so
// that a scalar operand converts to the element type. One definition serves N = 2, 3, 4:
// NVRTC parses them once rather than per size.
// A scalar operand of any arithmetic or half type converts to the element type first (as in
// Metal, where `half4 * 2.0f` is a half4): templates, so that they beat the vector operator
// reached by broadcasting the scalar.
#define KILN_SCALAR_OK(S) \
  template <typename S, detail::enable_if_t<detail::half_convertible_v<S>, int> = 0>
#define KILN_VEC_BINARY(op)                                   \
  friend KILN_HD V operator op(const V& a, const V& b) {      \
    V r;                                                      \
    for (int i = 0; i < N; ++i) r.d_[i] = a.d_[i] op b.d_[i]; \
    return r;                                                 \
  }                                                           \
  KILN_SCALAR_OK(S)                                           \
  friend KILN_HD V operator op(const V& a, S s) {             \
    const T t = static_cast<T>(s);                            \
    V r;                                                      \
    for (int i = 0; i < N; ++i) r.d_[i] = a.d_[i] op t;       \
    return r;                                                 \
  }                                                           \
  KILN_SCALAR_OK(S)                                           \
  friend KILN_HD V operator op(S s, const V& b) {             \
    const T t = static_cast<T>(s);                            \
    V r;                                                      \
    for (int i = 0; i < N; ++i) r.d_[i] = t op b.d_[i];       \
    return r;                                                 \
  }                                                           \
  friend KILN_HD V& operator op##=(V& a, const V& b) {        \
    for (int i = 0; i < N; ++i) a.d_[i] = a.d_[i] op b.d_[i]; \
    return a;                                                 \
  }                                                           \
  KILN_SCALAR_OK(S)                                           \
  friend KILN_HD V& operator op##=(V& a, S s) {               \
    const T t = static_cast<T>(s);                            \
    for (int i = 0; i < N; ++i) a.d_[i] = a.d_[i] op t;       \
    return a;                                                 \
  }

#define KILN_VEC_COMPARE(op)                                        \
  friend KILN_HD vec<bool, N> operator op(const V& a, const V& b) { \
    vec<bool, N> r;                                                 \
    for (int i = 0; i < N; ++i) r[i] = a.d_[i] op b.d_[i];          \
    return r;                                                       \
  }                                                                 \
  KILN_SCALAR_OK(S)                                                 \
  friend KILN_HD vec<bool, N> operator op(const V& a, S s) {        \
    const T t = static_cast<T>(s);                                  \
    vec<bool, N> r;                                                 \
    for (int i = 0; i < N; ++i) r[i] = a.d_[i] op t;                \
    return r;                                                       \
  }                                                                 \
  KILN_SCALAR_OK(S)                                                 \
  friend KILN_HD vec<bool, N> operator op(S s, const V& b) {        \
    const T t = static_cast<T>(s);                                  \
    vec<bool, N> r;                                                 \
    for (int i = 0; i < N; ++i) r[i] = t op b.d_[i];                \
    return r;                                                       \
  }

namespace detail {

template <typename T, int N>
struct vec_ops {
  typedef vec<T, N> V;
  KILN_VEC_BINARY(+)
  KILN_VEC_BINARY(-)
  KILN_VEC_BINARY(*)
  KILN_VEC_BINARY(/)
  KILN_VEC_BINARY(%)
  KILN_VEC_BINARY(&)
  KILN_VEC_BINARY(|)
  KILN_VEC_BINARY(^)
  KILN_VEC_BINARY(<<)
  KILN_VEC_BINARY(>>)
  KILN_VEC_COMPARE(==)
  KILN_VEC_COMPARE(!=)
  KILN_VEC_COMPARE(<)
  KILN_VEC_COMPARE(<=)
  KILN_VEC_COMPARE(>)
  KILN_VEC_COMPARE(>=)
  KILN_VEC_COMPARE(&&)
  KILN_VEC_COMPARE(||)
  friend KILN_HD V operator-(const V& a) {
    V r;
    for (int i = 0; i < N; ++i) r.d_[i] = -a.d_[i];
    return r;
  }
  friend KILN_HD V operator+(const V& a) { return a; }
  friend KILN_HD V operator~(const V& a) {
    V r;
    for (int i = 0; i < N; ++i) r.d_[i] = ~a.d_[i];
    return r;
  }
  friend KILN_HD vec<bool, N> operator!(const V& a) {
    vec<bool, N> r;
    for (int i = 0; i < N; ++i) r[i] = !a.d_[i];
    return r;
  }
};

}  // namespace detail

#define KILN_VEC_COMMON(N_)                                                     \
  static constexpr int N = N_;                                                  \
  typedef T value_type;                                                         \
  vec() = default;                                                              \
  /* Between element types conversions are explicit, as in Metal. */            \
  template <typename U, detail::enable_if_t<!detail::is_same_v<U, T>, int> = 0> \
  KILN_HD explicit vec(const vec<U, N_>& o) {                                   \
    for (int i = 0; i < N; ++i) d_[i] = static_cast<T>(o[i]);                   \
  }                                                                             \
  template <typename U>                                                         \
  KILN_HD explicit vec(const packed_vec<U, N_>& o) {                            \
    for (int i = 0; i < N; ++i) d_[i] = static_cast<T>(o[i]);                   \
  }                                                                             \
  /* A scalar of another type broadcasts, converted to T (float4 v = 1;). */     \
  template <typename S, detail::enable_if_t<!detail::is_same_v<S, T> &&         \
                                                detail::half_convertible_v<S>,  \
                                            int> = 0>                           \
  KILN_HD constexpr vec(S s) : vec(static_cast<T>(s)) {}                        \
  KILN_HD T& operator[](int i) {                                                \
    return d_[i];                                                               \
  }                                                                             \
  KILN_HD const T& operator[](int i) const {                                    \
    return d_[i];                                                               \
  }

// Swizzle members over S slots, converting to a 2-, 3- or 4-vector.
#define KILN_SW2(S, name, a, b) detail::swizzle<T, S, vec<T, 2>, a, b> name;
#define KILN_SW3(S, name, a, b, c) detail::swizzle<T, S, vec<T, 3>, a, b, c> name;
#define KILN_SW4(S, name, a, b, c, d) detail::swizzle<T, S, vec<T, 4>, a, b, c, d> name;

template <typename T>
struct alignas(detail::vec_align_v<T, 2>) vec<T, 2> : detail::vec_ops<T, 2> {
  union {
    T d_[2];
    struct {
      T x, y;
    };
    struct {
      T r, g;
    };
    KILN_SW2(2, xx, 0, 0)
    KILN_SW2(2, xy, 0, 1) KILN_SW2(2, yx, 1, 0) KILN_SW2(2, yy, 1, 1) KILN_SW2(2, rg, 0, 1)
  };
  KILN_HD constexpr vec(T s) : d_{s, s} {}
  KILN_HD constexpr vec(T a, T b) : d_{a, b} {}
  KILN_VEC_COMMON(2)
};

template <typename T>
struct alignas(detail::vec_align_v<T, 3>) vec<T, 3> : detail::vec_ops<T, 3> {
  static_assert(sizeof(vec<T, 2>) > 0, "instantiates the vectors swizzles convert to");
  union {
    T d_[4];
    struct {
      T x, y, z;
    };
    struct {
      T r, g, b;
    };
    KILN_SW2(4, xx, 0, 0)
    KILN_SW2(4, xy, 0, 1) KILN_SW2(4, xz, 0, 2) KILN_SW2(4, yx, 1, 0) KILN_SW2(4, yy, 1, 1)
        KILN_SW2(4, yz, 1, 2) KILN_SW2(4, zx, 2, 0) KILN_SW2(4, zy, 2, 1) KILN_SW2(4, zz, 2, 2)
            KILN_SW3(4, xyz, 0, 1, 2) KILN_SW3(4, xzy, 0, 2, 1) KILN_SW3(4, yxz, 1, 0, 2)
                KILN_SW3(4, yzx, 1, 2, 0) KILN_SW3(4, zxy, 2, 0, 1) KILN_SW3(4, zyx, 2, 1, 0)
                    KILN_SW3(4, xxx, 0, 0, 0) KILN_SW2(4, rg, 0, 1) KILN_SW3(4, rgb, 0, 1, 2)
  };
  KILN_HD constexpr vec(T s) : d_{s, s, s, T()} {}
  KILN_HD constexpr vec(T a, T b, T c) : d_{a, b, c, T()} {}
  KILN_HD constexpr vec(const vec<T, 2>& ab, T c) : d_{ab[0], ab[1], c, T()} {}
  KILN_HD constexpr vec(T a, const vec<T, 2>& bc) : d_{a, bc[0], bc[1], T()} {}
  KILN_VEC_COMMON(3)
};

template <typename T>
struct alignas(detail::vec_align_v<T, 4>) vec<T, 4> : detail::vec_ops<T, 4> {
  static_assert(sizeof(vec<T, 2>) > 0 && sizeof(vec<T, 3>) > 0,
                "instantiates the vectors swizzles convert to");
  union {
    T d_[4];
    struct {
      T x, y, z, w;
    };
    struct {
      T r, g, b, a;
    };
    KILN_SW2(4, xx, 0, 0)
    KILN_SW2(4, xy, 0, 1) KILN_SW2(4, xz, 0, 2) KILN_SW2(4, xw, 0, 3) KILN_SW2(4, yx, 1, 0)
        KILN_SW2(4, yy, 1, 1) KILN_SW2(4, yz, 1, 2) KILN_SW2(4, yw, 1, 3) KILN_SW2(4, zx, 2, 0)
            KILN_SW2(4, zy, 2, 1) KILN_SW2(4, zz, 2, 2) KILN_SW2(4, zw, 2, 3) KILN_SW2(4, wx, 3, 0)
                KILN_SW2(4, wy, 3, 1) KILN_SW2(4, wz, 3, 2) KILN_SW2(4, ww, 3, 3)
                    KILN_SW3(4, xyz, 0, 1, 2) KILN_SW3(4, yzw, 1, 2, 3) KILN_SW3(4, xyw, 0, 1, 3)
                        KILN_SW3(4, xzw, 0, 2, 3) KILN_SW3(4, zyx, 2, 1, 0)
                            KILN_SW3(4, wzy, 3, 2, 1) KILN_SW4(4, xyzw, 0, 1, 2, 3)
                                KILN_SW4(4, wzyx, 3, 2, 1, 0) KILN_SW4(4, yzwx, 1, 2, 3, 0)
                                    KILN_SW4(4, zwxy, 2, 3, 0, 1) KILN_SW4(4, wxyz, 3, 0, 1, 2)
                                        KILN_SW4(4, xxxx, 0, 0, 0, 0) KILN_SW2(4, rg, 0, 1)
                                            KILN_SW3(4, rgb, 0, 1, 2) KILN_SW4(4, rgba, 0, 1, 2, 3)
  };
  KILN_HD constexpr vec(T s) : d_{s, s, s, s} {}
  KILN_HD constexpr vec(T a, T b, T c, T d) : d_{a, b, c, d} {}
  KILN_HD constexpr vec(const vec<T, 2>& ab, T c, T d) : d_{ab[0], ab[1], c, d} {}
  KILN_HD constexpr vec(T a, const vec<T, 2>& bc, T d) : d_{a, bc[0], bc[1], d} {}
  KILN_HD constexpr vec(T a, T b, const vec<T, 2>& cd) : d_{a, b, cd[0], cd[1]} {}
  KILN_HD constexpr vec(const vec<T, 2>& ab, const vec<T, 2>& cd)
      : d_{ab[0], ab[1], cd[0], cd[1]} {}
  KILN_HD constexpr vec(const vec<T, 3>& abc, T d) : d_{abc[0], abc[1], abc[2], d} {}
  KILN_HD constexpr vec(T a, const vec<T, 3>& bcd) : d_{a, bcd[0], bcd[1], bcd[2]} {}
  KILN_VEC_COMMON(4)
};

#undef KILN_SW2
#undef KILN_SW3
#undef KILN_SW4
#undef KILN_VEC_COMMON
#undef KILN_VEC_BINARY
#undef KILN_VEC_COMPARE
#undef KILN_SCALAR_OK

// Metal's vector names.
#define KILN_VEC_NAMES(T, name) \
  typedef vec<T, 2> name##2;    \
  typedef vec<T, 3> name##3;    \
  typedef vec<T, 4> name##4;
KILN_VEC_NAMES(float, float)
KILN_VEC_NAMES(half, half)
KILN_VEC_NAMES(bfloat, bfloat)
KILN_VEC_NAMES(int, int)
KILN_VEC_NAMES(uint, uint)
KILN_VEC_NAMES(short, short)
KILN_VEC_NAMES(ushort, ushort)
KILN_VEC_NAMES(char, char)
KILN_VEC_NAMES(uchar, uchar)
KILN_VEC_NAMES(int64_t, long)
KILN_VEC_NAMES(ulong, ulong)
KILN_VEC_NAMES(bool, bool)
#undef KILN_VEC_NAMES

#ifndef KILN_JIT  // checked by the host compiler only: instantiating them costs NVRTC ~5 ms
static_assert(sizeof(float3) == 16 && alignof(float3) == 16, "Metal's float3 layout");
static_assert(sizeof(half4) == 8 && sizeof(bool2) == 2, "Metal's vector layouts");
#endif

}  // namespace metal
