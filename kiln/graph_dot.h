// Graphviz (DOT) text of the lazy graph behind arrays, for looking at what a computation
// builds before it runs (`dot -Tsvg`).
#pragma once

#include <ostream>
#include <vector>

#include "kiln/array.h"

namespace kiln {

/**
 * Writes the graph computing `outputs` as a Graphviz digraph: one box per array (its
 * shape and dtype; evaluated arrays and constants are the leaves) and one ellipse per
 * primitive application (its printed name and parameters), edges in data-flow order. The
 * arrays are not evaluated. Walks iteratively, so deep graphs do not overflow the stack.
 */
void export_to_dot(std::ostream& os, const std::vector<array>& outputs);

}  // namespace kiln
