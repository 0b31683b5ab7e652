// kiln.core.compile with MLX's Python semantics (kiln/compile.h): arguments and results are
// trees (lists, tuples, dicts) of arrays and constants; the cache key holds the structure of
// the arguments and their constant leaves; state the function reads and updates is captured
// with `inputs=` and `outputs=` (trees of arrays updated in place, e.g. a model's parameters,
// an optimizer's state, or mx.random.state, which holds the calling thread's random key).
//
// The Python function (compile) in kiln/core/_compile.py wraps _compile's callable so that
// it keeps the function's name, docstring and signature and binds as a method.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "bindings.h"
#include "convert.h"
#include "random_state.h"
#include "kiln/backend/gpu.h"
#include "kiln/compile.h"
#include "kiln/graph_utils.h"
#include "kiln/random.h"
#include "kiln/utils.h"
#include "trees.h"

namespace kiln::python {

namespace {

bool interpreter_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

constexpr int kMaxDepth = 256;

std::string type_name(py::handle h) {
  return Py_TYPE(h.ptr())->tp_name;
}

// ---------------------------------------------------------------- arguments -> key

// Markers of the structure in the cache key (large primes, unlikely as constant values).
constexpr uint64_t kArrayMark = 18446744073709551557ull;
constexpr uint64_t kListMark = 18446744073709551533ull;
constexpr uint64_t kTupleMark = 18446744073709551521ull;
constexpr uint64_t kDictMark = 18446744073709551437ull;
constexpr uint64_t kNoneMark = 18446744073709551427ull;
constexpr uint64_t kBoolMark = 18446744073709551359ull;
constexpr uint64_t kIntMark = 18446744073709551337ull;
constexpr uint64_t kFloatMark = 18446744073709551293ull;
constexpr uint64_t kStrMark = 18446744073709551263ull;

uint64_t py_hash(py::handle h) {
  return static_cast<uint64_t>(PyObject_Hash(h.ptr()));
}

// Appends the arrays of `obj` to `arrays` and its structure and constants to `key`.
void flatten_argument(py::handle obj, std::vector<array>& arrays, std::vector<uint64_t>& key,
                      const std::string& where, int depth) {
  if (depth > kMaxDepth) {
    throw std::invalid_argument(
        msg("[compile] ", where, " is nested deeper than ", kMaxDepth, " levels (a cycle?)."));
  }
  if (is_array(obj)) {
    arrays.push_back(array_ref(obj));
    key.push_back(kArrayMark);
  } else if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) {
    key.push_back(PyList_Check(obj.ptr()) ? kListMark : kTupleMark);
    if (!PyList_CheckExact(obj.ptr()) && !PyTuple_CheckExact(obj.ptr()))
      key.push_back(reinterpret_cast<uint64_t>(Py_TYPE(obj.ptr())));
    auto seq = py::reinterpret_borrow<py::sequence>(obj);
    key.push_back(seq.size());
    for (size_t i = 0; i < seq.size(); ++i)
      flatten_argument(seq[i], arrays, key, msg(where, "[", i, "]"), depth + 1);
  } else if (PyDict_Check(obj.ptr())) {
    key.push_back(kDictMark);
    auto d = py::reinterpret_borrow<py::dict>(obj);
    key.push_back(d.size());
    for (auto item : d) {
      key.push_back(py_hash(item.first));
      flatten_argument(item.second, arrays, key,
                       msg(where, "[", py::repr(item.first).cast<std::string>(), "]"), depth + 1);
    }
  } else if (obj.is_none()) {
    key.push_back(kNoneMark);
  } else if (PyBool_Check(obj.ptr())) {
    key.push_back(kBoolMark);
    key.push_back(obj.ptr() == Py_True);
  } else if (PyLong_Check(obj.ptr())) {
    key.push_back(kIntMark);
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    key.push_back(overflow ? py_hash(obj) : static_cast<uint64_t>(v));
  } else if (PyFloat_Check(obj.ptr())) {
    key.push_back(kFloatMark);
    double v = PyFloat_AS_DOUBLE(obj.ptr());
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    key.push_back(bits);
  } else if (PyUnicode_Check(obj.ptr())) {
    key.push_back(kStrMark);
    key.push_back(py_hash(obj));
  } else {
    throw std::invalid_argument(
        msg("[compile] Function arguments must be trees (lists, tuples, dicts) of arrays or "
            "constants (None, bool, int, float, str), but ",
            where, " is of type ", type_name(obj), "."));
  }
}

// `obj` with its array leaves replaced, in order, by arrays[next++] (containers rebuilt;
// named tuples and other tuple subclasses keep their type).
py::object rebuild(py::handle obj, const std::vector<array>& arrays, size_t& next, int depth = 0) {
  if (is_array(obj)) return py::cast(arrays.at(next++));
  if (PyList_Check(obj.ptr())) {
    py::list out;
    for (auto item : py::reinterpret_borrow<py::list>(obj))
      out.append(rebuild(item, arrays, next, depth + 1));
    return out;
  }
  if (PyTuple_Check(obj.ptr())) {
    py::list items;
    for (auto item : py::reinterpret_borrow<py::tuple>(obj))
      items.append(rebuild(item, arrays, next, depth + 1));
    if (PyTuple_CheckExact(obj.ptr())) return py::tuple(items);
    py::object type = py::type::of(obj);
    if (py::hasattr(type, "_fields")) return type(*items);  // a named tuple
    return type(py::tuple(items));
  }
  if (PyDict_Check(obj.ptr())) {
    py::dict out;
    for (auto item : py::reinterpret_borrow<py::dict>(obj))
      out[item.first] = rebuild(item.second, arrays, next, depth + 1);
    return out;
  }
  return py::reinterpret_borrow<py::object>(obj);
}

// ---------------------------------------------------------------- captured state

// The arrays among the leaves of a captured tree (other leaves are skipped).
std::vector<array> state_arrays(py::handle tree) {
  return tree_arrays(tree);
}

// Replaces, in place, the array leaves of `tree` for which `pick(index, leaf)` gives a value.
// Lists and dicts are updated; an array directly inside a tuple cannot be.
template <typename Pick>
void update_in_place(py::handle tree, size_t& index, const Pick& pick, const char* what,
                     int depth = 0) {
  if (depth > kMaxDepth) {
    throw std::invalid_argument(
        msg("[compile] The captured ", what, " are nested deeper than ", kMaxDepth, " levels."));
  }
  if (is_random_state(tree)) {
    // The calling thread's key, as a list holding one array.
    if (auto v = pick(index++, thread_random_key())) set_thread_random_key(*v);
  } else if (PyList_Check(tree.ptr())) {
    auto l = py::reinterpret_borrow<py::list>(tree);
    for (size_t i = 0; i < l.size(); ++i) {
      py::object item = l[i];
      if (is_array(item)) {
        if (auto v = pick(index++, array_ref(item))) l[i] = py::cast(*v);
      } else {
        update_in_place(item, index, pick, what, depth + 1);
      }
    }
  } else if (PyDict_Check(tree.ptr())) {
    auto d = py::reinterpret_borrow<py::dict>(tree);
    std::vector<std::pair<py::object, py::object>> items;
    for (auto item : d)
      items.emplace_back(py::reinterpret_borrow<py::object>(item.first),
                         py::reinterpret_borrow<py::object>(item.second));
    for (auto& [k, v] : items) {
      if (is_array(v)) {
        if (auto nv = pick(index++, array_ref(v))) d[k] = py::cast(*nv);
      } else {
        update_in_place(v, index, pick, what, depth + 1);
      }
    }
  } else if (PyTuple_Check(tree.ptr())) {
    for (auto item : py::reinterpret_borrow<py::tuple>(tree)) {
      if (is_array(item)) {
        if (pick(index++, array_ref(item))) {
          throw std::invalid_argument(
              msg("[compile] The captured ", what,
                  " hold an array directly in a tuple, which cannot be updated in place; use a "
                  "list or a dict."));
        }
      } else {
        update_in_place(item, index, pick, what, depth + 1);
      }
    }
  }
}

// ---------------------------------------------------------------- outputs

// A leaf standing for an array in an output structure.
py::object& array_marker() {
  static auto* m = new py::object(py::module_::import("builtins").attr("object")());
  return *m;
}

// `out` with its array leaves replaced by the marker (their values appended to `arrays`).
// Constants (None, bool, int, float, str) stay; other leaves are an error naming where.
py::object output_structure(py::handle out, std::vector<array>& arrays, const std::string& where,
                            int depth = 0) {
  if (depth > kMaxDepth) {
    throw std::invalid_argument(
        msg("[compile] The function's output is nested deeper than ", kMaxDepth, " levels."));
  }
  if (is_array(out)) {
    arrays.push_back(array_ref(out));
    return array_marker();
  }
  if (PyList_Check(out.ptr()) || PyTuple_Check(out.ptr())) {
    py::list items;
    auto seq = py::reinterpret_borrow<py::sequence>(out);
    for (size_t i = 0; i < seq.size(); ++i)
      items.append(output_structure(seq[i], arrays, msg(where, "[", i, "]"), depth + 1));
    if (PyList_Check(out.ptr())) return items;
    if (PyTuple_CheckExact(out.ptr())) return py::tuple(items);
    py::object type = py::type::of(out);
    if (py::hasattr(type, "_fields")) return type(*items);
    return type(py::tuple(items));
  }
  if (PyDict_Check(out.ptr())) {
    py::dict d;
    for (auto item : py::reinterpret_borrow<py::dict>(out))
      d[item.first] = output_structure(
          item.second, arrays, msg(where, "[", py::repr(item.first).cast<std::string>(), "]"),
          depth + 1);
    return d;
  }
  if (out.is_none() || PyBool_Check(out.ptr()) || PyLong_Check(out.ptr()) ||
      PyFloat_Check(out.ptr()) || PyUnicode_Check(out.ptr())) {
    return py::reinterpret_borrow<py::object>(out);
  }
  throw std::invalid_argument(msg(
      "[compile] A compiled function must return arrays, trees (lists, tuples, dicts) of arrays "
      "and constants (None, bool, int, float, str), but its output",
      where, " is of type ", type_name(out), "."));
}

// What a trace produced besides its arrays, kept in the cache entry.
struct TraceInfo {
  py::object structure;  // the output tree with markers for the arrays
  size_t num_outputs = 0;
  size_t num_state = 0;  // arrays of the captured outputs, after the function's own
};

void delete_info(TraceInfo* p) {
  if (!interpreter_alive()) return;
  py::gil_scoped_acquire gil;
  delete p;
}

py::object fill_structure(py::handle s, const std::vector<array>& arrays, size_t& next) {
  if (s.ptr() == array_marker().ptr()) return py::cast(arrays.at(next++));
  if (PyList_Check(s.ptr())) {
    py::list out;
    for (auto item : py::reinterpret_borrow<py::list>(s))
      out.append(fill_structure(item, arrays, next));
    return out;
  }
  if (PyTuple_Check(s.ptr())) {
    py::list items;
    for (auto item : py::reinterpret_borrow<py::tuple>(s))
      items.append(fill_structure(item, arrays, next));
    if (PyTuple_CheckExact(s.ptr())) return py::tuple(items);
    py::object type = py::type::of(s);
    if (py::hasattr(type, "_fields")) return type(*items);
    return type(py::tuple(items));
  }
  if (PyDict_Check(s.ptr())) {
    py::dict out;
    for (auto item : py::reinterpret_borrow<py::dict>(s))
      out[item.first] = fill_structure(item.second, arrays, next);
    return out;
  }
  return py::reinterpret_borrow<py::object>(s);
}

// ---------------------------------------------------------------- the compiled function

class CompiledFunction {
 public:
  CompiledFunction(py::object fun, py::object inputs, py::object outputs, bool shapeless)
      : fun_(std::move(fun)),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        shapeless_(shapeless),
        id_(reinterpret_cast<std::uintptr_t>(fun_.ptr())) {}
  CompiledFunction(const CompiledFunction&) = delete;
  CompiledFunction& operator=(const CompiledFunction&) = delete;
  ~CompiledFunction() { detail::compile_erase(id_); }

  py::object call(const py::args& args, const py::kwargs& kwargs) {
    if (compile_mode() == CompileMode::disabled) return fun_(*args, **kwargs);
    std::vector<array> flat;
    std::vector<uint64_t> key;
    for (size_t i = 0; i < args.size(); ++i)
      flatten_argument(args[i], flat, key, msg("argument ", i), 0);
    const size_t num_args = flat.size();
    for (auto item : kwargs) {
      key.push_back(py_hash(item.first));
      flatten_argument(item.second, flat, key,
                       msg("keyword argument '", py::str(item.first).cast<std::string>(), "'"), 0);
    }
    const size_t num_kw = flat.size() - num_args;
    // The captured containers themselves are part of the key: two compiles of one function
    // with different state do not share traces.
    key.push_back(reinterpret_cast<uint64_t>(inputs_.ptr()));
    key.push_back(reinterpret_cast<uint64_t>(outputs_.ptr()));
    if (!inputs_.is_none()) {
      auto captured = state_arrays(inputs_);
      flat.insert(flat.end(), captured.begin(), captured.end());
    }

    detail::ArrayFnWithExtra traced = [&](const std::vector<array>& a) -> detail::ArraysAndExtra {
      // Tracers (or, uncompiled, the arrays themselves) into the captured inputs.
      std::vector<array> originals;
      if (!inputs_.is_none()) {
        originals = state_arrays(inputs_);
        size_t index = 0;
        const size_t first = num_args + num_kw;
        update_in_place(
            inputs_, index,
            [&](size_t i, const array&) -> std::optional<array> { return a.at(first + i); },
            "inputs");
      }
      auto restore = [&] {
        if (inputs_.is_none()) return;
        std::unordered_map<uintptr_t, size_t> tracer;
        for (size_t i = 0; i < originals.size(); ++i) tracer[a[num_args + num_kw + i].id()] = i;
        size_t index = 0;
        update_in_place(
            inputs_, index,
            [&](size_t, const array& leaf) -> std::optional<array> {
              auto it = tracer.find(leaf.id());
              if (it == tracer.end()) return std::nullopt;
              return originals[it->second];
            },
            "inputs");
      };
      py::object result;
      try {
        size_t next = 0;
        py::object pa = rebuild(args, a, next);
        py::dict kw;
        for (auto item : kwargs) kw[item.first] = rebuild(item.second, a, next);
        result = fun_(*pa, **kw);
      } catch (...) {
        restore();
        throw;
      }
      auto info = std::shared_ptr<TraceInfo>(new TraceInfo, delete_info);
      std::vector<array> outs;
      try {
        info->structure = output_structure(result, outs, "");
        info->num_outputs = outs.size();
        if (!outputs_.is_none()) {
          auto state = state_arrays(outputs_);
          info->num_state = state.size();
          outs.insert(outs.end(), state.begin(), state.end());
        }
      } catch (...) {
        restore();
        throw;
      }
      restore();
      return {std::move(outs), std::move(info)};
    };

    auto [outs, extra] = detail::compile(traced, id_, shapeless_, std::move(key))(flat);
    auto info = std::static_pointer_cast<TraceInfo>(extra);
    if (!outputs_.is_none()) {
      const size_t now = state_arrays(outputs_).size();
      if (now != info->num_state) {
        throw std::invalid_argument(
            msg("[compile] The captured outputs (outputs=) held ", info->num_state,
                " arrays when the function was traced but hold ", now,
                " now; a compiled function must keep the structure of its captured state."));
      }
      size_t index = 0;
      update_in_place(
          outputs_, index,
          [&](size_t i, const array&) -> std::optional<array> {
            return outs[info->num_outputs + i];
          },
          "outputs");
    }
    size_t next = 0;
    return fill_structure(info->structure, outs, next);
  }

 private:
  py::object fun_;
  py::object inputs_;
  py::object outputs_;
  bool shapeless_;
  std::uintptr_t id_;
};

}  // namespace

void init_compile(py::module_& m) {
  py::class_<CompiledFunction>(m, "_CompiledFunction", R"doc(
    The callable behind :func:`compile` (use :func:`compile`).
  )doc")
      .def("__call__", &CompiledFunction::call);

  m.def(
      "_compile",
      [](py::object fun, py::object inputs, py::object outputs, bool shapeless) {
        if (!PyCallable_Check(fun.ptr())) {
          throw std::invalid_argument(
              msg("[compile] Expected a callable; got ", type_name(fun), "."));
        }
        return std::make_unique<CompiledFunction>(std::move(fun), std::move(inputs),
                                                  std::move(outputs), shapeless);
      },
      py::arg("fun"), py::arg("inputs") = py::none(), py::arg("outputs") = py::none(),
      py::arg("shapeless") = false);

  m.def(
      "disable_compile", [] { disable_compile(); }, R"doc(
    Makes :func:`compile` return functions that run uncompiled (also those compiled before).
    The environment variable ``KILN_DISABLE_COMPILE`` (any value but ``0``) does the same at
    start.
  )doc");
  m.def(
      "enable_compile", [] { enable_compile(); }, R"doc(
    Undoes :func:`disable_compile` (and ``KILN_DISABLE_COMPILE``).
  )doc");
  m.def(
      "_compile_stats",
      [] {
        auto s = detail::compile_stats();
        return py::dict(py::arg("traces") = s.traces, py::arg("replays") = s.replays,
                        py::arg("fused_runs") = s.fused_runs,
                        py::arg("fallback_runs") = s.fallback_runs,
                        py::arg("gpu_kernel_launches") = gpu::kernel_launches());
      },
      "Counters of compile since start: traces run, replays of cached traces, and fused nodes "
      "run by their generated kernel or unfused (a kernel that did not compile).");
  m.def(
      "_compile_clear_cache", [] { detail::compile_clear_cache(); },
      "Drops every cached trace of every compiled function.");

  m.def(
      "export_to_dot",
      [](py::object file, py::args args, py::kwargs kwargs) {
        std::vector<array> arrays;
        std::vector<std::string> names;
        for (auto item : kwargs) {
          const std::string key = py::str(item.first);
          auto v = tree_arrays(item.second);
          for (size_t i = 0; i < v.size(); ++i) {
            arrays.push_back(v[i]);
            names.push_back(v.size() == 1 ? key : msg(key, "[", i, "]"));
          }
        }
        for (auto& a : tree_arrays(args)) arrays.push_back(a);
        std::ostringstream os;
        export_to_dot(os, arrays, names);
        if (PyUnicode_Check(file.ptr())) {
          std::ofstream f(file.cast<std::string>());
          if (!f) {
            throw std::invalid_argument(
                msg("[export_to_dot] Cannot write ", file.cast<std::string>(), "."));
          }
          f << os.str();
        } else {
          file.attr("write")(os.str());
        }
      },
      py::arg("file"), R"doc(
    Writes the graph of unevaluated arrays in Graphviz DOT: arrays as ellipses, primitives
    (e.g. the Compiled nodes of a compiled function) as boxes.

    Args:
        file (str or file): A path, or an object with a ``write`` method.
        *args: Arrays or trees of arrays whose graph to write.
        **kwargs: Arrays or trees of arrays, labelled with their names.
  )doc");

  // mx.random.state: each thread's key (random_state.h).
  if (py::hasattr(m, "random")) {
    py::module_ random = m.attr("random");
    init_random_state(random);
  }
}

}  // namespace kiln::python
