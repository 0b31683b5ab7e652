// Conversions between Python objects and kiln arrays: scalars (with MLX's weak typing),
// nested lists, NumPy arrays, and back (item, tolist, NumPy views, repr).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <utility>

#include "kiln/kiln.h"

namespace py = pybind11;

namespace kiln::python {

/**
 * An operand that may be a Python scalar: kiln arrays, Python bool/int/float/complex,
 * NumPy arrays and scalars, and (nested) lists or tuples. Ops that take one promote Python
 * scalars weakly (see `to_array`).
 */
struct ScalarOrArray {
  py::object obj;
};

/** Whether `obj` is a kiln array (a cached type check: this is on every op's path). */
bool is_array(py::handle obj);

/** The array held by `obj`, which must satisfy `is_array` (no lookup, no copy). */
const array& array_ref(py::handle obj);

/** Whether `obj` is a Python bool, int, float or complex (the weakly typed scalars). */
bool is_python_scalar(py::handle obj);

/** Whether `obj` is a NumPy scalar (an instance of numpy.generic). */
bool is_numpy_scalar(py::handle obj);

/**
 * Raises kiln.core.IndexValueError (a subclass of both IndexError and ValueError) with
 * `text`: indexing mistakes NumPy reports as IndexError and MLX as ValueError (too many
 * indices, out-of-bounds indices, a boolean mask of the wrong shape, indices beyond 32 bits), so
 * code written for either catches it.
 */
[[noreturn]] void throw_index_value_error(const std::string& text);

/** Whether `obj` can be an operand of an op (see ScalarOrArray). */
bool is_operand(py::handle obj);

/**
 * Converts a Python value to an array. A Python scalar takes the dtype `like` when it fits
 * its kind, as in MLX: an int takes any numeric dtype (OverflowError if out of range), a
 * float takes a floating or complex dtype (else float32), a complex gives complex64, a
 * bool stays bool. Without `like`, a scalar gets the default dtype of its kind. Arrays and
 * array-likes keep their own dtype.
 */
array to_array(py::handle obj, std::optional<Dtype> like = std::nullopt);

/** Both operands of a binary op: Python scalars take the dtype of the other operand. */
std::pair<array, array> to_arrays(const ScalarOrArray& a, const ScalarOrArray& b);

/**
 * The `array(val, dtype=None)` constructor: Python scalars, nested lists/tuples (possibly
 * holding arrays), NumPy arrays and scalars, kiln arrays, and objects NumPy can convert
 * (`__array__`, the buffer protocol). Copies the data. Errors: TypeError for unsupported
 * types or NumPy dtypes, ValueError for ragged lists, OverflowError for integers outside the
 * dtype's range.
 */
array array_from_python(py::handle obj, std::optional<Dtype> dtype);

/** Evaluates `a` with the GIL released (evaluation may run Python-owned deleters on other
 * threads, which need the GIL). */
void eval_nogil(array& a);

/** The single element as a Python scalar (evaluates). ValueError unless size is 1. */
py::object to_scalar(array& a);

/** Nested Python lists of Python scalars (evaluates); a 0-d array gives a scalar. */
py::object to_list(array& a);

/** The NumPy dtype of `d`; bfloat16 needs ml_dtypes (TypeError otherwise). */
py::dtype to_numpy_dtype(Dtype d);

/** The kiln dtype of a NumPy dtype, or nullopt when kiln has no such type. */
std::optional<Dtype> from_numpy_dtype(const py::dtype& dt);

/** A NumPy array viewing `a`'s host data (evaluates; no copy). The view keeps the buffer
 * alive. `writable` (MLX's semantics): writes through the view change the array; the view
 * counts as a host writer of the buffer, so the GPU re-reads the host copy
 * (kiln/host_writes.h). */
py::array to_numpy_view(array& a, bool writable = true);

/** MLX-style repr: `array([1, 2], dtype=int32)` (evaluates). */
std::string array_repr(array& a);

/** Digits after the point of floats in reprs (set_printoptions); -1: six significant. */
int print_precision();
void set_print_precision(int precision);

}  // namespace kiln::python

namespace pybind11::detail {

template <>
struct type_caster<kiln::python::ScalarOrArray> {
  PYBIND11_TYPE_CASTER(kiln::python::ScalarOrArray,
                       const_name("kiln._core.array | bool | int | float | complex"));

  bool load(handle src, bool /*convert*/) {
    if (!kiln::python::is_operand(src)) return false;
    value.obj = reinterpret_borrow<object>(src);
    return true;
  }
  static handle cast(const kiln::python::ScalarOrArray& v, return_value_policy, handle) {
    return v.obj.inc_ref();
  }
};

}  // namespace pybind11::detail
