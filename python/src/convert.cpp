#include "convert.h"

#include <atomic>
#include <complex>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

#include "dlpack.h"
#include "kiln/host_writes.h"

namespace kiln::python {

namespace {

// ---------------------------------------------------------------- Python scalars

enum class ScalarKind : uint8_t { none, boolean, integer, floating, complex };

ScalarKind scalar_kind(py::handle h) {
  PyObject* o = h.ptr();
  // bool before int: Python's bool is a subclass of int.
  if (PyBool_Check(o)) return ScalarKind::boolean;
  if (PyLong_Check(o)) return ScalarKind::integer;
  if (PyFloat_Check(o)) return ScalarKind::floating;
  if (PyComplex_Check(o)) return ScalarKind::complex;
  return ScalarKind::none;
}

// A Python int: an int64, or a uint64 when it only fits there.
struct IntValue {
  bool big = false;  // true: the value is `u`, above INT64_MAX
  int64_t i = 0;
  uint64_t u = 0;
};

[[noreturn]] void throw_int_range(const std::string& text);

IntValue read_int(py::handle h) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (overflow == 0) {
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    return {false, v, 0};
  }
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(h.ptr());
    if (!PyErr_Occurred()) return {true, 0, u};
    PyErr_Clear();
  }
  throw_int_range("[array] Python integer " + py::str(h).cast<std::string>() +
                  " is out of range for int64 and uint64.");
}

std::string int_str(const IntValue& v) {
  return v.big ? std::to_string(v.u) : std::to_string(v.i);
}

// An integer that does not fit its dtype: NumPy 2 raises OverflowError, MLX ValueError, so
// kiln raises an error that is both (kiln.core.IntegerRangeError), caught by either.
[[noreturn]] void throw_int_range(const std::string& text) {
  static PyObject* cls = [] {
    PyObject* bases = PyTuple_Pack(2, PyExc_OverflowError, PyExc_ValueError);
    PyObject* c = PyErr_NewException("kiln.core.IntegerRangeError", bases, nullptr);
    Py_XDECREF(bases);
    return c;  // kept for the life of the process
  }();
  if (!cls) throw std::overflow_error(text);
  PyErr_SetString(cls, text.c_str());
  throw py::error_already_set();
}

// IntegerRangeError when `v` does not fit the integer dtype `d`.
void check_int_range(const IntValue& v, Dtype d) {
  if (!is_integral(d) || d == bool_) return;
  bool fits = dispatch_dtype(d, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (v.big) return v.u <= static_cast<uint64_t>(std::numeric_limits<T>::max());
      if constexpr (std::is_unsigned_v<T>) {
        return v.i >= 0 && static_cast<uint64_t>(v.i) <= std::numeric_limits<T>::max();
      } else {
        return v.i >= std::numeric_limits<T>::min() && v.i <= std::numeric_limits<T>::max();
      }
    }
    return true;
  });
  if (!fits)
    throw_int_range(msg("[array] Python integer ", int_str(v), " is out of range for ", d, "."));
}

// int32 when it fits (MLX's default integer), else int64, else uint64.
Dtype default_int_dtype(const IntValue& v) {
  if (v.big) return uint64;
  bool fits32 =
      v.i >= std::numeric_limits<int32_t>::min() && v.i <= std::numeric_limits<int32_t>::max();
  return fits32 ? int32 : int64;
}

array int_array(const IntValue& v, Dtype d) {
  check_int_range(v, d);
  return v.big ? array(v.u, d) : array(v.i, d);
}

complex64_t read_complex(py::handle h) {
  Py_complex c = PyComplex_AsCComplex(h.ptr());
  return complex64_t(static_cast<float>(c.real), static_cast<float>(c.imag));
}

// A Python scalar as a 0-d array. With `like`, ints and floats take that dtype when it fits
// their kind (MLX's weak scalars); with `exact`, they take `exact` unconditionally.
array scalar_to_array(py::handle h, ScalarKind k, std::optional<Dtype> like, bool exact) {
  switch (k) {
    case ScalarKind::boolean: {
      bool v = h.ptr() == Py_True;
      return exact && like ? array(v, *like) : array(v, bool_);
    }
    case ScalarKind::integer: {
      auto v = read_int(h);
      Dtype d = default_int_dtype(v);
      if (like && (exact || *like != bool_)) d = *like;
      return int_array(v, d);
    }
    case ScalarKind::floating: {
      double v = PyFloat_AS_DOUBLE(h.ptr());
      Dtype d = like && (exact || is_inexact(*like)) ? *like : float32;
      return array(v, d);
    }
    case ScalarKind::complex: {
      auto v = read_complex(h);
      return array(v, exact && like ? *like : complex64);
    }
    case ScalarKind::none:
      break;
  }
  throw py::type_error("[array] Not a Python scalar.");
}

// ---------------------------------------------------------------- NumPy

// Copies `n` elements of dtype `sd` to `dst` as dtype `dd` (NumPy casting, scalar_cast).
void cast_copy(const void* src, Dtype sd, void* dst, Dtype dd, size_t n) {
  if (sd == dd) {
    if (n) std::memcpy(dst, src, n * sd.size);
    return;
  }
  dispatch_dtype(sd, [&](auto s) {
    using S = decltype(s);
    dispatch_dtype(dd, [&](auto d) {
      using D = decltype(d);
      const S* in = static_cast<const S*>(src);
      D* out = static_cast<D*>(dst);
      for (size_t i = 0; i < n; ++i) out[i] = scalar_cast<D>(in[i]);
    });
  });
}

// Copies the elements of the evaluated array `a` (any strides) to `dst` as `D`.
template <typename D>
void copy_elements(const array& a, D* dst) {
  dispatch_dtype(a.dtype(), [&](auto s) {
    using S = decltype(s);
    const S* src = a.data<S>();
    if (a.flags().row_contiguous) {
      for (size_t i = 0; i < a.size(); ++i) dst[i] = scalar_cast<D>(src[i]);
    } else {
      for (size_t i = 0; i < a.size(); ++i) {
        dst[i] = scalar_cast<D>(src[elem_to_loc(static_cast<int64_t>(i), a.shape(), a.strides())]);
      }
    }
  });
}

Shape numpy_shape(const py::array& arr) {
  Shape shape;
  shape.reserve(arr.ndim());
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) {
    if (arr.shape(i) > std::numeric_limits<int32_t>::max()) {
      // OverflowError, as MLX.
      throw std::overflow_error(msg("[array] Shape dimension ", arr.shape(i),
                                    " is outside the supported range [-2147483648, 2147483647]. "
                                    "kiln uses 32-bit integers for shape dimensions."));
    }
    shape.push_back(static_cast<int32_t>(arr.shape(i)));
  }
  return shape;
}

std::string supported_dtypes() {
  std::string s;
  for (auto d : all_dtypes) s += (s.empty() ? "" : ", ") + std::string(dtype_name(d));
  return s;
}

array numpy_to_array(py::array arr, std::optional<Dtype> dtype) {
  py::dtype dt = arr.dtype();
  auto src = from_numpy_dtype(dt);
  if (!src) {
    if (dt.kind() == 'c' && dt.itemsize() == 16) {
      // complex128 has no kiln counterpart; complex64 is kiln's complex type.
      arr = py::array(arr.attr("astype")("complex64"));
      src = complex64;
    } else {
      throw py::type_error("[array] NumPy dtype " + py::str(dt).cast<std::string>() +
                           " is not supported; kiln's dtypes are " + supported_dtypes() + ".");
    }
  }
  if (dt.byteorder() == '>') arr = py::array(arr.attr("astype")(dt.attr("newbyteorder")("=")));
  if (!(arr.flags() & py::array::c_style)) {
    arr = py::array(py::module_::import("numpy").attr("ascontiguousarray")(arr));
  }
  Shape shape = numpy_shape(arr);
  // As MLX: NumPy's default float64 becomes float32 unless float64 is asked for.
  Dtype out = dtype.value_or(*src == float64 ? float32 : *src);
  size_t n = shape_size(shape);
  auto storage = Storage::host(n * out.size);
  cast_copy(arr.data(), *src, storage->host_ptr(), out, n);
  return array(std::move(storage), std::move(shape), out);
}

// ---------------------------------------------------------------- nested lists

constexpr size_t kMaxDepth = 64;

bool is_sequence(py::handle h) {
  return PyList_Check(h.ptr()) || PyTuple_Check(h.ptr());
}

// Reads a nested list or tuple of scalars and arrays into one array. The shape comes from
// the chain of first elements; every other element is checked against it.
class ListReader {
 public:
  array read(py::handle obj, std::optional<Dtype> dtype) {
    infer_shape(obj);
    visit(obj, 0);
    Dtype out = dtype ? *dtype : infer_dtype();
    // Inside a transformation the array elements stay in the graph (MLX's stack), so that
    // gradients flow through them.
    for (const auto& a : arrays_) {
      if (a.is_tracer()) return assemble(out);
    }
    if (!arrays_.empty()) {
      py::gil_scoped_release nogil;
      eval(arrays_);
    }
    return constant(leaves_, shape_, out);
  }

 private:
  struct Leaf {
    ScalarKind kind;
    int array_index = -1;  // an array leaf covering shape_[depth:]
    IntValue i{};
    double f = 0;
    complex64_t c{};
  };

  static size_t seq_size(py::handle h) { return static_cast<size_t>(PySequence_Size(h.ptr())); }

  void infer_shape(py::handle obj) {
    py::handle h = obj;
    while (is_sequence(h)) {
      size_t n = seq_size(h);
      if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        throw std::invalid_argument("[array] The list is too long (kiln's limit is 2^31 - 1).");
      }
      shape_.push_back(static_cast<int32_t>(n));
      if (shape_.size() > kMaxDepth) {
        throw std::invalid_argument(
            msg("[array] Lists nested deeper than ", kMaxDepth, " levels are not supported."));
      }
      if (n == 0) return;
      h = PySequence_Fast_GET_ITEM(h.ptr(), 0);
    }
    if (auto leaf = leaf_shape(h)) shape_.insert(shape_.end(), leaf->begin(), leaf->end());
  }

  // The shape of an array-like leaf, or nullopt for a scalar.
  static std::optional<Shape> leaf_shape(py::handle h) {
    if (is_array(h)) return array_ref(h).shape();
    if (py::isinstance<py::array>(h)) return numpy_shape(py::reinterpret_borrow<py::array>(h));
    return std::nullopt;
  }

  // MLX's exact message for lists that are not rectangular (its tests compare it).
  static constexpr const char* kRagged = "Initialization encountered non-uniform length.";

  [[noreturn]] void ragged(size_t, size_t) const { throw std::invalid_argument(kRagged); }

  void visit(py::handle h, size_t depth) {
    if (is_sequence(h)) {
      if (depth >= shape_.size()) throw std::invalid_argument(kRagged);
      size_t n = seq_size(h);
      if (n != static_cast<size_t>(shape_[depth])) ragged(depth, n);
      for (size_t i = 0; i < n; ++i) visit(PySequence_Fast_GET_ITEM(h.ptr(), i), depth + 1);
      return;
    }
    Leaf leaf{scalar_kind(h)};
    if (leaf.kind != ScalarKind::none) {
      if (depth != shape_.size()) ragged(depth, 1);
      switch (leaf.kind) {
        case ScalarKind::boolean:
          leaf.i.i = h.ptr() == Py_True;
          break;
        case ScalarKind::integer:
          leaf.i = read_int(h);
          big_int_ |= leaf.i.big;
          int32_fits_ &= default_int_dtype(leaf.i) == int32;
          break;
        case ScalarKind::floating:
          leaf.f = PyFloat_AS_DOUBLE(h.ptr());
          break;
        default:
          leaf.c = read_complex(h);
          break;
      }
      kind_ = std::max(kind_, leaf.kind);
      leaves_.push_back(leaf);
      return;
    }
    array a = [&] {
      if (is_array(h)) return array_ref(h);
      if (py::isinstance<py::array>(h)) {
        return numpy_to_array(py::reinterpret_borrow<py::array>(h), std::nullopt);
      }
      if (is_numpy_scalar(h)) return numpy_to_array(py::array::ensure(h), std::nullopt);
      // ValueError, as MLX (the list's contents, not its type, are wrong).
      throw std::invalid_argument("[array] Cannot convert a list element of type " +
                                  std::string(Py_TYPE(h.ptr())->tp_name) + " to an array element.");
    }();
    Shape rest(shape_.begin() + static_cast<std::ptrdiff_t>(std::min(depth, shape_.size())),
               shape_.end());
    if (depth > shape_.size() || a.shape() != rest) throw std::invalid_argument(kRagged);
    array_dtype_ = array_dtype_ ? promote_types(*array_dtype_, a.dtype()) : a.dtype();
    leaf.array_index = static_cast<int>(arrays_.size());
    arrays_.push_back(std::move(a));
    leaves_.push_back(leaf);
  }

  // MLX's rules: the widest scalar kind gives bool, int32 (int64 if needed), float32 or
  // complex64; array elements promote, with the scalars weakly typed against them.
  Dtype infer_dtype() const {
    Dtype scalar_dtype = [&] {
      switch (kind_) {
        case ScalarKind::none:
          return float32;  // empty lists, as MLX
        case ScalarKind::boolean:
          return bool_;
        case ScalarKind::integer:
          return big_int_ ? uint64 : (int32_fits_ ? int32 : int64);
        case ScalarKind::floating:
          return float32;
        case ScalarKind::complex:
          return complex64;
      }
      return float32;
    }();
    if (!array_dtype_) return scalar_dtype;
    Dtype d = *array_dtype_;
    switch (kind_) {
      case ScalarKind::none:
        return d;
      case ScalarKind::boolean:
        return promote_types(d, bool_);
      case ScalarKind::integer:
        return d == bool_ ? scalar_dtype : d;
      case ScalarKind::floating:
        return is_inexact(d) ? d : promote_types(d, float32);
      case ScalarKind::complex:
        return complex64;
    }
    return d;
  }

  // The leaves (scalars, or evaluated arrays) as one array of `shape` on the host.
  array constant(const std::vector<Leaf>& leaves, const Shape& shape, Dtype out) const {
    auto storage = Storage::host(shape_size(shape) * out.size);
    dispatch_dtype(out, [&](auto tag) {
      using T = decltype(tag);
      fill(static_cast<T*>(storage->host_ptr()), out, leaves);
    });
    return array(std::move(storage), shape, out);
  }

  // The leaves in order as one graph: runs of scalars as constants, arrays flattened, then
  // concatenated and reshaped.
  array assemble(Dtype out) const {
    std::vector<array> parts;
    std::vector<Leaf> run;
    auto flush = [&] {
      if (run.empty()) return;
      parts.push_back(constant(run, Shape{static_cast<int32_t>(run.size())}, out));
      run.clear();
    };
    for (const auto& leaf : leaves_) {
      if (leaf.array_index < 0) {
        run.push_back(leaf);
        continue;
      }
      flush();
      parts.push_back(reshape(astype(arrays_[leaf.array_index], out), {-1}));
    }
    flush();
    return reshape(parts.size() == 1 ? parts[0] : concatenate(parts, 0), shape_);
  }

  template <typename T>
  void fill(T* dst, Dtype out, const std::vector<Leaf>& leaves) const {
    for (const auto& leaf : leaves) {
      if (leaf.array_index >= 0) {
        const array& a = arrays_[leaf.array_index];
        copy_elements(a, dst);
        dst += a.size();
        continue;
      }
      switch (leaf.kind) {
        case ScalarKind::boolean:
          *dst++ = scalar_cast<T>(leaf.i.i != 0);
          break;
        case ScalarKind::integer:
          check_int_range(leaf.i, out);
          *dst++ = leaf.i.big ? scalar_cast<T>(leaf.i.u) : scalar_cast<T>(leaf.i.i);
          break;
        case ScalarKind::floating:
          *dst++ = scalar_cast<T>(leaf.f);
          break;
        default:
          *dst++ = scalar_cast<T>(leaf.c);
          break;
      }
    }
  }

  Shape shape_;
  std::vector<Leaf> leaves_;
  std::vector<array> arrays_;
  ScalarKind kind_ = ScalarKind::none;
  bool big_int_ = false;
  bool int32_fits_ = true;
  std::optional<Dtype> array_dtype_;
};

// ---------------------------------------------------------------- array -> Python

// float16/bfloat16 convert through float.
template <typename T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return static_cast<double>(static_cast<float>(v));
}

template <typename T>
py::object element_to_py(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return py::bool_(v);
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    return py::reinterpret_steal<py::object>(PyLong_FromLongLong(v));
  } else if constexpr (std::is_integral_v<T>) {
    return py::reinterpret_steal<py::object>(PyLong_FromUnsignedLongLong(v));
  } else if constexpr (is_complex_v<T>) {
    return py::reinterpret_steal<py::object>(PyComplex_FromDoubles(v.real(), v.imag()));
  } else {
    return py::reinterpret_steal<py::object>(PyFloat_FromDouble(as_double(v)));
  }
}

template <typename T>
py::object list_of(const T* base, const array& a, size_t dim) {
  if (dim == a.ndim()) return element_to_py(*base);
  int32_t n = a.shape()[dim];
  py::list out(n);
  for (int32_t i = 0; i < n; ++i) {
    PyList_SET_ITEM(out.ptr(), i, list_of(base + i * a.strides()[dim], a, dim + 1).release().ptr());
  }
  return out;
}

std::atomic<int> g_print_precision{-1};

// Element formatting for repr: Python spellings of bools and complex numbers, six
// significant digits for floats.
template <typename T>
void format_element(std::ostream& os, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "True" : "False");
  } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
    os << static_cast<int>(v);
  } else if constexpr (std::is_integral_v<T>) {
    os << v;
  } else if constexpr (is_complex_v<T>) {
    format_element(os, v.real());
    os << (v.imag() < 0 || std::signbit(v.imag()) ? "-" : "+");
    format_element(os, std::abs(v.imag()));
    os << "j";
  } else {
    double d = as_double(v);
    if (std::isnan(d)) {
      os << "nan";
    } else if (std::isinf(d)) {
      os << (d < 0 ? "-inf" : "inf");
    } else if (int p = print_precision(); p >= 0) {
      auto flags = os.flags();
      auto old = os.precision(p);
      os << std::fixed << d;
      os.flags(flags);
      os.precision(old);
    } else {
      os << d;
    }
  }
}

// MLX's summarization: any axis longer than 2 * kEdge shows `kEdge` items at each end
// (NumPy waits for 1000 elements; MLX programs compare printed arrays, so kiln prints as MLX).
constexpr int32_t kEdge = 3;

template <typename T>
void format_dim(std::ostream& os, const T* base, const array& a, size_t dim, size_t indent,
                bool summarize) {
  if (dim == a.ndim()) {
    format_element(os, *base);
    return;
  }
  int32_t n = a.shape()[dim];
  std::string sep = ",";
  // One line per row at every depth (MLX's layout; NumPy adds blank lines between blocks).
  if (dim + 1 < a.ndim())
    sep += "\n" + std::string(indent + dim + 1, ' ');
  else
    sep += " ";
  os << "[";
  bool cut = summarize && n > 2 * kEdge;
  for (int32_t i = 0; i < n; ++i) {
    if (cut && i == kEdge) {
      os << "..." << sep;
      i = n - kEdge;
    }
    format_dim(os, base + i * a.strides()[dim], a, dim + 1, indent, summarize);
    if (i + 1 < n) os << sep;
  }
  os << "]";
}

}  // namespace

// ---------------------------------------------------------------- public functions

[[noreturn]] void throw_index_value_error(const std::string& text) {
  static PyObject* cls = [] {
    PyObject* bases = PyTuple_Pack(2, PyExc_IndexError, PyExc_ValueError);
    PyObject* c = PyErr_NewException("kiln.core.IndexValueError", bases, nullptr);
    Py_XDECREF(bases);
    return c;  // kept for the life of the process
  }();
  if (!cls) throw py::index_error(text);
  PyErr_SetString(cls, text.c_str());
  throw py::error_already_set();
}

int print_precision() {
  return g_print_precision.load();
}
void set_print_precision(int precision) {
  g_print_precision = precision < 0 ? -1 : precision;
}

bool is_array(py::handle h) {
  // Resolved once: the type object lives as long as the module.
  static PyTypeObject* type = reinterpret_cast<PyTypeObject*>(py::type::of<array>().ptr());
  PyTypeObject* t = Py_TYPE(h.ptr());
  return t == type || PyType_IsSubtype(t, type);
}

const array& array_ref(py::handle h) {
  static const py::detail::type_info* info = py::detail::get_type_info(typeid(array));
  auto* inst = reinterpret_cast<py::detail::instance*>(h.ptr());
  return *static_cast<const array*>(inst->get_value_and_holder(info).value_ptr());
}

bool is_numpy_scalar(py::handle h) {
  // Kept for the life of the process.
  static PyObject* generic =
      py::object(py::module_::import("numpy").attr("generic")).release().ptr();
  return PyObject_IsInstance(h.ptr(), generic) == 1;
}

bool is_python_scalar(py::handle obj) {
  return scalar_kind(obj) != ScalarKind::none;
}

bool is_operand(py::handle obj) {
  return is_array(obj) || is_python_scalar(obj) || is_sequence(obj) ||
         py::isinstance<py::array>(obj) || is_numpy_scalar(obj);
}

array to_array(py::handle obj, std::optional<Dtype> like) {
  if (is_array(obj)) return array_ref(obj);
  auto k = scalar_kind(obj);
  if (k != ScalarKind::none) return scalar_to_array(obj, k, like, /*exact=*/false);
  return array_from_python(obj, std::nullopt);
}

std::pair<array, array> to_arrays(const ScalarOrArray& a, const ScalarOrArray& b) {
  // The common case first: two arrays, no conversion.
  if (is_array(a.obj) && is_array(b.obj)) return {array_ref(a.obj), array_ref(b.obj)};
  // A Python scalar is weak only against an array; two scalars keep their default types.
  bool a_weak = is_python_scalar(a.obj), b_weak = is_python_scalar(b.obj);
  if (a_weak && !b_weak) {
    array y = to_array(b.obj);
    return {to_array(a.obj, y.dtype()), y};
  }
  array x = to_array(a.obj);
  return {x, to_array(b.obj, b_weak && !a_weak ? std::optional<Dtype>(x.dtype()) : std::nullopt)};
}

array array_from_python(py::handle obj, std::optional<Dtype> dtype) {
  if (is_array(obj)) {
    const array& a = array_ref(obj);
    return dtype ? astype(a, *dtype) : a;
  }
  if (auto k = scalar_kind(obj); k != ScalarKind::none) {
    return scalar_to_array(obj, k, dtype, /*exact=*/true);
  }
  if (is_sequence(obj)) return ListReader().read(obj, dtype);
  if (py::isinstance<py::array>(obj)) {
    return numpy_to_array(py::reinterpret_borrow<py::array>(obj), dtype);
  }
  if (is_numpy_scalar(obj)) return numpy_to_array(py::array::ensure(obj), dtype);
  if (PyBytes_Check(obj.ptr())) {
    // Raw bytes are a uint8 vector (as MLX and bytearray), not NumPy's one-string array.
    py::array arr = py::module_::import("numpy").attr("frombuffer")(obj, "uint8");
    return numpy_to_array(std::move(arr), dtype);
  }
  bool array_like = !PyUnicode_Check(obj.ptr()) &&
                    (py::hasattr(obj, "__array__") || py::hasattr(obj, "__array_interface__") ||
                     PyObject_CheckBuffer(obj.ptr()));
  if (!PyUnicode_Check(obj.ptr()) && py::hasattr(obj, "__dlpack__")) {
    // DLPack first: it carries what NumPy cannot (PyTorch's bfloat16, CUDA tensors). A copy,
    // as for every other source; producers it cannot read fall back to NumPy's conversion.
    try {
      array a = from_dlpack(py::reinterpret_borrow<py::object>(obj), true);
      return dtype ? astype(a, *dtype) : a;
    } catch (py::builtin_exception&) {
      if (!array_like) throw;
    } catch (py::error_already_set& e) {
      if (!array_like || !(e.matches(PyExc_TypeError) || e.matches(PyExc_BufferError))) throw;
    }
  }
  if (array_like) {
    py::array arr = py::module_::import("numpy").attr("asarray")(obj);
    return numpy_to_array(std::move(arr), dtype);
  }
  throw py::type_error("[array] Cannot convert an object of type " +
                       std::string(Py_TYPE(obj.ptr())->tp_name) +
                       " to an array; expected a scalar, a (nested) list or tuple, or an array.");
}

void eval_nogil(array& a) {
  if (a.status() == array::Status::available && !a.error()) return;
  py::gil_scoped_release nogil;
  a.eval();
}

py::object to_scalar(array& a) {
  if (a.size() != 1) {
    throw std::invalid_argument(
        msg("[item] Only arrays with one element can be converted to a "
            "Python scalar; got shape ",
            shape_str(a.shape()), "."));
  }
  eval_nogil(a);
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return element_to_py(*a.data<T>());
  });
}

py::object to_list(array& a) {
  eval_nogil(a);
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return list_of(a.data<T>(), a, 0);
  });
}

py::dtype to_numpy_dtype(Dtype d) {
  // Created once and kept for the life of the process.
  static auto* cache = new std::optional<py::dtype>[Dtype::num_types];
  auto& slot = cache[static_cast<int>(d.val)];
  if (!slot) {
    if (d == bfloat16) {
      try {
        slot = py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
      } catch (py::error_already_set&) {
        throw py::type_error(
            "[array] NumPy has no bfloat16; install ml_dtypes (pip install ml_dtypes) to "
            "convert bfloat16 arrays, or convert first with x.astype(kiln.core.float32).");
      }
    } else {
      slot = py::dtype(std::string(dtype_name(d)));
    }
  }
  return *slot;
}

std::optional<Dtype> from_numpy_dtype(const py::dtype& dt) {
  auto size = dt.itemsize();
  switch (dt.kind()) {
    case 'b':
      return bool_;
    case 'u':
      if (size == 1) return uint8;
      if (size == 2) return uint16;
      if (size == 4) return uint32;
      if (size == 8) return uint64;
      break;
    case 'i':
      if (size == 1) return int8;
      if (size == 2) return int16;
      if (size == 4) return int32;
      if (size == 8) return int64;
      break;
    case 'f':
      if (size == 2) return float16;
      if (size == 4) return float32;
      if (size == 8) return float64;
      break;
    case 'c':
      if (size == 8) return complex64;
      break;
    case 'V':
      if (size == 2 && py::str(dt.attr("name")).cast<std::string>() == "bfloat16") return bfloat16;
      break;
  }
  return std::nullopt;
}

py::array to_numpy_view(array& a, bool writable) {
  py::dtype dt = to_numpy_dtype(a.dtype());
  eval_nogil(a);
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end());
  if (a.size() == 0) {
    py::array out(dt, shape);
    out.attr("flags").attr("writeable") = writable;
    return out;
  }
  std::vector<py::ssize_t> strides;
  for (auto s : a.strides()) strides.push_back(static_cast<py::ssize_t>(s * a.itemsize()));
  const void* ptr;
  {
    // A GPU-resident array is copied to the host here (once; the copy is kept).
    py::gil_scoped_release nogil;
    ptr = a.data<char>();
  }
  // The view owns a handle on the array, so the buffer lives as long as the view. A writable
  // view counts as a host writer of the buffer until it is released (Storage).
  py::capsule owner;
  if (writable) {
    host_writes::add_writer(a.storage());
    owner = py::capsule(new array(a), [](void* p) {
      auto* held = static_cast<array*>(p);
      host_writes::remove_writer(held->storage());
      delete held;
    });
  } else {
    owner = py::capsule(new array(a), [](void* p) { delete static_cast<array*>(p); });
  }
  py::array out(dt, shape, strides, ptr, owner);
  if (!writable) out.attr("flags").attr("writeable") = false;
  return out;
}

std::string array_repr(array& a) {
  eval_nogil(a);
  std::ostringstream os;
  os << "array(";
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    format_dim(os, a.data<T>(), a, 0, /*indent=*/6, /*summarize=*/true);
  });
  os << ", dtype=" << dtype_name(a.dtype()) << ")";
  return os.str();
}

}  // namespace kiln::python
