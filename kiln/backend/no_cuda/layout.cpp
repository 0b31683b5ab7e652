#include "kiln/backend/no_cuda/no_gpu.h"

namespace kiln {
KILN_NO_GPU(AsType)
KILN_NO_GPU(Copy)
KILN_NO_GPU(Contiguous)
KILN_NO_GPU(Broadcast)
KILN_NO_GPU(Reshape)
KILN_NO_GPU(Transpose)
KILN_NO_GPU(AsStrided)
KILN_NO_GPU(View)
KILN_NO_GPU(Slice)
KILN_NO_GPU(SliceUpdate)
KILN_NO_GPU(Concatenate)
}  // namespace kiln
