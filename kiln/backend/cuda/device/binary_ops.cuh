// Binary elementwise functors: one struct per primitive, named as the primitive (EqualNaN is
// Equal with equal_nan). Both operands have one type; the kernel converts the result to the
// output type. The semantics are the CPU backend's (kiln/backend/cpu/binary_ops.h): integer
// arithmetic wraps, x // 0 and x % 0 give 0, shift counts outside [0, bits) shift every bit
// out, and maximum/minimum propagate NaN.
//
// As for the unary functors, the kernels widen the half types to float first, so functors see
// bool, the integers, float, double and complex64.
#pragma once

#include "kiln/backend/cuda/device/complex.cuh"
#include "kiln/backend/cuda/device/unary_ops.cuh"

namespace kiln {

// ---------------------------------------------------------------- arithmetic

/** a + b; logical or for bool. */
struct Add {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (is_same_v<T, bool>)
      return a || b;
    else if constexpr (is_int_v<T>)
      return static_cast<T>(wide_t<T>(a) + wide_t<T>(b));
    else
      return a + b;
  }
};

struct Subtract {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_int_v<T> || is_inexact_v<T>, "Subtract takes integers, floats or complex64");
    if constexpr (is_int_v<T>)
      return static_cast<T>(wide_t<T>(a) - wide_t<T>(b));
    else
      return a - b;
  }
};

/** a * b; logical and for bool. */
struct Multiply {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (is_same_v<T, bool>)
      return a && b;
    else if constexpr (is_int_v<T>)
      return static_cast<T>(wide_t<T>(a) * wide_t<T>(b));
    else
      return a * b;
  }
};

struct Divide {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_inexact_v<T>, "Divide takes floats or complex64");
    return a / b;
  }
};

/** Python's a // b. Floats follow NumPy's divmod: (a - fmod(a, b)) / b is an exact integer
 * before rounding. */
struct FloorDivide {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_integral_v<T> || is_real_float_v<T>, "FloorDivide takes real types");
    if constexpr (is_same_v<T, bool>) {
      return a && b;
    } else if constexpr (is_int_v<T>) {
      if (b == 0) return 0;
      if constexpr (is_signed_int_v<T>) {
        if (b == -1) return static_cast<T>(wide_t<T>(0) - wide_t<T>(a));  // INT_MIN / -1 wraps
        const T q = static_cast<T>(a / b);
        return (a % b != 0 && (a < 0) != (b < 0)) ? static_cast<T>(q - 1) : q;
      } else {
        return static_cast<T>(a / b);
      }
    } else {
      if (b == 0) return a / b;  // +-inf or NaN
      const T mod = fmod(a, b);
      T div = (a - mod) / b;
      if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
      if (div == 0) return copysign(T(0), a / b);
      const T q = floor(div);
      return div - q > T(0.5) ? q + 1 : q;
    }
  }
};

/** Python's a % b: the sign of b (a zero takes b's sign too, for floats). */
struct Remainder {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_integral_v<T> || is_real_float_v<T>, "Remainder takes real types");
    if constexpr (is_same_v<T, bool>) {
      return false;
    } else if constexpr (is_int_v<T>) {
      if (b == 0) return 0;
      if constexpr (is_signed_int_v<T>) {
        if (b == -1) return 0;  // INT_MIN % -1 overflows
        const T r = static_cast<T>(a % b);
        return (r != 0 && (r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
      } else {
        return static_cast<T>(a % b);
      }
    } else {
      const T mod = fmod(a, b);  // NaN for b == 0
      if (mod == 0) return copysign(T(0), b);
      return (b < 0) != (mod < 0) ? mod + b : mod;
    }
  }
};

/** a ** b. Integers: square-and-multiply with wrap-around; a negative exponent gives the
 * exact result truncated toward zero (1, -1 or 0). */
struct Power {
  template <typename T>
  __device__ T operator()(T base, T exp) const {
    if constexpr (is_same_v<T, bool>) {
      return base || !exp;
    } else if constexpr (is_int_v<T>) {
      // A negative exponent gives 0 for every base, as MLX does.
      if constexpr (is_signed_int_v<T>) {
        if (exp < 0) return 0;
      }
      wide_t<T> result = 1, b = static_cast<wide_t<T>>(base);
      for (auto e = static_cast<wide_t<T>>(exp); e != 0; e >>= 1) {
        if (e & 1) result *= b;
        b *= b;
      }
      return static_cast<T>(result);
    } else if constexpr (is_complex_v<T>) {
      return cpow(base, exp);
    } else {
      return pow(base, exp);
    }
  }
};

/** Elementwise maximum / minimum; NaN in either input gives NaN (NumPy). */
struct Maximum {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_integral_v<T> || is_real_float_v<T>, "Maximum takes real types");
    return (a > b) | (a != a) ? a : b;
  }
};
struct Minimum {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_integral_v<T> || is_real_float_v<T>, "Minimum takes real types");
    return (a < b) | (a != a) ? a : b;
  }
};

/** The angle of the point (b, a). */
struct ArcTan2 {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_real_float_v<T>, "ArcTan2 takes floats");
    return atan2(a, b);
  }
};

/** log(e^a + e^b) = max + log1p(e^-|a - b|); equal inputs (also equal infinities) give
 * a + log 2, and a NaN input gives NaN. */
struct LogAddExp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_real_float_v<T>, "LogAddExp takes floats");
    if (a == b) return a + T(0.69314718055994531);
    const T d = a - b;
    if (d > 0) return a + log1p(exp(-d));
    if (d <= 0) return b + log1p(exp(d));
    return d;  // NaN
  }
};

// ---------------------------------------------------------------- comparisons
// Greater and GreaterEqual run as Less and LessEqual with the operands swapped.

struct Equal {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a == b;
  }
};
/** Equal, with two NaNs (a complex NaN has a NaN part) also equal. */
struct EqualNaN {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    static_assert(is_inexact_v<T>, "EqualNaN takes floats or complex64");
    return (a == b) || (IsNaN()(a) && IsNaN()(b));
  }
};
struct NotEqual {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a != b;
  }
};
struct Less {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    static_assert(is_integral_v<T> || is_real_float_v<T>, "Less takes real types");
    return a < b;
  }
};
struct LessEqual {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    static_assert(is_integral_v<T> || is_real_float_v<T>, "LessEqual takes real types");
    return a <= b;
  }
};

// ---------------------------------------------------------------- bits
// LogicalAnd and LogicalOr run as BitwiseAnd and BitwiseOr on bool's bytes (0 or 1).

struct BitwiseAnd {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_integral_v<T>, "BitwiseAnd takes integers or bool");
    return static_cast<T>(a & b);
  }
};
struct BitwiseOr {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_integral_v<T>, "BitwiseOr takes integers or bool");
    return static_cast<T>(a | b);
  }
};
struct BitwiseXor {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_integral_v<T>, "BitwiseXor takes integers or bool");
    return static_cast<T>(a ^ b);
  }
};

/** Whether a shift by `b` keeps any bit of a T. */
template <typename T>
__device__ inline bool shift_in_range(T b) {
  if constexpr (is_signed_int_v<T>) {
    if (b < 0) return false;
  }
  return static_cast<unsigned long long>(b) < sizeof(T) * 8;
}

struct LeftShift {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_int_v<T>, "LeftShift takes integers");
    return shift_in_range(b) ? static_cast<T>(wide_t<T>(a) << b) : T(0);
  }
};

/** Arithmetic shift for signed types: a negative value shifted out entirely gives -1. */
struct RightShift {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    static_assert(is_int_v<T>, "RightShift takes integers");
    if (shift_in_range(b)) return static_cast<T>(a >> b);
    if constexpr (is_signed_int_v<T>)
      return a < 0 ? T(-1) : T(0);
    else
      return T(0);
  }
};

}  // namespace kiln
