// kiln.core.fast: fused operations and custom kernels (cuda_kernel, metal_kernel). The
// submodule exists so `kiln.core.fast` imports; its functions are bound here as
// kiln/fast.h lands.
#include "bindings.h"

namespace kiln::python {

void init_fast(py::module_& m) {
  m.def_submodule("fast", "Fused operations and custom kernels written as source strings.");
}

}  // namespace kiln::python
