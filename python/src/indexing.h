// NumPy indexing for kiln arrays: `a[index]`, `a[index] = value` and `a.at[index].op(value)`.
//
// Basic indices (integers, slices, ellipsis, None) become a slice and a reshape (views);
// integer arrays, and boolean masks (whose values are read on the host), become take or
// gather; updates become slice_update or scatter. Results follow NumPy, including where
// the dimensions of advanced indices go when they are not adjacent.
#pragma once

#include <pybind11/pybind11.h>

#include "kiln/kiln.h"

namespace py = pybind11;

namespace kiln::python {

/** `a[index]`. IndexError for out-of-range integers, too many indices, bad index types,
 * mask shape mismatches and index arrays that do not broadcast. */
array getitem(const array& a, py::handle index);

/** The array `a` with `a[index]` replaced by `value` (broadcast, cast to a's dtype). */
array setitem(const array& a, py::handle index, py::handle value);

/** The functional updates of `a.at[index]`. Unlike `a[index] += v`, repeated indices
 * accumulate (each occurrence applies). */
enum class AtOp { add, subtract, multiply, divide, maximum, minimum };
array at_update(const array& a, py::handle index, py::handle value, AtOp op);

}  // namespace kiln::python
