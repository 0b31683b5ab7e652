// custom_function with MLX's Python semantics: a function whose vjp, jvp and vmap are
// rules the user attaches (as decorators), on top of kiln::custom_function.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "bindings.h"
#include "convert.h"
#include "kiln/transforms.h"
#include "transforms_common.h"
#include "trees.h"

namespace kiln::python {

namespace {

class CustomFunction {
 public:
  explicit CustomFunction(py::function fun) : fun_(std::move(fun)) {}

  py::object call(const py::tuple& args, const py::dict& kwargs) const;

  py::function fun_;
  std::optional<py::function> vjp_, jvp_, vmap_;
};

struct CustomState {
  py::function fun;
  std::optional<py::function> vjp_fn, jvp_fn, vmap_fn;
  py::tuple args;
  std::vector<int> which;
  py::dict kwargs;
  py::object out;
};

// The arrays of `result` as one per array leaf of `like` (a tuple of argument trees); None
// for a whole argument means zeros for its arrays.
std::vector<array> per_leaf(py::handle result, const py::tuple& like, const char* op,
                            const char* what) {
  py::object r = py::reinterpret_borrow<py::object>(result);
  if (like.size() == 1 && !(PyTuple_Check(r.ptr()) && py::len(r) == 1 && is_array(like[0]))) {
    r = py::make_tuple(r);
  }
  if (!(PyTuple_Check(r.ptr()) || PyList_Check(r.ptr())) || py::len(r) != like.size()) {
    throw std::invalid_argument(msg("[", op, "] The ", what,
                                    " rule must return one value per primal (", like.size(), ")."));
  }
  std::vector<array> out;
  auto seq = py::reinterpret_borrow<py::sequence>(r);
  for (size_t i = 0; i < like.size(); ++i) {
    if (seq[i].is_none()) {
      for (auto& a : tree_arrays(like[i])) out.push_back(zeros_like(a));
    } else {
      auto v = tree_arrays_strict(seq[i], op, msg("The ", what, " of primal ", i));
      out.insert(out.end(), v.begin(), v.end());
    }
  }
  return out;
}

py::object CustomFunction::call(const py::tuple& args, const py::dict& kwargs) const {
  const char* op = "custom_function";
  if (!fun_) throw std::runtime_error("[custom_function] This function was cleared.");
  std::vector<int> which;
  for (size_t k = 0; k < args.size(); ++k) which.push_back(static_cast<int>(k));
  auto flat = tree_arrays(args);
  auto state = gil_safe(new CustomState{fun_, vjp_, jvp_, vmap_, args, which, kwargs, py::none()});

  ArrayFn forward = [state, op](const std::vector<array>& xs) {
    py::gil_scoped_acquire gil;
    size_t next = 0;
    py::tuple a = replace_args(state->args, state->which, xs, next);
    state->out = state->fun(*a, **state->kwargs);
    return tree_arrays_strict(state->out, op, "The function's output");
  };
  // As MLX, the rules see a single positional argument as itself, several as a tuple.
  auto primals_of = [state](const std::vector<array>& xs) -> py::object {
    size_t next = 0;
    py::tuple a = replace_args(state->args, state->which, xs, next);
    if (a.size() == 1) return a[0];
    return a;
  };
  std::optional<CustomVjpFn> vjp_rule;
  if (vjp_) {
    vjp_rule = [state, primals_of, op](const std::vector<array>& primals,
                                       const std::vector<array>& cots,
                                       const std::vector<array>& outputs) {
      py::gil_scoped_acquire gil;
      size_t n1 = 0, n2 = 0;
      py::object r =
          (*state->vjp_fn)(primals_of(primals), tree_replace_arrays(state->out, cots, n1),
                           tree_replace_arrays(state->out, outputs, n2));
      return per_leaf(r, state->args, op, "vjp");
    };
  }
  std::optional<CustomJvpFn> jvp_rule;
  if (jvp_) {
    jvp_rule = [state, primals_of, op](const std::vector<array>& primals,
                                       const std::vector<array>& tangents,
                                       const std::vector<int>& argnums) {
      py::gil_scoped_acquire gil;
      std::vector<array> full;
      for (auto& p : primals) full.push_back(zeros_like(p));
      for (size_t i = 0; i < argnums.size(); ++i) full[argnums[i]] = tangents[i];
      py::object r = (*state->jvp_fn)(primals_of(primals), primals_of(full));
      return tree_arrays_strict(r, op, "The jvp rule's result");
    };
  }
  std::optional<CustomVmapFn> vmap_rule;
  if (vmap_) {
    vmap_rule = [state, primals_of, op](const std::vector<array>& inputs,
                                        const std::vector<int>& axes) {
      py::gil_scoped_acquire gil;
      size_t next = 0;
      py::object ax = tree_map_arrays(state->args, [&](const array&) -> py::object {
        int a = axes[next++];
        return a < 0 ? py::none() : py::object(py::int_(a));
      });
      if (state->args.size() == 1) ax = py::tuple(ax)[0];
      py::object r = (*state->vmap_fn)(primals_of(inputs), ax);
      if (!(PyTuple_Check(r.ptr()) || PyList_Check(r.ptr())) || py::len(r) != 2) {
        throw std::invalid_argument(
            "[custom_function] The vmap rule must return (outputs, out_axes).");
      }
      auto pair = py::reinterpret_borrow<py::sequence>(r);
      auto outs = tree_arrays_strict(pair[0], op, "The vmap rule's outputs");
      std::vector<std::optional<int>> oax;
      tree_expand_axes(pair[1], pair[0], oax, op);
      std::vector<int> out_axes;
      for (auto& a : oax) out_axes.push_back(a ? *a : -1);
      return std::make_pair(outs, out_axes);
    };
  }
  auto outs = custom_function(forward, vjp_rule, jvp_rule, vmap_rule)(flat);
  size_t next = 0;
  return tree_replace_arrays(state->out, outs, next);
}

}  // namespace

void init_custom_function(py::module_& m) {
  m.def(
      "_custom_function_call",
      [](py::function fun, py::object vjp, py::object jvp, py::object vmap, py::tuple args,
         py::dict kwargs) {
        CustomFunction f(fun);
        if (!vjp.is_none()) f.vjp_ = vjp.cast<py::function>();
        if (!jvp.is_none()) f.jvp_ = jvp.cast<py::function>();
        if (!vmap.is_none()) f.vmap_ = vmap.cast<py::function>();
        return f.call(args, kwargs);
      },
      py::arg("fun"), py::arg("vjp"), py::arg("jvp"), py::arg("vmap"), py::arg("args"),
      py::arg("kwargs"));

  // Collected with cycles through its functions (a rule reading a dict holding it).
  auto gc_setup = py::custom_type_setup([](PyHeapTypeObject* heap_type) {
    auto* type = &heap_type->ht_type;
    type->tp_flags |= Py_TPFLAGS_HAVE_GC;
    type->tp_traverse = [](PyObject* self, visitproc visit, void* arg) {
#if PY_VERSION_HEX >= 0x03090000
      Py_VISIT(Py_TYPE(self));
#endif
      if (!py::detail::is_holder_constructed(self)) return 0;
      auto& f = py::cast<CustomFunction&>(py::handle(self));
      Py_VISIT(f.fun_.ptr());
      for (auto* rule : {&f.vjp_, &f.jvp_, &f.vmap_})
        if (*rule) Py_VISIT((*rule)->ptr());
      return 0;
    };
    type->tp_clear = [](PyObject* self) {
      if (py::detail::is_holder_constructed(self)) {
        auto& f = py::cast<CustomFunction&>(py::handle(self));
        f.fun_ = py::function();
        f.vjp_.reset();
        f.jvp_.reset();
        f.vmap_.reset();
      }
      return 0;
    };
  });
  py::class_<CustomFunction>(m, "custom_function", gc_setup, R"doc(
    A function with user-defined transformations, used as a decorator. The function
    computes as written; :func:`vjp`, :func:`grad`, :func:`jvp` and :func:`vmap` of it call
    the rules attached with ``.vjp``, ``.jvp`` and ``.vmap`` (when given) instead of
    transforming its operations.

    Example:
        >>> @custom_function
        ... def f(x, y):
        ...     return sin(x) * y
        >>> @f.vjp
        ... def f_vjp(primals, cotangent, output):
        ...     x, y = primals
        ...     return cotangent * cos(x) * y, cotangent * sin(x)
        >>> @f.jvp
        ... def f_jvp(primals, tangents):
        ...     x, y = primals
        ...     dx, dy = tangents
        ...     return dx * cos(x) * y + dy * sin(x)
        >>> @f.vmap
        ... def f_vmap(inputs, axes):
        ...     x, y = inputs
        ...     ax, ay = axes
        ...     if ay != ax and ax is not None:
        ...         y = y.swapaxes(ay, ax)
        ...     return sin(x) * y, (ax if ax is not None else ay)

    ``primals`` (and ``tangents``, ``axes``) below are the positional argument itself when
    the function takes one, else a tuple of them. The vjp rule receives ``(primals,
    cotangents, outputs)`` with cotangents and outputs in the structure of the function's
    output, and returns one gradient per positional
    argument (a single value for a single argument; None means zeros). The jvp rule
    receives ``(primals, tangents)`` and returns the output tangents. The vmap rule receives
    ``(inputs, axes)`` (None for unmapped inputs) and returns ``(outputs, out_axes)``.
    Keyword arguments are passed through and not differentiated.
  )doc")
      .def(py::init<py::function>(), py::arg("f"))
      .def("__call__", [](const CustomFunction& f, py::args args,
                          py::kwargs kwargs) { return f.call(args, kwargs); })
      .def(
          "vjp",
          [](py::object self, py::function rule) {
            self.cast<CustomFunction&>().vjp_ = rule;
            return self;
          },
          py::arg("f_vjp"), "Attaches the vjp rule (a decorator); returns this custom_function.")
      .def(
          "jvp",
          [](py::object self, py::function rule) {
            self.cast<CustomFunction&>().jvp_ = rule;
            return self;
          },
          py::arg("f_jvp"), "Attaches the jvp rule (a decorator); returns this custom_function.")
      .def(
          "vmap",
          [](py::object self, py::function rule) {
            self.cast<CustomFunction&>().vmap_ = rule;
            return self;
          },
          py::arg("f_vmap"), "Attaches the vmap rule (a decorator); returns this custom_function.");
}

}  // namespace kiln::python
