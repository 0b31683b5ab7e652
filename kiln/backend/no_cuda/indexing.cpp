#include "kiln/backend/no_cuda/no_gpu.h"

namespace kiln {
KILN_NO_GPU(Gather)
KILN_NO_GPU(Scatter)
KILN_NO_GPU(GatherAxis)
KILN_NO_GPU(ScatterAxis)
}  // namespace kiln
