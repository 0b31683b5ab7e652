// Helpers shared by the Python transformation bindings (transforms.cpp,
// custom_function.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "kiln/array.h"
#include "trees.h"

namespace kiln::python {

namespace py = pybind11;

inline bool interpreter_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// State holding Python objects, shared by the C++ closures of one transformed call. kiln
// may keep such closures inside primitives that a worker thread releases, so the state is
// deleted with the GIL held (and leaked when the interpreter is already gone).
template <typename T>
std::shared_ptr<T> gil_safe(T* p) {
  return std::shared_ptr<T>(p, [](T* q) {
    if (!interpreter_alive()) return;
    py::gil_scoped_acquire gil;
    delete q;
  });
}

// Positional arguments with the array leaves of the selected ones replaced, in order.
inline py::tuple replace_args(const py::tuple& args, const std::vector<int>& which,
                              const std::vector<array>& xs, size_t& next) {
  py::list out(args);
  for (int k : which) out[k] = tree_replace_arrays(args[k], xs, next);
  return py::tuple(out);
}

/** Registers `custom_function` and `_custom_function_call` (custom_function.cpp). */
void init_custom_function(py::module_& m);

}  // namespace kiln::python
