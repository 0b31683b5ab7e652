// eval_cpu of the binary elementwise primitives.
#include "kiln/backend/cpu/elementwise.h"
#include "kiln/primitives_binary.h"

namespace kiln {

void Add::eval_cpu(const std::vector<array>& inputs, array& out) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::binary_op<T, T, T>(inputs[0], inputs[1], out, [](T x, T y) { return T(x + y); });
  });
}

}  // namespace kiln
