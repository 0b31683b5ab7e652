// Ternary elementwise primitives. The ops (ops_ternary.cpp) broadcast all inputs to the
// output's shape first. CPU kernel: backend/cpu/ternary.cpp.
#pragma once

#include "kiln/primitive.h"

namespace kiln {

/** out = condition ? x : y, with a bool condition and x, y of the output's dtype. */
class Select : public UnaryPrimitive {
 public:
  explicit Select(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Select)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  KILN_PRIMITIVE_SAME_SHAPE()
};

}  // namespace kiln
