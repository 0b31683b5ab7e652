// Test helper: what an unevaluated graph is made of.
#pragma once

#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::test {

/** Names of the primitives in the unevaluated graph of `outputs`, one per node. */
inline std::multiset<std::string> graph_primitives(const std::vector<array>& outputs) {
  std::multiset<std::string> names;
  std::unordered_set<const void*> seen;
  std::vector<array> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    array a = stack.back();
    stack.pop_back();
    if (!a.has_primitive() || !seen.insert(a.graph_node()).second) continue;
    names.insert(a.primitive().name());
    for (const auto& in : a.inputs()) stack.push_back(in);
  }
  return names;
}

}  // namespace kiln::test
