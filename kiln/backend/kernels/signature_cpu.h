// Adjustments to a generated translation unit (signature.h) before it is compiled: the CPU's
// (dynamic shared memory, checking mode) and the GPU's checking mode.
#pragma once

#include <string>
#include <vector>

#include "kiln/backend/kernels/signature.h"

namespace kiln::kernels {

/**
 * The source the host compiler builds for `g` (generated for Target::cpu). Always:
 * `extern __shared__ T name[];` becomes a pointer to the block's dynamic shared memory. In
 * checking mode (`check`) also: the kernel's pointer parameters become checked_ptr, shared
 * arrays become checked_array, and reinterpret_cast keeps pointers checked (see
 * cuda_cpu_check.h). Line numbers of the user's header and source are kept.
 */
std::string cpu_translation_unit(const GeneratedKernel& g, bool check);

/** A GPU kernel's checking-mode source and the names of its shared arrays (ids from the
 * number of arguments on, in order). */
struct GpuCheckedKernel {
  std::string source;
  std::vector<std::string> shared_names;
};

/**
 * The checking-mode (KILN_KERNEL_CHECK=1) source of `g` (generated for Target::gpu): the
 * kernel's pointer parameters become kiln_check::ptr (the launcher packs their bounds),
 * shared arrays of the body kiln_check::array, its `extern __shared__` array a checked
 * pointer of `spec.shared_memory` bytes, and reinterpret_cast keeps pointers checked (see
 * gpu_check.h). Line numbers of the user's header and source are kept.
 */
GpuCheckedKernel gpu_check_translation_unit(const GeneratedKernel& g, const KernelSpec& spec);

}  // namespace kiln::kernels
