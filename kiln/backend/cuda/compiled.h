// The CUDA source of compile's fused kernels (backend/cuda/compiled.cpp), for tests that
// compile them without a GPU.
#pragma once

#include <string>

#include "kiln/backend/cuda/jit.h"
#include "kiln/primitives_compile.h"

namespace kiln::gpu {

/** The module of a fused tape: its kernels contig, strided and vec, each for 32- and 64-bit
 * indices; the name holds a hash of the source. Throws std::invalid_argument for an op or
 * dtype the GPU kernels do not take. */
ModuleSource fused_module(const FusedTape& tape, const std::string& label);

}  // namespace kiln::gpu
