// The CPU's adjustments to a generated translation unit (signature.h's Target::cpu output)
// before the host compiler builds it.
#pragma once

#include <string>

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

}  // namespace kiln::kernels
