#include "kiln/graph_dot.h"

#include <sstream>
#include <string>
#include <unordered_map>

#include "kiln/primitive.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// DOT string literal contents: quotes and backslashes escaped, newlines as \n.
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

void export_to_dot(std::ostream& os, const std::vector<array>& outputs) {
  std::unordered_map<uintptr_t, std::string> array_names;   // array id -> node name
  std::unordered_map<const void*, std::string> prim_names;  // graph node -> node name
  std::ostringstream nodes, edges;

  auto array_node = [&](const array& a, const char* style) -> const std::string& {
    auto [it, fresh] = array_names.try_emplace(a.id());
    if (fresh) {
      it->second = "a" + std::to_string(array_names.size() - 1);
      nodes << "  " << it->second << " [shape=box, " << style << "label=\""
            << escape(shape_str(a.shape())) << " " << a.dtype() << "\"];\n";
    }
    return it->second;
  };

  std::vector<array> stack;
  for (const auto& o : outputs) {
    array_node(o, "style=filled, fillcolor=lightblue, ");
    stack.push_back(o);
  }
  while (!stack.empty()) {
    array a = std::move(stack.back());
    stack.pop_back();
    if (!a.has_primitive()) continue;
    auto [it, fresh] = prim_names.try_emplace(a.graph_node());
    if (!fresh) continue;
    it->second = "p" + std::to_string(prim_names.size() - 1);
    std::ostringstream label;
    a.primitive().print(label);
    nodes << "  " << it->second << " [label=\"" << escape(label.str()) << "\"];\n";
    for (const auto& out : a.outputs()) {
      edges << "  " << it->second << " -> " << array_node(out, "") << ";\n";
    }
    for (const auto& in : a.inputs()) {
      edges << "  " << array_node(in, "") << " -> " << it->second << ";\n";
      stack.push_back(in);
    }
  }
  os << "digraph {\n  rankdir=TB;\n" << nodes.str() << edges.str() << "}\n";
}

}  // namespace kiln
