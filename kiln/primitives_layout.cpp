// Transformations and shape logic of the layout primitives.
#include "kiln/primitives_layout.h"

#include <numeric>

#include "kiln/ops.h"

namespace kiln {

// ---------------------------------------------------------------- AsType
bool AsType::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const AsType*>(&other);
  return o && o->dtype_ == dtype_;
}
std::vector<array> AsType::jvp(
    const std::vector<array>&, const std::vector<array>& tangents, const std::vector<int>&) {
  return {astype(tangents[0], dtype_, stream())};
}
std::vector<array> AsType::vjp(
    const std::vector<array>& primals,
    const std::vector<array>& cotangents,
    const std::vector<int>&,
    const std::vector<array>&) {
  return {astype(cotangents[0], primals[0].dtype(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> AsType::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  return {{astype(inputs[0], dtype_, stream())}, axes};
}

// ---------------------------------------------------------------- Copy
std::vector<array> Copy::jvp(
    const std::vector<array>&, const std::vector<array>& tangents, const std::vector<int>&) {
  return {tangents[0]};
}
std::vector<array> Copy::vjp(
    const std::vector<array>&,
    const std::vector<array>& cotangents,
    const std::vector<int>&,
    const std::vector<array>&) {
  return {cotangents[0]};
}
std::pair<std::vector<array>, std::vector<int>> Copy::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  return {{copy(inputs[0], stream())}, axes};
}

// ---------------------------------------------------------------- Broadcast
bool Broadcast::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Broadcast*>(&other);
  return o && o->shape_ == shape_;
}
std::vector<array> Broadcast::jvp(
    const std::vector<array>&, const std::vector<array>& tangents, const std::vector<int>&) {
  return {broadcast_to(tangents[0], shape_, stream())};
}
std::vector<array> Broadcast::vjp(
    const std::vector<array>& primals,
    const std::vector<array>& cotangents,
    const std::vector<int>&,
    const std::vector<array>&) {
  // Sum over the added leading axes and the stretched size-1 axes.
  const Shape& in = primals[0].shape();
  int added = static_cast<int>(shape_.size() - in.size());
  std::vector<int> axes;
  for (int i = 0; i < static_cast<int>(shape_.size()); ++i) {
    if (i < added || (in[i - added] == 1 && shape_[i] != 1)) axes.push_back(i);
  }
  array g = axes.empty() ? cotangents[0] : sum(cotangents[0], axes, true, stream());
  return {reshape(g, in, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Broadcast::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  int ax = axes[0];
  if (ax < 0) return {{broadcast_to(inputs[0], shape_, stream())}, {-1}};
  // Batch axis first, then pad the input's rank to the target's with size-1 axes.
  array x = moveaxis(inputs[0], ax, 0, stream());
  Shape padded{x.shape()[0]};
  padded.insert(padded.end(), shape_.size() - (x.ndim() - 1), 1);
  padded.insert(padded.end(), x.shape().begin() + 1, x.shape().end());
  Shape target{x.shape()[0]};
  target.insert(target.end(), shape_.begin(), shape_.end());
  return {{broadcast_to(reshape(x, padded, stream()), target, stream())}, {0}};
}

// ---------------------------------------------------------------- Reshape
bool Reshape::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Reshape*>(&other);
  return o && o->shape_ == shape_;
}
std::vector<array> Reshape::jvp(
    const std::vector<array>&, const std::vector<array>& tangents, const std::vector<int>&) {
  return {reshape(tangents[0], shape_, stream())};
}
std::vector<array> Reshape::vjp(
    const std::vector<array>& primals,
    const std::vector<array>& cotangents,
    const std::vector<int>&,
    const std::vector<array>&) {
  return {reshape(cotangents[0], primals[0].shape(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> Reshape::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes[0] < 0) return {{reshape(inputs[0], shape_, stream())}, {-1}};
  array x = moveaxis(inputs[0], axes[0], 0, stream());
  Shape shape{x.shape()[0]};
  shape.insert(shape.end(), shape_.begin(), shape_.end());
  return {{reshape(x, shape, stream())}, {0}};
}

std::optional<Strides> Reshape::view_strides(const array& in, const Shape& shape) {
  if (in.size() == 0) return array::row_major_strides(shape);
  // Old dimensions without the size-1 ones, whose strides are meaningless.
  Shape od;
  Strides os;
  for (size_t i = 0; i < in.ndim(); ++i) {
    if (in.shape()[i] != 1) {
      od.push_back(in.shape()[i]);
      os.push_back(in.strides()[i]);
    }
  }
  const int on = static_cast<int>(od.size()), nn = static_cast<int>(shape.size());
  Strides ns(nn, 1);
  // Match groups of old and new dimensions with equal products; each old group must be
  // contiguous within itself to be re-split (NumPy's no-copy reshape rule).
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nn && oi < on) {
    int64_t np = shape[ni], op = od[oi];
    while (np != op) {
      if (np < op) np *= shape[nj++];
      else op *= od[oj++];
    }
    for (int ok = oi; ok < oj - 1; ++ok) {
      if (os[ok] != od[ok + 1] * os[ok + 1]) return std::nullopt;
    }
    ns[nj - 1] = os[oj - 1];
    for (int nk = nj - 1; nk > ni; --nk) ns[nk - 1] = ns[nk] * shape[nk];
    ni = nj++;
    oi = oj++;
  }
  // Trailing size-1 dimensions of the new shape.
  int64_t last = ni > 0 ? ns[ni - 1] : 1;
  for (int i = ni; i < nn; ++i) ns[i] = last;
  return ns;
}

// ---------------------------------------------------------------- Transpose
bool Transpose::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Transpose*>(&other);
  return o && o->axes_ == axes_;
}
std::vector<Shape> Transpose::output_shapes(const std::vector<array>& inputs) {
  Shape shape(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) shape[i] = inputs[0].shape()[axes_[i]];
  return {shape};
}
std::vector<array> Transpose::jvp(
    const std::vector<array>&, const std::vector<array>& tangents, const std::vector<int>&) {
  return {transpose(tangents[0], axes_, stream())};
}
std::vector<array> Transpose::vjp(
    const std::vector<array>&,
    const std::vector<array>& cotangents,
    const std::vector<int>&,
    const std::vector<array>&) {
  std::vector<int> inverse(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) inverse[axes_[i]] = static_cast<int>(i);
  return {transpose(cotangents[0], inverse, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Transpose::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes[0] < 0) return {{transpose(inputs[0], axes_, stream())}, {-1}};
  array x = moveaxis(inputs[0], axes[0], 0, stream());
  std::vector<int> perm{0};
  for (int a : axes_) perm.push_back(a + 1);
  return {{transpose(x, perm, stream())}, {0}};
}

}  // namespace kiln
