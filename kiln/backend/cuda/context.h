// GPUs: the primary context of each device, its properties, and what runs on it.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

namespace kiln::gpu {

class DeviceAllocator;

/** One GPU, initialized on first use: its primary context (shared with the CUDA runtime, so
 * cuBLASLt and other libraries see the same memory), properties and allocator. */
class DeviceContext {
 public:
  explicit DeviceContext(int index);
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int index() const { return index_; }
  CUdevice device() const { return device_; }
  CUcontext context() const { return context_; }
  /** Compute capability as major * 10 + minor, e.g. 90 for an H100. */
  int compute_capability() const { return cc_; }
  /** What NVRTC compiles for this device: "sm_90", or PTX ("compute_XX") for a device newer
   * than NVRTC. */
  const std::string& target() const { return target_; }
  const std::string& name() const { return name_; }
  int sm_count() const { return sm_count_; }
  /** The most dynamic shared memory one block may opt in to, in bytes (227 KiB on an H100). */
  int shared_per_block_optin() const { return shared_optin_; }
  /** Total device memory in bytes. */
  size_t total_memory() const { return total_memory_; }

  /** Makes this device's context current on the calling thread (one compare when it is). */
  void make_current() const;

  DeviceAllocator& allocator() { return *allocator_; }

 private:
  int index_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  int cc_ = 0;
  int sm_count_ = 0;
  int shared_optin_ = 0;
  size_t total_memory_ = 0;
  std::string name_;
  std::string target_;
  std::unique_ptr<DeviceAllocator> allocator_;
};

/** GPU `index`, initialized on first use. Throws std::runtime_error when no GPU is usable
 * (with the reason) and std::invalid_argument for an index out of range. Thread-safe. */
DeviceContext& device_context(int index);

}  // namespace kiln::gpu
