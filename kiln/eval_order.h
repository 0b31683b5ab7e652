// The order in which eval and async_eval submit a graph's unevaluated nodes (kiln/eval.cpp).
#pragma once

#include <vector>

#include "kiln/array.h"
#include "kiln/scheduler.h"

namespace kiln::detail {

/**
 * The unevaluated nodes of `outputs`' graph in submission order, one task per node: a
 * post-order depth-first walk, except that with several streams a node whose output
 * another stream waits for (and the nodes that feed only it) comes as soon as its inputs
 * allow. Nodes already scheduled or computed are left out.
 */
std::vector<scheduler::Task> eval_order(const std::vector<array>& outputs);

}  // namespace kiln::detail
