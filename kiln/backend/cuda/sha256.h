// SHA-256 moved to the core (kiln/backend/kernels/sha256.h), shared with the CPU kernel
// cache; the CUDA backend keeps its name for it.
#pragma once

#include "kiln/backend/kernels/sha256.h"

namespace kiln::gpu {
using kernels::Sha256;
}  // namespace kiln::gpu
