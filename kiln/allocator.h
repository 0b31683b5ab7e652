// Memory: the buffer behind an array (`Storage`) and the host allocator.
//
// A Storage is one logical buffer with a copy in host memory, device memory, or both.
// It is written once by the op that produces it and immutable afterwards, so a copy made
// for the other device stays valid for the buffer's lifetime (lazy mirroring). The one
// exception is a host copy exported writable to Python (a NumPy view or memoryview, as
// MLX allows): its device copy is refreshed from the host each time the GPU reads it.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>

namespace kiln {

/** A copy of a Storage in device memory; implemented by the GPU backend. */
class DeviceCopy {
 public:
  virtual ~DeviceCopy() = default;
  virtual void* ptr() = 0;
  virtual int device_index() const = 0;
  /** Copies the first `nbytes` to `dst` in host memory; blocks until the data is there. */
  virtual void copy_to_host(void* dst, size_t nbytes) = 0;
};

class Storage {
 public:
  using Deleter = std::function<void(void*)>;

  /** `nbytes` of host memory from kiln's caching host allocator. Throws std::bad_alloc
   * wrapped in std::runtime_error when memory is exhausted. */
  static std::shared_ptr<Storage> host(size_t nbytes);
  /** Wraps host memory owned elsewhere; `deleter(ptr)` runs when the storage dies. */
  static std::shared_ptr<Storage> wrap_host(void* ptr, size_t nbytes, Deleter deleter);
  /** A storage whose only copy is on a device (used by the GPU backend). */
  static std::shared_ptr<Storage> device(std::unique_ptr<DeviceCopy> copy, size_t nbytes);

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  size_t nbytes() const { return nbytes_; }

  /** Host pointer; the first call on a device-only storage copies the data to the host. */
  void* host_ptr() {
    void* p = host_.load(std::memory_order_acquire);
    return p ? p : materialize_host();
  }
  bool has_host() const { return host_.load(std::memory_order_acquire) != nullptr; }
  bool has_device() const { return device_ != nullptr; }
  /** Whether kiln allocated the host memory (wrapped external memory is never reused). */
  bool owns_host() const { return !host_deleter_; }
  /** Marks the host copy as writable from outside kiln (a writable NumPy view or
   * memoryview). From then on the host copy is the reference: the GPU backend uploads it
   * again whenever an op reads the buffer, so writes made between evaluations show. */
  void mark_host_writable() { host_writable_.store(true, std::memory_order_release); }
  bool host_writable() const { return host_writable_.load(std::memory_order_acquire); }

  /** The device copy, or null. The GPU backend creates it under `mutex()`. */
  DeviceCopy* device_copy() { return device_.get(); }
  void set_device_copy(std::unique_ptr<DeviceCopy> copy) { device_ = std::move(copy); }
  /** Guards the creation of copies. */
  std::mutex& mutex() { return mu_; }

 protected:
  explicit Storage(size_t nbytes) : nbytes_(nbytes) {}

 private:
  void* materialize_host();

  size_t nbytes_;
  std::atomic<void*> host_{nullptr};
  std::atomic<bool> host_writable_{false};
  Deleter host_deleter_;  // empty: memory from the host allocator
  std::unique_ptr<DeviceCopy> device_;
  std::mutex mu_;
};

namespace allocator {

/** Raw host allocation from the caching allocator (64-byte aligned). */
void* host_malloc(size_t nbytes);
void host_free(void* ptr, size_t nbytes);

}  // namespace allocator

/**
 * Memory statistics and limits of a device's allocator, in bytes. Active: held by live
 * buffers. Peak: the largest active since the last reset. Cache: freed buffers kept for
 * reuse. Allocation beyond the memory limit first frees the cache, then throws.
 */
struct Device;
size_t get_active_memory(const Device& d);
size_t get_peak_memory(const Device& d);
void reset_peak_memory(const Device& d);
size_t get_cache_memory(const Device& d);
/** Sets the limit and returns the previous one. */
size_t set_memory_limit(const Device& d, size_t limit);
size_t get_memory_limit(const Device& d);
/** Sets the cache limit and returns the previous one. */
size_t set_cache_limit(const Device& d, size_t limit);
void clear_cache(const Device& d);

// The same on the default device.
size_t get_active_memory();
size_t get_peak_memory();
void reset_peak_memory();
size_t get_cache_memory();
size_t set_memory_limit(size_t limit);
size_t get_memory_limit();
size_t set_cache_limit(size_t limit);
void clear_cache();

}  // namespace kiln
