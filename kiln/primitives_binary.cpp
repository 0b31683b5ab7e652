// Transformations of the binary primitives.
//
// Each differentiable f(a, b) defines its partial action: g * df/da or g * df/db, which
// serves as the jvp term of a tangent g and, for real dtypes, as the vjp of a cotangent g.
// Complex cotangents follow MLX's convention (docs/transforms.md): the vjp is
// g * conj(df/da), computed as conj(partial(conj(g))). Inputs were broadcast by the op, so
// Broadcast's vjp sums cotangents back to the original shapes.
#include "kiln/primitives_binary.h"

#include <optional>

#include "kiln/ops.h"
#include "kiln/primitives_common.h"

namespace kiln {

namespace {

array zero_where_not(const array& mask, const array& g, const Stream& s) {
  return where(mask, g, array(0, g.dtype()), s);
}

// d(a^b)/da = b a^(b-1), taken as 0 where b = 0 (also at a = 0, where a^(b-1) is inf).
array power_da(const array& a, const array& b, const Stream& s) {
  array d = multiply(b, power(a, subtract(b, array(1, b.dtype()), s), s), s);
  return zero_where_not(not_equal(b, array(0, b.dtype()), s), d, s);
}

// d(a^b)/db = a^b log(a), taken as 0 at a = 0 (the limit from the right where b > 0).
array power_db(const array& a, const array& y, const Stream& s) {
  array safe_a = where(equal(a, array(0, a.dtype()), s), array(1, a.dtype()), a, s);
  return multiply(y, log(safe_a, s), s);
}

// Where maximum/minimum selected input `arg`, given where a wins by comparison.
array selected(int arg, const array& a_wins, const array& a, const Stream& s) {
  array a_selected = logical_or(a_wins, isnan(a, s), s);
  return arg == 0 ? a_selected : logical_not(a_selected, s);
}

}  // namespace

#define KILN_BINARY_VMAP(NAME, FN)                                                             \
  std::pair<std::vector<array>, std::vector<int>> NAME::vmap(const std::vector<array>& inputs, \
                                                             const std::vector<int>& axes) {   \
    auto [in, axis] = vmap_elementwise(inputs, axes, stream());                                \
    return {{FN(in[0], in[1], stream())}, {axis}};                                             \
  }

// jvp, vjp and vmap of NAME computing FN(a, b), whose partial action on g for input `arg`
// (0: a, 1: b) is the expression given last, of (arg, g, a, b, y, s) with y = FN(a, b).
#define KILN_SMOOTH_BINARY(NAME, FN, ...)                                                       \
  namespace {                                                                                   \
  array NAME##_partial(int arg, const array& g, const array& a, const array& b, const array& y, \
                       const Stream& s) {                                                       \
    (void)a, (void)b, (void)y;                                                                  \
    return __VA_ARGS__;                                                                         \
  }                                                                                             \
  }                                                                                             \
  std::vector<array> NAME::jvp(const std::vector<array>& primals,                               \
                               const std::vector<array>& tangents,                              \
                               const std::vector<int>& argnums) {                               \
    const array &a = primals[0], &b = primals[1];                                               \
    array y = FN(a, b, stream());                                                               \
    array out = NAME##_partial(argnums[0], tangents[0], a, b, y, stream());                     \
    for (size_t i = 1; i < argnums.size(); ++i) {                                               \
      out = add(out, NAME##_partial(argnums[i], tangents[i], a, b, y, stream()), stream());     \
    }                                                                                           \
    return {out};                                                                               \
  }                                                                                             \
  std::vector<array> NAME::vjp(                                                                 \
      const std::vector<array>& primals, const std::vector<array>& cotangents,                  \
      const std::vector<int>& argnums, const std::vector<array>& outputs) {                     \
    const Stream& s = stream();                                                                 \
    array g = conj_if_complex(cotangents[0], s);                                                \
    std::vector<array> vjps;                                                                    \
    for (int arg : argnums) {                                                                   \
      vjps.push_back(                                                                           \
          conj_if_complex(NAME##_partial(arg, g, primals[0], primals[1], outputs[0], s), s));   \
    }                                                                                           \
    return vjps;                                                                                \
  }                                                                                             \
  KILN_BINARY_VMAP(NAME, FN)

// NAME's output is integer- or bool-valued, or piecewise constant: zero derivatives.
#define KILN_ZERO_GRAD_BINARY(NAME, FN)                                                      \
  std::vector<array> NAME::jvp(const std::vector<array>& primals, const std::vector<array>&, \
                               const std::vector<int>&) {                                    \
    return {zeros_like(FN(primals[0], primals[1], stream()), stream())};                     \
  }                                                                                          \
  std::vector<array> NAME::vjp(const std::vector<array>& primals, const std::vector<array>&, \
                               const std::vector<int>& argnums, const std::vector<array>&) { \
    std::vector<array> vjps;                                                                 \
    for (int arg : argnums) vjps.push_back(zeros_like(primals[arg], stream()));              \
    return vjps;                                                                             \
  }                                                                                          \
  KILN_BINARY_VMAP(NAME, FN)

// ---------------------------------------------------------------- arithmetic

KILN_SMOOTH_BINARY(Add, add, g)
KILN_SMOOTH_BINARY(Subtract, subtract, arg == 0 ? g : negative(g, s))
// Written out so that a complex cotangent is exactly c * conj(other) (one multiply, as
// prod's vjp computes it).
std::vector<array> Multiply::jvp(const std::vector<array>& primals,
                                 const std::vector<array>& tangents,
                                 const std::vector<int>& argnums) {
  const Stream& s = stream();
  std::optional<array> out;
  for (size_t i = 0; i < argnums.size(); ++i) {
    array t = multiply(tangents[i], primals[argnums[i] == 0 ? 1 : 0], s);
    out = out ? add(*out, t, s) : t;
  }
  return {*out};
}
std::vector<array> Multiply::vjp(const std::vector<array>& primals,
                                 const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums, const std::vector<array>&) {
  const Stream& s = stream();
  std::vector<array> vjps;
  for (int arg : argnums) {
    vjps.push_back(multiply(cotangents[0], conj_if_complex(primals[arg == 0 ? 1 : 0], s), s));
  }
  return vjps;
}
KILN_BINARY_VMAP(Multiply, multiply)
// d(a/b)/db = -a/b^2 = -y/b
KILN_SMOOTH_BINARY(Divide, divide,
                   arg == 0 ? divide(g, b, s) : negative(multiply(g, divide(y, b, s), s), s))
// a % b = a - b floor(a / b), with floor(a / b) locally constant.
KILN_SMOOTH_BINARY(Remainder, remainder,
                   arg == 0 ? g : negative(multiply(g, floor_divide(a, b, s), s), s))
KILN_SMOOTH_BINARY(Power, power, multiply(g, arg == 0 ? power_da(a, b, s) : power_db(a, y, s), s))
// The gradient goes to the input that was selected: b on ties (as MLX, so clip passes no
// gradient at its bounds), a where a is NaN.
KILN_SMOOTH_BINARY(Maximum, maximum, zero_where_not(selected(arg, greater(a, b, s), a, s), g, s))
KILN_SMOOTH_BINARY(Minimum, minimum, zero_where_not(selected(arg, less(a, b, s), a, s), g, s))
// atan2(a, b) has gradient (b, -a) / (a^2 + b^2).
KILN_SMOOTH_BINARY(ArcTan2, arctan2,
                   divide(multiply(g, arg == 0 ? b : negative(a, s), s),
                          add(square(a, s), square(b, s), s), s))
// d logaddexp(a, b) / da = e^a / (e^a + e^b) = e^(a - y)
KILN_SMOOTH_BINARY(LogAddExp, logaddexp, multiply(g, exp(subtract(arg == 0 ? a : b, y, s), s), s))

// Floor division is piecewise constant.
KILN_ZERO_GRAD_BINARY(FloorDivide, floor_divide)

// ---------------------------------------------------------------- comparisons, logic, bits
// Their outputs are bool or integer: no gradient.

KILN_ZERO_GRAD_BINARY(NotEqual, not_equal)
KILN_ZERO_GRAD_BINARY(Less, less)
KILN_ZERO_GRAD_BINARY(LessEqual, less_equal)
KILN_ZERO_GRAD_BINARY(Greater, greater)
KILN_ZERO_GRAD_BINARY(GreaterEqual, greater_equal)
KILN_ZERO_GRAD_BINARY(LogicalAnd, logical_and)
KILN_ZERO_GRAD_BINARY(LogicalOr, logical_or)
KILN_ZERO_GRAD_BINARY(BitwiseAnd, bitwise_and)
KILN_ZERO_GRAD_BINARY(BitwiseOr, bitwise_or)
KILN_ZERO_GRAD_BINARY(BitwiseXor, bitwise_xor)
KILN_ZERO_GRAD_BINARY(LeftShift, left_shift)
KILN_ZERO_GRAD_BINARY(RightShift, right_shift)

// Equal carries equal_nan, so it rebuilds itself rather than calling the op.
namespace {
array equal_node(const array& a, const array& b, bool equal_nan, const Stream& s) {
  auto shape = a.shape();
  return array(std::move(shape), bool_, std::make_shared<Equal>(s, equal_nan), {a, b});
}
}  // namespace

bool Equal::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Equal*>(&other);
  return o && o->equal_nan_ == equal_nan_;
}
std::vector<array> Equal::jvp(const std::vector<array>& primals, const std::vector<array>&,
                              const std::vector<int>&) {
  return {zeros_like(equal_node(primals[0], primals[1], equal_nan_, stream()), stream())};
}
std::vector<array> Equal::vjp(const std::vector<array>& primals, const std::vector<array>&,
                              const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> vjps;
  for (int arg : argnums) vjps.push_back(zeros_like(primals[arg], stream()));
  return vjps;
}
std::pair<std::vector<array>, std::vector<int>> Equal::vmap(const std::vector<array>& inputs,
                                                            const std::vector<int>& axes) {
  auto [in, axis] = vmap_elementwise(inputs, axes, stream());
  return {{equal_node(in[0], in[1], equal_nan_, stream())}, {axis}};
}

}  // namespace kiln
