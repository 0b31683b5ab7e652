#include <stdexcept>

#include "kiln/backend/no_cuda/no_gpu.h"
#include "kiln/primitives_custom.h"

namespace kiln {

KILN_NO_GPU_MULTI(CustomKernel)
KILN_NO_GPU_MULTI(PrecompiledKernel)

namespace kernels {
KILN_NO_GPU_LINKAGE int gpu_compute_capability(int) {
  return 0;
}
KILN_NO_GPU_LINKAGE bool needs_gpu_compile(const KernelProgram&, const Stream&) {
  return false;
}
KILN_NO_GPU_LINKAGE void prefetch_gpu(const KernelProgram&, const Stream&) {}
KILN_NO_GPU_LINKAGE void compile_gpu(const KernelProgram& program, const std::string& target) {
  throw std::runtime_error("[" + program.spec().name + "] Cannot compile for " + target +
                           ": kiln was built without CUDA (NVRTC).");
}
KILN_NO_GPU_LINKAGE std::string compile_gpu_checked(const KernelProgram& program,
                                                    const std::string& target) {
  throw std::runtime_error("[" + program.spec().name + "] Cannot compile for " + target +
                           ": kiln was built without CUDA (NVRTC).");
}
}  // namespace kernels

}  // namespace kiln
