#include "kiln/backend/no_cuda/no_gpu.h"

namespace kiln {
KILN_NO_GPU(Select)
}  // namespace kiln
