// Transformations and shape logic of the reduction, scan and sort primitives.
#include "kiln/primitives_reduce.h"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "kiln/compile.h"
#include "kiln/fast_primitives.h"
#include "kiln/ops.h"
#include "kiln/primitives_common.h"
#include "kiln/primitives_indexing.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

/** `axes` of an unbatched input, renumbered for the input with a batch axis at `batch`. */
std::vector<int> shift_axes(std::vector<int> axes, int batch) {
  for (int& a : axes) a += a >= batch;
  return axes;
}

int shift_axis(int axis, int batch) {
  return batch >= 0 && axis >= batch ? axis + 1 : axis;
}

/**
 * For each element, the product of the other elements of its reduction group (the elements
 * that share its output position). Exclusive products from both sides instead of y / x, so
 * zeros are exact.
 */
array prod_of_others(const array& x, const std::vector<int>& axes, const Stream& s) {
  const int nd = static_cast<int>(x.ndim());
  // Reduced axes last, merged into one, so two exclusive scans cover each group.
  std::vector<int> perm;
  Shape flat;
  for (int i = 0; i < nd; ++i) {
    if (!std::binary_search(axes.begin(), axes.end(), i)) {
      perm.push_back(i);
      flat.push_back(x.shape()[i]);
    }
  }
  int64_t group = 1;
  for (int ax : axes) group *= x.shape()[ax];
  perm.insert(perm.end(), axes.begin(), axes.end());
  flat.push_back(static_cast<int32_t>(group));
  array xt = transpose(x, perm, s);
  array xr = reshape(xt, flat, s);
  array others = multiply(cumprod(xr, -1, false, false, s), cumprod(xr, -1, true, false, s), s);
  std::vector<int> inverse(nd);
  for (int i = 0; i < nd; ++i) inverse[perm[i]] = i;
  return transpose(reshape(others, xt.shape(), s), inverse, s);
}

/** 1 where `x` equals the (broadcast) extreme `y`, divided by how many share the output:
 * the share of the gradient each tied position receives. */
array extreme_share(const array& x, const array& y, const std::vector<int>& axes, Dtype dtype,
                    const Stream& s) {
  array mask = astype(equal(x, y, s), dtype, s);
  return divide(mask, sum(mask, axes, true, s), s);
}

}  // namespace

// ---------------------------------------------------------------- Reduce

const char* Reduce::name() const {
  switch (type_) {
    case And:
      return "All";
    case Or:
      return "Any";
    case Sum:
      return "Sum";
    case Prod:
      return "Prod";
    case Max:
      return "Max";
    case Min:
      return "Min";
  }
  return "Reduce";
}

void Reduce::print(std::ostream& os) {
  os << name() << "(axes=" << shape_str(Shape(axes_.begin(), axes_.end())) << ", " << out_dtype_
     << ")";
}

bool Reduce::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Reduce*>(&other);
  return o && o->type_ == type_ && o->axes_ == axes_ && o->out_dtype_ == out_dtype_;
}

std::vector<Shape> Reduce::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  for (int ax : axes_) shape[ax] = 1;
  return {shape};
}

std::vector<array> Reduce::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents, const std::vector<int>&) {
  const array& x = primals[0];
  const array& t = tangents[0];
  auto s = stream();
  switch (type_) {
    case Sum:
      return {detail::reduce_keepdims(t, Sum, axes_, out_dtype_, s)};
    case Prod:
      return {detail::reduce_keepdims(multiply(t, prod_of_others(x, axes_, s), s), Sum, axes_,
                                      out_dtype_, s)};
    case Max:
    case Min: {
      array y = detail::reduce_keepdims(x, type_, axes_, out_dtype_, s);
      array share = extreme_share(x, y, axes_, t.dtype(), s);
      return {sum(multiply(t, share, s), axes_, true, s)};
    }
    case And:
    case Or:
      break;
  }
  // Boolean outputs are piecewise constant: zero tangent.
  return {zeros(output_shapes(primals)[0], out_dtype_, s)};
}

std::vector<array> Reduce::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents, const std::vector<int>&,
                               const std::vector<array>& outputs) {
  const array& x = primals[0];
  auto s = stream();
  // The cotangent has the kept-dims shape, so it broadcasts over each reduction group.
  array g = detail::broadcast_like(cotangents[0], x, s);  // follows x in shapeless compile
  switch (type_) {
    case Sum:
      return {astype(g, x.dtype(), s)};
    case Prod:
      // c * conj(d prod / d x) for complex x (MLX's convention, docs/transforms.md).
      return {
          astype(multiply(g, conj_if_complex(prod_of_others(x, axes_, s), s), s), x.dtype(), s)};
    case Max:
    case Min:
      // Ties share the gradient equally.
      return {multiply(g, extreme_share(x, outputs[0], axes_, g.dtype(), s), s)};
    case And:
    case Or:
      break;
  }
  return {zeros_like(x, s)};  // boolean outputs: zero gradient
}

std::pair<std::vector<array>, std::vector<int>> Reduce::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  int b = axes[0];
  auto red = b < 0 ? axes_ : shift_axes(axes_, b);
  return {{detail::reduce_keepdims(inputs[0], type_, std::move(red), out_dtype_, stream())}, {b}};
}

// ---------------------------------------------------------------- ArgReduce

const char* ArgReduce::name() const {
  return type_ == ArgMin ? "ArgMin" : "ArgMax";
}

void ArgReduce::print(std::ostream& os) {
  os << name() << "(axis=" << axis_ << ")";
}

bool ArgReduce::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ArgReduce*>(&other);
  return o && o->type_ == type_ && o->axis_ == axis_;
}

std::vector<Shape> ArgReduce::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  shape[axis_] = 1;
  return {shape};
}

// Integer (index) output: zero derivative everywhere it exists.
std::vector<array> ArgReduce::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                  const std::vector<int>&) {
  return {zeros(output_shapes(primals)[0], uint32, stream())};
}

std::vector<array> ArgReduce::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                  const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> ArgReduce::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  int b = axes[0];
  int axis = shift_axis(axis_, b);
  Shape shape = inputs[0].shape();
  shape[axis] = 1;
  array r(std::move(shape), uint32, std::make_shared<ArgReduce>(stream(), type_, axis),
          {inputs[0]});
  return {{r}, {b}};
}

// ---------------------------------------------------------------- Scan

const char* Scan::name() const {
  switch (type_) {
    case Sum:
      return "CumSum";
    case Prod:
      return "CumProd";
    case Max:
      return "CumMax";
    case Min:
      return "CumMin";
    case LogAddExp:
      return "CumLogSumExp";
  }
  return "Scan";
}

Dtype Scan::out_dtype(ReduceType type, Dtype in) {
  return type == Sum || type == Prod ? detail::sum_dtype(in) : in;
}

void Scan::print(std::ostream& os) {
  os << name() << "(axis=" << axis_ << ", reverse=" << reverse_ << ", inclusive=" << inclusive_
     << ")";
}

bool Scan::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Scan*>(&other);
  return o && o->type_ == type_ && o->axis_ == axis_ && o->reverse_ == reverse_ &&
         o->inclusive_ == inclusive_;
}

namespace {

array scan_op(Scan::ReduceType t, const array& x, int axis, bool reverse, bool inclusive,
              const Stream& s) {
  switch (t) {
    case Scan::Sum:
      return cumsum(x, axis, reverse, inclusive, s);
    case Scan::Prod:
      return cumprod(x, axis, reverse, inclusive, s);
    case Scan::Max:
      return cummax(x, axis, reverse, inclusive, s);
    case Scan::Min:
      return cummin(x, axis, reverse, inclusive, s);
    case Scan::LogAddExp:
      return logcumsumexp(x, axis, reverse, inclusive, s);
  }
  throw std::logic_error("[Scan] Unknown scan type.");
}

// For cummax/cummin: the position along `axis` of the input element each output takes its
// value from (the latest one reaching the running extreme, NaN included), -1 for the first
// output of an exclusive scan (the identity).
array extreme_source(Scan::ReduceType t, const array& x, int axis, bool reverse, bool inclusive,
                     const Stream& s) {
  const int n = x.shape(axis);
  Shape pos_shape(x.ndim(), 1);
  pos_shape[axis] = n;
  // Positions in scan order, so that the running maximum of reached positions is the latest.
  array pos = reshape(arange(0, n, 1, int32, s), pos_shape, s);
  if (reverse) pos = subtract(array(n - 1, int32), pos, s);
  array y = scan_op(t, x, axis, reverse, true, s);
  array hit = logical_or(equal(x, y, s), isnan(x, s), s);
  array src = cummax(where(hit, pos, array(-1, int32), s), axis, reverse, true, s);
  if (!inclusive && n > 0) {
    // Output j takes what inclusive output j-1 (in scan order) took.
    Shape start(x.ndim(), 0), stop = x.shape();
    if (reverse)
      start[axis] = 1;
    else
      stop[axis] = n - 1;
    Shape edge = x.shape();
    edge[axis] = 1;
    array none = full(edge, array(-1, int32), s);
    array kept = slice(src, start, stop, s);
    src = reverse ? concatenate({kept, none}, axis, s) : concatenate({none, kept}, axis, s);
  }
  return reverse ? where(greater_equal(src, array(0, int32), s),
                         subtract(array(n - 1, int32), src, s), src, s)
                 : src;
}

// log of the positive and negative parts of v: (log max(v, 0), log max(-v, 0)).
std::pair<array, array> log_parts(const array& v, const Stream& s) {
  if (is_complex(v.dtype())) {
    throw std::invalid_argument(
        "[logcumsumexp] Derivatives for complex64 inputs are not supported.");
  }
  array zero = zeros_like(v, s);
  return {log(maximum(v, zero, s), s), log(maximum(negative(v, s), zero, s), s)};
}

}  // namespace

// cumprod's derivatives divide by x only before the first zero of each scan line; at the
// first zero they use the scan of x with that zero replaced by 1, and after it they vanish
// (every product there contains the zero). Exact for any number of zeros.
// cummax/cummin pass each output's derivative to the element it copies. logcumsumexp's
// derivatives are sums of t_i exp(x_i - y_j), computed as log-sum-exps of the positive and
// negative parts of t so that no exponential overflows.
std::vector<array> Scan::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  auto s = stream();
  const array& t = tangents[0];
  const array& x = primals[0];
  if (type_ == Sum) return {cumsum(t, axis_, reverse_, inclusive_, s)};
  if (type_ == Max || type_ == Min) {
    array src = extreme_source(type_, x, axis_, reverse_, inclusive_, s);
    array valid = greater_equal(src, array(0, int32), s);
    array taken = take_along_axis(t, maximum(src, array(0, int32), s), axis_, s);
    return {where(valid, taken, zeros_like(taken, s), s)};
  }
  if (type_ == LogAddExp) {
    array y = logcumsumexp(x, axis_, reverse_, inclusive_, s);
    auto [lp, ln] = log_parts(t, s);
    auto part = [&](const array& l) {
      return exp(subtract(logcumsumexp(add(l, x, s), axis_, reverse_, inclusive_, s), y, s), s);
    };
    array r = subtract(part(lp), part(ln), s);
    return {where(isneginf(y, s), zeros_like(r, s), r, s)};
  }
  array zero(0, x.dtype()), one(1, x.dtype());
  array is_zero = equal(x, zero, s);
  array zeros_seen = cumsum(is_zero, axis_, reverse_, true, s);
  array first_zero = logical_and(is_zero, equal(zeros_seen, array(1), s), s);
  // Outputs whose product has no zero factor: y * scan_sum(t / x).
  array zeros_in_product = cumsum(is_zero, axis_, reverse_, inclusive_, s);
  array y = cumprod(x, axis_, reverse_, inclusive_, s);
  array x_safe = where(is_zero, one, x, s);
  array no_zero = multiply(y, cumsum(divide(t, x_safe, s), axis_, reverse_, inclusive_, s), s);
  // Outputs past the first zero: only that zero's tangent survives.
  array y_skip = cumprod(where(first_zero, one, x, s), axis_, reverse_, inclusive_, s);
  array t_first = cumsum(where(first_zero, t, zeros_like(t, s), s), axis_, reverse_, inclusive_, s);
  array past_zero = multiply(t_first, y_skip, s);
  return {where(equal(zeros_in_product, array(0), s), no_zero, past_zero, s)};
}

std::vector<array> Scan::vjp(const std::vector<array>& primals,
                             const std::vector<array>& cotangents, const std::vector<int>&,
                             const std::vector<array>& outputs) {
  // The rules below are plain transposes; complex cotangents take the adjoint (MLX's
  // convention, docs/transforms.md).
  if (is_complex(cotangents[0].dtype()) && type_ != Sum) {
    return adjoint_of_transpose(
        cotangents,
        [&](const std::vector<array>& c) { return scan_transpose(primals, c, outputs); }, stream());
  }
  return scan_transpose(primals, cotangents, outputs);
}

std::vector<array> Scan::scan_transpose(const std::vector<array>& primals,
                                        const std::vector<array>& cotangents,
                                        const std::vector<array>& outputs) {
  auto s = stream();
  const array& g = cotangents[0];
  const array& x = primals[0];
  // The transpose of a scan sums the cotangents over the outputs each input reached: the
  // same scan in the other direction.
  auto scan_back = [&](const array& v) { return cumsum(v, axis_, !reverse_, inclusive_, s); };
  if (type_ == Sum) return {scan_back(g)};
  if (type_ == Max || type_ == Min) {
    array src = extreme_source(type_, x, axis_, reverse_, inclusive_, s);
    array valid = greater_equal(src, array(0, int32), s);
    array gv = where(valid, g, zeros_like(g, s), s);
    return {detail::scatter_along_axis(ScatterReduce::sum, zeros_like(x, s),
                                       maximum(src, array(0, int32), s), gv, axis_, s)};
  }
  if (type_ == LogAddExp) {
    const array& y = outputs[0];
    auto [lp, ln] = log_parts(g, s);
    // Outputs that summed nothing (-inf, the first of an exclusive scan) pass nothing back.
    array empty = isneginf(y, s);
    auto part = [&](const array& l) {
      array v = where(empty, full_like(l, array(-INFINITY, l.dtype()), s), subtract(l, y, s), s);
      return exp(add(x, logcumsumexp(v, axis_, !reverse_, inclusive_, s), s), s);
    };
    return {subtract(part(lp), part(ln), s)};
  }
  const array& y = outputs[0];
  array zero(0, x.dtype()), one(1, x.dtype());
  array is_zero = equal(x, zero, s);
  array zeros_seen = cumsum(is_zero, axis_, reverse_, true, s);
  array first_zero = logical_and(is_zero, equal(zeros_seen, array(1), s), s);
  array before_zero = equal(zeros_seen, array(0), s);
  array x_safe = where(is_zero, one, x, s);
  array grad_before = divide(scan_back(multiply(g, y, s)), x_safe, s);
  array y_skip = cumprod(where(first_zero, one, x, s), axis_, reverse_, inclusive_, s);
  array grad_first = scan_back(multiply(g, y_skip, s));
  array none = zeros_like(grad_first, s);
  return {where(before_zero, grad_before, where(first_zero, grad_first, none, s), s)};
}

std::pair<std::vector<array>, std::vector<int>> Scan::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  int axis = shift_axis(axis_, axes[0]);
  return {{scan_op(type_, inputs[0], axis, reverse_, inclusive_, stream())}, {axes[0]}};
}

// ---------------------------------------------------------------- Sort, ArgSort

bool Sort::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Sort*>(&other);
  return o && o->axis_ == axis_;
}

// sort(x) = take_along_axis(x, argsort(x)): tangents follow the same permutation, and
// cotangents go back through its inverse (a scatter to the sorted positions).
std::vector<array> Sort::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  array idx = argsort(primals[0], axis_, stream());
  return {take_along_axis(tangents[0], idx, axis_, stream())};
}

std::vector<array> Sort::vjp(const std::vector<array>& primals,
                             const std::vector<array>& cotangents, const std::vector<int>&,
                             const std::vector<array>&) {
  auto s = stream();
  array idx = argsort(primals[0], axis_, s);
  return {put_along_axis(zeros_like(cotangents[0], s), idx, cotangents[0], axis_, s)};
}

std::pair<std::vector<array>, std::vector<int>> Sort::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  return {{sort(inputs[0], shift_axis(axis_, axes[0]), stream())}, {axes[0]}};
}

bool ArgSort::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ArgSort*>(&other);
  return o && o->axis_ == axis_;
}

// Integer (index) output: zero derivative.
std::vector<array> ArgSort::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                const std::vector<int>&) {
  return {zeros(primals[0].shape(), uint32, stream())};
}

std::vector<array> ArgSort::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> ArgSort::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  return {{argsort(inputs[0], shift_axis(axis_, axes[0]), stream())}, {axes[0]}};
}

// ---------------------------------------------------------------- Softmax

namespace {
array softmax_last(const array& x, const Stream& s) {
  return array(x.shape(), x.dtype(), std::make_shared<Softmax>(s), {x});
}
}  // namespace

// d softmax = y * (t - sum(t * y)) along the axis, for tangents and cotangents alike (the
// Jacobian diag(y) - y y^T is symmetric).
std::vector<array> Softmax::jvp(const std::vector<array>& primals,
                                const std::vector<array>& tangents, const std::vector<int>&) {
  auto s = stream();
  array y = softmax_last(primals[0], s);
  const array& t = tangents[0];
  return {multiply(y, subtract(t, sum(multiply(t, y, s), -1, true, s), s), s)};
}

std::vector<array> Softmax::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                const std::vector<int>&, const std::vector<array>& outputs) {
  auto s = stream();
  const Dtype d = outputs[0].dtype();
  if (is_floating_point(d) && outputs[0].ndim() >= 1 && cotangents[0].dtype() == d) {
    return array::make_arrays({outputs[0].shape()}, {d}, fast::make_softmax_vjp(s),
                              {outputs[0], cotangents[0]});
  }
  // Complex: the adjoint of the symmetric Jacobian is its conjugate (docs/transforms.md).
  const array y = conj_if_complex(outputs[0], s);
  const array& g = cotangents[0];
  return {multiply(y, subtract(g, sum(multiply(g, y, s), -1, true, s), s), s)};
}

std::pair<std::vector<array>, std::vector<int>> Softmax::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  // With the batch axis first, the softmax axis is last again.
  int b = axes[0];
  array x = b > 0 ? moveaxis(inputs[0], b, 0, stream()) : inputs[0];
  return {{softmax_last(x, stream())}, {b < 0 ? -1 : 0}};
}

namespace fast {

// dx = y * (g - sum(y * g)) over the last axis, in the accumulation type.
std::shared_ptr<SoftmaxVJP> make_softmax_vjp(Stream s) {
  return std::make_shared<SoftmaxVJP>(s, [s](const std::vector<array>& in) {
    const Dtype out = in[0].dtype(), acc = out == float64 ? float64 : float32;
    array y = astype(in[0], acc, s), g = astype(in[1], acc, s);
    array dx = multiply(y, subtract(g, sum(multiply(g, y, s), -1, true, s), s), s);
    return std::vector<array>{astype(dx, out, s)};
  });
}

bool SoftmaxVJP::is_equivalent(const Primitive& other) const {
  return dynamic_cast<const SoftmaxVJP*>(&other) != nullptr;
}

std::vector<Shape> SoftmaxVJP::output_shapes(const std::vector<array>& inputs) {
  return {inputs[0].shape()};
}

}  // namespace fast

}  // namespace kiln
