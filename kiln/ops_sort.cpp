// Selection and search ops: partition, argpartition, topk, median, searchsorted, unique.
// Argument checks (with MLX's exception types), dtype rules and graph construction; the
// primitives (primitives_sort.h) work along the last axis, so the ops move the axis there
// and back (views).
#include <algorithm>
#include <memory>
#include <stdexcept>

#include "kiln/ops.h"
#include "kiln/primitives_sort.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

/** `axis` in [0, ndim), or std::out_of_range (MLX's IndexError). */
int checked_axis(int axis, int ndim, const char* op) {
  if (axis < -ndim || axis >= ndim) {
    throw std::out_of_range(
        msg("[", op, "] Axis ", axis, " is out of bounds for array with ", ndim, " dimensions."));
  }
  return axis < 0 ? axis + ndim : axis;
}

array to_last(const array& a, int axis, const Stream& s) {
  return axis == static_cast<int>(a.ndim()) - 1 ? a : moveaxis(a, axis, -1, s);
}

array from_last(const array& r, int axis, const Stream& s) {
  return axis == static_cast<int>(r.ndim()) - 1 ? r : moveaxis(r, -1, axis, s);
}

/** Positions [start, n) of the partition around rank kth along `axis`, values or indices. */
array partition_impl(const array& a, int64_t kth, int64_t start, int axis, bool indices,
                     const Stream& s) {
  array x = to_last(a, axis, s);
  Shape shape = x.shape();
  shape.back() -= static_cast<int>(start);
  array r =
      indices ? array(std::move(shape), uint32, std::make_shared<ArgPartition>(s, kth, start), {x})
              : array(std::move(shape), x.dtype(), std::make_shared<Partition>(s, kth, start), {x});
  return from_last(r, axis, s);
}

array partition_op(const array& a, int kth, int axis_in, bool indices, const char* op,
                   StreamOrDevice s) {
  auto stream = to_stream(s);
  const int axis = checked_axis(axis_in, static_cast<int>(a.ndim()), op);
  const int64_t n = a.shape()[axis];
  if (kth < -n || kth >= n) {
    throw std::invalid_argument(msg("[", op, "] Received invalid kth ", kth, " along axis ",
                                    axis_in, " for array with shape ", shape_str(a.shape()), "."));
  }
  const int64_t k = kth < 0 ? kth + n : kth;
  return partition_impl(a, k, 0, axis, indices, stream);
}

}  // namespace

array partition(const array& a, int kth, int axis, StreamOrDevice s) {
  return partition_op(a, kth, axis, false, "partition", s);
}

array partition(const array& a, int kth, StreamOrDevice s) {
  auto stream = to_stream(s);
  return partition_op(reshape(a, {-1}, stream), kth, 0, false, "partition", stream);
}

array argpartition(const array& a, int kth, int axis, StreamOrDevice s) {
  return partition_op(a, kth, axis, true, "argpartition", s);
}

array argpartition(const array& a, int kth, StreamOrDevice s) {
  auto stream = to_stream(s);
  return partition_op(reshape(a, {-1}, stream), kth, 0, true, "argpartition", stream);
}

array topk(const array& a, int k, int axis_in, StreamOrDevice s) {
  auto stream = to_stream(s);
  const int axis = checked_axis(axis_in, static_cast<int>(a.ndim()), "topk");
  const int64_t n = a.shape()[axis];
  if (k < 0 || k > n) {
    throw std::invalid_argument(msg("[topk] Received invalid k=", k, " along axis ", axis_in,
                                    " for array with shape ", shape_str(a.shape()), "."));
  }
  if (k == 0) {
    Shape shape = a.shape();
    shape[axis] = 0;
    return zeros(shape, a.dtype(), stream);
  }
  return partition_impl(a, n - k, n - k, axis, false, stream);
}

array topk(const array& a, int k, StreamOrDevice s) {
  auto stream = to_stream(s);
  return topk(reshape(a, {-1}, stream), k, 0, stream);
}

// ---------------------------------------------------------------- median

array median(const array& a, const std::vector<int>& axes_in, bool keepdims, StreamOrDevice s) {
  auto stream = to_stream(s);
  const int ndim = static_cast<int>(a.ndim());
  if (axes_in.empty() && ndim > 0) {
    throw std::invalid_argument("[median] Received an empty list of axes.");
  }
  std::vector<int> axes;
  for (int ax : axes_in) {
    const int v = checked_axis(ax, ndim, "median");
    if (std::find(axes.begin(), axes.end(), v) != axes.end()) {
      throw std::invalid_argument(msg("[median] Received duplicate axis ", ax, "."));
    }
    axes.push_back(v);
  }
  std::sort(axes.begin(), axes.end());
  // Kept axes first, in order, then the reduced ones flattened into one last axis.
  std::vector<int> perm;
  Shape kept, keep_shape = a.shape();
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i)) {
      n *= a.shape()[i];
      keep_shape[i] = 1;
    } else {
      perm.push_back(i);
      kept.push_back(a.shape()[i]);
    }
  }
  if (n == 0) {
    throw std::invalid_argument(
        msg("[median] Cannot take median along empty axis (shape ", shape_str(a.shape()), ")."));
  }
  perm.insert(perm.end(), axes.begin(), axes.end());
  Shape rows = kept;
  rows.push_back(static_cast<int>(n));
  array x = reshape(transpose(a, perm, stream), rows, stream);
  array m = array(kept, Median::output_dtype(a.dtype()), std::make_shared<Median>(stream), {x});
  if (a.dtype() == float16 || a.dtype() == bfloat16) m = astype(m, a.dtype(), stream);
  return keepdims ? reshape(m, keep_shape, stream) : m;
}

array median(const array& a, bool keepdims, StreamOrDevice s) {
  std::vector<int> axes(a.ndim());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int>(i);
  return median(a, axes, keepdims, s);
}

array median(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return median(a, std::vector<int>{axis}, keepdims, s);
}

// ---------------------------------------------------------------- searchsorted

array searchsorted(const array& sorted_sequence, const array& values, const std::string& side,
                   StreamOrDevice s) {
  auto stream = to_stream(s);
  if (side != "left" && side != "right") {
    throw std::invalid_argument(
        msg("[searchsorted] Invalid side '", side, "'. Expected 'left' or 'right'."));
  }
  if (sorted_sequence.ndim() != 1) {
    throw std::invalid_argument(msg("[searchsorted] The sorted sequence must be 1-D but has ",
                                    sorted_sequence.ndim(), " dimensions."));
  }
  const Dtype dt = promote_types(sorted_sequence.dtype(), values.dtype());
  return array(values.shape(), uint32, std::make_shared<SearchSorted>(stream, side == "right"),
               {astype(sorted_sequence, dt, stream), astype(values, dt, stream)});
}

// ---------------------------------------------------------------- unique

std::vector<array> unique(const array& a, int size, bool return_index, bool return_inverse,
                          bool return_counts, const std::optional<array>& fill_value,
                          StreamOrDevice s) {
  auto stream = to_stream(s);
  if (size < 0) throw std::invalid_argument(msg("[unique] Received negative size ", size, "."));
  std::vector<array> inputs = {reshape(a, {-1}, stream)};
  if (fill_value) {
    if (fill_value->size() != 1) {
      throw std::invalid_argument(msg("[unique] Fill value must have one element, but got shape ",
                                      shape_str(fill_value->shape()), "."));
    }
    inputs.push_back(reshape(astype(*fill_value, a.dtype(), stream), {}, stream));
  } else if (a.size() == 0 && size > 0) {
    throw std::invalid_argument(
        "[unique] A fill value is required for an empty input with a non-zero size.");
  }
  const int n = static_cast<int>(a.size());
  auto outs =
      array::make_arrays({{size}, {size}, {n}, {size}}, {a.dtype(), uint32, uint32, int32},
                         std::make_shared<Unique>(stream, size, fill_value.has_value()), inputs);
  std::vector<array> result = {outs[0]};
  if (return_index) result.push_back(outs[1]);
  if (return_inverse) result.push_back(reshape(outs[2], a.shape(), stream));
  if (return_counts) result.push_back(outs[3]);
  return result;
}

}  // namespace kiln
