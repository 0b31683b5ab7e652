// Layout ops: dtype conversion, copies, broadcasting, reshapes, axis permutations, slicing,
// and joining, splitting, tiling and padding built on those.
#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>

#include "kiln/compile.h"
#include "kiln/ops.h"
#include "kiln/primitives_layout.h"
#include "kiln/utils.h"

namespace kiln {

array astype(array a, Dtype dtype, StreamOrDevice s) {
  if (a.dtype() == dtype) return a;
  auto shape = a.shape();
  return array(std::move(shape), dtype, std::make_shared<AsType>(to_stream(s), dtype),
               {std::move(a)});
}

array copy(array a, StreamOrDevice s) {
  auto shape = a.shape();
  auto dtype = a.dtype();
  return array(std::move(shape), dtype, std::make_shared<Copy>(to_stream(s)), {std::move(a)});
}

array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s) {
  if (a.shape() == shape) return a;
  // Broadcasting may only add leading axes and stretch size-1 axes to the target.
  bool ok = shape.size() >= a.ndim();
  for (size_t i = 0; ok && i < a.ndim(); ++i) {
    int da = a.shape()[a.ndim() - 1 - i], dt = shape[shape.size() - 1 - i];
    ok = da == dt || da == 1;
  }
  for (auto d : shape) ok = ok && d >= 0;
  if (!ok) {
    throw std::invalid_argument(msg("[broadcast_to] Cannot broadcast an array of shape ",
                                    shape_str(a.shape()), " to shape ", shape_str(shape), "."));
  }
  return array(shape, a.dtype(), std::make_shared<Broadcast>(to_stream(s), shape), {a});
}

std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s) {
  Shape shape = broadcast_shapes(inputs, "broadcast_arrays");
  std::vector<array> out;
  out.reserve(inputs.size());
  for (const auto& a : inputs) {
    out.push_back(a.shape() == shape ? a : broadcast_to(a, shape, s));
  }
  return out;
}

array reshape(const array& a, Shape shape, StreamOrDevice s) {
  int infer = -1;
  size_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        throw std::invalid_argument(
            msg("[reshape] Only one dimension can be -1; got shape ", shape_str(shape), "."));
      }
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw std::invalid_argument(
          msg("[reshape] Invalid dimension ", shape[i], " in shape ", shape_str(shape), "."));
    } else {
      known *= static_cast<size_t>(shape[i]);
    }
  }
  if (infer >= 0) {
    if (known == 0 || a.size() % known != 0) {
      throw std::invalid_argument(msg("[reshape] Cannot infer the -1 dimension of ",
                                      shape_str(shape), " for an array of size ", a.size(), "."));
    }
    shape[infer] = static_cast<int32_t>(a.size() / known);
    known = a.size();
  }
  if (known != a.size()) {
    throw std::invalid_argument(msg("[reshape] Cannot reshape an array of size ", a.size(),
                                    " into shape ", shape_str(shape), "."));
  }
  if (shape == a.shape()) return a;
  Shape out_shape = shape;
  // A shapeless compile trace keeps the -1, so that replays infer it again, and makes a
  // reshape that only adds or drops size-1 axes follow the input's other axes.
  std::vector<int> follow;
  if (!detail::in_shapeless_trace()) {
    infer = -1;
  } else if (infer < 0) {
    // Output axes matched in order with equal input axes (size-1 input axes may drop out,
    // size-1 output axes may be new); anything else stays fixed.
    const Shape& in = a.shape();
    size_t i = 0;
    bool pure = true;
    for (size_t j = 0; j < shape.size() && pure; ++j) {
      while (i < in.size() && in[i] != shape[j] && in[i] == 1) ++i;
      if (i < in.size() && in[i] == shape[j]) {
        follow.push_back(static_cast<int>(i++));
      } else {
        pure = shape[j] == 1;
        follow.push_back(-1);
      }
    }
    for (; pure && i < in.size(); ++i) pure = in[i] == 1;
    if (!pure) follow.clear();
  }
  return array(std::move(out_shape), a.dtype(),
               std::make_shared<Reshape>(to_stream(s), std::move(shape), infer, std::move(follow)),
               {a});
}

array flatten(const array& a, int start_axis, int end_axis, StreamOrDevice s) {
  int nd = static_cast<int>(a.ndim());
  if (nd == 0) return reshape(a, {1}, s);
  int start = normalize_axis(start_axis, nd, "flatten");
  int end = normalize_axis(end_axis, nd, "flatten");
  if (start > end) {
    throw std::invalid_argument(
        msg("[flatten] start_axis ", start_axis, " must not come after end_axis ", end_axis, "."));
  }
  Shape shape(a.shape().begin(), a.shape().begin() + start);
  int64_t merged = 1;
  for (int i = start; i <= end; ++i) merged *= a.shape()[i];
  shape.push_back(static_cast<int32_t>(merged));
  shape.insert(shape.end(), a.shape().begin() + end + 1, a.shape().end());
  return reshape(a, std::move(shape), s);
}

namespace {

// A reshape that only drops or adds size-1 axes; follow[i] is the input axis that output axis
// i is (-1 for a new one). A shapeless compile trace records it, so replays follow the input's
// other axes where reshape's own matching would have to guess between size-1 axes.
array reshape_unit_axes(const array& a, Shape shape, std::vector<int> follow, StreamOrDevice s) {
  if (!detail::in_shapeless_trace()) return reshape(a, std::move(shape), s);
  if (shape == a.shape()) return a;
  Shape out_shape = shape;
  return array(std::move(out_shape), a.dtype(),
               std::make_shared<Reshape>(to_stream(s), std::move(shape), -1, std::move(follow)),
               {a});
}

}  // namespace

array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  auto ax = normalize_axes(axes, static_cast<int>(a.ndim()), "squeeze");
  for (int i : ax) {
    if (a.shape()[i] != 1) {
      throw std::invalid_argument(msg("[squeeze] Cannot squeeze axis ", i, " of size ",
                                      a.shape()[i], " in shape ", shape_str(a.shape()), "."));
    }
  }
  Shape shape;
  std::vector<int> follow;
  for (int i = 0; i < static_cast<int>(a.ndim()); ++i) {
    if (!std::binary_search(ax.begin(), ax.end(), i)) {
      shape.push_back(a.shape()[i]);
      follow.push_back(i);
    }
  }
  return reshape_unit_axes(a, std::move(shape), std::move(follow), s);
}

array squeeze(const array& a, int axis, StreamOrDevice s) {
  return squeeze(a, std::vector<int>{axis}, s);
}

array squeeze(const array& a, StreamOrDevice s) {
  Shape shape;
  std::vector<int> follow;
  for (int i = 0; i < static_cast<int>(a.ndim()); ++i) {
    if (a.shape()[i] != 1) {
      shape.push_back(a.shape()[i]);
      follow.push_back(i);
    }
  }
  return reshape_unit_axes(a, std::move(shape), std::move(follow), s);
}

array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  int out_nd = static_cast<int>(a.ndim() + axes.size());
  auto ax = normalize_axes(axes, out_nd, "expand_dims");
  Shape shape;
  std::vector<int> follow;
  shape.reserve(out_nd);
  int src = 0;
  size_t k = 0;
  for (int i = 0; i < out_nd; ++i) {
    if (k < ax.size() && ax[k] == i) {
      shape.push_back(1);
      follow.push_back(-1);
      ++k;
    } else {
      follow.push_back(src);
      shape.push_back(a.shape()[src++]);
    }
  }
  return reshape_unit_axes(a, std::move(shape), std::move(follow), s);
}

array expand_dims(const array& a, int axis, StreamOrDevice s) {
  return expand_dims(a, std::vector<int>{axis}, s);
}

array transpose(const array& a, std::vector<int> axes, StreamOrDevice s) {
  int nd = static_cast<int>(a.ndim());
  if (static_cast<int>(axes.size()) != nd) {
    throw std::invalid_argument(
        msg("[transpose] Got ", axes.size(), " axes for an array with ", nd, " dimensions."));
  }
  axes = normalize_axes(axes, nd, "transpose", /*sort=*/false);
  bool identity = true;
  Shape shape(nd);
  for (int i = 0; i < nd; ++i) {
    identity &= axes[i] == i;
    shape[i] = a.shape()[axes[i]];
  }
  if (identity) return a;
  return array(std::move(shape), a.dtype(),
               std::make_shared<Transpose>(to_stream(s), std::move(axes)), {a});
}

array transpose(const array& a, StreamOrDevice s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.rbegin(), axes.rend(), 0);
  return transpose(a, std::move(axes), s);
}

array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s) {
  int nd = static_cast<int>(a.ndim());
  int i = normalize_axis(axis1, nd, "swapaxes"), j = normalize_axis(axis2, nd, "swapaxes");
  std::vector<int> axes(nd);
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[i], axes[j]);
  return transpose(a, std::move(axes), s);
}

array moveaxis(const array& a, int source, int destination, StreamOrDevice s) {
  int nd = static_cast<int>(a.ndim());
  int src = normalize_axis(source, nd, "moveaxis");
  int dst = normalize_axis(destination, nd, "moveaxis");
  std::vector<int> axes;
  for (int i = 0; i < nd; ++i)
    if (i != src) axes.push_back(i);
  axes.insert(axes.begin() + dst, src);
  return transpose(a, std::move(axes), s);
}

namespace {
// A dimension computed in 64 bits, checked to fit a Shape entry.
// Dimensions are int32: a larger computed one is an overflow (Python's OverflowError, as MLX).
int32_t checked_dim(int64_t d, const char* op, int axis) {
  if (d > std::numeric_limits<int32_t>::max()) {
    throw std::overflow_error(
        msg("[", op, "] The result would have ", d, " elements along axis ", axis, "."));
  }
  return static_cast<int32_t>(d);
}
}  // namespace

array contiguous(const array& a, bool allow_col_major, StreamOrDevice s) {
  auto shape = a.shape();
  return array(std::move(shape), a.dtype(),
               std::make_shared<Contiguous>(to_stream(s), allow_col_major), {a});
}

array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s) {
  if (shape.size() != strides.size()) {
    throw std::invalid_argument(msg("[as_strided] Got ", strides.size(), " strides for shape ",
                                    shape_str(shape), "; need one per dimension."));
  }
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument(
          msg("[as_strided] Negative dimension ", d, " in shape ", shape_str(shape), "."));
    }
  }
  // Unlike NumPy, refuse views that reach outside a's elements: they would read stray memory.
  if (shape_size(shape) > 0) {
    int64_t lo = static_cast<int64_t>(offset), hi = lo;
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t reach = static_cast<int64_t>(shape[i] - 1) * strides[i];
      (reach < 0 ? lo : hi) += reach;
    }
    if (lo < 0 || hi >= static_cast<int64_t>(a.size())) {
      std::ostringstream st;
      for (size_t i = 0; i < strides.size(); ++i) st << (i ? ", " : "") << strides[i];
      throw std::invalid_argument(msg("[as_strided] Shape ", shape_str(shape), ", strides (",
                                      st.str(), ") and offset ", offset, " reach elements ", lo,
                                      " to ", hi, " of an array of size ", a.size(), "."));
    }
  }
  Shape out_shape = shape;
  auto dtype = a.dtype();
  return array(std::move(out_shape), dtype,
               std::make_shared<AsStrided>(to_stream(s), std::move(shape), std::move(strides),
                                           static_cast<int64_t>(offset)),
               {std::move(a)});
}

array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s) {
  auto b = SliceBounds::normalize(a.shape(), std::move(start), std::move(stop), std::move(strides),
                                  "slice");
  Shape shape = b.shape();
  if (shape == a.shape() &&
      std::all_of(b.strides.begin(), b.strides.end(), [](int st) { return st == 1; })) {
    return a;  // the whole array
  }
  Shape traced = detail::in_shapeless_trace() ? a.shape() : Shape{};
  return array(std::move(shape), a.dtype(),
               std::make_shared<Slice>(to_stream(s), std::move(b), std::move(traced)), {a});
}

array slice(const array& a, Shape start, Shape stop, StreamOrDevice s) {
  Shape strides(a.ndim(), 1);
  return slice(a, std::move(start), std::move(stop), std::move(strides), s);
}

array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                   StreamOrDevice s) {
  auto b = SliceBounds::normalize(src.shape(), std::move(start), std::move(stop),
                                  std::move(strides), "slice_update");
  Shape shape = b.shape();
  bool ok = update.ndim() <= shape.size();
  for (size_t i = 0; ok && i < update.ndim(); ++i) {
    int du = update.shape()[update.ndim() - 1 - i];
    ok = du == 1 || du == shape[shape.size() - 1 - i];
  }
  if (!ok) {
    throw std::invalid_argument(msg("[slice_update] An update of shape ", shape_str(update.shape()),
                                    " cannot be broadcast to the slice shape ", shape_str(shape),
                                    "."));
  }
  auto stream = to_stream(s);
  array upd = broadcast_to(astype(update, src.dtype(), stream), shape, stream);
  return array(src.shape(), src.dtype(), std::make_shared<SliceUpdate>(stream, std::move(b)),
               {src, std::move(upd)});
}

array slice_update(const array& src, const array& update, Shape start, Shape stop,
                   StreamOrDevice s) {
  Shape strides(src.ndim(), 1);
  return slice_update(src, update, std::move(start), std::move(stop), std::move(strides), s);
}

std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), "split");
  // Part i is a[indices[i-1]:indices[i]] along the axis with Python slicing (NumPy's rule):
  // negative indices count from the end, out-of-range ones clamp, decreasing ones give
  // empty parts.
  std::vector<array> parts;
  parts.reserve(indices.size() + 1);
  Shape start(a.ndim(), 0), stop = a.shape();
  for (size_t i = 0; i <= indices.size(); ++i) {
    start[ax] = i == 0 ? 0 : indices[i - 1];
    stop[ax] = i == indices.size() ? a.shape(ax) : indices[i];
    parts.push_back(slice(a, start, stop, s));
  }
  return parts;
}

std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s) {
  return split(a, indices, 0, s);
}

std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), "split");
  int n = a.shape(ax);
  if (num_splits <= 0 || n % num_splits != 0) {
    throw std::invalid_argument(msg("[split] An axis of size ", n, " (axis ", axis, " of shape ",
                                    shape_str(a.shape()), ") cannot be split into ", num_splits,
                                    " equal parts."));
  }
  Shape indices;
  for (int i = 1; i < num_splits; ++i) indices.push_back(i * (n / num_splits));
  return split(a, indices, ax, s);
}

std::vector<array> split(const array& a, int num_splits, StreamOrDevice s) {
  return split(a, num_splits, 0, s);
}

array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s) {
  if (arrays.empty()) {
    throw std::invalid_argument("[concatenate] Need at least one array to concatenate.");
  }
  const array& first = arrays[0];
  if (first.ndim() == 0) {
    throw std::invalid_argument(
        "[concatenate] Zero-dimensional arrays cannot be concatenated; flatten them first.");
  }
  int ax = normalize_axis(axis, static_cast<int>(first.ndim()), "concatenate");
  Shape shape = first.shape();
  int64_t total = 0;  // summed in 64 bits, so an overflow reports the full size
  Dtype dtype = first.dtype();
  for (const auto& a : arrays) {
    if (a.ndim() != first.ndim()) {
      throw std::invalid_argument(
          msg("[concatenate] All arrays must have the same number of dimensions; got ",
              shape_str(first.shape()), " and ", shape_str(a.shape()), "."));
    }
    for (int i = 0; i < static_cast<int>(a.ndim()); ++i) {
      if (i != ax && a.shape()[i] != first.shape()[i]) {
        throw std::invalid_argument(msg("[concatenate] Shapes ", shape_str(first.shape()), " and ",
                                        shape_str(a.shape()), " differ outside the axis ", axis,
                                        "."));
      }
    }
    total += a.shape()[ax];
    dtype = promote_types(dtype, a.dtype());
  }
  shape[ax] = checked_dim(total, "concatenate", ax);
  if (arrays.size() == 1) return astype(std::move(arrays[0]), dtype, s);
  auto stream = to_stream(s);
  for (auto& a : arrays) a = astype(std::move(a), dtype, stream);
  return array(std::move(shape), dtype, std::make_shared<Concatenate>(stream, ax),
               std::move(arrays));
}

array concatenate(std::vector<array> arrays, StreamOrDevice s) {
  for (auto& a : arrays) a = reshape(a, {-1}, s);
  return concatenate(std::move(arrays), 0, s);
}

array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s) {
  if (arrays.empty()) {
    throw std::invalid_argument("[stack] Need at least one array to stack.");
  }
  for (const auto& a : arrays) {
    if (a.shape() != arrays[0].shape()) {
      throw std::invalid_argument(msg("[stack] All arrays must have the same shape; got ",
                                      shape_str(arrays[0].shape()), " and ", shape_str(a.shape()),
                                      "."));
    }
  }
  int ax = normalize_axis(axis, static_cast<int>(arrays[0].ndim()) + 1, "stack");
  std::vector<array> expanded;
  expanded.reserve(arrays.size());
  for (const auto& a : arrays) expanded.push_back(expand_dims(a, ax, s));
  return concatenate(std::move(expanded), ax, s);
}

array stack(const std::vector<array>& arrays, StreamOrDevice s) {
  return stack(arrays, 0, s);
}

array tile(const array& a, std::vector<int> reps, StreamOrDevice s) {
  for (int r : reps) {
    if (r < 0) {
      throw std::invalid_argument(
          msg("[tile] Repetitions must be non-negative; got ", shape_str(Shape(reps)), "."));
    }
  }
  // NumPy: the shorter of reps and shape is padded with leading ones.
  Shape shape = a.shape();
  size_t nd = std::max(shape.size(), reps.size());
  shape.insert(shape.begin(), nd - shape.size(), 1);
  reps.insert(reps.begin(), nd - reps.size(), 1);
  // View a as (1, d0, 1, d1, ...), broadcast to (r0, d0, r1, d1, ...), merge pairs.
  Shape expanded, tiled, out;
  for (size_t i = 0; i < nd; ++i) {
    expanded.insert(expanded.end(), {1, shape[i]});
    tiled.insert(tiled.end(), {reps[i], shape[i]});
    out.push_back(checked_dim(static_cast<int64_t>(reps[i]) * shape[i], "tile", i));
  }
  return reshape(broadcast_to(reshape(a, expanded, s), tiled, s), out, s);
}

array repeat(const array& a, int repeats, int axis, StreamOrDevice s) {
  if (repeats < 0) {
    throw std::invalid_argument(
        msg("[repeat] The number of repeats must be non-negative; got ", repeats, "."));
  }
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), "repeat");
  // View a with a size-1 axis after `ax`, broadcast it to `repeats`, merge the two.
  Shape expanded = a.shape(), tiled = a.shape(), out = a.shape();
  expanded.insert(expanded.begin() + ax + 1, 1);
  tiled.insert(tiled.begin() + ax + 1, repeats);
  out[ax] = checked_dim(static_cast<int64_t>(out[ax]) * repeats, "repeat", ax);
  return reshape(broadcast_to(reshape(a, expanded, s), tiled, s), out, s);
}

array repeat(const array& a, int repeats, StreamOrDevice s) {
  return repeat(reshape(a, {-1}, s), repeats, 0, s);
}

array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width, const array& pad_value,
          StreamOrDevice s) {
  // One (before, after) pair applies to every axis, as NumPy's ((before, after),).
  if (pad_width.size() != a.ndim() && pad_width.size() != 1) {
    throw std::invalid_argument(msg("[pad] Got ", pad_width.size(),
                                    " (before, after) pairs for an array of shape ",
                                    shape_str(a.shape()), "; need one per dimension or one."));
  }
  if (pad_value.size() != 1) {
    throw std::invalid_argument(
        msg("[pad] The pad value must be a scalar; got shape ", shape_str(pad_value.shape()), "."));
  }
  Shape out = a.shape(), lo(a.ndim()), hi(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) {
    auto [before, after] = pad_width.size() == 1 ? pad_width[0] : pad_width[i];
    if (before < 0 || after < 0) {
      throw std::invalid_argument(msg("[pad] Pad widths must be non-negative; got (", before, ", ",
                                      after, ") for axis ", i, "."));
    }
    lo[i] = before;
    hi[i] = before + a.shape()[i];
    out[i] = checked_dim(static_cast<int64_t>(out[i]) + before + after, "pad", i);
  }
  auto stream = to_stream(s);
  array filled = full(out, astype(reshape(pad_value, {}, stream), a.dtype(), stream), stream);
  return slice_update(filled, a, lo, hi, stream);
}

}  // namespace kiln
