// The compiled half of export_function / exporter / import_function (the MLX-facing
// argument handling is in python/kiln/core/_export.py).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "kiln/export.h"

namespace kiln::python {

namespace {

// A Python function of (list of arrays, dict of arrays) returning a list of arrays.
KwargsFn kwargs_fn(const py::function& fn) {
  return [fn](const std::vector<array>& args, const Kwargs& kwargs) {
    py::list a;
    for (const auto& x : args) a.append(py::cast(x));
    py::dict d;
    for (const auto& [k, v] : kwargs) d[py::str(k)] = py::cast(v);
    return fn(a, d).cast<std::vector<array>>();
  };
}

py::object value_to_py(const ExportCallbackInput::Value& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                      std::is_same_v<T, std::vector<std::string>>) {
          py::list l;
          for (const auto& e : x) l.append(py::cast(e));
          return l;
        } else {
          return py::cast(x);
        }
      },
      v);
}

py::dict callback_dict(const ExportCallbackInput& e) {
  py::dict d;
  d["type"] = e.type;
  auto arrays = [&] {
    py::list l;
    for (const auto& [name, shape, dtype] : e.arrays)
      l.append(py::make_tuple(name, py::tuple(py::cast(shape)), py::cast(dtype)));
    return l;
  };
  if (e.type == "inputs") d["inputs"] = arrays();
  if (e.type == "outputs") d["outputs"] = arrays();
  if (e.type == "keyword_inputs") {
    py::list l;
    for (const auto& [k, n] : e.keywords) l.append(py::make_tuple(k, n));
    d["keywords"] = l;
  }
  if (e.type == "constants") {
    py::list l;
    for (const auto& [n, a] : e.constants) l.append(py::make_tuple(n, py::cast(a)));
    d["constants"] = l;
  }
  if (e.type == "primitive") {
    d["name"] = e.name;
    py::list args;
    for (const auto& v : e.arguments) args.append(value_to_py(v));
    d["arguments"] = args;
    d["inputs"] = py::cast(e.inputs);
    d["outputs"] = py::cast(e.outputs);
  }
  return d;
}

// The exporter's file behind a complete type for pybind11.
struct ExportFileHandle {
  std::shared_ptr<detail::ExportFile> file;
};

}  // namespace

void init_export(py::module_& m) {
  py::class_<ExportFileHandle>(m, "_ExportFile",
                               "The open file of an exporter (see kiln.core.exporter).")
      .def(py::init([](const std::string& path, bool shapeless, const std::string& metadata) {
             return ExportFileHandle{detail::open_export_file(path, shapeless, metadata)};
           }),
           py::arg("path"), py::arg("shapeless"), py::arg("metadata"))
      .def(
          "add_trace",
          [](ExportFileHandle& f, const py::function& fn, const std::vector<array>& args,
             const std::map<std::string, array>& kwargs) {
            detail::add_trace(*f.file, kwargs_fn(fn), args, kwargs);
          },
          py::arg("fn"), py::arg("args"), py::arg("kwargs"),
          "Traces fn(args, kwargs) -> list of arrays and appends the trace to the file.")
      .def("close", [](ExportFileHandle& f) { detail::close_export_file(*f.file); });

  m.def(
      "_export_callback",
      [](const py::function& callback, const py::function& fn, const std::vector<array>& args,
         const std::map<std::string, array>& kwargs, bool shapeless) {
        export_function([callback](const ExportCallbackInput& e) { callback(callback_dict(e)); },
                        kwargs_fn(fn), args, kwargs, shapeless);
      },
      py::arg("callback"), py::arg("fn"), py::arg("args"), py::arg("kwargs"), py::arg("shapeless"));

  py::class_<ImportedFunction>(m, "_ImportedFunction",
                               "A function read by kiln.core.import_function.")
      .def(py::init(&import_function), py::arg("path"))
      .def(
          "__call__",
          [](const ImportedFunction& f, const std::vector<array>& args,
             const std::map<std::string, array>& kwargs) {
            auto outs = f(args, kwargs);
            py::tuple t(outs.size());
            for (size_t i = 0; i < outs.size(); ++i) t[i] = py::cast(outs[i]);
            return t;
          },
          py::arg("args"), py::arg("kwargs"))
      .def_property_readonly("metadata", &ImportedFunction::metadata)
      .def_property_readonly("num_traces", &ImportedFunction::num_traces)
      .def_property_readonly("shapeless", &ImportedFunction::shapeless);
}

}  // namespace kiln::python
