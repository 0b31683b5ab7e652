// Without CUDA: no NCCL, and the collectives' eval_gpu stubs (weak in CUDA builds, where
// backend/cuda/distributed.cpp replaces them).
#include "kiln/backend/no_cuda/no_gpu.h"
#include "kiln/distributed/primitives.h"

namespace kiln {
KILN_NO_GPU(distributed::AllReduce)
KILN_NO_GPU_MULTI(distributed::GroupedAllSum)
KILN_NO_GPU(distributed::AllGather)
KILN_NO_GPU(distributed::ReduceScatter)
KILN_NO_GPU(distributed::Send)
KILN_NO_GPU(distributed::Recv)
}  // namespace kiln

namespace kiln::distributed::detail {

KILN_NO_GPU_LINKAGE bool nccl_available(std::string* why) {
  if (why) *why = "NCCL needs a CUDA build of kiln";
  return false;
}

KILN_NO_GPU_LINKAGE std::shared_ptr<GpuComm> nccl_create(
    int, int, const std::function<std::string(const std::string&)>&) {
  throw std::runtime_error("[distributed.init] NCCL needs a CUDA build of kiln.");
}

}  // namespace kiln::distributed::detail
