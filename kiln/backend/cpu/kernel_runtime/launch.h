// Running a CPU custom kernel: every block of the grid, in parallel on kiln's CPU thread
// pool, with the threads of a block either as fibers (kernels with barriers or warp
// operations: exact GPU semantics) or in a plain loop compiled into the kernel itself.
#pragma once

#include <string>

#include "kiln/backend/kernels/cuda_cpu_abi.h"

namespace kiln::cpu_rt {

/** The entry points of one loaded kernel. */
struct KernelEntry {
  RunBlocksFn run_blocks = nullptr;
  RunThreadFn run_thread = nullptr;
};

struct LaunchConfig {
  std::string tag;     // the API's tag for messages: "[cuda_kernel]" or "[metal_kernel]"
  std::string name;    // the kernel's name
  bool fibers = true;  // threads as fibers (needed by barriers and warp operations)
  bool check = false;  // checking mode: a barrier some threads skip is an error
};

/** The runtime's function table, for Launch::rt. */
const Runtime* runtime();

/**
 * Runs every block of `launch` (whose `rt` must be runtime()) and returns when all have
 * finished. Throws std::runtime_error naming the kernel, block and thread when a thread
 * fails (checking mode, a divergent barrier) or the block deadlocks: a fiber that runs for
 * KILN_KERNEL_TIMEOUT seconds (default 20) without reaching a barrier or warp operation
 * while other threads of its block wait is stopped, and the launch fails with an
 * explanation.
 */
void run_launch(const KernelEntry& kernel, const Launch& launch, const LaunchConfig& config);

}  // namespace kiln::cpu_rt
