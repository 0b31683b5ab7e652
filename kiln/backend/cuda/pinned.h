// Page-locked staging buffers for host-to-device uploads.
//
// cuMemcpyHtoDAsync from pageable memory may synchronize with the stream before it copies
// (CUDA's "API synchronization behavior"): uploading a training step's batch would wait for
// the previous step's kernels, and the host could never run ahead of the GPU. Small uploads
// are therefore copied into a pinned block first, which makes the transfer truly async.
#pragma once

#include <cstddef>
#include <memory>

#include "kiln/allocator.h"

namespace kiln::gpu {

/** The largest upload staged through pinned memory; larger ones copy from pageable memory
 * (their transfer time dwarfs the stream synchronization). */
constexpr size_t kMaxStagedUpload = size_t(8) << 20;

/** A pinned host block of at least `nbytes` (<= kMaxStagedUpload), as a Storage whose host
 * pointer is the block: keep it alive on the stream until the copy from it has run, after
 * which it returns to the pool. Null when the pool is at its cap (64 MiB) or page-locking
 * fails: the caller then uploads from pageable memory. Needs a current context. */
std::shared_ptr<Storage> pinned_staging(size_t nbytes);

}  // namespace kiln::gpu
