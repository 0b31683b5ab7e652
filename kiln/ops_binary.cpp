// Binary elementwise ops: dtype checks, promotion, broadcasting, graph construction.
#include <complex>
#include <memory>
#include <optional>

#include "kiln/ops.h"
#include "kiln/ops_complex.h"
#include "kiln/primitives_binary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// Builds the node of primitive P on a and b converted to `in_dtype` and broadcast to a
// common shape (an impossible broadcast throws, tagged with `op`); `out_dtype` defaults to
// `in_dtype`.
template <typename P>
array make_binary(const char* op, const array& a, const array& b, Dtype in_dtype,
                  std::optional<Dtype> out_dtype, const Stream& s) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  std::vector<array> in{broadcast_to(astype(a, in_dtype, s), shape, s),
                        broadcast_to(astype(b, in_dtype, s), shape, s)};
  return array(std::move(shape), out_dtype.value_or(in_dtype), std::make_shared<P>(s),
               std::move(in));
}

[[noreturn]] void unsupported(const char* op, Dtype d, const char* why) {
  throw std::invalid_argument(msg("[", op, "] Not supported for ", d, " inputs", why, "."));
}

// The dtype families each op computes in.
Dtype any_type(const array& a, const array& b, const char*) {
  return promote_types(a.dtype(), b.dtype());
}
// Ops that need an ordering or are only defined on the reals.
Dtype real_type(const array& a, const array& b, const char* op) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (is_complex(t)) unsupported(op, t, " (complex numbers are not ordered)");
  return t;
}
// Real floating-point functions: integers and bool compute in float32.
Dtype real_inexact_type(const array& a, const array& b, const char* op) {
  Dtype t = real_type(a, b, op);
  return is_floating_point(t) ? t : float32;
}
Dtype integral_type(const array& a, const array& b, const char* op) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (!is_integral(t)) unsupported(op, t, "; it needs integer or bool arrays");
  return t;
}
// Shifting bools shifts 0/1 as uint8 (MLX).
Dtype shift_type(const array& a, const array& b, const char* op) {
  Dtype t = integral_type(a, b, op);
  return t == bool_ ? uint8 : t;
}

using TypeRule = Dtype (*)(const array&, const array&, const char*);

template <typename P>
array elementwise(const char* op, TypeRule rule, const array& a, const array& b, StreamOrDevice s) {
  return make_binary<P>(op, a, b, rule(a, b, op), {}, to_stream(s));
}

template <typename P>
array comparison(const char* op, TypeRule rule, const array& a, const array& b, StreamOrDevice s) {
  return make_binary<P>(op, a, b, rule(a, b, op), bool_, to_stream(s));
}

}  // namespace

// ---------------------------------------------------------------- arithmetic

array add(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<Add>("add", any_type, a, b, s);
}

array subtract(const array& a, const array& b, StreamOrDevice s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (t == bool_) unsupported("subtract", t, "; use logical_xor (not_equal) instead");
  return make_binary<Subtract>("subtract", a, b, t, {}, to_stream(s));
}

array multiply(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<Multiply>("multiply", any_type, a, b, s);
}

array divide(const array& a, const array& b, StreamOrDevice s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (!is_inexact(t)) t = float32;  // true division
  return make_binary<Divide>("divide", a, b, t, {}, to_stream(s));
}

array floor_divide(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<FloorDivide>("floor_divide", real_type, a, b, s);
}

array remainder(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<Remainder>("remainder", real_type, a, b, s);
}

array power(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<Power>("power", any_type, a, b, s);
}

array maximum(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<Maximum>("maximum", real_type, a, b, s);
}

array minimum(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<Minimum>("minimum", real_type, a, b, s);
}

array arctan2(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<ArcTan2>("arctan2", real_inexact_type, a, b, s);
}

array logaddexp(const array& a, const array& b, StreamOrDevice s) {
  if (is_complex(a.dtype()) || is_complex(b.dtype())) {
    // log(e^a + e^b) = m + log(1 + e^(o - m)), m the operand with the larger real part.
    auto stream = to_stream(s);
    array x = astype(a, complex64, stream), y = astype(b, complex64, stream);
    array x_big = greater_equal(real(x, stream), real(y, stream), stream);
    array m = where(x_big, x, y, stream), o = where(x_big, y, x, stream);
    array r = add(m, log1p(exp(subtract(o, m, stream), stream), stream), stream);
    // The imaginary part is an angle: wrap it to (-pi, pi] as log's principal branch.
    array phase = imag(r, stream);
    phase = arctan2(sin(phase, stream), cos(phase, stream), stream);
    return detail::complex_from_parts(real(r, stream), phase, stream);
  }
  return elementwise<LogAddExp>("logaddexp", real_inexact_type, a, b, s);
}

// ---------------------------------------------------------------- comparisons

array equal(const array& a, const array& b, StreamOrDevice s) {
  return comparison<Equal>("equal", any_type, a, b, s);
}

array not_equal(const array& a, const array& b, StreamOrDevice s) {
  return comparison<NotEqual>("not_equal", any_type, a, b, s);
}

array less(const array& a, const array& b, StreamOrDevice s) {
  return comparison<Less>("less", real_type, a, b, s);
}

array less_equal(const array& a, const array& b, StreamOrDevice s) {
  return comparison<LessEqual>("less_equal", real_type, a, b, s);
}

array greater(const array& a, const array& b, StreamOrDevice s) {
  return comparison<Greater>("greater", real_type, a, b, s);
}

array greater_equal(const array& a, const array& b, StreamOrDevice s) {
  return comparison<GreaterEqual>("greater_equal", real_type, a, b, s);
}

// ---------------------------------------------------------------- logic and bits

array logical_and(const array& a, const array& b, StreamOrDevice s) {
  return make_binary<LogicalAnd>("logical_and", a, b, bool_, {}, to_stream(s));
}

array logical_or(const array& a, const array& b, StreamOrDevice s) {
  return make_binary<LogicalOr>("logical_or", a, b, bool_, {}, to_stream(s));
}

array bitwise_and(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<BitwiseAnd>("bitwise_and", integral_type, a, b, s);
}

array bitwise_or(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<BitwiseOr>("bitwise_or", integral_type, a, b, s);
}

array bitwise_xor(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<BitwiseXor>("bitwise_xor", integral_type, a, b, s);
}

array left_shift(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<LeftShift>("left_shift", shift_type, a, b, s);
}

array right_shift(const array& a, const array& b, StreamOrDevice s) {
  return elementwise<RightShift>("right_shift", shift_type, a, b, s);
}

// ---------------------------------------------------------------- operators

array operator+(const array& a, const array& b) {
  return add(a, b);
}
array operator-(const array& a, const array& b) {
  return subtract(a, b);
}
array operator*(const array& a, const array& b) {
  return multiply(a, b);
}
array operator/(const array& a, const array& b) {
  return divide(a, b);
}
array operator%(const array& a, const array& b) {
  return remainder(a, b);
}
array operator==(const array& a, const array& b) {
  return equal(a, b);
}
array operator!=(const array& a, const array& b) {
  return not_equal(a, b);
}
array operator<(const array& a, const array& b) {
  return less(a, b);
}
array operator<=(const array& a, const array& b) {
  return less_equal(a, b);
}
array operator>(const array& a, const array& b) {
  return greater(a, b);
}
array operator>=(const array& a, const array& b) {
  return greater_equal(a, b);
}
array operator&&(const array& a, const array& b) {
  return logical_and(a, b);
}
array operator||(const array& a, const array& b) {
  return logical_or(a, b);
}
array operator&(const array& a, const array& b) {
  return bitwise_and(a, b);
}
array operator|(const array& a, const array& b) {
  return bitwise_or(a, b);
}
array operator^(const array& a, const array& b) {
  return bitwise_xor(a, b);
}
array operator<<(const array& a, const array& b) {
  return left_shift(a, b);
}
array operator>>(const array& a, const array& b) {
  return right_shift(a, b);
}

}  // namespace kiln
