#include "kiln/backend/no_cuda/no_gpu.h"

namespace kiln {
KILN_NO_GPU(RandomBits)
KILN_NO_GPU(BitsToUniform)
}  // namespace kiln
