// Unary elementwise primitives: out[i] = f(in[i]), output shape = input shape.
//
// The ops (ops_unary.cpp) choose the input dtype: transcendental functions see a floating
// or complex input of the output's dtype; the predicates (IsNaN, ...) output bool; Abs and
// Real/Imag of complex64 output float32. Every primitive evaluates on the CPU
// (backend/cpu/unary.cpp) and implements jvp, vjp and vmap (primitives_unary.cpp).
#pragma once

#include "kiln/primitive.h"

namespace kiln {

#define KILN_UNARY_PRIMITIVE(NAME)                           \
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

// Arithmetic (same dtype; Abs of complex64 gives float32).
/** |x|. */
KILN_UNARY_PRIMITIVE(Abs)
/** -x (integers wrap). */
KILN_UNARY_PRIMITIVE(Negative)
/** -1, 0 or 1 (NaN stays NaN); x / |x| for complex (0 at 0). */
KILN_UNARY_PRIMITIVE(Sign)
/** x * x. */
KILN_UNARY_PRIMITIVE(Square)

// Floating-point math (float16, bfloat16, float32, float64 and, except Erf/ErfInv,
// complex64).
/** sqrt(x). */
KILN_UNARY_PRIMITIVE(Sqrt)
/** 1 / sqrt(x). */
KILN_UNARY_PRIMITIVE(Rsqrt)
/** e^x. */
KILN_UNARY_PRIMITIVE(Exp)
/** e^x - 1, accurate near 0. */
KILN_UNARY_PRIMITIVE(Expm1)
/** Natural logarithm. */
KILN_UNARY_PRIMITIVE(Log)
/** log(1 + x), accurate near 0. */
KILN_UNARY_PRIMITIVE(Log1p)
/** Base-2 logarithm. */
KILN_UNARY_PRIMITIVE(Log2)
/** Base-10 logarithm. */
KILN_UNARY_PRIMITIVE(Log10)
KILN_UNARY_PRIMITIVE(Sin)
KILN_UNARY_PRIMITIVE(Cos)
KILN_UNARY_PRIMITIVE(Tan)
KILN_UNARY_PRIMITIVE(ArcSin)
KILN_UNARY_PRIMITIVE(ArcCos)
KILN_UNARY_PRIMITIVE(ArcTan)
KILN_UNARY_PRIMITIVE(Sinh)
KILN_UNARY_PRIMITIVE(Cosh)
KILN_UNARY_PRIMITIVE(Tanh)
KILN_UNARY_PRIMITIVE(ArcSinh)
KILN_UNARY_PRIMITIVE(ArcCosh)
KILN_UNARY_PRIMITIVE(ArcTanh)
/** Gauss error function (real types only). */
KILN_UNARY_PRIMITIVE(Erf)
/** Inverse of erf on (-1, 1); +-inf at +-1, NaN outside (real types only). */
KILN_UNARY_PRIMITIVE(ErfInv)
/** 1 / (1 + e^-x). */
KILN_UNARY_PRIMITIVE(Sigmoid)

// Rounding (real floating types; the ops return integer inputs unchanged).
KILN_UNARY_PRIMITIVE(Floor)
KILN_UNARY_PRIMITIVE(Ceil)
KILN_UNARY_PRIMITIVE(Trunc)
/** Round half to even. */
KILN_UNARY_PRIMITIVE(Round)

// 8-bit floats (OCP e4m3, uint8 storage).
/** A floating value to e4m3 bits: round to nearest even, saturating to +-448 (NaN too). */
KILN_UNARY_PRIMITIVE(ToFP8)
/** e4m3 bits (uint8) to float32. */
KILN_UNARY_PRIMITIVE(FromFP8)

// Logic and bits.
/** x == 0, for any dtype; bool output. */
KILN_UNARY_PRIMITIVE(LogicalNot)
/** ~x for integers, !x for bool. */
KILN_UNARY_PRIMITIVE(BitwiseInvert)

// Classification: bool output, constant for integer and bool inputs.
KILN_UNARY_PRIMITIVE(IsNaN)
KILN_UNARY_PRIMITIVE(IsInf)
KILN_UNARY_PRIMITIVE(IsFinite)
KILN_UNARY_PRIMITIVE(IsPosInf)
KILN_UNARY_PRIMITIVE(IsNegInf)

// Complex parts (complex64 input; Real and Imag output float32).
KILN_UNARY_PRIMITIVE(Real)
KILN_UNARY_PRIMITIVE(Imag)
KILN_UNARY_PRIMITIVE(Conjugate)

}  // namespace kiln
