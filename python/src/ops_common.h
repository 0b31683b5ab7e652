// Shared by the op binding files (ops.cpp, ops_<family>.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace kiln::python {

/** The sentence on Python scalars in the docstrings of ops that take them. */
inline constexpr const char* kWeakScalars =
    "A Python scalar is weakly typed: it takes the dtype of the array operand when it fits "
    "its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).";

void init_ops_creation(py::module_& m);  // ops_creation.cpp
void init_ops_layout(py::module_& m);    // ops_layout.cpp
void init_ops_reduce(py::module_& m);    // ops_reduce.cpp
void init_ops_linalg(py::module_& m);    // ops_linalg.cpp
void init_ops_indexing(py::module_& m);  // ops_indexing.cpp
void init_ops_numpy(py::module_& m);     // ops_numpy.cpp
void init_ops_conv(py::module_& m);      // ops_conv.cpp
void init_ops_sort(py::module_& m);      // ops_sort.cpp

}  // namespace kiln::python
