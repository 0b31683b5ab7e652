// A process-wide pool of worker threads for data-parallel CPU kernels.
#pragma once

#include <cstddef>
#include <functional>

namespace kiln::cpu {

/** Threads kernels may use (all cores, or KILN_NUM_THREADS). */
int num_threads();

/**
 * Calls `f(begin, end)` on disjoint chunks covering [0, n), on up to num_threads() threads
 * (the calling thread included). Runs inline when n < 2 * grain. Exceptions from `f` are
 * rethrown on the calling thread after every chunk has finished.
 */
void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& f);

/** Elements per chunk below which splitting a memory-bound loop costs more than it saves. */
inline constexpr size_t kElementwiseGrain = 1 << 16;

}  // namespace kiln::cpu
