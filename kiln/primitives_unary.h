// Unary elementwise primitives: out[i] = f(in[i]), output shape = input shape.
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

/** e^x. */
KILN_UNARY_PRIMITIVE(Exp)

}  // namespace kiln
