// Argument helpers shared by the op bindings and the array methods.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "kiln/kiln.h"

namespace py = pybind11;

namespace kiln::python {

/** An `axis=` argument: None (all axes), an int, or a sequence of ints. */
using Axis = std::variant<std::monostate, int, std::vector<int>>;

/** A `shape=` argument: an int or a sequence of ints (see the type caster below: sizes that
 * do not fit int32 raise OverflowError naming the value, as MLX's do). */
struct ShapeArg {
  Shape shape;
};

inline Shape to_shape(const ShapeArg& s) {
  return s.shape;
}

}  // namespace kiln::python

namespace pybind11::detail {
template <>
struct type_caster<kiln::python::ShapeArg> {
  PYBIND11_TYPE_CASTER(kiln::python::ShapeArg, const_name("int | Sequence[int]"));

  static bool dimension(handle h, int32_t& out) {
    if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr())) return false;
    object i = reinterpret_steal<object>(PyNumber_Index(h.ptr()));
    if (!i) {
      PyErr_Clear();
      return false;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow || v < INT32_MIN || v > INT32_MAX) {
      throw pybind11::value_error();  // replaced below with OverflowError
    }
    out = static_cast<int32_t>(v);
    return true;
  }
  bool load(handle src, bool) {
    try {
      value.shape.clear();
      int32_t d;
      if (PyIndex_Check(src.ptr()) && !PyBool_Check(src.ptr())) {
        if (!dimension(src, d)) return false;
        value.shape.push_back(d);
        return true;
      }
      if (!PyList_Check(src.ptr()) && !PyTuple_Check(src.ptr())) return false;
      for (auto item : reinterpret_borrow<sequence>(src)) {
        if (!dimension(item, d)) return false;
        value.shape.push_back(d);
      }
      return true;
    } catch (const pybind11::value_error&) {
      std::string text = str(src).cast<std::string>();
      PyErr_SetString(PyExc_OverflowError,
                      ("Shape dimension in " + text +
                       " is outside the supported range [-2147483648, 2147483647] (kiln uses "
                       "32-bit shape dimensions).")
                          .c_str());
      throw error_already_set();
    }
  }
};
}  // namespace pybind11::detail

namespace kiln::python {

/** The reduction NAME over `axis` (see Axis). */
#define KILN_PY_REDUCTION(NAME)                                                                   \
  inline array reduce_##NAME(const array& a, const Axis& axis, bool keepdims, StreamOrDevice s) { \
    if (auto* i = std::get_if<int>(&axis)) return NAME(a, *i, keepdims, s);                       \
    if (auto* v = std::get_if<std::vector<int>>(&axis)) return NAME(a, *v, keepdims, s);          \
    return NAME(a, keepdims, s);                                                                  \
  }
KILN_PY_REDUCTION(sum)
KILN_PY_REDUCTION(prod)
KILN_PY_REDUCTION(max)
KILN_PY_REDUCTION(min)
KILN_PY_REDUCTION(mean)
KILN_PY_REDUCTION(all)
KILN_PY_REDUCTION(any)
KILN_PY_REDUCTION(logsumexp)
#undef KILN_PY_REDUCTION

/** var / std with `ddof`. */
#define KILN_PY_MOMENT(NAME)                                                                   \
  inline array reduce_##NAME(const array& a, const Axis& axis, bool keepdims, int ddof,        \
                             StreamOrDevice s) {                                               \
    if (auto* i = std::get_if<int>(&axis)) return NAME(a, *i, keepdims, ddof, s);              \
    if (auto* v = std::get_if<std::vector<int>>(&axis)) return NAME(a, *v, keepdims, ddof, s); \
    return NAME(a, keepdims, ddof, s);                                                         \
  }
KILN_PY_MOMENT(var)
KILN_PY_MOMENT(std)
#undef KILN_PY_MOMENT

/** argmax / argmin over one axis, or the flattened array when `axis` is None. */
inline array reduce_argmax(const array& a, std::optional<int> axis, bool keepdims,
                           StreamOrDevice s) {
  return axis ? argmax(a, *axis, keepdims, s) : argmax(a, keepdims, s);
}
inline array reduce_argmin(const array& a, std::optional<int> axis, bool keepdims,
                           StreamOrDevice s) {
  return axis ? argmin(a, *axis, keepdims, s) : argmin(a, keepdims, s);
}

/** A scan along `axis`, or along the flattened array when `axis` is None. */
inline array scan_cumsum(const array& a, std::optional<int> axis, bool reverse, bool inclusive,
                         StreamOrDevice s) {
  return axis ? cumsum(a, *axis, reverse, inclusive, s)
              : cumsum(reshape(a, {-1}, s), 0, reverse, inclusive, s);
}
inline array scan_cumprod(const array& a, std::optional<int> axis, bool reverse, bool inclusive,
                          StreamOrDevice s) {
  return axis ? cumprod(a, *axis, reverse, inclusive, s)
              : cumprod(reshape(a, {-1}, s), 0, reverse, inclusive, s);
}

inline array scan_cummax(const array& a, std::optional<int> axis, bool reverse, bool inclusive,
                         StreamOrDevice s) {
  return axis ? cummax(a, *axis, reverse, inclusive, s)
              : cummax(reshape(a, {-1}, s), 0, reverse, inclusive, s);
}
inline array scan_cummin(const array& a, std::optional<int> axis, bool reverse, bool inclusive,
                         StreamOrDevice s) {
  return axis ? cummin(a, *axis, reverse, inclusive, s)
              : cummin(reshape(a, {-1}, s), 0, reverse, inclusive, s);
}
inline array scan_logcumsumexp(const array& a, std::optional<int> axis, bool reverse,
                               bool inclusive, StreamOrDevice s) {
  return axis ? logcumsumexp(a, *axis, reverse, inclusive, s)
              : logcumsumexp(reshape(a, {-1}, s), 0, reverse, inclusive, s);
}

/** split by a number of equal sections or by indices. */
inline std::vector<array> split_by(const array& a, const std::variant<int, std::vector<int>>& how,
                                   int axis, StreamOrDevice s) {
  if (auto* n = std::get_if<int>(&how)) return split(a, *n, axis, s);
  const auto& v = std::get<std::vector<int>>(how);
  return split(a, Shape(v.begin(), v.end()), axis, s);
}

/** squeeze of all size-1 axes, one axis, or several. */
inline array squeeze_axes(const array& a, const Axis& axis, StreamOrDevice s) {
  if (auto* i = std::get_if<int>(&axis)) return squeeze(a, *i, s);
  if (auto* v = std::get_if<std::vector<int>>(&axis)) return squeeze(a, *v, s);
  return squeeze(a, s);
}

/** Shapes or axes given either as one sequence or as separate ints (`x.reshape(2, 3)`). */
inline std::vector<int> ints_from_args(const py::args& args) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return args[0].cast<std::vector<int>>();
  return args.cast<std::vector<int>>();
}

}  // namespace kiln::python
