// Selection and search ops: partition, argpartition, topk, median, searchsorted, unique.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "convert.h"
#include "helpers.h"
#include "ops_common.h"

namespace kiln::python {

void init_ops_sort(py::module_& m) {
  auto stream = py::arg("stream") = py::none();

  m.def(
      "partition",
      [](const array& a, int kth, std::optional<int> axis, StreamOrDevice s) {
        return axis ? partition(a, kth, *axis, s) : partition(a, kth, s);
      },
      py::arg("a"), py::pos_only(), py::arg("kth"), py::arg("axis") = -1, py::kw_only(), stream,
      R"doc(
    A partitioned copy of the array: the element of sorted rank ``kth`` lands at position
    ``kth`` along ``axis``, smaller elements before it and larger ones after it (NaN orders
    last, as in ``sort``).

    Within each side the elements keep their order (a stable three-way partition), the same
    on every device.

    Args:
        a (array): Input array (not complex).
        kth (int): The sorted rank, in ``[-n, n)``; negative counts from the end.
        axis (int or None, optional): The axis; the flattened array when None. Default: -1.

    Returns:
        array: The partitioned array, of ``a``'s dtype.

    Raises:
        ValueError: ``kth`` is out of range.
        IndexError: ``axis`` is out of bounds.
  )doc");
  m.def(
      "argpartition",
      [](const array& a, int kth, std::optional<int> axis, StreamOrDevice s) {
        return axis ? argpartition(a, kth, *axis, s) : argpartition(a, kth, s);
      },
      py::arg("a"), py::pos_only(), py::arg("kth"), py::arg("axis") = -1, py::kw_only(), stream,
      R"doc(
    The ``uint32`` indices along ``axis`` that partition the array as ``partition`` does.

    Args:
        a (array): Input array (not complex).
        kth (int): The sorted rank, in ``[-n, n)``; negative counts from the end.
        axis (int or None, optional): The axis; the flattened array when None. Default: -1.

    Returns:
        array: The ``uint32`` indices.

    Raises:
        ValueError: ``kth`` is out of range.
        IndexError: ``axis`` is out of bounds.
  )doc");
  m.def(
      "topk",
      [](const array& a, int k, std::optional<int> axis, StreamOrDevice s) {
        return axis ? topk(a, k, *axis, s) : topk(a, k, s);
      },
      py::arg("a"), py::pos_only(), py::arg("k"), py::arg("axis") = -1, py::kw_only(), stream,
      R"doc(
    The ``k`` largest elements along ``axis`` (NaN counts as the largest).

    They are not sorted: they come in the order of the last ``k`` positions of
    ``partition(a, n - k, axis)``.

    Args:
        a (array): Input array (not complex).
        k (int): How many, in ``[0, n]``.
        axis (int or None, optional): The axis; the flattened array when None. Default: -1.

    Returns:
        array: The ``k`` largest elements, of ``a``'s dtype.

    Raises:
        ValueError: ``k`` is out of range.
        IndexError: ``axis`` is out of bounds.
  )doc");
  m.def(
      "median",
      [](const array& a, const Axis& axis, bool keepdims, StreamOrDevice s) {
        if (auto* i = std::get_if<int>(&axis)) return median(a, *i, keepdims, s);
        if (auto* v = std::get_if<std::vector<int>>(&axis)) return median(a, *v, keepdims, s);
        return median(a, keepdims, s);
      },
      py::arg("a"), py::pos_only(), py::arg("axis") = py::none(), py::arg("keepdims") = false,
      py::kw_only(), stream, R"doc(
    The median over the given axes: the middle element of the sorted values, or the mean of
    the two middle ones; NaN where the values hold a NaN.

    Floating inputs keep their dtype; integer and bool inputs give float32.

    Args:
        a (array): Input array (not complex).
        axis (int or Sequence[int], optional): The axes to reduce; all by default.
        keepdims (bool, optional): Keep the reduced axes with size 1. Default: False.

    Returns:
        array: The medians.

    Raises:
        ValueError: The reduction is empty, or an axis is repeated.
        IndexError: An axis is out of bounds.
  )doc");
  m.def(
      "searchsorted",
      [](const array& sorted_sequence, const array& values, const std::string& side,
         StreamOrDevice s) { return searchsorted(sorted_sequence, values, side, s); },
      py::arg("sorted_sequence"), py::arg("values"), py::pos_only(), py::arg("side") = "left",
      py::kw_only(), stream, R"doc(
    The indices where ``values`` would be inserted into ``sorted_sequence`` to keep it sorted.

    Args:
        sorted_sequence (array): A 1-D array sorted in ascending order (NaN last).
        values (array): The values to insert, of any shape.
        side (str, optional): ``'left'``: the number of elements strictly before the value;
          ``'right'``: the number of elements not after it. Default: ``'left'``.

    Returns:
        array: ``uint32`` indices in ``[0, sorted_sequence.size]``, of ``values``' shape.

    Raises:
        ValueError: ``sorted_sequence`` is not 1-D, or ``side`` is neither 'left' nor 'right'.
  )doc");
  m.def(
      "unique",
      [](const array& a, int size, bool return_index, bool return_inverse, bool return_counts,
         const py::object& fill_value, StreamOrDevice s) -> py::object {
        std::optional<array> fill;
        if (!fill_value.is_none()) fill = to_array(fill_value, a.dtype());
        auto r = unique(a, size, return_index, return_inverse, return_counts, fill, s);
        if (r.size() == 1) return py::cast(r[0]);
        py::tuple t(r.size());
        for (size_t i = 0; i < r.size(); ++i) t[i] = py::cast(r[i]);
        return t;
      },
      py::arg("a"), py::pos_only(), py::arg("size"), py::arg("return_index") = false,
      py::arg("return_inverse") = false, py::arg("return_counts") = false,
      py::arg("fill_value") = py::none(), py::kw_only(), stream, R"doc(
    The sorted unique elements of the flattened array, in exactly ``size`` entries.

    The output's shape does not depend on the values: past the last unique element the
    entries hold ``fill_value`` and count 0, and when there are more unique elements than
    ``size``, the smallest ``size`` are kept (``inverse`` then clamps to the last entry and the
    dropped elements' counts are gone). Equal values (``-0.0`` and ``0.0`` alike) form one
    entry; every NaN is its own.

    Args:
        a (array): Input array (not complex).
        size (int): The number of entries.
        return_index (bool, optional): Also return the ``uint32`` index in the flattened ``a``
          of each entry's first occurrence (the first entry's for the padding).
        return_inverse (bool, optional): Also return the ``uint32`` entry of each element of
          ``a`` (``a``'s shape).
        return_counts (bool, optional): Also return the ``int32`` number of occurrences.
        fill_value (scalar or array, optional): The padding, cast to ``a``'s dtype; the first
          entry when None.

    Returns:
        array or tuple(array, ...): The values, followed by the requested index, inverse and
        counts, in that order.

    Raises:
        ValueError: ``size`` is negative, ``fill_value`` has more than one element, or ``a`` is
          empty with a non-zero ``size`` and no ``fill_value``.
  )doc");
}

}  // namespace kiln::python
