#include "kiln/backend/no_cuda/no_gpu.h"
#include "kiln/primitives_factor.h"

namespace kiln {
KILN_NO_GPU(Cholesky)
KILN_NO_GPU(Inverse)
KILN_NO_GPU_MULTI(LUF)
KILN_NO_GPU_MULTI(QRF)
KILN_NO_GPU_MULTI(SVD)
KILN_NO_GPU_MULTI(Eigh)
KILN_NO_GPU_MULTI(Eig)
KILN_NO_GPU(Solve)
KILN_NO_GPU(SolveTriangular)
}  // namespace kiln
