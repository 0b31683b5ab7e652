// eval_cpu of the ternary elementwise primitives.
#include "kiln/backend/cpu/elementwise.h"
#include "kiln/primitives_ternary.h"

namespace kiln {

void Select::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array &cond = inputs[0], &x = inputs[1], &y = inputs[2];
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto select = [](bool c, T a, T b) { return c ? a : b; };
    const bool flat = cond.flags().row_contiguous && x.flags().row_contiguous &&
                      y.flags().row_contiguous;
    if (!flat) {
      cpu::ternary_op<bool, T, T, T>(cond, x, y, out, select);
      return;
    }
    // All three dense in the same (row-major) order: one vectorizable loop.
    cpu::set_row_contiguous_output(out);
    const bool* pc = cond.data<bool>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* dst = out.data<T>();
    cpu::parallel_for(out.size(), cpu::kElementwiseGrain, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) dst[i] = select(pc[i], px[i], py[i]);
    });
  });
}

}  // namespace kiln
