// Metal's atomic types and memory-order names, and the flags of its barriers. Only the
// types live here; the operations (atomic_fetch_add_explicit, threadgroup_barrier, ...)
// are target-specific (gpu_atomic.h and gpu.h on the GPU, the CPU prelude on the CPU).
#pragma once

#include "kiln/backend/kernels/metal/defines.h"

namespace metal {

/** Metal offers relaxed ordering only; the other names exist for code written for C++. */
enum memory_order {
  memory_order_relaxed,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst,
};

/** An object accessed only through the atomic_*_explicit functions. Same size and
 * alignment as T, so `device atomic<float>*` may point into a float array. */
template <typename T>
struct atomic {
  T value_;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;

/** What a barrier orders besides execution (all barriers here order every memory). */
enum class mem_flags : uint {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
KILN_HD constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<uint>(a) | static_cast<uint>(b));
}
KILN_HD constexpr mem_flags operator&(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<uint>(a) & static_cast<uint>(b));
}

}  // namespace metal
