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
#include "kiln/backend/kernels/metal/logging.h"
#include "kiln/backend/kernels/metal/math_more.h"
#include "kiln/backend/kernels/metal/packed.h"
#include "kiln/backend/kernels/metal/type_traits.h"

namespace metal {

/** All threads of the threadgroup wait here; memory they wrote before is visible after. */
inline void threadgroup_barrier(mem_flags = mem_flags::mem_none, KILN_SITE_PARAMS) {
  kiln::cpu_rt::block_barrier(0, KILN_SITE);
}
/** The simdgroup's lanes that reach this call wait for each other. */
inline void simdgroup_barrier(mem_flags = mem_flags::mem_none, KILN_SITE_PARAMS) {
  kiln::cpu_rt::warp_sync(0u, KILN_SITE);  // the lanes that arrive
}

}  // namespace metal

// Always inlined: in a barrier-free kernel they sit in the block loop's innermost body.
#define KILN_ATTR inline __attribute__((always_inline))

/** Metal's compute attributes for the current thread: the four the others follow from
 * (metal/attributes.h). */
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
template <typename P>
KILN_ATTR uint3 threads_per_threadgroup(const P&) {
  const auto& d = self().block_dim;
  return uint3(d.x, d.y, d.z);
}
template <typename P>
KILN_ATTR uint thread_index_in_threadgroup(const P&) {
  return self().linear;
}

}  // namespace kiln_attr

#include "kiln/backend/kernels/metal/attributes.h"

#undef KILN_ATTR
