#include "kiln/backend/no_cuda/no_gpu.h"
#include "kiln/primitives_conv.h"

namespace kiln {
KILN_NO_GPU(Convolution)
}  // namespace kiln
