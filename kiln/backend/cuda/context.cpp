// Devices and availability (the first half of kiln/backend/gpu.h).
#include "kiln/backend/cuda/context.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/gpu.h"

namespace kiln::gpu {

namespace {

constexpr int kMaxDevices = 64;

// The number of devices, or -1 with the reason when none is usable. Never throws.
struct Availability {
  int count = -1;
  std::string reason;
};

const Availability& availability() {
  static const Availability a = [] {
    Availability out;
    const DriverApi* api = try_driver();
    if (!api) {
      out.reason = driver_error();
      return out;
    }
    int n = 0;
    CUresult r = api->cuDeviceGetCount(&n);
    if (r != CUDA_SUCCESS) {
      out.reason = "cuDeviceGetCount failed: " + result_string(r);
    } else if (n <= 0) {
      out.reason = "the NVIDIA driver found no CUDA device";
    } else {
      out.count = std::min(n, kMaxDevices);
    }
    return out;
  }();
  return a;
}

}  // namespace

bool is_available() {
  return availability().count > 0;
}

std::string unavailable_reason() {
  return is_available() ? "" : availability().reason;
}

int device_count() {
  return std::max(availability().count, 0);
}

DeviceContext::DeviceContext(int index) : index_(index) {
  KILN_CU(cuDeviceGet, &device_, index);
  KILN_CU(cuDevicePrimaryCtxRetain, &context_, device_);  // never released: lives until exit
  int major = 0, minor = 0;
  KILN_CU(cuDeviceGetAttribute, &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_);
  KILN_CU(cuDeviceGetAttribute, &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_);
  KILN_CU(cuDeviceGetAttribute, &sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_);
  KILN_CU(cuDeviceGetAttribute, &shared_optin_,
          CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device_);
  KILN_CU(cuDeviceTotalMem, &total_memory_, device_);
  char name[256] = {};
  KILN_CU(cuDeviceGetName, name, static_cast<int>(sizeof(name) - 1), device_);
  name_ = name;
  cc_ = major * 10 + minor;
  target_ = target_for_arch(cc_);
  allocator_ = std::make_unique<DeviceAllocator>(*this);
}

void DeviceContext::make_current() const {
  // Per thread; the primary context is the runtime's too, so libraries that set it (cuBLASLt,
  // PyTorch) set the same handle.
  thread_local CUcontext current = nullptr;
  if (current == context_) return;
  KILN_CU(cuCtxSetCurrent, context_);
  current = context_;
}

DeviceContext& device_context(int index) {
  // Never destroyed: buffers freed during static destruction still reach their allocator.
  static auto* devices = new std::array<std::atomic<DeviceContext*>, kMaxDevices>{};
  static auto* mu = new std::mutex;
  if (index >= 0 && index < kMaxDevices) [[likely]] {
    if (DeviceContext* d = (*devices)[index].load(std::memory_order_acquire)) return *d;
  }
  if (!is_available())
    throw std::runtime_error("[gpu] No GPU is usable: " + unavailable_reason() + ".");
  if (index < 0 || index >= device_count()) {
    throw std::invalid_argument("[gpu] Invalid GPU index " + std::to_string(index) +
                                "; there are " + std::to_string(device_count()) + " GPUs.");
  }
  std::lock_guard lk(*mu);
  auto& slot = (*devices)[index];
  if (!slot.load()) slot.store(new DeviceContext(index), std::memory_order_release);
  return *slot.load();
}

}  // namespace kiln::gpu
