// Binary elementwise primitives. The ops broadcast and promote first, so both inputs have
// the output's shape and (except comparisons' output) its dtype.
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

/** a + b (logical or for bool). */
KILN_BINARY_PRIMITIVE(Add)

}  // namespace kiln
