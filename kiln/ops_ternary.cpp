// where, and the comparisons built from elementwise ops: clip, isclose, allclose,
// array_equal.
#include <memory>

#include "kiln/ops.h"
#include "kiln/primitives_binary.h"
#include "kiln/primitives_ternary.h"
#include "kiln/utils.h"

namespace kiln {

array where(const array& condition, const array& x, const array& y, StreamOrDevice s) {
  auto stream = to_stream(s);
  Shape shape = broadcast_shapes({condition, x, y}, "where");
  Dtype dtype = promote_types(x.dtype(), y.dtype());
  std::vector<array> in{broadcast_to(astype(condition, bool_, stream), shape, stream),
                        broadcast_to(astype(x, dtype, stream), shape, stream),
                        broadcast_to(astype(y, dtype, stream), shape, stream)};
  return array(std::move(shape), dtype, std::make_shared<Select>(stream), std::move(in));
}

array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max,
           StreamOrDevice s) {
  if (!a_min && !a_max) {
    throw std::invalid_argument("[clip] At least one of a_min and a_max must be given.");
  }
  // maximum then minimum: a_max wins where the bounds cross, as in NumPy; NaN propagates.
  array out = a;
  if (a_min) out = maximum(out, *a_min, s);
  if (a_max) out = minimum(out, *a_max, s);
  return out;
}

array isclose(const array& a, const array& b, double rtol, double atol, bool equal_nan,
              StreamOrDevice s) {
  auto stream = to_stream(s);
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (!is_inexact(t)) t = float32;
  array x = astype(a, t, stream), y = astype(b, t, stream);
  // |x - y| <= atol + rtol |y| decides finite values; equality decides infinities.
  array mag = abs(y, stream);
  Dtype real_t = mag.dtype();
  array bound = add(array(atol, real_t), multiply(array(rtol, real_t), mag, stream), stream);
  array close = logical_and(less_equal(abs(subtract(x, y, stream), stream), bound, stream),
                            isfinite(y, stream), stream);
  close = logical_or(close, equal(x, y, stream), stream);
  if (equal_nan) {
    close = logical_or(close, logical_and(isnan(x, stream), isnan(y, stream), stream), stream);
  }
  return close;
}

array allclose(const array& a, const array& b, double rtol, double atol, bool equal_nan,
               StreamOrDevice s) {
  return all(isclose(a, b, rtol, atol, equal_nan, s), false, s);
}

array array_equal(const array& a, const array& b, bool equal_nan, StreamOrDevice s) {
  auto stream = to_stream(s);
  if (a.shape() != b.shape()) return array(false);
  Dtype t = promote_types(a.dtype(), b.dtype());
  auto shape = a.shape();
  array eq(std::move(shape), bool_, std::make_shared<Equal>(stream, equal_nan && is_inexact(t)),
           {astype(a, t, stream), astype(b, t, stream)});
  return all(eq, false, s);
}

}  // namespace kiln
