#include "kiln/backend/no_cuda/no_gpu.h"

namespace kiln {
KILN_NO_GPU(Reduce)
KILN_NO_GPU(ArgReduce)
KILN_NO_GPU(Scan)
KILN_NO_GPU(Sort)
KILN_NO_GPU(ArgSort)
KILN_NO_GPU(Softmax)
}  // namespace kiln
