// compile's fusion pass: connected groups of elementwise nodes of one shape become one
// Compiled node each (one generated kernel; backend/{cpu,cuda}/compiled.cpp).
//
// Groups grow from a root (visited from the end of the graph) towards the inputs: a node
// joins when it is elementwise, has the group's shape and stream, and every node using it is
// already in the group or comes after the root. The group stays convex (nothing outside
// depends on a member and feeds another), and a member used after the root is one more output
// of the kernel: the forward pass's values that the backward pass reads are written by the
// kernel that computes them. Candidates are visited latest first, so a node's users are
// decided before it. Broadcasts feeding the
// group are absorbed as views: the kernel reads their input with broadcast indexing (a
// broadcast others also use stays for them). One-element constants become literals in the
// kernel. A group of one elementwise node is left alone: its own kernel is as good.
#include <algorithm>
#include <optional>
#include <queue>
#include <typeinfo>
#include <unordered_map>

#include "kiln/compile_graph.h"
#include "kiln/primitives.h"
#include "kiln/primitives_compile.h"
#include "kiln/utils.h"

namespace kiln::compile_ir {

namespace {

// Bounds on one kernel: its size (and compile time) and its parameters (CUDA's 4 KB).
constexpr size_t kMaxOps = 64;
constexpr size_t kMaxInputs = 32;

bool is_view(const Node& n) {
  if (!n.is_op() || n.num_outputs() != 1) return false;
  if (typeid(*n.prim) == typeid(Broadcast)) return true;
  auto* b = dynamic_cast<const BroadcastLike*>(n.prim.get());
  return b && b->ignore_last() == 0;  // a batch broadcast is not NumPy's broadcast to the group
}

bool is_elementwise(const Node& n) {
  return n.is_op() && n.num_outputs() == 1 && detail::is_fusable_elementwise(*n.prim);
}

// A fused group's reads (see fuse()).
struct Operands {
  FusedTape tape;
  std::vector<Ref> inputs;             // graph refs of the Compiled node's inputs
  std::vector<Ref> literal_refs;       // graph refs of the literals
  std::vector<std::vector<int>> args;  // per member, its operands (placeholders)
  std::vector<int> views;              // absorbed broadcasts (for the name)
  bool fixed = false;                  // a Broadcast was absorbed: the shape is fixed
};
constexpr int kLiteral = -1000000, kMember = -2000000;

bool is_literal(const Node& n) {
  return n.kind == Node::Kind::constant && !n.dead && n.value->size() == 1 &&
         n.value->is_available() && !n.value->error() && n.value->has_storage();
}

}  // namespace

void fuse(Graph& g) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    if (g.nodes[i].dead) continue;
    for (const Ref& r : g.nodes[i].inputs) users[r.node].push_back(i);
  }
  std::vector<bool> is_output(n, false);
  for (const Ref& r : g.outputs) is_output[r.node] = true;

  std::vector<int> group(n, -1);
  // Per node and output, what replaces it (members become outputs of their Compiled node).
  std::unordered_map<int, Ref> moved;

  for (int root = n - 1; root >= 0; --root) {
    const Node& rn = g.nodes[root];
    if (!is_elementwise(rn) || group[root] != -1) continue;
    const Shape shape = rn.shapes[0];
    const Stream stream = rn.prim->stream();

    // The group grown from the root towards its inputs, at most `limit` members, marked in
    // `group` and sorted.
    auto grow = [&](size_t limit) {
      std::vector<int> members{root};
      group[root] = root;
      std::priority_queue<int> candidates;
      std::vector<int> seen;
      for (const Ref& r : rn.inputs) candidates.push(r.node);
      while (!candidates.empty() && members.size() < limit) {
        const int c = candidates.top();
        candidates.pop();
        if (group[c] == root || std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
        seen.push_back(c);
        const Node& cn = g.nodes[c];
        if (!is_elementwise(cn) || group[c] != -1 || cn.shapes[0] != shape ||
            cn.prim->stream() != stream) {
          continue;
        }
        // A user after the root cannot feed a member (nodes come after their inputs): such a
        // member becomes one more output of the kernel, written where its own kernel would be.
        const bool convex = std::all_of(users[c].begin(), users[c].end(),
                                        [&](int u) { return group[u] == root || u > root; });
        if (!convex) continue;
        group[c] = root;
        members.push_back(c);
        for (const Ref& r : cn.inputs) candidates.push(r.node);
      }
      std::sort(members.begin(), members.end());
      return members;
    };

    // What the members read: inputs (through absorbed views), literals, and per member its
    // operands. Literals are numbered after the inputs, members after the literals: operands
    // are encoded as negative placeholders (kLiteral, kMember) and renumbered once the counts
    // are known. Nothing when the kernel would take more than kMaxInputs inputs.
    auto operands = [&](const std::vector<int>& members) -> std::optional<Operands> {
      Operands o;
      o.args.resize(members.size());
      auto add_input = [&](Ref r, bool shape_only) -> int {
        for (size_t k = 0; k < o.inputs.size(); ++k) {
          if (o.inputs[k] == r) {
            if (!shape_only) o.tape.shape_only[k] = false;
            return static_cast<int>(k);
          }
        }
        o.inputs.push_back(r);
        o.tape.input_dtypes.push_back(g.dtype(r));
        o.tape.shape_only.push_back(shape_only);
        return static_cast<int>(o.inputs.size() - 1);
      };
      for (size_t m = 0; m < members.size(); ++m) {
        for (Ref r : g.nodes[members[m]].inputs) {
          if (group[r.node] == root) {
            const int pos = static_cast<int>(std::find(members.begin(), members.end(), r.node) -
                                             members.begin());
            o.args[m].push_back(kMember - pos);
            continue;
          }
          while (is_view(g.nodes[r.node]) && g.nodes[r.node].prim->stream() == stream) {
            const Node& v = g.nodes[r.node];
            if (std::find(o.views.begin(), o.views.end(), r.node) == o.views.end())
              o.views.push_back(r.node);
            if (typeid(*v.prim) == typeid(Broadcast)) o.fixed = true;
            // Arrays read for their shape: members need no input (their shape is the group's).
            for (size_t k = 1; k < v.inputs.size(); ++k)
              if (group[v.inputs[k].node] != root) add_input(v.inputs[k], true);
            r = v.inputs[0];
          }
          if (is_literal(g.nodes[r.node])) {
            auto it = std::find(o.literal_refs.begin(), o.literal_refs.end(), r);
            if (it == o.literal_refs.end()) {
              o.literal_refs.push_back(r);
              o.tape.literals.push_back(*g.nodes[r.node].value);
              it = o.literal_refs.end() - 1;
            }
            o.args[m].push_back(kLiteral - static_cast<int>(it - o.literal_refs.begin()));
          } else {
            o.args[m].push_back(add_input(r, false));
          }
        }
        if (o.inputs.size() > kMaxInputs) return std::nullopt;
      }
      return o;
    };

    // A group reading too many inputs is grown again with half the limit: a chain taking a
    // new input per op (a sum of many reductions) becomes several kernels instead of none.
    std::vector<int> members;
    std::optional<Operands> found;
    for (size_t limit = kMaxOps; !found && limit >= 2; limit /= 2) {
      for (int m : members) group[m] = -1;
      members = grow(limit);
      if (members.size() < 2) break;
      found = operands(members);
    }
    if (!found) {
      for (int m : members) group[m] = -1;
      continue;
    }
    FusedTape& tape = found->tape;
    const std::vector<Ref>& inputs = found->inputs;
    const std::vector<std::vector<int>>& args = found->args;
    const std::vector<int>& views = found->views;
    const bool fixed = found->fixed;
    const int ni = static_cast<int>(inputs.size()), nl = static_cast<int>(tape.literals.size());
    for (size_t m = 0; m < members.size(); ++m) {
      const Node& mn = g.nodes[members[m]];
      FusedTape::Op op{mn.prim, {}, mn.dtypes[0]};
      for (int a : args[m]) {
        if (a <= kMember)
          op.args.push_back(ni + nl + (kMember - a));
        else if (a <= kLiteral)
          op.args.push_back(ni + (kLiteral - a));
        else
          op.args.push_back(a);
      }
      tape.ops.push_back(std::move(op));
    }
    // Outputs: members used outside the group, or returned (the root always is one).
    std::vector<int> out_members;
    for (size_t m = 0; m < members.size(); ++m) {
      const int id = members[m];
      const bool outside =
          std::any_of(users[id].begin(), users[id].end(), [&](int u) { return group[u] != root; });
      if (id == root || outside || is_output[id]) {
        out_members.push_back(id);
        tape.outputs.push_back(ni + nl + static_cast<int>(m));
      }
    }

    // The Compiled node replaces the root in place (its inputs all come before the root).
    Node c;
    c.kind = Node::Kind::op;
    c.inputs = inputs;
    std::vector<int> named = members;
    named.insert(named.end(), views.begin(), views.end());
    std::sort(named.begin(), named.end());
    std::string label = "Compiled";
    for (int id : named) label += g.nodes[id].prim->name();
    c.prim = std::make_shared<Compiled>(
        stream, std::move(tape), fixed || !g.shapeless ? std::optional<Shape>(shape) : std::nullopt,
        std::move(label));
    for (int id : out_members) {
      c.shapes.push_back(shape);
      c.dtypes.push_back(g.nodes[id].dtypes[0]);
    }
    for (size_t k = 0; k < out_members.size(); ++k)
      moved[out_members[k]] = {root, static_cast<int>(k)};
    for (int m : members)
      if (m != root) g.nodes[m].dead = true;
    g.nodes[root] = std::move(c);
  }

  auto remap = [&](Ref& r) {
    if (auto it = moved.find(r.node); it != moved.end()) r = it->second;
  };
  for (auto& node : g.nodes) {
    if (node.dead) continue;
    for (auto& r : node.inputs) remap(r);
  }
  for (auto& r : g.outputs) remap(r);
  g.remove_dead();
  g.compact();
}

}  // namespace kiln::compile_ir
