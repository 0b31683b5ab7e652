// Layout ops: astype, copy, contiguous, as_strided, reshape, flatten, squeeze, expand_dims,
// transpose, swapaxes, moveaxis, broadcast_to, broadcast_arrays, slice, slice_update,
// split, concatenate, stack, tile, repeat, pad.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "convert.h"
#include "helpers.h"
#include "ops_common.h"

namespace kiln::python {

namespace {

Shape as_shape(const std::vector<int>& v) {
  return Shape(v.begin(), v.end());
}

// NumPy's pad_width: n, (before, after), or one (before, after) or (n,) per axis.
std::vector<std::pair<int, int>> pad_widths(py::handle w, int ndim) {
  auto pair_of = [](py::handle p) -> std::pair<int, int> {
    if (PyLong_Check(p.ptr())) {
      int n = p.cast<int>();
      return {n, n};
    }
    auto v = p.cast<std::vector<int>>();
    if (v.size() == 1) return {v[0], v[0]};
    if (v.size() == 2) return {v[0], v[1]};
    throw std::invalid_argument(
        msg("[pad] Each pad width must be n, (n,) or (before, after); got ", v.size(), " values."));
  };
  if (PyLong_Check(w.ptr())) return std::vector<std::pair<int, int>>(ndim, pair_of(w));
  auto seq = w.cast<py::sequence>();
  bool flat = seq.size() > 0 && PyLong_Check(py::object(seq[0]).ptr());
  if (flat) return std::vector<std::pair<int, int>>(ndim, pair_of(w));
  std::vector<std::pair<int, int>> out;
  for (auto item : seq) out.push_back(pair_of(item));
  if (out.size() == 1) out.resize(ndim, out[0]);
  if (static_cast<int>(out.size()) != ndim) {
    throw std::invalid_argument(
        msg("[pad] Got ", out.size(), " pad widths for an array with ", ndim, " dimensions."));
  }
  return out;
}

}  // namespace

void init_ops_layout(py::module_& m) {
  auto stream = py::arg("stream") = py::none();

  m.def(
      "astype", [](const array& a, Dtype dtype, StreamOrDevice s) { return astype(a, dtype, s); },
      py::arg("a"), py::pos_only(), py::arg("dtype"), py::kw_only(), stream, R"doc(
    ``a`` converted to ``dtype`` with NumPy's casting: float to integer truncates, complex to
    real keeps the real part, anything to bool tests against zero.

    Args:
        a (array): Input array.
        dtype (Dtype): The new element type.

    Returns:
        array: The converted array (``a`` itself when it already has ``dtype``).
  )doc");
  m.def(
      "copy", [](const array& a, StreamOrDevice s) { return copy(a, s); }, py::arg("a"),
      py::pos_only(), py::kw_only(), stream, R"doc(
    A copy of ``a`` with its own buffer.

    Args:
        a (array): Input array.

    Returns:
        array: An array of ``a``'s shape, dtype and values, in row-major order.
  )doc");
  m.def(
      "contiguous",
      [](const array& a, bool allow_col_major, StreamOrDevice s) {
        return contiguous(a, allow_col_major, s);
      },
      py::arg("a"), py::pos_only(), py::arg("allow_col_major") = false, py::kw_only(), stream,
      R"doc(
    ``a`` in row-major (C) order, copied only if it is not already; with
    ``allow_col_major``, column-major arrays are kept as they are too.

    Args:
        a (array): Input array.
        allow_col_major (bool): Accept column-major (Fortran) order too.

    Returns:
        array: ``a``'s values in a contiguous buffer.
  )doc");
  m.def(
      "as_strided",
      [](const array& a, std::optional<std::vector<int>> shape,
         std::optional<std::vector<int64_t>> strides, size_t offset, StreamOrDevice s) {
        Shape sh = shape ? as_shape(*shape) : a.shape();
        Strides st =
            strides ? Strides(strides->begin(), strides->end()) : array::row_major_strides(sh);
        return as_strided(a, sh, st, offset, s);
      },
      py::arg("a"), py::pos_only(), py::arg("shape") = py::none(), py::arg("strides") = py::none(),
      py::arg("offset") = 0, py::kw_only(), stream, R"doc(
    A view of ``a``'s buffer (in row-major order) with the given shape, strides and offset,
    in elements. Unchecked beyond non-negative shapes: like NumPy's ``as_strided``, the
    caller keeps the view inside the buffer.

    Args:
        a (array): Input array.
        shape (Sequence[int], optional): The view's shape; ``a.shape`` by default.
        strides (Sequence[int], optional): Strides in elements; row-major for ``shape`` by
            default.
        offset (int): Offset of the first element, in elements.
  )doc");

  m.def(
      "reshape",
      [](const array& a, const ShapeArg& shape, StreamOrDevice s) {
        return reshape(a, to_shape(shape), s);
      },
      py::arg("a"), py::pos_only(), py::arg("shape"), py::kw_only(), stream, R"doc(
    The same elements with a new shape (a view when the layout allows).

    Args:
        a (array): Input array.
        shape (Sequence[int]): The new shape; one dimension may be -1 (inferred).

    Returns:
        array: The reshaped array.

    Raises:
        ValueError: The sizes differ, or more than one dimension is -1.
  )doc");
  m.def(
      "flatten",
      [](const array& a, int start, int end, StreamOrDevice s) {
        return flatten(a, start, end, s);
      },
      py::arg("a"), py::pos_only(), py::arg("start_axis") = 0, py::arg("end_axis") = -1,
      py::kw_only(), stream, R"doc(
    Merges the axes ``start_axis`` to ``end_axis`` (inclusive) into one.

    Args:
        a (array): Input array.
        start_axis (int): The first axis to merge.
        end_axis (int): The last axis to merge.

    Returns:
        array: The flattened array (1-d with the defaults; a 0-d input gives shape (1,)).
  )doc");
  m.def("squeeze", &squeeze_axes, py::arg("a"), py::pos_only(), py::arg("axis") = py::none(),
        py::kw_only(), stream, R"doc(
    Removes size-1 axes: all of them, or the given ones.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to remove.

    Returns:
        array: The squeezed array.

    Raises:
        ValueError: A given axis is out of bounds or does not have size 1.
  )doc");
  m.def(
      "expand_dims",
      [](const array& a, const std::variant<int, std::vector<int>>& axis, StreamOrDevice s) {
        if (auto* i = std::get_if<int>(&axis)) return expand_dims(a, *i, s);
        return expand_dims(a, std::get<std::vector<int>>(axis), s);
      },
      py::arg("a"), py::pos_only(), py::arg("axis"), py::kw_only(), stream, R"doc(
    Inserts size-1 axes at the given positions of the result.

    Args:
        a (array): Input array.
        axis (int or Sequence[int]): Positions of the new axes in the result.

    Returns:
        array: The array with ``a.ndim + len(axis)`` dimensions.
  )doc");
  m.def(
      "transpose",
      [](const array& a, std::optional<std::vector<int>> axes, StreamOrDevice s) {
        return axes ? transpose(a, *axes, s) : transpose(a, s);
      },
      py::arg("a"), py::pos_only(), py::arg("axes") = py::none(), py::kw_only(), stream, R"doc(
    Permutes the axes (a view).

    Args:
        a (array): Input array.
        axes (Sequence[int], optional): The new order of the axes; reversed by default.

    Returns:
        array: The transposed array.

    Raises:
        ValueError: ``axes`` is not a permutation of ``range(a.ndim)``.
  )doc");
  m.def(
      "swapaxes",
      [](const array& a, int a1, int a2, StreamOrDevice s) { return swapaxes(a, a1, a2, s); },
      py::arg("a"), py::pos_only(), py::arg("axis1"), py::arg("axis2"), py::kw_only(), stream,
      R"doc(
    Swaps two axes (a view).

    Args:
        a (array): Input array.
        axis1 (int): First axis (negative counts from the end).
        axis2 (int): Second axis.

    Returns:
        array: The array with the two axes exchanged.

    Raises:
        ValueError: An axis is out of bounds.
  )doc");
  m.def(
      "moveaxis",
      [](const array& a, int src, int dst, StreamOrDevice s) { return moveaxis(a, src, dst, s); },
      py::arg("a"), py::pos_only(), py::arg("source"), py::arg("destination"), py::kw_only(),
      stream, R"doc(
    Moves axis ``source`` to position ``destination``, keeping the order of the others (a view).

    Args:
        a (array): Input array.
        source (int): The axis to move (negative counts from the end).
        destination (int): Its position in the result.

    Returns:
        array: The array with the axis moved.

    Raises:
        ValueError: An axis is out of bounds.
  )doc");

  m.def(
      "broadcast_to",
      [](const ScalarOrArray& a, const ShapeArg& shape, StreamOrDevice s) {
        return broadcast_to(to_array(a.obj), to_shape(shape), s);
      },
      py::arg("a"), py::pos_only(), py::arg("shape"), py::kw_only(), stream, R"doc(
    ``a`` broadcast to ``shape`` with NumPy's rules (a view with zero strides).

    Raises:
        ValueError: ``a`` does not broadcast to ``shape``.
  )doc");
  m.def(
      "broadcast_arrays",
      [](py::args arrays, StreamOrDevice s) {
        std::vector<array> in;
        for (auto a : arrays) in.push_back(to_array(a));
        return broadcast_arrays(in, s);
      },
      stream, R"doc(
    broadcast_arrays(*arrays, stream=None)

    The arrays broadcast to their common shape (views).

    Returns:
        list[array]: One array per input.

    Raises:
        ValueError: The shapes do not broadcast.
  )doc");

  m.def(
      "slice",
      [](const array& a, const ScalarOrArray& start, const std::vector<int>& axes,
         const std::vector<int>& slice_size, StreamOrDevice s) {
        return dynamic_slice(a, to_array(start.obj), axes, as_shape(slice_size), s);
      },
      py::arg("a"), py::arg("start_indices"), py::arg("axes"), py::arg("slice_size"), py::kw_only(),
      stream, R"doc(
    The block of shape ``slice_size`` starting at ``start_indices`` along ``axes`` (and at 0
    along the other axes); the start indices are an array, so they may be computed in the
    graph. Starts are clamped so the block fits.

    Args:
        a (array): Input array.
        start_indices (array): One start per entry of ``axes``.
        axes (Sequence[int]): The axes the starts apply to.
        slice_size (Sequence[int]): The size of the block along every axis of ``a``.

    Returns:
        array: The block.
  )doc");
  m.def(
      "slice_update",
      [](const array& src, const ScalarOrArray& update, const ScalarOrArray& start,
         const std::vector<int>& axes, StreamOrDevice s) {
        return dynamic_slice_update(src, to_array(update.obj, src.dtype()), to_array(start.obj),
                                    axes, s);
      },
      py::arg("a"), py::arg("update"), py::arg("start_indices"), py::arg("axes"), py::kw_only(),
      stream, R"doc(
    ``a`` with the block of ``update``'s shape starting at ``start_indices`` along ``axes``
    replaced by ``update`` (cast to ``a``'s dtype). See :func:`slice`.

    Args:
        a (array): Input array.
        update (array): The new block.
        start_indices (array): One start per entry of ``axes``.
        axes (Sequence[int]): The axes the starts apply to.

    Returns:
        array: A new array; ``a`` is unchanged.
  )doc");

  m.def("split", &split_by, py::arg("a"), py::pos_only(), py::arg("indices_or_sections"),
        py::arg("axis") = 0, py::kw_only(), stream, R"doc(
    Splits ``a`` along ``axis``.

    Args:
        a (array): Input array.
        indices_or_sections (int or Sequence[int]): A number of equal parts, or the indices
            before which to split.
        axis (int): The axis to split.

    Returns:
        list[array]: The parts (views).

    Raises:
        ValueError: The number of parts does not divide the axis.
  )doc");
  m.def(
      "concatenate",
      [](const std::vector<array>& arrays, std::optional<int> axis, StreamOrDevice s) {
        return axis ? concatenate(arrays, *axis, s) : concatenate(arrays, s);
      },
      py::arg("arrays"), py::arg("axis") = 0, py::kw_only(), stream, R"doc(
    Joins arrays along an existing axis; dtypes promote.

    Args:
        arrays (list[array]): The arrays; their shapes must agree except along ``axis``.
        axis (int, optional): The axis; None flattens the arrays first.

    Returns:
        array: The joined array.

    Raises:
        ValueError: No arrays, or the shapes do not agree.
  )doc");
  m.def(
      "stack",
      [](const std::vector<array>& arrays, int axis, StreamOrDevice s) {
        return stack(arrays, axis, s);
      },
      py::arg("arrays"), py::arg("axis") = 0, py::kw_only(), stream, R"doc(
    Joins arrays of equal shapes along a new axis at position ``axis``; dtypes promote.

    Args:
        arrays (list[array]): The arrays, all of one shape.
        axis (int): Position of the new axis in the result.

    Returns:
        array: Shape ``shape[:axis] + (len(arrays),) + shape[axis:]``.

    Raises:
        ValueError: No arrays, or different shapes.
  )doc");
  m.def(
      "tile",
      [](const array& a, const std::variant<int, std::vector<int>>& reps, StreamOrDevice s) {
        if (auto* n = std::get_if<int>(&reps)) return tile(a, {*n}, s);
        return tile(a, std::get<std::vector<int>>(reps), s);
      },
      py::arg("a"), py::pos_only(), py::arg("reps"), py::kw_only(), stream, R"doc(
    ``a`` repeated ``reps`` times along each axis (NumPy's tile).

    Args:
        a (array): Input array.
        reps (int or Sequence[int]): Repetitions per axis (aligned to the last axes).

    Returns:
        array: An array of ``a``'s dtype, each dimension multiplied by its repetitions.

    Raises:
        ValueError: A negative repetition.
  )doc");
  m.def(
      "repeat",
      [](const array& a, int repeats, std::optional<int> axis, StreamOrDevice s) {
        return axis ? repeat(a, repeats, *axis, s) : repeat(a, repeats, s);
      },
      py::arg("array"), py::pos_only(), py::arg("repeats"), py::arg("axis") = py::none(),
      py::kw_only(), stream, R"doc(
    Each element repeated ``repeats`` times along ``axis`` (of the flattened array when
    ``axis`` is None).

    Args:
        array (array): Input array.
        repeats (int): Repetitions of each element.
        axis (int, optional): The axis.

    Returns:
        array: The repeated array (``axis`` is ``repeats`` times longer).

    Raises:
        ValueError: A negative ``repeats`` or an axis out of bounds.
  )doc");
  m.def(
      "pad",
      [](const array& a, py::handle pad_width, const std::string& mode, const ScalarOrArray& value,
         StreamOrDevice s) {
        return pad(a, pad_widths(pad_width, static_cast<int>(a.ndim())), mode,
                   to_array(value.obj, a.dtype()), s);
      },
      py::arg("a"), py::pos_only(), py::arg("pad_width"), py::arg("mode") = "constant",
      py::arg("constant_values") = 0, py::kw_only(), stream, R"doc(
    ``a`` padded along each axis: with a constant, the border value (``"edge"``), or the
    mirrored array without (``"reflect"``) or with (``"symmetric"``) its border, as NumPy.

    Args:
        a (array): Input array.
        pad_width (int, tuple or list of tuples): ``n``, ``(before, after)`` for every axis,
            or one ``(before, after)`` per axis.
        mode (str): ``"constant"``, ``"edge"``, ``"reflect"`` or ``"symmetric"``.
        constant_values (array or scalar): The padding value.

    Raises:
        ValueError: Negative or mismatched widths, an unknown mode, or a non-constant pad of
            an empty axis.
  )doc");
}

}  // namespace kiln::python
