// Unary elementwise ops: argument checks, dtype rules, graph construction.
#include <memory>

#include "kiln/ops.h"
#include "kiln/primitives_unary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {
// Transcendental functions compute in a floating type: integers and bool become float32.
Dtype inexact_dtype(Dtype d) { return is_inexact(d) ? d : float32; }
}  // namespace

array exp(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto dtype = inexact_dtype(a.dtype());
  return array(a.shape(), dtype, std::make_shared<Exp>(stream), {astype(a, dtype, stream)});
}

}  // namespace kiln
