// compile's graph utilities and its simplification passes: common subexpression elimination,
// merging of equal constants, removal of no-op conversions, copies and views, and the
// rewrite of a shapeless trace's broadcasts.
#include <algorithm>
#include <cstring>
#include <functional>
#include <sstream>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

#include "kiln/compile_graph.h"
#include "kiln/primitives.h"
#include "kiln/primitives_compile.h"
#include "kiln/utils.h"

namespace kiln::compile_ir {

namespace {

size_t hash_combine(size_t h, size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

// Per node and output: what the output was replaced by (itself when not).
struct Replacements {
  std::vector<std::vector<Ref>> to;
  explicit Replacements(const Graph& g) {
    to.resize(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (size_t o = 0; o < g.nodes[i].num_outputs(); ++o)
        to[i].push_back({static_cast<int>(i), static_cast<int>(o)});
    }
  }
  Ref operator()(Ref r) const { return to[r.node][r.out]; }
};

template <typename P>
bool is(const Primitive& p) {
  return typeid(p) == typeid(P);
}

// Bytes of a small evaluated constant (the key for merging equal ones), or none.
std::optional<std::string> constant_bytes(const array& a) {
  if (!a.is_available() || a.error() || a.nbytes() > 64 || !a.has_storage()) return std::nullopt;
  std::string bytes;
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // Element by element in row-major order: a broadcast view and a dense array with the
    // same elements are equal.
    for (size_t i = 0; i < a.size(); ++i) {
      T v = a.data<T>()[elem_to_loc(static_cast<int64_t>(i), a.shape(), a.strides())];
      bytes.append(reinterpret_cast<const char*>(&v), sizeof(T));
    }
  });
  return bytes;
}

}  // namespace

// ---------------------------------------------------------------- Graph

void Graph::replace_uses(Ref from, Ref to) {
  for (auto& n : nodes) {
    if (n.dead) continue;
    for (auto& r : n.inputs)
      if (r == from) r = to;
  }
  for (auto& r : outputs)
    if (r == from) r = to;
}

void Graph::remove_dead() {
  std::vector<bool> live(nodes.size(), false);
  for (const Ref& r : outputs) live[r.node] = true;
  for (int i = static_cast<int>(nodes.size()) - 1; i >= 0; --i) {
    if (!live[i] || nodes[i].dead) continue;
    for (const Ref& r : nodes[i].inputs) live[r.node] = true;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!live[i] && nodes[i].kind != Node::Kind::input) nodes[i].dead = true;
  }
}

void Graph::compact() {
  std::vector<int> index(nodes.size(), -1);
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    index[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(nodes[i]));
  }
  for (auto& n : kept)
    for (auto& r : n.inputs) r.node = index[r.node];
  for (auto& r : outputs) r.node = index[r.node];
  nodes = std::move(kept);
}

size_t Graph::num_ops() const {
  return std::count_if(nodes.begin(), nodes.end(), [](const Node& n) { return n.is_op(); });
}

std::string Graph::to_string() const {
  std::ostringstream os;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.dead) continue;
    os << "  %" << i << " = ";
    if (n.kind == Node::Kind::input) {
      os << "input " << n.input_index;
    } else if (n.kind == Node::Kind::constant) {
      os << "constant";
    } else {
      n.prim->print(os);
      os << "(";
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        os << (k ? ", " : "") << "%" << n.inputs[k].node;
        if (nodes[n.inputs[k].node].num_outputs() > 1) os << "." << n.inputs[k].out;
      }
      os << ")";
    }
    for (size_t o = 0; o < n.num_outputs(); ++o)
      os << (o ? ", " : " : ") << n.dtypes[o] << shape_str(n.shapes[o]);
    os << "\n";
  }
  os << "  return";
  for (const Ref& r : outputs)
    os << " %" << r.node << (node(r).num_outputs() > 1 ? "." : "")
       << (node(r).num_outputs() > 1 ? std::to_string(r.out) : "");
  os << "\n";
  return os.str();
}

// ---------------------------------------------------------------- simplify

void simplify(Graph& g) {
  Replacements rep(g);
  std::unordered_set<int> output_nodes;
  for (const Ref& r : g.outputs) output_nodes.insert(r.node);

  std::unordered_map<std::string, int> constants;    // dtype + shape + bytes -> node
  std::unordered_map<size_t, std::vector<int>> ops;  // hash of type and inputs -> nodes

  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.dead || n.kind == Node::Kind::input) continue;
    const bool is_output = output_nodes.count(static_cast<int>(i)) > 0;
    if (n.kind == Node::Kind::constant) {
      auto bytes = constant_bytes(*n.value);
      if (!bytes) continue;
      std::ostringstream key;
      key << n.dtypes[0] << shape_str(n.shapes[0]) << *bytes;
      auto [it, fresh] = constants.emplace(key.str(), static_cast<int>(i));
      if (!fresh && !is_output) {
        rep.to[i][0] = {it->second, 0};
        n.dead = true;
      }
      continue;
    }
    for (auto& r : n.inputs) r = rep(r);
    const Primitive& p = *n.prim;

    // No-ops: the node's only output equals its only input. Not Contiguous: its users (the
    // collectives, for one) read their input's buffer as row-major, whatever its strides.
    if (n.inputs.size() == 1 && n.num_outputs() == 1) {
      const Ref in = n.inputs[0];
      const bool same = g.shape(in) == n.shapes[0] && g.dtype(in) == n.dtypes[0];
      const bool view = is<Reshape>(p) || is<Broadcast>(p) || is<BroadcastLike>(p);
      if (same && (is<Copy>(p) || is<StopGradient>(p) || is<TraceInput>(p) || is<AsType>(p) ||
                   (view && !g.shapeless))) {
        rep.to[i][0] = in;
        n.dead = true;
        continue;
      }
    }

    // Common subexpressions: an equivalent primitive on the same inputs.
    size_t h = hash_combine(typeid(p).hash_code(), n.inputs.size());
    for (const Ref& r : n.inputs) h = hash_combine(h, static_cast<size_t>(r.node) * 31 + r.out);
    auto& bucket = ops[h];
    bool merged = false;
    if (!is_output) {
      for (int j : bucket) {
        const Node& m = g.nodes[j];
        if (typeid(*m.prim) != typeid(p) || m.inputs != n.inputs || m.shapes != n.shapes ||
            m.dtypes != n.dtypes || !m.prim->is_equivalent(p)) {
          continue;
        }
        for (size_t o = 0; o < n.num_outputs(); ++o) rep.to[i][o] = {j, static_cast<int>(o)};
        n.dead = true;
        merged = true;
        break;
      }
    }
    if (!merged) bucket.push_back(static_cast<int>(i));
  }
  for (auto& r : g.outputs) r = rep(r);
  g.remove_dead();
  g.compact();
}

// ---------------------------------------------------------------- shapeless broadcasts

void make_shapeless(Graph& g) {
  std::vector<Node> out;
  std::vector<int> index(g.nodes.size(), -1);
  out.reserve(g.nodes.size());
  auto moved = [&](Ref r) { return Ref{index[r.node], r.out}; };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node n = std::move(g.nodes[i]);
    for (auto& r : n.inputs) r = moved(r);
    if (n.is_op() && n.inputs.size() > 1 && detail::is_fusable_elementwise(*n.prim)) {
      // The operands before the op's broadcasts; valid to rewrite when the op's shape is
      // their NumPy broadcast (always, for what the elementwise ops built).
      std::vector<Ref> pre;
      bool any = false;
      for (const Ref& r : n.inputs) {
        const Node& m = out[r.node];
        const bool bcast = m.is_op() && typeid(*m.prim) == typeid(Broadcast);
        pre.push_back(bcast ? m.inputs[0] : r);
        any = any || bcast;
      }
      std::vector<Shape> shapes;
      for (const Ref& r : pre) shapes.push_back(out[r.node].shapes[r.out]);
      bool valid = any;
      if (valid) {
        Shape s;
        for (const auto& sh : shapes) s = broadcast_shapes(s, sh);
        valid = s == n.shapes[0];
      }
      if (valid) {
        for (size_t k = 0; k < n.inputs.size(); ++k) {
          if (pre[k] == n.inputs[k]) continue;
          Node b;
          b.kind = Node::Kind::op;
          b.prim = std::make_shared<BroadcastLike>(n.prim->stream());
          b.inputs.push_back(pre[k]);
          for (size_t j = 0; j < pre.size(); ++j)
            if (j != k) b.inputs.push_back(pre[j]);
          b.shapes = {n.shapes[0]};
          b.dtypes = {out[pre[k].node].dtypes[pre[k].out]};
          n.inputs[k] = {static_cast<int>(out.size()), 0};
          out.push_back(std::move(b));
        }
      }
    }
    index[i] = static_cast<int>(out.size());
    out.push_back(std::move(n));
  }
  for (auto& r : g.outputs) r = moved(r);
  g.nodes = std::move(out);
  g.remove_dead();
  g.compact();
}

}  // namespace kiln::compile_ir
