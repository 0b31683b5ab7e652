#include "kiln/backend/kernels/embedded.h"

#include <algorithm>

namespace kiln::kernels {

const EmbeddedHeader* find_embedded_header(std::string_view path) {
  const auto& all = embedded_headers();
  auto it =
      std::lower_bound(all.begin(), all.end(), path,
                       [](const EmbeddedHeader& h, std::string_view p) { return h.path < p; });
  return it != all.end() && it->path == path ? &*it : nullptr;
}

std::vector<EmbeddedHeader> gpu_kernel_headers() {
  std::vector<EmbeddedHeader> out;
  for (const auto& h : embedded_headers()) {
    if (h.path.starts_with("kiln/backend/kernels/metal/") ||
        h.path.starts_with("kiln/backend/kernels/cuda/") ||
        h.path.starts_with("kiln/backend/kernels/cuda_gpu") ||
        h.path == "kiln/backend/kernels/gpu_check.h")  // checking mode's translation units
      out.push_back(h);
  }
  return out;
}

}  // namespace kiln::kernels
