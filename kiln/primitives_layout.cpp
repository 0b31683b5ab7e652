// Transformations and shape logic of the layout primitives.
#include "kiln/primitives_layout.h"

#include <numeric>

#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln {

namespace {
// Slice nodes from bounds that are already normalized (the ops would re-normalize them,
// and a stop of -1 means "past index 0" here but "the last index" to Python).
array slice_node(const array& a, SliceBounds b, const Stream& s) {
  Shape shape = b.shape();
  return array(std::move(shape), a.dtype(), std::make_shared<Slice>(s, std::move(b)), {a});
}
array slice_update_node(const array& src, const array& update, SliceBounds b, const Stream& s) {
  return array(src.shape(), src.dtype(), std::make_shared<SliceUpdate>(s, std::move(b)),
               {src, update});
}
// The same bounds with a leading batch axis of size n taken whole.
SliceBounds with_batch_axis(const SliceBounds& b, int n) {
  SliceBounds out = b;
  out.start.insert(out.start.begin(), 0);
  out.stop.insert(out.stop.begin(), n);
  out.strides.insert(out.strides.begin(), 1);
  return out;
}
// `x` with its mapped axis moved to 0, or broadcast along a new axis 0 of size n.
array batch_first(const array& x, int axis, int n, const Stream& s) {
  if (axis >= 0) return moveaxis(x, axis, 0, s);
  Shape shape{n};
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  return broadcast_to(expand_dims(x, 0, s), shape, s);
}
// The batch size of the mapped inputs (vmap guarantees they agree), or -1.
int batch_size(const std::vector<array>& inputs, const std::vector<int>& axes) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (axes[i] >= 0) return inputs[i].shape(axes[i]);
  return -1;
}
}  // namespace

// ---------------------------------------------------------------- AsType
bool AsType::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const AsType*>(&other);
  return o && o->dtype_ == dtype_;
}
std::vector<array> AsType::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                               const std::vector<int>&) {
  return {astype(tangents[0], dtype_, stream())};
}
std::vector<array> AsType::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents, const std::vector<int>&,
                               const std::vector<array>&) {
  return {astype(cotangents[0], primals[0].dtype(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> AsType::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  return {{astype(inputs[0], dtype_, stream())}, axes};
}

// ---------------------------------------------------------------- Copy
std::vector<array> Copy::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  return {tangents[0]};
}
std::vector<array> Copy::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                             const std::vector<int>&, const std::vector<array>&) {
  return {cotangents[0]};
}
std::pair<std::vector<array>, std::vector<int>> Copy::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  return {{copy(inputs[0], stream())}, axes};
}

// ---------------------------------------------------------------- Broadcast
std::vector<Shape> Broadcast::output_shapes(const std::vector<array>& inputs) {
  if (broadcast_shapes(inputs[0].shape(), shape_, "broadcast_to") != shape_) {
    throw std::invalid_argument(msg("[broadcast_to] Cannot broadcast an array of shape ",
                                    shape_str(inputs[0].shape()), " to shape ", shape_str(shape_),
                                    "."));
  }
  return {shape_};
}
bool Broadcast::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Broadcast*>(&other);
  return o && o->shape_ == shape_;
}
std::vector<array> Broadcast::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {broadcast_to(tangents[0], shape_, stream())};
}
std::vector<array> Broadcast::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
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
std::pair<std::vector<array>, std::vector<int>> Broadcast::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
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
  return o && o->shape_ == shape_ && o->infer_ == infer_ && o->follow_ == follow_;
}
std::vector<Shape> Reshape::output_shapes(const std::vector<array>& inputs) {
  Shape shape = shape_;
  const size_t size = inputs[0].size();
  for (size_t i = 0; i < follow_.size(); ++i)
    if (follow_[i] >= 0 && follow_[i] < static_cast<int>(inputs[0].ndim()))
      shape[i] = inputs[0].shape()[follow_[i]];
  if (infer_ >= 0) {
    size_t known = 1;
    for (size_t i = 0; i < shape.size(); ++i)
      if (static_cast<int>(i) != infer_) known *= static_cast<size_t>(shape[i]);
    if (known == 0 || size % known != 0) {
      shape[infer_] = -1;
      throw std::invalid_argument(msg("[reshape] Cannot infer the -1 dimension of ",
                                      shape_str(shape), " for an array of size ", size, "."));
    }
    shape[infer_] = static_cast<int32_t>(size / known);
  }
  if (shape_size(shape) != size) {
    throw std::invalid_argument(msg("[reshape] Cannot reshape an array of shape ",
                                    shape_str(inputs[0].shape()), " into shape ", shape_str(shape),
                                    "."));
  }
  return {shape};
}
std::vector<array> Reshape::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                const std::vector<int>&) {
  return {reshape(tangents[0], shape_, stream())};
}
std::vector<array> Reshape::vjp(const std::vector<array>& primals,
                                const std::vector<array>& cotangents, const std::vector<int>&,
                                const std::vector<array>&) {
  return {reshape(cotangents[0], primals[0].shape(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> Reshape::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
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
      if (np < op)
        np *= shape[nj++];
      else
        op *= od[oj++];
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
std::vector<array> Transpose::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {transpose(tangents[0], axes_, stream())};
}
std::vector<array> Transpose::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  std::vector<int> inverse(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) inverse[axes_[i]] = static_cast<int>(i);
  return {transpose(cotangents[0], inverse, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Transpose::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  if (axes[0] < 0) return {{transpose(inputs[0], axes_, stream())}, {-1}};
  array x = moveaxis(inputs[0], axes[0], 0, stream());
  std::vector<int> perm{0};
  for (int a : axes_) perm.push_back(a + 1);
  return {{transpose(x, perm, stream())}, {0}};
}

// ---------------------------------------------------------------- Contiguous
bool Contiguous::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Contiguous*>(&other);
  return o && o->allow_col_major_ == allow_col_major_;
}
std::vector<array> Contiguous::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                   const std::vector<int>&) {
  return {tangents[0]};
}
std::vector<array> Contiguous::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                   const std::vector<int>&, const std::vector<array>&) {
  return {cotangents[0]};
}
std::pair<std::vector<array>, std::vector<int>> Contiguous::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  return {{contiguous(inputs[0], allow_col_major_, stream())}, axes};
}

// ---------------------------------------------------------------- View
bool View::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const View*>(&other);
  return o && o->dtype_ == dtype_;
}
std::vector<Shape> View::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  if (!shape.empty()) {
    shape.back() = static_cast<int32_t>(int64_t{shape.back()} * inputs[0].itemsize() / dtype_.size);
  }
  return {shape};
}
// Reinterpreting bits has no derivative; integer views never get here (no tangents).
std::vector<array> View::jvp(const std::vector<array>&, const std::vector<array>&,
                             const std::vector<int>&) {
  throw std::invalid_argument("[view] Reinterpreting the bits of an array is not differentiable.");
}
std::vector<array> View::vjp(const std::vector<array>&, const std::vector<array>&,
                             const std::vector<int>&, const std::vector<array>&) {
  throw std::invalid_argument("[view] Reinterpreting the bits of an array is not differentiable.");
}
std::pair<std::vector<array>, std::vector<int>> View::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  if (axes[0] < 0) return {{view(inputs[0], dtype_, stream())}, {-1}};
  // The batch axis first, so that the last axis that scales is never the batch axis.
  array x = moveaxis(inputs[0], axes[0], 0, stream());
  if (x.ndim() == 1 && x.itemsize() != dtype_.size) {
    throw std::invalid_argument(
        "[view] Changing the type of a scalar is only allowed for types "
        "with the same size.");
  }
  return {{view(x, dtype_, stream())}, {0}};
}

// ---------------------------------------------------------------- AsStrided
bool AsStrided::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const AsStrided*>(&other);
  return o && o->shape_ == shape_ && o->strides_ == strides_ && o->offset_ == offset_;
}
std::vector<array> AsStrided::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {as_strided(tangents[0], shape_, strides_, offset_, stream())};
}
std::vector<array> AsStrided::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
                                  const std::vector<array>&) {
  // The adjoint of a gather at fixed positions: scatter-add the cotangent back to the
  // (row-major) input positions each output element reads; overlapping views accumulate.
  const array& in = primals[0];
  const array& cot = cotangents[0];
  const size_t n = shape_size(shape_);
  array flat = zeros({static_cast<int32_t>(in.size())}, cot.dtype(), stream());
  if (n > 0) {
    std::vector<int64_t> positions(n);
    for (size_t i = 0; i < n; ++i) {
      positions[i] = offset_ + elem_to_loc(static_cast<int64_t>(i), shape_, strides_);
    }
    array idx(positions.begin(), {static_cast<int32_t>(n)}, int64);
    array upd = reshape(cot, {static_cast<int32_t>(n), 1}, stream());
    flat = scatter_add(flat, {idx}, upd, {0}, stream());
  }
  return {reshape(flat, in.shape(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> AsStrided::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  if (axes[0] < 0) return {{as_strided(inputs[0], shape_, strides_, offset_, stream())}, {-1}};
  // Batch first: batch b starts `per_batch` elements after batch b - 1 in row-major order.
  array x = moveaxis(inputs[0], axes[0], 0, stream());
  int64_t per_batch = x.shape(0) ? static_cast<int64_t>(x.size() / x.shape(0)) : 0;
  Shape shape{x.shape(0)};
  shape.insert(shape.end(), shape_.begin(), shape_.end());
  Strides strides{per_batch};
  strides.insert(strides.end(), strides_.begin(), strides_.end());
  return {{as_strided(x, std::move(shape), std::move(strides), offset_, stream())}, {0}};
}

// ---------------------------------------------------------------- SliceBounds
Shape SliceBounds::shape() const {
  Shape out(start.size());
  for (size_t i = 0; i < start.size(); ++i) {
    int64_t st = strides[i], b = start[i], e = stop[i];
    if (st > 0)
      out[i] = e > b ? static_cast<int32_t>((e - b + st - 1) / st) : 0;
    else
      out[i] = b > e ? static_cast<int32_t>((b - e - st - 1) / -st) : 0;
  }
  return out;
}

SliceBounds SliceBounds::normalize(const Shape& shape, Shape start, Shape stop, Shape strides,
                                   const char* op) {
  const size_t nd = shape.size();
  auto check_size = [&](const Shape& v, const char* what) {
    if (v.size() != nd) {
      throw std::invalid_argument(msg("[", op, "] Got ", v.size(), " ", what, " ", shape_str(v),
                                      " for an array of shape ", shape_str(shape),
                                      "; need one per dimension."));
    }
  };
  check_size(start, "start indices");
  check_size(stop, "stop indices");
  check_size(strides, "strides");
  for (size_t i = 0; i < nd; ++i) {
    if (strides[i] == 0) {
      throw std::invalid_argument(
          msg("[", op, "] Slice step must be non-zero; got strides ", shape_str(strides), "."));
    }
  }
  // Python's slice.indices(n), in 64 bits so that start + n cannot overflow.
  for (size_t i = 0; i < nd; ++i) {
    const int64_t n = shape[i];
    const bool forward = strides[i] > 0;
    auto clamp = [&](int64_t v) -> int64_t {
      if (v < 0) v += n;
      if (forward) return std::clamp<int64_t>(v, 0, n);
      return std::clamp<int64_t>(v, -1, n - 1);
    };
    int64_t b = clamp(start[i]), e = clamp(stop[i]);
    bool empty = forward ? e <= b : b <= e;
    // Empty slices get in-bounds bounds so that the view's offset stays inside the buffer.
    start[i] = empty ? 0 : static_cast<int32_t>(b);
    stop[i] = empty ? 0 : static_cast<int32_t>(e);
  }
  return {std::move(start), std::move(stop), std::move(strides)};
}

// ---------------------------------------------------------------- Slice
std::vector<Shape> Slice::output_shapes(const std::vector<array>& inputs) {
  Shape shape = bounds_.shape();
  const Shape& in = inputs[0].shape();
  if (!traced_shape_.empty() && in.size() == shape.size()) {
    for (size_t i = 0; i < shape.size(); ++i) {
      const bool whole =
          bounds_.start[i] == 0 && bounds_.strides[i] == 1 && shape[i] == traced_shape_[i];
      if (whole) {
        shape[i] = in[i];
      } else if (in[i] != traced_shape_[i]) {
        throw std::invalid_argument(
            msg("[slice] A shapeless compiled function takes a part of axis ", i,
                " of an array of shape ", shape_str(traced_shape_), " (indices ", bounds_.start[i],
                " to ", bounds_.stop[i], " by ", bounds_.strides[i],
                "), which has no meaning for an input of shape ", shape_str(in),
                "; compile it without shapeless=True."));
      }
    }
  }
  bool ok = in.size() == shape.size();
  for (size_t i = 0; ok && i < shape.size(); ++i) {
    if (shape[i] == 0) continue;
    const int64_t first = bounds_.start[i];
    const int64_t last = first + static_cast<int64_t>(shape[i] - 1) * bounds_.strides[i];
    ok = first >= 0 && first < in[i] && last >= 0 && last < in[i];
  }
  if (!ok) {
    throw std::invalid_argument(msg("[slice] A slice of shape ", shape_str(shape),
                                    " recorded for another input does not fit an input of shape ",
                                    shape_str(in), "."));
  }
  return {shape};
}
bool Slice::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Slice*>(&other);
  return o && o->bounds_ == bounds_ && o->traced_shape_ == traced_shape_;
}
std::vector<array> Slice::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                              const std::vector<int>&) {
  return {slice_node(tangents[0], bounds_, stream())};
}
std::vector<array> Slice::vjp(const std::vector<array>& primals,
                              const std::vector<array>& cotangents, const std::vector<int>&,
                              const std::vector<array>&) {
  // Every input element outside the slice got no gradient.
  array zero = zeros(primals[0].shape(), cotangents[0].dtype(), stream());
  return {slice_update_node(zero, cotangents[0], bounds_, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Slice::vmap(const std::vector<array>& inputs,
                                                            const std::vector<int>& axes) {
  if (axes[0] < 0) return {{slice_node(inputs[0], bounds_, stream())}, {-1}};
  array x = moveaxis(inputs[0], axes[0], 0, stream());
  return {{slice_node(x, with_batch_axis(bounds_, x.shape(0)), stream())}, {0}};
}

// ---------------------------------------------------------------- SliceUpdate
bool SliceUpdate::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const SliceUpdate*>(&other);
  return o && o->bounds_ == bounds_;
}
std::vector<array> SliceUpdate::jvp(const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  // Linear in (src, update) jointly: a missing tangent is zero.
  std::vector<array> t;
  for (int i = 0; i < 2; ++i) {
    auto it = std::find(argnums.begin(), argnums.end(), i);
    t.push_back(it != argnums.end() ? tangents[it - argnums.begin()]
                                    : zeros_like(primals[i], stream()));
  }
  return {slice_update_node(t[0], t[1], bounds_, stream())};
}
std::vector<array> SliceUpdate::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  const array& cot = cotangents[0];
  std::vector<array> out;
  for (int arg : argnums) {
    if (arg == 0) {
      // Overwritten elements of src do not reach the output.
      array zero = zeros(primals[1].shape(), cot.dtype(), stream());
      out.push_back(slice_update_node(cot, zero, bounds_, stream()));
    } else {
      out.push_back(slice_node(cot, bounds_, stream()));
    }
  }
  return out;
}
std::pair<std::vector<array>, std::vector<int>> SliceUpdate::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  int n = batch_size(inputs, axes);
  if (n < 0) return {{slice_update_node(inputs[0], inputs[1], bounds_, stream())}, {-1}};
  array src = batch_first(inputs[0], axes[0], n, stream());
  array upd = batch_first(inputs[1], axes[1], n, stream());
  return {{slice_update_node(src, upd, with_batch_axis(bounds_, n), stream())}, {0}};
}

// ---------------------------------------------------------------- Concatenate
bool Concatenate::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Concatenate*>(&other);
  return o && o->axis_ == axis_;
}
std::vector<Shape> Concatenate::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  shape[axis_] = 0;
  for (const auto& in : inputs) shape[axis_] += in.shape(axis_);
  return {shape};
}
std::vector<array> Concatenate::jvp(const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  std::vector<array> t;
  for (size_t i = 0; i < primals.size(); ++i) t.push_back(zeros_like(primals[i], stream()));
  for (size_t j = 0; j < argnums.size(); ++j) t[argnums[j]] = tangents[j];
  auto shape = output_shapes(primals)[0];
  Dtype dtype = t[0].dtype();
  return {
      array(std::move(shape), dtype, std::make_shared<Concatenate>(stream(), axis_), std::move(t))};
}
std::vector<array> Concatenate::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  // Each input's cotangent is its part of the output's.
  const array& cot = cotangents[0];
  std::vector<int32_t> offsets{0};
  for (const auto& p : primals) offsets.push_back(offsets.back() + p.shape(axis_));
  std::vector<array> out;
  for (int arg : argnums) {
    SliceBounds b{Shape(cot.ndim(), 0), cot.shape(), Shape(cot.ndim(), 1)};
    b.start[axis_] = offsets[arg];
    b.stop[axis_] = offsets[arg + 1];
    out.push_back(slice_node(cot, std::move(b), stream()));
  }
  return out;
}
std::pair<std::vector<array>, std::vector<int>> Concatenate::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  int n = batch_size(inputs, axes);
  if (n < 0) return {{concatenate(inputs, axis_, stream())}, {-1}};
  std::vector<array> batched;
  for (size_t i = 0; i < inputs.size(); ++i) {
    batched.push_back(batch_first(inputs[i], axes[i], n, stream()));
  }
  return {{concatenate(std::move(batched), axis_ + 1, stream())}, {0}};
}

}  // namespace kiln
