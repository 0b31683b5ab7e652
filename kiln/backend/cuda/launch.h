// Kernel launches: grid shapes and parameter packing for cuLaunchKernel.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kiln::gpu {

class DeviceStream;

/** A grid or block shape. */
struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

/** Enough blocks of `block` threads for `threads` threads in x. Throws std::runtime_error
 * past the grid limit (2^31 - 1 blocks). */
Dim3 grid_1d(int64_t threads, uint32_t block);

/** Dynamic shared memory a kernel may use without opting in (more needs
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). */
constexpr size_t kDefaultSharedLimit = 48 * 1024;

/** Lets `f` use `shared_bytes` of dynamic shared memory when that is past the default limit. */
void opt_in_shared(CUfunction f, size_t shared_bytes);

/**
 * Launches `f` on `stream` with `params` (cuLaunchKernel's array of pointers to each
 * parameter). Requests more than 48 KiB of dynamic shared memory from the kernel when needed.
 * An empty grid launches nothing. Throws std::runtime_error naming the kernel on failure.
 */
void launch(CUfunction f, Dim3 grid, Dim3 block, size_t shared_bytes, DeviceStream& stream,
            void** params);

/** Launches with C++ arguments. Each argument must have exactly the type of the kernel's
 * parameter (int64_t, not int, for a `long long` parameter): it is passed by address. */
template <typename... Args>
void launch_kernel(CUfunction f, Dim3 grid, Dim3 block, size_t shared_bytes, DeviceStream& stream,
                   const Args&... args) {
  static_assert((std::is_trivially_copyable_v<Args> && ...),
                "kernel parameters must be trivially copyable");
  void* params[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
  launch(f, grid, block, shared_bytes, stream, params);
}

/** Kernel parameters whose list is known only at run time (custom kernels): append each in
 * the kernel's order, with its exact type, then pass `params()` to `launch`. */
class KernelArgs {
 public:
  template <typename T>
  KernelArgs& append(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel parameters must be trivially copyable");
    return append_bytes(&value, sizeof(T), alignof(T));
  }
  KernelArgs& append_bytes(const void* data, size_t size, size_t align);
  /** Pointers to each parameter; valid until the next append. */
  void** params();
  size_t size() const { return offsets_.size(); }

 private:
  std::vector<std::max_align_t> storage_;
  size_t used_ = 0;  // bytes
  std::vector<size_t> offsets_;
  std::vector<void*> pointers_;
};

}  // namespace kiln::gpu
