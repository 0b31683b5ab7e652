#include "indexing.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "convert.h"

namespace kiln::python {

namespace {

[[noreturn]] void index_error(const std::string& m) {
  throw py::index_error(m);
}

// Indices and slice bounds are 32-bit in kiln (shapes are int32), as in MLX; PySlice_Unpack
// clamps larger bounds to PY_SSIZE_T_MAX/MIN, which are out of range here too.
void check_int32_index(Py_ssize_t v, const char* op) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    throw_index_value_error(
        msg("[", op, "] Indices and slice bounds must be 32-bit integers; got ", v, "."));
  }
}

// One component of an index tuple, resolved against the array's axes.
struct Entry {
  enum class Kind { integer, slice, newaxis, ellipsis, index_array, mask, bool_scalar };
  Kind kind;
  int64_t value = 0;           // integer (normalized once the axis is known); bool_scalar
  py::object slice{};          // the Python slice (null for a full slice added by `...`)
  std::optional<array> arr{};  // index_array or mask
  int axis = -1;               // the source axis (integer, slice, index_array)
  int32_t start = 0, stop = 0, step = 1, length = 0;  // slice, as kiln::slice arguments

  bool advanced() const { return kind == Kind::index_array || kind == Kind::integer; }
};

using Kind = Entry::Kind;

struct Plan {
  std::vector<Entry> entries;
  bool advanced = false;       // any index array (then integers count as advanced too)
  bool any_false = false;      // a `False` index: the result is empty
  Shape starts, stops, steps;  // the slice of the source taken before any gather
  bool needs_slice = false;
};

Entry array_entry(array arr, const char* op) {
  Entry e{Kind::index_array};
  if (arr.dtype() == bool_) {
    if (arr.ndim() == 0) {
      e.kind = Kind::bool_scalar;
      e.value = to_scalar(arr).cast<bool>();
      return e;
    }
    e.kind = Kind::mask;
  } else if (!is_integral(arr.dtype())) {
    // An empty list converts to float32; as an index it means "no elements".
    if (arr.size() != 0) {
      index_error(msg("[", op,
                      "] Arrays used as indices must be of integer (or boolean) type; "
                      "got ",
                      arr.dtype(), "."));
    }
    arr = astype(arr, int32);
  }
  e.arr = std::move(arr);
  return e;
}

Entry classify(py::handle h, const char* op) {
  PyObject* o = h.ptr();
  if (o == Py_None) return Entry{Kind::newaxis};
  if (o == Py_Ellipsis) return Entry{Kind::ellipsis};
  if (PySlice_Check(o)) {
    Entry e{Kind::slice};
    e.slice = py::reinterpret_borrow<py::object>(h);
    return e;
  }
  if (PyBool_Check(o)) {
    Entry e{Kind::bool_scalar};
    e.value = o == Py_True;
    return e;
  }
  if (is_array(h)) return array_entry(array_ref(h), op);
  if (PyLong_Check(o) || (is_numpy_scalar(h) && PyIndex_Check(o))) {
    Entry e{Kind::integer};
    e.value = PyNumber_AsSsize_t(o, PyExc_IndexError);
    if (e.value == -1 && PyErr_Occurred()) throw py::error_already_set();
    check_int32_index(e.value, op);
    return e;
  }
  if (PyList_Check(o) || PyTuple_Check(o) || py::isinstance<py::array>(h) || is_numpy_scalar(h)) {
    return array_entry(array_from_python(h, std::nullopt), op);
  }
  index_error(msg("[", op,
                  "] Only integers, slices (`:`), ellipsis (`...`), None and integer or "
                  "boolean arrays are valid indices; got ",
                  Py_TYPE(o)->tp_name, "."));
}

// The coordinates of the true elements of a mask (row-major), one int32 array per axis.
std::vector<array> nonzero(array mask) {
  eval_nogil(mask);
  std::vector<std::vector<int32_t>> coords(mask.ndim());
  const bool* base = mask.data<bool>();
  std::vector<int32_t> idx(mask.ndim(), 0);
  for (size_t i = 0; i < mask.size(); ++i) {
    if (base[elem_to_loc(static_cast<int64_t>(i), mask.shape(), mask.strides())]) {
      for (size_t d = 0; d < mask.ndim(); ++d) coords[d].push_back(idx[d]);
    }
    for (int d = static_cast<int>(mask.ndim()) - 1; d >= 0; --d) {
      if (++idx[d] < mask.shape()[d]) break;
      idx[d] = 0;
    }
  }
  std::vector<array> out;
  for (auto& c : coords) {
    int32_t n = static_cast<int32_t>(c.size());
    out.push_back(array(c.begin(), Shape{n}, int32));
  }
  return out;
}

void resolve_slice(Entry& e, int32_t n) {
  Py_ssize_t start = 0, stop = n, step = 1;
  if (e.slice && PySlice_Unpack(e.slice.ptr(), &start, &stop, &step) < 0) {
    throw py::error_already_set();
  }
  if (e.slice) {
    // Bounds given explicitly must fit 32 bits, as MLX requires (None stays unbounded).
    auto* sl = reinterpret_cast<PySliceObject*>(e.slice.ptr());
    if (sl->start != Py_None) check_int32_index(start, "slice");
    if (sl->stop != Py_None) check_int32_index(stop, "slice");
    if (sl->step != Py_None) check_int32_index(step, "slice");
  }
  Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
  e.step = static_cast<int32_t>(std::clamp<Py_ssize_t>(step, -n - 1, n + 1));
  e.length = static_cast<int32_t>(len);
  if (len == 0) {
    start = stop = 0;
  } else if (step < 0 && stop < 0) {
    // "Before the first element" for a backward slice; -n-1 is unambiguous whether the slice
    // op wraps negative stops (Python) or not.
    stop = -static_cast<Py_ssize_t>(n) - 1;
  }
  e.start = static_cast<int32_t>(start);
  e.stop = static_cast<int32_t>(stop);
}

Plan parse(const array& a, py::handle index, const char* op) {
  std::vector<Entry> raw;
  if (PyTuple_Check(index.ptr())) {
    for (auto item : py::reinterpret_borrow<py::tuple>(index)) raw.push_back(classify(item, op));
  } else {
    raw.push_back(classify(index, op));
  }

  int ndim = static_cast<int>(a.ndim());
  int consumed = 0, ellipses = 0;
  for (auto& e : raw) {
    if (e.kind == Kind::integer || e.kind == Kind::slice || e.kind == Kind::index_array)
      ++consumed;
    else if (e.kind == Kind::mask)
      consumed += static_cast<int>(e.arr->ndim());
    else if (e.kind == Kind::ellipsis)
      ++ellipses;
  }
  if (ellipses > 1)
    throw_index_value_error(msg("[", op, "] An index can only have a single ellipsis ('...')."));
  if (consumed > ndim) {
    throw_index_value_error(msg("[", op, "] Too many indices for array: array is ", ndim,
                                "-dimensional, but ", consumed, " were indexed."));
  }

  Plan p;
  int axis = 0;
  auto full_slices = [&] {
    for (int i = consumed; i < ndim; ++i) {
      Entry e{Kind::slice};
      e.axis = axis++;
      p.entries.push_back(std::move(e));
    }
  };
  for (auto& e : raw) {
    if (e.kind == Kind::ellipsis) {
      full_slices();
      continue;
    }
    if (e.kind == Kind::mask) {
      const array& m = *e.arr;
      for (size_t d = 0; d < m.ndim(); ++d) {
        if (m.shape()[d] != a.shape()[axis + d]) {
          throw_index_value_error(
              msg("[", op, "] Boolean index did not match indexed array along axis ", axis + d,
                  "; size of axis is ", a.shape()[axis + d],
                  " but size of corresponding boolean axis is ", m.shape()[d], "."));
        }
      }
      for (auto& coords : nonzero(m)) {
        Entry c{Kind::index_array};
        c.arr = std::move(coords);
        c.axis = axis++;
        p.entries.push_back(std::move(c));
      }
      continue;
    }
    if (e.kind == Kind::integer || e.kind == Kind::slice || e.kind == Kind::index_array) {
      e.axis = axis++;
    }
    p.entries.push_back(std::move(e));
  }
  if (ellipses == 0) full_slices();

  p.starts.assign(ndim, 0);
  p.stops = a.shape();
  p.steps.assign(ndim, 1);
  for (auto& e : p.entries) {
    p.advanced |= e.kind == Kind::index_array;
    p.any_false |= e.kind == Kind::bool_scalar && !e.value;
  }
  for (auto& e : p.entries) {
    if (e.kind == Kind::integer) {
      int32_t n = a.shape()[e.axis];
      if (e.value < -n || e.value >= n) {
        throw_index_value_error(msg("[", op, "] Index ", e.value, " is out of bounds for axis ",
                                    e.axis, " with size ", n, "."));
      }
      if (e.value < 0) e.value += n;
      if (!p.advanced) {
        p.starts[e.axis] = static_cast<int32_t>(e.value);
        p.stops[e.axis] = static_cast<int32_t>(e.value + 1);
        p.needs_slice = true;
      }
    } else if (e.kind == Kind::slice) {
      int32_t n = a.shape()[e.axis];
      resolve_slice(e, n);
      if (e.start != 0 || e.stop != n || e.step != 1) {
        p.starts[e.axis] = e.start;
        p.stops[e.axis] = e.stop;
        p.steps[e.axis] = e.step;
        p.needs_slice = true;
      }
    }
  }
  if (p.advanced) {
    for (auto& e : p.entries) {
      if (e.kind == Kind::bool_scalar) {
        index_error(msg("[", op,
                        "] A boolean scalar index combined with index arrays is not "
                        "supported."));
      }
    }
  }
  return p;
}

// Shape of a basic (no index arrays) indexing result, and of the slice it reads.
Shape basic_result_shape(const Plan& p) {
  Shape s;
  for (auto& e : p.entries) {
    if (e.kind == Kind::slice)
      s.push_back(e.length);
    else if (e.kind == Kind::newaxis)
      s.push_back(1);
    else if (e.kind == Kind::bool_scalar)
      s.push_back(e.value ? 1 : 0);
  }
  return s;
}

Shape basic_slice_shape(const array& a, const Plan& p) {
  Shape s = a.shape();
  for (auto& e : p.entries) {
    if (e.kind == Kind::integer)
      s[e.axis] = 1;
    else if (e.kind == Kind::slice)
      s[e.axis] = e.length;
  }
  return s;
}

array sliced(const array& a, const Plan& p) {
  return p.needs_slice ? slice(a, p.starts, p.stops, p.steps) : a;
}

// An index array ready for take/gather along an axis of size n: int32, in range. Arrays
// whose values are already on the host are checked (IndexError) and wrapped here; lazy ones
// are left to the op, which wraps negative indices.
array prepare_index(const Entry& e, int32_t n, const char* op) {
  if (e.kind == Kind::integer) return array(static_cast<int32_t>(e.value), int32);
  array idx = *e.arr;
  bool on_host = idx.status() == array::Status::available && !idx.error() && idx.has_storage() &&
                 idx.storage().has_host();
  if (!on_host) return idx.dtype() == int32 ? idx : astype(idx, int32);
  bool ok_as_is = idx.dtype() == int32;
  std::vector<int32_t> vals(idx.size());
  dispatch_dtype(idx.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* base = idx.data<T>();
      for (size_t i = 0; i < idx.size(); ++i) {
        auto v = static_cast<int64_t>(
            base[elem_to_loc(static_cast<int64_t>(i), idx.shape(), idx.strides())]);
        if (v < -static_cast<int64_t>(n) || v >= n) {
          throw_index_value_error(msg("[", op, "] Index ", v, " is out of bounds for axis ", e.axis,
                                      " with size ", n, "."));
        }
        ok_as_is &= v >= 0;
        vals[i] = static_cast<int32_t>(v < 0 ? v + n : v);
      }
    }
  });
  if (ok_as_is) return idx;
  return array(vals.begin(), idx.shape(), int32);
}

struct Gathered {
  std::vector<array> indices;
  std::vector<int> axes;
  Shape shape;  // the broadcast shape of the indices
};

Gathered gather_indices(const array& src, const Plan& p, const char* op) {
  Gathered g;
  for (auto& e : p.entries) {
    if (!e.advanced()) continue;
    g.axes.push_back(e.axis);
    g.indices.push_back(prepare_index(e, src.shape()[e.axis], op));
  }
  try {
    g.shape = broadcast_shapes(g.indices, op);
  } catch (const std::invalid_argument&) {
    std::string shapes;
    for (auto& i : g.indices) shapes += " " + shape_str(i.shape());
    index_error(msg("[", op,
                    "] Shape mismatch: indexing arrays could not be broadcast together "
                    "with shapes",
                    shapes, "."));
  }
  return g;
}

// Whether the advanced indices are next to each other in the index (then their result
// dimensions replace them in place; otherwise they come first, as in NumPy).
bool adjacent(const Plan& p) {
  int first = -1, last = -1, count = 0;
  for (int i = 0; i < static_cast<int>(p.entries.size()); ++i) {
    if (!p.entries[i].advanced()) continue;
    if (first < 0) first = i;
    last = i;
    ++count;
  }
  return last - first + 1 == count;
}

array basic_get(const array& a, const Plan& p) {
  Shape shape = basic_result_shape(p);
  // A `False` index gives a size-0 dimension: nothing to read.
  if (p.any_false) return zeros(shape, a.dtype());
  array out = sliced(a, p);
  return out.shape() == shape ? out : reshape(out, shape);
}

array advanced_get(const array& a, const Plan& p) {
  const char* op = "getitem";
  array src = sliced(a, p);
  Gathered g = gather_indices(src, p, op);
  int bnd = static_cast<int>(g.shape.size());
  array out = [&] {
    if (g.indices.size() == 1) return take(src, g.indices[0], g.axes[0]);
    Shape slice_sizes = src.shape();
    for (int ax : g.axes) slice_sizes[ax] = 1;
    array r = gather(src, g.indices, g.axes, slice_sizes);
    Shape s = g.shape;
    for (int i = 0; i < static_cast<int>(src.ndim()); ++i) {
      if (std::find(g.axes.begin(), g.axes.end(), i) == g.axes.end()) s.push_back(src.shape()[i]);
    }
    return reshape(r, s);
  }();
  bool adj = adjacent(p);
  if (adj && g.indices.size() > 1) {
    // Move the index dimensions to where the indices were.
    int before = 0;
    for (auto& e : p.entries) {
      if (e.advanced()) break;
      before += e.kind == Kind::slice;
    }
    if (before > 0) {
      std::vector<int> perm;
      for (int i = 0; i < before; ++i) perm.push_back(bnd + i);
      for (int i = 0; i < bnd; ++i) perm.push_back(i);
      for (int i = bnd + before; i < static_cast<int>(out.ndim()); ++i) perm.push_back(i);
      out = transpose(out, perm);
    }
  }
  // New axes from None, at their place among the output dimensions.
  std::vector<int> new_axes;
  int pos = adj ? 0 : bnd;
  bool placed = !adj;
  for (auto& e : p.entries) {
    if (e.advanced()) {
      if (!placed) pos += bnd;
      placed = true;
    } else if (e.kind == Kind::slice) {
      ++pos;
    } else if (e.kind == Kind::newaxis) {
      new_axes.push_back(pos++);
    }
  }
  return new_axes.empty() ? out : expand_dims(out, new_axes);
}

// `value` as an update for `target_shape`: weakly typed against and cast to `dtype`, leading
// unit dimensions beyond the target dropped (as NumPy), broadcast.
array prepare_update(py::handle value, Dtype dtype, const Shape& target_shape, const char* op) {
  array v = to_array(value, dtype);
  if (v.dtype() != dtype) v = astype(v, dtype);
  size_t lead = 0;
  while (v.ndim() - lead > target_shape.size() && v.shape()[lead] == 1) ++lead;
  if (lead)
    v = reshape(v, Shape(v.shape().begin() + static_cast<std::ptrdiff_t>(lead), v.shape().end()));
  bool ok = v.ndim() <= target_shape.size();
  for (size_t i = 1; ok && i <= v.ndim(); ++i) {
    int32_t d = v.shape()[v.ndim() - i];
    ok = d == 1 || d == target_shape[target_shape.size() - i];
  }
  if (!ok) {
    throw std::invalid_argument(msg("[", op, "] Cannot broadcast a value of shape ",
                                    shape_str(v.shape()), " to the indexed shape ",
                                    shape_str(target_shape), "."));
  }
  return broadcast_to(v, target_shape);
}

// Scatter of `updates` into `a` at `index` (advanced): directly when the index arrays lead
// and everything after them is a full slice, else through the flat positions of the
// selected elements.
template <typename ScatterFn>
array scatter_at(const array& a, const Plan& p, py::handle index, py::handle value, Dtype udtype,
                 ScatterFn scatter_fn, const char* op) {
  size_t k = 0;
  while (k < p.entries.size() && p.entries[k].advanced() &&
         p.entries[k].axis == static_cast<int>(k))
    ++k;
  bool direct = true;
  for (size_t i = k; i < p.entries.size(); ++i) {
    const Entry& e = p.entries[i];
    direct &= e.kind == Kind::slice && e.start == 0 && e.stop == a.shape()[e.axis] && e.step == 1;
  }
  if (direct) {
    Gathered g = gather_indices(a, p, op);
    Shape result = g.shape;
    result.insert(result.end(), a.shape().begin() + static_cast<std::ptrdiff_t>(k),
                  a.shape().end());
    array upd = prepare_update(value, udtype, result, op);
    if (shape_size(result) == 0) return a;  // nothing selected (an empty mask or array)
    Shape upd_shape = g.shape;
    upd_shape.insert(upd_shape.end(), k, 1);
    upd_shape.insert(upd_shape.end(), a.shape().begin() + static_cast<std::ptrdiff_t>(k),
                     a.shape().end());
    return scatter_fn(a, g.indices, reshape(upd, upd_shape), g.axes);
  }
  Dtype pos_dtype =
      a.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ? int64 : int32;
  array positions = reshape(arange(0.0, static_cast<double>(a.size()), 1.0, pos_dtype), a.shape());
  array selected = getitem(positions, index);
  array upd = prepare_update(value, udtype, selected.shape(), op);
  int32_t n = static_cast<int32_t>(selected.size());
  if (n == 0) return a;
  array flat = reshape(a, {static_cast<int32_t>(a.size())});
  array out = scatter_fn(flat, {reshape(selected, {n})}, reshape(upd, {n, 1}), {0});
  return reshape(out, a.shape());
}

}  // namespace

array getitem(const array& a, py::handle index) {
  Plan p = parse(a, index, "getitem");
  return p.advanced ? advanced_get(a, p) : basic_get(a, p);
}

array setitem(const array& a, py::handle index, py::handle value) {
  const char* op = "setitem";
  Plan p = parse(a, index, op);
  if (p.advanced) {
    auto fn = [](const array& x, const std::vector<array>& idx, const array& upd,
                 const std::vector<int>& axes) { return scatter(x, idx, upd, axes); };
    return scatter_at(a, p, index, value, a.dtype(), fn, op);
  }
  array upd = prepare_update(value, a.dtype(), basic_result_shape(p), op);
  if (p.any_false) return a;
  Shape slice_shape = basic_slice_shape(a, p);
  if (upd.shape() != slice_shape) upd = reshape(upd, slice_shape);
  if (!p.needs_slice) return upd;
  return slice_update(a, upd, p.starts, p.stops, p.steps);
}

array at_update(const array& a, py::handle index, py::handle value, AtOp op) {
  static constexpr const char* names[] = {"at.add",    "at.subtract", "at.multiply",
                                          "at.divide", "at.maximum",  "at.minimum"};
  const char* name = names[static_cast<int>(op)];
  Plan p = parse(a, index, name);
  // maximum/minimum always scatter, as MLX does: their gradient at ties (the cotangent to the
  // source and to the update alike) is the Scatter primitive's.
  if (!p.advanced && op != AtOp::maximum && op != AtOp::minimum) {
    // A basic index selects each element once: read, combine, write back.
    array x = basic_get(a, p);
    array v = to_array(value, a.dtype());
    array r = [&] {
      switch (op) {
        case AtOp::add:
          return add(x, v);
        case AtOp::subtract:
          return subtract(x, v);
        case AtOp::multiply:
          return multiply(x, v);
        case AtOp::divide:
          return divide(x, v);
        default:
          return x;  // maximum and minimum scatter (above)
      }
    }();
    return setitem(a, index, py::cast(astype(r, a.dtype())));
  }
  using Fn = array (*)(const array&, const std::vector<array>&, const array&,
                       const std::vector<int>&, StreamOrDevice);
  auto with = [](Fn f) {
    return [f](const array& x, const std::vector<array>& idx, const array& upd,
               const std::vector<int>& axes) { return f(x, idx, upd, axes, {}); };
  };
  switch (op) {
    case AtOp::add:
      return scatter_at(a, p, index, value, a.dtype(), with(&scatter_add), name);
    case AtOp::maximum:
      return scatter_at(a, p, index, value, a.dtype(), with(&scatter_max), name);
    case AtOp::minimum:
      return scatter_at(a, p, index, value, a.dtype(), with(&scatter_min), name);
    case AtOp::multiply:
      return scatter_at(a, p, index, value, a.dtype(), with(&scatter_prod), name);
    case AtOp::subtract: {
      array v = negative(to_array(value, a.dtype()));
      return scatter_at(a, p, index, py::cast(v), a.dtype(), with(&scatter_add), name);
    }
    case AtOp::divide: {
      // Multiply by reciprocals in the division's result type, then cast back.
      array v = to_array(value, a.dtype());
      Dtype f = promote_types(is_inexact(a.dtype()) ? a.dtype() : float32, v.dtype());
      if (!is_inexact(f)) f = float32;
      array r = scatter_at(astype(a, f), p, index, py::cast(reciprocal(astype(v, f))), f,
                           with(&scatter_prod), name);
      return astype(r, a.dtype());
    }
  }
  return a;
}

}  // namespace kiln::python
