// global_norm: argument checks, the node it builds and its unfused equivalent (which the
// transforms differentiate). Kernels: backend/cpu/fast_global_norm.cpp,
// backend/cuda/fast_global_norm.cpp.
#include "kiln/fast.h"
#include "kiln/fast_primitives.h"
#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

// sqrt(sum over arrays of sum(square(x))) in the output dtype.
ArrayFn global_norm_fallback(Stream s, Dtype acc) {
  return [s, acc](const std::vector<array>& in) {
    array total = array(0.0, acc);
    for (const auto& x : in) total = add(total, sum(square(astype(x, acc, s), s), false, s), s);
    return std::vector<array>{sqrt(total, s)};
  };
}

}  // namespace

bool GlobalNorm::is_equivalent(const Primitive& other) const {
  return dynamic_cast<const GlobalNorm*>(&other) != nullptr;
}

std::vector<Shape> GlobalNorm::output_shapes(const std::vector<array>&) {
  return {Shape{}};
}

array global_norm(const std::vector<array>& arrays, StreamOrDevice s_) {
  Dtype out = float32;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const Dtype d = arrays[i].dtype();
    if (!is_floating_point(d)) {
      throw std::invalid_argument(msg("[global_norm] Array ", i, " has dtype ", d,
                                      "; global_norm takes floating arrays only."));
    }
    if (d == float64) out = float64;
  }
  const Stream s = to_stream(s_);
  if (arrays.empty()) return astype(array(0.0f), out, s);
  return array(Shape{}, out, std::make_shared<GlobalNorm>(s, global_norm_fallback(s, out)), arrays);
}

}  // namespace kiln::fast
