#include "kiln/graph_utils.h"

#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "kiln/primitive.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// The primitive nodes reachable from `outputs`, inputs before users (iterative DFS), one
// array (any output) per node.
std::vector<array> nodes_of(const std::vector<array>& outputs) {
  std::vector<array> order;
  std::unordered_set<const void*> seen;
  std::vector<std::pair<array, size_t>> stack;
  for (const auto& out : outputs) {
    if (!out.has_primitive() || !seen.insert(out.graph_node()).second) continue;
    stack.emplace_back(out, 0);
    while (!stack.empty()) {
      auto& [a, next] = stack.back();
      const auto& ins = a.inputs();
      if (next < ins.size()) {
        const array& in = ins[next++];
        if (in.has_primitive() && seen.insert(in.graph_node()).second) {
          array child = in;
          stack.emplace_back(std::move(child), 0);
        }
      } else {
        order.push_back(a);
        stack.pop_back();
      }
    }
  }
  return order;
}

std::string describe(const array& a) {
  return msg(a.dtype(), " ", shape_str(a.shape()));
}

}  // namespace

void print_graph(std::ostream& os, const std::vector<array>& outputs) {
  std::unordered_map<uintptr_t, std::string> names;
  auto name = [&](const array& a) {
    auto [it, fresh] = names.try_emplace(a.id(), "");
    if (fresh) it->second = (a.has_primitive() ? "t" : "c") + std::to_string(names.size() - 1);
    return it->second;
  };
  for (const auto& a : nodes_of(outputs)) {
    auto outs = a.outputs();
    for (size_t i = 0; i < outs.size(); ++i)
      os << (i ? ", " : "") << name(outs[i]) << ": " << describe(outs[i]);
    os << " = ";
    a.primitive().print(os);
    os << "(";
    for (size_t i = 0; i < a.inputs().size(); ++i) os << (i ? ", " : "") << name(a.inputs()[i]);
    os << ")\n";
  }
}

void export_to_dot(std::ostream& os, const std::vector<array>& outputs,
                   const std::vector<std::string>& names) {
  if (names.size() > outputs.size()) {
    throw std::invalid_argument(
        msg("[export_to_dot] Got ", names.size(), " names for ", outputs.size(), " arrays."));
  }
  std::unordered_map<uintptr_t, std::string> label;
  for (size_t i = 0; i < names.size(); ++i) label[outputs[i].id()] = names[i];
  std::unordered_map<uintptr_t, int> array_ids;
  std::ostringstream body;
  auto array_node = [&](const array& a) {
    auto [it, fresh] = array_ids.try_emplace(a.id(), static_cast<int>(array_ids.size()));
    const std::string id = "a" + std::to_string(it->second);
    if (fresh) {
      auto l = label.find(a.id());
      body << "  \"" << id << "\" [label=\""
           << (l != label.end() ? l->second + ": " : std::string()) << describe(a)
           << "\", shape=ellipse];\n";
    }
    return id;
  };
  int prim_id = 0;
  for (const auto& a : nodes_of(outputs)) {
    const std::string p = "p" + std::to_string(prim_id++);
    std::ostringstream name;
    a.primitive().print(name);
    body << "  \"" << p << "\" [label=\"" << name.str() << "\", shape=box];\n";
    for (const auto& in : a.inputs())
      body << "  \"" << array_node(in) << "\" -> \"" << p << "\";\n";
    for (const auto& o : a.outputs()) body << "  \"" << p << "\" -> \"" << array_node(o) << "\";\n";
  }
  for (const auto& o : outputs) array_node(o);
  os << "digraph {\n" << body.str() << "}\n";
}

}  // namespace kiln
