// Transformations of the unary primitives.
//
// A differentiable f has jvp = t * f'(x) and vjp = c * conj(f'(x)) (MLX's convention for
// complex inputs, docs/transforms.md; conj is the identity on real dtypes); each f' below
// may use the primal output y = f(x), which the jvp builds lazily and only evaluates if f'
// reads it. vmap maps f over the same axis.
#include "kiln/primitives_unary.h"

#include <cmath>
#include <numbers>

#include "kiln/ops.h"
#include "kiln/primitives_common.h"

namespace kiln {

namespace {

// A constant of x's dtype, so derivatives of half-precision inputs stay half precision.
array constant(double v, const array& x) {
  return array(v, x.dtype());
}

array round0(const array& x, StreamOrDevice s) {
  return round(x, 0, s);
}

}  // namespace

// jvp, vjp and vmap of a smooth unary primitive NAME computing FN, whose derivative is
// the expression DERIV of (x, y, s).
#define KILN_SMOOTH_UNARY(NAME, FN, ...)                                                       \
  namespace {                                                                                  \
  array NAME##_derivative(const array& x, const array& y, const Stream& s) {                   \
    (void)x, (void)y;                                                                          \
    return __VA_ARGS__;                                                                        \
  }                                                                                            \
  }                                                                                            \
  std::vector<array> NAME::jvp(const std::vector<array>& primals,                              \
                               const std::vector<array>& tangents, const std::vector<int>&) {  \
    const array& x = primals[0];                                                               \
    return {multiply(tangents[0], NAME##_derivative(x, FN(x, stream()), stream()), stream())}; \
  }                                                                                            \
  std::vector<array> NAME::vjp(const std::vector<array>& primals,                              \
                               const std::vector<array>& cotangents, const std::vector<int>&,  \
                               const std::vector<array>& outputs) {                            \
    array d = NAME##_derivative(primals[0], outputs[0], stream());                             \
    return {multiply(cotangents[0], conj_if_complex(d, stream()), stream())};                  \
  }                                                                                            \
  KILN_UNARY_VMAP(NAME, FN)

#define KILN_UNARY_VMAP(NAME, FN)                                                              \
  std::pair<std::vector<array>, std::vector<int>> NAME::vmap(const std::vector<array>& inputs, \
                                                             const std::vector<int>& axes) {   \
    return {{FN(inputs[0], stream())}, axes};                                                  \
  }

// A piecewise-constant or integer-valued NAME: its derivative is zero wherever it exists.
#define KILN_ZERO_GRAD_UNARY(NAME, FN)                                                       \
  std::vector<array> NAME::jvp(const std::vector<array>& primals, const std::vector<array>&, \
                               const std::vector<int>&) {                                    \
    return {zeros_like(FN(primals[0], stream()), stream())};                                 \
  }                                                                                          \
  std::vector<array> NAME::vjp(const std::vector<array>& primals, const std::vector<array>&, \
                               const std::vector<int>&, const std::vector<array>&) {         \
    return {zeros_like(primals[0], stream())};                                               \
  }                                                                                          \
  KILN_UNARY_VMAP(NAME, FN)

// ---------------------------------------------------------------- arithmetic

// |x|' = sign(x). For complex x the output is real: d|x| = Re(conj(sign(x)) dx).
std::vector<array> Abs::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                            const std::vector<int>&) {
  const array& x = primals[0];
  array d = sign(x, stream());
  if (is_complex(x.dtype())) {
    return {real(multiply(conjugate(d, stream()), tangents[0], stream()), stream())};
  }
  return {multiply(tangents[0], d, stream())};
}
std::vector<array> Abs::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<int>&, const std::vector<array>&) {
  // Complex: d|x| = Re(conj(sign(x)) dx), whose adjoint under Re(conj(u) v) takes a real
  // cotangent c to c sign(x) (the gradients of |x| by Re(x) and Im(x)).
  return {multiply(cotangents[0], sign(primals[0], stream()), stream())};
}
KILN_UNARY_VMAP(Abs, abs)

KILN_SMOOTH_UNARY(Negative, negative, constant(-1, x))
KILN_SMOOTH_UNARY(Square, square, multiply(constant(2, x), x, s))
// Sign is piecewise constant.
KILN_ZERO_GRAD_UNARY(Sign, sign)

// ---------------------------------------------------------------- floating-point math

KILN_SMOOTH_UNARY(Sqrt, sqrt, divide(constant(0.5, x), y, s))
// d/dx x^(-1/2) = -x^(-3/2) / 2 = -y / (2x)
KILN_SMOOTH_UNARY(Rsqrt, rsqrt, divide(multiply(constant(-0.5, x), y, s), x, s))
KILN_SMOOTH_UNARY(Exp, exp, y)
KILN_SMOOTH_UNARY(Expm1, expm1, add(y, constant(1, x), s))
KILN_SMOOTH_UNARY(Log, log, reciprocal(x, s))
KILN_SMOOTH_UNARY(Log1p, log1p, reciprocal(add(x, constant(1, x), s), s))
KILN_SMOOTH_UNARY(Log2, log2, reciprocal(multiply(x, constant(std::numbers::ln2, x), s), s))
KILN_SMOOTH_UNARY(Log10, log10, reciprocal(multiply(x, constant(std::numbers::ln10, x), s), s))
KILN_SMOOTH_UNARY(Sin, sin, cos(x, s))
KILN_SMOOTH_UNARY(Cos, cos, negative(sin(x, s), s))
// tan' = 1 + tan^2
KILN_SMOOTH_UNARY(Tan, tan, add(constant(1, x), square(y, s), s))
// asin' = 1 / sqrt(1 - x^2), acos' = -asin'
KILN_SMOOTH_UNARY(ArcSin, arcsin, rsqrt(subtract(constant(1, x), square(x, s), s), s))
KILN_SMOOTH_UNARY(ArcCos, arccos, negative(rsqrt(subtract(constant(1, x), square(x, s), s), s), s))
KILN_SMOOTH_UNARY(ArcTan, arctan, reciprocal(add(constant(1, x), square(x, s), s), s))
KILN_SMOOTH_UNARY(Sinh, sinh, cosh(x, s))
KILN_SMOOTH_UNARY(Cosh, cosh, sinh(x, s))
// tanh' = 1 - tanh^2
KILN_SMOOTH_UNARY(Tanh, tanh, subtract(constant(1, x), square(y, s), s))
KILN_SMOOTH_UNARY(ArcSinh, arcsinh, rsqrt(add(square(x, s), constant(1, x), s), s))
KILN_SMOOTH_UNARY(ArcCosh, arccosh, rsqrt(subtract(square(x, s), constant(1, x), s), s))
KILN_SMOOTH_UNARY(ArcTanh, arctanh, reciprocal(subtract(constant(1, x), square(x, s), s), s))
// erf' = 2/sqrt(pi) e^(-x^2); erfinv' = sqrt(pi)/2 e^(erfinv(x)^2)
KILN_SMOOTH_UNARY(Erf, erf,
                  multiply(constant(2 / std::sqrt(std::numbers::pi), x),
                           exp(negative(square(x, s), s), s), s))
KILN_SMOOTH_UNARY(ErfInv, erfinv,
                  multiply(constant(std::sqrt(std::numbers::pi) / 2, x), exp(square(y, s), s), s))
// sigmoid' = y (1 - y)
KILN_SMOOTH_UNARY(Sigmoid, sigmoid, multiply(y, subtract(constant(1, x), y, s), s))

// ---------------------------------------------------------------- piecewise constant

// Rounding is piecewise constant.
KILN_ZERO_GRAD_UNARY(Floor, floor)
KILN_ZERO_GRAD_UNARY(Ceil, ceil)
KILN_ZERO_GRAD_UNARY(Trunc, trunc)
// fp8 bits are integers: no derivative flows through either conversion.
KILN_ZERO_GRAD_UNARY(ToFP8, to_fp8)
namespace {
array from_fp8_float32(const array& x, StreamOrDevice s) {
  return from_fp8(x, float32, s);
}
}  // namespace
KILN_ZERO_GRAD_UNARY(FromFP8, from_fp8_float32)
KILN_ZERO_GRAD_UNARY(Round, round0)
// Logical, bitwise and classification results are bool or integer: no gradient.
KILN_ZERO_GRAD_UNARY(LogicalNot, logical_not)
KILN_ZERO_GRAD_UNARY(BitwiseInvert, bitwise_invert)
KILN_ZERO_GRAD_UNARY(IsNaN, isnan)
KILN_ZERO_GRAD_UNARY(IsInf, isinf)
KILN_ZERO_GRAD_UNARY(IsFinite, isfinite)
KILN_ZERO_GRAD_UNARY(IsPosInf, isposinf)
KILN_ZERO_GRAD_UNARY(IsNegInf, isneginf)

// ---------------------------------------------------------------- complex parts
// Linear maps: the jvp applies the map; the vjp its adjoint under Re(conj(u) v) (a real
// cotangent c of Real comes back as c + 0i, of Imag as i c, as MLX).

std::vector<array> Real::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  return {real(tangents[0], stream())};
}
std::vector<array> Real::vjp(const std::vector<array>& primals,
                             const std::vector<array>& cotangents, const std::vector<int>&,
                             const std::vector<array>&) {
  return {astype(cotangents[0], primals[0].dtype(), stream())};
}
KILN_UNARY_VMAP(Real, real)

std::vector<array> Imag::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  return {imag(tangents[0], stream())};
}
std::vector<array> Imag::vjp(const std::vector<array>& primals,
                             const std::vector<array>& cotangents, const std::vector<int>&,
                             const std::vector<array>&) {
  return {multiply(array(complex64_t(0, 1), primals[0].dtype()), cotangents[0], stream())};
}
KILN_UNARY_VMAP(Imag, imag)

std::vector<array> Conjugate::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {conjugate(tangents[0], stream())};
}
std::vector<array> Conjugate::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  return {conjugate(cotangents[0], stream())};
}
KILN_UNARY_VMAP(Conjugate, conjugate)

}  // namespace kiln
