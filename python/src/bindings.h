// The parts of the kiln._core extension module, one per source file.
#pragma once

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace kiln::python {

void init_dtype(py::module_& m);       // dtype.cpp
void init_device(py::module_& m);      // device.cpp
void init_array(py::module_& m);       // array.cpp
void init_ops(py::module_& m);         // ops.cpp (and ops_*.cpp)
void init_transforms(py::module_& m);  // transforms.cpp
void init_random(py::module_& m);      // random.cpp
void init_memory(py::module_& m);      // memory.cpp
void init_fast(py::module_& m);        // fast.cpp
void init_dlpack(py::module_& m);      // dlpack.cpp
void init_compile(py::module_& m);     // compile.cpp (after init_random: mx.random.state)
void init_io(py::module_& m);          // io.cpp
void init_linalg(py::module_& m);      // linalg.cpp
void init_fft(py::module_& m);         // fft.cpp
void init_distributed(py::module_& m); // distributed.cpp
void init_export(py::module_& m);      // export.cpp

}  // namespace kiln::python
