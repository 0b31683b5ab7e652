// Per-element functions of the binary primitives (both inputs of one type), as function
// objects for backend/cpu/binary.cpp. Same conventions as unary_ops.h: call operators are
// constrained to exact C++ types; float16/bfloat16 compute in float.
//
// Integer results are defined everywhere, where C++ leaves some undefined: arithmetic
// wraps, x // 0 and x % 0 give 0, INT_MIN // -1 wraps to INT_MIN, and shift counts outside
// [0, bits) shift every bit out.
#pragma once

#include <cmath>
#include <numbers>

#include "kiln/backend/cpu/unary_ops.h"

namespace kiln::cpu::fn {

// Unsigned arithmetic of at least int's width: wraps instead of overflowing.
template <Integer T>
using Wide = std::make_unsigned_t<decltype(+T{})>;

// ---------------------------------------------------------------- arithmetic

struct Add {
  /** Rounds once per element: loops may be compiled per ISA (elementwise.h). */
  static constexpr bool one_rounding = true;
  template <Integer T>
  T operator()(T a, T b) const {
    return static_cast<T>(Wide<T>(a) + Wide<T>(b));
  }
  template <Bool T>
  bool operator()(T a, T b) const {
    return a | b;
  }
  template <Inexact T>
  T operator()(T a, T b) const {
    return a + b;
  }
};

struct Subtract {
  static constexpr bool one_rounding = true;
  template <Integer T>
  T operator()(T a, T b) const {
    return static_cast<T>(Wide<T>(a) - Wide<T>(b));
  }
  template <Inexact T>
  T operator()(T a, T b) const {
    return a - b;
  }
};

struct Multiply {
  static constexpr bool one_rounding = true;
  template <Integer T>
  T operator()(T a, T b) const {
    return static_cast<T>(Wide<T>(a) * Wide<T>(b));
  }
  template <Bool T>
  bool operator()(T a, T b) const {
    return a & b;
  }
  template <Inexact T>
  T operator()(T a, T b) const {
    return a * b;
  }
};

struct Divide {
  static constexpr bool one_rounding = true;
  template <Inexact T>
  T operator()(T a, T b) const {
    return a / b;
  }
};

/** Python's a // b. Floats follow NumPy's divmod so that a == b * (a // b) + a % b holds
 * as closely as rounding allows: (a - fmod(a, b)) / b is an exact integer before rounding. */
struct FloorDivide {
  template <Integer T>
  T operator()(T a, T b) const {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return wrapping_negate(a);  // INT_MIN / -1 overflows (and traps on x86)
      T q = static_cast<T>(a / b);
      return (a % b != 0 && (a < 0) != (b < 0)) ? static_cast<T>(q - 1) : q;
    } else {
      return static_cast<T>(a / b);
    }
  }
  template <Bool T>
  bool operator()(T a, T b) const {
    return a & b;
  }
  template <Float T>
  T operator()(T a, T b) const {
    if (b == 0) return a / b;  // +-inf or NaN
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return std::copysign(T(0), a / b);
    T q = std::floor(div);
    return div - q > T(0.5) ? q + 1 : q;
  }
};

/** Python's a % b: the result has the sign of b (0 takes b's sign too, for floats). */
struct Remainder {
  template <Integer T>
  T operator()(T a, T b) const {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;  // INT_MIN % -1 overflows
      T r = static_cast<T>(a % b);
      return (r != 0 && (r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
    } else {
      return static_cast<T>(a % b);
    }
  }
  template <Bool T>
  bool operator()(T, T) const {
    return false;
  }
  template <Float T>
  T operator()(T a, T b) const {
    T mod = std::fmod(a, b);  // NaN for b == 0
    if (mod == 0) return std::copysign(T(0), b);
    return (b < 0) != (mod < 0) ? mod + b : mod;
  }
};

/** a ** b. Integers: square-and-multiply with wrap-around; a negative exponent gives the
 * exact result truncated toward zero (1 ** -n = 1, (-1) ** -n = +-1, otherwise 0, and 0
 * for 0 ** -n, where NumPy raises). */
struct Power {
  template <Integer T>
  T operator()(T base, T exp) const {
    // A negative exponent gives 0 for every base, as MLX does (NumPy raises instead).
    if constexpr (std::is_signed_v<T>) {
      if (exp < 0) return 0;
    }
    Wide<T> result = 1, b = static_cast<Wide<T>>(base);
    for (auto e = static_cast<Wide<T>>(exp); e != 0; e >>= 1) {
      if (e & 1) result *= b;
      b *= b;
    }
    return static_cast<T>(result);
  }
  template <Bool T>
  bool operator()(T a, T b) const {
    return a | !b;
  }
  template <Inexact T>
  T operator()(T a, T b) const {
    // x ** 2 as x * x, as NumPy's scalar fast path: one correctly rounded product (a library
    // pow is a call of tens of nanoseconds per element).
    if constexpr (Float<T>) {
      if (b == T(2)) return a * a;
    }
    return std::pow(a, b);
  }
};

// NaN in either input gives NaN (NumPy's maximum/minimum); `|` avoids a branch.
struct Maximum {
  static constexpr bool one_rounding = true;
  template <RealOrBool T>
  T operator()(T a, T b) const {
    return (a > b) | (a != a) ? a : b;
  }
};
struct Minimum {
  static constexpr bool one_rounding = true;
  template <RealOrBool T>
  T operator()(T a, T b) const {
    return (a < b) | (a != a) ? a : b;
  }
};

struct ArcTan2 {
  template <Float T>
  T operator()(T a, T b) const {
    return std::atan2(a, b);
  }
};

/** log(e^a + e^b) = max + log1p(e^-|a - b|); equal inputs (also equal infinities) give
 * a + log 2, and a NaN input gives NaN. */
struct LogAddExp {
  template <Float T>
  T operator()(T a, T b) const {
    if (a == b) return a + T(std::numbers::ln2);
    const T d = a - b;
    if (d > 0) return a + std::log1p(std::exp(-d));
    if (d <= 0) return b + std::log1p(std::exp(d));
    return d;  // NaN
  }
};

// ---------------------------------------------------------------- comparisons

struct Equal {
  static constexpr bool one_rounding = true;
  template <Number T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
/** Equal, with two NaNs (a complex NaN has a NaN part) also equal. */
struct EqualNaN {
  template <Number T>
  bool operator()(T a, T b) const {
    return (a == b) | (IsNaN{}(a)&IsNaN{}(b));
  }
};
struct NotEqual {
  static constexpr bool one_rounding = true;
  template <Number T>
  bool operator()(T a, T b) const {
    return a != b;
  }
};
struct Less {
  static constexpr bool one_rounding = true;
  template <RealOrBool T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessEqual {
  static constexpr bool one_rounding = true;
  template <RealOrBool T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct Greater {
  static constexpr bool one_rounding = true;
  template <RealOrBool T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterEqual {
  static constexpr bool one_rounding = true;
  template <RealOrBool T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};

// ---------------------------------------------------------------- logic and bits

struct LogicalAnd {
  template <Bool T>
  bool operator()(T a, T b) const {
    return a & b;
  }
};
struct LogicalOr {
  template <Bool T>
  bool operator()(T a, T b) const {
    return a | b;
  }
};

struct BitwiseAnd {
  template <Integral T>
  T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct BitwiseOr {
  template <Integral T>
  T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct BitwiseXor {
  template <Integral T>
  T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};

/** Whether a shift by `b` keeps any bit of a T. */
template <Integer T>
bool shift_in_range(T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b < 0) return false;
  }
  return static_cast<uint64_t>(b) < sizeof(T) * 8;
}

struct LeftShift {
  template <Integer T>
  T operator()(T a, T b) const {
    return shift_in_range(b) ? static_cast<T>(Wide<T>(a) << b) : T(0);
  }
};

/** Arithmetic shift for signed types: a negative value shifted out entirely gives -1. */
struct RightShift {
  template <Integer T>
  T operator()(T a, T b) const {
    if (shift_in_range(b)) return static_cast<T>(a >> b);
    if constexpr (std::is_signed_v<T>)
      return a < 0 ? T(-1) : T(0);
    else
      return T(0);
  }
};

}  // namespace kiln::cpu::fn
