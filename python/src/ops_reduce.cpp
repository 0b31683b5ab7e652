// Reductions and scans: sum, prod, max, min, mean, all, any, logsumexp, var, std, argmax,
// argmin, softmax, cumsum, cumprod.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <numeric>
#include <string>

#include "helpers.h"
#include "ops_common.h"

namespace kiln::python {

namespace {

using Reduce = array (*)(const array&, const Axis&, bool, StreamOrDevice);

struct Reduction {
  const char* name;
  Reduce fn;
  const char* summary;
  const char* dtypes;
};

const Reduction kReductions[] = {
    {"sum", &reduce_sum, "Sum over the given axes.",
     "bool and integers narrower than 32 bits accumulate in int32/uint32 (as MLX); other "
     "dtypes keep theirs."},
    {"prod", &reduce_prod, "Product over the given axes.", "The result has the dtype of ``a``."},
    {"max", &reduce_max, "Maximum over the given axes.",
     "The result has the dtype of ``a``. ValueError for an empty reduction."},
    {"min", &reduce_min, "Minimum over the given axes.",
     "The result has the dtype of ``a``. ValueError for an empty reduction."},
    {"mean", &reduce_mean, "Mean over the given axes.",
     "Floating inputs keep their dtype; integer and bool inputs give float32."},
    {"all", &reduce_all, "Whether all elements over the given axes are true (nonzero).",
     "The result is ``bool_``."},
    {"any", &reduce_any, "Whether any element over the given axes is true (nonzero).",
     "The result is ``bool_``."},
    {"logsumexp", &reduce_logsumexp,
     "``log(sum(exp(a)))`` over the given axes, computed stably (the maximum is subtracted first).",
     "Floating inputs keep their dtype; integer and bool inputs give float32. complex64 (as "
     "MLX) subtracts the lexicographic maximum ``m`` and adds it back, so the imaginary part is "
     "``m.imag`` plus the angle of the shifted sum, not always NumPy's principal value."},
};

std::string reduction_doc(const Reduction& r) {
  return std::string(r.summary) + "\n\n" + r.dtypes +
         "\n\nArgs:\n    a (array): Input array.\n    axis (int or Sequence[int], optional): The "
         "axes to reduce; all by default. Negative axes count from the end.\n    keepdims (bool): "
         "Keep the reduced axes with size 1.\n\nReturns:\n    array: The reduced array.\n\n"
         "Raises:\n    ValueError: An axis is out of bounds or repeated.\n";
}

std::vector<int> all_axes(const array& a) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

}  // namespace

void init_ops_reduce(py::module_& m) {
  auto stream = py::arg("stream") = py::none();

  for (const auto& r : kReductions) {
    m.def(r.name, r.fn, py::arg("a"), py::pos_only(), py::arg("axis") = py::none(),
          py::arg("keepdims") = false, py::kw_only(), stream, reduction_doc(r).c_str());
  }

  const char* moment_doc = R"doc(
    %s over the given axes with ``ddof`` delta degrees of freedom: the divisor is
    ``N - ddof`` for ``N`` reduced elements.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default.
        keepdims (bool): Keep the reduced axes with size 1.
        ddof (int): Delta degrees of freedom.

    Returns:
        array: The reduced array (float32 for integer inputs).
  )doc";
  auto moment = [&](const char* what) {
    std::string d = moment_doc;
    return d.replace(d.find("%s"), 2, what);
  };
  m.def("var", &reduce_var, py::arg("a"), py::pos_only(), py::arg("axis") = py::none(),
        py::arg("keepdims") = false, py::arg("ddof") = 0, py::kw_only(), stream,
        moment("Variance").c_str());
  m.def("std", &reduce_std, py::arg("a"), py::pos_only(), py::arg("axis") = py::none(),
        py::arg("keepdims") = false, py::arg("ddof") = 0, py::kw_only(), stream,
        moment("Standard deviation").c_str());

  const char* arg_doc = R"doc(
    Index of the first %s along ``axis`` (of the flattened array when ``axis`` is None).

    Args:
        a (array): Input array.
        axis (int, optional): The axis.
        keepdims (bool): Keep the reduced axis with size 1.

    Returns:
        array: ``uint32`` indices.

    Raises:
        ValueError: The axis is out of bounds, or it is empty.
  )doc";
  auto arg = [&](const char* what) {
    std::string d = arg_doc;
    return d.replace(d.find("%s"), 2, what);
  };
  m.def("argmax", &reduce_argmax, py::arg("a"), py::pos_only(), py::arg("axis") = py::none(),
        py::arg("keepdims") = false, py::kw_only(), stream, arg("maximum").c_str());
  m.def("argmin", &reduce_argmin, py::arg("a"), py::pos_only(), py::arg("axis") = py::none(),
        py::arg("keepdims") = false, py::kw_only(), stream, arg("minimum").c_str());

  m.def(
      "softmax",
      [](const array& a, const Axis& axis, bool /*precise*/, StreamOrDevice s) {
        if (auto* i = std::get_if<int>(&axis)) return softmax(a, *i, s);
        if (auto* v = std::get_if<std::vector<int>>(&axis)) return softmax(a, *v, s);
        return softmax(a, all_axes(a), s);
      },
      py::arg("a"), py::pos_only(), py::arg("axis") = py::none(), py::kw_only(),
      py::arg("precise") = false, stream, R"doc(
    ``exp(a - logsumexp(a))`` over the given axes, computed stably.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to normalize over; all by default
            (as MLX; pass ``axis=-1`` for the last axis).
        precise (bool, optional): Accepted for MLX compatibility: kiln always computes half
            types in float32.

    Returns:
        array: An array of ``a``'s shape (float32 for integer inputs; complex64 stays
        complex64, shifted by the lexicographic maximum as MLX).
  )doc");

  const char* scan_doc = R"doc(
    Cumulative %s along ``axis`` (of the flattened array when ``axis`` is None).

    Args:
        a (array): Input array.
        axis (int, optional): The axis.
        reverse (bool): Scan from the end.
        inclusive (bool): Include each element in its own result (else the first result is
            the identity).

    Returns:
        array: An array of the scanned shape.
  )doc";
  auto scan = [&](const char* what) {
    std::string d = scan_doc;
    return d.replace(d.find("%s"), 2, what);
  };
  m.def("cumsum", &scan_cumsum, py::arg("a"), py::pos_only(), py::arg("axis") = py::none(),
        py::kw_only(), py::arg("reverse") = false, py::arg("inclusive") = true, stream,
        scan("sum").c_str());
  m.def("cumprod", &scan_cumprod, py::arg("a"), py::pos_only(), py::arg("axis") = py::none(),
        py::kw_only(), py::arg("reverse") = false, py::arg("inclusive") = true, stream,
        scan("product").c_str());
}

}  // namespace kiln::python
