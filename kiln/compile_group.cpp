// compile's horizontal fusion: Compiled nodes that run the same code (equal code_key, one
// stream) and do not depend on each other become one CompiledGroup node, evaluated by one
// launch on the GPU. An optimizer's update is one Compiled node per parameter, all with the
// same tape: grouped, they are a few launches a step instead of one per parameter.
//
// Nodes are visited in order; a node joins the first group of its code that it does not
// depend on (through any path, group members included), provided no group it depends on
// depends on that group. The graph with each group contracted to one node is then sorted
// again (Kahn, original positions first); if it has a cycle, nothing is grouped.
#include <algorithm>
#include <queue>
#include <string>
#include <unordered_map>

#include "kiln/compile_graph.h"
#include "kiln/primitives_compile.h"

namespace kiln::compile_ir {

namespace {

using Set = std::vector<int>;  // sorted group ids

void merge_into(Set& into, const Set& from) {
  Set out;
  out.reserve(into.size() + from.size());
  std::set_union(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(out));
  into = std::move(out);
}

bool contains(const Set& s, int g) {
  return std::binary_search(s.begin(), s.end(), g);
}

}  // namespace

void group_horizontally(Graph& g) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<Set> deps(n);          // groups each node depends on
  std::vector<int> group_of(n, -1);  // the group of a Compiled node
  std::vector<std::vector<int>> members;
  std::vector<Set> group_deps;  // groups each group depends on
  std::unordered_map<std::string, std::vector<int>> by_code;

  for (int i = 0; i < n; ++i) {
    const Node& node = g.nodes[i];
    if (node.dead) continue;
    Set d;
    for (const Ref& r : node.inputs) {
      merge_into(d, deps[r.node]);
      if (const int h = group_of[r.node]; h >= 0) {
        merge_into(d, {h});
        merge_into(d, group_deps[h]);
      }
    }
    deps[i] = d;
    auto* c = node.is_op() ? dynamic_cast<Compiled*>(node.prim.get()) : nullptr;
    if (!c) continue;
    const Stream s = c->stream();
    auto& candidates = by_code[c->code_key() + "@" + std::to_string(s.index)];
    int chosen = -1;
    for (int h : candidates) {
      if (contains(d, h)) continue;
      const bool cycle =
          std::any_of(d.begin(), d.end(), [&](int k) { return contains(group_deps[k], h); });
      if (!cycle) {
        chosen = h;
        break;
      }
    }
    if (chosen < 0) {
      chosen = static_cast<int>(members.size());
      members.emplace_back();
      group_deps.emplace_back();
      candidates.push_back(chosen);
    }
    members[chosen].push_back(i);
    merge_into(group_deps[chosen], d);
    group_of[i] = chosen;
  }
  const bool any = std::any_of(members.begin(), members.end(),
                               [](const std::vector<int>& m) { return m.size() > 1; });
  if (!any) return;

  // Units of the contracted graph: a group of several members, or one node.
  std::vector<int> unit_of(n, -1);
  std::vector<std::vector<int>> units;  // nodes of each unit
  for (int i = 0; i < n; ++i) {
    if (g.nodes[i].dead || unit_of[i] >= 0) continue;
    const int h = group_of[i];
    const int u = static_cast<int>(units.size());
    if (h >= 0 && members[h].size() > 1) {
      units.push_back(members[h]);
      for (int m : members[h]) unit_of[m] = u;
    } else {
      units.push_back({i});
      unit_of[i] = u;
    }
  }
  // Kahn's sort, keyed by each unit's last node: a group takes its last member's place.
  const int nu = static_cast<int>(units.size());
  std::vector<std::vector<int>> users(nu);
  std::vector<int> pending(nu, 0);
  for (int u = 0; u < nu; ++u) {
    Set preds;
    for (int i : units[u])
      for (const Ref& r : g.nodes[i].inputs)
        if (unit_of[r.node] != u) preds.push_back(unit_of[r.node]);
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    pending[u] = static_cast<int>(preds.size());
    for (int p : preds) users[p].push_back(u);
  }
  using Item = std::pair<int, int>;  // (last node, unit)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (int u = 0; u < nu; ++u)
    if (pending[u] == 0) ready.push({units[u].back(), u});
  std::vector<int> order;
  while (!ready.empty()) {
    const int u = ready.top().second;
    ready.pop();
    order.push_back(u);
    for (int v : users[u])
      if (--pending[v] == 0) ready.push({units[v].back(), v});
  }
  if (static_cast<int>(order.size()) != nu) return;  // a cycle: leave the graph as it is

  // The new node list; each old output's new place.
  std::vector<std::vector<Ref>> place(n);
  std::vector<Node> out;
  out.reserve(nu);
  for (int u : order) {
    const int at = static_cast<int>(out.size());
    if (units[u].size() == 1) {
      const int i = units[u][0];
      for (size_t k = 0; k < g.nodes[i].num_outputs(); ++k)
        place[i].push_back({at, static_cast<int>(k)});
      out.push_back(std::move(g.nodes[i]));
      continue;
    }
    Node grouped;
    grouped.kind = Node::Kind::op;
    std::vector<std::shared_ptr<Compiled>> prims;
    std::vector<int> num_inputs;
    for (int i : units[u]) {
      Node& m = g.nodes[i];
      prims.push_back(std::static_pointer_cast<Compiled>(m.prim));
      num_inputs.push_back(static_cast<int>(m.inputs.size()));
      grouped.inputs.insert(grouped.inputs.end(), m.inputs.begin(), m.inputs.end());
      for (size_t k = 0; k < m.num_outputs(); ++k) {
        place[i].push_back({at, static_cast<int>(grouped.shapes.size())});
        grouped.shapes.push_back(m.shapes[k]);
        grouped.dtypes.push_back(m.dtypes[k]);
      }
    }
    const Stream s = prims[0]->stream();
    grouped.prim = std::make_shared<CompiledGroup>(s, std::move(prims), std::move(num_inputs));
    out.push_back(std::move(grouped));
  }
  for (auto& node : out)
    for (auto& r : node.inputs) r = place[r.node][r.out];
  for (auto& r : g.outputs) r = place[r.node][r.out];
  g.nodes = std::move(out);
}

}  // namespace kiln::compile_ir
