// Printing the graph of unevaluated arrays: a text listing and Graphviz DOT (MLX's
// print_graph and export_to_dot), e.g. to see what compile fused.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "kiln/array.h"

namespace kiln {

/** One line per primitive node reachable from `outputs` (inputs first): its outputs' dtypes
 * and shapes, the primitive (with its parameters) and its inputs. Evaluated arrays are
 * leaves. */
void print_graph(std::ostream& os, const std::vector<array>& outputs);

/**
 * The same graph in Graphviz DOT: arrays as ellipses (labelled `names[i]` for outputs[i]
 * where given, else dtype and shape), primitives as boxes, edges in data-flow direction.
 * Throws std::invalid_argument when `names` is longer than `outputs`.
 */
void export_to_dot(std::ostream& os, const std::vector<array>& outputs,
                   const std::vector<std::string>& names = {});

}  // namespace kiln
