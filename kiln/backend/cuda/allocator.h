// Device memory: a caching allocator over cuMemAlloc, and the device copy of a Storage.
//
// Blocks are rounded up to size classes (eight per power of two, so at most 1/8 is wasted)
// and kept in a per-class free list when released, because cuMemAlloc/cuMemFree are slow
// and synchronize the device. A block returns to the allocator only when the last Storage
// using it dies, and the stream runtime keeps every Storage a launch touches alive until
// that launch has completed, so a cached block is never in use by the GPU.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/allocator.h"
#include "kiln/array.h"

namespace kiln::gpu {

class DeviceContext;
class DeviceStream;

/** The caching allocator of one GPU. Thread-safe. */
class DeviceAllocator {
 public:
  explicit DeviceAllocator(DeviceContext& ctx);

  /**
   * A block of at least `nbytes` (256-byte aligned) and its actual size in `block_size`;
   * 0 (and block_size 0) for 0 bytes. Beyond the memory limit, or when the device is out of
   * memory, frees the cache, waits for in-flight work to release its buffers, and retries;
   * then throws std::runtime_error naming the size.
   */
  CUdeviceptr malloc(size_t nbytes, size_t& block_size);
  /** Returns a block to the cache (or the driver, past the cache limit). Never throws. */
  void free(CUdeviceptr ptr, size_t block_size) noexcept;

  /** The size class of a request: what malloc reserves for it. */
  static size_t block_size_for(size_t nbytes);

  size_t active() const;
  size_t peak() const;
  void reset_peak();
  size_t cached() const;
  /** Sets the limit on active memory and returns the previous one (default: the device's
   * total memory). */
  size_t set_limit(size_t limit);
  size_t limit() const;
  /** Sets the limit on cached memory and trims the cache to it; returns the previous one. */
  size_t set_cache_limit(size_t limit);
  /** Returns every cached block to the driver. */
  void clear_cache();

 private:
  // Frees cached blocks (largest first) until at most `keep` bytes remain. Holds mu_.
  void trim_locked(size_t keep) noexcept;
  // The allocation itself; false when the limit or the device refuses. Holds mu_.
  bool try_alloc_locked(size_t size, CUdeviceptr& ptr, CUresult& result);

  DeviceContext& ctx_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<CUdeviceptr>> free_;  // by block size
  size_t active_ = 0, peak_ = 0, cached_ = 0;
  size_t limit_, cache_limit_;
};

/**
 * A Storage's copy in device memory. Created by `new_device_storage` for outputs, and by the
 * runtime when a host buffer is first read on a GPU (its upload runs on the reading stream;
 * `upload_event` lets other streams wait for it).
 */
class DeviceBuffer : public DeviceCopy {
 public:
  /** Allocates `nbytes` on GPU `device`. */
  DeviceBuffer(DeviceContext& ctx, size_t nbytes);
  ~DeviceBuffer() override;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* ptr() override { return reinterpret_cast<void*>(ptr_); }
  CUdeviceptr dptr() const { return ptr_; }
  int device_index() const override;
  /** Copies to the host and blocks until done. Call it only once the producing work has
   * completed (host reads wait for their array's event first): it does not wait on the
   * producer's stream. */
  void copy_to_host(void* dst, size_t nbytes) override;

  /** Marks the buffer as uploaded by work on kiln stream `stream` up to `event`. */
  void set_upload(int stream, CUevent event) {
    upload_stream_ = stream;
    upload_event_ = event;
  }
  /** As set_upload, destroying the previous upload event (a refreshed upload). */
  void replace_upload(int stream, CUevent event);
  int upload_stream() const { return upload_stream_; }
  CUevent upload_event() const { return upload_event_; }

 private:
  DeviceContext& ctx_;
  CUdeviceptr ptr_ = 0;
  size_t block_size_ = 0;
  int upload_stream_ = -1;
  CUevent upload_event_ = nullptr;  // owned
};

/** A new device-only Storage of `nbytes` for work on `stream`; with KILN_POISON=1 it is
 * filled with 0xFF bytes on that stream, so elements a kernel never writes show up. */
std::shared_ptr<Storage> new_device_storage(size_t nbytes, DeviceStream& stream);

/** Device address of `a`'s first element (its view offset applied). `a` must have a device
 * copy: inputs get one before eval_gpu runs, outputs from new_device_storage. Throws
 * std::logic_error otherwise. */
CUdeviceptr device_address(const array& a);
template <typename T = void>
T* device_ptr(const array& a) {
  return reinterpret_cast<T*>(device_address(a));
}

}  // namespace kiln::gpu
