// Transformations of the unary primitives.
#include "kiln/primitives_unary.h"

#include "kiln/ops.h"

namespace kiln {

std::vector<array> Exp::jvp(
    const std::vector<array>& primals, const std::vector<array>& tangents, const std::vector<int>&) {
  return {multiply(tangents[0], exp(primals[0], stream()), stream())};
}

std::vector<array> Exp::vjp(
    const std::vector<array>&,
    const std::vector<array>& cotangents,
    const std::vector<int>&,
    const std::vector<array>& outputs) {
  return {multiply(cotangents[0], outputs[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> Exp::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  return {{exp(inputs[0], stream())}, axes};
}

}  // namespace kiln
