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

/** The values of Metal's compute attributes, from CUDA's built-ins and the launch's
 * kiln_params `p` (its grid, full threadgroup size and block offset). */
namespace kiln_attr {

using metal::uint;
using metal::uint3;

template <typename P>
KILN_HD uint3 threadgroup_position_in_grid(const P& p) {
  return uint3(blockIdx.x + p.block_offset[0], blockIdx.y + p.block_offset[1],
               blockIdx.z + p.block_offset[2]);
}
template <typename P>
KILN_HD uint3 thread_position_in_threadgroup(const P&) {
  return uint3(threadIdx.x, threadIdx.y, threadIdx.z);
}
/** The real size of this threadgroup (smaller at the grid's ragged edges). */
template <typename P>
KILN_HD uint3 threads_per_threadgroup(const P&) {
  return uint3(blockDim.x, blockDim.y, blockDim.z);
}
/** The threadgroup size the dispatch asked for. */
template <typename P>
KILN_HD uint3 dispatch_threads_per_threadgroup(const P& p) {
  return uint3(p.threadgroup[0], p.threadgroup[1], p.threadgroup[2]);
}
template <typename P>
KILN_HD uint3 thread_position_in_grid(const P& p) {
  return threadgroup_position_in_grid(p) * dispatch_threads_per_threadgroup(p) +
         thread_position_in_threadgroup(p);
}
template <typename P>
KILN_HD uint3 threads_per_grid(const P& p) {
  return uint3(p.grid[0], p.grid[1], p.grid[2]);
}
template <typename P>
KILN_HD uint3 grid_size(const P& p) {
  return threads_per_grid(p);
}
template <typename P>
KILN_HD uint3 grid_origin(const P&) {
  return uint3(0u);
}
template <typename P>
KILN_HD uint3 threadgroups_per_grid(const P& p) {
  return (threads_per_grid(p) + dispatch_threads_per_threadgroup(p) - 1u) /
         dispatch_threads_per_threadgroup(p);
}
template <typename P>
KILN_HD uint thread_index_in_threadgroup(const P&) {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
template <typename P>
KILN_HD uint thread_index_in_simdgroup(const P& p) {
  return thread_index_in_threadgroup(p) & 31u;
}
template <typename P>
KILN_HD uint simdgroup_index_in_threadgroup(const P& p) {
  return thread_index_in_threadgroup(p) >> 5;
}
template <typename P>
KILN_HD uint threads_per_simdgroup(const P&) {
  return 32u;
}
template <typename P>
KILN_HD uint thread_execution_width(const P&) {
  return 32u;
}
template <typename P>
KILN_HD uint simdgroups_per_threadgroup(const P&) {
  return (blockDim.x * blockDim.y * blockDim.z + 31u) / 32u;
}
template <typename P>
KILN_HD uint dispatch_simdgroups_per_threadgroup(const P& p) {
  return (p.threadgroup[0] * p.threadgroup[1] * p.threadgroup[2] + 31u) / 32u;
}
template <typename P>
KILN_HD uint thread_index_in_quadgroup(const P& p) {
  return thread_index_in_threadgroup(p) & 3u;
}
template <typename P>
KILN_HD uint quadgroup_index_in_threadgroup(const P& p) {
  return thread_index_in_threadgroup(p) >> 2;
}
template <typename P>
KILN_HD uint quadgroups_per_threadgroup(const P&) {
  return (blockDim.x * blockDim.y * blockDim.z + 3u) / 4u;
}
template <typename P>
KILN_HD uint dispatch_quadgroups_per_threadgroup(const P& p) {
  return (p.threadgroup[0] * p.threadgroup[1] * p.threadgroup[2] + 3u) / 4u;
}

}  // namespace kiln_attr
