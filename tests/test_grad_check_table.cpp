// The rows of the transformation check table (grad_check_table.h), and the check that every
// op of kiln/ops.h has one (GradCheckTable.EveryOpHasARow).
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "grad_check_table.h"

namespace grad_check {

namespace {

Input F(Shape s, double lo = -2.0, double hi = 2.0) {
  return {std::move(s), float64, lo, hi};
}
Input I(Shape s, double lo, double hi) {
  return {std::move(s), int32, lo, hi};
}
Input B(Shape s) {
  return {std::move(s), bool_, 0, 1};
}
// Real and imaginary parts uniform in [lo, hi].
Input C(Shape s, double lo = -1.0, double hi = 1.0) {
  return {std::move(s), complex64, lo, hi};
}

Row row(std::string op, std::string variant, ArrayFn fn, std::vector<Input> inputs) {
  return Row{std::move(op), std::move(variant), std::move(fn), std::move(inputs)};
}
ArrayFn f1(std::function<array(const array&)> f) {
  return [f](const std::vector<array>& a) { return std::vector<array>{f(a[0])}; };
}
ArrayFn f2(std::function<array(const array&, const array&)> f) {
  return [f](const std::vector<array>& a) { return std::vector<array>{f(a[0], a[1])}; };
}
ArrayFn f3(std::function<array(const array&, const array&, const array&)> f) {
  return [f](const std::vector<array>& a) { return std::vector<array>{f(a[0], a[1], a[2])}; };
}
// Rows' functions of inputs a, b, c.
#define FN1(...) f1([](const array& a) { return __VA_ARGS__; })
#define FN2(...) f2([](const array& a, const array& b) { return __VA_ARGS__; })
#define FN3(...) f3([](const array& a, const array& b, const array& c) { return __VA_ARGS__; })
#define FNV(...) [](const std::vector<array>& x) { return __VA_ARGS__; }

// ---------------------------------------------------------------- the table

#define UNARY(NAME, LO, HI) row(#NAME, "", FN1(NAME(a)), {F({3, 4}, LO, HI)})
#define BINARY(NAME, LA, HA, LB, HB) \
  row(#NAME, "", FN2(NAME(a, b)), {F({3, 4}, LA, HA), F({3, 4}, LB, HB)})
#define BINARY_BROADCAST(NAME, LA, HA, LB, HB) \
  row(#NAME, "broadcast", FN2(NAME(a, b)), {F({3, 1}, LA, HA), F({4}, LB, HB)})
#define INT_BINARY(NAME, LA, HA, LB, HB) \
  row(#NAME, "", FN2(NAME(a, b)), {I({3, 4}, LA, HA), I({3, 4}, LB, HB)})
#define OPERATOR1(OP, IN) row("operator" #OP, "", FN1(OP a), {IN})
#define OPERATOR2(OP, IA, IB) row("operator" #OP, "", FN2(a OP b), {IA, IB})
// A reduction over all axes, one axis, and several axes keeping them.
#define REDUCTION(NAME, LO, HI)                                                 \
  row(#NAME, "all", FN1(NAME(a)), {F({2, 3, 4}, LO, HI)}),                      \
      row(#NAME, "axis1", FN1(NAME(a, 1)), {F({2, 3, 4}, LO, HI)}),             \
      row(#NAME, "axes02_keepdims", FN1(NAME(a, std::vector<int>{0, 2}, true)), \
          {F({2, 3, 4}, LO, HI)})

#define REDUCTION_KINKS(NAME, LO, HI)                                           \
  row(#NAME, "all", FN1(NAME(a)), {F({2, 3, 4}, LO, HI)}).kinks(),              \
      row(#NAME, "axis1", FN1(NAME(a, 1)), {F({2, 3, 4}, LO, HI)}).kinks(),     \
      row(#NAME, "axes02_keepdims", FN1(NAME(a, std::vector<int>{0, 2}, true)), \
          {F({2, 3, 4}, LO, HI)})                                               \
          .kinks()

std::vector<Row> creation_rows() {
  return {
      row("arange", "float", FN1(multiply(a, arange(0.5, 4.5, 1.0, float64))), {F({3, 4})}),
      row("arange", "int", FN1(multiply(a, arange(4))), {F({3, 4})}),
      row("linspace", "", FN1(multiply(a, linspace(-1.0, 1.0, 4, float64))), {F({3, 4})}),
      row("full", "", FN1(full({3, 4}, a)), {F({4})}),
      row("full", "dtype", FN1(full({2, 3}, a, float64)), {F({})}),
      row("zeros", "", FN1(add(a, zeros({3, 4}, float64))), {F({4})}),
      row("ones", "", FN1(multiply(a, ones({3, 4}, float64))), {F({4})}),
      row("zeros_like", "", FN1(zeros_like(a)), {F({3, 4})}),
      row("ones_like", "", FN1(ones_like(a)), {F({3, 4})}),
      row("full_like", "", FN2(full_like(a, b)), {F({3, 4}), F({})}),
      row("eye", "", FN1(multiply(a, eye(4, 5, 1, float64))), {F({4, 5})}),
      row("identity", "", FN1(multiply(a, identity(4, float64))), {F({4, 4})}),
      row("tril", "", FN1(tril(a, -1)), {F({4, 5})}),
      row("tril", "batched", FN1(tril(a)), {F({2, 3, 3})}),
      row("triu", "", FN1(triu(a, 1)), {F({4, 5})}),
  };
}

std::vector<Row> layout_rows() {
  return {
      row("astype", "float32", FN1(astype(a, float32)), {F({3, 4})}).fd(1e-2, 1e-4),
      row("astype", "float16", FN1(astype(a, float16)), {F({3, 4})}).fd(0.25, 3e-2),
      row("astype", "int32", FN1(astype(a, int32)), {F({3, 4})}),
      row("astype", "from_int", FN1(astype(a, float64)), {I({3, 4}, -5, 5)}),
      row("copy", "", FN1(copy(a)), {F({3, 4})}),
      row("contiguous", "transposed", FN1(contiguous(transpose(a))), {F({3, 4})}),
      row("as_strided", "windows", FN1(as_strided(a, {4, 3}, {2, 1}, 1)), {F({12})}),
      row("reshape", "", FN1(reshape(a, {2, 6})), {F({3, 4})}),
      row("reshape", "infer", FN1(reshape(a, {-1})), {F({3, 4})}),
      row("flatten", "", FN1(flatten(a, 1, 2)), {F({2, 3, 2})}),
      row("squeeze", "axis", FN1(squeeze(a, 1)), {F({3, 1, 4})}),
      row("squeeze", "all", FN1(squeeze(a)), {F({3, 1, 4, 1})}),
      row("expand_dims", "", FN1(expand_dims(a, {0, 2})), {F({3, 4})}),
      row("transpose", "axes", FN1(transpose(a, {1, 2, 0})), {F({2, 3, 4})}),
      row("transpose", "reverse", FN1(transpose(a)), {F({2, 3, 4})}),
      row("swapaxes", "", FN1(swapaxes(a, 0, 2)), {F({2, 3, 4})}),
      row("moveaxis", "", FN1(moveaxis(a, 0, -1)), {F({2, 3, 4})}),
      row("broadcast_to", "", FN1(broadcast_to(a, {2, 3, 4})), {F({3, 1})}),
      row("broadcast_arrays", "", FNV(broadcast_arrays({x[0], x[1]})), {F({3, 1}), F({4})}),
      row("slice", "steps", FN1(slice(a, {1, 0}, {3, 5}, {1, 2})), {F({4, 5})}),
      row("slice", "negative_steps", FN1(slice(a, {3, 4}, {0, 0}, {-1, -2})), {F({4, 5})}),
      row("slice", "", FN1(slice(a, {1, 1}, {3, 4})), {F({4, 5})}),
      row("slice_update", "steps", FN2(slice_update(a, b, {1, 1}, {3, 5}, {1, 2})),
          {F({4, 5}), F({2, 2})}),
      row("slice_update", "broadcast", FN2(slice_update(a, b, {0, 1}, {4, 3})),
          {F({4, 5}), F({2})}),
      row("split", "equal", FNV(split(x[0], 3, 1)), {F({2, 6})}),
      row("split", "indices", FNV(split(x[0], Shape{1, 4}, 1)), {F({2, 6})}),
      row("concatenate", "axis", FN2(concatenate({a, b}, 1)), {F({2, 3}), F({2, 2})}),
      row("concatenate", "flat", FN2(concatenate({a, b})), {F({2, 3}), F({4})}),
      row("stack", "", FN2(stack({a, b}, 1)), {F({2, 3}), F({2, 3})}),
      row("tile", "", FN1(tile(a, {2, 1, 3})), {F({2, 3})}),
      row("repeat", "axis", FN1(repeat(a, 2, 1)), {F({2, 3})}),
      row("repeat", "flat", FN1(repeat(a, 3)), {F({2, 3})}),
      row("pad", "", FN2(pad(a, {{1, 2}, {0, 1}}, b)), {F({2, 3}), F({})}),
  };
}

std::vector<Row> unary_rows() {
  std::vector<Row> rows = {
      UNARY(abs, -2, 2).kinks(),
      UNARY(negative, -2, 2),
      UNARY(sign, -2, 2).kinks(),
      UNARY(square, -2, 2),
      UNARY(sqrt, 0.1, 3),
      UNARY(rsqrt, 0.1, 3),
      UNARY(reciprocal, 0.5, 2),
      UNARY(exp, -2, 2),
      UNARY(expm1, -2, 2),
      UNARY(log, 0.1, 3),
      UNARY(log1p, -0.5, 2),
      UNARY(log2, 0.1, 3),
      UNARY(log10, 0.1, 3),
      UNARY(sin, -3, 3),
      UNARY(cos, -3, 3),
      UNARY(tan, -1.2, 1.2),
      UNARY(arcsin, -0.9, 0.9),
      UNARY(arccos, -0.9, 0.9),
      UNARY(arctan, -3, 3),
      UNARY(sinh, -2, 2),
      UNARY(cosh, -2, 2),
      UNARY(tanh, -2, 2),
      UNARY(arcsinh, -3, 3),
      UNARY(arccosh, 1.1, 3),
      UNARY(arctanh, -0.9, 0.9),
      UNARY(erf, -2, 2),
      UNARY(erfinv, -0.9, 0.9),
      UNARY(sigmoid, -3, 3),
      UNARY(floor, -3, 3).kinks(),
      UNARY(ceil, -3, 3).kinks(),
      UNARY(logical_not, -2, 2),
      UNARY(isnan, -2, 2),
      UNARY(isinf, -2, 2),
      UNARY(isfinite, -2, 2),
      UNARY(isposinf, -2, 2),
      UNARY(isneginf, -2, 2),
      UNARY(real, -2, 2),
      UNARY(imag, -2, 2),
      UNARY(conjugate, -2, 2),
      UNARY(stop_gradient, -2, 2).zero_derivative(),
      row("round", "", FN1(round(a)), {F({3, 4}, -3, 3)}).kinks(),
      row("round", "decimals", FN1(round(a, 1)), {F({3, 4}, -3, 3)}).kinks(),
      row("bitwise_invert", "", FN1(bitwise_invert(a)), {I({3, 4}, -8, 8)}),
  };
  // Complex inputs.
  for (auto [name, fn] : std::vector<std::pair<std::string, ArrayFn>>{
           {"real", FN1(real(a))},
           {"imag", FN1(imag(a))},
           {"conjugate", FN1(conjugate(a))},
           {"exp", FN1(exp(a))},
           {"abs", FN1(abs(a))},
           {"square", FN1(square(a))},
           {"sin", FN1(sin(a))},
           {"cos", FN1(cos(a))},
           {"tanh", FN1(tanh(a))},
           {"log", FN1(log(add(a, array(complex64_t(2.5f, 0.0f)))))},
           {"sqrt", FN1(sqrt(add(a, array(complex64_t(2.5f, 0.0f)))))},
           {"rsqrt", FN1(rsqrt(add(a, array(complex64_t(2.5f, 0.0f)))))},
           {"reciprocal", FN1(reciprocal(add(a, array(complex64_t(2.5f, 0.0f)))))},
           {"negative", FN1(negative(a))},
           {"prod", FN1(prod(a, 1))},
           {"sum", FN1(sum(a, 0))},
           {"mean", FN1(mean(a))},
           {"cumprod", FN1(cumprod(a, 1))},
           {"cumprod", FN1(cumprod(a, 0, true, false))},
           {"cumsum", FN1(cumsum(a, 1))},
           {"transpose", FN1(transpose(a))},
       }) {
    // |z| has a kink at 0 and curvature ~1/|z|: keep its inputs away from it.
    Input z = name == "abs" ? C({2, 3}, 0.5, 1.5) : C({2, 3});
    rows.push_back(row(name, "complex", fn, {z}).fd(1e-2, 2e-3));
  }
  return rows;
}

std::vector<Row> binary_rows() {
  std::vector<Row> rows = {
      BINARY(add, -2, 2, -2, 2),
      BINARY_BROADCAST(add, -2, 2, -2, 2),
      BINARY(subtract, -2, 2, -2, 2),
      BINARY_BROADCAST(subtract, -2, 2, -2, 2),
      BINARY(multiply, -2, 2, -2, 2),
      BINARY_BROADCAST(multiply, -2, 2, -2, 2),
      BINARY(divide, -2, 2, 0.5, 2),
      BINARY_BROADCAST(divide, -2, 2, 0.5, 2),
      BINARY(floor_divide, -3, 3, 0.5, 2).kinks(),
      BINARY(remainder, -3, 3, 0.5, 2).kinks(),
      BINARY(power, 0.5, 2, -2, 2),
      BINARY_BROADCAST(power, 0.5, 2, -2, 2),
      BINARY(maximum, -2, 2, -2, 2).kinks(),
      BINARY_BROADCAST(maximum, -2, 2, -2, 2).kinks(),
      BINARY(minimum, -2, 2, -2, 2).kinks(),
      BINARY(equal, -2, 2, -2, 2),
      BINARY(not_equal, -2, 2, -2, 2),
      BINARY(less, -2, 2, -2, 2),
      BINARY(less_equal, -2, 2, -2, 2),
      BINARY(greater, -2, 2, -2, 2),
      BINARY(greater_equal, -2, 2, -2, 2),
      BINARY(logical_and, -2, 2, -2, 2),
      BINARY(logical_or, -2, 2, -2, 2),
      BINARY(arctan2, -2, 2, -2, 2),
      BINARY(logaddexp, -2, 2, -2, 2),
      INT_BINARY(bitwise_and, -16, 16, -16, 16),
      INT_BINARY(bitwise_or, -16, 16, -16, 16),
      INT_BINARY(bitwise_xor, -16, 16, -16, 16),
      INT_BINARY(left_shift, 0, 16, 0, 4),
      INT_BINARY(right_shift, 0, 64, 0, 4),
      row("multiply", "complex", FN2(multiply(a, b)), {C({2, 3}), C({2, 3})}).fd(1e-2, 2e-3),
      row("divide", "complex", FN2(divide(a, b)), {C({2, 3}), C({3}, 1.0, 2.0)}).fd(1e-2, 2e-3),
      row("subtract", "complex", FN2(subtract(a, b)), {C({2, 3}), C({3})}).fd(1e-2, 2e-3),
      row("power", "complex", FN2(power(a, b)), {C({2, 3}, 0.5, 1.5), C({2, 3})}).fd(1e-2, 2e-3),
      row("where", "complex", FN3(where(a, b, c)), {B({2, 3}), C({2, 3}), C({3})}).fd(1e-2, 2e-3),
      row("matmul", "complex", FN2(matmul(a, b)), {C({2, 3}), C({3, 4})}).fd(1e-2, 2e-3),
      row("multiply", "complex_real", FN2(multiply(a, b)), {C({2, 3}), F({3})}).fd(1e-2, 2e-3),
      row("where", "", FN3(where(a, b, c)), {B({3, 4}), F({3, 4}), F({4})}),
      row("clip", "both", FN3(clip(a, b, c)), {F({3, 4}), F({4}, -1, 0), F({3, 1}, 0.1, 1)})
          .kinks(),
      row("clip", "min", FN2(clip(a, b, std::nullopt)), {F({3, 4}), F({3, 4})}).kinks(),
      row("clip", "max", FN2(clip(a, std::nullopt, b)), {F({3, 4}), F({3, 4})}).kinks(),
      row("isclose", "", FN2(isclose(a, b, 0.5, 0.1)), {F({3, 4}), F({3, 4})}),
      row("allclose", "", FN2(allclose(a, b, 0.5, 0.1)), {F({3, 4}), F({3, 4})}),
      row("array_equal", "", FN1(array_equal(a, a)), {F({3, 4})}),
      OPERATOR1(-, F({3, 4})),
      OPERATOR1(!, B({3, 4})),
      OPERATOR1(~, I({3, 4}, -8, 8)),
      OPERATOR2(+, F({3, 4}), F({4})),
      OPERATOR2(-, F({3, 4}), F({4})),
      OPERATOR2(*, F({3, 4}), F({4})),
      OPERATOR2(/, F({3, 4}), F({4}, 0.5, 2)),
      OPERATOR2(%, F({3, 4}), F({4}, 0.5, 2)).kinks(),
      OPERATOR2(==, F({3, 4}), F({4})),
      OPERATOR2(!=, F({3, 4}), F({4})),
      OPERATOR2(<, F({3, 4}), F({4})),
      OPERATOR2(<=, F({3, 4}), F({4})),
      OPERATOR2(>, F({3, 4}), F({4})),
      OPERATOR2(>=, F({3, 4}), F({4})),
      OPERATOR2(&&, B({3, 4}), B({4})),
      OPERATOR2(||, B({3, 4}), B({4})),
      OPERATOR2(&, I({3, 4}, -8, 8), I({4}, -8, 8)),
      OPERATOR2(|, I({3, 4}, -8, 8), I({4}, -8, 8)),
      OPERATOR2(^, I({3, 4}, -8, 8), I({4}, -8, 8)),
      OPERATOR2(<<, I({3, 4}, 0, 8), I({4}, 0, 4)),
      OPERATOR2(>>, I({3, 4}, 0, 64), I({4}, 0, 4)),
  };
  return rows;
}

std::vector<Row> reduction_rows() {
  std::vector<Row> rows = {
      REDUCTION(sum, -2, 2),
      REDUCTION(prod, 0.5, 1.5),
      REDUCTION_KINKS(max, -2, 2),
      REDUCTION_KINKS(min, -2, 2),
      REDUCTION(mean, -2, 2),
      REDUCTION(logsumexp, -2, 2),
      row("all", "", FN1(all(a)), {B({2, 3})}),
      row("all", "axis", FN1(all(a, 1, true)), {B({2, 3})}),
      row("any", "", FN1(any(a)), {B({2, 3})}),
      row("any", "axes", FN1(any(a, std::vector<int>{0, 1})), {B({2, 3})}),
      row("var", "all", FN1(var(a)), {F({2, 3, 4})}),
      row("var", "axis_ddof1", FN1(var(a, 1, true, 1)), {F({2, 3, 4})}),
      row("var", "axes", FN1(var(a, std::vector<int>{0, 2})), {F({2, 3, 4})}),
      row("std", "all", FN1(kiln::std(a)), {F({2, 3, 4})}),
      row("std", "axis_ddof1", FN1(kiln::std(a, 2, false, 1)), {F({2, 3, 4})}),
      row("std", "axes", FN1(kiln::std(a, std::vector<int>{0, 1}, true)), {F({2, 3, 4})}),
      row("argmax", "all", FN1(argmax(a)), {F({3, 4})}),
      row("argmax", "axis", FN1(argmax(a, 1, true)), {F({3, 4})}),
      row("argmin", "all", FN1(argmin(a)), {F({3, 4})}),
      row("argmin", "axis", FN1(argmin(a, 0)), {F({3, 4})}),
      row("softmax", "last", FN1(softmax(a)), {F({3, 4})}),
      row("softmax", "axes", FN1(softmax(a, std::vector<int>{0, 1})), {F({3, 4})}),
      row("cumsum", "", FN1(cumsum(a, 1)), {F({3, 4})}),
      row("cumsum", "reverse_exclusive", FN1(cumsum(a, 0, true, false)), {F({3, 4})}),
      row("cumprod", "", FN1(cumprod(a, 1)), {F({3, 4}, 0.5, 1.5)}),
      row("cumprod", "reverse", FN1(cumprod(a, 0, true)), {F({3, 4}, 0.5, 1.5)}),
      row("cumprod", "exclusive", FN1(cumprod(a, 1, false, false)), {F({3, 4}, 0.5, 1.5)}),
  };
  return rows;
}

std::vector<Row> linalg_rows() {
  auto mm = FN2(matmul(a, b));
  return {
      row("matmul", "2d", mm, {F({3, 4}), F({4, 2})}),
      row("matmul", "batched_broadcast", mm, {F({2, 3, 4}), F({4, 5})}),
      row("matmul", "batch_broadcast_both", mm, {F({1, 3, 4}), F({2, 4, 2})}),
      row("matmul", "vector_matrix", mm, {F({4}), F({4, 3})}),
      row("matmul", "matrix_vector", mm, {F({3, 4}), F({4})}),
      row("matmul", "vector_vector", mm, {F({4}), F({4})}),
      row("addmm", "", FN3(addmm(a, b, c, 0.5f, 2.0f)), {F({3, 2}), F({3, 4}), F({4, 2})}),
      row("addmm", "broadcast_c", FN3(addmm(a, b, c)), {F({2}), F({3, 4}), F({4, 2})}),
      row("inner", "vectors", FN2(inner(a, b)), {F({4}), F({4})}),
      row("inner", "matrices", FN2(inner(a, b)), {F({2, 4}), F({3, 4})}),
      row("outer", "", FN2(outer(a, b)), {F({3}), F({4})}),
  };
}

std::vector<Row> indexing_rows() {
  // Scatters that keep one of several updates for a duplicate index have no well-defined
  // derivative there: those rows use fixed, distinct indices.
  static const array rows_perm({4, 0, 2}, int32);
  static const array cols_perm({0, 2, 3, 1, 1, 0}, {3, 2}, int32);
#define SCATTER(NAME)                                       \
  row(#NAME, "distinct", FN2(NAME(a, {rows_perm}, b, {0})), \
      {F({5, 3}, 0.5, 2), F({3, 1, 3}, 0.5, 2)})
  return {
      row("take", "flat", FN2(take(a, b)), {F({3, 4}), I({5}, -12, 12)}),
      row("take", "axis", FN2(take(a, b, 1)), {F({3, 4}), I({2, 2}, 0, 4)}),
      row("take", "index", FN1(take(a, -1, 1)), {F({3, 4})}),
      row("take_along_axis", "", FN2(take_along_axis(a, b, 1)), {F({3, 4}), I({3, 2}, 0, 4)}),
      row("put_along_axis", "", FN2(put_along_axis(a, cols_perm, b, 1)), {F({3, 4}), F({3, 2})}),
      row("gather", "", FN3(gather(a, {b, c}, {0, 1}, {1, 1, 3})),
          {F({5, 4, 3}), I({2, 3}, 0, 5), I({2, 3}, 0, 4)}),
      SCATTER(scatter),
      row("scatter_add", "duplicates", FN3(scatter_add(a, {b}, c, {0})),
          {F({5, 3}), I({4}, 0, 5), F({4, 1, 3})}),
      SCATTER(scatter_add),
      SCATTER(scatter_prod),
      SCATTER(scatter_max).kinks(),
      SCATTER(scatter_min).kinks(),
      row("sort", "axis", FN1(sort(a, 1)), {F({3, 4})}).kinks(),
      row("sort", "flat", FN1(sort(a)), {F({3, 4})}).kinks(),
      row("argsort", "axis", FN1(argsort(a, 0)), {F({3, 4})}),
      row("argsort", "flat", FN1(argsort(a)), {F({3, 4})}),
      row("partition", "axis", FN1(partition(a, 1, 1)), {F({3, 4})}).kinks(),
      row("partition", "flat", FN1(partition(a, -2)), {F({3, 4})}).kinks(),
      row("argpartition", "axis", FN1(argpartition(a, 2, 0)), {F({3, 4})}),
      row("argpartition", "flat", FN1(argpartition(a, 5)), {F({3, 4})}),
      row("topk", "axis", FN1(topk(a, 2, 1)), {F({3, 4})}).kinks(),
      row("topk", "flat", FN1(topk(a, 3)), {F({3, 4})}).kinks(),
      row("median", "axis", FN1(median(a, 1)), {F({3, 4})}).kinks(),
      row("median", "axes", FN1(median(a, {0, 2}, true)), {F({3, 2, 3})}).kinks(),
      row("median", "all", FN1(median(a)), {F({3, 3})}).kinks(),
      row("searchsorted", "", FN1(searchsorted(linspace(-1.5, 1.5, 7, float64), a, "right")),
          {F({3, 4})}),
      row("unique", "", FNV(unique(x[0], 14, true, true, true)), {F({3, 4})}).kinks(),
      row("unique", "fill", FNV(unique(x[0], 14, true, true, true, x[1])), {F({3, 4}), F({})})
          .kinks(),
  };
}

// Samplers of kiln/random.h: batched over keys (every slice its own key) and differentiable
// in their parameters for a fixed key.
std::vector<Row> random_rows() {
  static const array fixed_key = random::key(20261121);
  Input key{{2}, uint32, 0, 4e9};
  return {
      row("random::bits", "", FN1(random::bits({3, 2}, a)), {key}),
      row("random::split", "", FN1(random::split(a, 3)), {key}),
      row("random::uniform", "key", FN1(random::uniform({3}, a)), {key}),
      row("random::uniform", "bounds", FN2(random::uniform(a, b, {3, 4}, float64, fixed_key)),
          {F({4}, -2, -1), F({3, 1}, 1, 2)}),
      row("random::normal", "key", FN1(random::normal({2, 3}, a)), {key}),
      row("random::randint", "key", FN1(random::randint(0, 10, {4}, int32, a)), {key}),
      row("random::bernoulli", "", FN1(random::bernoulli(a, fixed_key)), {F({3, 4}, 0, 1)}),
  };
}

// The NumPy-style ops of ops_numpy.cpp, ops_einsum.cpp and ops_products.cpp.
std::vector<Row> numpy_rows() {
  static const array lhs_idx({2, 0, 1}, int32);
  static const array rhs_idx({1, 1, 0}, int32);
  static const array segments({0, 2, 1, 4, 3, 3}, {3, 2}, int32);
  static const array block_mask({true, false, true, true}, {2, 2}, bool_);
  Input fp8{{3, 4}, uint8, 0, 255};
  return {
      row("trunc", "", FN1(trunc(a)), {F({3, 4}, -3, 3)}).kinks(),
      UNARY(degrees, -3, 3),
      UNARY(radians, -3, 3),
      row("logical_xor", "", FN2(logical_xor(a, b)), {F({3, 4}), F({4})}),
      // Both outputs piecewise constant for the transformations, as MLX's DivMod.
      row("divmod", "", FNV(divmod(x[0], x[1])), {F({3, 4}, -3, 3), F({3, 4}, 0.5, 2)})
          .zero_derivative(),
      row("nan_to_num", "", FN1(nan_to_num(divide(a, a))), {F({3, 4}, 0.5, 2)}),
      row("flip", "axes", FN1(flip(a, std::vector<int>{0, 2})), {F({2, 3, 4})}),
      row("flip", "all", FN1(flip(a)), {F({2, 3})}),
      row("roll", "flat", FN1(roll(a, 5)), {F({3, 4})}),
      row("roll", "axes", FN1(roll(a, Shape{1, -2}, {0, 1})), {F({3, 4})}),
      row("atleast_1d", "", FN1(atleast_1d(a)), {F({})}),
      row("atleast_2d", "", FN1(atleast_2d(a)), {F({4})}),
      row("atleast_3d", "", FN1(atleast_3d(a)), {F({3, 4})}),
      row("unflatten", "", FN1(unflatten(a, 1, {2, -1})), {F({3, 4})}),
      row("unstack", "", FNV(unstack(x[0], 1)), {F({3, 4})}),
      row("matrix_transpose", "", FN1(matrix_transpose(a)), {F({2, 3, 4})}),
      row("view", "bits", FN1(view(a, int64)), {F({3, 4})}),
      row("meshgrid", "xy", FNV(meshgrid({x[0], x[1]})), {F({3}), F({4})}),
      row("meshgrid", "ij_sparse", FNV(meshgrid({x[0], x[1]}, true, "ij")), {F({3}), F({4})}),
      row("diagonal", "offset", FN1(diagonal(a, 1, 0, 2)), {F({3, 2, 4})}),
      row("diagonal", "negative", FN1(diagonal(a, -1)), {F({4, 3})}),
      row("diag", "vector", FN1(diag(a, -1)), {F({3})}),
      row("diag", "matrix", FN1(diag(a, 1)), {F({3, 4})}),
      row("trace", "", FN1(trace(a, 0, 1, 2)), {F({2, 3, 3})}),
      row("diff", "", FN1(diff(a, 2, 0)), {F({4, 3})}),
      row("tri", "", FN1(multiply(a, tri(3, 4, 1, float64))), {F({3, 4})}),
      row("bartlett", "", FN1(multiply(a, astype(bartlett(5), float64))), {F({5})}),
      row("blackman", "", FN1(multiply(a, astype(blackman(5), float64))), {F({5})}),
      row("hamming", "", FN1(multiply(a, astype(hamming(5), float64))), {F({5})}),
      row("hanning", "", FN1(multiply(a, astype(hanning(5), float64))), {F({5})}),
      row("count_nonzero", "", FN1(count_nonzero(a, std::vector<int>{1})), {F({3, 4})}),
      row("count_nonzero", "all", FN1(count_nonzero(a)), {F({3, 4})}),
      row("minmax", "", FNV(minmax(x[0], {1})), {F({3, 4})}).kinks(),
      row("cummax", "", FN1(cummax(a, 1)), {F({3, 4})}).kinks(),
      // Exclusive scans start from +-inf, where finite differences are NaN: their
      // derivatives are checked in python/tests/test_ops_numpy.py.
      row("cummax", "reverse", FN1(cummax(a, 0, true)), {F({3, 4})}).kinks(),
      row("cummin", "", FN1(cummin(a, 1)), {F({3, 4})}).kinks(),
      row("cummin", "reverse", FN1(cummin(a, 1, true)), {F({3, 4})}).kinks(),
      row("logcumsumexp", "", FN1(logcumsumexp(a, 1)), {F({3, 4})}),
      row("logcumsumexp", "reverse", FN1(logcumsumexp(a, 0, true)), {F({3, 4})}),
      row("tensordot", "int", FN2(tensordot(a, b, 1)), {F({2, 3}), F({3, 4})}),
      row("tensordot", "axes", FN2(tensordot(a, b, {0, 2}, {1, 0})), {F({2, 3, 4}), F({4, 2, 5})}),
      row("vecdot", "", FN2(vecdot(a, b)), {F({3, 4}), F({4})}),
      row("kron", "", FN2(kron(a, b)), {F({2, 3}), F({2, 2})}),
      row("einsum", "matmul", FN2(einsum("ij,jk->ik", {a, b})), {F({2, 3}), F({3, 4})}),
      row("einsum", "batched_implicit", FN2(einsum("bij,bjk", {a, b})),
          {F({2, 2, 3}), F({2, 3, 2})}),
      row("einsum", "diag_ellipsis", FN2(einsum("...ii,...i->...", {a, b})),
          {F({2, 3, 3}), F({3})}),
      row("einsum", "three", FN3(einsum("ij,jk,kl->il", {a, b, c})),
          {F({2, 3}), F({3, 4}), F({4, 2})}),
      row("hadamard_transform", "pow2", FN1(hadamard_transform(a)), {F({3, 8})}),
      row("hadamard_transform", "m12", FN1(hadamard_transform(a, 0.5f)), {F({2, 24})}),
      row("gather_mm", "", FN2(gather_mm(a, b, lhs_idx, rhs_idx)), {F({3, 2, 4}), F({2, 4, 3})}),
      row("gather_mm", "default", FN2(gather_mm(a, b)), {F({2, 2, 4}), F({1, 4, 3})}),
      row("segmented_mm", "", FN2(segmented_mm(a, b, segments)), {F({2, 4}), F({4, 3})}),
      row("block_masked_mm", "", FN2(block_masked_mm(a, b, 32, block_mask)),
          {F({40, 8}), F({8, 40})}),
      row("to_fp8", "", FN1(to_fp8(a)), {F({3, 4})}),
      row("from_fp8", "", FN1(from_fp8(a, float64)), {fp8}),
      row("depends", "", FNV(depends({x[0]}, {x[1]})), {F({3, 4}), F({2})}),
      row("dynamic_slice", "", FN1(dynamic_slice(a, array({1, 2}, int32), {0, 2}, {2, 3, 2})),
          {F({4, 3, 5})}),
      row("dynamic_slice_update", "", FN2(dynamic_slice_update(a, b, array({2, 1}, int32), {0, 1})),
          {F({4, 5}), F({2, 3})}),
      row("pad", "reflect", FN1(pad(a, {{2, 3}, {1, 0}}, std::string("reflect"))), {F({3, 4})}),
      row("pad", "symmetric_edge",
          FN1(pad(pad(a, {{4, 1}}, std::string("symmetric")), {{1, 2}}, std::string("edge"))),
          {F({3, 2})}),
  };
}

// Convolutions (ops_conv.cpp): strides, asymmetric padding, both dilations, groups, flip.
std::vector<Row> conv_rows() {
  return {
      row("conv1d", "stride_pad_dilation", FN2(conv1d(a, b, 2, 1, 2)),
          {F({2, 7, 4}), F({3, 3, 4})}),
      row("conv1d", "groups", FN2(conv1d(a, b, 1, 1, 1, 2)), {F({2, 6, 4}), F({4, 3, 2})}),
      row("conv2d", "", FN2(conv2d(a, b, {2, 1}, {1, 0}, {1, 2})),
          {F({2, 5, 6, 3}), F({2, 3, 2, 3})}),
      row("conv3d", "", FN2(conv3d(a, b, {1, 2, 1}, {1, 0, 1})),
          {F({1, 4, 5, 3, 2}), F({2, 2, 3, 2, 2})}),
      row("conv_general", "asymmetric_input_dilation_flip",
          FN2(conv_general(a, b, {2}, {1}, {2}, {2}, {2}, 1, true)), {F({2, 5, 3}), F({2, 3, 3})}),
      row("conv_general", "negative_padding_groups",
          FN2(conv_general(a, b, {1, 2}, {-1, 1}, {0, 0}, {1, 1}, {1, 2}, 3)),
          {F({1, 5, 4, 6}), F({3, 2, 2, 2})}),
      row("conv_transpose1d", "", FN2(conv_transpose1d(a, b, 2, 1, 1, 1)),
          {F({2, 5, 3}), F({4, 3, 3})}),
      row("conv_transpose2d", "", FN2(conv_transpose2d(a, b, {2, 1}, {1, 0}, {1, 2}, {1, 0}, 2)),
          {F({1, 3, 4, 4}), F({4, 2, 3, 2})}),
      row("conv_transpose3d", "", FN2(conv_transpose3d(a, b, {2, 1, 1}, {0, 1, 0})),
          {F({1, 2, 3, 3, 2}), F({2, 2, 3, 2, 2})}),
      row("convolve", "full", FN2(convolve(a, b)), {F({7}), F({3})}),
      row("convolve", "same_swapped", FN2(convolve(a, b, "same")), {F({3}), F({6})}),
      row("convolve", "valid", FN2(convolve(a, b, "valid")), {F({6}), F({4})}),
  };
}

// kiln::linalg and kiln::fft (their own headers): every differentiable function, on inputs
// in its domain (symmetric positive definite where needed); functions of eigen- and
// singular vectors are squared so the sign each vector comes with does not matter.
std::vector<Row> factor_fft_rows() {
  auto spd = [](const array& a) {
    return add(matmul(a, transpose(a)), multiply(eye(a.shape(0), float64), array(3.0)));
  };
  auto sym = [](const array& a) { return add(a, transpose(a)); };
  auto nonsingular = [](const array& a) {
    return add(a, multiply(eye(a.shape(0), float64), array(4.0)));
  };
  auto sorted_eig = [](const array& a, bool vectors, bool positive) {
    array base = array(
        {1.0, 4.0, 0.0, 0.0, -1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 0.0, 7.0}, {4, 4});
    array m = add(multiply(a, array(0.2, a.dtype())), astype(base, a.dtype()));
    auto [w, v] = vectors ? linalg::eig(m) : std::pair<array, array>{linalg::eigvals(m), m};
    // Re - Im / 2 is near 0, 2, 4 and 7: a stable order.
    array order = argsort(subtract(real(w), multiply(imag(w), array(0.5f))), -1);
    std::vector<array> out{take_along_axis(w, order, -1)};
    if (!vectors) return out;
    v = take_along_axis(v, broadcast_to(expand_dims(order, -2), v.shape()), -1);
    if (positive) {
      array k = argmax(abs(v), -2, true);
      array vk = take_along_axis(v, k, -2);
      v = multiply(v, divide(conjugate(vk), astype(abs(vk), complex64)));
    }
    out.push_back(v);
    return out;
  };
  return {
      row("linalg::inv", "", f1([=](const array& a) { return linalg::inv(nonsingular(a)); }),
          {F({4, 4})}),
      row("linalg::tri_inv", "upper",
          f1([=](const array& a) { return linalg::tri_inv(nonsingular(a), true); }), {F({4, 4})}),
      row("linalg::cholesky", "", f1([=](const array& a) { return linalg::cholesky(spd(a)); }),
          {F({4, 4})}),
      row("linalg::cholesky", "upper_batched", f1([=](const array& a) {
            return linalg::cholesky(
                add(matmul(a, swapaxes(a, -1, -2)), multiply(eye(3, float64), array(3.0))), true);
          }),
          {F({2, 3, 3})}),
      row("linalg::eigh", "",
          FNV(std::vector<array>{linalg::eigh(x[0] + transpose(x[0])).first,
                                 square(linalg::eigh(x[0] + transpose(x[0])).second)}),
          {F({4, 4})}),
      row("linalg::eigvalsh", "upper",
          f1([=](const array& a) { return linalg::eigvalsh(sym(a), "U"); }), {F({4, 4})}),
      row("linalg::svd", "values", f1([](const array& a) { return linalg::svd(a, false)[0]; }),
          {F({4, 3})}),
      row("linalg::svd", "vectors",
          FNV(std::vector<array>{square(linalg::svd(x[0])[0]), linalg::svd(x[0])[1],
                                 square(linalg::svd(x[0])[2])}),
          {F({3, 3})}),
      row("linalg::svd", "reduced_vectors_tall",
          FNV(std::vector<array>{square(slice(linalg::svd(x[0])[0], {0, 0}, {4, 2})),
                                 linalg::svd(x[0])[1], square(linalg::svd(x[0])[2])}),
          {F({4, 2})}),
      row("linalg::qr", "tall",
          FNV(std::vector<array>{linalg::qr(x[0]).first, linalg::qr(x[0]).second}), {F({4, 3})}),
      row("linalg::qr", "wide",
          FNV(std::vector<array>{linalg::qr(x[0]).first, linalg::qr(x[0]).second}), {F({2, 4})}),
      row("linalg::lu_factor", "",
          f1([=](const array& a) { return linalg::lu_factor(nonsingular(a)).first; }), {F({4, 4})}),
      row("linalg::solve", "", FN2(linalg::solve(add(a, multiply(eye(3, float64), array(4.0))), b)),
          {F({3, 3}), F({3, 2})}),
      row("linalg::solve", "vector_batched",
          FN2(linalg::solve(add(a, multiply(eye(3, float64), array(4.0))), b)),
          {F({2, 3, 3}), F({3})}),
      row("linalg::solve_triangular", "",
          FN2(linalg::solve_triangular(add(a, multiply(eye(3, float64), array(4.0))), b, true)),
          {F({3, 3}), F({3, 2})}),
      row("linalg::det", "small", FN1(linalg::det(a)), {F({3, 3})}),
      row("linalg::det", "lu", f1([=](const array& a) { return linalg::det(nonsingular(a)); }),
          {F({5, 5})}),
      row("linalg::slogdet", "",
          f1([=](const array& a) { return linalg::slogdet(nonsingular(a)).second; }), {F({5, 5})}),
      row("linalg::pinv", "", FN1(linalg::pinv(a)), {F({4, 3})}),
      row("linalg::norm", "nuc", FN1(linalg::norm(a, std::string("nuc"))), {F({3, 4})}),
      row("linalg::norm", "ord3_axis", FN1(linalg::norm(a, 3.0, std::vector<int>{1})),
          {F({3, 4}, 0.5, 2)}),
      row("linalg::cross", "", FN2(linalg::cross(a, b)), {F({2, 3}), F({3})}),
      // eig in complex64, on inputs with eigenvalues near 1 +- 2i, 4 and 7 whose vectors
      // have one dominant component. geev's order and (for real inputs) the sign of real
      // vectors can jump between nearby inputs, so the rows sort the pairs and the real rows
      // make each vector's largest component positive; complex inputs keep geev's own
      // normalization (largest component real and positive), unsquared.
      row("linalg::eigvals", "", f1([=](const array& a) { return sorted_eig(a, false, false)[0]; }),
          {F({4, 4})})
          .fd(1e-2, 2e-3),
      row("linalg::eig", "batched",
          [=](const std::vector<array>& x) { return sorted_eig(x[0], true, true); }, {F({2, 4, 4})})
          .fd(1e-2, 2e-3),
      row("linalg::eig", "complex",
          [=](const std::vector<array>& x) { return sorted_eig(x[0], true, false); }, {C({4, 4})})
          .fd(1e-2, 2e-3),
      // The transforms are linear: a large step has no truncation error and keeps float32
      // rounding out of the difference quotient.
      row("fft::fft", "n_pad", FN1(fft::fft(a, 9)), {C({2, 7})}).fd(0.1, 1e-3),
      row("fft::ifftn", "ortho", FN1(fft::ifftn(a, {0, 1}, fft::FFTNorm::Ortho)), {C({3, 5})})
          .fd(0.1, 1e-3),
      row("fft::rfft", "odd", FN1(fft::rfft(a)), {F({2, 7})}).fd(0.1, 1e-3),
      row("fft::rfftn", "", FN1(fft::rfftn(a, {0, 1})), {F({4, 6})}).fd(0.1, 1e-3),
      row("fft::irfft", "even", FN1(fft::irfft(a, 8)), {C({2, 5})}).fd(0.1, 1e-3),
      row("fft::irfftn", "odd_forward", FN1(fft::irfftn(a, {3, 5}, {0, 1}, fft::FFTNorm::Forward)),
          {C({3, 3})})
          .fd(0.1, 1e-3),
      row("fft::fftn", "backward", FN1(fft::fftn(a)), {C({3, 4})}).fd(0.1, 1e-3),
      row("fft::ifft", "", FN1(fft::ifft(a)), {C({2, 5})}).fd(0.1, 1e-3),
      row("fft::irfft", "odd", FN1(fft::irfft(a, 7)), {C({2, 4})}).fd(0.1, 1e-3),
      row("fft::rfft", "ortho", FN1(fft::rfft(a, 6, -1, fft::FFTNorm::Ortho)), {F({2, 6})})
          .fd(0.1, 1e-3),
  };
}

}  // namespace

const std::vector<Row>& all_rows() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> r;
    for (auto part : {creation_rows(), layout_rows(), unary_rows(), binary_rows(), reduction_rows(),
                      linalg_rows(), indexing_rows(), random_rows(), numpy_rows(), conv_rows(),
                      factor_fft_rows()}) {
      r.insert(r.end(), part.begin(), part.end());
    }
    std::set<std::string> used;
    for (auto& x : r) {
      std::string base = x.op, name;
      // Operators get readable names: operator+ -> operator_plus.
      static const std::map<std::string, std::string> words = {
          {"<<", "lshift"}, {">>", "rshift"}, {"<=", "le"},  {">=", "ge"},  {"==", "eq"},
          {"!=", "ne"},     {"&&", "land"},   {"||", "lor"}, {"+", "plus"}, {"-", "minus"},
          {"*", "times"},   {"/", "div"},     {"%", "mod"},  {"<", "lt"},   {">", "gt"},
          {"!", "not"},     {"~", "invert"},  {"&", "and"},  {"|", "or"},   {"^", "xor"}};
      if (auto w = words.find(x.op.substr(std::min<size_t>(8, x.op.size())));
          x.op.rfind("operator", 0) == 0 && w != words.end()) {
        base = "operator_" + (x.op == "operator-" && x.inputs.size() == 1 ? "negate" : w->second);
      }
      if (!x.variant.empty()) base += "_" + x.variant;
      for (char c : base) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      std::string unique = name;
      for (int k = 2; !used.insert(unique).second; ++k) unique = name + "_" + std::to_string(k);
      x.unique_name = unique;
    }
    return r;
  }();
  return rows;
}

}  // namespace grad_check

using grad_check::all_rows;

// Every op declared in kiln/ops.h has at least one row.
TEST(GradCheckTable, EveryOpHasARow) {
  // The source tree from CMake: __FILE__ may be relative to the build (ccache's base_dir).
  auto header = std::filesystem::path(KILN_SOURCE_DIR) / "kiln" / "ops.h";
  std::ifstream file(header);
  ASSERT_TRUE(file) << "cannot read " << header;
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::set<std::string> declared;
  std::regex fn(R"(^\s*(?:inline\s+)?(?:array|std::vector<array>)\s+(operator\S+?|\w+)\()");
  std::regex reduction(R"(^KILN_REDUCTION\((\w+)\))");
  std::smatch m;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, fn) || std::regex_search(line, m, reduction)) {
      if (m[1] != "NAME") declared.insert(m[1]);
    }
  }
  EXPECT_GT(declared.size(), 100u) << "the parser of ops.h found too few ops";
  std::set<std::string> covered;
  for (const auto& r : all_rows()) covered.insert(r.op);
  for (const auto& name : declared) EXPECT_TRUE(covered.count(name)) << name << " has no row";
}
