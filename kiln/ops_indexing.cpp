// Indexing ops: argument checks, broadcasting of index arrays, graph construction.
//
// take builds on Gather; take_along_axis and put_along_axis have their own primitives
// (GatherAxis, ScatterAxis), which need no index arrays for the other axes. Index values
// are only known at evaluation, so their bounds are checked there (std::out_of_range).
#include <memory>

#include "kiln/compile.h"
#include "kiln/ops.h"
#include "kiln/primitives_indexing.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

void check_index_dtype(const array& indices, const char* op) {
  if (!is_integral(indices.dtype()) || indices.dtype() == bool_) {
    throw std::invalid_argument(
        msg("[", op, "] Indices must have an integer dtype; got ", indices.dtype(), "."));
  }
}

// An axis of size zero admits no index, which the shapes already show.
void check_nonempty_axis(const array& a, int axis, size_t num_indices, const char* op) {
  if (a.shape(axis) == 0 && num_indices > 0) {
    throw std::invalid_argument(
        msg("[", op, "] Cannot take ", num_indices, " indices from axis ", axis, " with size 0."));
  }
}

struct PreparedIndices {
  std::vector<int> axes;
  std::vector<array> indices;  // broadcast to `shape`
  Shape shape;
};

// Shared by gather and the scatters: one integer index array per distinct axis, all
// broadcast together (each keeps its own dtype: the kernels decode any integer type).
PreparedIndices prepare_indices(const array& a, const std::vector<array>& indices,
                                const std::vector<int>& axes, const char* op, const Stream& s) {
  if (indices.size() != axes.size()) {
    throw std::invalid_argument(msg("[", op, "] Got ", indices.size(), " index arrays for ",
                                    axes.size(), " axes; there must be one per axis."));
  }
  PreparedIndices p;
  p.axes = normalize_axes(axes, static_cast<int>(a.ndim()), op, /*sort=*/false);
  for (const auto& idx : indices) check_index_dtype(idx, op);
  p.shape = broadcast_shapes(indices, op);
  for (const auto& idx : indices) p.indices.push_back(broadcast_to(idx, p.shape, s));
  return p;
}

array gather_impl(const char* op, const array& a, const std::vector<array>& indices,
                  const std::vector<int>& axes, const Shape& slice_sizes, const Stream& s) {
  auto p = prepare_indices(a, indices, axes, op, s);
  if (slice_sizes.size() != a.ndim()) {
    throw std::invalid_argument(msg("[", op, "] Got ", slice_sizes.size(),
                                    " slice sizes for an array of shape ", shape_str(a.shape()),
                                    "; there must be one per axis."));
  }
  for (size_t d = 0; d < a.ndim(); ++d) {
    if (slice_sizes[d] < 0 || slice_sizes[d] > a.shape(d)) {
      throw std::invalid_argument(msg("[", op, "] Slice sizes ", shape_str(slice_sizes),
                                      " do not fit in an array of shape ", shape_str(a.shape()),
                                      "."));
    }
  }
  Shape out_shape = p.shape;
  out_shape.insert(out_shape.end(), slice_sizes.begin(), slice_sizes.end());
  std::vector<array> inputs{a};
  inputs.insert(inputs.end(), p.indices.begin(), p.indices.end());
  Shape traced = detail::in_shapeless_trace() ? a.shape() : Shape{};
  return array(std::move(out_shape), a.dtype(),
               std::make_shared<Gather>(s, op, std::move(p.axes), slice_sizes, std::move(traced)),
               std::move(inputs));
}

const char* scatter_name(ScatterReduce reduce) {
  switch (reduce) {
    case ScatterReduce::none:
      return "scatter";
    case ScatterReduce::sum:
      return "scatter_add";
    case ScatterReduce::prod:
      return "scatter_prod";
    case ScatterReduce::max:
      return "scatter_max";
    case ScatterReduce::min:
      return "scatter_min";
  }
  return "scatter";
}

}  // namespace

// ---------------------------------------------------------------- gather and take

array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
             const Shape& slice_sizes, StreamOrDevice s) {
  return gather_impl("gather", a, indices, axes, slice_sizes, to_stream(s));
}

array take(const array& a, const array& indices, int axis, StreamOrDevice s) {
  const char* op = "take";
  auto stream = to_stream(s);
  check_index_dtype(indices, op);
  const int nd = static_cast<int>(a.ndim());
  const int ax = normalize_axis(axis, nd, op);
  check_nonempty_axis(a, ax, indices.size(), op);
  Shape slice = a.shape();
  slice[ax] = std::min(slice[ax], 1);
  array g = gather_impl(op, a, {indices}, {ax}, slice, stream);
  // (indices..., a[:ax]..., 1, a[ax+1:]...) -> (a[:ax]..., indices..., a[ax+1:]...).
  const int pd = static_cast<int>(indices.ndim());
  if (slice[ax] == 1) {
    g = squeeze(g, pd + ax, stream);  // exact in shapeless traces, where a reshape would guess
  } else {
    Shape squeezed = g.shape();
    squeezed.erase(squeezed.begin() + pd + ax);
    g = reshape(g, std::move(squeezed), stream);
  }
  if (ax == 0) return g;
  std::vector<int> perm;
  for (int d = 0; d < ax; ++d) perm.push_back(pd + d);
  for (int d = 0; d < pd; ++d) perm.push_back(d);
  for (int d = pd + ax; d < pd + nd - 1; ++d) perm.push_back(d);
  return transpose(g, std::move(perm), stream);
}

array take(const array& a, const array& indices, StreamOrDevice s) {
  check_index_dtype(indices, "take");
  auto stream = to_stream(s);
  return take(reshape(a, {-1}, stream), indices, 0, stream);
}

array take(const array& a, int index, int axis, StreamOrDevice s) {
  const char* op = "take";
  const int ax = normalize_axis(axis, static_cast<int>(a.ndim()), op);
  const int n = a.shape(ax);
  // The index is known now, so it is checked now.
  if (index < -n || index >= n) {
    throw std::out_of_range(
        msg("[", op, "] Index ", index, " is out of bounds for axis ", ax, " with size ", n, "."));
  }
  // A known index selects a view: no copy.
  auto stream = to_stream(s);
  Shape start(a.ndim(), 0), stop = a.shape();
  start[ax] = index < 0 ? index + n : index;
  stop[ax] = start[ax] + 1;
  return squeeze(slice(a, std::move(start), std::move(stop), stream), ax, stream);
}

array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s) {
  const char* op = "take_along_axis";
  auto stream = to_stream(s);
  check_index_dtype(indices, op);
  if (indices.ndim() != a.ndim()) {
    throw std::invalid_argument(msg("[", op, "] Indices of shape ", shape_str(indices.shape()),
                                    " must have as many dimensions as the array of shape ",
                                    shape_str(a.shape()), "."));
  }
  const int ax = normalize_axis(axis, static_cast<int>(a.ndim()), op);
  // Both broadcast against each other except along the axis.
  Shape sa = a.shape(), si = indices.shape();
  sa[ax] = si[ax] = 1;
  Shape shape = broadcast_shapes(sa, si, op);
  Shape a_shape = shape, i_shape = shape;
  a_shape[ax] = a.shape(ax);
  i_shape[ax] = indices.shape(ax);
  check_nonempty_axis(a, ax, shape_size(i_shape), op);
  auto prim = std::make_shared<GatherAxis>(stream, op, ax);
  return array(i_shape, a.dtype(), std::move(prim),
               {broadcast_to(a, a_shape, stream), broadcast_to(indices, i_shape, stream)});
}

array put_along_axis(const array& a, const array& indices, const array& values, int axis,
                     StreamOrDevice s) {
  return detail::scatter_along_axis(ScatterReduce::none, a, indices, values, axis, s);
}

// ---------------------------------------------------------------- scatters

namespace detail {

array scatter_reduce(ScatterReduce reduce, const array& a, const std::vector<array>& indices,
                     const array& updates, const std::vector<int>& axes, StreamOrDevice s) {
  const char* op = scatter_name(reduce);
  auto stream = to_stream(s);
  auto p = prepare_indices(a, indices, axes, op, stream);
  if ((reduce == ScatterReduce::max || reduce == ScatterReduce::min) && is_complex(a.dtype())) {
    throw std::invalid_argument(
        msg("[", op, "] Complex values have no order; got an array of ", a.dtype(), "."));
  }
  const size_t pd = p.shape.size(), nd = a.ndim();
  const Shape& us = updates.shape();
  bool ok = us.size() == pd + nd;
  // Updates: the index shape (size-1 axes broadcast) then one slice extent per axis of a.
  for (size_t d = 0; ok && d < pd; ++d) ok = us[d] == p.shape[d] || us[d] == 1;
  for (size_t d = 0; ok && d < nd; ++d) ok = us[pd + d] <= a.shape(d);
  if (!ok) {
    throw std::invalid_argument(
        msg("[", op, "] Updates of shape ", shape_str(us), " do not match indices of shape ",
            shape_str(p.shape), " and an array of shape ", shape_str(a.shape()),
            ": expected the index shape followed by a slice no larger than the array."));
  }
  Shape full = p.shape;
  full.insert(full.end(), us.begin() + pd, us.end());
  std::vector<array> inputs{a};
  inputs.insert(inputs.end(), p.indices.begin(), p.indices.end());
  inputs.push_back(broadcast_to(astype(updates, a.dtype(), stream), full, stream));
  return array(a.shape(), a.dtype(),
               std::make_shared<Scatter>(stream, op, reduce, std::move(p.axes)), std::move(inputs));
}

array scatter_along_axis(ScatterReduce reduce, const array& a, const array& indices,
                         const array& values, int axis, StreamOrDevice s) {
  const char* op = "put_along_axis";
  auto stream = to_stream(s);
  // No indices write nothing, whatever their dtype (MLX accepts an empty float array).
  if (indices.size() == 0 && indices.ndim() == a.ndim()) return a;
  check_index_dtype(indices, op);
  if (indices.ndim() != a.ndim()) {
    throw std::invalid_argument(msg("[", op, "] Indices of shape ", shape_str(indices.shape()),
                                    " must have as many dimensions as the array of shape ",
                                    shape_str(a.shape()), "."));
  }
  const int ax = normalize_axis(axis, static_cast<int>(a.ndim()), op);
  // The indices broadcast to a's shape except along the axis; the values to the indices'.
  Shape target = a.shape();
  target[ax] = indices.shape(ax);
  for (size_t d = 0; d < a.ndim(); ++d) {
    if (indices.shape(d) != target[d] && indices.shape(d) != 1) {
      throw std::invalid_argument(msg("[", op, "] Indices of shape ", shape_str(indices.shape()),
                                      " cannot be broadcast to ", shape_str(target),
                                      " (the array's shape except along axis ", ax, ")."));
    }
  }
  bool fits = values.ndim() <= target.size();
  for (size_t d = 0; fits && d < values.ndim(); ++d) {
    int v = values.shape(d), t = target[target.size() - values.ndim() + d];
    fits = v == t || v == 1;
  }
  if (!fits) {
    throw std::invalid_argument(msg("[", op, "] Values of shape ", shape_str(values.shape()),
                                    " cannot be broadcast to the indices' shape ",
                                    shape_str(target), "."));
  }
  check_nonempty_axis(a, ax, shape_size(target), op);
  auto prim = std::make_shared<ScatterAxis>(stream, op, reduce, ax);
  return array(a.shape(), a.dtype(), std::move(prim),
               {a, broadcast_to(indices, target, stream),
                broadcast_to(astype(values, a.dtype(), stream), target, stream)});
}

}  // namespace detail

array scatter(const array& a, const std::vector<array>& indices, const array& updates,
              const std::vector<int>& axes, StreamOrDevice s) {
  return detail::scatter_reduce(ScatterReduce::none, a, indices, updates, axes, s);
}
array scatter_add(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return detail::scatter_reduce(ScatterReduce::sum, a, indices, updates, axes, s);
}
array scatter_prod(const array& a, const std::vector<array>& indices, const array& updates,
                   const std::vector<int>& axes, StreamOrDevice s) {
  return detail::scatter_reduce(ScatterReduce::prod, a, indices, updates, axes, s);
}
array scatter_max(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return detail::scatter_reduce(ScatterReduce::max, a, indices, updates, axes, s);
}
array scatter_min(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return detail::scatter_reduce(ScatterReduce::min, a, indices, updates, axes, s);
}

}  // namespace kiln
