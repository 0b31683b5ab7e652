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
std::pair<std::vector<array>, int> vmap_elementwise(
    const std::vector<array>& inputs, const std::vector<int>& axes, const Stream& s);

}  // namespace kiln
