#include "kiln/backend/no_cuda/no_gpu.h"

namespace kiln {
KILN_NO_GPU(Arange)
KILN_NO_GPU(Linspace)
KILN_NO_GPU(Eye)
KILN_NO_GPU(Triangular)
}  // namespace kiln
