// The custom-kernel headers (kiln/backend/kernels/**/*.h), embedded into the library at
// build time (cmake/kiln_embed.cmake) in every build, with or without CUDA: NVRTC receives
// them as named headers, the CPU path writes them next to the generated source.
#pragma once

#include <string_view>
#include <vector>

namespace kiln::kernels {

/** One embedded header: its path relative to the repository root and its text. */
struct EmbeddedHeader {
  std::string_view path;  // e.g. "kiln/backend/kernels/metal/vec.h"
  std::string_view text;  // NUL-terminated (a string literal)
};

/** Every embedded header, sorted by path. */
const std::vector<EmbeddedHeader>& embedded_headers();

/** The embedded header at `path`, or null. */
const EmbeddedHeader* find_embedded_header(std::string_view path);

/** The headers a GPU kernel of either flavour may include: metal/, cuda/ and cuda_gpu*.h. */
std::vector<EmbeddedHeader> gpu_kernel_headers();

}  // namespace kiln::kernels
