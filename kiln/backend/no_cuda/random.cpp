#include "kiln/backend/no_cuda/no_gpu.h"

namespace kiln {
KILN_NO_GPU(RandomBits)
KILN_NO_GPU(ErfF32)
KILN_NO_GPU(ErfInvF32)
}  // namespace kiln
