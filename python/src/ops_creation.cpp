// Creation ops: arange, linspace, full, zeros, ones, *_like, eye, identity, tril, triu.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "convert.h"
#include "helpers.h"
#include "ops_common.h"

namespace kiln::python {

namespace {

// An arange bound: a Python number (or anything with __float__). `all_int` is cleared unless
// it is an integer, which decides the default dtype.
double number(py::handle h, const char* what, bool& all_int) {
  if (PyBool_Check(h.ptr()) || !(PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) ||
                                 PyIndex_Check(h.ptr()) || py::hasattr(h, "__float__"))) {
    throw py::type_error(
        msg("[arange] ", what, " must be an int or a float; got ", Py_TYPE(h.ptr())->tp_name, "."));
  }
  all_int &= PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr());
  return h.cast<double>();
}

}  // namespace

void init_ops_creation(py::module_& m) {
  auto stream = py::arg("stream") = py::none();

  m.def(
      "arange",
      [](py::args args, py::kwargs kwargs) {
        // MLX's signature, arange(start, stop, step, dtype, *, stream), where a lone positional
        // value or stop= alone is the stop, and start= without stop is an error.
        static const char* names[] = {"start", "stop", "step", "dtype"};
        if (args.size() > 4) throw py::type_error("[arange] Takes at most 4 positional arguments.");
        py::object v[4] = {py::none(), py::none(), py::none(), py::none()};
        for (size_t i = 0; i < args.size(); ++i) v[i] = args[i];
        StreamOrDevice s;
        bool start_by_name = false;
        for (auto [k, val] : kwargs) {
          std::string key = py::str(k);
          if (key == "stream") {
            if (!val.is_none()) s = val.cast<StreamOrDevice>();
            continue;
          }
          int at = -1;
          for (int i = 0; i < 4; ++i)
            if (key == names[i]) at = i;
          if (at < 0) throw py::type_error("[arange] Unexpected keyword argument '" + key + "'.");
          if (static_cast<size_t>(at) < args.size()) {
            throw py::type_error("[arange] Got multiple values for argument '" + key + "'.");
          }
          v[at] = py::reinterpret_borrow<py::object>(val);
          start_by_name |= at == 0;
        }
        if (v[1].is_none() && (start_by_name || v[0].is_none())) {
          throw py::type_error(
              "[arange] Needs a stop value: arange(stop) or "
              "arange(start, stop, step).");
        }
        bool all_int = true;
        double start = 0, end;
        if (v[1].is_none()) {
          end = number(v[0], "stop", all_int);
        } else {
          if (!v[0].is_none()) start = number(v[0], "start", all_int);
          end = number(v[1], "stop", all_int);
        }
        double by = v[2].is_none() ? 1.0 : number(v[2], "step", all_int);
        // Integer bounds beyond int32 widen the inferred dtype to int64, as mx.array does.
        auto fits = [](double x) { return x >= -2147483648.0 && x <= 2147483647.0; };
        Dtype inferred = all_int ? (fits(start) && fits(end) && fits(by) ? int32 : int64) : float32;
        Dtype dtype = v[3].is_none() ? inferred : v[3].cast<Dtype>();
        return arange(start, end, by, dtype, s);
      },
      R"doc(
    Evenly spaced values in ``[start, stop)``: ``arange(stop)`` or ``arange(start, stop, step)``.

    Args:
        start (int or float): The first value (or, alone, the stop; the start is then 0).
        stop (int or float, optional): The end, excluded.
        step (int or float, optional): The spacing; 1 by default.
        dtype (Dtype, optional): int32 when every bound is an int, else float32.

    Returns:
        array: The 1-d array of ``ceil((stop - start) / step)`` values (none if negative).

    Raises:
        ValueError: ``step`` is zero or not finite, or ``dtype`` is ``bool_``.
  )doc");

  m.def(
      "linspace",
      [](double start, double stop, int num, bool endpoint, Dtype dtype, StreamOrDevice s) {
        if (endpoint || num <= 0) return linspace(start, stop, num, dtype, s);
        // [start, stop): the points of num + 1 steps but the last.
        double step = (stop - start) / num;
        return linspace(start, start + step * (num - 1), num, dtype, s);
      },
      py::arg("start"), py::arg("stop"), py::arg("num") = 50, py::arg("endpoint") = true,
      py::arg("dtype") = float32, py::arg("stream") = py::none(), R"doc(
    ``num`` evenly spaced values over ``[start, stop]`` (``[start, stop)`` with
    ``endpoint=False``).

    Args:
        start (float): The first value.
        stop (float): The last value.
        num (int): How many values.
        endpoint (bool): Include ``stop`` (the default).
        dtype (Dtype): The element type (float32).

    Returns:
        array: A 1-d array of ``num`` values.

    Raises:
        ValueError: ``num`` is negative.
  )doc");

  m.def(
      "full",
      [](const ShapeArg& shape, const ScalarOrArray& vals, std::optional<Dtype> dtype,
         StreamOrDevice s) {
        array v = to_array(vals.obj, dtype);
        return dtype ? full(to_shape(shape), v, *dtype, s) : full(to_shape(shape), v, s);
      },
      py::arg("shape"), py::arg("vals"), py::arg("dtype") = py::none(), py::kw_only(), stream,
      R"doc(
    An array of ``shape`` filled with ``vals``.

    Args:
        shape (int or Sequence[int]): The shape.
        vals (array or scalar): The fill value(s), broadcast to ``shape``.
        dtype (Dtype, optional): The element type; that of ``vals`` by default.

    Returns:
        array: The filled array.

    Raises:
        ValueError: A negative dimension, or ``vals`` does not broadcast to ``shape``.
  )doc");

  auto def_filled = [&](const char* name, array (*fn)(const Shape&, Dtype, StreamOrDevice),
                        const char* what) {
    m.def(
        name,
        [fn](const ShapeArg& shape, Dtype dtype, StreamOrDevice s) {
          return fn(to_shape(shape), dtype, s);
        },
        py::arg("shape"), py::arg("dtype") = float32, py::kw_only(), stream,
        (std::string("An array of ``shape`` filled with ") + what +
         ".\n\nArgs:\n    shape (int or Sequence[int]): The shape.\n    dtype (Dtype): The element "
         "type (float32).\n\nReturns:\n    array: The filled array.\n\nRaises:\n    ValueError: A "
         "negative dimension.\n")
            .c_str());
  };
  def_filled("zeros", &zeros, "zeros");
  def_filled("ones", &ones, "ones");

  auto def_like = [&](const char* name, array (*fn)(const array&, StreamOrDevice),
                      const char* what) {
    m.def(
        name,
        [fn](const array& a, std::optional<Dtype> dtype, StreamOrDevice s) {
          return dtype ? astype(fn(a, s), *dtype, s) : fn(a, s);
        },
        py::arg("a"), py::pos_only(), py::arg("dtype") = py::none(), py::kw_only(), stream,
        (std::string("An array of ``a``'s shape and dtype filled with ") + what +
         ".\n\nArgs:\n    a (array): The model.\n\nReturns:\n    array: The filled array.\n")
            .c_str());
  };
  def_like("zeros_like", &zeros_like, "zeros");
  def_like("ones_like", &ones_like, "ones");
  m.def(
      "full_like",
      [](const array& a, const ScalarOrArray& vals, std::optional<Dtype> dtype, StreamOrDevice s) {
        Dtype d = dtype.value_or(a.dtype());
        return full(a.shape(), to_array(vals.obj, d), d, s);
      },
      py::arg("a"), py::pos_only(), py::arg("vals"), py::arg("dtype") = py::none(), py::kw_only(),
      stream, R"doc(
    An array of ``a``'s shape and dtype filled with ``vals`` (broadcast).

    Args:
        a (array): The model.
        vals (array or scalar): The fill value(s).
        dtype (Dtype, optional): The element type; ``a``'s by default.

    Returns:
        array: The filled array.
  )doc");

  m.def(
      "eye",
      [](int n, std::optional<int> cols, int k, Dtype dtype, StreamOrDevice s) {
        return eye(n, cols.value_or(n), k, dtype, s);
      },
      py::arg("n"), py::arg("m") = py::none(), py::arg("k") = 0, py::arg("dtype") = float32,
      py::kw_only(), stream, R"doc(
    An ``n x m`` matrix with ones on the ``k``-th diagonal and zeros elsewhere.

    Args:
        n (int): Rows.
        m (int, optional): Columns; ``n`` by default.
        k (int): The diagonal: 0 is the main one, positive above it, negative below.
        dtype (Dtype): The element type (float32).

    Returns:
        array: The matrix.

    Raises:
        ValueError: A negative size.
  )doc");
  m.def(
      "identity", [](int n, Dtype dtype, StreamOrDevice s) { return identity(n, dtype, s); },
      py::arg("n"), py::arg("dtype") = float32, py::kw_only(), stream, R"doc(
    The ``n x n`` identity matrix.

    Args:
        n (int): The size.
        dtype (Dtype): The element type (float32).

    Returns:
        array: The matrix.
  )doc");

  m.def(
      "tril", [](const array& x, int k, StreamOrDevice s) { return tril(x, k, s); }, py::arg("x"),
      py::arg("k") = 0, py::kw_only(), stream, R"doc(
    The lower triangle of the last two axes of ``x``: elements above the ``k``-th diagonal
    become zero.

    Args:
        x (array): Input with at least 2 dimensions.
        k (int): The diagonal (0 main, positive above, negative below).

    Returns:
        array: An array of ``x``'s shape and dtype.

    Raises:
        ValueError: ``x`` has fewer than 2 dimensions.
  )doc");
  m.def(
      "triu", [](const array& x, int k, StreamOrDevice s) { return triu(x, k, s); }, py::arg("x"),
      py::arg("k") = 0, py::kw_only(), stream, R"doc(
    The upper triangle of the last two axes of ``x``: elements below the ``k``-th diagonal
    become zero.

    Args:
        x (array): Input with at least 2 dimensions.
        k (int): The diagonal (0 main, positive above, negative below).

    Returns:
        array: An array of ``x``'s shape and dtype.

    Raises:
        ValueError: ``x`` has fewer than 2 dimensions.
  )doc");
}

}  // namespace kiln::python
