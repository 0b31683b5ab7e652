// Callables returned by the transformations (grad, value_and_grad, vmap, checkpoint) that
// the Python garbage collector can see through. A pybind11 function keeps its captured
// Python objects hidden from the collector, so a cycle through them (a transformed
// function stored in a dict that its own function reads) would never be freed.
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

namespace kiln::python {

namespace py = pybind11;

/**
 * Wraps `impl` in a callable that the cycle collector tracks. `deps` are the Python objects
 * that `impl`'s captures own, one entry per owned reference: the collector visits them on
 * `impl`'s behalf, and clearing the wrapper releases `impl` and with it those references.
 * Attribute lookups that the wrapper does not answer (``__name__``, ``__doc__``, ...) go
 * to `named` (the user's function).
 */
py::object gc_function(py::cpp_function impl, py::object named, std::vector<py::handle> deps);

}  // namespace kiln::python
