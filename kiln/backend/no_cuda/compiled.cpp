#include "kiln/backend/no_cuda/no_gpu.h"
#include "kiln/primitives_compile.h"

namespace kiln {
KILN_NO_GPU_MULTI(Compiled)
KILN_NO_GPU_MULTI(CompiledGroup)
}  // namespace kiln
