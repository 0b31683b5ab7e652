// Helpers shared by the CPU kernels of the fused built-ins (fast_*.cpp): dtype dispatch,
// dense copies, and row loops written so that they vectorize (several partial sums, since
// a single float accumulator cannot be reordered without -ffast-math).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "kiln/array.h"
#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/simd_loops.h"
#include "kiln/backend/cpu/simd_math.h"
#include "kiln/half_types.h"
#include "kiln/utils.h"

namespace kiln::cpu::fast {

/** The accumulation type of T: double for double, else float. */
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

/** Calls f(T{}) with T the storage type of the floating dtype d. */
template <typename F>
void dispatch_float(Dtype d, const char* op, F&& f) {
  switch (d.val) {
    case Dtype::Val::float16:
      return f(float16_t{});
    case Dtype::Val::bfloat16:
      return f(bfloat16_t{});
    case Dtype::Val::float32:
      return f(float{});
    case Dtype::Val::float64:
      return f(double{});
    default:
      throw std::invalid_argument(msg("[", op, "] Unsupported dtype ", d, "."));
  }
}

/** `a` itself when row-contiguous, else a row-contiguous host copy. */
inline array dense(const array& a) {
  if (a.flags().row_contiguous) return a;
  array tmp(Storage::host(a.nbytes()), a.shape(), a.dtype());
  copy_inplace(a, tmp, CopyType::general);
  return tmp;
}

/** A row-contiguous host copy of `a` converted to `d` (no copy when it already is one). */
inline array dense_as(const array& a, Dtype d) {
  if (a.dtype() == d && a.flags().row_contiguous) return a;
  array tmp(Storage::host(a.size() * d.size), a.shape(), d);
  copy_inplace(a, tmp, a.flags().row_contiguous ? CopyType::vector : CopyType::general);
  return tmp;
}

/** exp in the accumulation type: exp_f32 (vectorizable) for float, std::exp for double. */
inline float exp_acc(float x) {
  return exp_f32(x);
}
inline double exp_acc(double x) {
  return std::exp(x);
}

/** A row into the accumulation type; float16/bfloat16 widen in vector code (simd_loops.h). */
template <typename T, typename A>
inline void load(const T* x, A* y, int64_t n) {
  if constexpr (is_half_v<T> && std::is_same_v<A, float>)
    widen_half(x, 1, y, n);
  else
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<A>(static_cast<Acc<T>>(x[i]));
}

/** A row back to its dtype; float to float16/bfloat16 rounds (to nearest even) in vector
 * code. */
template <typename A, typename T>
inline void store(const A* x, T* y, int64_t n) {
  if constexpr (is_half_v<T> && std::is_same_v<A, float>)
    narrow_half(x, y, 1, n);
  else
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(x[i]);
}

// Sums with 16 independent partial sums (vector registers of any width up to 512 bits).
template <typename A>
inline A sum(const A* x, int64_t n) {
  A p[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) p[j] += x[i + j];
  A s = 0;
  for (; i < n; ++i) s += x[i];
  for (int j = 0; j < 16; ++j) s += p[j];
  return s;
}

template <typename A>
inline A dot(const A* x, const A* y, int64_t n) {
  A p[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) p[j] += x[i + j] * y[i + j];
  A s = 0;
  for (; i < n; ++i) s += x[i] * y[i];
  for (int j = 0; j < 16; ++j) s += p[j];
  return s;
}

template <typename A>
inline A max(const A* x, int64_t n) {
  A m = -std::numeric_limits<A>::infinity();
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    nan |= x[i] != x[i];
    m = x[i] > m ? x[i] : m;
  }
  return nan ? std::numeric_limits<A>::quiet_NaN() : m;
}

/** The grain (rows per chunk) of parallel_for over rows of `n` elements: about 32K elements. */
inline size_t row_grain(int64_t, int64_t n) {
  return static_cast<size_t>(std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(n, 1)));
}

}  // namespace kiln::cpu::fast
