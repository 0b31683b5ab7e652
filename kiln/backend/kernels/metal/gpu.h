// The Metal flavour on NVIDIA GPUs (NVRTC): the common layer plus Metal's compute
// attributes, threadgroup barriers, simdgroup functions, atomics and simdgroup matrices.
//
// Dispatch: the launcher runs a Metal grid as full blocks plus edge launches whose blocks
// have the edge threadgroups' real sizes, so every CUDA thread is a Metal thread; the
// parameter struct says where a launch's blocks sit in the grid (block_offset) and the
// full threadgroup size. A simdgroup is a warp (32 lanes).
#pragma once

#include "kiln/backend/kernels/metal/common.h"
#include "kiln/backend/kernels/metal/gpu_atomic.h"
#include "kiln/backend/kernels/metal/gpu_matrix.h"
#include "kiln/backend/kernels/metal/gpu_simd.h"

namespace metal {

/** All threads of the threadgroup wait here; memory they wrote before is visible after. */
KILN_HD void threadgroup_barrier(mem_flags = mem_flags::mem_none) {
  __syncthreads();
}
/** The simdgroup's active lanes wait here. */
KILN_HD void simdgroup_barrier(mem_flags = mem_flags::mem_none) {
  __syncwarp(__activemask());
}

}  // namespace metal

/** Metal's compute attributes from CUDA's built-ins and the launch's kiln_params `p` (its
 * block offset): the four the others follow from (metal/attributes.h). */
#define KILN_ATTR KILN_HD
namespace kiln_attr {

using metal::uint;
using metal::uint3;

template <typename P>
KILN_ATTR uint3 threadgroup_position_in_grid(const P& p) {
  return uint3(blockIdx.x + p.block_offset[0], blockIdx.y + p.block_offset[1],
               blockIdx.z + p.block_offset[2]);
}
template <typename P>
KILN_ATTR uint3 thread_position_in_threadgroup(const P&) {
  return uint3(threadIdx.x, threadIdx.y, threadIdx.z);
}
template <typename P>
KILN_ATTR uint3 threads_per_threadgroup(const P&) {
  return uint3(blockDim.x, blockDim.y, blockDim.z);
}
template <typename P>
KILN_ATTR uint thread_index_in_threadgroup(const P&) {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

}  // namespace kiln_attr

#include "kiln/backend/kernels/metal/attributes.h"
#undef KILN_ATTR
