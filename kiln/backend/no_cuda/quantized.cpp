#include "kiln/backend/no_cuda/no_gpu.h"
#include "kiln/primitives_quantized.h"

namespace kiln {
KILN_NO_GPU_MULTI(Quantize)
KILN_NO_GPU(Dequantize)
KILN_NO_GPU(QuantizedMatmul)
}  // namespace kiln
