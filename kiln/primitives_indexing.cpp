// Transformations and shape logic of the indexing primitives.
//
// Gradients: gathers are linear in the source (vjp: scatter-add into zeros); indices are
// integers and get zero gradients. For scatters the rules are:
//   none: the source keeps the cotangent where nothing was written; an update gets the
//         cotangent of its target (every duplicate gets it, as in MLX).
//   sum:  the source gets the cotangent; an update the cotangent of its target.
//   prod: d out / d a = product of the updates at the target; d out / d u = product of a
//         and the other updates there, computed without dividing by zero updates.
//   max/min: the cotangent of a target is shared equally by the values equal to the
//         result there (the source and/or updates); without ties this is MLX's rule.
// jvp follows the same rules, so vjp and jvp agree.
#include "kiln/primitives_indexing.h"

#include <algorithm>
#include <cstring>

#include "kiln/ops.h"
#include "kiln/primitives_common.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

const char* reduce_str(ScatterReduce r) {
  switch (r) {
    case ScatterReduce::none:
      return "none";
    case ScatterReduce::sum:
      return "sum";
    case ScatterReduce::prod:
      return "prod";
    case ScatterReduce::max:
      return "max";
    case ScatterReduce::min:
      return "min";
  }
  return "none";
}

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

bool same_op(const char* a, const char* b) {
  return std::strcmp(a, b) == 0;
}

std::vector<int> shift(const std::vector<int>& axes, int by) {
  std::vector<int> out(axes);
  for (auto& a : out) a += by;
  return out;
}

// The tangent given for input `arg`, if any.
const array* tangent_of(int arg, const std::vector<array>& tangents,
                        const std::vector<int>& argnums) {
  for (size_t i = 0; i < argnums.size(); ++i)
    if (argnums[i] == arg) return &tangents[i];
  return nullptr;
}

// The batch size of the first mapped input.
int batch_size(const std::vector<array>& inputs, const std::vector<int>& axes) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (axes[i] >= 0) return inputs[i].shape(axes[i]);
  return -1;
}

// The mapped axis moved to the front, or a new size-1 front axis when unmapped.
array batch_first(const array& x, int axis, const Stream& s) {
  return axis >= 0 ? moveaxis(x, axis, 0, s) : expand_dims(x, 0, s);
}

// As batch_first, but an unmapped x is repeated `batch` times (a target written per batch).
array batch_first_full(const array& x, int axis, int batch, const Stream& s) {
  if (axis >= 0) return moveaxis(x, axis, 0, s);
  Shape shape{batch};
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  return broadcast_to(expand_dims(x, 0, s), shape, s);
}

// arange(batch) shaped (batch, 1, ..., 1) with `ndim` dimensions: the index along a batch
// axis that pairs batch b of the source with batch b of the indices.
array batch_index(int batch, int ndim, const Stream& s) {
  Shape shape(ndim, 1);
  shape[0] = batch;
  return reshape(arange(batch, s), shape, s);
}

/** The pieces of the scatter_prod derivatives: d out / d a and d out / d u (the product of
 * a and the other updates at u's target, exact with zero updates: zeros are counted and
 * left out of the product instead of divided out). */
struct ProdFactors {
  array da, du;
};
ProdFactors prod_factors(const array& a, const std::vector<array>& idx, const array& u,
                         const std::vector<int>& axes, const Shape& slice, const Stream& s) {
  array zero = equal(u, zeros_like(u, s), s);
  array u_safe = where(zero, ones_like(u, s), u, s);
  // a times the nonzero updates at each target, and the number of zero updates there.
  array nonzero_prod = scatter_prod(a, idx, u_safe, axes, s);
  array zeros_at = scatter_add(zeros(a.shape(), int32, s), idx, astype(zero, int32, s), axes, s);
  array p = gather(nonzero_prod, idx, axes, slice, s);
  array z = gather(zeros_at, idx, axes, slice, s);
  array none_zero = astype(equal(z, array(0), s), u.dtype(), s);
  array only_this = astype(equal(z, array(1), s), u.dtype(), s);
  array du = where(zero, multiply(p, only_this, s),
                   astype(divide(multiply(p, none_zero, s), u_safe, s), u.dtype(), s), s);
  array da = scatter_prod(ones_like(a, s), idx, u, axes, s);
  return {da, du};
}

/** Where a max/min scatter's result came from: masks of the source and updates equal to
 * it. As MLX, every value tied with the result gets the whole cotangent (the vjp), and the
 * jvp is its transpose: the sum of the tied values' tangents. */
struct ExtremumMasks {
  array from_a, from_u;
};
ExtremumMasks extremum_masks(const array& a, const std::vector<array>& idx, const array& u,
                             const array& out, const std::vector<int>& axes, const Shape& slice,
                             const Stream& s) {
  return {equal(out, a, s), equal(gather(out, idx, axes, slice, s), u, s)};
}

array masked(const array& mask, const array& x, const Stream& s) {
  return where(mask, x, zeros_like(x, s), s);
}

}  // namespace

// ---------------------------------------------------------------- Gather

void Gather::print(std::ostream& os) {
  os << "Gather(" << op_ << ", axes=" << axes_str(axes_)
     << ", slice_sizes=" << shape_str(slice_sizes_) << ")";
}

bool Gather::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Gather*>(&other);
  return o && same_op(o->op_, op_) && o->axes_ == axes_ && o->slice_sizes_ == slice_sizes_;
}

Shape Gather::slice_sizes_for(const Shape& src) const {
  Shape slice = slice_sizes_;
  for (size_t d = 0; d < traced_shape_.size() && d < src.size(); ++d) {
    if (src[d] == traced_shape_[d] ||
        std::find(axes_.begin(), axes_.end(), static_cast<int>(d)) != axes_.end()) {
      continue;
    }
    if (slice_sizes_[d] != traced_shape_[d]) {
      throw std::invalid_argument(msg("[", op_, "] A shapeless compiled function gathers slices ",
                                      shape_str(slice_sizes_), " of an array of shape ",
                                      shape_str(traced_shape_),
                                      ", which have no meaning for one of shape ", shape_str(src),
                                      "; compile it without shapeless=True."));
    }
    slice[d] = src[d];
  }
  return slice;
}

std::vector<Shape> Gather::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs.size() > 1 ? inputs[1].shape() : Shape{};
  const Shape slice = slice_sizes_for(inputs[0].shape());
  shape.insert(shape.end(), slice.begin(), slice.end());
  return {shape};
}

std::vector<array> Gather::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  // Linear in the source; the indices only select.
  std::vector<array> idx(primals.begin() + 1, primals.end());
  if (const array* t = tangent_of(0, tangents, argnums)) {
    return {gather(*t, idx, axes_, slice_sizes_for(primals[0].shape()), stream())};
  }
  return {zeros(output_shapes(primals)[0], primals[0].dtype(), stream())};
}

std::vector<array> Gather::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> idx(primals.begin() + 1, primals.end());
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      grads.push_back(
          scatter_add(zeros_like(primals[0], stream()), idx, cotangents[0], axes_, stream()));
    } else {
      grads.push_back(zeros_like(primals[arg], stream()));  // integer indices
    }
  }
  return grads;
}

std::pair<std::vector<array>, std::vector<int>> Gather::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  const Stream s = stream();
  const array& a = inputs[0];
  std::vector<array> idx(inputs.begin() + 1, inputs.end());
  // The slice sizes for one batch element of the source.
  Shape a1 = a.shape();
  if (axes[0] >= 0) a1.erase(a1.begin() + axes[0]);
  const Shape sizes = slice_sizes_for(a1);
  bool idx_mapped = false;
  for (size_t i = 1; i < axes.size(); ++i) idx_mapped |= axes[i] >= 0;
  if (!idx_mapped) {
    if (axes[0] < 0) return {{gather(a, idx, axes_, sizes, s)}, {-1}};
    // The batch axis of the source is one more (full) slice axis.
    Shape slice{a.shape(axes[0])};
    slice.insert(slice.end(), sizes.begin(), sizes.end());
    const int pd = idx.empty() ? 0 : static_cast<int>(idx[0].ndim());
    return {{gather(moveaxis(a, axes[0], 0, s), idx, shift(axes_, 1), slice, s)}, {pd}};
  }
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = batch_first(idx[i], axes[i + 1], s);
  if (axes[0] < 0) return {{gather(a, idx, axes_, sizes, s)}, {0}};
  // Both mapped: batch b of the source pairs with batch b of the indices.
  const int batch = batch_size(inputs, axes);
  const int pd = static_cast<int>(broadcast_shapes(idx, "vmap").size());
  idx.insert(idx.begin(), batch_index(batch, pd, s));
  std::vector<int> ax = shift(axes_, 1);
  ax.insert(ax.begin(), 0);
  Shape slice{1};
  slice.insert(slice.end(), sizes.begin(), sizes.end());
  array g = gather(moveaxis(a, axes[0], 0, s), idx, ax, slice, s);
  return {{squeeze(g, pd, s)}, {0}};
}

// ---------------------------------------------------------------- Scatter

void Scatter::print(std::ostream& os) {
  os << "Scatter(" << op_ << ", reduce=" << reduce_str(reduce_) << ", axes=" << axes_str(axes_)
     << ")";
}

bool Scatter::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Scatter*>(&other);
  return o && same_op(o->op_, op_) && o->reduce_ == reduce_ && o->axes_ == axes_;
}

std::vector<array> Scatter::jvp(const std::vector<array>& primals,
                                const std::vector<array>& tangents,
                                const std::vector<int>& argnums) {
  const Stream s = stream();
  const array& a = primals[0];
  const array& u = primals.back();
  const int last = static_cast<int>(primals.size()) - 1;
  std::vector<array> idx(primals.begin() + 1, primals.end() - 1);
  const Shape slice(u.shape().end() - a.ndim(), u.shape().end());
  const array* ta = tangent_of(0, tangents, argnums);
  const array* tu = tangent_of(last, tangents, argnums);
  if (!ta && !tu) return {zeros_like(a, s)};
  array za = ta ? *ta : zeros_like(a, s);
  switch (reduce_) {
    case ScatterReduce::none:
      return {scatter(za, idx, tu ? *tu : zeros_like(u, s), axes_, s)};
    case ScatterReduce::sum:
      return {tu ? scatter_add(za, idx, *tu, axes_, s) : za};
    case ScatterReduce::prod: {
      auto f = prod_factors(a, idx, u, axes_, slice, s);
      array out = multiply(f.da, za, s);
      if (tu) out = scatter_add(out, idx, multiply(f.du, *tu, s), axes_, s);
      return {out};
    }
    case ScatterReduce::max:
    case ScatterReduce::min: {
      array result = detail::scatter_reduce(reduce_, a, idx, u, axes_, s);
      auto m = extremum_masks(a, idx, u, result, axes_, slice, s);
      array sum = masked(m.from_a, za, s);
      if (tu) sum = scatter_add(sum, idx, masked(m.from_u, *tu, s), axes_, s);
      return {astype(sum, a.dtype(), s)};
    }
  }
  return {};
}

std::vector<array> Scatter::vjp(const std::vector<array>& primals,
                                const std::vector<array>& cotangents,
                                const std::vector<int>& argnums,
                                const std::vector<array>& outputs) {
  const Stream s = stream();
  const array& a = primals[0];
  const array& u = primals.back();
  const array& c = cotangents[0];
  const int last = static_cast<int>(primals.size()) - 1;
  std::vector<array> idx(primals.begin() + 1, primals.end() - 1);
  const Shape slice(u.shape().end() - a.ndim(), u.shape().end());
  auto at_updates = [&](const array& x) { return gather(x, idx, axes_, slice, s); };

  std::optional<ProdFactors> prod;
  std::optional<ExtremumMasks> ext;
  if (reduce_ == ScatterReduce::prod) prod = prod_factors(a, idx, u, axes_, slice, s);
  if (reduce_ == ScatterReduce::max || reduce_ == ScatterReduce::min)
    ext = extremum_masks(a, idx, u, outputs[0], axes_, slice, s);
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg != 0 && arg != last) {
      grads.push_back(zeros_like(primals[arg], s));  // integer indices
      continue;
    }
    const bool src = arg == 0;
    switch (reduce_) {
      case ScatterReduce::none:
        grads.push_back(src ? scatter(c, idx, zeros_like(u, s), axes_, s) : at_updates(c));
        break;
      case ScatterReduce::sum:
        grads.push_back(src ? c : at_updates(c));
        break;
      case ScatterReduce::prod:
        // Complex: c * conj(derivative) (MLX's convention, docs/transforms.md).
        grads.push_back(src ? multiply(c, conj_if_complex(prod->da, s), s)
                            : multiply(at_updates(c), conj_if_complex(prod->du, s), s));
        break;
      case ScatterReduce::max:
      case ScatterReduce::min:
        grads.push_back(src ? masked(ext->from_a, c, s) : masked(ext->from_u, at_updates(c), s));
        break;
    }
  }
  return grads;
}

std::pair<std::vector<array>, std::vector<int>> Scatter::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  const Stream s = stream();
  const array& a = inputs[0];
  const array& u = inputs.back();
  const int a_ax = axes[0], u_ax = axes.back();
  std::vector<array> idx(inputs.begin() + 1, inputs.end() - 1);
  bool idx_mapped = false;
  for (size_t i = 1; i + 1 < axes.size(); ++i) idx_mapped |= axes[i] >= 0;
  const int batch = batch_size(inputs, axes);
  if (batch < 0) return {{detail::scatter_reduce(reduce_, a, idx, u, axes_, s)}, {-1}};

  // Every batch writes its own copy of the source.
  array x = batch_first_full(a, a_ax, batch, s);
  const int nd = static_cast<int>(a.ndim()) - (a_ax >= 0);
  const int pd = static_cast<int>(u.ndim()) - (u_ax >= 0) - nd;
  if (!idx_mapped) {
    // Same positions in every batch: the batch axis is one more slice axis of the updates.
    Shape shape = u.shape();
    shape.insert(shape.begin() + pd, batch);
    array v = u_ax >= 0 ? moveaxis(u, u_ax, pd, s) : broadcast_to(expand_dims(u, pd, s), shape, s);
    return {{detail::scatter_reduce(reduce_, x, idx, v, shift(axes_, 1), s)}, {0}};
  }
  // Positions differ per batch: index the batch axis too, pairing batch b of everything.
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = batch_first(idx[i], axes[i + 1], s);
  idx.insert(idx.begin(), batch_index(batch, pd + 1, s));
  std::vector<int> ax = shift(axes_, 1);
  ax.insert(ax.begin(), 0);
  // (B or 1, P..., 1, slice...): the batch axis of x is a slice axis of extent 1.
  array v = expand_dims(batch_first(u, u_ax, s), pd + 1, s);
  return {{detail::scatter_reduce(reduce_, x, idx, v, ax, s)}, {0}};
}

// ---------------------------------------------------------------- GatherAxis

void GatherAxis::print(std::ostream& os) {
  os << "GatherAxis(" << op_ << ", axis=" << axis_ << ")";
}

bool GatherAxis::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const GatherAxis*>(&other);
  return o && same_op(o->op_, op_) && o->axis_ == axis_;
}

std::vector<array> GatherAxis::jvp(const std::vector<array>& primals,
                                   const std::vector<array>& tangents,
                                   const std::vector<int>& argnums) {
  if (const array* t = tangent_of(0, tangents, argnums)) {
    return {take_along_axis(*t, primals[1], axis_, stream())};
  }
  return {zeros(primals[1].shape(), primals[0].dtype(), stream())};
}

std::vector<array> GatherAxis::vjp(const std::vector<array>& primals,
                                   const std::vector<array>& cotangents,
                                   const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      grads.push_back(detail::scatter_along_axis(ScatterReduce::sum,
                                                 zeros_like(primals[0], stream()), primals[1],
                                                 cotangents[0], axis_, stream()));
    } else {
      grads.push_back(zeros_like(primals[1], stream()));  // integer indices
    }
  }
  return grads;
}

std::pair<std::vector<array>, std::vector<int>> GatherAxis::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  const Stream s = stream();
  if (axes[0] < 0 && axes[1] < 0) return {{take_along_axis(inputs[0], inputs[1], axis_, s)}, {-1}};
  // An unmapped operand gets a size-1 batch axis, which take_along_axis broadcasts.
  array a = batch_first(inputs[0], axes[0], s);
  array idx = batch_first(inputs[1], axes[1], s);
  return {{take_along_axis(a, idx, axis_ + 1, s)}, {0}};
}

// ---------------------------------------------------------------- ScatterAxis

void ScatterAxis::print(std::ostream& os) {
  os << "ScatterAxis(" << op_ << ", reduce=" << reduce_str(reduce_) << ", axis=" << axis_ << ")";
}

bool ScatterAxis::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ScatterAxis*>(&other);
  return o && same_op(o->op_, op_) && o->reduce_ == reduce_ && o->axis_ == axis_;
}

std::vector<array> ScatterAxis::jvp(const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  const Stream s = stream();
  const array* ta = tangent_of(0, tangents, argnums);
  const array* tv = tangent_of(2, tangents, argnums);
  if (!ta && !tv) return {zeros_like(primals[0], s)};
  array za = ta ? *ta : zeros_like(primals[0], s);
  if (reduce_ == ScatterReduce::sum && !tv) return {za};
  array zv = tv ? *tv : zeros_like(primals[2], s);
  return {detail::scatter_along_axis(reduce_, za, primals[1], zv, axis_, s)};
}

std::vector<array> ScatterAxis::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  const Stream s = stream();
  const array& c = cotangents[0];
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      grads.push_back(reduce_ == ScatterReduce::sum
                          ? c
                          : put_along_axis(c, primals[1], zeros_like(primals[2], s), axis_, s));
    } else if (arg == 2) {
      grads.push_back(take_along_axis(c, primals[1], axis_, s));
    } else {
      grads.push_back(zeros_like(primals[1], s));  // integer indices
    }
  }
  return grads;
}

std::pair<std::vector<array>, std::vector<int>> ScatterAxis::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  const Stream s = stream();
  const int batch = batch_size(inputs, axes);
  if (batch < 0) {
    return {{detail::scatter_along_axis(reduce_, inputs[0], inputs[1], inputs[2], axis_, s)}, {-1}};
  }
  // Every batch writes its own copy of the source; size-1 batch axes of the indices and
  // values broadcast.
  array a = batch_first_full(inputs[0], axes[0], batch, s);
  array idx = batch_first(inputs[1], axes[1], s);
  array v = batch_first(inputs[2], axes[2], s);
  return {{detail::scatter_along_axis(reduce_, a, idx, v, axis_ + 1, s)}, {0}};
}

}  // namespace kiln
