#include "kiln/backend/cuda/launch.h"

#include <atomic>
#include <stdexcept>
#include <string>

#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/stream.h"

namespace kiln::gpu {

namespace {
std::atomic<uint64_t> g_launches{0};

std::string kernel_name(CUfunction f) {
  const char* name = nullptr;
  if (const DriverApi* api = try_driver();
      api && api->cuFuncGetName(&name, f) == CUDA_SUCCESS && name) {
    return name;
  }
  return "a kernel";
}

std::string dims(Dim3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}
}  // namespace

Dim3 grid_1d(int64_t threads, uint32_t block) {
  if (threads <= 0) return {0, 1, 1};
  int64_t blocks = (threads + block - 1) / block;
  if (blocks > 0x7fffffff) {
    throw std::runtime_error("[gpu::launch] " + std::to_string(threads) +
                             " threads need more than 2^31 - 1 blocks of " + std::to_string(block) +
                             ".");
  }
  return {static_cast<uint32_t>(blocks), 1, 1};
}

void opt_in_shared(CUfunction f, size_t shared_bytes) {
  if (shared_bytes > kDefaultSharedLimit) {
    KILN_CU(cuFuncSetAttribute, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            static_cast<int>(shared_bytes));
  }
}

void launch(CUfunction f, Dim3 grid, Dim3 block, size_t shared_bytes, DeviceStream& stream,
            void** params) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  g_launches.fetch_add(1, std::memory_order_relaxed);
  opt_in_shared(f, shared_bytes);
  CUresult r = driver().cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                       static_cast<unsigned>(shared_bytes), stream.handle(), params,
                                       nullptr);
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error("[cuLaunchKernel] failed for " + kernel_name(f) + " with grid " +
                             dims(grid) + ", block " + dims(block) + ", " +
                             std::to_string(shared_bytes) +
                             " bytes of shared memory: " + result_string(r) + ".");
  }
}

KernelArgs& KernelArgs::append_bytes(const void* data, size_t size, size_t align) {
  if (align > alignof(std::max_align_t)) {
    throw std::invalid_argument("[KernelArgs] Alignment " + std::to_string(align) +
                                " is not supported.");
  }
  size_t offset = (used_ + align - 1) / align * align;
  size_t need = (offset + size + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
  if (need > storage_.size()) storage_.resize(std::max(need, 2 * storage_.size()));
  std::memcpy(reinterpret_cast<char*>(storage_.data()) + offset, data, size);
  used_ = offset + size;
  offsets_.push_back(offset);
  return *this;
}

void** KernelArgs::params() {
  pointers_.clear();
  for (size_t off : offsets_) pointers_.push_back(reinterpret_cast<char*>(storage_.data()) + off);
  pointers_.push_back(nullptr);
  return pointers_.data();
}

uint64_t kernel_launches() {
  return g_launches.load(std::memory_order_relaxed);
}

}  // namespace kiln::gpu
