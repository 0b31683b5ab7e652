// Transformations of the ternary primitives.
#include "kiln/primitives_ternary.h"

#include "kiln/ops.h"
#include "kiln/primitives_common.h"

namespace kiln {

// The condition is bool: no gradient (a tangent of it alone gives where(c, 0, 0) = 0).
// x and y receive the tangent where they are chosen.
std::vector<array> Select::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  const array& cond = primals[0];
  const array zero(0, primals[1].dtype());
  array tx = zero, ty = zero;
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] == 1) tx = tangents[i];
    if (argnums[i] == 2) ty = tangents[i];
  }
  return {where(cond, tx, ty, stream())};
}

std::vector<array> Select::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  const array& cond = primals[0];
  const array& c = cotangents[0];
  const array zero(0, c.dtype());
  std::vector<array> vjps;
  for (int arg : argnums) {
    if (arg == 0)
      vjps.push_back(zeros_like(cond, stream()));
    else if (arg == 1)
      vjps.push_back(where(cond, c, zero, stream()));
    else
      vjps.push_back(where(cond, zero, c, stream()));
  }
  return vjps;
}

std::pair<std::vector<array>, std::vector<int>> Select::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  auto [in, axis] = vmap_elementwise(inputs, axes, stream());
  return {{where(in[0], in[1], in[2], stream())}, {axis}};
}

}  // namespace kiln
