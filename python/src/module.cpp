// kiln._core: the compiled half of the `kiln.core` package (MLX's `mlx.core` API).
#include <cstring>
#include <stdexcept>
#include <typeinfo>

#include "bindings.h"

namespace kiln::python {
namespace {

// pybind11 already maps std::invalid_argument, length_error and domain_error to ValueError,
// out_of_range to IndexError, overflow_error to OverflowError, bad_alloc to MemoryError and
// other std::exceptions to RuntimeError; messages (with their [op] tag) pass through. Added
// here: ops that have not landed yet throw std::logic_error("[op] is not implemented yet."),
// which Python code should see as NotImplementedError.
void translate_not_implemented(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const std::logic_error& e) {
    bool plain_logic_error = typeid(e) == typeid(std::logic_error);
    if (plain_logic_error && std::strstr(e.what(), "not implemented")) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
      return;
    }
    throw;
  }
}

}  // namespace
}  // namespace kiln::python

PYBIND11_MODULE(_core, m) {
  using namespace kiln::python;
  m.doc() = "kiln's core: arrays, dtypes, operations, transformations, devices and streams.";
  py::register_exception_translator(&translate_not_implemented);
  m.attr("__version__") = KILN_VERSION;
  m.attr("_build_dir") = KILN_BUILD_DIR;

  init_dtype(m);
  init_device(m);
  init_array(m);
  init_ops(m);
  init_transforms(m);
#if __has_include("kiln/random.h")
  init_random(m);
#endif
  init_memory(m);
  init_fast(m);
  init_dlpack(m);
  init_compile(m);
  init_io(m);
  init_linalg(m);
  init_fft(m);
  init_distributed(m);
  init_export(m);
}
