#include "kiln/backend/no_cuda/no_gpu.h"

namespace kiln {
KILN_NO_GPU(TraceInput)
KILN_NO_GPU(StopGradient)
KILN_NO_GPU_MULTI(Depends)
KILN_NO_GPU_MULTI(CustomTransforms)
}  // namespace kiln
