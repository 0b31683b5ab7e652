// compile: tracing, the cache of traces, and the replay of a cached trace.
//
// A trace runs the function on CompileInput placeholders (tracers, so arrays the function
// evaluates keep their graph), walks the graph it returned into a compile_ir::Graph, runs the
// passes (simplify, shapeless broadcasts, fusion, horizontal grouping) and lowers the result
// into a Program: the primitives to apply, in order, to numbered values. A replay builds that
// graph on the real inputs (the same primitive objects, fresh arrays); nothing of the trace's
// arrays is kept, so the user's arrays can be evaluated or freed independently of the cache.
#include "kiln/compile.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/compile_graph.h"
#include "kiln/ops.h"
#include "kiln/primitives_compile.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

using compile_ir::Graph;
using compile_ir::Node;
using compile_ir::Ref;

CompileMode initial_mode() {
  const char* e = std::getenv("KILN_DISABLE_COMPILE");
  return e && *e && std::strcmp(e, "0") != 0 ? CompileMode::disabled : CompileMode::enabled;
}

std::atomic<CompileMode>& mode_ref() {
  static std::atomic<CompileMode> m{initial_mode()};
  return m;
}

std::atomic<uint64_t> g_traces{0}, g_replays{0}, g_fused{0}, g_fallback{0};

// Tracing state of this thread (traces nest when a compiled function calls another with
// arrays that are not traced, e.g. constants it created).
thread_local int t_trace_depth = 0;
thread_local bool t_shapeless = false;
// The trace depth of the export trace running on this thread (-1: none).
thread_local int t_export_depth = -1;

struct TraceScope {
  bool saved;
  explicit TraceScope(bool shapeless) : saved(t_shapeless) {
    ++t_trace_depth;
    t_shapeless = shapeless;
  }
  ~TraceScope() {
    --t_trace_depth;
    t_shapeless = saved;
  }
};

// ---------------------------------------------------------------- the replay program

// Elementwise primitives take inputs of one shape (their ops broadcast first); a shapeless
// replay on shapes the trace's broadcasts do not follow must not reach their kernels.
void check_shapeless_inputs(const Primitive& p, const std::vector<array>& ins) {
  if (ins.size() < 2 || !detail::is_fusable_elementwise(p)) return;
  for (const auto& in : ins) {
    if (in.shape() != ins[0].shape()) {
      throw std::invalid_argument(
          msg("[compile] A shapeless replay gives ", p.name(), " inputs of shapes ",
              shape_str(ins[0].shape()), " and ", shape_str(in.shape()),
              ": the function fixes a shape its inputs no longer have; compile it without "
              "shapeless=True."));
    }
  }
}

using Program = ReplayProgram;

Program lower(const Graph& g) {
  Program p;
  p.num_inputs = g.num_inputs;
  p.shapeless = g.shapeless;
  std::vector<std::vector<int>> slot(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.kind == Node::Kind::input) slot[i] = {n.input_index};
  }
  int next = g.num_inputs;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead || n.kind != Node::Kind::constant) continue;
    slot[i] = {next++};
    p.constants.push_back(*n.value);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!n.is_op()) continue;
    Program::Step s{n.prim, {}, n.shapes, n.dtypes};
    for (const Ref& r : n.inputs) s.in.push_back(slot[r.node][r.out]);
    for (size_t o = 0; o < n.num_outputs(); ++o) slot[i].push_back(next++);
    p.steps.push_back(std::move(s));
  }
  for (const Ref& r : g.outputs) p.outputs.push_back(slot[r.node][r.out]);
  return p;
}

// ---------------------------------------------------------------- trace -> graph

// The graph `outputs` were computed with from the placeholders `traced` (the function's
// inputs while it was traced). `originals` are the arrays the function was called with: the
// function must not read them other than through its arguments (MLX's rule), or the replay
// would keep using them.
Graph build_graph(const std::vector<array>& traced, const std::vector<array>& outputs,
                  const std::vector<array>& originals, bool shapeless) {
  Graph g;
  g.num_inputs = static_cast<int>(traced.size());
  g.shapeless = shapeless;
  std::unordered_map<const void*, int> op_node;  // graph node -> IR node (placeholders too)
  std::unordered_map<uintptr_t, int> leaf_node;  // evaluated array id -> IR node
  std::unordered_set<uintptr_t> original_ids;
  for (const auto& a : originals) original_ids.insert(a.id());
  std::vector<bool> depends;  // per IR node: computed from the placeholders

  for (size_t i = 0; i < traced.size(); ++i) {
    Node n;
    n.kind = Node::Kind::input;
    n.input_index = static_cast<int>(i);
    n.shapes = {traced[i].shape()};
    n.dtypes = {traced[i].dtype()};
    op_node.emplace(traced[i].graph_node(), static_cast<int>(g.nodes.size()));
    g.nodes.push_back(std::move(n));
    depends.push_back(true);
  }

  auto uncaptured = [] {
    return std::invalid_argument(
        "[compile] Attempting to compile a function with uncaptured inputs is not allowed: the "
        "function reads an array it is also called with other than through its arguments (a "
        "closure or a global). Pass it only as an argument, or capture state with the "
        "inputs/outputs arguments of compile.");
  };
  auto ref_of = [&](const array& a) -> Ref {
    if (a.has_primitive())
      return {op_node.at(a.graph_node()), static_cast<int>(a.sibling_position())};
    return {leaf_node.at(a.id()), 0};
  };
  auto known = [&](const array& a) {
    return a.has_primitive() ? op_node.count(a.graph_node()) > 0 : leaf_node.count(a.id()) > 0;
  };
  // A leaf: an evaluated array, used as a constant.
  auto add_leaf = [&](const array& a) {
    if (original_ids.count(a.id())) throw uncaptured();
    Node n;
    n.kind = Node::Kind::constant;
    n.shapes = {a.shape()};
    n.dtypes = {a.dtype()};
    n.value = a;
    leaf_node.emplace(a.id(), static_cast<int>(g.nodes.size()));
    g.nodes.push_back(std::move(n));
    depends.push_back(false);
  };
  auto add_op = [&](const array& a) {
    Node n;
    n.kind = Node::Kind::op;
    n.prim = a.primitive_ptr();
    bool dep = false;
    for (const auto& in : a.inputs()) {
      Ref r = ref_of(in);
      dep = dep || depends[r.node];
      n.inputs.push_back(r);
    }
    for (const auto& o : a.outputs()) {
      if (original_ids.count(o.id())) throw uncaptured();
      n.shapes.push_back(o.shape());
      n.dtypes.push_back(o.dtype());
    }
    if (a.is_tracer() && !dep) {
      throw std::invalid_argument(
          msg("[compile] The function uses an array that a transformation around it (grad, vjp, "
              "jvp, vmap) is tracing (a ",
              a.primitive().name(),
              " result), but not through its arguments; pass the array as an argument so the "
              "transformation sees the compiled function's use of it."));
    }
    op_node.emplace(a.graph_node(), static_cast<int>(g.nodes.size()));
    g.nodes.push_back(std::move(n));
    depends.push_back(dep);
  };

  // Iterative post-order DFS: a chain of 10^5 ops must not overflow the stack.
  std::vector<std::pair<array, size_t>> stack;
  for (const auto& out : outputs) {
    if (known(out)) continue;
    if (!out.has_primitive()) {
      add_leaf(out);
      continue;
    }
    stack.emplace_back(out, 0);
    while (!stack.empty()) {
      auto& [a, next] = stack.back();
      const auto& ins = a.inputs();
      if (next < ins.size()) {
        const array& in = ins[next++];
        if (known(in)) continue;
        if (!in.has_primitive()) {
          add_leaf(in);
        } else {
          array child = in;  // copy before emplace_back invalidates the references
          stack.emplace_back(std::move(child), 0);
        }
      } else {
        if (!known(a)) {
          if (original_ids.count(a.id())) throw uncaptured();
          add_op(a);
        }
        stack.pop_back();
      }
    }
  }
  for (const auto& out : outputs) g.outputs.push_back(ref_of(out));
  return g;
}

// ---------------------------------------------------------------- the cache

struct Entry {
  Stream stream;
  bool shapeless;
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  std::vector<uint64_t> constants;
  std::shared_ptr<const Program> program;
  std::shared_ptr<void> extra;
};

class Cache {
 public:
  std::shared_ptr<const Entry> find(std::uintptr_t id, const std::vector<array>& inputs,
                                    const Stream& stream, bool shapeless,
                                    const std::vector<uint64_t>& constants) {
    std::lock_guard lk(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return nullptr;
    for (const auto& e : it->second) {
      if (e->stream == stream && e->shapeless == shapeless && matches(*e, inputs) &&
          e->constants == constants) {
        return e;
      }
    }
    return nullptr;
  }
  void insert(std::uintptr_t id, std::shared_ptr<const Entry> e) {
    std::lock_guard lk(mu_);
    entries_[id].push_back(std::move(e));
  }
  void erase(std::uintptr_t id) {
    std::vector<std::shared_ptr<const Entry>> dropped;  // released outside the lock
    std::lock_guard lk(mu_);
    if (auto it = entries_.find(id); it != entries_.end()) {
      dropped = std::move(it->second);
      entries_.erase(it);
    }
  }
  void clear() {
    decltype(entries_) dropped;
    std::lock_guard lk(mu_);
    dropped.swap(entries_);
  }

 private:
  static bool matches(const Entry& e, const std::vector<array>& inputs) {
    if (inputs.size() != e.shapes.size()) return false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].dtype() != e.dtypes[i]) return false;
      if (e.shapeless ? inputs[i].ndim() != e.shapes[i].size() : inputs[i].shape() != e.shapes[i])
        return false;
    }
    return true;
  }

  std::mutex mu_;
  std::unordered_map<std::uintptr_t, std::vector<std::shared_ptr<const Entry>>> entries_;
};

// Never destroyed: compiled functions held by static objects may die after it otherwise.
Cache& cache() {
  static auto* c = new Cache;
  return *c;
}

std::shared_ptr<const Entry> trace(const detail::ArrayFnWithExtra& fun,
                                   const std::vector<array>& inputs, const Stream& stream,
                                   bool shapeless, const std::vector<uint64_t>& constants) {
  g_traces.fetch_add(1, std::memory_order_relaxed);
  std::vector<array> placeholders;
  placeholders.reserve(inputs.size());
  for (const auto& in : inputs) {
    array p(in.shape(), in.dtype(), std::make_shared<CompileInput>(stream), {});
    p.set_tracer(true);
    placeholders.push_back(std::move(p));
  }
  detail::ArraysAndExtra result;
  {
    TraceScope scope(shapeless);
    result = fun(placeholders);
  }
  Graph g = build_graph(placeholders, result.first, inputs, shapeless);
  const CompileMode m = compile_mode();
  if (m != CompileMode::no_simplify) compile_ir::simplify(g);
  if (shapeless) compile_ir::make_shapeless(g);
  if (m == CompileMode::enabled) {
    compile_ir::fuse(g);
    compile_ir::group_horizontally(g);
  }
  g.remove_dead();
  if (detail::compile_debug()) {
    std::cerr << "[kiln compile] traced graph (" << g.num_ops() << " ops):\n" << g.to_string();
  }
  auto e = std::make_shared<Entry>(Entry{stream,
                                         shapeless,
                                         {},
                                         {},
                                         constants,
                                         std::make_shared<const Program>(lower(g)),
                                         std::move(result.second)});
  for (const auto& in : inputs) {
    e->shapes.push_back(in.shape());
    e->dtypes.push_back(in.dtype());
  }
  return e;
}

// Whether a replay goes through one CompiledGraph node: every step on one stream (a GPU
// stream unless forced), fixed shapes, and few bytes in and out (launch-bound work).
std::optional<Stream> graph_stream(const Program& p, const std::vector<array>& inputs) {
  const auto mode = detail::graph_replay();
  if (mode == detail::GraphReplay::off || p.shapeless || p.steps.empty()) return std::nullopt;
  auto refuse = [](const std::string& why) -> std::optional<Stream> {
    if (detail::compile_debug())
      std::fprintf(stderr, "[kiln compile] no graph replay: %s\n", why.c_str());
    return std::nullopt;
  };
  const Stream s = p.steps[0].prim->stream();
  if (mode == detail::GraphReplay::gpu && s.device.type != Device::gpu) {
    return refuse(msg("the first step (", p.steps[0].prim->name(), ") runs on ", s.device));
  }
  for (const auto& st : p.steps) {
    if (!(st.prim->stream() == s)) {
      return refuse(msg("step ", st.prim->name(), " runs on stream ", st.prim->stream().index,
                        " of ", st.prim->stream().device, ", not ", s.index));
    }
  }
  size_t bytes = 0;
  for (const auto& in : inputs) bytes += in.nbytes();
  const int first_step = p.num_inputs + static_cast<int>(p.constants.size());
  for (int o : p.outputs) {
    if (o < first_step) continue;
    auto [shape, dtype] = p.value_info(o);
    bytes += shape_size(shape) * dtype.size;
  }
  if (bytes > detail::graph_replay_max_bytes()) {
    return refuse(msg(bytes, " bytes in and out, over ", detail::graph_replay_max_bytes()));
  }
  return s;
}

std::vector<array> replay(const std::shared_ptr<const Program>& p,
                          const std::vector<array>& inputs) {
  auto s = graph_stream(*p, inputs);
  if (!s) return p->build(inputs);
  // Outputs that are inputs or constants are returned as they are; the node computes the rest.
  const int first_step = p->num_inputs + static_cast<int>(p->constants.size());
  std::vector<int> computed;
  for (int o : p->outputs)
    if (o >= first_step && std::find(computed.begin(), computed.end(), o) == computed.end())
      computed.push_back(o);
  if (computed.empty()) return p->build(inputs);
  // Output shapes and dtypes: the steps' (fixed shapes).
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (int v : computed) {
    auto [shape, dtype] = p->value_info(v);
    shapes.push_back(std::move(shape));
    dtypes.push_back(dtype);
  }
  std::vector<array> node_inputs = inputs;
  node_inputs.insert(node_inputs.end(), p->constants.begin(), p->constants.end());
  auto outs = array::make_arrays(std::move(shapes), dtypes,
                                 std::make_shared<CompiledGraph>(*s, p, computed), node_inputs);
  std::vector<array> result;
  for (int o : p->outputs) {
    if (o < p->num_inputs) {
      result.push_back(inputs[o]);
    } else if (o < first_step) {
      result.push_back(p->constants[o - p->num_inputs]);
    } else {
      result.push_back(outs[std::find(computed.begin(), computed.end(), o) - computed.begin()]);
    }
  }
  return result;
}

template <typename T, typename... U>
std::uintptr_t function_address(const std::function<T(U...)>& fun) {
  using Ptr = T (*)(U...);
  const Ptr* p = fun.template target<Ptr>();
  return p ? reinterpret_cast<std::uintptr_t>(*p) : 0;
}

}  // namespace

// ---------------------------------------------------------------- public API

CompileMode compile_mode() {
  return mode_ref().load(std::memory_order_relaxed);
}
void set_compile_mode(CompileMode m) {
  mode_ref().store(m, std::memory_order_relaxed);
}
void disable_compile() {
  set_compile_mode(CompileMode::disabled);
}
void enable_compile() {
  set_compile_mode(CompileMode::enabled);
}

namespace detail {

bool in_compile_trace() {
  return t_trace_depth > 0;
}
bool in_shapeless_trace() {
  return t_trace_depth > 0 && t_shapeless;
}
bool in_export_trace() {
  return t_export_depth > 0 && t_export_depth == t_trace_depth;
}

CompileStats compile_stats() {
  return {g_traces.load(), g_replays.load(), g_fused.load(), g_fallback.load()};
}
void reset_compile_stats() {
  g_traces = 0;
  g_replays = 0;
  g_fused = 0;
  g_fallback = 0;
}
void count_compiled_run(bool fallback) {
  (fallback ? g_fallback : g_fused).fetch_add(1, std::memory_order_relaxed);
}

ArrayFnWithExtra compile(ArrayFnWithExtra fun, std::uintptr_t fun_id, bool shapeless,
                         std::vector<uint64_t> constants) {
  if (!fun) throw std::invalid_argument("[compile] Cannot compile an empty function.");
  return [fun = std::move(fun), fun_id, shapeless,
          constants = std::move(constants)](const std::vector<array>& inputs) -> ArraysAndExtra {
    // Disabled (checked per call, so disable_compile also affects functions compiled
    // earlier), or inputs traced by a transformation: run the function as written.
    if (compile_mode() == CompileMode::disabled ||
        std::any_of(inputs.begin(), inputs.end(), [](const array& a) { return a.is_tracer(); })) {
      return fun(inputs);
    }
    const Stream stream = to_stream(StreamOrDevice{});
    auto entry = cache().find(fun_id, inputs, stream, shapeless, constants);
    if (!entry) {
      entry = trace(fun, inputs, stream, shapeless, constants);
      cache().insert(fun_id, entry);
    } else {
      g_replays.fetch_add(1, std::memory_order_relaxed);
    }
    return {replay(entry->program, inputs), entry->extra};
  };
}

ArrayFn compile(ArrayFn fun, std::uintptr_t fun_id, bool shapeless,
                std::vector<uint64_t> constants) {
  if (!fun) throw std::invalid_argument("[compile] Cannot compile an empty function.");
  auto with_extra = compile(
      [fun = std::move(fun)](const std::vector<array>& x) {
        return ArraysAndExtra{fun(x), nullptr};
      },
      fun_id, shapeless, std::move(constants));
  return [with_extra = std::move(with_extra)](const std::vector<array>& x) {
    return with_extra(x).first;
  };
}

ReplayProgram trace_for_export(const ArrayFn& fun, const std::vector<Shape>& shapes,
                               const std::vector<Dtype>& dtypes,
                               const std::vector<array>& originals, bool shapeless) {
  const Stream stream = to_stream(StreamOrDevice{});
  std::vector<array> placeholders;
  for (size_t i = 0; i < shapes.size(); ++i) {
    array p(shapes[i], dtypes[i], std::make_shared<CompileInput>(stream), {});
    p.set_tracer(true);
    placeholders.push_back(std::move(p));
  }
  std::vector<array> outputs;
  {
    TraceScope scope(shapeless);
    struct ExportScope {
      int saved = t_export_depth;
      ExportScope() { t_export_depth = t_trace_depth; }
      ~ExportScope() { t_export_depth = saved; }
    } export_scope;
    outputs = fun(placeholders);
  }
  Graph g = build_graph(placeholders, outputs, originals, shapeless);
  compile_ir::simplify(g);
  if (shapeless) compile_ir::make_shapeless(g);
  g.remove_dead();
  return lower(g);
}

void compile_erase(std::uintptr_t fun_id) {
  cache().erase(fun_id);
}

void compile_clear_cache() {
  cache().clear();
}

}  // namespace detail

ArrayFn compile(ArrayFn fun, bool shapeless) {
  if (!fun) throw std::invalid_argument("[compile] Cannot compile an empty function.");
  if (auto id = function_address(fun)) return detail::compile(std::move(fun), id, shapeless);
  // A closure: its cache is keyed by a heap cell that lives as long as the returned function
  // and its copies, and erases the entries when it dies.
  auto cell = std::shared_ptr<ArrayFn>(new ArrayFn(std::move(fun)), [](ArrayFn* p) {
    detail::compile_erase(reinterpret_cast<std::uintptr_t>(p));
    delete p;
  });
  auto id = reinterpret_cast<std::uintptr_t>(cell.get());
  return detail::compile([cell](const std::vector<array>& x) { return (*cell)(x); }, id, shapeless);
}

// ---------------------------------------------------------------- ReplayProgram

std::vector<array> ReplayProgram::build(const std::vector<array>& inputs) const {
  std::vector<array> vals;
  size_t total = inputs.size() + constants.size();
  for (const auto& s : steps) total += s.shapes.size();
  vals.reserve(total);
  vals.insert(vals.end(), inputs.begin(), inputs.end());
  vals.insert(vals.end(), constants.begin(), constants.end());
  std::vector<array> ins;
  for (const auto& s : steps) {
    ins.clear();
    for (int i : s.in) ins.push_back(vals[i]);
    if (shapeless) check_shapeless_inputs(*s.prim, ins);
    if (s.shapes.size() == 1) {
      Shape shape = shapeless ? s.prim->output_shapes(ins)[0] : s.shapes[0];
      vals.emplace_back(std::move(shape), s.dtypes[0], s.prim, ins);
    } else {
      std::vector<Shape> shapes = shapeless ? s.prim->output_shapes(ins) : s.shapes;
      auto outs = array::make_arrays(std::move(shapes), s.dtypes, s.prim, ins);
      for (auto& o : outs) vals.push_back(std::move(o));
    }
  }
  std::vector<array> outs;
  outs.reserve(outputs.size());
  for (int o : outputs) outs.push_back(vals[o]);
  return outs;
}

std::pair<Shape, Dtype> ReplayProgram::value_info(int v) const {
  if (v < num_inputs) throw std::logic_error("[compile] value_info of an input.");
  if (v < num_inputs + static_cast<int>(constants.size())) {
    const array& c = constants[v - num_inputs];
    return {c.shape(), c.dtype()};
  }
  int base = num_inputs + static_cast<int>(constants.size());
  for (const auto& st : steps) {
    if (v < base + static_cast<int>(st.shapes.size()))
      return {st.shapes[v - base], st.dtypes[v - base]};
    base += static_cast<int>(st.shapes.size());
  }
  throw std::logic_error("[compile] No value " + std::to_string(v) + " in the program.");
}

std::vector<array> ReplayProgram::run_now(std::vector<array> vals, bool gpu,
                                          const std::function<void(const array&)>& keep) const {
  std::vector<array> ins;
  for (const auto& s : steps) {
    ins.clear();
    for (int i : s.in) ins.push_back(vals[i]);
    std::vector<array> outs = s.shapes.size() == 1
                                  ? std::vector<array>{array(s.shapes[0], s.dtypes[0], s.prim, ins)}
                                  : array::make_arrays(s.shapes, s.dtypes, s.prim, ins);
    if (gpu)
      s.prim->eval_gpu(ins, outs);
    else
      s.prim->eval_cpu(ins, outs);
    for (auto& o : outs) {
      o.set_status(array::Status::available);
      if (keep) keep(o);
    }
    outs[0].detach();
    for (auto& o : outs) vals.push_back(std::move(o));
  }
  return vals;
}

// ---------------------------------------------------------------- CompiledGraph

namespace {

detail::GraphReplay initial_graph_replay() {
  const char* e = std::getenv("KILN_CUDA_GRAPHS");
  return e && *e && std::strcmp(e, "0") != 0 ? detail::GraphReplay::gpu : detail::GraphReplay::off;
}

std::atomic<detail::GraphReplay>& graph_replay_ref() {
  static std::atomic<detail::GraphReplay> m{initial_graph_replay()};
  return m;
}

}  // namespace

namespace detail {

GraphReplay graph_replay() {
  return graph_replay_ref().load(std::memory_order_relaxed);
}
void set_graph_replay(GraphReplay mode) {
  graph_replay_ref().store(mode, std::memory_order_relaxed);
}
size_t graph_replay_max_bytes() {
  static const size_t n = [] {
    const char* e = std::getenv("KILN_CUDA_GRAPHS_MAX_BYTES");
    return e && *e ? static_cast<size_t>(std::strtoull(e, nullptr, 10)) : size_t(16) << 20;
  }();
  return n;
}

}  // namespace detail

CompiledGraph::CompiledGraph(Stream stream, std::shared_ptr<const ReplayProgram> program,
                             std::vector<int> outputs)
    : Primitive(stream), program_(std::move(program)), outputs_(std::move(outputs)) {}

std::vector<Shape> CompiledGraph::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  for (const auto& o : unfused(inputs)) shapes.push_back(o.shape());
  return shapes;
}

std::vector<array> CompiledGraph::unfused(const std::vector<array>& inputs) const {
  // The program's graph on the function's inputs (the constants come last among ours).
  std::vector<array> fn_inputs(inputs.begin(), inputs.begin() + program_->num_inputs);
  ReplayProgram p = *program_;
  p.outputs = outputs_;
  return p.build(fn_inputs);
}

void CompiledGraph::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto vals = program_->run_now(inputs, false);
  for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_shared_buffer(vals[outputs_[i]]);
}

std::vector<array> CompiledGraph::jvp(const std::vector<array>& primals,
                                      const std::vector<array>& tangents,
                                      const std::vector<int>& argnums) {
  return detail::unfused_jvp([this](const auto& x) { return unfused(x); }, primals, tangents,
                             argnums, stream());
}

std::vector<array> CompiledGraph::vjp(const std::vector<array>& primals,
                                      const std::vector<array>& cotangents,
                                      const std::vector<int>& argnums, const std::vector<array>&) {
  return detail::unfused_vjp([this](const auto& x) { return unfused(x); }, primals, cotangents,
                             argnums);
}

std::pair<std::vector<array>, std::vector<int>> CompiledGraph::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  return detail::unfused_vmap([this](const auto& x) { return unfused(x); }, inputs, axes);
}

}  // namespace kiln
