// scaled_dot_product_attention through cuDNN's fused attention (cudnn-frontend's sdpa and
// sdpa_backward graphs), for nodes built with the cuDNN backend (kiln/fast_sdpa_backend.h).
// Compiled in when the build finds cudnn.h and the cudnn-frontend headers
// (scripts/fetch-deps.sh puts them under build/deps); libcudnn.so.9 is loaded at run time.
#pragma once

#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/backend/cuda/stream.h"

namespace kiln::fast::cudnn_sdpa {

/** "" when the path can run (compiled in, libcudnn.so.9 and the CUDA runtime loaded), else
 * why not. */
std::string status();

/**
 * The forward through cuDNN: `out[0]` = the attention, `out[1]` = cuDNN's softmax stats
 * (float32, one per query row), both already allocated. Inputs: q, k, v (no mask, no sinks).
 * Returns false, computing nothing, when cuDNN does not serve this problem: cuDNN missing,
 * or its graph rejected (decided once per problem and cached); kiln's kernels then run.
 * Throws std::runtime_error ("[scaled_dot_product_attention] cuDNN ...") when an accepted
 * graph fails to run.
 */
bool forward(const std::vector<array>& in, std::vector<array>& out, float scale, bool causal,
             gpu::DeviceStream& s);

enum class Backward {
  served,            // dq, dk, dv written by cuDNN from the forward's cuDNN stats
  forward_was_kiln,  // the forward ran kiln's kernels: run kiln's backward as usual
  rejected,          // the forward ran cuDNN but cuDNN rejects the backward graph
};

/**
 * The backward through cuDNN. `in`: q, k, v, out, stats, dout (the VJP node's inputs);
 * `out`: dq, dk, dv, allocated. Finds which forward ran from the same cached decision the
 * forward took (same inputs, same key), so cuDNN's stats never reach kiln's kernels.
 */
Backward backward(const std::vector<array>& in, std::vector<array>& out, float scale, bool causal,
                  gpu::DeviceStream& s);

/**
 * Builds the forward and backward graphs of a problem (dense q (B, H_q, L_q, D), k, v) for
 * compute capability `sm` without a device and runs the frontend's validation: "" when it
 * passes, else the frontend's message (or why the path cannot run). Lets machines without
 * a GPU check the graphs kiln builds; cuDNN's own support check still needs the GPU.
 */
std::string validate_offline(Dtype d, const Shape& q, const Shape& k, const Shape& v, float scale,
                             bool causal, int sm);

}  // namespace kiln::fast::cudnn_sdpa
