// The graph compile works on: a traced function as a list of nodes in topological order,
// free of kiln arrays (which tie nodes to the user's arrays and to evaluation state).
// Built from a trace (compile.cpp), rewritten by the passes (compile_simplify.cpp,
// compile_fuse.cpp) and lowered into the replay program.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::compile_ir {

/** One output of one node. */
struct Ref {
  int node = -1;
  int out = 0;
  bool operator==(const Ref&) const = default;
};

struct Node {
  enum class Kind : uint8_t { input, constant, op };
  Kind kind = Kind::op;
  // op: the primitive and its inputs.
  std::shared_ptr<Primitive> prim;
  std::vector<Ref> inputs;
  // One shape and dtype per output (one output for inputs and constants).
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  // constant: an evaluated array the trace read (a closure value or a literal).
  std::optional<array> value;
  // input: position among the function's inputs.
  int input_index = -1;
  bool dead = false;  // removed by a pass; skipped everywhere

  bool is_op() const { return kind == Kind::op && !dead; }
  size_t num_outputs() const { return shapes.size(); }
};

struct Graph {
  std::vector<Node> nodes;  // every node after its inputs
  std::vector<Ref> outputs;
  int num_inputs = 0;
  bool shapeless = false;

  const Node& node(Ref r) const { return nodes[r.node]; }
  const Shape& shape(Ref r) const { return nodes[r.node].shapes[r.out]; }
  Dtype dtype(Ref r) const { return nodes[r.node].dtypes[r.out]; }
  /** Replaces every use of `from` (node inputs and graph outputs) by `to`. */
  void replace_uses(Ref from, Ref to);
  /** Marks nodes no output depends on as dead (inputs stay). */
  void remove_dead();
  /** Drops dead nodes, renumbering the rest (keeps the order). */
  void compact();
  /** Number of live op nodes. */
  size_t num_ops() const;
  /** A readable listing, one node per line (for KILN_DEBUG_COMPILE and tests). */
  std::string to_string() const;
};

/** Common subexpressions merged, equal constants merged, no-op conversions, copies and
 * views removed (compile_simplify.cpp). Outputs are never merged into each other. */
void simplify(Graph& g);

/** Shapeless traces: the broadcasts the elementwise ops inserted become broadcasts to the
 * shape of the other operands (BroadcastLike), so the replay follows the inputs' shapes. */
void make_shapeless(Graph& g);

/** Connected elementwise nodes replaced by Compiled nodes (compile_fuse.cpp). */
void fuse(Graph& g);

/** Compiled nodes running the same code on one stream whose values no node reads (they only
 * leave the function) replaced by one CompiledGroup node each (compile_group.cpp). */
void group_horizontally(Graph& g);

}  // namespace kiln::compile_ir
