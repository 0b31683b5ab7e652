// Metal's compute attributes that follow from four a target defines first, in namespace
// kiln_attr with the qualifier KILN_ATTR (metal/gpu.h from CUDA's built-ins, metal/cpu.h
// from the CPU runtime's current thread): threadgroup_position_in_grid,
// thread_position_in_threadgroup, threads_per_threadgroup (the real size, smaller at the
// grid's ragged edges) and thread_index_in_threadgroup. `p` is the launch's kiln_params
// (grid and full threadgroup size). A simdgroup is 32 consecutive threads, a quadgroup 4.
#pragma once

#include "kiln/backend/kernels/metal/vec.h"

#ifndef KILN_ATTR
#error "define KILN_ATTR (the attribute functions' qualifier) before including this header"
#endif

namespace kiln_attr {

using metal::uint;
using metal::uint3;

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
KILN_ATTR uint thread_index_in_simdgroup(const P& p) {
  return thread_index_in_threadgroup(p) & 31u;
}
template <typename P>
KILN_ATTR uint simdgroup_index_in_threadgroup(const P& p) {
  return thread_index_in_threadgroup(p) >> 5;
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
KILN_ATTR uint simdgroups_per_threadgroup(const P& p) {
  const uint3 d = threads_per_threadgroup(p);
  return (d.x * d.y * d.z + 31u) / 32u;
}
template <typename P>
KILN_ATTR uint dispatch_simdgroups_per_threadgroup(const P& p) {
  return (p.threadgroup[0] * p.threadgroup[1] * p.threadgroup[2] + 31u) / 32u;
}
template <typename P>
KILN_ATTR uint thread_index_in_quadgroup(const P& p) {
  return thread_index_in_threadgroup(p) & 3u;
}
template <typename P>
KILN_ATTR uint quadgroup_index_in_threadgroup(const P& p) {
  return thread_index_in_threadgroup(p) >> 2;
}
template <typename P>
KILN_ATTR uint quadgroups_per_threadgroup(const P& p) {
  const uint3 d = threads_per_threadgroup(p);
  return (d.x * d.y * d.z + 3u) / 4u;
}
template <typename P>
KILN_ATTR uint dispatch_quadgroups_per_threadgroup(const P& p) {
  return (p.threadgroup[0] * p.threadgroup[1] * p.threadgroup[2] + 3u) / 4u;
}

}  // namespace kiln_attr
