// compile's fused GPU kernels: their CUDA source (backend/cuda/compiled_codegen.cpp, also for
// tests that compile them without a GPU) and launch shape (backend/cuda/compiled.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/backend/cuda/jit.h"
#include "kiln/primitives_compile.h"

namespace kiln::gpu {

/** The module of a fused tape: its kernels contig, strided and vec, each for 32- and 64-bit
 * indices; the name holds a hash of the source. Throws std::invalid_argument for an op or
 * dtype the GPU kernels do not take. */
ModuleSource fused_module(const FusedTape& tape, const std::string& label);

/** The module's kernel names, in the order Compiled::eval_gpu indexes them. */
std::vector<std::string> fused_kernel_names(const FusedTape& tape);
/** Elements per thread of the vectorized kernel: one 16-byte access of the widest operand. */
int fused_vector_width(const FusedTape& tape);

/** The module of CompiledGroup's kernel for members running `tape`: the same source, with
 * only fused_group_kernel_name(tape) instantiated. */
ModuleSource fused_group_module(const FusedTape& tape, const std::string& label);
std::string fused_group_kernel_name(const FusedTape& tape);
/** The group kernel's parameter: fused_group_capacity(tape) segments (a pointer per read
 * input, then per output, then int32 n, first block, scalar mask and vec flag), then an int32
 * count, padded to 8 bytes. */
size_t fused_segment_bytes(const FusedTape& tape);
int fused_group_capacity(const FusedTape& tape);
// Bounds of that parameter: CUDA's classic 4 KB of kernel parameters.
inline constexpr size_t kFusedGroupParamBytes = 4096;
inline constexpr size_t kFusedGroupMaxSegments = 64;

// The launch shape the generated code assumes: threads per block, elements per thread of the
// contig and strided kernels, dimensions of the strided kernel's index arrays.
inline constexpr uint32_t kFusedBlock = 256;
inline constexpr int kFusedWork = 4;
inline constexpr int kFusedMaxDims = 8;

}  // namespace kiln::gpu
