// Evaluation and function transformations with MLX's Python semantics: eval, async_eval,
// grad, value_and_grad, vjp, jvp, vmap, custom_function, checkpoint. Functions take and
// return arrays or trees of arrays (lists, tuples, dicts); the C++ transformations of
// kiln/transforms.h see the flattened arrays.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>

#include "bindings.h"
#include "convert.h"
#include "gc_function.h"
#include "kiln/graph_dot.h"
#include "kiln/transforms.h"
#include "transforms_common.h"
#include "trees.h"

namespace kiln::python {

namespace {

std::vector<int> all_positions(size_t n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// ---------------------------------------------------------------- grad, value_and_grad

struct GradSpec {
  std::vector<int> argnums;
  bool single = false;     // one argnum (an int or a 1-sequence): one gradient tree, no tuple
  bool positional = true;  // false when only argnames were given: positional gradients are None
  std::vector<std::string> argnames;
};

// Checked when the transformation is created, as MLX does: argnums are ints (TypeError
// otherwise), without repeats, and something is differentiated.
GradSpec grad_spec(py::object argnums, const std::vector<std::string>& argnames, const char* op) {
  GradSpec g;
  g.argnames = argnames;
  if (argnums.is_none()) {
    if (argnames.empty()) {
      g.argnums = {0};
      g.single = true;
    } else {
      g.positional = false;
    }
  } else if (PyLong_Check(argnums.ptr())) {
    g.argnums = {argnums.cast<int>()};
    g.single = true;
  } else {
    if (!PyList_Check(argnums.ptr()) && !PyTuple_Check(argnums.ptr())) {
      throw py::type_error(msg("[", op, "] argnums must be an int or a sequence of ints; got ",
                               Py_TYPE(argnums.ptr())->tp_name, "."));
    }
    for (auto a : py::reinterpret_borrow<py::sequence>(argnums)) {
      if (!PyLong_Check(a.ptr())) {
        throw py::type_error(msg("[", op, "] argnums must be ints; got an element of type ",
                                 Py_TYPE(a.ptr())->tp_name, "."));
      }
      int k = a.cast<int>();
      if (std::find(g.argnums.begin(), g.argnums.end(), k) != g.argnums.end())
        throw std::invalid_argument(msg("[", op, "] Repeated argnums ", k, "."));
      g.argnums.push_back(k);
    }
    g.positional = !g.argnums.empty() || argnames.empty();
    g.single = g.argnums.size() == 1;  // as MLX: one argnum gives its gradient, not a 1-tuple
  }
  std::set<std::string> names(argnames.begin(), argnames.end());
  if (names.size() != argnames.size())
    throw std::invalid_argument(msg("[", op, "] Repeated argnames."));
  if (g.argnums.empty() && argnames.empty()) {
    throw std::invalid_argument(
        msg("[", op,
            "] Gradient with respect to no argument requested (argnums and argnames "
            "are both empty)."));
  }
  return g;
}

struct GradState {
  py::function fun;
  py::tuple args;
  py::dict kwargs;
  std::vector<int> argnums;
  std::vector<std::string> argnames;
  py::object out;  // what the traced call returned
  // The Python arrays put into the caller's containers for the traced call, and the
  // originals they replaced: restored afterwards where the function did not overwrite them.
  std::vector<py::object> tracers, originals;
};

// The arrays a function returns: for grad the loss only; for value_and_grad the loss, or a
// tuple whose first element is the loss and whose other elements (auxiliary values, any
// tree) are returned but not differentiated.
std::vector<array> loss_and_aux(const py::object& out, bool with_value, const char* op) {
  if (is_array(out)) return {array_ref(out)};
  if (with_value && PyTuple_Check(out.ptr()) && py::len(out) > 0 && is_array(py::tuple(out)[0])) {
    auto seq = py::reinterpret_borrow<py::tuple>(out);
    std::vector<array> v = {array_ref(seq[0])};
    for (size_t i = 1; i < seq.size(); ++i) {
      auto aux = tree_arrays(seq[i]);
      v.insert(v.end(), aux.begin(), aux.end());
    }
    return v;
  }
  if (!with_value) {
    throw std::invalid_argument(
        msg("[", op, "] The function must return a scalar array (the loss); got ",
            Py_TYPE(out.ptr())->tp_name, ". Use value_and_grad for auxiliary outputs."));
  }
  throw std::invalid_argument(msg("[", op,
                                  "] The function must return an array (the loss) or a tuple "
                                  "whose first element is the loss; got ",
                                  Py_TYPE(out.ptr())->tp_name, "."));
}

py::object rebuild_value(const py::object& out, const std::vector<array>& values) {
  if (is_array(out)) return py::cast(values[0]);
  auto seq = py::reinterpret_borrow<py::sequence>(out);
  py::list items;
  items.append(py::cast(values[0]));
  size_t next = 1;
  for (size_t i = 1; i < seq.size(); ++i) items.append(tree_replace_arrays(seq[i], values, next));
  return py::tuple(items);
}

py::object value_and_grad_call(const py::function& fun, const GradSpec& spec, bool with_value,
                               const py::tuple& args, const py::dict& kwargs) {
  const char* op = with_value ? "value_and_grad" : "grad";
  int nargs = static_cast<int>(args.size());
  std::vector<int> nums;
  for (int a : spec.argnums) {
    int k = a < 0 ? a + nargs : a;
    if (k < 0 || k >= nargs) {
      throw std::invalid_argument(msg("[", op, "] argnums ", a, " is out of range for a call with ",
                                      nargs, " positional arguments."));
    }
    if (std::find(nums.begin(), nums.end(), k) != nums.end()) {
      throw std::invalid_argument(msg("[", op, "] Repeated argnums ", a, "."));
    }
    nums.push_back(k);
  }
  std::vector<array> flat;
  for (int k : nums) {
    auto v = tree_arrays_strict(args[k], op, msg("Argument ", k));
    flat.insert(flat.end(), v.begin(), v.end());
  }
  for (auto& name : spec.argnames) {
    if (!kwargs.contains(name)) {
      throw std::invalid_argument(
          msg("[", op, "] Missing keyword argument '", name, "' named in argnames."));
    }
    auto v = tree_arrays_strict(kwargs[name.c_str()], op, msg("Keyword argument '", name, "'"));
    flat.insert(flat.end(), v.begin(), v.end());
  }
  if (flat.empty()) {
    throw std::invalid_argument(msg("[", op, "] The differentiated arguments hold no arrays."));
  }

  auto state = gil_safe(new GradState{fun, args, kwargs, nums, spec.argnames, py::none(), {}, {}});
  ArrayFn inner = [state, op, with_value](const std::vector<array>& xs) {
    py::gil_scoped_acquire gil;
    // As MLX, the function sees the caller's own lists and dicts with the traced arrays in
    // place, so updates it makes to them (model[1] = ...) persist after the call.
    size_t next = 0;
    auto put = [&](py::handle tree) {
      return tree_fill_inplace(tree, xs, next, state->tracers, state->originals);
    };
    py::list a(state->args);
    for (int k : state->argnums) a[k] = put(state->args[k]);
    py::dict kw(state->kwargs);
    for (auto& name : state->argnames) kw[name.c_str()] = put(state->kwargs[name.c_str()]);
    try {
      state->out = state->fun(*py::tuple(a), **kw);
    } catch (...) {
      tree_restore(state->args, state->tracers, state->originals);
      tree_restore(state->kwargs, state->tracers, state->originals);
      throw;
    }
    tree_restore(state->args, state->tracers, state->originals);
    tree_restore(state->kwargs, state->tracers, state->originals);
    auto res = loss_and_aux(state->out, with_value, op);
    if (res[0].ndim() != 0) {
      throw std::invalid_argument(msg("[", op,
                                      "] The function must return a scalar array (the "
                                      "loss, of shape ()); got shape ",
                                      shape_str(res[0].shape()), "."));
    }
    return res;
  };
  auto [values, grads] = value_and_grad(inner, all_positions(flat.size()))(flat);

  size_t next = 0;
  py::object pos_grads;
  if (!spec.positional) {
    pos_grads = py::none();
  } else if (spec.single) {
    pos_grads = tree_replace_arrays(args[nums[0]], grads, next);
  } else {
    py::list g;
    for (int k : nums) g.append(tree_replace_arrays(args[k], grads, next));
    pos_grads = py::tuple(g);
  }
  py::object all_grads = pos_grads;
  if (!spec.argnames.empty()) {
    py::dict kwg;
    for (auto& name : spec.argnames)
      kwg[name.c_str()] = tree_replace_arrays(kwargs[name.c_str()], grads, next);
    all_grads = py::make_tuple(pos_grads, kwg);
  }
  if (!with_value) return all_grads;
  return py::make_tuple(rebuild_value(state->out, values), all_grads);
}

const char* kGradArgs = R"doc(
    Args:
        fun (Callable): A function of arrays and trees of arrays returning a scalar loss
            (an array of shape ``()``); for ``value_and_grad`` also a tuple whose first
            element is the loss and the rest auxiliary values (returned, not
            differentiated).
        argnums (int or Sequence[int], optional): The positional arguments to differentiate
            (negative counts from the end). One argnum (an int or a sequence of one) gives
            its gradient, several a tuple of them. Defaults to 0 when ``argnames`` is empty.
        argnames (str or Sequence[str], optional): Keyword arguments to differentiate; their
            gradients come as a dict after the positional ones: ``(positional, keywords)``
            (``positional`` is None when only ``argnames`` is given).

    The function sees the caller's own lists and dicts with traced arrays in place of the
    differentiated ones; those are put back afterwards, so only the function's own
    updates to the containers remain.

    The gradient of an argument has the argument's structure (a tree of arrays of the same
    shapes and dtypes).

    Raises:
        ValueError: An argnum out of range or repeated, nothing to differentiate, a
            differentiated argument holding something other than arrays, a missing keyword
            argument, or a loss that is not a scalar array.
        TypeError: argnums that are not ints.
)doc";

std::vector<std::string> names_arg(py::object argnames) {
  if (argnames.is_none()) return {};
  if (PyUnicode_Check(argnames.ptr())) return {argnames.cast<std::string>()};
  return argnames.cast<std::vector<std::string>>();
}

// ---------------------------------------------------------------- vjp, jvp

struct TraceState {
  py::function fun;
  py::tuple args;
  std::vector<int> which;  // arguments whose arrays are traced
  py::dict kwargs;
  py::object out;
};

ArrayFn traced(const std::shared_ptr<TraceState>& state, const char* op) {
  return [state, op](const std::vector<array>& xs) {
    py::gil_scoped_acquire gil;
    size_t next = 0;
    py::tuple a = replace_args(state->args, state->which, xs, next);
    state->out = state->fun(*a, **state->kwargs);
    return tree_arrays_strict(state->out, op, "The function's output");
  };
}

py::list as_list(const py::object& out, const std::vector<array>& values) {
  size_t next = 0;
  py::object rebuilt = tree_replace_arrays(out, values, next);
  if (PyList_Check(rebuilt.ptr()) || PyTuple_Check(rebuilt.ptr())) return py::list(rebuilt);
  py::list l;
  l.append(rebuilt);
  return l;
}

std::pair<py::list, py::list> forward_or_reverse(const py::function& fun, const py::object& primals,
                                                 const py::object& vectors, bool reverse) {
  const char* op = reverse ? "vjp" : "jvp";
  if (!PyList_Check(primals.ptr()) && !PyTuple_Check(primals.ptr())) {
    throw std::invalid_argument(msg("[", op, "] primals must be a list or tuple of arrays; got ",
                                    Py_TYPE(primals.ptr())->tp_name, "."));
  }
  py::tuple args(primals);
  auto flat = tree_arrays_strict(args, op, "primals");
  auto vecs = tree_arrays_strict(vectors, op, reverse ? "cotangents" : "tangents");
  auto state =
      gil_safe(new TraceState{fun, args, all_positions(args.size()), py::dict(), py::none()});
  auto [outs, results] =
      reverse ? vjp(traced(state, op), flat, vecs) : jvp(traced(state, op), flat, vecs);
  py::list outputs = as_list(state->out, outs);
  py::list res;
  size_t next = 0;
  if (reverse) {
    for (auto arg : args) res.append(tree_replace_arrays(arg, results, next));
  } else {
    // As MLX, a bool output (a comparison) has a zero tangent in the tangents' dtype, so
    // arithmetic on it keeps working.
    if (!vecs.empty()) {
      for (auto& r : results) {
        if (r.dtype() == bool_) r = zeros(r.shape(), vecs[0].dtype());
      }
    }
    res = as_list(state->out, results);
  }
  return {outputs, res};
}

// ---------------------------------------------------------------- vmap

py::object vmap_call(const py::function& fun, const py::object& in_axes, const py::object& out_axes,
                     const py::tuple& args, const py::dict& kwargs) {
  const char* op = "vmap";
  std::vector<std::optional<int>> axes;
  // As MLX, the spec of a one-argument call describes that argument (a one-element
  // sequence also matches the argument list).
  bool one_seq =
      (PyTuple_Check(in_axes.ptr()) || PyList_Check(in_axes.ptr())) && py::len(in_axes) == 1;
  if (args.size() == 1 && !one_seq) {
    tree_expand_axes(in_axes, args[0], axes, op);
  } else {
    tree_expand_axes(in_axes, args, axes, op);
  }
  auto flat = tree_arrays(args);
  std::vector<int> in(flat.size());
  for (size_t i = 0; i < flat.size(); ++i) {
    int nd = static_cast<int>(flat[i].ndim());
    in[i] = axes[i] ? (*axes[i] < 0 ? *axes[i] + nd : *axes[i]) : -1;
  }
  // Arguments without arrays are passed through unchanged.
  std::vector<int> which;
  for (size_t k = 0; k < args.size(); ++k) {
    if (!tree_arrays(args[k]).empty()) which.push_back(static_cast<int>(k));
  }
  auto state = gil_safe(new TraceState{fun, args, which, kwargs, py::none()});
  auto outs = vmap(traced(state, op), in)(flat);  // mapped axes first

  std::vector<std::optional<int>> oax;
  // A one-element sequence of out_axes describes a single array output (as MLX).
  if (is_array(state->out) && (PyTuple_Check(out_axes.ptr()) || PyList_Check(out_axes.ptr())) &&
      py::len(out_axes) == 1) {
    tree_expand_axes(py::reinterpret_borrow<py::sequence>(out_axes)[0], state->out, oax, op);
  } else {
    tree_expand_axes(out_axes, state->out, oax, op);
  }
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!oax[j])
      throw std::invalid_argument("[vmap] out_axes cannot be None: every output is mapped.");
    int nd = static_cast<int>(outs[j].ndim());
    int ax = *oax[j] < 0 ? *oax[j] + nd : *oax[j];
    if (ax < 0 || ax >= nd) {
      throw std::invalid_argument(msg("[vmap] out_axes ", *oax[j],
                                      " is out of range for an output with ", nd, " dimensions."));
    }
    if (ax != 0) outs[j] = moveaxis(outs[j], 0, ax);
  }
  size_t next = 0;
  return tree_replace_arrays(state->out, outs, next);
}

}  // namespace

void init_transforms(py::module_& m) {
  m.def(
      "eval",
      [](py::args args) {
        // Fast paths for the common call with arrays only: all computed already (nothing to
        // do), or no trees to walk.
        bool flat = true, ready = true;
        for (auto a : args) {
          flat = flat && is_array(a);
          ready = ready && flat && array_ref(a).status() == array::Status::available;
        }
        if (ready) {
          for (auto a : args)
            if (array_ref(a).error()) std::rethrow_exception(array_ref(a).error());
          return;
        }
        std::vector<array> arrays;
        if (flat) {
          arrays.reserve(args.size());
          for (auto a : args) arrays.push_back(array_ref(a));
        } else {
          arrays = tree_arrays(args);
        }
        py::gil_scoped_release nogil;
        eval(std::move(arrays));
      },
      R"doc(
    eval(*args)

    Evaluates the arrays in ``args`` and blocks until their values are ready.

    Each argument is an array or a tree of arrays (nested lists, tuples and dicts); leaves
    that are not arrays are ignored. An error raised while computing any of them is raised
    here (other arrays stay usable).
  )doc");
  m.def(
      "async_eval",
      [](py::args args) {
        auto arrays = tree_arrays(args);
        py::gil_scoped_release nogil;
        async_eval(std::move(arrays));
      },
      R"doc(
    async_eval(*args)

    Starts evaluating the arrays in ``args`` (arrays or trees of arrays) and returns at
    once. Reading a value (``item``, ``tolist``, NumPy conversion), :func:`eval` or
    :func:`synchronize` waits for it.
  )doc");

  m.def(
      "value_and_grad",
      [](py::function fun, py::object argnums, py::object argnames) {
        GradSpec spec = grad_spec(argnums, names_arg(argnames), "value_and_grad");
        py::cpp_function impl([fun, spec](py::args args, py::kwargs kwargs) {
          return value_and_grad_call(fun, spec, true, args, kwargs);
        });
        return gc_function(std::move(impl), fun, {fun});
      },
      py::arg("fun"), py::arg("argnums") = py::none(), py::arg("argnames") = py::none(),
      (std::string(R"doc(
    Returns a function computing ``fun``'s value and its gradient: calling it with ``fun``'s
    arguments returns ``(value, grads)``, where ``value`` is what ``fun`` returns.
)doc") +
       kGradArgs + R"doc(
    Example:
        >>> loss_and_grad = value_and_grad(lambda w, x: ((x @ w) ** 2).sum())
        >>> loss, dw = loss_and_grad(w, x)
  )doc")
          .c_str());
  m.def(
      "grad",
      [](py::function fun, py::object argnums, py::object argnames) {
        GradSpec spec = grad_spec(argnums, names_arg(argnames), "grad");
        py::cpp_function impl([fun, spec](py::args args, py::kwargs kwargs) {
          return value_and_grad_call(fun, spec, false, args, kwargs);
        });
        return gc_function(std::move(impl), fun, {fun});
      },
      py::arg("fun"), py::arg("argnums") = py::none(), py::arg("argnames") = py::none(),
      (std::string(R"doc(
    Returns a function computing the gradient of ``fun``: calling it with ``fun``'s arguments
    returns the gradients (see ``argnums``).
)doc") +
       kGradArgs)
          .c_str());

  m.def(
      "export_to_dot",
      [](py::object file, py::args args, py::kwargs kwargs) {
        std::vector<array> outs = tree_arrays(args);
        for (auto item : kwargs) {
          auto v = tree_arrays(item.second);
          outs.insert(outs.end(), v.begin(), v.end());
        }
        std::ostringstream os;
        export_to_dot(os, outs);
        if (PyUnicode_Check(file.ptr()) || py::hasattr(file, "__fspath__")) {
          std::string path = py::str(py::module_::import("os").attr("fspath")(file));
          std::ofstream f(path);
          if (!f) throw std::invalid_argument(msg("[export_to_dot] Cannot open ", path, "."));
          f << os.str();
        } else if (py::hasattr(file, "write")) {
          file.attr("write")(os.str());
        } else {
          throw py::type_error(
              msg("[export_to_dot] file must be a path or have a write method; "
                  "got ",
                  Py_TYPE(file.ptr())->tp_name, "."));
        }
      },
      py::arg("file"), R"doc(
    export_to_dot(file, *args, **kwargs)

    Writes the graph computing the arrays in ``args`` and ``kwargs`` (arrays or trees of
    arrays) as Graphviz DOT text to ``file``: a path, or an object with ``write`` (such as
    ``io.StringIO``). Arrays are boxes (shape and dtype; the outputs filled), primitives
    ellipses (name and parameters). Nothing is evaluated. Render with ``dot -Tsvg``.
  )doc");

  // Entry points of kiln.core's Python wrappers (kiln/core/_transforms.py): a wrapper made
  // in Python is tracked by Python's garbage collector, so a function that refers back to
  // its own transformed version (a reference cycle) is freed; a C++ closure holding the
  // function would keep it alive forever.
  py::class_<GradSpec>(m, "_GradSpec");
  m.def(
      "_grad_spec",
      [](py::object argnums, py::object argnames, bool with_value) {
        return grad_spec(argnums, names_arg(argnames), with_value ? "value_and_grad" : "grad");
      },
      py::arg("argnums"), py::arg("argnames"), py::arg("with_value"));
  m.def(
      "_grad_call",
      [](py::function fun, const GradSpec& spec, bool with_value, py::tuple args, py::dict kwargs) {
        return value_and_grad_call(fun, spec, with_value, args, kwargs);
      },
      py::arg("fun"), py::arg("spec"), py::arg("with_value"), py::arg("args"), py::arg("kwargs"));
  m.def(
      "_checkpoint_call",
      [](py::function fun, py::tuple args, py::dict kwargs) {
        std::vector<int> which;
        for (size_t k = 0; k < args.size(); ++k) which.push_back(static_cast<int>(k));
        auto state = gil_safe(new TraceState{fun, args, which, kwargs, py::none()});
        auto outs = checkpoint(traced(state, "checkpoint"))(tree_arrays(args));
        size_t next = 0;
        return tree_replace_arrays(state->out, outs, next);
      },
      py::arg("fun"), py::arg("args"), py::arg("kwargs"));

  m.def(
      "vjp",
      [](py::function fun, py::object primals, py::object cotangents) {
        return forward_or_reverse(fun, primals, cotangents, true);
      },
      py::arg("fun"), py::arg("primals"), py::arg("cotangents"), R"doc(
    The vector-Jacobian product (reverse mode).

    Args:
        fun (Callable): A function of the primals returning an array or a tree of arrays.
        primals (list): The arguments of ``fun`` (arrays or trees of arrays).
        cotangents (list): One array per output array of ``fun``, of its shape and dtype.

    Returns:
        tuple(list, list): ``fun``'s outputs, and one vector-Jacobian product per primal
        (of the primal's structure; zeros where the outputs do not depend on it).

    Raises:
        ValueError: Wrong number, shapes or dtypes of cotangents.
  )doc");
  m.def(
      "jvp",
      [](py::function fun, py::object primals, py::object tangents) {
        return forward_or_reverse(fun, primals, tangents, false);
      },
      py::arg("fun"), py::arg("primals"), py::arg("tangents"), R"doc(
    The Jacobian-vector product (forward mode).

    Args:
        fun (Callable): A function of the primals returning an array or a tree of arrays.
        primals (list): The arguments of ``fun`` (arrays or trees of arrays).
        tangents (list): One array per primal array, of its shape and dtype.

    Returns:
        tuple(list, list): ``fun``'s outputs, and one Jacobian-vector product per output.

    Raises:
        ValueError: Wrong number, shapes or dtypes of tangents.
  )doc");

  m.def(
      "vmap",
      [](py::function fun, py::object in_axes, py::object out_axes) {
        py::cpp_function impl([fun, in_axes, out_axes](py::args args, py::kwargs kwargs) {
          return vmap_call(fun, in_axes, out_axes, args, kwargs);
        });
        return gc_function(std::move(impl), fun, {fun, in_axes, out_axes});
      },
      py::arg("fun"), py::arg("in_axes") = 0, py::arg("out_axes") = 0, R"doc(
    Returns a vectorized version of ``fun``: the result equals stacking ``fun`` applied to
    slices of its inputs, computed by each operation's batched rule instead of a loop.

    Args:
        fun (Callable): A function of arrays and trees of arrays.
        in_axes (int, None or tree): The mapped axis of each input: an int or None (not
            mapped) for all, or a tuple with one entry per positional argument (itself a
            prefix of that argument's tree).
        out_axes (int or tree): Where the mapped axis goes in each output.

    Raises:
        ValueError: No input is mapped, mapped sizes differ, or an axis is out of range.
  )doc");

  init_custom_function(m);

  m.def(
      "checkpoint",
      [](py::function fun) {
        py::cpp_function impl([fun](py::args args, py::kwargs kwargs) {
          std::vector<int> which;
          for (size_t k = 0; k < args.size(); ++k) which.push_back(static_cast<int>(k));
          auto state = gil_safe(new TraceState{fun, args, which, kwargs, py::none()});
          auto outs = checkpoint(traced(state, "checkpoint"))(tree_arrays(args));
          size_t next = 0;
          return tree_replace_arrays(state->out, outs, next);
        });
        return gc_function(std::move(impl), fun, {fun});
      },
      py::arg("fun"), R"doc(
    Returns ``fun`` with gradient checkpointing: its intermediate arrays are not kept for the
    backward pass but recomputed there from the inputs, trading one more forward
    computation for their memory.
  )doc");
}

}  // namespace kiln::python
