// Transforms of the selection and search primitives (primitives_sort.h).
//
// Partition's outputs are elements of its input picked by ArgPartition, so derivatives follow
// those positions (take_along_axis forward, a scatter-add back). Median picks the one or two
// middle elements (ArgPartition at their ranks) and averages them. Unique's values are the
// input at each entry's first index, or the fill value past the last group. Every primitive
// works on the last axis, so vmap moves the mapped axis to the front.
#include "kiln/primitives_sort.h"

#include <ostream>

#include "kiln/ops.h"
#include "kiln/primitives_indexing.h"

namespace kiln {

namespace {

/** `x` with its mapped axis (`axis`, -1 when unmapped) first. */
array batch_first(const array& x, int axis, const Stream& s) {
  return axis <= 0 ? x : moveaxis(x, axis, 0, s);
}

int last_axis(const array& x) {
  return static_cast<int>(x.ndim()) - 1;
}

/** Adds `values` into zeros of `like`'s shape at `indices` along the last axis. */
array scatter_add_last(const array& like, const array& indices, const array& values,
                       const Stream& s) {
  return detail::scatter_along_axis(ScatterReduce::sum, zeros_like(like, s), indices, values,
                                    last_axis(like), s);
}

array arg_partition(const array& x, int64_t kth, int64_t start, const Stream& s) {
  Shape shape = x.shape();
  shape.back() -= start;
  return array(std::move(shape), uint32, std::make_shared<ArgPartition>(s, kth, start), {x});
}

}  // namespace

// ---------------------------------------------------------------- Partition, ArgPartition

void Partition::print(std::ostream& os) {
  os << "Partition(kth=" << kth_ << ", start=" << start_ << ")";
}

bool Partition::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Partition*>(&other);
  return o && o->kth_ == kth_ && o->start_ == start_;
}

std::vector<Shape> Partition::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  shape.back() -= start_;
  return {shape};
}

std::vector<array> Partition::jvp(const std::vector<array>& primals,
                                  const std::vector<array>& tangents, const std::vector<int>&) {
  array idx = arg_partition(primals[0], kth_, start_, stream());
  return {take_along_axis(tangents[0], idx, last_axis(primals[0]), stream())};
}

std::vector<array> Partition::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
                                  const std::vector<array>&) {
  array idx = arg_partition(primals[0], kth_, start_, stream());
  return {scatter_add_last(primals[0], idx, cotangents[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> Partition::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  array x = batch_first(inputs[0], axes[0], stream());
  Shape shape = x.shape();
  shape.back() -= start_;
  return {{array(std::move(shape), x.dtype(), std::make_shared<Partition>(stream(), kth_, start_),
                 {x})},
          {axes[0] < 0 ? -1 : 0}};
}

void ArgPartition::print(std::ostream& os) {
  os << "ArgPartition(kth=" << kth_ << ", start=" << start_ << ")";
}

bool ArgPartition::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ArgPartition*>(&other);
  return o && o->kth_ == kth_ && o->start_ == start_;
}

std::vector<Shape> ArgPartition::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  shape.back() -= start_;
  return {shape};
}

// Integer (index) output: zero derivative.
std::vector<array> ArgPartition::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&) {
  return {zeros(output_shapes(primals)[0], uint32, stream())};
}

std::vector<array> ArgPartition::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> ArgPartition::vmap(const std::vector<array>& inputs,
                                                                   const std::vector<int>& axes) {
  array x = batch_first(inputs[0], axes[0], stream());
  return {{arg_partition(x, kth_, start_, stream())}, {axes[0] < 0 ? -1 : 0}};
}

// ---------------------------------------------------------------- Median

std::vector<Shape> Median::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  shape.pop_back();
  return {shape};
}

namespace {

/** The positions (uint32, keepdims) of a row's lower and upper middle elements, and the
 * weight of each in the median (0 where the row holds a NaN, whose median is NaN). */
struct MedianPick {
  array lo, hi, weight;
};

MedianPick median_pick(const array& x, Dtype dtype, const Stream& s) {
  const int64_t n = x.shape().back();
  // Positions [rank, n) of the partition around rank start with the element of that rank.
  auto at_rank = [&](int64_t rank) {
    array idx = arg_partition(x, rank, rank, s);
    Shape stop = idx.shape();
    stop.back() = 1;
    return slice(idx, Shape(x.ndim(), 0), stop, s);
  };
  array lo = at_rank((n - 1) / 2);
  array hi = n % 2 ? lo : at_rank(n / 2);
  array nan = any(isnan(x, s), last_axis(x), true, s);
  array weight = where(nan, array(0.0, dtype), array(n % 2 ? 1.0 : 0.5, dtype), s);
  return {lo, hi, weight};
}

}  // namespace

// median = (x[lo] + x[hi]) / 2 for even rows, x[lo] for odd ones; no derivative where NaN.
std::vector<array> Median::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents, const std::vector<int>&) {
  const array& x = primals[0];
  const Stream& s = stream();
  const int ax = last_axis(x);
  const Dtype out = Median::output_dtype(x.dtype());
  MedianPick p = median_pick(x, out, s);
  array t = astype(tangents[0], out, s);
  array r = multiply(p.weight, take_along_axis(t, p.lo, ax, s), s);
  if (x.shape().back() % 2 == 0) {
    r = add(r, multiply(p.weight, take_along_axis(t, p.hi, ax, s), s), s);
  }
  return {squeeze(r, ax, s)};
}

std::vector<array> Median::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents, const std::vector<int>&,
                               const std::vector<array>&) {
  const array& x = primals[0];
  const Stream& s = stream();
  const int ax = last_axis(x);
  MedianPick p = median_pick(x, x.dtype(), s);
  array c = multiply(astype(expand_dims(cotangents[0], ax, s), x.dtype(), s), p.weight, s);
  array g = scatter_add_last(x, p.lo, c, s);
  if (x.shape().back() % 2 == 0) {
    g = add(g, scatter_add_last(x, p.hi, c, s), s);
  }
  return {g};
}

std::pair<std::vector<array>, std::vector<int>> Median::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  array x = batch_first(inputs[0], axes[0], stream());
  Shape shape = x.shape();
  shape.pop_back();
  return {
      {array(std::move(shape), output_dtype(x.dtype()), std::make_shared<Median>(stream()), {x})},
      {axes[0] < 0 ? -1 : 0}};
}

// ---------------------------------------------------------------- SearchSorted

void SearchSorted::print(std::ostream& os) {
  os << "SearchSorted(" << (right_ ? "right" : "left") << ")";
}

bool SearchSorted::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const SearchSorted*>(&other);
  return o && o->right_ == right_;
}

// Integer (index) output: zero derivative.
std::vector<array> SearchSorted::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&) {
  return {zeros(primals[1].shape(), uint32, stream())};
}

std::vector<array> SearchSorted::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> out;
  for (int i : argnums) out.push_back(zeros_like(primals[i], stream()));
  return out;
}

// Elementwise in the values. A batch of sequences would need a search per sequence, which
// MLX refuses too (its tests expect the ValueError).
std::pair<std::vector<array>, std::vector<int>> SearchSorted::vmap(const std::vector<array>& inputs,
                                                                   const std::vector<int>& axes) {
  if (axes[0] >= 0) {
    throw std::invalid_argument(
        "[searchsorted] Cannot vmap over the sorted sequence, only over the values being "
        "searched for.");
  }
  const array& v = inputs[1];
  return {
      {array(v.shape(), uint32, std::make_shared<SearchSorted>(stream(), right_), {inputs[0], v})},
      {axes[1]}};
}

// ---------------------------------------------------------------- Unique

void Unique::print(std::ostream& os) {
  os << "Unique(size=" << size_ << (has_fill_ ? ", fill" : "") << ")";
}

bool Unique::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Unique*>(&other);
  return o && o->size_ == size_ && o->has_fill_ == has_fill_;
}

std::vector<Shape> Unique::output_shapes(const std::vector<array>& inputs) {
  Shape entries = inputs[0].shape();
  entries.back() = static_cast<int>(size_);
  return {entries, entries, inputs[0].shape(), entries};
}

namespace {

/** The fill value shaped to broadcast against the entries (a per-row fill gains the entries'
 * axis). */
array fill_entries(const array& fill, const Stream& s) {
  return fill.ndim() == 0 ? fill : expand_dims(fill, -1, s);
}

}  // namespace

// values = where(counts > 0 or no fill, x[index], fill): derivatives follow index for the
// entries taken from x, and reach the fill value from the padding.
std::vector<array> Unique::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  const Stream& s = stream();
  const array& x = primals[0];
  auto outs = array::make_arrays(output_shapes(primals), {x.dtype(), uint32, uint32, int32},
                                 std::make_shared<Unique>(s, size_, has_fill_), primals);
  const array& index = outs[1];
  array taken = greater(outs[3], array(0, int32), s);
  if (!has_fill_) taken = logical_or(taken, array(true), s);
  array r = zeros(index.shape(), x.dtype(), s);
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] == 0) {
      r = add(r,
              where(taken, take_along_axis(tangents[i], index, last_axis(x), s),
                    array(0.0, x.dtype()), s),
              s);
    } else {
      r = add(r, where(taken, array(0.0, x.dtype()), fill_entries(tangents[i], s), s), s);
    }
  }
  return {r, zeros(index.shape(), uint32, s), zeros(x.shape(), uint32, s),
          zeros(index.shape(), int32, s)};
}

std::vector<array> Unique::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>& outputs) {
  const Stream& s = stream();
  const array& x = primals[0];
  array taken = greater(outputs[3], array(0, int32), s);
  if (!has_fill_) taken = logical_or(taken, array(true), s);
  const array& c = cotangents[0];
  std::vector<array> out;
  for (int i : argnums) {
    if (i == 0) {
      array kept = where(taken, c, array(0.0, x.dtype()), s);
      out.push_back(scatter_add_last(x, outputs[1], kept, s));
    } else {
      array pad = where(taken, array(0.0, x.dtype()), c, s);
      out.push_back(primals[1].ndim() == 0 ? sum(pad, false, s) : sum(pad, -1, false, s));
    }
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> Unique::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  const Stream& s = stream();
  const int b = axes[0] >= 0 ? inputs[0].shape()[axes[0]] : inputs[1].shape()[axes[1]];
  auto mapped_first = [&](const array& x, int axis) {
    if (axis >= 0) return batch_first(x, axis, s);
    Shape shape = x.shape();
    shape.insert(shape.begin(), b);
    return broadcast_to(expand_dims(x, 0, s), shape, s);
  };
  std::vector<array> in = {mapped_first(inputs[0], axes[0])};
  if (has_fill_) {
    // One fill per row of the batched rows unless a single one serves them all.
    const array& fill = inputs[1];
    const bool shared = axes[1] < 0 && fill.ndim() == 0;
    Shape rows(in[0].shape().begin(), in[0].shape().end() - 1);
    array f = shared ? fill : mapped_first(fill, axes[1]);
    if (!shared && f.ndim() < rows.size()) {
      Shape shape = f.shape();
      shape.resize(rows.size(), 1);
      f = broadcast_to(reshape(f, shape, s), rows, s);
    }
    in.push_back(shared ? f : broadcast_to(f, rows, s));
  }
  auto outs = array::make_arrays(output_shapes(in), {in[0].dtype(), uint32, uint32, int32},
                                 std::make_shared<Unique>(s, size_, has_fill_), in);
  return {outs, {0, 0, 0, 0}};
}

}  // namespace kiln
