// The traced program export_function saves, before encoding: compile's replay program with
// the nodes that cannot be saved as they are rewritten (kiln/export_program.cpp).
#pragma once

#include <vector>

#include "kiln/primitives_compile.h"
#include "kiln/transforms.h"

namespace kiln::export_detail {

/**
 * `fun` traced on placeholders of `shapes`/`dtypes` (kiln::detail::trace_for_export), then:
 * fused fast operations replaced by the operations of their fallback, custom_function nodes
 * replaced by the forward computation they wrap, Load nodes (arrays read from files)
 * evaluated into constants, and unused steps and constants dropped.
 */
ReplayProgram trace_program(const ArrayFn& fun, const std::vector<Shape>& shapes,
                            const std::vector<Dtype>& dtypes, const std::vector<array>& originals,
                            bool shapeless);

}  // namespace kiln::export_detail
