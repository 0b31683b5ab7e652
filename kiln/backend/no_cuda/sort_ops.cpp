#include "kiln/backend/no_cuda/no_gpu.h"

namespace kiln {
KILN_NO_GPU(Partition)
KILN_NO_GPU(ArgPartition)
KILN_NO_GPU(Median)
KILN_NO_GPU(SearchSorted)
KILN_NO_GPU_MULTI(Unique)
}  // namespace kiln
