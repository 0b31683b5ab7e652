#include "kiln/primitives_common.h"

#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln {

std::pair<std::vector<array>, int> vmap_elementwise(const std::vector<array>& inputs,
                                                    const std::vector<int>& axes, const Stream& s) {
  int batch = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (axes[i] >= 0) batch = inputs[i].shape(axes[i]);
  }
  if (batch < 0) return {inputs, -1};
  std::vector<array> out;
  out.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    out.push_back(axes[i] >= 0 ? moveaxis(inputs[i], axes[i], 0, s) : expand_dims(inputs[i], 0, s));
  }
  Shape shape = broadcast_shapes(out, "vmap");
  for (auto& a : out) a = broadcast_to(a, shape, s);
  return {std::move(out), 0};
}

array conj_if_complex(const array& x, const Stream& s) {
  return is_complex(x.dtype()) ? conjugate(x, s) : x;
}

}  // namespace kiln
