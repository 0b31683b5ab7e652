// The device allocator, device buffers, and the memory half of kiln/backend/gpu.h.
#include "kiln/backend/cuda/allocator.h"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/backend/gpu.h"

namespace kiln::gpu {

namespace {

constexpr size_t kMinBlock = 512;

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

bool poison_enabled() {
  static const bool on = [] {
    const char* p = std::getenv("KILN_POISON");
    return p && *p && *p != '0';
  }();
  return on;
}

}  // namespace

// ---------------------------------------------------------------- DeviceAllocator

DeviceAllocator::DeviceAllocator(DeviceContext& ctx)
    : ctx_(ctx), limit_(ctx.total_memory()), cache_limit_(ctx.total_memory()) {}

size_t DeviceAllocator::block_size_for(size_t nbytes) {
  if (nbytes <= kMinBlock) return kMinBlock;
  // Eight classes between consecutive powers of two: at most 1/8 of a block is waste.
  size_t step = std::bit_floor(nbytes - 1) / 8;
  return (nbytes + step - 1) / step * step;
}

bool DeviceAllocator::try_alloc_locked(size_t size, CUdeviceptr& ptr, CUresult& result) {
  result = CUDA_SUCCESS;
  if (size > limit_ || active_ > limit_ - size) return false;
  auto it = free_.find(size);
  if (it != free_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    cached_ -= size;
    return true;
  }
  // Cached blocks count towards the limit too: make room before asking the driver.
  if (cached_ > limit_ - size - active_) trim_locked(limit_ - size - active_);
  ctx_.make_current();
  result = driver().cuMemAlloc(&ptr, size);
  return result == CUDA_SUCCESS;
}

CUdeviceptr DeviceAllocator::malloc(size_t nbytes, size_t& block_size) {
  block_size = 0;
  if (nbytes == 0) return 0;
  const size_t size = block_size_for(nbytes);
  CUdeviceptr ptr = 0;
  CUresult result = CUDA_SUCCESS;
  bool ok;
  {
    std::lock_guard lk(mu_);
    ok = try_alloc_locked(size, ptr, result);
    if (!ok && (result == CUDA_SUCCESS || result == CUDA_ERROR_OUT_OF_MEMORY)) {
      trim_locked(0);
      ok = try_alloc_locked(size, ptr, result);
    }
  }
  if (!ok && (result == CUDA_SUCCESS || result == CUDA_ERROR_OUT_OF_MEMORY)) {
    // Buffers held only by in-flight work come back once it completes.
    release_finished_work(ctx_.index(), /*wait=*/true);
    std::lock_guard lk(mu_);
    trim_locked(0);
    ok = try_alloc_locked(size, ptr, result);
  }
  if (!ok) {
    std::lock_guard lk(mu_);
    if (result != CUDA_SUCCESS && result != CUDA_ERROR_OUT_OF_MEMORY) {
      throw_driver_error("cuMemAlloc", result);
    }
    std::string what = result == CUDA_ERROR_OUT_OF_MEMORY
                           ? "the GPU is out of memory"
                           : "it would exceed the memory limit of " + mib(limit_);
    throw std::runtime_error("[gpu::malloc] Cannot allocate " + std::to_string(nbytes) +
                             " bytes (" + mib(nbytes) + ") on GPU " + std::to_string(ctx_.index()) +
                             ": " + what + " (" + mib(active_) + " in use by kiln, " +
                             mib(ctx_.total_memory()) + " total).");
  }
  std::lock_guard lk(mu_);
  active_ += size;
  peak_ = std::max(peak_, active_);
  block_size = size;
  return ptr;
}

void DeviceAllocator::free(CUdeviceptr ptr, size_t size) noexcept {
  if (!ptr) return;
  std::lock_guard lk(mu_);
  active_ -= size;
  if (cached_ + size <= cache_limit_) {
    free_[size].push_back(ptr);
    cached_ += size;
    return;
  }
  // Errors are ignored: this runs in destructors, possibly after the driver shut down at exit.
  try {
    ctx_.make_current();
    driver().cuMemFree(ptr);
  } catch (...) {
  }
}

void DeviceAllocator::trim_locked(size_t keep) noexcept {
  if (cached_ <= keep) return;
  try {
    ctx_.make_current();
  } catch (...) {
    return;
  }
  for (auto it = free_.rbegin(); it != free_.rend() && cached_ > keep; ++it) {
    auto& blocks = it->second;
    while (!blocks.empty() && cached_ > keep) {
      driver().cuMemFree(blocks.back());
      blocks.pop_back();
      cached_ -= it->first;
    }
  }
}

size_t DeviceAllocator::active() const {
  std::lock_guard lk(mu_);
  return active_;
}
size_t DeviceAllocator::peak() const {
  std::lock_guard lk(mu_);
  return peak_;
}
void DeviceAllocator::reset_peak() {
  std::lock_guard lk(mu_);
  peak_ = 0;  // as MLX (and the host allocator): follows active from the next allocation
}
size_t DeviceAllocator::cached() const {
  std::lock_guard lk(mu_);
  return cached_;
}
size_t DeviceAllocator::set_limit(size_t limit) {
  std::lock_guard lk(mu_);
  return std::exchange(limit_, limit);
}
size_t DeviceAllocator::limit() const {
  std::lock_guard lk(mu_);
  return limit_;
}
size_t DeviceAllocator::set_cache_limit(size_t limit) {
  std::lock_guard lk(mu_);
  size_t old = std::exchange(cache_limit_, limit);
  trim_locked(cache_limit_);
  return old;
}
void DeviceAllocator::clear_cache() {
  std::lock_guard lk(mu_);
  trim_locked(0);
}

// ---------------------------------------------------------------- DeviceBuffer

DeviceBuffer::DeviceBuffer(DeviceContext& ctx, size_t nbytes) : ctx_(ctx) {
  ptr_ = ctx.allocator().malloc(nbytes, block_size_);
}

DeviceBuffer::~DeviceBuffer() {
  if (upload_event_) {
    try {
      ctx_.make_current();
      driver().cuEventDestroy(upload_event_);
    } catch (...) {
    }
  }
  ctx_.allocator().free(ptr_, block_size_);
}

void DeviceBuffer::replace_upload(int stream, CUevent event) {
  if (upload_event_) driver().cuEventDestroy(upload_event_);
  set_upload(stream, event);
}

int DeviceBuffer::device_index() const {
  return ctx_.index();
}

void DeviceBuffer::copy_to_host(void* dst, size_t nbytes) {
  if (nbytes == 0) return;
  ctx_.make_current();
  // A private stream: the legacy default stream would also wait for other libraries' work.
  CUstream s = copy_stream(ctx_.index());
  KILN_CU(cuMemcpyDtoHAsync, dst, ptr_, nbytes, s);
  KILN_CU(cuStreamSynchronize, s);
}

std::shared_ptr<Storage> new_device_storage(size_t nbytes, DeviceStream& stream) {
  auto buf = std::make_unique<DeviceBuffer>(stream.context(), nbytes);
  if (poison_enabled() && nbytes) {
    KILN_CU(cuMemsetD8Async, buf->dptr(), 0xFF, nbytes, stream.handle());
  }
  return Storage::device(std::move(buf), nbytes);
}

CUdeviceptr device_address(const array& a) {
  if (!a.has_storage()) throw std::logic_error("[gpu] The array has no buffer yet.");
  DeviceCopy* copy = a.storage().device_copy();
  if (!copy) {
    throw std::logic_error(
        "[gpu] The array's buffer has no device copy (not an input or output "
        "of this eval_gpu).");
  }
  return reinterpret_cast<CUdeviceptr>(copy->ptr()) + static_cast<CUdeviceptr>(a.offset());
}

// ---------------------------------------------------------------- kiln/backend/gpu.h

size_t get_active_memory(int index) {
  return device_context(index).allocator().active();
}
size_t get_peak_memory(int index) {
  return device_context(index).allocator().peak();
}
void reset_peak_memory(int index) {
  device_context(index).allocator().reset_peak();
}
size_t get_cache_memory(int index) {
  return device_context(index).allocator().cached();
}
size_t set_memory_limit(int index, size_t limit) {
  return device_context(index).allocator().set_limit(limit);
}
size_t get_memory_limit(int index) {
  return device_context(index).allocator().limit();
}
size_t set_cache_limit(int index, size_t limit) {
  return device_context(index).allocator().set_cache_limit(limit);
}
void clear_cache(int index) {
  release_finished_work(index, /*wait=*/false);
  device_context(index).allocator().clear_cache();
}

}  // namespace kiln::gpu
