// fast::Custom: the transforms of a fused primitive through its unfused equivalent.
#include "kiln/fast_primitives.h"

#include "kiln/ops.h"

namespace kiln::fast {

std::vector<array> Custom::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  std::vector<array> all;
  for (size_t i = 0, j = 0; i < primals.size(); ++i) {
    if (j < argnums.size() && argnums[j] == static_cast<int>(i)) {
      all.push_back(tangents[j++]);
    } else {
      all.push_back(zeros_like(primals[i], stream()));
    }
  }
  return kiln::jvp(fallback_, primals, all).second;
}

std::vector<array> Custom::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  auto all = kiln::vjp(fallback_, primals, cotangents).second;
  std::vector<array> out;
  for (int a : argnums) out.push_back(all[a]);
  return out;
}

std::pair<std::vector<array>, std::vector<int>> Custom::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  auto out = kiln::vmap(fallback_, axes)(inputs);
  return {out, std::vector<int>(out.size(), 0)};
}

}  // namespace kiln::fast
