// Files embedded into the library at build time (cmake/kiln_cuda.cmake, kiln_embed_files).
#pragma once

#include <string_view>
#include <vector>

namespace kiln::gpu {

/** One embedded file: its path relative to the repository root and its text. */
struct EmbeddedFile {
  std::string_view path;  // e.g. "kiln/backend/cuda/device/unary.cuh"
  std::string_view text;
};

/** The device headers under kiln/backend/cuda/device/, sorted by path. A kernel source
 * includes them by that path: #include "kiln/backend/cuda/device/unary.cuh". */
const std::vector<EmbeddedFile>& embedded_device_headers();

}  // namespace kiln::gpu
