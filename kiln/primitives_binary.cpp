// Transformations of the binary primitives.
#include "kiln/primitives_binary.h"

#include "kiln/ops.h"
#include "kiln/primitives_common.h"

namespace kiln {

std::vector<array> Add::jvp(
    const std::vector<array>&, const std::vector<array>& tangents, const std::vector<int>&) {
  return {tangents.size() == 1 ? tangents[0] : add(tangents[0], tangents[1], stream())};
}

std::vector<array> Add::vjp(
    const std::vector<array>&,
    const std::vector<array>& cotangents,
    const std::vector<int>& argnums,
    const std::vector<array>&) {
  // Inputs were broadcast to the output's shape by the op; Broadcast's vjp sums back.
  return std::vector<array>(argnums.size(), cotangents[0]);
}

std::pair<std::vector<array>, std::vector<int>> Add::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  auto [in, axis] = vmap_elementwise(inputs, axes, stream());
  return {{add(in[0], in[1], stream())}, {axis}};
}

}  // namespace kiln
