// Indexing ops: take, take_along_axis, put_along_axis, gather, scatter*, sort, argsort.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "convert.h"
#include "helpers.h"
#include "ops_common.h"

namespace kiln::python {

namespace {

array flat(const array& a, StreamOrDevice s) {
  return reshape(a, {-1}, s);
}

using Scatter = array (*)(const array&, const std::vector<array>&, const array&,
                          const std::vector<int>&, StreamOrDevice);

}  // namespace

void init_ops_indexing(py::module_& m) {
  auto stream = py::arg("stream") = py::none();

  m.def(
      "take",
      [](const array& a, py::handle indices, std::optional<int> axis, StreamOrDevice s) {
        // A Python int drops the axis; an array (even of one element) keeps its shape.
        if (PyLong_Check(indices.ptr()) && !PyBool_Check(indices.ptr())) {
          int i = indices.cast<int>();
          return axis ? take(a, i, *axis, s) : take(a, array(i), s);
        }
        array idx = to_array(indices);
        return axis ? take(a, idx, *axis, s) : take(a, idx, s);
      },
      py::arg("a"), py::pos_only(), py::arg("indices"), py::arg("axis") = py::none(), py::kw_only(),
      stream, R"doc(
    Elements (or slices along ``axis``) at ``indices``; negative indices count from the end.

    Args:
        a (array): Input array.
        indices (int or array): Integer indices.
        axis (int, optional): The axis to index; the flattened array when None.

    Returns:
        array: Shape ``indices.shape`` without an axis, else
        ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``.
  )doc");
  m.def(
      "take_along_axis",
      [](const array& a, const array& indices, std::optional<int> axis, StreamOrDevice s) {
        return axis ? take_along_axis(a, indices, *axis, s)
                    : take_along_axis(flat(a, s), flat(indices, s), 0, s);
      },
      py::arg("a"), py::pos_only(), py::arg("indices"), py::arg("axis") = py::none(), py::kw_only(),
      stream, R"doc(
    NumPy's take_along_axis: ``out[..., i, ...] = a[..., indices[..., i, ...], ...]`` along
    ``axis``; ``indices`` broadcasts against ``a`` on the other axes. With ``axis=None``,
    both are flattened.

    Args:
        a (array): Input array.
        indices (array): Integer indices, with ``a.ndim`` dimensions.
        axis (int, optional): The axis.

    Returns:
        array: The broadcast shape, with ``indices``'s extent along ``axis``.

    Raises:
        ValueError: ``indices`` is not integral, has the wrong number of dimensions, or
            does not broadcast.
  )doc");
  m.def(
      "put_along_axis",
      [](const array& a, const array& indices, const ScalarOrArray& values, std::optional<int> axis,
         StreamOrDevice s) {
        array v = to_array(values.obj, a.dtype());
        if (axis) return put_along_axis(a, indices, v, *axis, s);
        array fi = flat(indices, s);
        return reshape(
            put_along_axis(flat(a, s), fi, flat(broadcast_to(v, indices.shape(), s), s), 0, s),
            a.shape(), s);
      },
      py::arg("a"), py::pos_only(), py::arg("indices"), py::arg("values"),
      py::arg("axis") = py::none(), py::kw_only(), stream, R"doc(
    ``a`` with ``values`` written at ``indices`` along ``axis`` (NumPy's put_along_axis);
    with ``axis=None``, on the flattened array.

    Args:
        a (array): Input array.
        indices (array): Integer indices, with ``a.ndim`` dimensions.
        values (array or scalar): Values broadcast to ``indices``'s shape, cast to ``a``'s dtype.
        axis (int, optional): The axis.

    Returns:
        array: A new array of ``a``'s shape and dtype; ``a`` is unchanged.
  )doc");

  m.def(
      "gather",
      [](const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
         const std::vector<int>& slice_sizes, StreamOrDevice s) {
        return gather(a, indices, axes, Shape(slice_sizes.begin(), slice_sizes.end()), s);
      },
      py::arg("a"), py::pos_only(), py::arg("indices"), py::arg("axes"), py::arg("slice_sizes"),
      py::kw_only(), stream, R"doc(
    General gather: ``indices[i]`` indexes axis ``axes[i]`` of ``a`` (the index arrays
    broadcast together); ``slice_sizes`` gives the extent taken along every axis of ``a``.

    Returns:
        array: Shape ``broadcast(indices).shape + slice_sizes``.
  )doc");
  auto def_scatter = [&](const char* name, Scatter fn, const char* combine) {
    m.def(
        name,
        [fn](const array& a, const std::vector<array>& indices, const ScalarOrArray& updates,
             const std::vector<int>& axes, StreamOrDevice s) {
          return fn(a, indices, to_array(updates.obj, a.dtype()), axes, s);
        },
        py::arg("a"), py::pos_only(), py::arg("indices"), py::arg("updates"), py::arg("axes"),
        py::kw_only(), py::arg("stream") = py::none(),
        (std::string("General scatter, the inverse of :func:`gather`: ``updates`` (shape: the "
                     "broadcast index shape + one slice shape of ``a.ndim`` dimensions) is written "
                     "into ``a`` at ``indices`` along ``axes``; ") +
         combine + ".\n")
            .c_str());
  };
  def_scatter("scatter", &scatter,
              "with repeated indices, the last index position wins (as NumPy)");
  def_scatter("scatter_add", &scatter_add, "repeated indices add up");
  def_scatter("scatter_prod", &scatter_prod, "repeated indices multiply");
  def_scatter("scatter_max", &scatter_max, "repeated indices keep the maximum");
  def_scatter("scatter_min", &scatter_min, "repeated indices keep the minimum");

  m.def(
      "sort",
      [](const array& a, std::optional<int> axis, StreamOrDevice s) {
        return axis ? sort(a, *axis, s) : sort(a, s);
      },
      py::arg("a"), py::pos_only(), py::arg("axis") = -1, py::kw_only(), stream, R"doc(
    A sorted copy along ``axis`` (of the flattened array when None); stable.

    Args:
        a (array): Input array (not complex).
        axis (int, optional): The axis; -1 by default.

    Returns:
        array: The sorted values, of ``a``'s dtype.
  )doc");
  m.def(
      "argsort",
      [](const array& a, std::optional<int> axis, StreamOrDevice s) {
        return axis ? argsort(a, *axis, s) : argsort(a, s);
      },
      py::arg("a"), py::pos_only(), py::arg("axis") = -1, py::kw_only(), stream, R"doc(
    The ``uint32`` indices that sort ``a`` along ``axis`` (of the flattened array when None);
    stable.

    Args:
        a (array): Input array (not complex).
        axis (int, optional): The axis; -1 by default.

    Returns:
        array: ``uint32`` indices, of the shape of ``a`` (or ``(a.size,)``).
  )doc");
}

}  // namespace kiln::python
