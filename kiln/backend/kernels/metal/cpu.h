// The Metal flavour on the CPU (host compiler): the common layer plus Metal's compute
// attributes, threadgroup barriers, simdgroup functions, atomics and simdgroup matrices,
// on kiln's CPU kernel runtime.
//
// Dispatch: a threadgroup at the grid's ragged edge holds only the threads inside the grid,
// so every thread is a Metal thread and threads_per_threadgroup is the edge's real size;
// the runtime runs the whole grid in one launch (block_offset stays 0). A simdgroup is 32
// consecutive threads of the threadgroup.
#pragma once

#include "kiln/backend/kernels/cuda_cpu_check.h"
#include "kiln/backend/kernels/cuda_cpu_runtime.h"
#include "kiln/backend/kernels/metal/common.h"
#include "kiln/backend/kernels/metal/cpu_atomic.h"
#include "kiln/backend/kernels/metal/cpu_matrix.h"
#include "kiln/backend/kernels/metal/cpu_simd.h"

namespace metal {

/** All threads of the threadgroup wait here; memory they wrote before is visible after. */
inline void threadgroup_barrier(mem_flags = mem_flags::mem_none, KILN_SITE_PARAMS) {
  kiln::cpu_rt::block_barrier(0, KILN_SITE);
}
/** The simdgroup's lanes that reach this call wait for each other. */
inline void simdgroup_barrier(mem_flags = mem_flags::mem_none, KILN_SITE_PARAMS) {
  kiln::cpu_rt::warp_sync(0xffffffffu, KILN_SITE);
}

}  // namespace metal

// Always inlined: in a barrier-free kernel they sit in the block loop's innermost body.
#define KILN_ATTR inline __attribute__((always_inline))

/** The values of Metal's compute attributes for the current thread; `p` is the launch's
 * kiln_params (grid and full threadgroup size). */
namespace kiln_attr {

using kiln::cpu_rt::self;
using metal::uint;
using metal::uint3;

template <typename P>
KILN_ATTR uint3 threadgroup_position_in_grid(const P&) {
  const auto& b = self().block_idx;
  return uint3(b.x, b.y, b.z);
}
template <typename P>
KILN_ATTR uint3 thread_position_in_threadgroup(const P&) {
  const auto& t = self().thread_idx;
  return uint3(t.x, t.y, t.z);
}
/** The real size of this threadgroup (smaller at the grid's ragged edges). */
template <typename P>
KILN_ATTR uint3 threads_per_threadgroup(const P&) {
  const auto& d = self().block_dim;
  return uint3(d.x, d.y, d.z);
}
/** The threadgroup size the dispatch asked for. */
template <typename P>
KILN_ATTR uint3 dispatch_threads_per_threadgroup(const P& p) {
  return uint3(p.threadgroup[0], p.threadgroup[1], p.threadgroup[2]);
}
template <typename P>
KILN_ATTR uint3 thread_position_in_grid(const P& p) {
  return threadgroup_position_in_grid(p) * dispatch_threads_per_threadgroup(p) +
         thread_position_in_threadgroup(p);
}
template <typename P>
KILN_ATTR uint3 threads_per_grid(const P& p) {
  return uint3(p.grid[0], p.grid[1], p.grid[2]);
}
template <typename P>
KILN_ATTR uint3 grid_size(const P& p) {
  return threads_per_grid(p);
}
template <typename P>
KILN_ATTR uint3 grid_origin(const P&) {
  return uint3(0u);
}
template <typename P>
KILN_ATTR uint3 threadgroups_per_grid(const P& p) {
  return (threads_per_grid(p) + dispatch_threads_per_threadgroup(p) - 1u) /
         dispatch_threads_per_threadgroup(p);
}
template <typename P>
KILN_ATTR uint thread_index_in_threadgroup(const P&) {
  return self().linear;
}
template <typename P>
KILN_ATTR uint thread_index_in_simdgroup(const P&) {
  return self().linear & 31u;
}
template <typename P>
KILN_ATTR uint simdgroup_index_in_threadgroup(const P&) {
  return self().linear >> 5;
}
template <typename P>
KILN_ATTR uint threads_per_simdgroup(const P&) {
  return 32u;
}
template <typename P>
KILN_ATTR uint thread_execution_width(const P&) {
  return 32u;
}
template <typename P>
KILN_ATTR uint simdgroups_per_threadgroup(const P&) {
  const auto& d = self().block_dim;
  return (d.x * d.y * d.z + 31u) / 32u;
}
template <typename P>
KILN_ATTR uint dispatch_simdgroups_per_threadgroup(const P& p) {
  return (p.threadgroup[0] * p.threadgroup[1] * p.threadgroup[2] + 31u) / 32u;
}
template <typename P>
KILN_ATTR uint thread_index_in_quadgroup(const P&) {
  return self().linear & 3u;
}
template <typename P>
KILN_ATTR uint quadgroup_index_in_threadgroup(const P&) {
  return self().linear >> 2;
}
template <typename P>
KILN_ATTR uint quadgroups_per_threadgroup(const P&) {
  const auto& d = self().block_dim;
  return (d.x * d.y * d.z + 3u) / 4u;
}
template <typename P>
KILN_ATTR uint dispatch_quadgroups_per_threadgroup(const P& p) {
  return (p.threadgroup[0] * p.threadgroup[1] * p.threadgroup[2] + 3u) / 4u;
}

}  // namespace kiln_attr

#undef KILN_ATTR
