// Rewrites a traced program into one whose every step has a codec (see export_program.h).
#include "kiln/export_program.h"

#include "kiln/compile.h"
#include "kiln/export_state.h"
#include "kiln/fast_primitives.h"
#include "kiln/io/load_primitive.h"
#include "kiln/primitives_transforms.h"
#include "kiln/utils.h"

namespace kiln::export_detail {

namespace {

// A value by origin, so steps can be spliced in and removed before numbering.
struct Sym {
  enum Kind { input, constant, step } kind;
  int idx;
  int out = 0;
};

struct SymStep {
  std::shared_ptr<Primitive> prim;
  std::vector<Sym> in;
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
};

struct SymProgram {
  int num_inputs = 0;
  std::vector<array> constants;
  std::vector<SymStep> steps;
  std::vector<Sym> outputs;
  bool shapeless = false;
};

// The origin of each numbered value of a replay program.
std::vector<Sym> value_table(const ReplayProgram& p) {
  std::vector<Sym> t;
  for (int i = 0; i < p.num_inputs; ++i) t.push_back({Sym::input, i});
  for (size_t i = 0; i < p.constants.size(); ++i) t.push_back({Sym::constant, static_cast<int>(i)});
  for (size_t s = 0; s < p.steps.size(); ++s)
    for (size_t o = 0; o < p.steps[s].shapes.size(); ++o)
      t.push_back({Sym::step, static_cast<int>(s), static_cast<int>(o)});
  return t;
}

SymProgram rewrite(const ReplayProgram& p, const std::vector<Shape>& in_shapes,
                   const std::vector<Dtype>& in_dtypes);

// Appends `sub` (a program of `args`) to `out`; returns the values of its outputs.
std::vector<Sym> splice(SymProgram& out, const SymProgram& sub, const std::vector<Sym>& args) {
  const int const_base = static_cast<int>(out.constants.size());
  const int step_base = static_cast<int>(out.steps.size());
  out.constants.insert(out.constants.end(), sub.constants.begin(), sub.constants.end());
  auto map = [&](const Sym& s) -> Sym {
    switch (s.kind) {
      case Sym::input:
        return args[s.idx];
      case Sym::constant:
        return {Sym::constant, const_base + s.idx};
      default:
        return {Sym::step, step_base + s.idx, s.out};
    }
  };
  for (const auto& st : sub.steps) {
    SymStep n{st.prim, {}, st.shapes, st.dtypes};
    for (const auto& s : st.in) n.in.push_back(map(s));
    out.steps.push_back(std::move(n));
  }
  std::vector<Sym> outs;
  for (const auto& s : sub.outputs) outs.push_back(map(s));
  return outs;
}

// Whether the import rebuilds `prim` through its op (a codec with an input loader that
// gives an equivalent primitive for these inputs).
bool rebuilds(const Primitive& prim, const std::vector<Shape>& shapes,
              const std::vector<Dtype>& dtypes) {
  const Codec* c = registry().by_type(prim);
  if (!c || !c->load_inputs) return false;
  try {
    StateWriter w;
    c->save(prim, w);
    State state = w.take();
    StateReader r(state, c->key);
    auto back = c->load_inputs(r, prim.stream(), shapes, dtypes);
    r.done();
    return back && back->is_equivalent(prim);
  } catch (const std::exception&) {
    return false;
  }
}

SymProgram rewrite(const ReplayProgram& p, const std::vector<Shape>& in_shapes,
                   const std::vector<Dtype>& in_dtypes) {
  SymProgram out;
  out.num_inputs = p.num_inputs;
  out.constants = p.constants;
  out.shapeless = p.shapeless;
  const auto table = value_table(p);
  // New value of each old value (inputs and constants keep theirs).
  std::vector<std::vector<Sym>> step_outs(p.steps.size());
  auto mapped = [&](int v) -> Sym {
    const Sym& s = table[v];
    return s.kind == Sym::step ? step_outs[s.idx][s.out] : s;
  };
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const auto& st = p.steps[si];
    std::vector<Sym> in;
    for (int v : st.in) in.push_back(mapped(v));
    // The shapes and dtypes of the step's inputs.
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
    for (int v : st.in) {
      const Sym& s = table[v];
      if (s.kind == Sym::step) {
        shapes.push_back(p.steps[s.idx].shapes[s.out]);
        dtypes.push_back(p.steps[s.idx].dtypes[s.out]);
      } else if (s.kind == Sym::constant) {
        shapes.push_back(p.constants[s.idx].shape());
        dtypes.push_back(p.constants[s.idx].dtype());
      } else {
        shapes.push_back(in_shapes[s.idx]);
        dtypes.push_back(in_dtypes[s.idx]);
      }
    }
    // Fused fast operations and compiled nodes keep closures or generated code: export the
    // operations they stand for, unless the fast op rebuilds the same node on import.
    ArrayFn expansion;
    if (auto* custom = dynamic_cast<fast::Custom*>(st.prim.get())) {
      if (!rebuilds(*st.prim, shapes, dtypes)) expansion = custom->fallback();
    } else if (auto* compiled = dynamic_cast<Compiled*>(st.prim.get())) {
      expansion = [prim = st.prim, compiled](const std::vector<array>& x) {
        return compiled->unfused(x);
      };
    } else if (auto* group = dynamic_cast<CompiledGroup*>(st.prim.get())) {
      expansion = [prim = st.prim, group](const std::vector<array>& x) {
        return group->unfused(x);
      };
    } else if (auto* graph = dynamic_cast<CompiledGraph*>(st.prim.get())) {
      expansion = [prim = st.prim, graph](const std::vector<array>& x) {
        return graph->unfused(x);
      };
    }
    if (expansion) {
      ReplayProgram sub = detail::trace_for_export(expansion, shapes, dtypes, {}, p.shapeless);
      if (sub.outputs.size() != st.shapes.size()) {
        throw std::invalid_argument(msg("[export_function] The expansion of ", st.prim->name(),
                                        " returns ", sub.outputs.size(), " arrays for its ",
                                        st.shapes.size(), " outputs; it cannot be exported."));
      }
      step_outs[si] = splice(out, rewrite(sub, shapes, dtypes), in);
      continue;
    }
    if (dynamic_cast<CustomTransforms*>(st.prim.get())) {
      // custom_function: its inputs end with the forward outputs (behind stop_gradient).
      const size_t n_out = st.shapes.size();
      for (size_t k = 0; k < n_out; ++k) {
        Sym s = in[in.size() - n_out + k];
        if (s.kind == Sym::step && dynamic_cast<StopGradient*>(out.steps[s.idx].prim.get()))
          s = out.steps[s.idx].in[0];
        step_outs[si].push_back(s);
      }
      continue;
    }
    if (dynamic_cast<Load*>(st.prim.get())) {
      // A file read: its data now is what the function read.
      array a(st.shapes[0], st.dtypes[0], st.prim, {});
      a.eval();
      out.constants.push_back(a);
      step_outs[si] = {{Sym::constant, static_cast<int>(out.constants.size() - 1)}};
      continue;
    }
    out.steps.push_back({st.prim, std::move(in), st.shapes, st.dtypes});
    for (size_t o = 0; o < st.shapes.size(); ++o)
      step_outs[si].push_back(
          {Sym::step, static_cast<int>(out.steps.size() - 1), static_cast<int>(o)});
  }
  for (int v : p.outputs) out.outputs.push_back(mapped(v));
  return out;
}

// Drops steps and constants no output needs, and numbers the values.
ReplayProgram finish(const SymProgram& sp) {
  std::vector<bool> live_step(sp.steps.size(), false), live_const(sp.constants.size(), false);
  auto mark = [&](const Sym& s) {
    if (s.kind == Sym::step) live_step[s.idx] = true;
    if (s.kind == Sym::constant) live_const[s.idx] = true;
  };
  for (const auto& s : sp.outputs) mark(s);
  for (size_t i = sp.steps.size(); i-- > 0;)
    if (live_step[i])
      for (const auto& s : sp.steps[i].in) mark(s);

  ReplayProgram p;
  p.num_inputs = sp.num_inputs;
  p.shapeless = sp.shapeless;
  std::vector<int> const_value(sp.constants.size(), -1);
  for (size_t i = 0; i < sp.constants.size(); ++i) {
    if (!live_const[i]) continue;
    const_value[i] = p.num_inputs + static_cast<int>(p.constants.size());
    p.constants.push_back(sp.constants[i]);
  }
  int next = p.num_inputs + static_cast<int>(p.constants.size());
  std::vector<int> step_value(sp.steps.size(), -1);
  auto number = [&](const Sym& s) {
    switch (s.kind) {
      case Sym::input:
        return s.idx;
      case Sym::constant:
        return const_value[s.idx];
      default:
        return step_value[s.idx] + s.out;
    }
  };
  for (size_t i = 0; i < sp.steps.size(); ++i) {
    if (!live_step[i]) continue;
    const auto& st = sp.steps[i];
    ReplayProgram::Step s{st.prim, {}, st.shapes, st.dtypes};
    for (const auto& in : st.in) s.in.push_back(number(in));
    step_value[i] = next;
    next += static_cast<int>(st.shapes.size());
    p.steps.push_back(std::move(s));
  }
  for (const auto& o : sp.outputs) p.outputs.push_back(number(o));
  return p;
}

}  // namespace

ReplayProgram trace_program(const ArrayFn& fun, const std::vector<Shape>& shapes,
                            const std::vector<Dtype>& dtypes, const std::vector<array>& originals,
                            bool shapeless) {
  ReplayProgram traced = detail::trace_for_export(fun, shapes, dtypes, originals, shapeless);
  return finish(rewrite(traced, shapes, dtypes));
}

}  // namespace kiln::export_detail
