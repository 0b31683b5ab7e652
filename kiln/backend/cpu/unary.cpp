// eval_cpu of the unary elementwise primitives.
#include <cmath>

#include "kiln/backend/cpu/elementwise.h"
#include "kiln/primitives_unary.h"

namespace kiln {

void Exp::eval_cpu(const std::vector<array>& inputs, array& out) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_half_v<T>) {
      cpu::unary_op<T, T>(inputs[0], out, [](T x) { return T(std::exp(float(x))); });
    } else if constexpr (std::is_floating_point_v<T> || is_complex_v<T>) {
      cpu::unary_op<T, T>(inputs[0], out, [](T x) { return std::exp(x); });
    } else {
      throw std::invalid_argument("[Exp::eval_cpu] Unsupported dtype.");
    }
  });
}

}  // namespace kiln
