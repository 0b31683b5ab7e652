// Dtypes as Python objects: kiln.core.float32, ..., Dtype, DtypeCategory, issubdtype,
// promote_types, finfo and iinfo.
#include <pybind11/native_enum.h>
#include <pybind11/pybind11.h>

#include <limits>
#include <string>

#include "bindings.h"
#include "kiln/dtype.h"
#include "kiln/utils.h"

namespace kiln::python {

namespace {

std::string dtype_repr(Dtype d) {
  // As MLX prints them: kiln.core.bool, kiln.core.float32, ...
  return "kiln.core." + std::string(dtype_name(d));
}

// Machine limits of a floating dtype, as NumPy's finfo.
struct FInfo {
  Dtype dtype;
  double min, max, eps, tiny;
  int bits;
};

FInfo finfo(Dtype d) {
  if (!is_inexact(d)) {
    throw std::invalid_argument(msg("[finfo] dtype ", d, " is not inexact."));
  }
  switch (d.val) {
    case Dtype::Val::float16:
      return {d, -65504.0, 65504.0, 0.0009765625, 6.103515625e-05, 16};
    // bfloat16 has float32's exponent range and 8 significant bits.
    case Dtype::Val::bfloat16:
      return {d,         -3.3895313892515355e38, 3.3895313892515355e38,
              0.0078125, 1.1754943508222875e-38, 16};
    case Dtype::Val::float64: {
      using L = std::numeric_limits<double>;
      return {d, L::lowest(), L::max(), L::epsilon(), L::min(), 64};
    }
    default: {  // float32 and complex64 (whose parts are float32, as MLX reports)
      using L = std::numeric_limits<float>;
      return {float32, L::lowest(), L::max(), L::epsilon(), L::min(), 32};
    }
  }
}

// Limits of an integer dtype, as NumPy's iinfo (Python ints, so uint64 is exact).
struct IInfo {
  Dtype dtype;
  py::int_ min, max;
};

IInfo iinfo(Dtype d) {
  if (!is_integral(d) || d == bool_) {
    throw std::invalid_argument(msg("[iinfo] ", d, " is not an integer type."));
  }
  return dispatch_dtype(d, [&](auto tag) -> IInfo {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return {d, py::int_(std::numeric_limits<T>::min()), py::int_(std::numeric_limits<T>::max())};
    }
    return {d, py::int_(0), py::int_(0)};
  });
}

}  // namespace

void init_dtype(py::module_& m) {
  py::class_<Dtype>(m, "Dtype", R"doc(
    An element type: ``bool_``, ``uint8`` ... ``uint64``, ``int8`` ... ``int64``,
    ``float16``, ``bfloat16``, ``float32``, ``float64`` or ``complex64``.

    Use the module attributes (``kiln.core.float32``); dtypes are not constructed directly.
    ``size`` is the number of bytes per element.
  )doc")
      .def_property_readonly(
          "size", [](const Dtype& d) { return d.size; }, "Bytes per element.")
      .def("__repr__", &dtype_repr)
      .def("__str__", &dtype_repr)
      .def("__eq__", [](const Dtype& a,
                        py::object b) { return py::isinstance<Dtype>(b) && a == b.cast<Dtype>(); })
      .def("__ne__",
           [](const Dtype& a, py::object b) {
             return !(py::isinstance<Dtype>(b) && a == b.cast<Dtype>());
           })
      .def("__hash__", [](const Dtype& d) { return static_cast<int>(d.val); })
      // Pickles as a reference to the module attribute of the same name.
      .def("__reduce__", [](const Dtype& d) {
        return d == bool_ ? std::string("bool_") : std::string(dtype_name(d));
      });

  for (auto d : all_dtypes) {
    m.attr(d == bool_ ? "bool_" : std::string(dtype_name(d)).c_str()) = d;
  }

  py::native_enum<Dtype::Category>(m, "DtypeCategory", "enum.Enum", R"doc(
    Abstract groups of dtypes for :func:`issubdtype`, as in NumPy:
    ``generic`` > ``number`` > (``integer`` > ``signedinteger``, ``unsignedinteger``),
    (``inexact`` > ``floating``, ``complexfloating``).
  )doc")
      .value("complexfloating", Dtype::Category::complexfloating)
      .value("floating", Dtype::Category::floating)
      .value("inexact", Dtype::Category::inexact)
      .value("signedinteger", Dtype::Category::signedinteger)
      .value("unsignedinteger", Dtype::Category::unsignedinteger)
      .value("integer", Dtype::Category::integer)
      .value("number", Dtype::Category::number)
      .value("generic", Dtype::Category::generic)
      .export_values()
      .finalize();

  const char* issubdtype_doc = R"doc(
    Whether ``arg1`` is a subtype of ``arg2`` in NumPy's dtype hierarchy.

    Each argument is a :class:`Dtype` or a :class:`DtypeCategory`. A dtype is a subtype only
    of itself and of the categories above it (``float16`` is ``floating``, ``inexact``,
    ``number`` and ``generic``); ``bool_`` is only ``generic``.

    Example:
        >>> issubdtype(float16, floating)
        True
        >>> issubdtype(int32, unsignedinteger)
        False
  )doc";
  m.def("issubdtype", py::overload_cast<Dtype, Dtype>(&issubdtype), py::arg("arg1"),
        py::arg("arg2"), issubdtype_doc);
  m.def("issubdtype", py::overload_cast<Dtype, Dtype::Category>(&issubdtype), py::arg("arg1"),
        py::arg("arg2"));
  m.def("issubdtype", py::overload_cast<Dtype::Category, Dtype>(&issubdtype), py::arg("arg1"),
        py::arg("arg2"));
  m.def("issubdtype", py::overload_cast<Dtype::Category, Dtype::Category>(&issubdtype),
        py::arg("arg1"), py::arg("arg2"));

  m.def("promote_types", &promote_types, py::arg("type1"), py::arg("type2"), R"doc(
    The dtype of the result of a binary operation on arrays of ``type1`` and ``type2``
    (MLX's table: NumPy's rules, except that integers with a half type keep the half type,
    uint64 with a signed integer gives float32, and float16 with bfloat16 gives float32).
  )doc");

  py::class_<FInfo>(m, "finfo", R"doc(
    Machine limits of a floating-point (or complex) dtype: ``min``, ``max`` (finite
    extremes), ``eps`` (the gap between 1 and the next value), ``smallest_normal`` (also
    ``tiny``, the smallest positive normal value) as Python floats, and ``bits``. For
    complex64, the limits of its float32 parts. ValueError for other dtypes.
  )doc")
      .def(py::init(&finfo), py::arg("dtype"))
      .def_readonly("dtype", &FInfo::dtype)
      .def_readonly("min", &FInfo::min)
      .def_readonly("max", &FInfo::max)
      .def_readonly("eps", &FInfo::eps)
      .def_readonly("tiny", &FInfo::tiny)
      .def_readonly("smallest_normal", &FInfo::tiny)
      .def_readonly("bits", &FInfo::bits)
      .def("__repr__", [](const FInfo& f) {
        return msg("finfo(min=", static_cast<float>(f.min), ", max=", static_cast<float>(f.max),
                   ", dtype=", f.dtype, ")");
      });

  py::class_<IInfo>(m, "iinfo", R"doc(
    Limits of an integer dtype: ``min`` and ``max`` as Python ints. ValueError for other
    dtypes.
  )doc")
      .def(py::init(&iinfo), py::arg("dtype"))
      .def_readonly("dtype", &IInfo::dtype)
      .def_readonly("min", &IInfo::min)
      .def_readonly("max", &IInfo::max)
      .def("__repr__", [](const IInfo& i) {
        return "iinfo(min=" + py::str(i.min).cast<std::string>() +
               ", max=" + py::str(i.max).cast<std::string>() +
               ", dtype=" + std::string(dtype_name(i.dtype)) + ")";
      });
}

}  // namespace kiln::python
