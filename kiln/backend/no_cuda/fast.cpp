#include "kiln/backend/no_cuda/no_gpu.h"
#include "kiln/fast_primitives.h"

namespace kiln::fast {
KILN_NO_GPU_MULTI(RMSNorm)
KILN_NO_GPU_MULTI(RMSNormSiLU)
KILN_NO_GPU_MULTI(RMSNormVJP)
KILN_NO_GPU_MULTI(LayerNorm)
KILN_NO_GPU_MULTI(LayerNormVJP)
KILN_NO_GPU_MULTI(RoPE)
KILN_NO_GPU_MULTI(ScaledDotProductAttention)
KILN_NO_GPU_MULTI(ScaledDotProductAttentionVJP)
KILN_NO_GPU_MULTI(CrossEntropy)
KILN_NO_GPU_MULTI(CrossEntropyVJP)
KILN_NO_GPU_MULTI(GlobalNorm)
KILN_NO_GPU_MULTI(SoftmaxVJP)
}  // namespace kiln::fast
