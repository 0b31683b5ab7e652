// The GPU sort family's kernels on kiln's CPU kernel runtime (test_sort_kernels_emu.cpp), for
// test_sort_kernels.cpp: a sortplan::Launcher whose kernels are the device headers built by
// the host compiler, and whose device memory is host memory.
#pragma once

#include <memory>

#include "kiln/backend/cuda/sort_plan.h"

namespace kiln::test {

/** A launcher for key types float32, int32, float64, int64, uint8, float16 and complex64
 * (radix kinds 2, 1, 2, 1, 0, 3, 5), reporting `multiprocessors` multiprocessors. Throws
 * std::runtime_error for a kernel it does not hold. Buffers from scratch() live as long as the
 * launcher. */
std::unique_ptr<sortplan::Launcher> make_emulated_sort_launcher(int multiprocessors);

}  // namespace kiln::test
