// eval_cpu of the ternary elementwise primitives.
#include <cstdint>
#include <stdexcept>

#include "kiln/backend/cpu/elementwise.h"
#include "kiln/primitives_ternary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// out = cond ? x : y on elements of U. The condition is read as uint8_t (a bool's byte):
// compilers vectorize a select on a byte mask, but not on a bool loaded from memory.
template <typename U>
void select(const array& cond, const array& x, const array& y, array& out) {
  auto op = [](uint8_t c, U a, U b) { return c ? a : b; };
  if (!(cond.flags().row_contiguous && x.flags().row_contiguous && y.flags().row_contiguous)) {
    cpu::ternary_op<uint8_t, U, U, U>(cond, x, y, out, op);
    return;
  }
  // All three dense in row-major order: one flat loop.
  cpu::set_row_contiguous_output(out);
  const uint8_t* pc = cond.data<uint8_t>();
  const U* px = x.data<U>();
  const U* py = y.data<U>();
  U* dst = out.data<U>();
  cpu::parallel_for(out.size(), cpu::kElementwiseGrain, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) dst[i] = op(pc[i], px[i], py[i]);
  });
}

}  // namespace

// Selection only moves bits, so every dtype runs as the unsigned integer of its size.
void Select::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array &cond = inputs[0], &x = inputs[1], &y = inputs[2];
  switch (out.itemsize()) {
    case 1:
      return select<uint8_t>(cond, x, y, out);
    case 2:
      return select<uint16_t>(cond, x, y, out);
    case 4:
      return select<uint32_t>(cond, x, y, out);
    case 8:
      return select<uint64_t>(cond, x, y, out);
    default:
      throw std::runtime_error(msg("[Select::eval_cpu] Unsupported dtype ", out.dtype(), "."));
  }
}

}  // namespace kiln
