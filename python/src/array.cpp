// kiln.core.array: construction, properties, conversion (item, tolist, NumPy, buffer
// protocol, pickling), operators, indexing and the methods that mirror ops.
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include "bindings.h"
#include "convert.h"
#include "dlpack.h"
#include "helpers.h"
#include "indexing.h"
#include "trees.h"

namespace kiln::python {

namespace {

using BinaryFn = array (*)(const array&, const array&, StreamOrDevice);

py::object not_implemented() {
  return py::reinterpret_borrow<py::object>(Py_NotImplemented);
}

// `a op b`, `b op a` and `a op= b` for an operator whose other operand may be a Python
// scalar (weakly typed against `a`). Unsupported operands give NotImplemented so Python can
// try the other side.
bool is_container_or_str(py::handle b) {
  return PyList_Check(b.ptr()) || PyTuple_Check(b.ptr()) || PyUnicode_Check(b.ptr());
}

// As MLX, an operator refuses lists, tuples and strings as the other operand (ValueError)
// rather than converting them; NumPy arrays and scalars are converted.
void reject_container(py::handle b, const char* name) {
  if (is_container_or_str(b)) {
    throw std::invalid_argument(msg("[", name, "] Cannot apply the operator to an array and a ",
                                    Py_TYPE(b.ptr())->tp_name,
                                    "; convert it with array(...) first."));
  }
}

template <BinaryFn fn>
void def_arithmetic(py::class_<array>& cls, const char* name, const char* rname,
                    const char* iname) {
  cls.def(name, [name](const array& a, py::object b) -> py::object {
    reject_container(b, name);
    if (!is_operand(b)) return not_implemented();
    return py::cast(fn(a, to_array(b, a.dtype()), {}));
  });
  cls.def(rname, [rname](const array& a, py::object b) -> py::object {
    reject_container(b, rname);
    if (!is_operand(b)) return not_implemented();
    return py::cast(fn(to_array(b, a.dtype()), a, {}));
  });
  // In-place forms compute a new array and rebind this Python object to it (MLX does the
  // same); views taken earlier keep the old values.
  cls.def(iname, [iname](py::object self, py::object b) -> py::object {
    reject_container(b, iname);
    if (!is_operand(b)) return not_implemented();
    array& a = self.cast<array&>();
    // As MLX: `a /= b` on an integer or bool array would change its dtype.
    if (std::string_view(iname) == "__itruediv__" && !is_inexact(a.dtype())) {
      throw std::invalid_argument(msg("[", iname, "] In-place division of an array of dtype ",
                                      a.dtype(), " would need a floating-point result."));
    }
    a = fn(a, to_array(b, a.dtype()), {});
    return self;
  });
}

template <BinaryFn fn>
void def_comparison(py::class_<array>& cls, const char* name, std::optional<bool> otherwise) {
  cls.def(name, [name, otherwise](const array& a, py::object b) -> py::object {
    // As MLX: == and != against a list, tuple or any non-operand are False and True;
    // ordering against a list, tuple or str is a ValueError.
    if (otherwise && (is_container_or_str(b) || !is_operand(b))) return py::bool_(*otherwise);
    reject_container(b, name);
    if (!is_operand(b)) return not_implemented();
    return py::cast(fn(a, to_array(b, a.dtype()), {}));
  });
}

array matmul_fn(const array& a, const array& b, StreamOrDevice s) {
  return matmul(a, b, s);
}

// Iterates over the first axis.
struct ArrayIterator {
  array a;
  int32_t i = 0;
};

// `a.at[index]` and its updates.
struct ArrayAt {
  array a;
};
struct ArrayAtIndex {
  array a;
  py::object index;
  array update(py::handle v, AtOp op) const { return at_update(a, index, v, op); }
};

std::string row_major_bytes(array& a) {
  eval_nogil(a);
  array c = contiguous(a);
  eval_nogil(c);
  return std::string(c.data<char>(), c.nbytes());
}

py::object scalar_or_error(array& a, const char* what) {
  if (a.size() != 1) {
    throw std::invalid_argument(msg("[", what,
                                    "] Only arrays with one element can be converted; "
                                    "got shape ",
                                    shape_str(a.shape()), "."));
  }
  return to_scalar(a);
}

const char* kArrayDoc = R"doc(
    An N-dimensional array: a lazy handle whose values are computed when needed (printing,
    ``item()``, ``tolist()``, NumPy conversion, :func:`eval`).

    Args:
        val: A Python scalar, a (nested) list or tuple of scalars and arrays, a NumPy array
            or scalar, another kiln array, or an object NumPy can convert (``__array__``,
            the buffer protocol). The data is copied.
        dtype (Dtype, optional): The element type. Without it: ``bool_`` for bools,
            ``int32`` for ints (``int64`` if a value needs it), ``float32`` for floats,
            ``complex64`` for complex numbers; NumPy arrays keep their dtype (complex128
            becomes complex64, and bfloat16 needs ``ml_dtypes``).

    Raises:
        TypeError: An unsupported Python type or NumPy dtype.
        ValueError: A ragged nested list.
        OverflowError: An integer outside the range of the dtype.
)doc";

}  // namespace

void init_array(py::module_& m) {
  py::class_<array> cls(m, "array", py::buffer_protocol(), kArrayDoc);

  cls.def(py::init([](py::handle val, std::optional<Dtype> dtype) {
            return array_from_python(val, dtype);
          }),
          py::arg("val"), py::arg("dtype") = py::none());
  // Functions taking an array also take anything the constructor takes (`exp([1, 2])`).
  py::implicitly_convertible<py::object, array>();
  // No __array_priority__: as with MLX arrays, a NumPy array on the left of an operator
  // converts the kiln array (`np_array == kiln_array` is a NumPy array).

  // Helper types first, so that signatures using them name them.
  py::class_<ArrayIterator>(m, "ArrayIterator")
      .def("__iter__", [](py::object it) { return it; })
      .def("__next__", [](ArrayIterator& it) {
        if (it.i >= it.a.shape()[0]) throw py::stop_iteration();
        return getitem(it.a, py::int_(it.i++));
      });
  // `x.at[index].add(value)` and friends.
  py::class_<ArrayAtIndex> at_index(m, "_ArrayAtIndex");
  py::class_<ArrayAt> at_cls(m, "ArrayAt");
  at_cls.def("__getitem__", [](const ArrayAt& at, py::object index) {
    return ArrayAtIndex{at.a, std::move(index)};
  });
  auto def_at = [&](const char* name, AtOp op, const char* doc) {
    at_index.def(
        name, [op](const ArrayAtIndex& at, py::handle v) { return at.update(v, op); },
        py::arg("value"), doc);
    // `x.at.add(v)` without an index is a mistake MLX reports as ValueError.
    at_cls.def(
        name,
        [name](const ArrayAt&, py::handle) -> array {
          throw std::invalid_argument(
              msg("[at] Index first: x.at[index].", name, "(value), not x.at.", name, "(value)."));
        },
        py::arg("value"));
  };
  def_at("add", AtOp::add,
         "``x`` with ``value`` added at the index (repeated indices add repeatedly).");
  def_at("subtract", AtOp::subtract, "``x`` with ``value`` subtracted at the index.");
  def_at("multiply", AtOp::multiply,
         "``x`` with the elements at the index multiplied by ``value``.");
  def_at("divide", AtOp::divide, "``x`` with the elements at the index divided by ``value``.");
  def_at("maximum", AtOp::maximum,
         "``x`` with the elements at the index replaced by their maximum with ``value``.");
  def_at("minimum", AtOp::minimum,
         "``x`` with the elements at the index replaced by their minimum with ``value``.");

  // ------------------------------------------------------------ properties
  cls.def_property_readonly(
         "shape", [](const array& a) { return py::tuple(py::cast(a.shape())); },
         "The size of each dimension, as a tuple.")
      .def_property_readonly("ndim", &array::ndim, "The number of dimensions.")
      .def_property_readonly("size", &array::size, "The number of elements.")
      .def_property_readonly("dtype", &array::dtype, "The element type.")
      .def_property_readonly("itemsize", &array::itemsize, "Bytes per element.")
      .def_property_readonly("nbytes", &array::nbytes, "Bytes of all elements (size * itemsize).")
      .def_property_readonly(
          "T", [](const array& a) { return transpose(a); },
          "The array with its axes reversed (see :func:`transpose`).")
      .def_property_readonly(
          "real", [](const array& a) { return real(a); }, "The real part.")
      .def_property_readonly(
          "imag", [](const array& a) { return imag(a); }, "The imaginary part.")
      .def_property_readonly(
          "at", [](const array& a) { return ArrayAt{a}; }, R"doc(
    Functional updates at an index: ``x.at[idx].add(y)`` returns ``x`` with ``y`` added at
    ``idx`` (also ``subtract``, ``multiply``, ``divide``, ``maximum``, ``minimum``). Unlike
    ``x[idx] += y``, an index that repeats applies once per occurrence.

    Example:
        >>> x = kiln.core.zeros(3)
        >>> x.at[kiln.core.array([0, 0, 2])].add(1.0)
        array([2, 0, 1], dtype=float32)
  )doc");

  // ------------------------------------------------------------ conversion
  cls.def(
         "item", [](array& a) { return scalar_or_error(a, "item"); }, R"doc(
    The single element as a Python scalar (bool, int, float or complex). Evaluates the array.
    ValueError unless the array has exactly one element.
  )doc")
      .def(
          "tolist", [](array& a) { return to_list(a); }, R"doc(
    The elements as nested Python lists of Python scalars (a scalar for a 0-d array).
    Evaluates the array.
  )doc")
      .def(
          "astype",
          [](const array& a, Dtype dtype, StreamOrDevice s) { return astype(a, dtype, s); },
          py::arg("dtype"), py::arg("stream") = py::none(), R"doc(
    The array converted to ``dtype`` (NumPy casting: float to int truncates, x to bool is
    ``x != 0``, complex to real keeps the real part).
  )doc")
      .def(
          "__array__",
          [](array& a, py::object dtype, py::object copy) -> py::object {
            bool want_copy = !copy.is_none() && copy.cast<bool>();
            py::object view = to_numpy_view(a, /*writable=*/!want_copy);
            if (!dtype.is_none()) view = view.attr("astype")(dtype, py::arg("copy") = false);
            if (want_copy) view = view.attr("copy")();
            return view;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none(), R"doc(
    A NumPy view of the data (no copy; a GPU array is copied to the host once). As in MLX,
    the view is writable and writes show in the array (``copy=True`` gives a copy).
  )doc")
      .def("__dlpack__", &to_dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none(), R"doc(
    A DLPack capsule sharing the array's memory (read-only), for ``from_dlpack`` of NumPy,
    PyTorch, JAX or CuPy. The array is evaluated first, so the data is complete for any
    consumer stream.
  )doc")
      .def("__dlpack_device__", &dlpack_device, R"doc(
    ``(device_type, device_id)`` of the data: ``(2, i)`` (CUDA) for data on GPU ``i``, else
    ``(1, 0)`` (CPU).
  )doc")
      .def("__repr__", &array_repr)
      .def("__str__", &array_repr)
      .def("__format__",
           [](array& a, const std::string& spec) -> py::object {
             if (spec.empty()) return py::str(array_repr(a));
             // As MLX: a format spec needs a single element (TypeError otherwise).
             if (a.size() != 1) {
               throw py::type_error(
                   msg("[format] A format spec applies to arrays of one "
                       "element; got shape ",
                       shape_str(a.shape()), "."));
             }
             return py::module_::import("builtins")
                 .attr("format")(scalar_or_error(a, "format"), spec);
           })
      .def("__bool__",
           [](array& a) {
             if (a.size() != 1) {
               throw std::invalid_argument("[bool] The truth value of an array with " +
                                           std::to_string(a.size()) +
                                           " elements is ambiguous; use any() or all().");
             }
             return to_scalar(a).cast<bool>();
           })
      .def("__int__", [](array& a) { return py::int_(scalar_or_error(a, "int")); })
      .def("__float__", [](array& a) { return py::float_(scalar_or_error(a, "float")); })
      .def("__complex__",
           [](array& a) {
             return py::module_::import("builtins").attr("complex")(scalar_or_error(a, "complex"));
           })
      .def("__index__",
           [](array& a) -> py::object {
             if (!is_integral(a.dtype()) || a.dtype() == bool_ || a.size() != 1) {
               throw py::type_error(
                   "[index] Only integer arrays with one element can be converted to an index.");
             }
             return to_scalar(a);
           })
      .def("__hash__", [](py::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); })
      .def("__copy__", [](const array& a) { return a; })
      .def(
          "__deepcopy__", [](const array& a, py::handle) { return a; }, py::arg("memo"))
      .def(py::pickle(
          [](array& a) {
            return py::make_tuple(py::bytes(row_major_bytes(a)), py::cast(a.shape()),
                                  std::string(dtype_name(a.dtype())));
          },
          [](py::tuple t) {
            if (t.size() != 3) throw std::invalid_argument("[array] Invalid pickled state.");
            auto bytes = t[0].cast<std::string>();
            auto shape = t[1].cast<Shape>();
            Dtype d = dtype_from_name(t[2].cast<std::string>());
            auto storage = Storage::host(bytes.size());
            std::memcpy(storage->host_ptr(), bytes.data(), bytes.size());
            return array(std::move(storage), std::move(shape), d);
          }));

  // Zero-copy access through the buffer protocol (memoryview, np.asarray), writable as in
  // MLX (while the export lives, the GPU re-reads the host copy). The export holds its own
  // handle on the array, so rebinding the Python object (`x += 1`) cannot free memory a view
  // still reads.
  cls.def_buffer([](array& a) -> py::buffer_info {
    if (a.dtype() == bfloat16) {
      throw py::buffer_error(
          "[array] bfloat16 has no buffer format; use np.asarray (with ml_dtypes).");
    }
    // Export through a NumPy view, which owns a handle on the array.
    py::array view = to_numpy_view(a);
    auto* buf = new Py_buffer();
    if (PyObject_GetBuffer(view.ptr(), buf, PyBUF_RECORDS) != 0) {
      delete buf;
      throw py::error_already_set();
    }
    // 8-byte integers as 'q'/'Q' (long long), as MLX, where NumPy says 'l'/'L'.
    if (a.dtype() == int64) buf->format = const_cast<char*>("q");
    if (a.dtype() == uint64) buf->format = const_cast<char*>("Q");
    return py::buffer_info(buf, /*ownview=*/true);
  });

  // ------------------------------------------------------------ sequence protocol, indexing
  cls.def("__len__",
          [](const array& a) {
            if (a.ndim() == 0) throw py::type_error("len() of a 0-d array");
            return a.shape()[0];
          })
      .def("__iter__",
           [](const array& a) {
             if (a.ndim() == 0) throw py::type_error("iteration over a 0-d array");
             return ArrayIterator{a};
           })
      .def("__getitem__", [](const array& a, py::handle index) { return getitem(a, index); })
      .def("__setitem__",
           [](array& a, py::handle index, py::handle value) { a = setitem(a, index, value); });

  // ------------------------------------------------------------ operators
  def_arithmetic<&add>(cls, "__add__", "__radd__", "__iadd__");
  def_arithmetic<&subtract>(cls, "__sub__", "__rsub__", "__isub__");
  def_arithmetic<&multiply>(cls, "__mul__", "__rmul__", "__imul__");
  def_arithmetic<&divide>(cls, "__truediv__", "__rtruediv__", "__itruediv__");
  def_arithmetic<&floor_divide>(cls, "__floordiv__", "__rfloordiv__", "__ifloordiv__");
  def_arithmetic<&remainder>(cls, "__mod__", "__rmod__", "__imod__");
  def_arithmetic<&power>(cls, "__pow__", "__rpow__", "__ipow__");
  def_arithmetic<&matmul_fn>(cls, "__matmul__", "__rmatmul__", "__imatmul__");
  def_arithmetic<&bitwise_and>(cls, "__and__", "__rand__", "__iand__");
  def_arithmetic<&bitwise_or>(cls, "__or__", "__ror__", "__ior__");
  def_arithmetic<&bitwise_xor>(cls, "__xor__", "__rxor__", "__ixor__");
  def_arithmetic<&left_shift>(cls, "__lshift__", "__rlshift__", "__ilshift__");
  def_arithmetic<&right_shift>(cls, "__rshift__", "__rrshift__", "__irshift__");
  def_comparison<&equal>(cls, "__eq__", false);
  def_comparison<&not_equal>(cls, "__ne__", true);
  def_comparison<&less>(cls, "__lt__", std::nullopt);
  def_comparison<&less_equal>(cls, "__le__", std::nullopt);
  def_comparison<&greater>(cls, "__gt__", std::nullopt);
  def_comparison<&greater_equal>(cls, "__ge__", std::nullopt);
  cls.def("__divmod__",
          [](const array& a, py::object b) -> py::object {
            if (!is_operand(b)) return not_implemented();
            array y = to_array(b, a.dtype());
            return py::make_tuple(floor_divide(a, y), remainder(a, y));
          })
      .def("__rdivmod__",
           [](const array& a, py::object b) -> py::object {
             if (!is_operand(b)) return not_implemented();
             array x = to_array(b, a.dtype());
             return py::make_tuple(floor_divide(x, a), remainder(x, a));
           })
      .def("__neg__", [](const array& a) { return negative(a); })
      .def("__pos__", [](const array& a) { return a; })
      .def("__abs__", [](const array& a) { return abs(a); })
      .def("__invert__", [](const array& a) { return bitwise_invert(a); })
      .def(
          "__round__",
          [](const array& a, std::optional<int> nd) { return round(a, nd.value_or(0)); },
          py::arg("ndigits") = py::none());

  // ------------------------------------------------------------ methods mirroring ops
  auto stream = py::arg("stream") = py::none();
  auto axis_none = py::arg("axis") = py::none();
  auto keepdims = py::arg("keepdims") = false;

  using Unary = array (*)(const array&, StreamOrDevice);
  auto def_unary = [&](const char* name, Unary fn, const char* op) {
    cls.def(
        name, [fn](const array& a, StreamOrDevice s) { return fn(a, s); }, py::kw_only(), stream,
        (std::string("See :func:`") + op + "`.").c_str());
  };
  def_unary("abs", &abs, "abs");
  def_unary("conj", &conjugate, "conjugate");
  def_unary("exp", &exp, "exp");
  def_unary("log", &log, "log");
  def_unary("log1p", &log1p, "log1p");
  def_unary("log2", &log2, "log2");
  def_unary("log10", &log10, "log10");
  def_unary("reciprocal", &reciprocal, "reciprocal");
  def_unary("rsqrt", &rsqrt, "rsqrt");
  def_unary("sqrt", &sqrt, "sqrt");
  def_unary("square", &square, "square");
  def_unary("sin", &sin, "sin");
  def_unary("cos", &cos, "cos");

  using Reduce = array (*)(const array&, const Axis&, bool, StreamOrDevice);
  auto def_reduce = [&](const char* name, Reduce fn) {
    cls.def(
        name,
        [fn](const array& a, const Axis& axis, bool kd, StreamOrDevice s) {
          return fn(a, axis, kd, s);
        },
        axis_none, keepdims, py::kw_only(), stream,
        (std::string("See :func:`") + name + "`.").c_str());
  };
  def_reduce("sum", &reduce_sum);
  def_reduce("prod", &reduce_prod);
  def_reduce("max", &reduce_max);
  def_reduce("min", &reduce_min);
  def_reduce("mean", &reduce_mean);
  def_reduce("all", &reduce_all);
  def_reduce("any", &reduce_any);
  def_reduce("logsumexp", &reduce_logsumexp);
  cls.def("var", &reduce_var, axis_none, keepdims, py::arg("ddof") = 0, py::kw_only(), stream,
          "See :func:`var`.")
      .def("std", &reduce_std, axis_none, keepdims, py::arg("ddof") = 0, py::kw_only(), stream,
           "See :func:`std`.")
      .def("argmax", &reduce_argmax, axis_none, keepdims, py::kw_only(), stream,
           "See :func:`argmax`.")
      .def("argmin", &reduce_argmin, axis_none, keepdims, py::kw_only(), stream,
           "See :func:`argmin`.")
      .def("cumsum", &scan_cumsum, axis_none, py::kw_only(), py::arg("reverse") = false,
           py::arg("inclusive") = true, stream, "See :func:`cumsum`.")
      .def("cumprod", &scan_cumprod, axis_none, py::kw_only(), py::arg("reverse") = false,
           py::arg("inclusive") = true, stream, "See :func:`cumprod`.")
      .def("cummax", &scan_cummax, axis_none, py::kw_only(), py::arg("reverse") = false,
           py::arg("inclusive") = true, stream, "See :func:`cummax`.")
      .def("cummin", &scan_cummin, axis_none, py::kw_only(), py::arg("reverse") = false,
           py::arg("inclusive") = true, stream, "See :func:`cummin`.")
      .def("logcumsumexp", &scan_logcumsumexp, axis_none, py::kw_only(), py::arg("reverse") = false,
           py::arg("inclusive") = true, stream, "See :func:`logcumsumexp`.")
      .def(
          "diag", [](const array& a, int k, StreamOrDevice s) { return diag(a, k, s); },
          py::arg("k") = 0, py::kw_only(), stream, "See :func:`diag`.")
      .def(
          "diagonal",
          [](const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
            return diagonal(a, offset, axis1, axis2, s);
          },
          py::arg("offset") = 0, py::arg("axis1") = 0, py::arg("axis2") = 1, stream,
          "See :func:`diagonal`.")
      .def(
          "view", [](const array& a, Dtype dtype, StreamOrDevice s) { return view(a, dtype, s); },
          py::arg("dtype"), py::kw_only(), stream, "See :func:`view`.")
      .def_property_readonly(
          "mT", [](const array& a) { return matrix_transpose(a); },
          "The array with its last two axes swapped (:func:`matrix_transpose`).")
      .def(
          "reshape",
          [](const array& a, py::args shape, StreamOrDevice s) {
            auto v = ints_from_args(shape);
            return reshape(a, Shape(v.begin(), v.end()), s);
          },
          stream,
          "Same data with a new shape: ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``. See "
          ":func:`reshape`.")
      .def(
          "transpose",
          [](const array& a, py::args axes, StreamOrDevice s) {
            if (axes.empty()) return transpose(a, s);
            return transpose(a, ints_from_args(axes), s);
          },
          stream,
          "The axes permuted: ``x.transpose(1, 0, 2)``; reversed without arguments. See "
          ":func:`transpose`.")
      .def(
          "flatten",
          [](const array& a, int start, int end, StreamOrDevice s) {
            return flatten(a, start, end, s);
          },
          py::arg("start_axis") = 0, py::arg("end_axis") = -1, py::kw_only(), stream,
          "See :func:`flatten`.")
      .def("squeeze", &squeeze_axes, axis_none, py::kw_only(), stream, "See :func:`squeeze`.")
      .def(
          "swapaxes",
          [](const array& a, int a1, int a2, StreamOrDevice s) { return swapaxes(a, a1, a2, s); },
          py::arg("axis1"), py::arg("axis2"), py::kw_only(), stream, "See :func:`swapaxes`.")
      .def(
          "moveaxis",
          [](const array& a, int src, int dst, StreamOrDevice s) {
            return moveaxis(a, src, dst, s);
          },
          py::arg("source"), py::arg("destination"), py::kw_only(), stream, "See :func:`moveaxis`.")
      .def("split", &split_by, py::arg("indices_or_sections"), py::arg("axis") = 0, py::kw_only(),
           stream, "See :func:`split`.")
      .def(
          "round",
          [](const array& a, int decimals, StreamOrDevice s) { return round(a, decimals, s); },
          py::arg("decimals") = 0, py::kw_only(), stream, "See :func:`round`.");

  m.def(
      "get_array_buffer_size",
      [](py::args args) {
        // Each buffer once, whole: arrays sharing one (views, repeats) count it one time.
        std::unordered_set<const Storage*> seen;
        size_t total = 0;
        for (const array& a : tree_arrays(args)) {
          if (!a.is_available()) {
            throw std::invalid_argument(
                "[get_array_buffer_size] Arrays must be evaluated before querying buffer size.");
          }
          if (a.has_storage() && seen.insert(&a.storage()).second) total += a.storage().nbytes();
        }
        return total;
      },
      R"doc(
    get_array_buffer_size(*args)

    The bytes of the buffers behind the evaluated arrays in ``args`` (arrays or trees of
    arrays; other leaves are ignored). Each buffer counts once and whole: a view counts its
    base's buffer, and arrays sharing a buffer count it one time.

    Raises:
        ValueError: An array has not been evaluated.
  )doc");
  m.def("_set_print_precision", &set_print_precision, py::arg("precision"));
  m.def("_get_print_precision", &print_precision);
}

}  // namespace kiln::python
