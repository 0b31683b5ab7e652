// Function transformations: vjp, jvp, grad, vmap, custom_function, checkpoint.
//
// vjp and jvp trace: each primal gets a tracer copy (a TraceInput node sharing its buffer),
// `fun` builds its graph from the copies, and a walk over the nodes computed from them
// calls each primitive's vjp (reverse topological order) or jvp (forward order). vmap
// traces `fun` on placeholders of one slice (VmapInput) and replays the traced graph with
// each primitive's batched rule. Every walk is iterative, so graphs of 10^5 nodes are fine.
//
// Tracer flags: an array is a tracer while it depends on the copies of a transformation in
// progress; tracers keep their graph when evaluated, so `fun` may call eval. When a trace
// ends, arrays computed from its copies stay tracers only if they also depend on a tracer
// of an enclosing transformation (nesting), and evaluated ones release their graph.
#include "kiln/transforms.h"

#include <algorithm>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

#include "kiln/ops.h"
#include "kiln/primitives_transforms.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

using NodeSet = std::unordered_set<const void*>;
using detail::zeros_view;

// The stream for arrays derived from `a`: its primitive's, else the default.
Stream stream_of(const array& a) {
  return a.has_primitive() ? a.primitive().stream() : to_stream(StreamOrDevice{});
}

bool is_stop_gradient(const array& a) {
  return typeid(a.primitive()) == typeid(StopGradient);
}

// The graph nodes reachable from `roots` through tracer arrays, inputs before their users,
// one array per node (post-order DFS with an explicit stack). A non-tracer cannot depend on
// a traced input, so the walk prunes it; it does not enter `stops` (the traced inputs).
std::vector<array> traced_nodes(const std::vector<array>& roots, const NodeSet& stops) {
  std::vector<array> order;
  NodeSet seen(stops.begin(), stops.end());
  auto enter = [&](const array& a) {
    return a.has_primitive() && a.is_tracer() && seen.insert(a.graph_node()).second;
  };
  std::vector<std::pair<array, size_t>> stack;
  for (const auto& root : roots) {
    if (!enter(root)) continue;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [a, next] = stack.back();
      const auto& ins = a.inputs();
      if (next < ins.size()) {
        const array& in = ins[next++];
        if (enter(in)) {
          array child = in;  // copy before emplace_back invalidates the references
          stack.emplace_back(std::move(child), 0);
        }
      } else {
        order.push_back(std::move(a));
        stack.pop_back();
      }
    }
  }
  return order;
}

// The graph `fun` built from tracer copies of its primals.
struct Trace {
  std::vector<array> primals;
  std::vector<array> inputs;   // the tracer copies, one per primal
  std::vector<array> outputs;  // what fun returned
  std::vector<array> nodes;    // traced_nodes(outputs), inputs first
  NodeSet depends;             // nodes computed from the copies (the copies included)

  bool depends_on_inputs(const array& a) const { return depends.count(a.graph_node()) > 0; }
};

// Ends the trace once its graph is known, before the transformed graph is built from it: an
// array computed from the copies stays a tracer only if it depends on a tracer of an
// enclosing transformation.
void end_trace(Trace& t) {
  for (size_t i = 0; i < t.inputs.size(); ++i) t.inputs[i].set_tracer(t.primals[i].is_tracer());
  for (const auto& a : t.nodes) {
    if (!t.depends_on_inputs(a)) continue;
    const auto& ins = a.inputs();
    bool tracer = std::any_of(ins.begin(), ins.end(), [](const array& x) { return x.is_tracer(); });
    for (auto& o : a.outputs()) o.set_tracer(tracer);
  }
}

// Traces `fun` on tracer copies of `primals`, then ends the trace.
Trace trace(const ArrayFn& fun, const std::vector<array>& primals) {
  Trace t;
  t.primals = primals;
  for (const auto& p : primals) {
    array c(p.shape(), p.dtype(), std::make_shared<TraceInput>(stream_of(p)), {p});
    c.set_tracer(true);
    t.depends.insert(c.graph_node());
    t.inputs.push_back(std::move(c));
  }
  t.outputs = fun(t.inputs);
  t.nodes = traced_nodes(t.outputs, t.depends);
  for (const auto& a : t.nodes) {
    for (const auto& in : a.inputs()) {
      if (t.depends_on_inputs(in)) {
        t.depends.insert(a.graph_node());
        break;
      }
    }
  }
  end_trace(t);
  return t;
}

// Arrays `fun` evaluated kept their graph for the walk; now that the transformed graph is
// built, release it as eval would have (unless an enclosing transformation still traces).
void release_evaluated(Trace& t) {
  auto release = [](array& a) {
    if (!a.is_tracer() && a.has_primitive() && a.status() == array::Status::available) a.detach();
  };
  for (auto& a : t.nodes) {
    if (t.depends_on_inputs(a)) release(a);
  }
  for (auto& a : t.inputs) release(a);
}

// Checks what a primitive's transform returned against the arrays it belongs to: a wrong
// shape or dtype here is a bug in that primitive, reported with its name.
void check_transformed(const char* what, const array& node, const std::vector<array>& got,
                       const std::vector<array>& expected, const std::vector<int>& positions) {
  const char* name = node.primitive().name();
  if (got.size() != positions.size()) {
    throw std::logic_error(msg("[", what, "] Primitive ", name, " returned ", got.size(),
                               " arrays; expected ", positions.size(), "."));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const array& e = expected[positions[i]];
    if (got[i].shape() != e.shape() || got[i].dtype() != e.dtype()) {
      throw std::logic_error(msg("[", what, "] Primitive ", name, " returned an array of shape ",
                                 shape_str(got[i].shape()), " and dtype ", got[i].dtype(),
                                 " for position ", positions[i], " of shape ", shape_str(e.shape()),
                                 " and dtype ", e.dtype(), "."));
    }
  }
}

// Whether the arrays being differentiated are all integers (and at least one is).
bool integer_mode(const std::vector<Dtype>& dtypes) {
  bool any = false;
  for (Dtype d : dtypes) {
    if (is_inexact(d)) return false;
    any = any || d != bool_;
  }
  return any;
}

std::vector<int> iota(size_t n) {
  std::vector<int> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int>(i);
  return v;
}

// Cotangents for the first outputs of `fun`, given the outputs (validates them).
using SeedFn = std::function<std::vector<array>(const std::vector<array>& outputs)>;

// Reverse mode over the traced graph; returns (outputs, gradients of primals[argnums]).
std::pair<std::vector<array>, std::vector<array>> vjp_impl(const ArrayFn& fun,
                                                           const std::vector<array>& primals,
                                                           const std::vector<int>& argnums,
                                                           const SeedFn& seed) {
  Trace t = trace(fun, primals);
  auto cotangents = seed(t.outputs);

  // The tape: nodes that receive a cotangent, with the inputs to differentiate. Cotangents
  // flow from differentiated primals through floating-point arrays, cut at stop_gradient.
  // When every differentiated primal is an integer array, cotangents flow through integer
  // arrays too (MLX's grad of an integer function gives integer gradients); otherwise only
  // floating-point arrays carry them.
  const bool ints = integer_mode([&] {
    std::vector<Dtype> d;
    for (int a : argnums) d.push_back(primals[a].dtype());
    return d;
  }());
  auto flows = [ints](Dtype d) { return is_inexact(d) || (ints && d != bool_); };
  NodeSet needs;
  for (int a : argnums) {
    if (flows(primals[a].dtype())) needs.insert(t.inputs[a].graph_node());
  }
  auto carries = [&](const array& x) {
    return flows(x.dtype()) && needs.count(x.graph_node()) > 0;
  };
  std::vector<std::pair<array, std::vector<int>>> tape;
  for (const auto& a : t.nodes) {
    if (is_stop_gradient(a)) continue;
    std::vector<int> args;
    const auto& ins = a.inputs();
    for (size_t i = 0; i < ins.size(); ++i) {
      if (carries(ins[i])) args.push_back(static_cast<int>(i));
    }
    if (args.empty()) continue;
    needs.insert(a.graph_node());
    tape.emplace_back(a, std::move(args));
  }

  std::unordered_map<uintptr_t, array> cotan;
  auto accumulate = [&](const array& x, const array& g, const Stream& s) {
    auto [it, fresh] = cotan.try_emplace(x.id(), g);
    if (!fresh) it->second = add(it->second, g, s);
  };
  for (size_t i = 0; i < cotangents.size(); ++i) {
    const array& out = t.outputs[i];
    if (flows(out.dtype())) accumulate(out, cotangents[i], stream_of(out));
  }
  for (auto it = tape.rbegin(); it != tape.rend(); ++it) {
    auto& [a, args] = *it;
    auto outs = a.outputs();
    bool reached =
        std::any_of(outs.begin(), outs.end(), [&](auto& o) { return cotan.count(o.id()); });
    if (!reached) continue;
    const Stream s = a.primitive().stream();
    std::vector<array> cts;
    cts.reserve(outs.size());
    for (const auto& o : outs) {
      // Extracted, so each cotangent is referenced only by the graph that consumes it.
      if (auto f = cotan.find(o.id()); f != cotan.end()) {
        cts.push_back(std::move(f->second));
        cotan.erase(f);
      } else {
        cts.push_back(zeros_view(o.shape(), o.dtype(), s));
      }
    }
    auto vjps = a.primitive().vjp(a.inputs(), cts, args, outs);
    if (ints) {
      // Integer inputs mixed with floats (x_int * w): the cotangent takes the input's dtype.
      for (size_t j = 0; j < args.size(); ++j) {
        Dtype d = a.inputs()[args[j]].dtype();
        if (vjps[j].dtype() != d) vjps[j] = astype(vjps[j], d, s);
      }
    }
    check_transformed("vjp", a, vjps, a.inputs(), args);
    for (size_t j = 0; j < args.size(); ++j) accumulate(a.inputs()[args[j]], vjps[j], s);
  }

  std::vector<array> grads;
  grads.reserve(argnums.size());
  for (int a : argnums) {
    auto f = cotan.find(t.inputs[a].id());
    grads.push_back(f != cotan.end() ? f->second
                                     : zeros_view(primals[a].shape(), primals[a].dtype(),
                                                  stream_of(primals[a])));
  }
  release_evaluated(t);
  return {t.outputs, std::move(grads)};
}

std::pair<std::vector<array>, std::vector<array>> jvp_impl(const ArrayFn& fun,
                                                           const std::vector<array>& primals,
                                                           const std::vector<array>& tangents) {
  Trace t = trace(fun, primals);

  // Tangents travel only through floating-point arrays (bool ones never have any), and
  // through integer ones too when every primal is an integer array (as MLX, so the jvp of
  // an integer sum is the sum of the integer tangents).
  const bool ints = integer_mode([&] {
    std::vector<Dtype> d;
    for (auto& p : primals) d.push_back(p.dtype());
    return d;
  }());
  auto flows = [ints](Dtype d) { return is_inexact(d) || (ints && d != bool_); };
  std::unordered_map<uintptr_t, array> tan;
  for (size_t i = 0; i < primals.size(); ++i) {
    if (flows(primals[i].dtype())) tan.try_emplace(t.inputs[i].id(), tangents[i]);
  }
  for (const auto& a : t.nodes) {
    if (!t.depends_on_inputs(a) || is_stop_gradient(a)) continue;
    std::vector<int> args;
    std::vector<array> ts;
    const auto& ins = a.inputs();
    for (size_t i = 0; i < ins.size(); ++i) {
      if (auto f = tan.find(ins[i].id()); f != tan.end()) {
        args.push_back(static_cast<int>(i));
        ts.push_back(f->second);
      }
    }
    if (args.empty()) continue;
    auto outs = a.outputs();
    if (std::none_of(outs.begin(), outs.end(), [&](auto& o) { return flows(o.dtype()); })) {
      continue;
    }
    auto jvps = a.primitive().jvp(ins, ts, args);
    if (ints) {
      for (size_t j = 0; j < outs.size(); ++j) {
        if (jvps[j].dtype() != outs[j].dtype())
          jvps[j] = astype(jvps[j], outs[j].dtype(), a.primitive().stream());
      }
    }
    check_transformed("jvp", a, jvps, outs, iota(outs.size()));
    for (size_t j = 0; j < outs.size(); ++j) {
      if (flows(outs[j].dtype())) tan.try_emplace(outs[j].id(), std::move(jvps[j]));
    }
  }

  std::vector<array> out_tangents;
  out_tangents.reserve(t.outputs.size());
  for (const auto& o : t.outputs) {
    auto f = tan.find(o.id());
    out_tangents.push_back(f != tan.end() ? f->second
                                          : zeros_view(o.shape(), o.dtype(), stream_of(o)));
  }
  release_evaluated(t);
  return {t.outputs, std::move(out_tangents)};
}

// Argument numbers of grad normalized against the call's inputs (negative from the end).
std::vector<int> check_argnums(const std::vector<int>& argnums, const std::vector<array>& inputs) {
  const int n = static_cast<int>(inputs.size());
  auto shapes = [&] {
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? ", " : "") + shape_str(inputs[i].shape());
    return s;
  };
  std::vector<int> out;
  for (size_t i = 0; i < argnums.size(); ++i) {
    int a = argnums[i];
    if (a < -n || a >= n) {
      throw std::invalid_argument(msg("[grad] argnums[", i, "] = ", a,
                                      " is out of range for a function called with ", n,
                                      " arguments of shapes ", shapes(), "."));
    }
    a = a < 0 ? a + n : a;
    if (std::find(out.begin(), out.end(), a) != out.end()) {
      throw std::invalid_argument(msg("[grad] argnums[", i, "] = ", argnums[i],
                                      " selects argument ", a, " (shape ",
                                      shape_str(inputs[a].shape()), ") a second time."));
    }
    out.push_back(a);
  }
  return out;
}

// The cotangent 1 of grad's loss, after checking it has one element (Python's grad, as
// MLX's, also requires shape ()); integer losses and arguments are differentiated too,
// giving integer gradients as in MLX.
std::vector<array> loss_seed(const std::vector<array>& outputs) {
  if (outputs.empty()) {
    throw std::invalid_argument(
        "[grad] The function returned no outputs; its first output must be the loss.");
  }
  const array& loss = outputs[0];
  if (loss.size() != 1) {
    throw std::invalid_argument(
        msg("[grad] The function must return a scalar loss (one element) "
            "as its first output; got shape ",
            shape_str(loss.shape()), "."));
  }
  return {broadcast_to(array(1.0, loss.dtype()), loss.shape(), stream_of(loss))};
}

std::vector<array> vmap_impl(const ArrayFn& fun, const std::vector<array>& inputs,
                             std::vector<int> in_axes, std::vector<int> out_axes) {
  if (in_axes.empty()) in_axes.assign(inputs.size(), 0);
  if (in_axes.size() != inputs.size()) {
    throw std::invalid_argument(
        msg("[vmap] Got ", in_axes.size(), " in_axes for ", inputs.size(), " inputs."));
  }
  // Placeholders of one slice stand for the mapped inputs; unmapped ones are used as is.
  int batch = -1, first = -1;
  std::vector<array> s_inputs;
  NodeSet stops;
  std::unordered_map<uintptr_t, std::pair<array, int>> mapped;  // traced id -> (batched, axis)
  for (size_t i = 0; i < inputs.size(); ++i) {
    const array& x = inputs[i];
    const int ax = in_axes[i], nd = static_cast<int>(x.ndim());
    if (ax == -1) {
      if (x.has_primitive()) stops.insert(x.graph_node());
      s_inputs.push_back(x);
      continue;
    }
    if (nd == 0) {
      throw std::invalid_argument(msg("[vmap] in_axes[", i, "] = ", ax, " maps input ", i,
                                      ", which is 0-d; use -1 to leave it unmapped."));
    }
    if (ax < -1 || ax >= nd) {
      throw std::invalid_argument(
          msg("[vmap] in_axes[", i, "] = ", ax, " is out of range for input ", i, " of shape ",
              shape_str(x.shape()), "; use 0 to ", nd - 1, ", or -1 to leave it unmapped."));
    }
    if (batch >= 0 && x.shape(ax) != batch) {
      throw std::invalid_argument(msg("[vmap] Mapped axes differ in size: input ", first,
                                      " of shape ", shape_str(inputs[first].shape()), " (axis ",
                                      in_axes[first], ") and input ", i, " of shape ",
                                      shape_str(x.shape()), " (axis ", ax, ")."));
    }
    batch = x.shape(ax);
    if (first < 0) first = static_cast<int>(i);
    Shape shape = x.shape();
    shape.erase(shape.begin() + ax);
    array p(std::move(shape), x.dtype(), std::make_shared<VmapInput>(stream_of(x)), {});
    p.set_tracer(true);
    stops.insert(p.graph_node());
    mapped.try_emplace(p.id(), x, ax);
    s_inputs.push_back(std::move(p));
  }
  if (batch < 0) {
    throw std::invalid_argument("[vmap] At least one input must be mapped; all in_axes are -1.");
  }

  auto outputs = fun(s_inputs);
  if (out_axes.empty()) out_axes.assign(outputs.size(), 0);
  if (out_axes.size() != outputs.size()) {
    throw std::invalid_argument(msg("[vmap] Got ", out_axes.size(),
                                    " out_axes for a function with ", outputs.size(), " outputs."));
  }
  for (size_t j = 0; j < outputs.size(); ++j) {
    const int nd = static_cast<int>(outputs[j].ndim());
    if (out_axes[j] < 0 || out_axes[j] > nd) {
      throw std::invalid_argument(msg("[vmap] out_axes[", j, "] = ", out_axes[j],
                                      " is out of range for output ", j, " of shape ",
                                      shape_str(outputs[j].shape()),
                                      " (without the mapped axis); use 0 to ", nd, "."));
    }
  }

  // Replay every node computed from a placeholder with its primitive's batched rule.
  for (const auto& a : traced_nodes(outputs, stops)) {
    const auto& ins = a.inputs();
    std::vector<array> v_in;
    std::vector<int> v_axes;
    bool any = false;
    for (const auto& in : ins) {
      if (auto f = mapped.find(in.id()); f != mapped.end()) {
        v_in.push_back(f->second.first);
        v_axes.push_back(f->second.second);
        any = true;
      } else {
        v_in.push_back(in);
        v_axes.push_back(-1);
      }
    }
    if (!any) continue;
    auto outs = a.outputs();
    auto [v_out, v_out_axes] = a.primitive().vmap(v_in, v_axes);
    if (v_out.size() != outs.size() || v_out_axes.size() != outs.size()) {
      throw std::logic_error(msg("[vmap] Primitive ", a.primitive().name(), " returned ",
                                 v_out.size(), " arrays and ", v_out_axes.size(), " axes for ",
                                 outs.size(), " outputs."));
    }
    for (size_t j = 0; j < outs.size(); ++j) {
      Shape expected = outs[j].shape();
      const int ax = v_out_axes[j];
      if (ax >= 0 && ax <= static_cast<int>(expected.size()))
        expected.insert(expected.begin() + ax, batch);
      if (ax < -1 || v_out[j].shape() != expected || v_out[j].dtype() != outs[j].dtype()) {
        throw std::logic_error(msg("[vmap] Primitive ", a.primitive().name(), " returned output ",
                                   j, " of shape ", shape_str(v_out[j].shape()), " and dtype ",
                                   v_out[j].dtype(), " mapped at axis ", ax,
                                   " for an output of shape ", shape_str(outs[j].shape()),
                                   " and dtype ", outs[j].dtype(), " with ", batch, " slices."));
      }
      mapped.try_emplace(outs[j].id(), std::move(v_out[j]), ax);
    }
  }

  std::vector<array> results;
  results.reserve(outputs.size());
  for (size_t j = 0; j < outputs.size(); ++j) {
    const int oa = out_axes[j];
    array base = outputs[j];
    if (auto f = mapped.find(base.id()); f != mapped.end()) {
      auto& [v, ax] = f->second;
      if (ax >= 0) {
        results.push_back(ax == oa ? v : moveaxis(v, ax, oa, stream_of(v)));
        continue;
      }
      base = v;
    }
    // Does not depend on a mapped input: the same for every slice.
    Shape shape = base.shape();
    shape.insert(shape.begin() + oa, batch);
    Stream s = stream_of(base);
    results.push_back(broadcast_to(expand_dims(base, oa, s), shape, s));
  }
  return results;
}

// The rules custom_function uses when the user gives none: transform `fun` itself.
CustomVjpFn default_vjp(ArrayFn fun) {
  return [fun = std::move(fun)](const std::vector<array>& primals,
                                const std::vector<array>& cotangents, const std::vector<array>&) {
    return vjp(fun, primals, cotangents).second;
  };
}

CustomJvpFn default_jvp(ArrayFn fun) {
  return
      [fun = std::move(fun)](const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>& argnums) {
        std::vector<array> all;
        for (const auto& p : primals) all.push_back(zeros_view(p.shape(), p.dtype(), stream_of(p)));
        for (size_t i = 0; i < argnums.size(); ++i) all[argnums[i]] = tangents[i];
        return jvp(fun, primals, all).second;
      };
}

CustomVmapFn default_vmap(ArrayFn fun) {
  return [fun = std::move(fun)](const std::vector<array>& inputs, const std::vector<int>& axes) {
    auto outs = vmap(fun, axes)(inputs);
    return std::make_pair(outs, std::vector<int>(outs.size(), 0));
  };
}

ArrayFn make_custom(ArrayFn fun, CustomVjpFn fvjp, CustomJvpFn fjvp, CustomVmapFn fvmap,
                    std::string name) {
  return [=](const std::vector<array>& args) {
    auto outputs = fun(args);
    if (outputs.empty()) return outputs;
    // The node's inputs are the arguments, then the computed outputs, whose buffers it
    // shares; stop_gradient keeps transformations from looking inside them.
    std::vector<array> inputs = args;
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
    for (const auto& o : outputs) {
      shapes.push_back(o.shape());
      dtypes.push_back(o.dtype());
      inputs.push_back(stop_gradient(o, stream_of(o)));
    }
    auto prim = std::make_shared<CustomTransforms>(
        stream_of(outputs[0]), static_cast<int>(outputs.size()), fvjp, fjvp, fvmap, name);
    return array::make_arrays(std::move(shapes), dtypes, prim, inputs);
  };
}

}  // namespace

// Outputs equal to `inputs` (sharing their buffers), computed only after `deps` (MLX's
// depends; checkpoint uses it to order the recomputation after the forward pass).
std::vector<array> depends(const std::vector<array>& inputs, const std::vector<array>& deps) {
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& x : inputs) {
    shapes.push_back(x.shape());
    dtypes.push_back(x.dtype());
  }
  std::vector<array> all = inputs;
  all.insert(all.end(), deps.begin(), deps.end());
  Stream s = deps.empty() ? to_stream(StreamOrDevice{}) : stream_of(deps[0]);
  return array::make_arrays(std::move(shapes), dtypes,
                            std::make_shared<Depends>(s, static_cast<int>(inputs.size())), all);
}

// ---------------------------------------------------------------- vjp and jvp

std::pair<std::vector<array>, std::vector<array>> vjp(const ArrayFn& fun,
                                                      const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents) {
  auto seed = [&](const std::vector<array>& outputs) {
    if (cotangents.size() != outputs.size()) {
      throw std::invalid_argument(msg("[vjp] Got ", cotangents.size(),
                                      " cotangents for a function with ", outputs.size(),
                                      " outputs."));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (cotangents[i].shape() != outputs[i].shape()) {
        throw std::invalid_argument(msg("[vjp] cotangents[", i, "] has shape ",
                                        shape_str(cotangents[i].shape()), " but output ", i,
                                        " has shape ", shape_str(outputs[i].shape()), "."));
      }
    }
    // A cotangent of another dtype is converted to its output's (MLX accepts, e.g., an int64
    // cotangent for an int32 output).
    std::vector<array> seeds = cotangents;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (seeds[i].dtype() != outputs[i].dtype()) seeds[i] = astype(seeds[i], outputs[i].dtype());
    }
    return seeds;
  };
  return vjp_impl(fun, primals, iota(primals.size()), seed);
}

std::pair<array, array> vjp(const UnaryFn& fun, const array& primal, const array& cotangent) {
  auto [outs, vjps] =
      vjp([&](const std::vector<array>& x) { return std::vector<array>{fun(x[0])}; }, {primal},
          {cotangent});
  return {outs[0], vjps[0]};
}

std::pair<std::vector<array>, std::vector<array>> jvp(const ArrayFn& fun,
                                                      const std::vector<array>& primals,
                                                      const std::vector<array>& tangents) {
  if (tangents.size() != primals.size()) {
    throw std::invalid_argument(
        msg("[jvp] Got ", tangents.size(), " tangents for ", primals.size(), " primals."));
  }
  for (size_t i = 0; i < primals.size(); ++i) {
    if (tangents[i].shape() != primals[i].shape()) {
      throw std::invalid_argument(msg("[jvp] tangents[", i, "] has shape ",
                                      shape_str(tangents[i].shape()), " but primals[", i,
                                      "] has shape ", shape_str(primals[i].shape()), "."));
    }
    if (tangents[i].dtype() != primals[i].dtype()) {
      throw std::invalid_argument(msg("[jvp] tangents[", i, "] has dtype ", tangents[i].dtype(),
                                      " but primals[", i, "] has dtype ", primals[i].dtype(), "."));
    }
  }
  return jvp_impl(fun, primals, tangents);
}

std::pair<array, array> jvp(const UnaryFn& fun, const array& primal, const array& tangent) {
  auto [outs, jvps] =
      jvp([&](const std::vector<array>& x) { return std::vector<array>{fun(x[0])}; }, {primal},
          {tangent});
  return {outs[0], jvps[0]};
}

// ---------------------------------------------------------------- grad and value_and_grad

ValueAndGradFn value_and_grad(const ArrayFn& fun, const std::vector<int>& argnums) {
  if (argnums.empty()) {
    throw std::invalid_argument(
        "[grad] argnums is empty; give at least one argument to differentiate.");
  }
  return [fun, argnums](const std::vector<array>& inputs) {
    return vjp_impl(fun, inputs, check_argnums(argnums, inputs), loss_seed);
  };
}

ValueAndGradFn value_and_grad(const ArrayFn& fun, int argnum) {
  return value_and_grad(fun, std::vector<int>{argnum});
}

SimpleValueAndGradFn value_and_grad(const ScalarFn& fun, const std::vector<int>& argnums) {
  auto vg = value_and_grad(
      ArrayFn([fun](const std::vector<array>& x) { return std::vector<array>{fun(x)}; }), argnums);
  return [vg](const std::vector<array>& inputs) {
    auto [outs, grads] = vg(inputs);
    return std::make_pair(outs[0], std::move(grads));
  };
}

SimpleValueAndGradFn value_and_grad(const ScalarFn& fun, int argnum) {
  return value_and_grad(fun, std::vector<int>{argnum});
}

std::function<std::pair<array, array>(const array&)> value_and_grad(const UnaryFn& fun) {
  auto vg = value_and_grad(ScalarFn([fun](const std::vector<array>& x) { return fun(x[0]); }), 0);
  return [vg](const array& x) {
    auto [value, grads] = vg({x});
    return std::make_pair(value, grads[0]);
  };
}

ArrayFn grad(const ScalarFn& fun, const std::vector<int>& argnums) {
  auto vg = value_and_grad(fun, argnums);
  return [vg](const std::vector<array>& inputs) { return vg(inputs).second; };
}

ArrayFn grad(const ScalarFn& fun, int argnum) {
  return grad(fun, std::vector<int>{argnum});
}

UnaryFn grad(const UnaryFn& fun) {
  auto vg = value_and_grad(fun);
  return [vg](const array& x) { return vg(x).second; };
}

// ---------------------------------------------------------------- vmap

ArrayFn vmap(const ArrayFn& fun, const std::vector<int>& in_axes,
             const std::vector<int>& out_axes) {
  return [fun, in_axes, out_axes](const std::vector<array>& inputs) {
    return vmap_impl(fun, inputs, in_axes, out_axes);
  };
}

std::function<array(const array&, const array&)> vmap(
    const std::function<array(const array&, const array&)>& fun, int in_axis_a, int in_axis_b,
    int out_axis) {
  ArrayFn f = [fun](const std::vector<array>& x) { return std::vector<array>{fun(x[0], x[1])}; };
  auto vf = vmap(f, {in_axis_a, in_axis_b}, {out_axis});
  return [vf](const array& a, const array& b) { return vf({a, b})[0]; };
}

UnaryFn vmap(const UnaryFn& fun, int in_axis, int out_axis) {
  ArrayFn f = [fun](const std::vector<array>& x) { return std::vector<array>{fun(x[0])}; };
  auto vf = vmap(f, {in_axis}, {out_axis});
  return [vf](const array& x) { return vf({x})[0]; };
}

// ---------------------------------------------------------------- custom transforms

ArrayFn custom_function(ArrayFn fun, std::optional<CustomVjpFn> fun_vjp,
                        std::optional<CustomJvpFn> fun_jvp, std::optional<CustomVmapFn> fun_vmap) {
  if (!fun_vjp && !fun_jvp && !fun_vmap) return fun;
  auto fvjp = fun_vjp ? std::move(*fun_vjp) : default_vjp(fun);
  auto fjvp = fun_jvp ? std::move(*fun_jvp) : default_jvp(fun);
  auto fvmap = fun_vmap ? std::move(*fun_vmap) : default_vmap(fun);
  return make_custom(std::move(fun), std::move(fvjp), std::move(fjvp), std::move(fvmap),
                     "CustomTransforms");
}

ArrayFn custom_vjp(ArrayFn fun, CustomVjpFn fun_vjp) {
  return custom_function(std::move(fun), std::move(fun_vjp));
}

ArrayFn checkpoint(ArrayFn fun) {
  CustomVjpFn recompute = [fun](const std::vector<array>& primals,
                                const std::vector<array>& cotangents,
                                const std::vector<array>& outputs) {
    // Recompute from inputs that wait for the forward outputs, so the recomputed
    // intermediates are never alive at the same time as the forward pass's.
    return vjp(fun, depends(primals, outputs), cotangents).second;
  };
  return make_custom(fun, std::move(recompute), default_jvp(fun), default_vmap(fun), "Checkpoint");
}

}  // namespace kiln
