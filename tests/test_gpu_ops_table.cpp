// The rows of the cross-device table (gpu_ops_table.h; run by test_gpu_ops.cpp). Adding an
// op is adding a row to its family here.
#include <cmath>
#include <complex>

#include "gpu_ops_table.h"
#include "kiln/random.h"

namespace gpu_ops {

namespace {

// Inputs of the case's dtype (T) or a fixed one; L() sets a layout.
Input T(Shape s, double lo = -2.0, double hi = 2.0) {
  return {std::move(s), std::nullopt, lo, hi};
}
Input D(Shape s, Dtype d, double lo = -2.0, double hi = 2.0) {
  return {std::move(s), d, lo, hi};
}
Input L(Input in, Layout layout) {
  in.layout = layout;
  return in;
}

Row row(std::string op, std::string variant, Fn fn, std::vector<Input> inputs) {
  return Row{std::move(op), std::move(variant), std::move(fn), std::move(inputs)};
}

// Rows' functions of inputs a, b, c (and of the case's dtype t).
#define FN0(...) [](const Arrays&, Dtype t) { return Arrays{__VA_ARGS__}; }
#define FN1(...)                 \
  [](const Arrays& x, Dtype t) { \
    const array& a = x[0];       \
    return Arrays{__VA_ARGS__};  \
  }
#define FN2(...)                      \
  [](const Arrays& x, Dtype t) {      \
    const array &a = x[0], &b = x[1]; \
    return Arrays{__VA_ARGS__};       \
  }
#define FN3(...)                                 \
  [](const Arrays& x, Dtype t) {                 \
    const array &a = x[0], &b = x[1], &c = x[2]; \
    return Arrays{__VA_ARGS__};                  \
  }
#define FNV(...) [](const Arrays& x, Dtype t) -> Arrays { return __VA_ARGS__; }

// ---------------------------------------------------------------- dtypes

std::vector<Dtype> operator+(std::vector<Dtype> a, const std::vector<Dtype>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
const std::vector<Dtype> kFloats = {float32, float16, bfloat16, float64};
const std::vector<Dtype> kInexact = kFloats + std::vector<Dtype>{complex64};
const std::vector<Dtype> kInts = {uint8, uint16, uint32, uint64, int8, int16, int32, int64};
const std::vector<Dtype> kSigned = {int8, int16, int32, int64};
const std::vector<Dtype> kIntegral = kInts + std::vector<Dtype>{bool_};
const std::vector<Dtype> kReal = kIntegral + kFloats;
const std::vector<Dtype> kNumbers = kInts + kInexact;
const std::vector<Dtype> kAll = kReal + std::vector<Dtype>{complex64};
const std::vector<Dtype> kSome = {float32, bfloat16, int32, complex64};

// ---------------------------------------------------------------- creation and layout

std::vector<Row> creation_rows() {
  return {
      row("arange", "float", FN0(arange(-3.0, 7.0, 0.37, t)), {}).types(kInexact),
      row("arange", "int", FN0(arange(2.0, 100.0, 3.0, t)), {}).types(kInts),
      row("arange", "negative_step", FN0(arange(50, -20, -3)), {}).types({int32}),
      row("arange", "large", FN0(arange(0.0, 300000.0, 1.0, t)), {}).types({float32, int32}),
      row("linspace", "float", FN0(linspace(-2.5, 7.5, 101, t)), {}).types(kInexact),
      row("linspace", "int", FN0(linspace(0.0, 100.0, 37, t)), {}).types(kInts),
      row("full", "", FN1(full({3, 4}, a)), {T({4})}).types(kAll),
      row("full", "dtype", FN1(full({2, 3}, a, t)), {D({}, float32, 0, 5)}).types(kAll),
      row("zeros", "", FN0(zeros({3, 5}, t)), {}).types(kAll),
      row("ones", "", FN0(ones({3, 5}, t)), {}).types(kAll),
      row("zeros_like", "", FN1(zeros_like(a)), {T({3, 4})}).types(kSome),
      row("ones_like", "", FN1(ones_like(a)), {T({3, 4})}).types(kSome),
      row("full_like", "", FN2(full_like(a, b)), {T({3, 4}), D({}, float32)}).types(kSome),
      row("eye", "", FN0(eye(5, 7, 2, t)), {}).types(kAll),
      row("eye", "large", FN0(eye(300, 200, -3, t)), {}).types({float32, uint8}),
      row("identity", "", FN0(identity(6, t)), {}).types(kAll),
      row("tril", "", FN1(tril(a, -1)), {T({4, 5})}).types(kAll),
      row("tril", "batched_transposed", FN1(tril(a, 1)), {L(T({3, 6, 5}), Layout::transposed)})
          .types(kSome),
      row("triu", "", FN1(triu(a, 1)), {T({4, 5})}).types(kAll),
      row("triu", "batched_strided", FN1(triu(a, -2)), {L(T({2, 5, 4}), Layout::strided)})
          .types(kSome),
  };
}

// Every conversion from the case's dtype: values every dtype holds (non-negative, below 100),
// and signed values between the signed and floating types.
Arrays to_every_dtype(const array& a, const std::vector<Dtype>& targets) {
  Arrays out;
  for (Dtype to : targets) out.push_back(astype(a, to));
  return out;
}

std::vector<Row> layout_rows() {
  return {
      row("astype", "nonnegative", FNV(to_every_dtype(x[0], kAll)), {T({7, 33}, 0, 100)})
          .types(kAll),
      row("astype", "signed", FNV(to_every_dtype(x[0], kSigned + kInexact)),
          {T({7, 33}, -100, 100)})
          .types(kSigned + kInexact),
      row("astype", "transposed", FNV(to_every_dtype(x[0], kAll)),
          {L(T({5, 6, 7}, 0, 100), Layout::transposed)})
          .types(kSome),
      row("astype", "broadcast", FNV(to_every_dtype(x[0], kAll)),
          {L(T({4, 9}, 0, 100), Layout::broadcast)})
          .types(kSome),
      row("copy", "", FN1(copy(a)), {T({3, 40})}).types(kAll),
      row("copy", "strided", FN1(copy(a)), {L(T({3, 40}), Layout::strided)}).types(kAll),
      row("copy", "broadcast_scalar", FN1(copy(broadcast_to(a, {3, 5}))), {T({})}).types(kAll),
      row("contiguous", "transposed", FN1(contiguous(a)), {L(T({6, 10}), Layout::transposed)})
          .types(kAll),
      row("contiguous", "col_major_allowed", FN1(contiguous(transpose(a), true)), {T({6, 10})}),
      row("contiguous", "broadcast", FN1(contiguous(a)), {L(T({4, 9}), Layout::broadcast)}),
      row("as_strided", "windows", FN1(as_strided(a, {4, 3}, {2, 1}, 1)), {T({12})}).types(kSome),
      row("as_strided", "of_transposed", FN1(as_strided(a, {5, 2}, {1, 3}, 2)),
          {L(T({3, 4}), Layout::transposed)}),
      row("reshape", "view", FN1(reshape(a, {2, 6})), {T({3, 4})}).types(kSome),
      row("reshape", "copy", FN1(reshape(a, {-1})), {L(T({3, 4, 5}), Layout::transposed)})
          .types(kAll),
      row("flatten", "", FN1(flatten(a, 1, 2)), {T({2, 3, 2})}),
      row("squeeze", "axis", FN1(squeeze(a, 1)), {T({3, 1, 4})}),
      row("squeeze", "all", FN1(squeeze(a)), {T({3, 1, 4, 1})}),
      row("expand_dims", "", FN1(expand_dims(a, {0, 2})), {T({3, 4})}),
      row("transpose", "axes", FN1(transpose(a, {1, 2, 0})), {T({2, 3, 4})}).types(kSome),
      row("transpose", "reverse", FN1(transpose(a)), {T({2, 3, 4})}),
      row("swapaxes", "", FN1(swapaxes(a, 0, 2)), {T({2, 3, 4})}),
      row("moveaxis", "", FN1(moveaxis(a, 0, -1)), {T({2, 3, 4})}),
      row("broadcast_to", "", FN1(broadcast_to(a, {2, 3, 4})), {T({3, 1})}).types(kSome),
      row("broadcast_arrays", "", FNV(broadcast_arrays({x[0], x[1]})), {T({3, 1}), T({4})}),
      row("slice", "steps", FN1(slice(a, {1, 0}, {3, 5}, {1, 2})), {T({4, 5})}).types(kSome),
      row("slice", "negative_steps", FN1(slice(a, {3, 4}, {0, 0}, {-1, -2})), {T({4, 5})}),
      row("slice", "", FN1(slice(a, {1, 1}, {3, 4})), {T({4, 5})}),
      row("slice_update", "steps", FN2(slice_update(a, b, {1, 1}, {3, 5}, {1, 2})),
          {T({4, 5}), T({2, 2})})
          .types(kAll),
      row("slice_update", "negative_steps", FN2(slice_update(a, b, {3, 4}, {0, 0}, {-1, -2})),
          {L(T({4, 5}), Layout::transposed), L(T({3, 2}), Layout::strided)})
          .types(kSome),
      row("slice_update", "broadcast", FN2(slice_update(a, b, {0, 1}, {4, 3})), {T({4, 5}), T({2})})
          .types(kSome),
      row("slice_update", "rows", FN2(slice_update(a, b, {1, 0}, {3, 64})),
          {T({5, 64}), T({2, 64})}),
      row("split", "equal", FNV(split(x[0], 3, 1)), {T({2, 6})}).types(kSome),
      row("split", "indices", FNV(split(x[0], Shape{1, 4}, 1)), {T({2, 6})}),
      row("concatenate", "axis", FN3(concatenate({a, b, c}, 1)),
          {T({2, 3}), L(T({2, 4}), Layout::transposed), L(T({2, 2}), Layout::strided)})
          .types(kAll),
      row("concatenate", "first_axis", FN2(concatenate({a, b}, 0)), {T({3, 50}), T({2, 50})})
          .types(kSome),
      row("concatenate", "flat", FN2(concatenate({a, b})), {T({2, 3}), T({4})}),
      row("stack", "", FN2(stack({a, b}, 1)), {T({2, 3}), T({2, 3})}).types(kSome),
      row("tile", "", FN1(tile(a, {2, 1, 3})), {T({2, 3})}).types(kSome),
      row("repeat", "axis", FN1(repeat(a, 2, 1)), {T({2, 3})}).types(kSome),
      row("repeat", "flat", FN1(repeat(a, 3)), {T({2, 3})}),
      row("pad", "", FN2(pad(a, {{1, 2}, {0, 1}}, b)), {T({2, 3}), T({})}).types(kSome),
  };
}

// ---------------------------------------------------------------- elementwise

// A unary op over the given dtypes, on row-contiguous, transposed and strided inputs.
#define UNARY(NAME, LO, HI, DTYPES)                                                         \
  row(#NAME, "", FN1(NAME(a)), {T({5, 67}, LO, HI)}).types(DTYPES),                         \
      row(#NAME, "transposed", FN1(NAME(a)), {L(T({4, 3, 5}, LO, HI), Layout::transposed)}) \
          .types(DTYPES),                                                                   \
      row(#NAME, "strided", FN1(NAME(a)), {L(T({3, 33}, LO, HI), Layout::strided)}).types(DTYPES)

std::vector<Row> unary_rows() {
  return {
      UNARY(abs, -3, 3, kNumbers),
      UNARY(negative, -3, 3, kNumbers),
      UNARY(sign, -3, 3, kNumbers),
      UNARY(square, -3, 3, kAll),
      UNARY(sqrt, 0.1, 3, kInexact),
      row("sqrt", "int", FN1(sqrt(a)), {T({30}, 0, 50)}).types({int32, uint8, bool_}),
      UNARY(rsqrt, 0.1, 3, kInexact),
      UNARY(reciprocal, 0.5, 2, kInexact),
      UNARY(exp, -3, 3, kInexact),
      row("exp", "large", FN1(exp(a)), {T({1 << 20}, -5, 5)}).types({float32, bfloat16}),
      row("exp", "int", FN1(exp(a)), {T({30}, -5, 5)}).types({int32, int8}),
      UNARY(expm1, -2, 2, kFloats),
      UNARY(log, 0.1, 3, kInexact),
      UNARY(log1p, -0.5, 2, kInexact),
      UNARY(log2, 0.1, 3, kInexact),
      UNARY(log10, 0.1, 3, kInexact),
      UNARY(sin, -3, 3, kInexact),
      UNARY(cos, -3, 3, kInexact),
      UNARY(tan, -1.2, 1.2, kInexact),
      UNARY(arcsin, -0.9, 0.9, kInexact),
      UNARY(arccos, -0.9, 0.9, kInexact),
      UNARY(arctan, -3, 3, kInexact),
      UNARY(sinh, -2, 2, kInexact),
      UNARY(cosh, -2, 2, kInexact),
      UNARY(tanh, -3, 3, kInexact),
      UNARY(arcsinh, -3, 3, kInexact),
      UNARY(arccosh, 1.1, 3, kInexact),
      UNARY(arctanh, -0.9, 0.9, kInexact),
      // Complex arguments off the real axis: both parts in [-3, 3) cross every branch cut.
      row("arccosh", "complex_plane", FN1(arccosh(a)), {T({40}, -3, 3)}).types({complex64}),
      row("arctanh", "complex_plane", FN1(arctanh(a)), {T({40}, -3, 3)}).types({complex64}),
      row("arcsin", "complex_plane", FN1(arcsin(a)), {T({40}, -3, 3)}).types({complex64}),
      row("arccos", "complex_plane", FN1(arccos(a)), {T({40}, -3, 3)}).types({complex64}),
      UNARY(erf, -2, 2, kFloats),
      UNARY(erfinv, -0.99, 0.99, kFloats),
      UNARY(sigmoid, -4, 4, kFloats),
      UNARY(floor, -3, 3, kReal),
      UNARY(ceil, -3, 3, kReal),
      row("round", "", FN1(round(a)), {T({4, 33}, -4, 4)}).types(kReal),
      row("round", "halves", FN1(round(multiply(astype(a, float32), array(0.5f)))),
          {T({41}, -20, 20)})
          .types({int32}),
      row("round", "decimals", FN1(round(a, 2)), {T({4, 33}, -4, 4)}).types(kFloats),
      row("round", "negative_decimals", FN1(round(a, -1)), {T({4, 33}, -400, 400)})
          .types({float32, int32}),
      UNARY(logical_not, -2, 2, kAll),
      UNARY(bitwise_invert, -50, 50, kIntegral),
      row("isnan", "", FN1(isnan(a)), {T({4, 9})}).types(kAll),
      row("isnan", "special", FN1(isnan(log(a))), {T({4, 9}, -1, 1)}).types(kFloats),
      row("isinf", "", FN1(isinf(a)), {T({4, 9})}).types(kAll),
      row("isinf", "special", FN1(isinf(divide(a, subtract(a, a)))), {T({4, 9})})
          .types(kFloats + std::vector<Dtype>{complex64}),
      row("isfinite", "", FN1(isfinite(a)), {T({4, 9})}).types(kAll),
      row("isfinite", "special", FN1(isfinite(divide(a, subtract(a, a)))), {T({4, 9})})
          .types(kFloats),
      row("isposinf", "", FN1(isposinf(a)), {T({4, 9})}).types(kReal),
      row("isposinf", "special", FN1(isposinf(divide(a, subtract(a, a)))), {T({4, 9})})
          .types(kFloats),
      row("isneginf", "", FN1(isneginf(a)), {T({4, 9})}).types(kReal),
      row("isneginf", "special", FN1(isneginf(divide(a, subtract(a, a)))), {T({4, 9})})
          .types(kFloats),
      row("stop_gradient", "", FN1(stop_gradient(a)), {T({3, 4})}).types(kSome),
      UNARY(real, -2, 2, kAll),
      UNARY(imag, -2, 2, kAll),
      UNARY(conjugate, -2, 2, kAll),
  };
}
#undef UNARY

// A binary op over the given dtypes: same shapes, broadcast, a scalar on either side,
// transposed against row-major, and strided.
#define BINARY(NAME, LA, HA, LB, HB, DTYPES)                                                       \
  row(#NAME, "", FN2(NAME(a, b)), {T({5, 67}, LA, HA), T({5, 67}, LB, HB)}).types(DTYPES),         \
      row(#NAME, "broadcast", FN2(NAME(a, b)), {T({3, 1}, LA, HA), T({4}, LB, HB)}).types(DTYPES), \
      row(#NAME, "scalar_b", FN2(NAME(a, b)), {T({100}, LA, HA), T({}, LB, HB)}).types(DTYPES),    \
      row(#NAME, "scalar_a", FN2(NAME(a, b)), {T({}, LA, HA), T({3, 33}, LB, HB)}).types(DTYPES),  \
      row(#NAME, "transposed", FN2(NAME(a, b)),                                                    \
          {L(T({6, 7}, LA, HA), Layout::transposed), T({6, 7}, LB, HB)})                           \
          .types(DTYPES),                                                                          \
      row(#NAME, "strided", FN2(NAME(a, b)),                                                       \
          {L(T({3, 17}, LA, HA), Layout::strided), L(T({3, 17}, LB, HB), Layout::broadcast)})      \
          .types(DTYPES)

std::vector<Row> binary_rows() {
  return {
      BINARY(add, -3, 3, -3, 3, kAll),
      BINARY(subtract, -3, 3, -3, 3, kNumbers),
      BINARY(multiply, -3, 3, -3, 3, kAll),
      BINARY(divide, -3, 3, 0.5, 2, kNumbers),
      // Integer divisors include 0 (the result is 0) and negative values (Python's signs).
      BINARY(floor_divide, -20, 20, -4, 4, kReal),
      BINARY(remainder, -20, 20, -4, 4, kReal),
      row("floor_divide", "float_signs", FN2(floor_divide(a, b)), {T({200}, -5, 5), T({200})})
          .types(kFloats),
      row("remainder", "float_signs", FN2(remainder(a, b)), {T({200}, -5, 5), T({200})})
          .types(kFloats),
      BINARY(power, 0.5, 2, -2, 2, kFloats),
      row("power", "int", FN2(power(a, b)), {T({200}, -3, 4), T({200}, -2, 6)}).types(kIntegral),
      row("power", "complex", FN2(power(a, b)), {T({200}), T({200})}).types({complex64}),
      BINARY(maximum, -3, 3, -3, 3, kReal),
      BINARY(minimum, -3, 3, -3, 3, kReal),
      row("maximum", "nan", FN2(maximum(log(a), b)), {T({50}, -1, 1), T({50})}).types(kFloats),
      row("minimum", "nan", FN2(minimum(a, log(b))), {T({50}), T({50}, -1, 1)}).types(kFloats),
      // Small integer ranges make equal elements common.
      BINARY(equal, -2, 2, -2, 2, kAll),
      BINARY(not_equal, -2, 2, -2, 2, kAll),
      BINARY(less, -2, 2, -2, 2, kReal),
      BINARY(less_equal, -2, 2, -2, 2, kReal),
      BINARY(greater, -2, 2, -2, 2, kReal),
      BINARY(greater_equal, -2, 2, -2, 2, kReal),
      BINARY(logical_and, -2, 2, -2, 2, kSome + std::vector<Dtype>{bool_}),
      BINARY(logical_or, -2, 2, -2, 2, kSome + std::vector<Dtype>{bool_}),
      BINARY(bitwise_and, -50, 50, -50, 50, kIntegral),
      BINARY(bitwise_or, -50, 50, -50, 50, kIntegral),
      BINARY(bitwise_xor, -50, 50, -50, 50, kIntegral),
      // Shift counts outside [0, bits) included.
      BINARY(left_shift, -50, 50, -3, 70, kIntegral),
      BINARY(right_shift, -50, 50, -3, 70, kIntegral),
      BINARY(arctan2, -3, 3, -3, 3, kFloats),
      BINARY(logaddexp, -3, 3, -3, 3, kFloats),
      row("where", "", FN3(where(a, b, c)), {D({5, 67}, bool_), T({5, 67}), T({5, 67})})
          .types(kAll),
      row("where", "broadcast", FN3(where(a, b, c)), {D({3, 1}, bool_), T({4}), T({})}).types(kAll),
      row("where", "transposed", FN3(where(a, b, c)),
          {L(D({6, 7}, bool_), Layout::transposed), L(T({6, 7}), Layout::transposed),
           L(T({6, 7}), Layout::transposed)})
          .types(kSome),
      row("where", "strided", FN3(where(a, b, c)),
          {D({3, 17}, bool_), L(T({3, 17}), Layout::strided), L(T({3, 17}), Layout::broadcast)})
          .types(kSome),
      row("where", "scalars", FN3(where(a, b, c)), {D({}, bool_), T({}), T({})}).types(kSome),
      row("clip", "both", FN3(clip(a, b, c)), {T({3, 4}), T({4}, -1, 0), T({3, 1}, 0.1, 1)})
          .types(kReal),
      row("clip", "min", FN2(clip(a, b, std::nullopt)), {T({3, 4}), T({3, 4})}),
      row("clip", "max", FN2(clip(a, std::nullopt, b)), {T({3, 4}), T({3, 4})}),
      row("isclose", "", FN2(isclose(a, b, 0.5, 0.1)), {T({3, 4}), T({3, 4})}).types(kFloats),
      row("isclose", "equal_nan", FN2(isclose(log(a), log(b), 1e-5, 1e-8, true)),
          {T({30}, -1, 1), T({30}, -1, 1)}),
      row("allclose", "", FN2(allclose(a, b, 0.5, 0.1)), {T({3, 4}), T({3, 4})}),
      row("array_equal", "same", FN1(array_equal(a, copy(a))), {T({3, 4})}).types(kAll),
      row("array_equal", "different", FN2(array_equal(a, b)), {T({3, 4}), T({3, 4})}),
      row("array_equal", "equal_nan", FN1(array_equal(log(a), log(a), true)), {T({30}, -1, 1)}),
  };
}
#undef BINARY

std::vector<Row> operator_rows() {
  auto F = [](Shape s, double lo = -2, double hi = 2) { return D(std::move(s), float32, lo, hi); };
  auto I = [](Shape s, double lo, double hi) { return D(std::move(s), int32, lo, hi); };
  auto B = [](Shape s) { return D(std::move(s), bool_); };
  return {
      row("operator-", "negate", FN1(-a), {F({3, 4})}),
      row("operator!", "", FN1(!a), {B({3, 4})}),
      row("operator~", "", FN1(~a), {I({3, 4}, -8, 8)}),
      row("operator+", "", FN2(a + b), {F({3, 4}), F({4})}),
      row("operator-", "", FN2(a - b), {F({3, 4}), F({4})}),
      row("operator*", "", FN2(a * b), {F({3, 4}), F({4})}),
      row("operator/", "", FN2(a / b), {F({3, 4}), F({4}, 0.5, 2)}),
      row("operator%", "", FN2(a % b), {F({3, 4}), F({4}, 0.5, 2)}),
      row("operator==", "", FN2(a == b), {I({3, 4}, -2, 2), I({4}, -2, 2)}),
      row("operator!=", "", FN2(a != b), {I({3, 4}, -2, 2), I({4}, -2, 2)}),
      row("operator<", "", FN2(a < b), {F({3, 4}), F({4})}),
      row("operator<=", "", FN2(a <= b), {I({3, 4}, -2, 2), I({4}, -2, 2)}),
      row("operator>", "", FN2(a > b), {F({3, 4}), F({4})}),
      row("operator>=", "", FN2(a >= b), {I({3, 4}, -2, 2), I({4}, -2, 2)}),
      row("operator&&", "", FN2(a && b), {B({3, 4}), B({4})}),
      row("operator||", "", FN2(a || b), {B({3, 4}), B({4})}),
      row("operator&", "", FN2(a & b), {I({3, 4}, -8, 8), I({4}, -8, 8)}),
      row("operator|", "", FN2(a | b), {I({3, 4}, -8, 8), I({4}, -8, 8)}),
      row("operator^", "", FN2(a ^ b), {I({3, 4}, -8, 8), I({4}, -8, 8)}),
      row("operator<<", "", FN2(a << b), {I({3, 4}, 0, 8), I({4}, 0, 4)}),
      row("operator>>", "", FN2(a >> b), {I({3, 4}, 0, 64), I({4}, 0, 4)}),
  };
}

// ---------------------------------------------------------------- other families

// A reduction over all axes, one axis, several axes keeping them, and a transposed input.
#define REDUCTION(NAME, LO, HI, DTYPES)                                                         \
  row(#NAME, "all", FN1(NAME(a)), {T({5, 7, 9}, LO, HI)}).types(DTYPES),                        \
      row(#NAME, "last_axis", FN1(NAME(a, -1)), {T({33, 65}, LO, HI)}).types(DTYPES),           \
      row(#NAME, "axes02_keepdims", FN1(NAME(a, std::vector<int>{0, 2}, true)),                 \
          {T({5, 7, 9}, LO, HI)})                                                               \
          .types(DTYPES),                                                                       \
      row(#NAME, "transposed", FN1(NAME(a, 1)), {L(T({6, 8, 10}, LO, HI), Layout::transposed)}) \
          .types(DTYPES)

std::vector<Row> reduction_rows() {
  return {
      REDUCTION(sum, -2, 2, (kSome + std::vector<Dtype>{int8, bool_})),
      REDUCTION(prod, 0.8, 1.2, (std::vector<Dtype>{float32, float64, complex64})),
      REDUCTION(max, -2, 2, (std::vector<Dtype>{float32, bfloat16, int16, uint8})),
      REDUCTION(min, -2, 2, (std::vector<Dtype>{float32, float16, int64})),
      REDUCTION(mean, -2, 2, (std::vector<Dtype>{float32, bfloat16, int32})),
      REDUCTION(all, -2, 2, (std::vector<Dtype>{bool_, float32})),
      REDUCTION(any, -2, 2, (std::vector<Dtype>{bool_, int32})),
      REDUCTION(logsumexp, -2, 2, (std::vector<Dtype>{float32, float16})),
      row("var", "all", FN1(var(a)), {T({2, 3, 4})}),
      row("var", "axis_ddof1", FN1(var(a, 1, true, 1)), {T({2, 3, 4})}),
      row("var", "axes", FN1(var(a, std::vector<int>{0, 2})), {T({2, 3, 4})}),
      row("std", "all", FN1(kiln::std(a)), {T({2, 3, 4})}),
      row("std", "axis_ddof1", FN1(kiln::std(a, 2, false, 1)), {T({2, 3, 4})}),
      row("std", "axes", FN1(kiln::std(a, std::vector<int>{0, 1}, true)), {T({2, 3, 4})}),
      row("argmax", "all", FN1(argmax(a)), {T({30, 40})}).types({float32, int32}),
      row("argmax", "axis", FN1(argmax(a, 1, true)), {T({30, 40})}).types({float32, float16}),
      row("argmin", "all", FN1(argmin(a)), {T({30, 40})}),
      row("argmin", "axis", FN1(argmin(a, 0)), {L(T({30, 40}), Layout::transposed)}),
      row("softmax", "last", FN1(softmax(a)), {T({30, 40})}).types({float32, bfloat16}),
      row("softmax", "axes", FN1(softmax(a, std::vector<int>{0, 1})), {T({3, 4})}),
      row("cumsum", "", FN1(cumsum(a, 1)), {T({30, 40})}).types({float32, int32}),
      row("cumsum", "reverse_exclusive", FN1(cumsum(a, 0, true, false)), {T({30, 40})}),
      row("cumprod", "", FN1(cumprod(a, 1)), {T({3, 4}, 0.5, 1.5)}),
      row("cumprod", "reverse", FN1(cumprod(a, 0, true)), {T({3, 4}, 0.5, 1.5)}),
  };
}
#undef REDUCTION

std::vector<Row> linalg_rows() {
  auto mm = FN2(matmul(a, b));
  const std::vector<Dtype> dtypes = {float32, float16, bfloat16, float64};
  return {
      row("matmul", "2d", mm, {T({33, 40}), T({40, 17})}).types(dtypes),
      row("matmul", "batched_broadcast", mm, {T({2, 3, 4}), T({4, 5})}).types(dtypes),
      row("matmul", "batch_broadcast_both", mm, {T({1, 3, 4}), T({2, 4, 2})}),
      row("matmul", "transposed", mm, {L(T({20, 30}), Layout::transposed), T({30, 10})}),
      row("matmul", "vector_matrix", mm, {T({4}), T({4, 3})}),
      row("matmul", "matrix_vector", mm, {T({3, 4}), T({4})}),
      row("matmul", "vector_vector", mm, {T({4}), T({4})}),
      row("addmm", "", FN3(addmm(a, b, c, 0.5f, 2.0f)), {T({3, 2}), T({3, 4}), T({4, 2})}),
      row("addmm", "broadcast_c", FN3(addmm(a, b, c)), {T({2}), T({3, 4}), T({4, 2})}),
      row("inner", "vectors", FN2(inner(a, b)), {T({4}), T({4})}),
      row("inner", "matrices", FN2(inner(a, b)), {T({2, 4}), T({3, 4})}),
      row("outer", "", FN2(outer(a, b)), {T({3}), T({4})}),
  };
}

std::vector<Row> indexing_rows() {
  // Scatters that keep one of several updates for a duplicate index are unspecified there:
  // those rows use distinct indices.
  static const array perm({4, 0, 2}, int32);
  static const array cols({0, 2, 3, 1, 1, 0}, {3, 2}, int32);
  return {
      row("take", "flat", FN2(take(a, b)), {T({3, 4}), D({5}, int32, -12, 12)}).types(kSome),
      row("take", "axis", FN2(take(a, b, 1)), {T({3, 4}), D({2, 2}, uint32, 0, 4)}),
      row("take", "index", FN1(take(a, -1, 1)), {T({3, 4})}),
      row("take_along_axis", "", FN2(take_along_axis(a, b, 1)),
          {T({3, 4}), D({3, 2}, int64, 0, 4)}),
      row("put_along_axis", "", FN2(put_along_axis(a, cols, b, 1)), {T({3, 4}), T({3, 2})}),
      row("gather", "", FN3(gather(a, {b, c}, {0, 1}, {1, 1, 3})),
          {T({5, 4, 3}), D({2, 3}, int32, 0, 5), D({2, 3}, int32, 0, 4)}),
      row("scatter", "", FN2(scatter(a, {perm}, b, {0})), {T({5, 3}), T({3, 1, 3})}).types(kSome),
      row("scatter_add", "duplicates", FN3(scatter_add(a, {b}, c, {0})),
          {T({5, 3}), D({4}, int32, 0, 5), T({4, 1, 3})}),
      row("scatter_prod", "", FN2(scatter_prod(a, {perm}, b, {0})), {T({5, 3}), T({3, 1, 3})}),
      row("scatter_max", "", FN2(scatter_max(a, {perm}, b, {0})), {T({5, 3}), T({3, 1, 3})}),
      row("scatter_min", "", FN2(scatter_min(a, {perm}, b, {0})), {T({5, 3}), T({3, 1, 3})}),
      row("sort", "axis", FN1(sort(a, 1)), {T({30, 40})}).types({float32, int16}),
      row("sort", "flat", FN1(sort(a)), {T({3, 4})}),
      row("argsort", "axis", FN1(argsort(a, 0)), {T({30, 40})}),
      row("argsort", "flat", FN1(argsort(a)), {T({3, 4})}),
      row("sort", "long", FN1(sort(a)), {T({70000})}).types({float32, int64, uint8}),
      row("argsort", "long", FN1(argsort(a, 1)), {T({5, 9000})}).types({float32, float16}),
      row("partition", "axis", FN1(partition(a, 7, 1)), {T({30, 40})})
          .types({float32, int16, float16, float64, complex64}),
      row("partition", "flat", FN1(partition(a, -3)), {L(T({3, 4}), Layout::transposed)}),
      row("argpartition", "axis", FN1(argpartition(a, 5, 0)), {T({30, 40})}),
      row("argpartition", "flat", FN1(argpartition(a, 2)), {L(T({3, 8}), Layout::strided)}),
      row("topk", "axis", FN1(topk(a, 4, 1)), {T({30, 40})}).types({float32, int32, float64}),
      row("topk", "long", FN1(topk(a, 10)), {T({300000})}),
      row("median", "axes", FN1(median(a, {0, 2})), {T({6, 5, 7})})
          .types({float32, int32, float16, complex64}),
      row("median", "long", FN1(median(a)), {T({200001})}),
      row("searchsorted", "", FN2(searchsorted(sort(a), b)), {T({50}), T({4, 30})}),
      row("unique", "", FNV(unique(x[0], 20, true, true, true)), {T({5, 40}, -8, 8)})
          .types({int32, uint8, float32, complex64}),
  };
}

// The samplers give the same numbers on every device for the same key.
std::vector<Row> random_rows() {
  return {
      row("random::bits", "", FN0(random::bits({1000}, 4, random::key(1))), {}),
      row("random::split", "", FN0(random::split(random::key(2), 5)), {}),
      row("random::uniform", "", FN0(random::uniform({1000}, t, random::key(3))), {})
          .types(kFloats),
      row("random::normal", "", FN0(random::normal({1000}, t, random::key(4))), {})
          .types({float32, float16, bfloat16}),
      // Samples come from a float32 erfinv (as MLX's), whose fma use differs by device.
      row("random::normal", "wide", FN0(random::normal({1000}, t, random::key(4))), {})
          .types({float64})
          .tol(1e-6),
      row("random::randint", "", FN0(random::randint(-5, 100, {1000}, t, random::key(5))), {})
          .types({int32, int8, int64}),
      row("random::bernoulli", "", FN1(random::bernoulli(a, random::key(6))), {T({1000}, 0, 1)}),
      row("random::truncated_normal", "",
          FN2(random::truncated_normal(a, b, float32, random::key(7))),
          {T({500}, -2, -0.5), T({500}, 0.5, 2)}),
      row("random::gumbel", "", FN0(random::gumbel({1000}, t, random::key(8))), {}),
      row("random::categorical", "", FN1(random::categorical(a, -1, random::key(9))),
          {T({20, 10})}),
      row("random::laplace", "", FN0(random::laplace({1000}, t, random::key(10))), {})
          .types(kFloats),
      row("random::permutation", "", FN0(random::permutation(1000, random::key(11))), {}),
  };
}

// The NumPy-style ops of ops_numpy.cpp, ops_einsum.cpp and ops_products.cpp: compositions of
// the primitives above, and the Trunc, ToFP8/FromFP8, View and new Scan kernels.
std::vector<Row> numpy_rows() {
  static const array lhs_idx({2, 0, 1, 2}, int32);
  static const array rhs_idx({1, 1, 0, 0}, int32);
  static const array segments({0, 20, 10, 40, 33, 33}, {3, 2}, int32);
  static const array block_mask({true, false, true, true, false, true}, {2, 3}, bool_);
  const std::vector<Dtype> halves = {float32, float16, bfloat16};
  return {
      row("trunc", "", FN1(trunc(a)), {T({30, 40}, -5, 5)}).types(kFloats),
      row("degrees", "", FN1(degrees(a)), {T({30, 40})}).types({float32, int32}),
      row("radians", "", FN1(radians(a)), {T({30, 40})}),
      row("logical_xor", "", FN2(logical_xor(a, b)), {T({3, 40}), T({40})}).types(kSome),
      row("divmod", "", FNV(divmod(x[0], x[1])), {T({30, 40}, -9, 9), T({40}, 1, 4)})
          .types({float32, int32}),
      row("nan_to_num", "", FN1(nan_to_num(divide(log(a), a))), {T({30, 40}, -1, 1)}).types(halves),
      row("flip", "", FN1(flip(a, std::vector<int>{0, 2})), {L(T({4, 5, 6}), Layout::strided)})
          .types(kSome),
      row("roll", "", FN1(roll(a, Shape{3, -7}, {0, 1})), {T({20, 30})}).types(kSome),
      row("roll", "flat", FN1(roll(a, 11)), {L(T({6, 7}), Layout::transposed)}),
      row("atleast_1d", "", FN1(atleast_1d(a)), {T({})}),
      row("atleast_2d", "", FN1(atleast_2d(a)), {T({5})}),
      row("atleast_3d", "", FN1(atleast_3d(a)), {T({4, 5})}),
      row("unflatten", "", FN1(unflatten(a, 1, {4, -1})), {L(T({3, 20}), Layout::transposed)}),
      row("unstack", "", FNV(unstack(x[0], 1)), {T({3, 4})}),
      row("matrix_transpose", "", FN1(matrix_transpose(a)), {T({2, 3, 4})}),
      row("view", "widen", FN1(view(a, uint32)), {T({6, 8})}).types({uint8, int16, bfloat16}),
      row("view", "narrow_strided", FN1(view(a, uint8)), {L(T({6, 8}), Layout::strided)})
          .types({float32, int64}),
      row("meshgrid", "", FNV(meshgrid({x[0], x[1]})), {T({30}), T({40})}),
      row("diagonal", "", FN1(diagonal(a, 2, 2, 0)), {T({20, 5, 30})}).types(kSome),
      row("diag", "vector", FN1(diag(a, -2)), {T({30})}),
      row("diag", "matrix", FN1(diag(a, 3)), {L(T({30, 40}), Layout::transposed)}),
      row("trace", "", FN1(trace(a, 1, 1, 2)), {T({4, 30, 30})}).types({float32, int32}),
      row("diff", "", FN1(diff(a, 2, 1)), {T({30, 40})}).types({float32, int32}),
      row("tri", "", FN0(tri(30, 40, -3, t)), {}).types(kSome),
      row("bartlett", "", FN0(bartlett(33)), {}),
      row("blackman", "", FN0(blackman(33)), {}),
      row("hamming", "", FN0(hamming(33)), {}),
      row("hanning", "", FN0(hanning(33)), {}),
      row("count_nonzero", "", FN1(count_nonzero(a, std::vector<int>{1})), {T({30, 40}, -1, 1)})
          .types({int32, float32}),
      row("minmax", "", FNV(minmax(x[0], {0})), {T({30, 40})}).types({float32, int16}),
      row("cummax", "", FN1(cummax(a, 1)), {T({30, 400})}).types({float32, bfloat16, int32, uint8}),
      row("cummax", "columns_reverse_exclusive", FN1(cummax(a, 0, true, false)), {T({300, 40})})
          .types({float32, int64}),
      row("cummin", "", FN1(cummin(a, 1)), {T({30, 5000})}).types({float32, float16, int16}),
      row("logcumsumexp", "", FN1(logcumsumexp(a, 1)), {T({30, 400})}).types(halves),
      row("logcumsumexp", "long_reverse", FN1(logcumsumexp(a, 0, true)), {T({20000, 3})}),
      row("tensordot", "", FN2(tensordot(a, b, {0, 2}, {1, 0})), {T({20, 3, 40}), T({40, 20, 5})}),
      row("vecdot", "", FN2(vecdot(a, b)), {T({30, 40}), T({40})}).types({float32, complex64}),
      row("kron", "", FN2(kron(a, b)), {T({5, 6}), T({3, 4})}).types(kSome),
      row("einsum", "", FN3(einsum("bij,bjk,kl->bil", {a, b, c})),
          {T({2, 20, 30}), T({2, 30, 10}), T({10, 15})}),
      row("hadamard_transform", "", FN1(hadamard_transform(a)), {T({5, 1024})}).types(halves),
      row("hadamard_transform", "m28", FN1(hadamard_transform(a)), {T({3, 28 * 64})}),
      row("gather_mm", "", FN2(gather_mm(a, b, lhs_idx, rhs_idx)), {T({3, 20, 30}), T({2, 30, 10})})
          .types(halves),
      row("segmented_mm", "", FN2(segmented_mm(a, b, segments)), {T({20, 40}), T({40, 30})}),
      row("block_masked_mm", "", FN2(block_masked_mm(a, b, 32, block_mask)),
          {T({60, 40}), T({40, 70})}),
      row("to_fp8", "", FN1(to_fp8(a)), {T({30, 40}, -500, 500)}).types(halves),
      row("from_fp8", "", FN1(from_fp8(a, float32)), {D({30, 40}, uint8, 0, 255)}),
      row("depends", "", FNV(depends({x[0]}, {x[1]})), {T({30, 40}), T({5})}),
      row("dynamic_slice", "", FN1(dynamic_slice(a, array({7, 3}, int32), {0, 1}, {10, 20})),
          {L(T({30, 40}), Layout::transposed)})
          .types(kSome),
      row("dynamic_slice_update", "", FN2(dynamic_slice_update(a, b, array({25}, int32), {1})),
          {T({30, 40}), T({30, 10})}),
      row("pad", "reflect", FN1(pad(a, {{5, 30}, {1, 0}}, std::string("reflect"))), {T({20, 7})})
          .types(kSome),
  };
}

// Convolutions: every mode of the primitive runs through the forward op and conv_transpose
// (whose GPU path is the general one), and cuDNN's through the plain cases.
std::vector<Row> conv_rows() {
  const std::vector<Dtype> dtypes = {float32, float16, bfloat16, float64};
  return {
      row("conv1d", "", FN2(conv1d(a, b, 2, 1, 2)), {T({2, 17, 8}), T({6, 3, 8})}).types(dtypes),
      row("conv1d", "groups", FN2(conv1d(a, b, 1, 1, 1, 2)), {T({2, 9, 4}), T({4, 3, 2})}),
      row("conv2d", "", FN2(conv2d(a, b, {1, 1}, {1, 1})), {T({2, 9, 8, 16}), T({32, 3, 3, 16})})
          .types(dtypes),
      row("conv2d", "strided_dilated_groups", FN2(conv2d(a, b, {2, 1}, {1, 0}, {1, 2}, 2)),
          {L(T({2, 7, 6, 4}), Layout::strided), T({4, 3, 2, 2})}),
      row("conv3d", "", FN2(conv3d(a, b, {1, 2, 1}, {1, 0, 1})),
          {T({1, 4, 5, 3, 2}), T({2, 2, 3, 2, 2})}),
      row("conv_general", "asymmetric_input_dilation_flip",
          FN2(conv_general(a, b, {2, 1}, {1, 0}, {2, 1}, {2, 1}, {2, 1}, 1, true)),
          {T({2, 6, 5, 3}), T({4, 3, 2, 3})}),
      row("conv_transpose1d", "", FN2(conv_transpose1d(a, b, 2, 1, 1, 1)),
          {T({2, 5, 3}), T({4, 3, 3})})
          .types(dtypes),
      row("conv_transpose2d", "", FN2(conv_transpose2d(a, b, {2, 2}, {1, 0})),
          {T({2, 4, 4, 8}), T({6, 3, 3, 8})}),
      row("conv_transpose3d", "", FN2(conv_transpose3d(a, b, {2, 1, 1})),
          {T({1, 2, 3, 3, 2}), T({2, 2, 3, 2, 2})}),
      row("convolve", "", FN2(convolve(a, b, "same")), {T({50}), T({7})}),
  };
}

// kiln::linalg and kiln::fft: outputs free of the sign or order a library may pick (Q R,
// U S Vt, V w V^T, sums of eigenvalues) where those are not unique.
std::vector<Row> factor_fft_rows() {
  const std::vector<Dtype> real = {float32, float64};
#define SPD(x) add(matmul(x, swapaxes(x, -1, -2)), multiply(eye(x.shape(-1), t), array(4.0, t)))
#define WELL(x) add(x, multiply(eye(x.shape(-1), t), array(4.0, t)))
  return {
      row("linalg::inv", "", FN1(linalg::inv(WELL(a))), {T({3, 6, 6})}).types(real),
      row("linalg::tri_inv", "upper", FN1(linalg::tri_inv(WELL(a), true)), {T({2, 5, 5})})
          .types(real),
      row("linalg::cholesky", "", FN1(linalg::cholesky(SPD(a))), {T({4, 6, 6})}).types(real),
      row("linalg::cholesky", "upper_large", FN1(linalg::cholesky(SPD(a), true)), {T({40, 40})}),
      row("linalg::solve", "", FN2(linalg::solve(WELL(a), b)), {T({3, 5, 5}), T({3, 5, 2})})
          .types(real),
      row("linalg::solve_triangular", "lower", FN2(linalg::solve_triangular(WELL(a), b)),
          {T({2, 5, 5}), T({2, 5, 3})})
          .types(real),
      row("linalg::solve_triangular", "upper", FN2(linalg::solve_triangular(WELL(a), b, true)),
          {T({5, 5}), T({5})}),
      row("linalg::qr", "tall",
          FN1(matmul(linalg::qr(a).first, linalg::qr(a).second), abs(linalg::qr(a).first),
              abs(linalg::qr(a).second)),
          {T({2, 7, 4})})
          .types(real),
      row("linalg::qr", "wide", FN1(matmul(linalg::qr(a).first, linalg::qr(a).second)),
          {T({3, 6})}),
      row("linalg::svd", "values", FN1(linalg::svd(a, false)[0]), {T({3, 6, 4})}).types(real),
      row("linalg::svd", "reconstruct", FN1([&] {
            auto usv = linalg::svd(a);
            return matmul(multiply(usv[0], expand_dims(usv[1], 0)), slice(usv[2], {0, 0}, {4, 7}));
          }()),
          {T({4, 7})}),
      row("linalg::eigh", "",
          FN1(linalg::eigh(add(a, swapaxes(a, -1, -2))).first,
              [&] {
                auto [w, v] = linalg::eigh(add(a, swapaxes(a, -1, -2)));
                return matmul(multiply(v, expand_dims(w, -2)), swapaxes(v, -1, -2));
              }()),
          {T({3, 6, 6})})
          .types(real),
      row("linalg::eigh", "batched_jacobi", FN1(linalg::eigvalsh(add(a, swapaxes(a, -1, -2)), "U")),
          {T({20, 8, 8})}),
      row("linalg::eig", "", FN1(sum(linalg::eigvals(a), -1), sum(square(linalg::eigvals(a)), -1)),
          {T({2, 5, 5})}),
      row("linalg::lu", "", FNV(linalg::lu(x[0])), {T({3, 5, 5})}).types(real),
      row("linalg::det", "", FN1(linalg::det(WELL(a))), {T({3, 6, 6})}),
      row("linalg::pinv", "", FN1(linalg::pinv(a)), {T({5, 3})}),
      row("linalg::norm", "nuc", FN1(linalg::norm(a, std::string("nuc"))), {T({4, 5})}),
      row("fft::fft", "odd_padded", FN1(fft::fft(a, 9)), {D({3, 7}, complex64)}),
      // A prime length: the chirp-z transforms of both libraries round differently.
      row("fft::fft", "bluestein", FN1(fft::fft(a)), {D({2, 4097}, complex64)}).tol(1e-4),
      row("fft::ifftn", "ortho", FN1(fft::ifftn(a, {0, 2}, fft::FFTNorm::Ortho)),
          {D({4, 3, 6}, complex64)}),
      row("fft::rfft", "", FN1(fft::rfft(a)), {L(T({4, 1000}), Layout::strided)}),
      row("fft::rfftn", "", FN1(fft::rfftn(a, {1, 0})), {T({6, 5, 4})}),
      row("fft::irfft", "", FN1(fft::irfft(a, 11)), {D({3, 6}, complex64)}),
      row("fft::irfftn", "", FN1(fft::irfftn(a, {4, 6}, {0, 2}, fft::FFTNorm::Forward)),
          {D({4, 3, 4}, complex64)}),
  };
#undef SPD
#undef WELL
}

}  // namespace

// ---------------------------------------------------------------- the cases

const std::vector<Row>& all_rows() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> r;
    for (auto part : {creation_rows(), layout_rows(), unary_rows(), binary_rows(), operator_rows(),
                      reduction_rows(), linalg_rows(), indexing_rows(), random_rows(), numpy_rows(),
                      conv_rows(), factor_fft_rows()}) {
      r.insert(r.end(), part.begin(), part.end());
    }
    return r;
  }();
  return rows;
}

}  // namespace gpu_ops
