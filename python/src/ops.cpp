// Operations of kiln/ops.h: this file binds the elementwise families (unary, binary, where,
// clip, comparisons of whole arrays); the others are in ops_<family>.cpp.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bindings.h"
#include "convert.h"
#include "helpers.h"
#include "ops_common.h"

namespace kiln::python {

namespace {

using Unary = array (*)(const array&, StreamOrDevice);
using Binary = array (*)(const array&, const array&, StreamOrDevice);

struct UnaryOp {
  const char* name;
  Unary fn;
  const char* summary;  // first line
  const char* result;   // what the result holds
  const char* dtypes;   // dtype rules
};

constexpr const char* kInexact =
    "Floating and complex inputs keep their dtype; integer and bool inputs are computed in "
    "float32.";
constexpr const char* kFloating =
    "Floating inputs keep their dtype; integer and bool inputs are computed in float32.";
constexpr const char* kSame = "The result has the dtype of ``a``.";
constexpr const char* kBool = "The result is ``bool_``.";

const UnaryOp kUnaryOps[] = {
    {"abs", &abs, "Element-wise absolute value.", "``|a|``",
     "The result has the dtype of ``a`` (for complex input, the magnitude)."},
    {"negative", &negative, "Element-wise negation.", "``-a``", kSame},
    {"sign", &sign, "Element-wise sign: -1, 0 or 1 (``a / |a|`` for complex input).",
     "the sign of ``a``", kSame},
    {"square", &square, "Element-wise square.", "``a * a``", kSame},
    {"sqrt", &sqrt, "Element-wise square root.", "the square root of ``a``", kInexact},
    {"rsqrt", &rsqrt, "Element-wise reciprocal square root.", "``1 / sqrt(a)``", kInexact},
    {"reciprocal", &reciprocal, "Element-wise reciprocal.", "``1 / a``", kInexact},
    {"exp", &exp, "Element-wise exponential.", "the exponential of ``a``", kInexact},
    {"expm1", &expm1, "Element-wise ``exp(a) - 1``, accurate for small ``a``.", "``exp(a) - 1``",
     kInexact},
    {"log", &log, "Element-wise natural logarithm.", "the natural logarithm of ``a``", kInexact},
    {"log1p", &log1p, "Element-wise ``log(1 + a)``, accurate for small ``a``.", "``log(1 + a)``",
     kInexact},
    {"log2", &log2, "Element-wise base-2 logarithm.", "the base-2 logarithm of ``a``", kInexact},
    {"log10", &log10, "Element-wise base-10 logarithm.", "the base-10 logarithm of ``a``",
     kInexact},
    {"sin", &sin, "Element-wise sine.", "the sine of ``a`` (radians)", kInexact},
    {"cos", &cos, "Element-wise cosine.", "the cosine of ``a`` (radians)", kInexact},
    {"tan", &tan, "Element-wise tangent.", "the tangent of ``a`` (radians)", kInexact},
    {"arcsin", &arcsin, "Element-wise inverse sine.", "the inverse sine of ``a``", kInexact},
    {"arccos", &arccos, "Element-wise inverse cosine.", "the inverse cosine of ``a``", kInexact},
    {"arctan", &arctan, "Element-wise inverse tangent.", "the inverse tangent of ``a``", kInexact},
    {"sinh", &sinh, "Element-wise hyperbolic sine.", "the hyperbolic sine of ``a``", kInexact},
    {"cosh", &cosh, "Element-wise hyperbolic cosine.", "the hyperbolic cosine of ``a``", kInexact},
    {"tanh", &tanh, "Element-wise hyperbolic tangent.", "the hyperbolic tangent of ``a``",
     kInexact},
    {"arcsinh", &arcsinh, "Element-wise inverse hyperbolic sine.",
     "the inverse hyperbolic sine of ``a``", kInexact},
    {"arccosh", &arccosh, "Element-wise inverse hyperbolic cosine.",
     "the inverse hyperbolic cosine of ``a``", kInexact},
    {"arctanh", &arctanh, "Element-wise inverse hyperbolic tangent.",
     "the inverse hyperbolic tangent of ``a``", kInexact},
    {"erf", &erf, "Element-wise Gauss error function.", "``erf(a)``", kFloating},
    {"erfinv", &erfinv, "Element-wise inverse of the Gauss error function.", "``erfinv(a)``",
     kFloating},
    {"sigmoid", &sigmoid, "Element-wise logistic sigmoid ``1 / (1 + exp(-a))``.",
     "the sigmoid of ``a``", kInexact},
    {"floor", &floor, "Element-wise floor.", "the largest integers not greater than ``a``", kSame},
    {"ceil", &ceil, "Element-wise ceiling.", "the smallest integers not less than ``a``", kSame},
    {"logical_not", &logical_not, "Element-wise logical not.", "``not a``", kBool},
    {"bitwise_invert", &bitwise_invert, "Element-wise bitwise not of integer or bool arrays.",
     "``~a``", "The result has the dtype of ``a``; ValueError for floating inputs."},
    {"isnan", &isnan, "Element-wise test for NaN.", "whether each element is NaN", kBool},
    {"isinf", &isinf, "Element-wise test for positive or negative infinity.",
     "whether each element is infinite", kBool},
    {"isfinite", &isfinite, "Element-wise test for finite values (not NaN or infinite).",
     "whether each element is finite", kBool},
    {"isposinf", &isposinf, "Element-wise test for positive infinity.",
     "whether each element is +inf", kBool},
    {"isneginf", &isneginf, "Element-wise test for negative infinity.",
     "whether each element is -inf", kBool},
    {"stop_gradient", &stop_gradient, "The same values, with no gradient flowing through them.",
     "``a``, as a constant for the "
     "function transformations",
     kSame},
    {"real", &real, "Element-wise real part.", "the real part of ``a``",
     "complex64 gives float32; real inputs are returned unchanged."},
    {"imag", &imag, "Element-wise imaginary part.", "the imaginary part of ``a``",
     "complex64 gives float32; real inputs give zeros."},
    {"conjugate", &conjugate, "Element-wise complex conjugate.", "the conjugate of ``a``",
     "The result has the dtype of ``a`` (real inputs are returned unchanged)."},
};

struct BinaryOp {
  const char* name;
  Binary fn;
  const char* summary;
  const char* result;
  const char* dtypes;
};

constexpr const char* kPromote =
    "The inputs are promoted to a common dtype (see :func:`promote_types`).";
constexpr const char* kCompare =
    "The inputs are promoted to a common dtype; the result is ``bool_``.";
constexpr const char* kIntegral =
    "The inputs must be integer or bool arrays; they are promoted to a common dtype.";

const BinaryOp kBinaryOps[] = {
    {"add", &add, "Element-wise addition.", "``a + b``", kPromote},
    {"subtract", &subtract, "Element-wise subtraction.", "``a - b``", kPromote},
    {"multiply", &multiply, "Element-wise multiplication.", "``a * b``", kPromote},
    {"divide", &divide, "Element-wise true division.", "``a / b``",
     "The inputs are promoted to a common dtype; integer and bool inputs give float32."},
    {"floor_divide", &floor_divide, "Element-wise floor division (Python's ``//``).",
     "``floor(a / b)``", kPromote},
    {"remainder", &remainder,
     "Element-wise remainder of division, with the sign of the divisor (Python's ``%``).",
     "``a % b``", kPromote},
    {"power", &power, "Element-wise power.", "``a ** b``", kPromote},
    {"maximum", &maximum, "Element-wise maximum (NaN propagates).", "the larger of ``a`` and ``b``",
     kPromote},
    {"minimum", &minimum, "Element-wise minimum (NaN propagates).",
     "the smaller of ``a`` and ``b``", kPromote},
    {"equal", &equal, "Element-wise equality.", "``a == b``", kCompare},
    {"not_equal", &not_equal, "Element-wise inequality.", "``a != b``", kCompare},
    {"less", &less, "Element-wise less than.", "``a < b``", kCompare},
    {"less_equal", &less_equal, "Element-wise less than or equal.", "``a <= b``", kCompare},
    {"greater", &greater, "Element-wise greater than.", "``a > b``", kCompare},
    {"greater_equal", &greater_equal, "Element-wise greater than or equal.", "``a >= b``",
     kCompare},
    {"logical_and", &logical_and, "Element-wise logical and.", "``a and b``",
     "The inputs are tested against zero; the result is ``bool_``."},
    {"logical_or", &logical_or, "Element-wise logical or.", "``a or b``",
     "The inputs are tested against zero; the result is ``bool_``."},
    {"bitwise_and", &bitwise_and, "Element-wise bitwise and.", "``a & b``", kIntegral},
    {"bitwise_or", &bitwise_or, "Element-wise bitwise or.", "``a | b``", kIntegral},
    {"bitwise_xor", &bitwise_xor, "Element-wise bitwise exclusive or.", "``a ^ b``", kIntegral},
    {"left_shift", &left_shift, "Element-wise left shift.", "``a << b``", kIntegral},
    {"right_shift", &right_shift, "Element-wise right shift.", "``a >> b``", kIntegral},
    {"arctan2", &arctan2,
     "Element-wise arc tangent of ``a / b``, using the signs of both for the quadrant.",
     "the angle in radians, in [-pi, pi]", kFloating},
    {"logaddexp", &logaddexp, "Element-wise ``log(exp(a) + exp(b))``, computed without overflow.",
     "``log(exp(a) + exp(b))``", kFloating},
};

std::string unary_doc(const UnaryOp& op) {
  return std::string(op.summary) + "\n\n" + op.dtypes +
         "\n\nArgs:\n    a (array): Input array.\n\nReturns:\n    array: " + op.result + ".\n";
}

std::string binary_doc(const BinaryOp& op) {
  return std::string(op.summary) + "\n\nThe inputs broadcast (NumPy rules). " + op.dtypes + " " +
         kWeakScalars +
         "\n\nArgs:\n    a (array or scalar): Input array or scalar.\n    b (array or scalar): "
         "Input array or scalar.\n\nReturns:\n    array: " +
         op.result + ".\n\nRaises:\n    ValueError: The shapes do not broadcast.\n";
}

}  // namespace

void init_ops_quantized(py::module_& m);  // ops_quantized.cpp

void init_ops(py::module_& m) {
  for (const auto& op : kUnaryOps) {
    m.def(
        op.name, [fn = op.fn](const array& a, StreamOrDevice s) { return fn(a, s); }, py::arg("a"),
        py::pos_only(), py::kw_only(), py::arg("stream") = py::none(), unary_doc(op).c_str());
  }
  // MLX spells it both ways.
  m.attr("conj") = m.attr("conjugate");

  m.def(
      "round", [](const array& a, int decimals, StreamOrDevice s) { return round(a, decimals, s); },
      py::arg("a"), py::pos_only(), py::arg("decimals") = 0, py::kw_only(),
      py::arg("stream") = py::none(), R"doc(
    Element-wise rounding to ``decimals`` decimal places, halves to even (NumPy's round).

    Args:
        a (array): Input array.
        decimals (int): Number of decimal places (negative rounds to tens, hundreds, ...).

    Returns:
        array: The rounded values, with the dtype of ``a``.
  )doc");

  for (const auto& op : kBinaryOps) {
    m.def(
        op.name,
        [fn = op.fn](const ScalarOrArray& a, const ScalarOrArray& b, StreamOrDevice s) {
          auto [x, y] = to_arrays(a, b);
          return fn(x, y, s);
        },
        py::arg("a"), py::arg("b"), py::pos_only(), py::kw_only(), py::arg("stream") = py::none(),
        binary_doc(op).c_str());
  }

  m.def(
      "where",
      [](const ScalarOrArray& condition, const ScalarOrArray& x, const ScalarOrArray& y,
         StreamOrDevice s) {
        auto [a, b] = to_arrays(x, y);
        return where(to_array(condition.obj, bool_), a, b, s);
      },
      py::arg("condition"), py::arg("x"), py::arg("y"), py::pos_only(), py::kw_only(),
      py::arg("stream") = py::none(), R"doc(
    Element-wise choice: ``x`` where ``condition`` is true, else ``y``.

    The three inputs broadcast together. ``x`` and ``y`` are promoted to a common dtype
    (Python scalars are weakly typed against the other one); ``condition`` is tested against
    zero.

    Args:
        condition (array or scalar): The selector.
        x (array or scalar): Values where ``condition`` is true.
        y (array or scalar): Values where ``condition`` is false.

    Returns:
        array: The chosen values.

    Raises:
        ValueError: The shapes do not broadcast.
  )doc");

  m.def(
      "clip",
      [](const array& a, py::object a_min, py::object a_max, StreamOrDevice s) {
        auto bound = [&](py::object v) -> std::optional<array> {
          if (v.is_none()) return std::nullopt;
          return to_array(v, a.dtype());
        };
        return clip(a, bound(a_min), bound(a_max), s);
      },
      py::arg("a"), py::pos_only(), py::arg("a_min"), py::arg("a_max"), py::kw_only(),
      py::arg("stream") = py::none(), R"doc(
    Limits the values of ``a`` to ``[a_min, a_max]``.

    Args:
        a (array): Input array.
        a_min (array, scalar or None): Lower bound (broadcast); None for no lower bound.
        a_max (array, scalar or None): Upper bound (broadcast); None for no upper bound.

    Returns:
        array: The clipped values.

    Raises:
        ValueError: Both bounds are None, or the shapes do not broadcast.
  )doc");

  m.def(
      "isclose",
      [](const ScalarOrArray& a, const ScalarOrArray& b, double rtol, double atol, bool equal_nan,
         StreamOrDevice s) {
        auto [x, y] = to_arrays(a, b);
        return isclose(x, y, rtol, atol, equal_nan, s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8,
      py::kw_only(), py::arg("equal_nan") = false, py::arg("stream") = py::none(), R"doc(
    Element-wise ``|a - b| <= atol + rtol * |b|`` (NumPy's isclose).

    Args:
        a (array or scalar): Input.
        b (array or scalar): Input (the reference: its magnitude scales ``rtol``).
        rtol (float): Relative tolerance.
        atol (float): Absolute tolerance.
        equal_nan (bool): Whether NaNs compare equal.

    Returns:
        array: ``bool_`` array of the broadcast shape.
  )doc");
  m.def(
      "allclose",
      [](const ScalarOrArray& a, const ScalarOrArray& b, double rtol, double atol, bool equal_nan,
         StreamOrDevice s) {
        auto [x, y] = to_arrays(a, b);
        return allclose(x, y, rtol, atol, equal_nan, s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8,
      py::kw_only(), py::arg("equal_nan") = false, py::arg("stream") = py::none(), R"doc(
    Whether all elements of ``a`` and ``b`` are close (see :func:`isclose`).

    Returns:
        array: A 0-d ``bool_`` array.
  )doc");
  m.def(
      "array_equal",
      [](const ScalarOrArray& a, const ScalarOrArray& b, bool equal_nan, StreamOrDevice s) {
        auto [x, y] = to_arrays(a, b);
        return array_equal(x, y, equal_nan, s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::arg("equal_nan") = false, py::kw_only(),
      py::arg("stream") = py::none(), R"doc(
    Whether ``a`` and ``b`` have the same shape and equal values (dtypes may differ).

    Args:
        a (array or scalar): Input.
        b (array or scalar): Input.
        equal_nan (bool): Whether NaNs compare equal.

    Returns:
        array: A 0-d ``bool_`` array (false for different shapes).
  )doc");

  init_ops_creation(m);
  init_ops_layout(m);
  init_ops_reduce(m);
  init_ops_linalg(m);
  init_ops_indexing(m);
  init_ops_numpy(m);
  init_ops_conv(m);
  init_ops_sort(m);
  init_ops_quantized(m);
}

}  // namespace kiln::python
