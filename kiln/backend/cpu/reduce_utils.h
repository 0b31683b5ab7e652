// Helpers shared by the reduction kernels (reduce.cpp): the split of an input's dimensions
// into kept and reduced ones in memory order, an odometer over strided positions, and the
// combine operations with their identities.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <vector>

#include "kiln/array.h"
#include "kiln/scalar_cast.h"

namespace kiln::cpu {

/**
 * How a reduction walks its input. Kept and reduced dimensions are each listed outermost
 * first in memory order (not axis order), with size-1 dimensions dropped and neighbours
 * that are contiguous with each other merged, so a dense input of any permutation reduces
 * over as few, as long runs as possible.
 */
struct ReducePlan {
  Shape kept_shape;
  Strides kept_in, kept_out;  // input and output strides of the kept dimensions
  Shape red_shape;            // never empty: a lone {1} when nothing is reduced
  Strides red_in;
  int64_t kept_size = 1, red_size = 1;
  // The innermost dimension in memory is a reduced one: each output reduces runs along
  // it. Otherwise the innermost is kept, and whole rows of outputs accumulate together.
  bool rows = true;
};

/** The plan for reducing `in` over `axes` into a row-contiguous keepdims output. */
inline ReducePlan make_reduce_plan(const array& in, const std::vector<int>& axes) {
  struct Dim {
    int32_t n;
    int64_t in, out;
    bool reduced;
  };
  const Shape& shape = in.shape();
  const int nd = static_cast<int>(shape.size());
  Shape out_shape = shape;
  for (int ax : axes) out_shape[ax] = 1;
  Strides out_strides = array::row_major_strides(out_shape);
  std::vector<Dim> dims;
  for (int i = 0; i < nd; ++i) {
    if (shape[i] == 1) continue;
    bool red = std::find(axes.begin(), axes.end(), i) != axes.end();
    dims.push_back({shape[i], in.strides()[i], red ? 0 : out_strides[i], red});
  }
  // Broadcast (zero-stride) dimensions go outermost: iterating them innermost would reread
  // one element instead of streaming memory.
  auto key = [](int64_t s) { return s == 0 ? std::numeric_limits<int64_t>::max() : std::abs(s); };
  std::stable_sort(dims.begin(), dims.end(),
                   [&](const Dim& a, const Dim& b) { return key(a.in) > key(b.in); });

  // Merged sizes stay within Shape's int32 (arrays past 2^31 elements keep more dims).
  auto fits = [](int64_t a, int64_t b) { return a * b <= std::numeric_limits<int32_t>::max(); };
  ReducePlan p;
  for (const Dim& d : dims) {
    if (d.reduced) {
      if (!p.red_shape.empty() && p.red_in.back() == d.in * d.n && fits(p.red_shape.back(), d.n)) {
        p.red_shape.back() *= d.n;
        p.red_in.back() = d.in;
      } else {
        p.red_shape.push_back(d.n);
        p.red_in.push_back(d.in);
      }
      p.red_size *= d.n;
    } else {
      if (!p.kept_shape.empty() && p.kept_in.back() == d.in * d.n &&
          p.kept_out.back() == d.out * d.n && fits(p.kept_shape.back(), d.n)) {
        p.kept_shape.back() *= d.n;
        p.kept_in.back() = d.in;
        p.kept_out.back() = d.out;
      } else {
        p.kept_shape.push_back(d.n);
        p.kept_in.push_back(d.in);
        p.kept_out.push_back(d.out);
      }
      p.kept_size *= d.n;
    }
  }
  if (p.red_shape.empty()) {
    p.red_shape.push_back(1);
    p.red_in.push_back(0);
    p.rows = true;
  } else {
    // Short runs (summing RGB channels, say) cost a call per output along rows; across
    // outputs the columns path folds them in one loop.
    p.rows = p.kept_shape.empty() ||
             (key(p.red_in.back()) < key(p.kept_in.back()) && p.red_shape.back() >= 16);
  }
  return p;
}

/** Walks the positions of `shape` in row-major order from `start`, tracking the element
 * offset of each of K stride sets. */
template <size_t K>
class Odometer {
 public:
  Odometer(const Shape& shape, std::array<const Strides*, K> strides, int64_t start = 0)
      : shape_(shape), strides_(strides), idx_(shape.size(), 0) {
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0 && start > 0; --i) {
      idx_[i] = static_cast<int32_t>(start % shape[i]);
      start /= shape[i];
      for (size_t k = 0; k < K; ++k) off_[k] += idx_[i] * (*strides_[k])[i];
    }
  }
  int64_t offset(size_t k) const { return off_[k]; }
  void next() {
    for (int i = static_cast<int>(shape_.size()) - 1; i >= 0; --i) {
      for (size_t k = 0; k < K; ++k) off_[k] += (*strides_[k])[i];
      if (++idx_[i] < shape_[i]) return;
      for (size_t k = 0; k < K; ++k) off_[k] -= shape_[i] * (*strides_[k])[i];
      idx_[i] = 0;
    }
  }

 private:
  const Shape& shape_;
  std::array<const Strides*, K> strides_;
  std::vector<int32_t> idx_;
  std::array<int64_t, K> off_{};
};

// ---------------------------------------------------------------- combine operations
// `apply(acc, x)` folds x into acc; `identity<T>()` is the neutral start.

template <typename T>
inline constexpr bool is_float_acc_v = std::is_floating_point_v<T> || is_complex_v<T>;

struct SumOp {
  template <typename T>
  static constexpr T identity() {
    return T(0);
  }
  template <typename T>
  static T apply(T acc, T x) {
    return acc + x;
  }
};

struct ProdOp {
  template <typename T>
  static constexpr T identity() {
    return T(1);
  }
  template <typename T>
  static T apply(T acc, T x) {
    return acc * x;
  }
};

/** complex64 orders lexicographically (real part, then imaginary), as NumPy and MLX. */
template <typename T>
inline bool complex_greater(T a, T b) {
  return a.real() > b.real() || (a.real() == b.real() && a.imag() > b.imag());
}
template <typename T>
inline bool complex_isnan(T a) {
  return a.real() != a.real() || a.imag() != a.imag();
}

// NaN propagates: once acc is NaN no comparison replaces it, and a NaN x always does.
// Written as a select so compilers vectorize it (max/min and an unordered compare).
struct MaxOp {
  template <typename T>
  static constexpr T identity() {
    if constexpr (is_complex_v<T>)
      return T(-std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity());
    else if constexpr (std::is_floating_point_v<T>)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }
  template <typename T>
  static T apply(T acc, T x) {
    if constexpr (is_complex_v<T>)
      return (complex_greater(x, acc) || complex_isnan(x)) ? x : acc;
    else if constexpr (std::is_floating_point_v<T>)
      return (x > acc || x != x) ? x : acc;
    else
      return x > acc ? x : acc;
  }
};

struct MinOp {
  template <typename T>
  static constexpr T identity() {
    if constexpr (is_complex_v<T>)
      return T(std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity());
    else if constexpr (std::is_floating_point_v<T>)
      return std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::max();
  }
  template <typename T>
  static T apply(T acc, T x) {
    if constexpr (is_complex_v<T>)
      return (complex_greater(acc, x) || complex_isnan(x)) ? x : acc;
    else if constexpr (std::is_floating_point_v<T>)
      return (x < acc || x != x) ? x : acc;
    else
      return x < acc ? x : acc;
  }
};

/** log(exp(acc) + exp(x)) for floating accumulators (logcumsumexp); NaN propagates. */
struct LogAddExpOp {
  template <typename T>
  static constexpr T identity() {
    if constexpr (is_complex_v<T>)
      return T(-std::numeric_limits<float>::infinity(), 0.0f);
    else
      return -std::numeric_limits<T>::infinity();
  }
  template <typename T>
  static T apply(T acc, T x) {
    if constexpr (is_complex_v<T>) {
      if (complex_isnan(acc) || complex_isnan(x)) return acc + x;
      // log(e^a + e^x) = m + log(1 + e^(o - m)), m the one with the larger real part.
      const bool acc_big = acc.real() >= x.real();
      const T m = acc_big ? acc : x, o = acc_big ? x : acc;
      if (std::isinf(m.real())) return m;
      return m + std::log(T(1) + std::exp(o - m));
    } else {
      if (acc != acc || x != x) return acc + x;
      const T m = std::max(acc, x);
      // Equal infinities (and -inf with anything) are exact: their difference would be NaN.
      if (std::isinf(m)) return m;
      return m + std::log1p(std::exp(-std::abs(acc - x)));
    }
  }
};

struct AndOp {
  template <typename T>
  static constexpr T identity() {
    return true;
  }
  template <typename T>
  static T apply(T acc, T x) {
    return acc && x;
  }
};

struct OrOp {
  template <typename T>
  static constexpr T identity() {
    return false;
  }
  template <typename T>
  static T apply(T acc, T x) {
    return acc || x;
  }
};

/** Accumulator and output types of sums and products of In: small integers widen to 32
 * bits (MLX), integers accumulate in the unsigned type of the output's width, half types
 * in float. */
template <typename In>
struct SumTypes {
  using Acc = std::conditional_t<
      is_float_acc_v<In>, In,
      std::conditional_t<is_half_v<In>, float,
                         std::conditional_t<sizeof(In) == 8, uint64_t, uint32_t>>>;
  using Out = std::conditional_t<
      is_float_acc_v<In> || is_half_v<In> || sizeof(In) == 8, In,
      std::conditional_t<std::is_unsigned_v<In> && !std::is_same_v<In, bool>, uint32_t, int32_t>>;
};

/** An input element in the accumulator type (half types through float; bool tests != 0). */
template <typename Acc, typename In>
inline Acc to_acc(In x) {
  if constexpr (std::is_same_v<Acc, bool>)
    return scalar_cast<bool>(x);
  else if constexpr (is_half_v<In>)
    return static_cast<Acc>(static_cast<float>(x));
  else
    return static_cast<Acc>(x);
}

/** An accumulator in the output type. Signed integers accumulate in the unsigned type of
 * the same width (wrapping is defined there); reading back through the signed type gives
 * the two's-complement result. */
template <typename Out, typename In, typename Acc>
inline Out to_out(Acc a) {
  if constexpr (std::is_integral_v<Acc> && !std::is_same_v<Acc, bool> && std::is_signed_v<In> &&
                std::is_integral_v<In>) {
    return static_cast<Out>(static_cast<std::make_signed_t<Acc>>(a));
  } else if constexpr (is_half_v<Out>) {
    return Out(static_cast<float>(a));
  } else {
    return static_cast<Out>(a);
  }
}

}  // namespace kiln::cpu
