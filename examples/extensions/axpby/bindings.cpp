// Python bindings of the sample extension: the module kiln_sample_extensions._ext.
//
// kiln.core must be imported first (kiln_sample_extensions/__init__.py does): it registers
// the Python types of kiln's arrays, devices and streams, which these functions take and return.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "axpby/axpby.h"

namespace py = pybind11;
using namespace py::literals;

PYBIND11_MODULE(_ext, m) {
  m.doc() = "Sample C++ and CUDA extensions for kiln";

  m.def("axpby", &kiln_ext::axpby, "x"_a, "y"_a, py::pos_only(), "alpha"_a, "beta"_a, py::kw_only(),
        "stream"_a = py::none(),
        R"pbdoc(
        Scale and sum two vectors element-wise
        ``z = alpha * x + beta * y``

        Follows numpy style broadcasting between ``x`` and ``y``
        Inputs are upcasted to floats if needed

        Args:
            x (array): Input array.
            y (array): Input array.
            alpha (float): Scaling factor for ``x``.
            beta (float): Scaling factor for ``y``.

        Returns:
            array: ``alpha * x + beta * y``
      )pbdoc");

#ifdef KILN_WITH_CUDA
  // For tests and CI: compiles kernels of axpby.cu with NVRTC, which needs no GPU.
  m.def(
      "_compile_kernels",
      [](const std::vector<std::string>& kernels, const std::string& target,
         const std::string& library) { kiln_ext::compile_kernels(kernels, target, library); },
      "kernels"_a, "target"_a = "sm_90", "library"_a = "kiln_ext",
      "Compiles GPU kernels ``kernels`` of axpby.cu for ``target`` in one NVRTC run, without a "
      "GPU; RuntimeError with the compiler's log if it fails.");
  m.attr("_has_cuda") = true;
#else
  m.attr("_has_cuda") = false;
#endif
}
