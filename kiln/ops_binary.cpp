// Binary elementwise ops: promotion, broadcasting, graph construction.
#include <memory>

#include "kiln/ops.h"
#include "kiln/primitives_binary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {
// Promotes both inputs to `dtype` and broadcasts them to a common shape.
std::vector<array> prepare(const array& a, const array& b, Dtype dtype, const Stream& s) {
  return broadcast_arrays({astype(a, dtype, s), astype(b, dtype, s)}, s);
}
}  // namespace

array add(const array& a, const array& b, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto dtype = promote_types(a.dtype(), b.dtype());
  auto in = prepare(a, b, dtype, stream);
  auto shape = in[0].shape();
  return array(std::move(shape), dtype, std::make_shared<Add>(stream), std::move(in));
}

array operator+(const array& a, const array& b) { return add(a, b); }

}  // namespace kiln
