// Layout ops: dtype conversion, copies, broadcasting, reshapes and axis permutations.
#include <algorithm>
#include <memory>
#include <numeric>

#include "kiln/ops.h"
#include "kiln/primitives_layout.h"
#include "kiln/utils.h"

namespace kiln {

array astype(array a, Dtype dtype, StreamOrDevice s) {
  if (a.dtype() == dtype) return a;
  auto shape = a.shape();
  return array(std::move(shape), dtype, std::make_shared<AsType>(to_stream(s), dtype), {std::move(a)});
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
  return array(std::move(out_shape), a.dtype(), std::make_shared<Reshape>(to_stream(s), std::move(shape)), {a});
}

array flatten(const array& a, int start_axis, int end_axis, StreamOrDevice s) {
  int nd = static_cast<int>(a.ndim());
  if (nd == 0) return reshape(a, {1}, s);
  int start = normalize_axis(start_axis, nd, "flatten");
  int end = normalize_axis(end_axis, nd, "flatten");
  if (start > end) {
    throw std::invalid_argument(msg("[flatten] start_axis ", start_axis,
                                    " must not come after end_axis ", end_axis, "."));
  }
  Shape shape(a.shape().begin(), a.shape().begin() + start);
  int64_t merged = 1;
  for (int i = start; i <= end; ++i) merged *= a.shape()[i];
  shape.push_back(static_cast<int32_t>(merged));
  shape.insert(shape.end(), a.shape().begin() + end + 1, a.shape().end());
  return reshape(a, std::move(shape), s);
}

array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  auto ax = normalize_axes(axes, static_cast<int>(a.ndim()), "squeeze");
  for (int i : ax) {
    if (a.shape()[i] != 1) {
      throw std::invalid_argument(msg("[squeeze] Cannot squeeze axis ", i, " of size ",
                                      a.shape()[i], " in shape ", shape_str(a.shape()), "."));
    }
  }
  Shape shape;
  for (int i = 0; i < static_cast<int>(a.ndim()); ++i) {
    if (!std::binary_search(ax.begin(), ax.end(), i)) shape.push_back(a.shape()[i]);
  }
  return reshape(a, std::move(shape), s);
}

array squeeze(const array& a, int axis, StreamOrDevice s) {
  return squeeze(a, std::vector<int>{axis}, s);
}

array squeeze(const array& a, StreamOrDevice s) {
  Shape shape;
  for (auto d : a.shape())
    if (d != 1) shape.push_back(d);
  return reshape(a, std::move(shape), s);
}

array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  int out_nd = static_cast<int>(a.ndim() + axes.size());
  auto ax = normalize_axes(axes, out_nd, "expand_dims");
  Shape shape;
  shape.reserve(out_nd);
  size_t src = 0, k = 0;
  for (int i = 0; i < out_nd; ++i) {
    if (k < ax.size() && ax[k] == i) {
      shape.push_back(1);
      ++k;
    } else {
      shape.push_back(a.shape()[src++]);
    }
  }
  return reshape(a, std::move(shape), s);
}

array expand_dims(const array& a, int axis, StreamOrDevice s) {
  return expand_dims(a, std::vector<int>{axis}, s);
}

array transpose(const array& a, std::vector<int> axes, StreamOrDevice s) {
  int nd = static_cast<int>(a.ndim());
  if (static_cast<int>(axes.size()) != nd) {
    throw std::invalid_argument(msg("[transpose] Got ", axes.size(), " axes for an array with ",
                                    nd, " dimensions."));
  }
  axes = normalize_axes(axes, nd, "transpose", /*sort=*/false);
  bool identity = true;
  Shape shape(nd);
  for (int i = 0; i < nd; ++i) {
    identity &= axes[i] == i;
    shape[i] = a.shape()[axes[i]];
  }
  if (identity) return a;
  return array(std::move(shape), a.dtype(), std::make_shared<Transpose>(to_stream(s), std::move(axes)), {a});
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

}  // namespace kiln
