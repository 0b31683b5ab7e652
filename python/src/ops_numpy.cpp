// NumPy-style ops of kiln/ops.h's ops_numpy/ops_einsum/ops_products families: trunc,
// degrees, radians, logical_xor, divmod, nan_to_num, flip, roll, atleast_*d, unflatten,
// unstack, matrix_transpose, view, meshgrid, diagonal, diag, trace, diff, tri, windows,
// count_nonzero, minmax, cummax, cummin, logcumsumexp, tensordot, vecdot, kron, einsum,
// einsum_path, hadamard_transform, gather_mm, segmented_mm, block_masked_mm, to_fp8,
// from_fp8, depends.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <numeric>

#include "convert.h"
#include "helpers.h"
#include "ops_common.h"

namespace kiln::python {

namespace {

std::vector<int> axes_of(const Axis& axis, const array& a) {
  if (auto* i = std::get_if<int>(&axis)) return {*i};
  if (auto* v = std::get_if<std::vector<int>>(&axis)) return *v;
  std::vector<int> all(a.ndim());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

std::vector<array> array_list(py::handle x) {
  if (py::isinstance<array>(x)) return {x.cast<array>()};
  std::vector<array> out;
  for (auto item : x.cast<py::sequence>()) out.push_back(to_array(item));
  return out;
}

}  // namespace

void init_ops_numpy(py::module_& m) {
  auto stream = py::arg("stream") = py::none();

  m.def(
      "trunc", [](const array& a, StreamOrDevice s) { return trunc(a, s); }, py::arg("a"),
      py::pos_only(), py::kw_only(), stream, R"doc(
    Element-wise truncation toward zero.

    Args:
        a (array): Input array; integer and bool arrays are returned unchanged.

    Returns:
        array: ``a`` with its fractional part removed, in ``a``'s dtype.
  )doc");
  m.def(
      "degrees", [](const array& a, StreamOrDevice s) { return degrees(a, s); }, py::arg("a"),
      py::pos_only(), py::kw_only(), stream,
      "Radians to degrees, element-wise (integer inputs give float32).");
  m.def(
      "radians", [](const array& a, StreamOrDevice s) { return radians(a, s); }, py::arg("a"),
      py::pos_only(), py::kw_only(), stream,
      "Degrees to radians, element-wise (integer inputs give float32).");
  m.def(
      "logical_xor",
      [](const ScalarOrArray& a, const ScalarOrArray& b, StreamOrDevice s) {
        auto [x, y] = to_arrays(a, b);
        return logical_xor(x, y, s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::kw_only(), stream,
      "Element-wise exclusive or of the truth values of ``a`` and ``b`` (bool result).");
  m.def(
      "divmod",
      [](const ScalarOrArray& a, const ScalarOrArray& b, StreamOrDevice s) {
        auto [x, y] = to_arrays(a, b);
        return divmod(x, y, s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::kw_only(), stream, R"doc(
    Element-wise quotient and remainder: ``[floor_divide(a, b), remainder(a, b)]``.

    Returns:
        list[array]: The quotient and the remainder.
  )doc");
  m.def(
      "nan_to_num",
      [](const ScalarOrArray& a, float nan, std::optional<float> posinf,
         std::optional<float> neginf,
         StreamOrDevice s) { return nan_to_num(to_array(a.obj), nan, posinf, neginf, s); },
      py::arg("a"), py::pos_only(), py::arg("nan") = 0.0f, py::arg("posinf") = py::none(),
      py::arg("neginf") = py::none(), py::kw_only(), stream, R"doc(
    NaN and infinities replaced by finite numbers.

    Args:
        a (array): Input array (non-floating arrays are returned unchanged).
        nan (float): The value for NaN.
        posinf (float, optional): The value for +inf; the dtype's largest finite value by
            default.
        neginf (float, optional): The value for -inf; the dtype's lowest finite value by
            default.
  )doc");

  m.def(
      "flip",
      [](const array& a, const Axis& axis, StreamOrDevice s) {
        if (std::holds_alternative<std::monostate>(axis)) return flip(a, s);
        return flip(a, axes_of(axis, a), s);
      },
      py::arg("a"), py::pos_only(), py::arg("axis") = py::none(), py::kw_only(), stream, R"doc(
    Reverses the order of elements along ``axis`` (every axis when None); a strided view.
  )doc");
  m.def(
      "roll",
      [](const array& a, const std::variant<int, std::vector<int>>& shift, const Axis& axis,
         StreamOrDevice s) {
        Shape sh;
        if (auto* i = std::get_if<int>(&shift))
          sh = {*i};
        else
          for (int v : std::get<std::vector<int>>(shift)) sh.push_back(v);
        if (std::holds_alternative<std::monostate>(axis)) {
          // Without axes, every shift rolls the flattened array (NumPy adds them up).
          int total = 0;
          for (int v : sh) total += v;
          return roll(a, total, s);
        }
        return roll(a, sh, axes_of(axis, a), s);
      },
      py::arg("a"), py::pos_only(), py::arg("shift"), py::arg("axis") = py::none(), py::kw_only(),
      stream, R"doc(
    Rolls the elements by ``shift`` along ``axis`` (the flattened array when None): elements
    pushed off one end come back at the other.
  )doc");
  for (auto [name, fn] :
       {std::pair{"atleast_1d", &atleast_1d}, std::pair{"atleast_2d", &atleast_2d},
        std::pair{"atleast_3d", &atleast_3d}}) {
    m.def(
        name,
        [fn](py::args arrays, StreamOrDevice s) -> py::object {
          std::vector<array> out;
          for (auto x : arrays) out.push_back(fn(to_array(x), s));
          if (out.size() == 1) return py::cast(out[0]);
          return py::cast(out);
        },
        py::kw_only(), stream,
        "Views of the arguments with at least 1, 2 or 3 dimensions (NumPy's rules); one array "
        "for one argument, else a list.");
  }
  m.def(
      "unflatten",
      [](const array& a, int axis, const std::vector<int>& shape, StreamOrDevice s) {
        return unflatten(a, axis, Shape(shape.begin(), shape.end()), s);
      },
      py::arg("a"), py::pos_only(), py::arg("axis"), py::arg("shape"), py::kw_only(), stream,
      "Splits ``axis`` into ``shape`` (one entry may be -1).");
  m.def(
      "unstack", [](const array& a, int axis, StreamOrDevice s) { return unstack(a, axis, s); },
      py::arg("a"), py::pos_only(), py::arg("axis") = 0, py::kw_only(), stream,
      "The slices of ``a`` along ``axis``, with that axis removed.");
  m.def(
      "matrix_transpose", [](const array& a, StreamOrDevice s) { return matrix_transpose(a, s); },
      py::arg("a"), py::pos_only(), py::kw_only(), stream,
      "Swaps the last two axes (ValueError for fewer than 2 dimensions).");
  m.def(
      "view",
      [](const ScalarOrArray& a, Dtype dtype, StreamOrDevice s) {
        return view(to_array(a.obj), dtype, s);
      },
      py::arg("a"), py::arg("dtype"), py::arg("stream") = py::none(), R"doc(
    The bytes of ``a`` read as ``dtype``; the last axis scales by the ratio of the item
    sizes.

    Raises:
        ValueError: The last axis cannot be split or merged evenly, or ``a`` is a scalar and
            the sizes differ.
  )doc");
  m.def(
      "meshgrid",
      [](py::args arrays, bool sparse, const std::string& indexing, StreamOrDevice s) {
        std::vector<array> xs;
        for (auto x : arrays) xs.push_back(to_array(x));
        return py::tuple(py::cast(meshgrid(xs, sparse, indexing, s)));
      },
      py::kw_only(), py::arg("sparse") = false, py::arg("indexing") = "xy", stream, R"doc(
    Coordinate grids from 1-D coordinate arrays: ``indexing="xy"`` (Cartesian, the default)
    or ``"ij"`` (matrix); ``sparse`` returns broadcastable arrays instead of full grids.
  )doc");

  m.def(
      "diagonal",
      [](const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
        return diagonal(a, offset, axis1, axis2, s);
      },
      py::arg("a"), py::arg("offset") = 0, py::arg("axis1") = 0, py::arg("axis2") = 1,
      py::arg("stream") = py::none(), R"doc(
    The ``offset``-th diagonal of the (axis1, axis2) planes, as the last axis of the result.
  )doc");
  m.def(
      "diag", [](const array& a, int k, StreamOrDevice s) { return diag(a, k, s); }, py::arg("a"),
      py::pos_only(), py::arg("k") = 0, py::kw_only(), stream, R"doc(
    For a 1-D array, the square matrix with ``a`` on its k-th diagonal; for a 2-D array, its
    k-th diagonal.
  )doc");
  m.def(
      "trace",
      [](const array& a, int offset, int axis1, int axis2, std::optional<Dtype> dtype,
         StreamOrDevice s) { return trace(a, offset, axis1, axis2, dtype, s); },
      py::arg("a"), py::pos_only(), py::arg("offset") = 0, py::arg("axis1") = 0,
      py::arg("axis2") = 1, py::arg("dtype") = py::none(), py::kw_only(), stream,
      "Sum along the ``offset``-th diagonal of the (axis1, axis2) planes.");
  m.def(
      "diff", [](const array& a, int n, int axis, StreamOrDevice s) { return diff(a, n, axis, s); },
      py::arg("a"), py::pos_only(), py::arg("n") = 1, py::arg("axis") = -1, py::kw_only(), stream,
      "The n-th discrete difference along ``axis``: ``a[1:] - a[:-1]``, n times.");

  m.def(
      "tri",
      [](int n, std::optional<int> mm, int k, std::optional<Dtype> dtype, StreamOrDevice s) {
        return tri(n, mm.value_or(n), k, dtype.value_or(float32), s);
      },
      py::arg("n"), py::arg("m") = py::none(), py::arg("k") = 0, py::arg("dtype") = py::none(),
      py::kw_only(), stream, "An n x m array with ones at and below the k-th diagonal.");
  for (auto [name, fn] : {std::pair{"bartlett", &bartlett}, std::pair{"blackman", &blackman},
                          std::pair{"hamming", &hamming}, std::pair{"hanning", &hanning}}) {
    m.def(
        name, [fn](int M, StreamOrDevice s) { return fn(M, s); }, py::arg("M"), py::kw_only(),
        stream, "A window of length M (NumPy's definition), float32.");
  }

  m.def(
      "count_nonzero",
      [](const array& a, const Axis& axis, bool keepdims, StreamOrDevice s) {
        if (std::holds_alternative<std::monostate>(axis)) return count_nonzero(a, keepdims, s);
        return count_nonzero(a, axes_of(axis, a), keepdims, s);
      },
      py::arg("a"), py::pos_only(), py::kw_only(), py::arg("axis") = py::none(),
      py::arg("keepdims") = false, stream, "Number of non-zero elements over the given axes.");
  m.def(
      "minmax",
      [](const array& a, const Axis& axis, bool keepdims, StreamOrDevice s) {
        auto r = minmax(
            a, std::holds_alternative<std::monostate>(axis) ? std::vector<int>{} : axes_of(axis, a),
            keepdims, s);
        return py::make_tuple(r[0], r[1]);
      },
      py::arg("a"), py::pos_only(), py::arg("axis") = py::none(), py::arg("keepdims") = false,
      py::kw_only(), stream, "The minimum and the maximum over the given axes, as a tuple.");
  const char* scan_doc =
      "Cumulative %s along ``axis`` (of the flattened array when None); ``reverse`` scans from "
      "the end, ``inclusive=False`` starts from the identity.";
  auto scan_text = [&](const char* what) {
    std::string d = scan_doc;
    return d.replace(d.find("%s"), 2, what);
  };
  m.def("cummax", &scan_cummax, py::arg("a"), py::pos_only(), py::arg("axis") = py::none(),
        py::kw_only(), py::arg("reverse") = false, py::arg("inclusive") = true, stream,
        scan_text("maximum").c_str());
  m.def("cummin", &scan_cummin, py::arg("a"), py::pos_only(), py::arg("axis") = py::none(),
        py::kw_only(), py::arg("reverse") = false, py::arg("inclusive") = true, stream,
        scan_text("minimum").c_str());
  m.def("logcumsumexp", &scan_logcumsumexp, py::arg("a"), py::pos_only(),
        py::arg("axis") = py::none(), py::kw_only(), py::arg("reverse") = false,
        py::arg("inclusive") = true, stream, scan_text("log-sum-exp (computed stably)").c_str());

  m.def(
      "tensordot",
      [](const array& a, const array& b, py::object axes, StreamOrDevice s) {
        if (PyLong_Check(axes.ptr())) return tensordot(a, b, axes.cast<int>(), s);
        auto pair = axes.cast<std::vector<py::object>>();
        if (pair.size() != 2) {
          throw std::invalid_argument("[tensordot] axes must be an int or a pair of axis lists.");
        }
        auto as_list = [](const py::object& o) {
          if (PyLong_Check(o.ptr())) return std::vector<int>{o.cast<int>()};
          return o.cast<std::vector<int>>();
        };
        return tensordot(a, b, as_list(pair[0]), as_list(pair[1]), s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::arg("axes") = 2, py::kw_only(), stream,
      R"doc(
    Contraction over axes: the last ``axes`` axes of ``a`` with the first ``axes`` of ``b``,
    or the axis lists ``axes = (axes_a, axes_b)`` in pairs.
  )doc");
  m.def(
      "vecdot",
      [](const array& a, const array& b, int axis, StreamOrDevice s) {
        return vecdot(a, b, axis, s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::kw_only(), py::arg("axis") = -1, stream,
      "``sum(conj(a) * b, axis)`` with broadcasting.");
  m.def(
      "kron", [](const array& a, const array& b, StreamOrDevice s) { return kron(a, b, s); },
      py::arg("a"), py::arg("b"), py::kw_only(), stream, "The Kronecker product of a and b.");
  m.def(
      "einsum",
      [](const std::string& subscripts, py::args operands, StreamOrDevice s) {
        std::vector<array> ops;
        for (auto x : operands) ops.push_back(to_array(x));
        return einsum(subscripts, ops, s);
      },
      py::arg("subscripts"), py::kw_only(), stream, R"doc(
    Einstein summation with NumPy's subscripts (``"ij,jk->ik"``, ``"...ij->...ji"``, implicit
    outputs), contracted pairwise along NumPy's greedy path.

    Raises:
        ValueError: Malformed subscripts, or index sizes that disagree.
  )doc");
  m.def(
      "einsum_path",
      [](const std::string& subscripts, py::args operands) {
        std::vector<array> ops;
        for (auto x : operands) ops.push_back(to_array(x));
        auto [path, report] = einsum_path(subscripts, ops);
        py::list steps;
        for (const auto& step : path) {
          py::tuple t(step.size());
          for (size_t i = 0; i < step.size(); ++i) t[i] = step[i];
          steps.append(t);
        }
        return py::make_tuple(steps, report);
      },
      py::arg("subscripts"), R"doc(
    The pairwise contraction path of :func:`einsum` (NumPy's ``(path, report)`` format).
  )doc");
  m.def(
      "hadamard_transform",
      [](const array& a, std::optional<float> scale, StreamOrDevice s) {
        return hadamard_transform(a, scale, s);
      },
      py::arg("a"), py::arg("scale") = py::none(), py::arg("stream") = py::none(), R"doc(
    The Walsh-Hadamard transform along the last axis, times ``scale`` (``1/sqrt(n)`` by
    default). The last axis must have length ``m * 2^k`` with ``m`` in (1, 12, 20, 28).
  )doc");
  m.def(
      "gather_mm",
      [](const array& a, const array& b, std::optional<array> lhs, std::optional<array> rhs,
         bool sorted, StreamOrDevice s) { return gather_mm(a, b, lhs, rhs, sorted, s); },
      py::arg("a"), py::arg("b"), py::pos_only(), py::arg("lhs_indices") = py::none(),
      py::arg("rhs_indices") = py::none(), py::kw_only(), py::arg("sorted_indices") = false, stream,
      R"doc(
    Matrix products of the matrices of ``a`` and ``b`` picked by flat indices into their
    batch axes (all of them, in order, when not given); the index arrays broadcast.
  )doc");
  m.def(
      "segmented_mm",
      [](const array& a, const array& b, const array& segments, StreamOrDevice s) {
        return segmented_mm(a, b, segments, s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::arg("segments"), py::kw_only(), stream,
      "``a[:, s:e] @ b[s:e, :]`` for each ``[s, e)`` pair in ``segments`` (shape (..., 2)).");
  m.def(
      "block_masked_mm",
      [](const array& a, const array& b, int block_size, std::optional<array> mask_out,
         std::optional<array> mask_lhs, std::optional<array> mask_rhs, StreamOrDevice s) {
        return block_masked_mm(a, b, block_size, mask_out, mask_lhs, mask_rhs, s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::arg("block_size") = 64,
      py::arg("mask_out") = py::none(), py::arg("mask_lhs") = py::none(),
      py::arg("mask_rhs") = py::none(), py::kw_only(), stream, R"doc(
    Matrix product with block masks of block size 32 or 64 on the output and the inputs:
    bool masks select blocks, floating masks also scale them.
  )doc");
  m.def(
      "to_fp8", [](const array& a, StreamOrDevice s) { return to_fp8(a, s); }, py::arg("x"),
      py::kw_only(), stream,
      "Float to 8-bit e4m3 bits (uint8): round to nearest even, saturating at +-448.");
  m.def(
      "from_fp8",
      [](const array& a, Dtype dtype, StreamOrDevice s) { return from_fp8(a, dtype, s); },
      py::arg("x"), py::arg("dtype") = bfloat16, py::kw_only(), stream,
      "8-bit e4m3 bits (uint8) to ``dtype``.");
  m.def(
      "depends",
      [](py::object inputs, py::object deps) -> py::object {
        auto outs = depends(array_list(inputs), array_list(deps));
        if (py::isinstance<array>(inputs)) return py::cast(outs[0]);
        return py::cast(outs);
      },
      py::arg("inputs"), py::arg("dependencies"), R"doc(
    ``inputs`` as new arrays whose evaluation also waits for ``dependencies``.
  )doc");
}

}  // namespace kiln::python
