// Building blocks of the reduction kernels (reduce.cuh, reduce_softmax.cuh, scan.cuh):
// numeric limits, warp shuffles of any type, the combine operations with the CPU backend's
// semantics (kiln/backend/cpu/reduce_utils.h), and the policies a kernel folds with.
//
// A policy P says how a kernel turns input elements into a result:
//   P::in_type, P::acc_type, P::out_type
//   P::init()              the neutral accumulator
//   P::fold(acc, x, j)     folds element x, at position j along the reduced run
//   P::combine(a, b)       merges two accumulators (any order for Reduce; ArgReduce breaks
//                          ties by position, so its result is order-independent too)
//   P::finish(acc)         the output value
#pragma once

#include "kiln/backend/cuda/device/cast.cuh"
#include "kiln/backend/cuda/device/complex.cuh"
#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln {

// ---------------------------------------------------------------- limits

/** lowest() and max() of the element types: infinities for floating types. */
template <typename T>
struct NumericLimits;

#define KILN_INT_LIMITS(T, LO, HI)                 \
  template <>                                      \
  struct NumericLimits<T> {                        \
    __device__ static T lowest() { return T(LO); } \
    __device__ static T max() { return T(HI); }    \
  };
KILN_INT_LIMITS(bool, false, true)
KILN_INT_LIMITS(uint8, 0, 0xff)
KILN_INT_LIMITS(uint16, 0, 0xffff)
KILN_INT_LIMITS(uint32, 0u, 0xffffffffu)
KILN_INT_LIMITS(uint64, 0ull, 0xffffffffffffffffull)
KILN_INT_LIMITS(int8, -128, 127)
KILN_INT_LIMITS(int16, -32768, 32767)
KILN_INT_LIMITS(int32, -2147483647 - 1, 2147483647)
KILN_INT_LIMITS(int64, -9223372036854775807ll - 1, 9223372036854775807ll)
#undef KILN_INT_LIMITS

template <>
struct NumericLimits<float> {
  __device__ static float lowest() { return -__int_as_float(0x7f800000); }
  __device__ static float max() { return __int_as_float(0x7f800000); }
};
template <>
struct NumericLimits<double> {
  __device__ static double lowest() { return -__longlong_as_double(0x7ff0000000000000ll); }
  __device__ static double max() { return __longlong_as_double(0x7ff0000000000000ll); }
};

/** complex64 orders lexicographically (real part, then imaginary), as NumPy and MLX. */
template <>
struct NumericLimits<complex64> {
  __device__ static complex64 lowest() {
    const float inf = __int_as_float(0x7f800000);
    return {-inf, -inf};
  }
  __device__ static complex64 max() {
    const float inf = __int_as_float(0x7f800000);
    return {inf, inf};
  }
};
__device__ inline bool operator>(complex64 a, complex64 b) {
  return a.re > b.re || (a.re == b.re && a.im > b.im);
}
__device__ inline bool operator<(complex64 a, complex64 b) {
  return a.re < b.re || (a.re == b.re && a.im < b.im);
}

template <typename T>
__device__ inline bool is_nan(T v) {
  if constexpr (is_same_v<T, float> || is_same_v<T, double>)
    return v != v;
  else if constexpr (is_half_v<T>)
    return float(v) != float(v);
  else if constexpr (is_complex_v<T>)
    return v.re != v.re || v.im != v.im;
  else
    return false;
}

// ---------------------------------------------------------------- shuffles

/** __shfl_xor_sync of any trivially copyable value, 32 bits at a time. */
template <typename T>
__device__ inline T shfl_xor(T v, int mask) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  union {
    T t;
    unsigned int w[kWords];
  } x;
  x.t = v;
#pragma unroll
  for (int i = 0; i < kWords; ++i) x.w[i] = __shfl_xor_sync(0xffffffffu, x.w[i], mask);
  return x.t;
}

/** The combination of `acc` over the 32 lanes of a warp, in every lane. */
template <typename P, typename Acc>
__device__ inline Acc warp_combine(Acc acc) {
#pragma unroll
  for (int m = 16; m > 0; m /= 2) acc = P::combine(acc, shfl_xor(acc, m));
  return acc;
}

// ---------------------------------------------------------------- combine operations
// identity<Acc>() and apply(acc, x), as the CPU's SumOp, ProdOp, MaxOp, MinOp, AndOp, OrOp.

struct SumOp {
  template <typename T>
  __device__ static T identity() {
    if constexpr (is_complex_v<T>)
      return complex64{0.0f, 0.0f};
    else
      return T(0);
  }
  template <typename T>
  __device__ static T apply(T a, T x) {
    return a + x;
  }
};

struct ProdOp {
  template <typename T>
  __device__ static T identity() {
    if constexpr (is_complex_v<T>)
      return complex64{1.0f, 0.0f};
    else
      return T(1);
  }
  template <typename T>
  __device__ static T apply(T a, T x) {
    return a * x;
  }
};

// NaN propagates: once acc is NaN no comparison replaces it, and a NaN x always does.
struct MaxOp {
  template <typename T>
  __device__ static T identity() {
    return NumericLimits<T>::lowest();
  }
  template <typename T>
  __device__ static T apply(T a, T x) {
    return (x > a || is_nan(x)) ? x : a;
  }
};

struct MinOp {
  template <typename T>
  __device__ static T identity() {
    return NumericLimits<T>::max();
  }
  template <typename T>
  __device__ static T apply(T a, T x) {
    return (x < a || is_nan(x)) ? x : a;
  }
};

/** log(exp(a) + exp(x)) for floating accumulators (logcumsumexp); NaN propagates. */
struct LogAddExpOp {
  template <typename T>
  __device__ static T identity() {
    if constexpr (is_complex_v<T>)
      return complex64{-__int_as_float(0x7f800000), 0.0f};
    else
      return NumericLimits<T>::lowest();
  }
  template <typename T>
  __device__ static T apply(T a, T x) {
    if (is_nan(a) || is_nan(x)) return a + x;
    if constexpr (is_complex_v<T>) {
      // log(e^a + e^x) = m + log(1 + e^(o - m)), m the one with the larger real part.
      const bool a_big = a.re >= x.re;
      const complex64 m = a_big ? a : x, o = a_big ? x : a;
      const float inf = __int_as_float(0x7f800000);
      if (m.re == -inf || m.re == inf) return m;
      return m + clog1p(cexp(o - m));
    } else {
      const T m = a > x ? a : x;
      // Equal infinities (and -inf with anything) are exact: their difference would be NaN.
      if (m == NumericLimits<T>::lowest() || m == NumericLimits<T>::max()) return m;
      return m + log1p(exp(a > x ? x - a : a - x));
    }
  }
};

struct AndOp {
  template <typename T>
  __device__ static T identity() {
    return true;
  }
  template <typename T>
  __device__ static T apply(T a, T x) {
    return a && x;
  }
};

struct OrOp {
  template <typename T>
  __device__ static T identity() {
    return false;
  }
  template <typename T>
  __device__ static T apply(T a, T x) {
    return a || x;
  }
};

/** An input element in the accumulator type: bool tests against zero, half types widen
 * through float, integers convert (wrapping into the unsigned accumulators). */
template <typename Acc, typename In>
__device__ inline Acc to_acc(In x) {
  if constexpr (is_same_v<Acc, bool>)
    return cast<bool>(x);
  else if constexpr (is_half_v<In>)
    return static_cast<Acc>(float(x));
  else
    return static_cast<Acc>(x);
}

namespace reduce_detail {

template <typename T>
struct SignedOf {
  using type = T;
};
template <>
struct SignedOf<unsigned int> {
  using type = int;
};
template <>
struct SignedOf<unsigned long long> {
  using type = long long;
};

template <typename T>
inline constexpr bool is_signed_integer_v =
    is_same_v<T, int8> || is_same_v<T, int16> || is_same_v<T, int32> || is_same_v<T, int64>;
// The accumulators in which integer sums and products wrap.
template <typename T>
inline constexpr bool is_wrapping_v = is_same_v<T, uint32> || is_same_v<T, uint64>;

/** Half types compare and accumulate in float. */
template <typename T>
struct Widen {
  using type = T;
};
template <>
struct Widen<float16> {
  using type = float;
};
template <>
struct Widen<bfloat16> {
  using type = float;
};

}  // namespace reduce_detail

/** An accumulator in the output type. Signed integers accumulate in the unsigned type of the
 * same width; reading back through the signed type gives the two's-complement result. */
template <typename Out, typename In, typename Acc>
__device__ inline Out to_out(Acc a) {
  if constexpr (reduce_detail::is_wrapping_v<Acc> && reduce_detail::is_signed_integer_v<In>) {
    return static_cast<Out>(static_cast<typename reduce_detail::SignedOf<Acc>::type>(a));
  } else if constexpr (is_half_v<Out>) {
    return Out(static_cast<float>(a));
  } else {
    return static_cast<Out>(a);
  }
}

// ---------------------------------------------------------------- policies

/** Reduce: folds `Op` over In elements in Acc and writes Out (the host picks the types as
 * cpu::SumTypes and reduce.cpp do). */
template <typename Op, typename In, typename Acc, typename Out>
struct ReducePolicy {
  using in_type = In;
  using acc_type = Acc;
  using out_type = Out;
  __device__ static Acc init() { return Op::template identity<Acc>(); }
  __device__ static Acc fold(Acc a, In x, long long) { return Op::apply(a, to_acc<Acc>(x)); }
  __device__ static Acc combine(Acc a, Acc b) { return Op::apply(a, b); }
  __device__ static Out finish(Acc a) { return to_out<Out, In>(a); }
};

/** The best value so far and its position; `i` == kNoIndex before the first element. */
template <typename V>
struct ArgAcc {
  V v;
  unsigned int i;
};

/** ArgReduce: the position (uint32) of the first maximum (Max) or minimum; NaN counts as
 * the extreme value, so the first NaN wins (NumPy). */
template <bool Max, typename In>
struct ArgReducePolicy {
  using V = typename reduce_detail::Widen<In>::type;
  using in_type = In;
  using acc_type = ArgAcc<V>;
  using out_type = unsigned int;
  static constexpr unsigned int kNoIndex = 0xffffffffu;

  __device__ static acc_type init() { return {V(0), kNoIndex}; }
  __device__ static acc_type combine(acc_type a, acc_type b) {
    if (a.i == kNoIndex) return b;
    if (b.i == kNoIndex) return a;
    const bool na = is_nan(a.v), nb = is_nan(b.v);
    bool a_wins;
    if (na || nb)
      a_wins = na && (!nb || a.i < b.i);
    else if (Max ? a.v > b.v : a.v < b.v)
      a_wins = true;
    else if (Max ? b.v > a.v : b.v < a.v)
      a_wins = false;
    else
      a_wins = a.i < b.i;
    return a_wins ? a : b;
  }
  __device__ static acc_type fold(acc_type a, In x, long long j) {
    return combine(a, {static_cast<V>(x), static_cast<unsigned int>(j)});
  }
  __device__ static unsigned int finish(acc_type a) { return a.i == kNoIndex ? 0u : a.i; }
};

}  // namespace kiln
