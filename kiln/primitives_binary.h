// Binary elementwise primitives. The ops (ops_binary.cpp) broadcast and promote first, so
// both inputs have the output's shape and one dtype; comparisons output bool. Integer
// semantics where C++ leaves them undefined are fixed here and documented in ops.h terms:
// arithmetic wraps, division by zero gives 0, out-of-range shift counts shift everything
// out. CPU kernels: backend/cpu/binary.cpp; transforms: primitives_binary.cpp.
#pragma once

#include "kiln/primitive.h"

namespace kiln {

#define KILN_BINARY_PRIMITIVE(NAME)                          \
  class NAME : public UnaryPrimitive {                       \
   public:                                                   \
    explicit NAME(Stream stream) : UnaryPrimitive(stream) {} \
    KILN_PRIMITIVE_EVAL_UNARY()                              \
    KILN_PRIMITIVE_GRADS()                                   \
    KILN_PRIMITIVE_VMAP()                                    \
    KILN_PRIMITIVE_NAME(NAME)                                \
    KILN_PRIMITIVE_DEFAULT_EQUIVALENT()                      \
    KILN_PRIMITIVE_SAME_SHAPE()                              \
  };

// Arithmetic.
/** a + b (logical or for bool). */
KILN_BINARY_PRIMITIVE(Add)
/** a - b (not for bool). */
KILN_BINARY_PRIMITIVE(Subtract)
/** a * b (logical and for bool). */
KILN_BINARY_PRIMITIVE(Multiply)
/** a / b (floating and complex types; the op converts integers to float32). */
KILN_BINARY_PRIMITIVE(Divide)
/** floor(a / b), Python semantics; integer division by zero gives 0. */
KILN_BINARY_PRIMITIVE(FloorDivide)
/** a - b * floor(a / b): the sign of b, as Python's %; integer remainder by zero gives 0. */
KILN_BINARY_PRIMITIVE(Remainder)
/** a ** b. Integers: exact with wrap-around; a negative exponent gives the exact result
 * truncated toward zero (1, -1 or 0; 0 for a zero base). */
KILN_BINARY_PRIMITIVE(Power)
/** Elementwise maximum / minimum; NaN in either input gives NaN (NumPy). */
KILN_BINARY_PRIMITIVE(Maximum)
KILN_BINARY_PRIMITIVE(Minimum)
/** atan2(a, b): the angle of the point (b, a). Real floating types. */
KILN_BINARY_PRIMITIVE(ArcTan2)
/** log(e^a + e^b) without overflow. Real floating types. */
KILN_BINARY_PRIMITIVE(LogAddExp)

// Comparisons (bool output; ordering comparisons are not defined for complex64).
KILN_BINARY_PRIMITIVE(NotEqual)
KILN_BINARY_PRIMITIVE(Less)
KILN_BINARY_PRIMITIVE(LessEqual)
KILN_BINARY_PRIMITIVE(Greater)
KILN_BINARY_PRIMITIVE(GreaterEqual)

/** a == b; with `equal_nan`, two NaNs also compare equal (used by array_equal). */
class Equal : public UnaryPrimitive {
 public:
  explicit Equal(Stream stream, bool equal_nan = false)
      : UnaryPrimitive(stream), equal_nan_(equal_nan) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Equal)
  KILN_PRIMITIVE_SAME_SHAPE()
  bool is_equivalent(const Primitive& other) const override;
  void print(std::ostream& os) override { os << (equal_nan_ ? "Equal(equal_nan)" : "Equal"); }
  bool equal_nan() const { return equal_nan_; }

 private:
  bool equal_nan_;
};

// Logic and bits (logical: bool inputs; bitwise: integer or bool; shifts: integers, where
// a count outside [0, bits) gives 0, or -1 for a right shift of a negative value).
KILN_BINARY_PRIMITIVE(LogicalAnd)
KILN_BINARY_PRIMITIVE(LogicalOr)
KILN_BINARY_PRIMITIVE(BitwiseAnd)
KILN_BINARY_PRIMITIVE(BitwiseOr)
KILN_BINARY_PRIMITIVE(BitwiseXor)
KILN_BINARY_PRIMITIVE(LeftShift)
KILN_BINARY_PRIMITIVE(RightShift)

}  // namespace kiln
