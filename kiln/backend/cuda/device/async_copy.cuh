// Asynchronous copies from global to shared memory (cp.async, sm_80 and later; plain copies
// before): each thread issues 16-byte copies, commits them as a group, and later waits for
// all but the newest N groups; a __syncthreads after the wait makes every thread's copies
// visible to the block.
#pragma once

#include "kiln/backend/cuda/device/types.cuh"

namespace kiln {

/** The shared-memory address of a generic pointer into shared memory. */
__device__ inline unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/** Copies 16 bytes from global to shared memory asynchronously (through L2 only); zeros when
 * !valid. Before sm_80 (no cp.async) the copy is a plain load and store. */
__device__ inline void cp_async_16(void* dst, const void* src, bool valid = true) {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
#else
  struct alignas(16) Chunk {
    unsigned w[4];
  };
  *static_cast<Chunk*>(dst) = valid ? *static_cast<const Chunk*>(src) : Chunk{};
#endif
}

/** Closes the group of this thread's copies issued since the last commit. */
__device__ inline void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/** Waits until at most N groups of this thread's copies are pending. */
template <int N>
__device__ inline void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

}  // namespace kiln
