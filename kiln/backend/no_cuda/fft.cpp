#include "kiln/backend/no_cuda/no_gpu.h"
#include "kiln/primitives_fft.h"

namespace kiln {
KILN_NO_GPU(FFT)
}  // namespace kiln
