// Which implementation serves scaled_dot_product_attention on the GPU: kiln's own kernels
// (backend/cuda/fast_attention.cpp) or cuDNN's fused attention through the cudnn-frontend
// graph API (backend/cuda/fast_attention_cudnn.cpp), and what tests need to see which ran.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::fast {

/**
 * The GPU implementation of scaled_dot_product_attention (forward and gradient).
 *  - kiln: kiln's kernels always.
 *  - cudnn: cuDNN's fused attention wherever it computes the call exactly (float16 or
 *    bfloat16; head dims multiples of 8 up to 128; no mask, or "causal" with L_q <= L_k;
 *    no array mask, no sinks; H_q a multiple of H_kv), kiln's kernels elsewhere, and kiln's
 *    kernels where cuDNN rejects the graph (decided once per problem).
 *  - automatic (the default): as cudnn, but decode-like calls (at most 16 query rows per
 *    key/value head) stay on kiln's decode kernels. On an H100, cuDNN's forward is 2.3x and
 *    forward + backward 1.9x kiln's kernels at B32 H12 L512 D64 causal bfloat16.
 */
enum class SdpaBackend { kiln, cudnn, automatic };

/** "kiln", "cudnn" or "auto" (case-sensitive); throws std::invalid_argument naming the
 * value and the choices otherwise. */
SdpaBackend parse_sdpa_backend(const std::string& value);

/** "kiln", "cudnn" or "auto". */
const char* sdpa_backend_name(SdpaBackend b);

/**
 * The backend new attention nodes take: the override of set_sdpa_backend when there is
 * one, else the environment variable KILN_SDPA_BACKEND (read at each call; unset or empty
 * means automatic). Throws std::invalid_argument ("[scaled_dot_product_attention]
 * KILN_SDPA_BACKEND=...") for a value parse_sdpa_backend rejects.
 */
SdpaBackend sdpa_backend();

/** Overrides KILN_SDPA_BACKEND for this process (std::nullopt restores it). Nodes take the
 * backend when they are built, so a change leaves nodes already built as they were. */
void set_sdpa_backend(std::optional<SdpaBackend> backend);

/** How often the cuDNN path ran, and how often a node that asked for it ran kiln's kernels
 * because cuDNN rejected its graph (or could not be loaded). Process-wide, for tests. */
struct SdpaCudnnCounts {
  int64_t forward = 0;
  int64_t backward = 0;
  int64_t forward_fallbacks = 0;
  int64_t backward_fallbacks = 0;
};
SdpaCudnnCounts sdpa_cudnn_counts();

/** "" when the cuDNN path can run here (compiled in and libcudnn.so.9 loaded), else why not
 * (built without CUDA, without cudnn.h or the cudnn-frontend headers, or the library
 * missing). Loads the library on first use. */
std::string sdpa_cudnn_status();

namespace detail {
enum class SdpaCudnnEvent { forward, backward, forward_fallback, backward_fallback };
void count_sdpa_cudnn(SdpaCudnnEvent e);
}  // namespace detail

}  // namespace kiln::fast
