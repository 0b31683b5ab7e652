// Page-locked staging buffers (kiln/backend/cuda/pinned.h): power-of-two blocks from
// cuMemHostAlloc, kept for reuse and never freed while the process runs, since
// cuMemFreeHost would synchronize the device.
#include "kiln/backend/cuda/pinned.h"

#include <algorithm>
#include <bit>
#include <map>
#include <mutex>
#include <vector>

#include "kiln/backend/cuda/driver.h"

namespace kiln::gpu {

namespace {

constexpr size_t kMinBlock = size_t(4) << 10;
constexpr size_t kPoolCap = size_t(64) << 20;

struct PinnedPool {
  std::mutex mu;
  std::map<size_t, std::vector<void*>> free;  // block size -> idle blocks
  size_t allocated = 0;                       // bytes page-locked so far
};

PinnedPool& pool() {
  static auto* p = new PinnedPool;  // never destroyed: storages may die at exit
  return *p;
}

}  // namespace

std::shared_ptr<Storage> pinned_staging(size_t nbytes) {
  if (nbytes == 0 || nbytes > kMaxStagedUpload) return nullptr;
  const size_t size = std::max(kMinBlock, std::bit_ceil(nbytes));
  PinnedPool& p = pool();
  void* block = nullptr;
  {
    std::lock_guard lk(p.mu);
    auto& idle = p.free[size];
    if (!idle.empty()) {
      block = idle.back();
      idle.pop_back();
    } else {
      if (p.allocated + size > kPoolCap) return nullptr;
      // Portable: usable from every device's context.
      if (driver().cuMemHostAlloc(&block, size, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) {
        return nullptr;
      }
      p.allocated += size;
    }
  }
  return Storage::wrap_host(block, nbytes, [size](void* b) {
    PinnedPool& p = pool();
    std::lock_guard lk(p.mu);
    p.free[size].push_back(b);
  });
}

}  // namespace kiln::gpu
