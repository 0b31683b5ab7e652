// compile's horizontal fusion: Compiled nodes that run the same code (equal code_key, one
// stream) and whose values only leave the function (no node of the graph reads them) become
// one CompiledGroup node, evaluated by one launch per table of members on the GPU. An
// optimizer's update is such a node per parameter, all with the same tape: grouped, they are
// a few launches a step instead of one per parameter.
//
// Only nodes nothing reads are grouped, as XLA's horizontal loop fusion groups fusions that
// feed only the output tuple: they cannot depend on each other, and the group can take the
// last member's place without delaying any other work (no reordering, no cycle, and no value
// of the forward pass held for a later one).
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/compile_graph.h"
#include "kiln/primitives_compile.h"

namespace kiln::compile_ir {

void group_horizontally(Graph& g) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<bool> read(n, false);
  for (const Node& node : g.nodes)
    if (!node.dead)
      for (const Ref& r : node.inputs) read[r.node] = true;

  // Candidates by code and stream, in graph order.
  std::unordered_map<std::string, std::vector<int>> by_code;
  std::vector<std::string> codes;  // first-seen order, for a deterministic result
  for (int i = 0; i < n; ++i) {
    const Node& node = g.nodes[i];
    auto* c = node.is_op() && !read[i] ? dynamic_cast<Compiled*>(node.prim.get()) : nullptr;
    if (!c) continue;
    const std::string key = c->code_key() + "@" + std::to_string(c->stream().index);
    auto& list = by_code[key];
    if (list.empty()) codes.push_back(key);
    list.push_back(i);
  }

  // Each group replaces its last member in place (every member's inputs come before it);
  // the other members die, and the graph's outputs move to the group's outputs.
  std::unordered_map<int, std::vector<Ref>> moved;  // member -> its outputs' new places
  for (const std::string& key : codes) {
    const std::vector<int>& members = by_code[key];
    if (members.size() < 2) continue;
    const int at = members.back();
    Node grouped;
    grouped.kind = Node::Kind::op;
    std::vector<std::shared_ptr<Compiled>> prims;
    std::vector<int> num_inputs;
    for (int i : members) {
      Node& m = g.nodes[i];
      prims.push_back(std::static_pointer_cast<Compiled>(m.prim));
      num_inputs.push_back(static_cast<int>(m.inputs.size()));
      grouped.inputs.insert(grouped.inputs.end(), m.inputs.begin(), m.inputs.end());
      for (size_t k = 0; k < m.num_outputs(); ++k) {
        moved[i].push_back({at, static_cast<int>(grouped.shapes.size())});
        grouped.shapes.push_back(m.shapes[k]);
        grouped.dtypes.push_back(m.dtypes[k]);
      }
      if (i != at) m.dead = true;
    }
    const Stream s = prims[0]->stream();
    grouped.prim = std::make_shared<CompiledGroup>(s, std::move(prims), std::move(num_inputs));
    g.nodes[at] = std::move(grouped);
  }
  if (moved.empty()) return;
  for (Ref& r : g.outputs)
    if (auto it = moved.find(r.node); it != moved.end()) r = it->second[r.out];
  g.compact();
}

}  // namespace kiln::compile_ir
