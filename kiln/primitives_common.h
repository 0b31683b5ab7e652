// Helpers shared by primitive implementations (mostly for vmap).
#pragma once

#include <utility>
#include <vector>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln {

/**
 * Aligns the inputs of an elementwise primitive for vmap: mapped inputs get their mapped
 * axis moved to 0, unmapped ones get a new axis 0, and all are broadcast to the common
 * shape (elementwise primitives require equal input shapes). Returns the aligned inputs
 * and the output's mapped axis (0, or -1 when nothing is mapped, in which case the
 * inputs are returned unchanged).
 */
std::pair<std::vector<array>, int> vmap_elementwise(const std::vector<array>& inputs,
                                                    const std::vector<int>& axes, const Stream& s);

/**
 * conj(x) for complex64, x itself for every other dtype. vjp rules use it for kiln's (and
 * MLX's) complex convention: a cotangent is the adjoint under Re(sum(conj(u) * v)), so a
 * holomorphic f gets c * conj(f'(x)), and a real loss L gets dL/dRe(x) + i dL/dIm(x).
 */
array conj_if_complex(const array& x, const Stream& s);

/**
 * The vjp of a rule written as the plain transpose (the pairing Re(sum(u * v)), no
 * conjugate): conj(rule(conj(c))) for complex arrays, `rule(c)` unchanged for real ones.
 * For rules whose coefficients are awkward to conjugate one by one (scans, solves).
 */
template <typename Rule>
std::vector<array> adjoint_of_transpose(const std::vector<array>& cotangents, Rule&& rule,
                                        const Stream& s) {
  std::vector<array> c;
  for (const auto& g : cotangents) c.push_back(conj_if_complex(g, s));
  std::vector<array> out = rule(c);
  for (auto& o : out) o = conj_if_complex(o, s);
  return out;
}

}  // namespace kiln
