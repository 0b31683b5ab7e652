// Settings of the GPU matrix products (Matmul, AddMM through cuBLASLt).
#pragma once

namespace kiln::gpu {

/**
 * Whether float32 matrix products on the GPU may round their inputs to TF32 (10-bit mantissa)
 * on tensor cores: about 8x faster on an H100, with ~1e-3 relative error. Off by default, as
 * PyTorch's torch.backends.cuda.matmul.allow_tf32; the environment variable
 * KILN_MATMUL_TF32=1 turns it on at start-up. Other dtypes are unaffected.
 */
bool matmul_allow_tf32();
/** Sets the TF32 setting for products evaluated from now on; returns the previous value. */
bool set_matmul_allow_tf32(bool allow);

}  // namespace kiln::gpu
