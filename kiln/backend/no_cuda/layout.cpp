#include "kiln/backend/no_cuda/no_gpu.h"

namespace kiln {
KILN_NO_GPU(AsType)
KILN_NO_GPU(Copy)
KILN_NO_GPU(Broadcast)
KILN_NO_GPU(Reshape)
KILN_NO_GPU(Transpose)
}  // namespace kiln
