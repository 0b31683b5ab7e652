// Reduction, scan and sort ops: axis checks, dtype rules, graph construction.
//
// sum/prod/max/min/all/any, argmax/argmin, the scans and the sorts are primitives; mean,
// var, std and logsumexp are built from them (their gradients come for free). softmax over
// the last axis is a fused primitive (one pass over memory); other axis sets are composed.
#include <algorithm>
#include <cmath>
#include <complex>
#include <memory>
#include <numeric>

#include "kiln/compile.h"
#include "kiln/ops.h"
#include "kiln/ops_complex.h"
#include "kiln/primitives_reduce.h"
#include "kiln/utils.h"

namespace kiln {

namespace detail {

Dtype sum_dtype(Dtype d) {
  switch (d.val) {
    case Dtype::Val::bool_:
    case Dtype::Val::int8:
    case Dtype::Val::int16:
      return int32;
    case Dtype::Val::uint8:
    case Dtype::Val::uint16:
      return uint32;
    default:
      return d;
  }
}

array reduce_keepdims(const array& a, Reduce::ReduceType type, std::vector<int> axes,
                      Dtype out_dtype, Stream s) {
  Shape shape = a.shape();
  for (int ax : axes) shape[ax] = 1;
  auto prim = std::make_shared<Reduce>(s, type, std::move(axes), out_dtype);
  return array(std::move(shape), out_dtype, std::move(prim), {a});
}

}  // namespace detail

namespace {

std::vector<int> all_axes(const array& a) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

/** Number of elements each output combines. */
size_t reduced_size(const array& a, const std::vector<int>& axes) {
  size_t n = 1;
  for (int ax : axes) n *= static_cast<size_t>(a.shape()[ax]);
  return n;
}

/** Drops the (size-1) reduced axes of a keepdims result unless `keepdims`. */
array finish(const array& r, const std::vector<int>& axes, bool keepdims, const Stream& s) {
  if (keepdims || axes.empty()) return r;
  Shape shape;
  for (int i = 0; i < static_cast<int>(r.ndim()); ++i) {
    if (!std::binary_search(axes.begin(), axes.end(), i)) shape.push_back(r.shape()[i]);
  }
  return reshape(r, std::move(shape), s);
}

void check_real(const array& a, const char* op) {
  if (is_complex(a.dtype())) {
    throw std::invalid_argument(
        msg("[", op, "] Arrays of dtype ", a.dtype(), " are not supported (no ordering)."));
  }
}

/** Ops without an identity (max, min, argmax, ...) cannot reduce zero elements. */
void check_nonempty(const array& a, const std::vector<int>& axes, const char* op) {
  if (!axes.empty() && reduced_size(a, axes) == 0) {
    Shape ax(axes.begin(), axes.end());
    throw std::invalid_argument(msg("[", op, "] Cannot reduce zero elements (axes ", shape_str(ax),
                                    " of shape ", shape_str(a.shape()), "): ", op,
                                    " has no identity."));
  }
}

array reduce(const array& a, const std::vector<int>& axes_in, bool keepdims,
             Reduce::ReduceType type, Dtype out_dtype, const char* op, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto axes = normalize_axes(axes_in, static_cast<int>(a.ndim()), op);
  if (type == Reduce::Max || type == Reduce::Min) {
    check_real(a, op);
    check_nonempty(a, axes, op);
  }
  // Reducing over no axes combines each element with the identity alone.
  if (axes.empty()) return astype(a, out_dtype, stream);
  return finish(detail::reduce_keepdims(a, type, axes, out_dtype, stream), axes, keepdims, stream);
}

/** float32 for integers, the input type otherwise (half types included). */
Dtype float_dtype(Dtype d) {
  return is_inexact(d) ? d : float32;
}
/** The real dtype of moments: float32 for integers and complex64, else the input's. */
Dtype real_float_dtype(Dtype d) {
  return d == complex64 || !is_inexact(d) ? float32 : d;
}
/** The type composite ops compute in: half types and integers work in float32. */
Dtype work_dtype(Dtype d) {
  return d == float64 || d == complex64 ? d : float32;
}

}  // namespace

// The all-axes and single-axis overloads of every reduction forward to the list form.
#define KILN_REDUCTION_OVERLOADS(NAME)                                    \
  array NAME(const array& a, bool keepdims, StreamOrDevice s) {           \
    return NAME(a, all_axes(a), keepdims, s);                             \
  }                                                                       \
  array NAME(const array& a, int axis, bool keepdims, StreamOrDevice s) { \
    return NAME(a, std::vector<int>{axis}, keepdims, s);                  \
  }

array sum(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  return reduce(a, axes, keepdims, Reduce::Sum, detail::sum_dtype(a.dtype()), "sum", s);
}
KILN_REDUCTION_OVERLOADS(sum)

array prod(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  return reduce(a, axes, keepdims, Reduce::Prod, detail::sum_dtype(a.dtype()), "prod", s);
}
KILN_REDUCTION_OVERLOADS(prod)

namespace {

// max / min of complex64, ordered lexicographically (real part, then imaginary; NumPy's and
// MLX's order): the extreme real part, then the extreme imaginary part among the elements
// that have it.
array complex_extreme(const array& a, const std::vector<int>& axes_in, bool keepdims, bool is_max,
                      const char* op, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto axes = normalize_axes(axes_in, static_cast<int>(a.ndim()), op);
  check_nonempty(a, axes, op);
  auto ext = [&](const array& x, bool keep) {
    return is_max ? max(x, axes, keep, stream) : min(x, axes, keep, stream);
  };
  array re = real(a, stream), im = imag(a, stream);
  array best_re = ext(re, true);
  const float fill = is_max ? -INFINITY : INFINITY;
  array im_of_best = where(equal(re, best_re, stream), im, array(fill), stream);
  array best_im = ext(im_of_best, true);
  array z = detail::complex_from_parts(best_re, best_im, stream);
  return keepdims ? z : squeeze(z, axes, stream);
}

}  // namespace

array max(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  if (is_complex(a.dtype())) return complex_extreme(a, axes, keepdims, true, "max", s);
  return reduce(a, axes, keepdims, Reduce::Max, a.dtype(), "max", s);
}
KILN_REDUCTION_OVERLOADS(max)

array min(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  if (is_complex(a.dtype())) return complex_extreme(a, axes, keepdims, false, "min", s);
  return reduce(a, axes, keepdims, Reduce::Min, a.dtype(), "min", s);
}
KILN_REDUCTION_OVERLOADS(min)

array all(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  return reduce(a, axes, keepdims, Reduce::And, bool_, "all", s);
}
KILN_REDUCTION_OVERLOADS(all)

array any(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  return reduce(a, axes, keepdims, Reduce::Or, bool_, "any", s);
}
KILN_REDUCTION_OVERLOADS(any)

array mean(const array& a, const std::vector<int>& axes_in, bool keepdims, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto axes = normalize_axes(axes_in, static_cast<int>(a.ndim()), "mean");
  // Sum straight into float32 for half and integer inputs (exact integer accumulation, no
  // overflow of a float16 running total), then divide once and round to the output type.
  Dtype acc = work_dtype(a.dtype());
  array total = axes.empty() ? astype(a, acc, stream)
                             : detail::reduce_keepdims(a, Reduce::Sum, axes, acc, stream);
  double n = static_cast<double>(reduced_size(a, axes));
  // A shapeless compile trace counts the elements of the replay's shapes.
  array count = !axes.empty() && detail::in_shapeless_trace()
                    ? detail::reduce_keepdims(ones_like(a, stream), Reduce::Sum, axes, acc, stream)
                    : array(n, acc);
  array m = divide(total, count, stream);
  return finish(astype(m, float_dtype(a.dtype()), stream), axes, keepdims, stream);
}
KILN_REDUCTION_OVERLOADS(mean)

array logsumexp(const array& a, const std::vector<int>& axes_in, bool keepdims, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto axes = normalize_axes(axes_in, static_cast<int>(a.ndim()), "logsumexp");
  Dtype work = work_dtype(a.dtype());
  array x = astype(a, work, stream);
  array r = x;
  if (!axes.empty() && reduced_size(a, axes) == 0) {
    r = log(sum(exp(x, stream), axes, true, stream), stream);  // log(0) = -inf, as NumPy
  } else if (!axes.empty() && is_complex(work)) {
    // MLX's complex form: shift by the lexicographic maximum m (both parts), so the
    // imaginary part is Im(m) + Arg(sum), not folded into (-pi, pi]; an infinite m is the
    // result itself.
    array m = stop_gradient(max(x, axes, true, stream), stream);
    r = add(log(sum(exp(subtract(x, m, stream), stream), axes, true, stream), stream), m, stream);
    r = where(isinf(m, stream), m, r, stream);
  } else if (!axes.empty()) {
    // Shift by the maximum so exp cannot overflow. An infinite maximum would turn x - m
    // into NaN; shifting by zero then gives the right +-inf (or NaN) instead.
    array m = max(x, axes, true, stream);
    m = stop_gradient(where(isinf(m, stream), array(0.0, work), m, stream), stream);
    r = add(log(sum(exp(subtract(x, m, stream), stream), axes, true, stream), stream), m, stream);
  }
  return finish(astype(r, float_dtype(a.dtype()), stream), axes, keepdims, stream);
}
KILN_REDUCTION_OVERLOADS(logsumexp)

#undef KILN_REDUCTION_OVERLOADS

namespace {

/** Variance in the work dtype with the reduced axes kept (two passes: mean, then squared
 * deviations, which is accurate where E[x^2] - E[x]^2 cancels). */
array var_keepdims(const array& a, const std::vector<int>& axes, int ddof, const char* op,
                   const Stream& s) {
  Dtype work = work_dtype(a.dtype());
  array x = astype(a, work, s);
  array d = subtract(x, mean(x, axes, true, s), s);
  // Complex deviations count by their squared magnitude: the variance is real (NumPy).
  array sq =
      is_complex(work) ? add(square(real(d, s), s), square(imag(d, s), s), s) : multiply(d, d, s);
  array ss = sum(sq, axes, true, s);
  double n = static_cast<double>(reduced_size(a, axes)) - ddof;
  if (!axes.empty() && detail::in_shapeless_trace()) {
    // A shapeless compile trace counts the elements of the replay's shapes.
    Dtype rd = sq.dtype();
    array count = detail::reduce_keepdims(ones_like(sq, s), Reduce::Sum, axes, rd, s);
    return divide(ss, maximum(subtract(count, array(ddof, rd), s), array(0, rd), s), s);
  }
  return divide(ss, array(std::max(n, 0.0), sq.dtype()), s);
}

}  // namespace

array var(const array& a, const std::vector<int>& axes_in, bool keepdims, int ddof,
          StreamOrDevice s) {
  auto stream = to_stream(s);
  auto axes = normalize_axes(axes_in, static_cast<int>(a.ndim()), "var");
  array v = var_keepdims(a, axes, ddof, "var", stream);
  return finish(astype(v, real_float_dtype(a.dtype()), stream), axes, keepdims, stream);
}
array var(const array& a, bool keepdims, int ddof, StreamOrDevice s) {
  return var(a, all_axes(a), keepdims, ddof, s);
}
array var(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) {
  return var(a, std::vector<int>{axis}, keepdims, ddof, s);
}

array std(const array& a, const std::vector<int>& axes_in, bool keepdims, int ddof,
          StreamOrDevice s) {
  auto stream = to_stream(s);
  auto axes = normalize_axes(axes_in, static_cast<int>(a.ndim()), "std");
  array v = sqrt(var_keepdims(a, axes, ddof, "std", stream), stream);
  return finish(astype(v, real_float_dtype(a.dtype()), stream), axes, keepdims, stream);
}
array std(const array& a, bool keepdims, int ddof, StreamOrDevice s) {
  return std(a, all_axes(a), keepdims, ddof, s);
}
array std(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) {
  return std(a, std::vector<int>{axis}, keepdims, ddof, s);
}

// ---------------------------------------------------------------- argmax, argmin

namespace {

array arg_reduce(const array& a, int axis_in, bool keepdims, ArgReduce::ReduceType type,
                 const char* op, StreamOrDevice s) {
  auto stream = to_stream(s);
  check_real(a, op);
  int axis = normalize_axis(axis_in, static_cast<int>(a.ndim()), op);
  if (a.shape()[axis] == 0) {
    throw std::invalid_argument(msg("[", op, "] Cannot take the ", op, " of an empty axis: axis ",
                                    axis_in, " of shape ", shape_str(a.shape()), "."));
  }
  Shape shape = a.shape();
  shape[axis] = 1;
  array r(std::move(shape), uint32, std::make_shared<ArgReduce>(stream, type, axis), {a});
  return finish(r, {axis}, keepdims, stream);
}

/** The flattened form: index into the row-major flattening of `a`. */
array arg_reduce_flat(const array& a, bool keepdims, ArgReduce::ReduceType type, const char* op,
                      StreamOrDevice s) {
  auto stream = to_stream(s);
  if (a.size() == 0) {
    throw std::invalid_argument(msg("[", op, "] Cannot take the ", op,
                                    " of an empty array of shape ", shape_str(a.shape()), "."));
  }
  array r = arg_reduce(reshape(a, {-1}, stream), 0, false, type, op, stream);
  return keepdims ? reshape(r, Shape(a.ndim(), 1), stream) : r;
}

}  // namespace

array argmax(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return arg_reduce(a, axis, keepdims, ArgReduce::ArgMax, "argmax", s);
}
array argmax(const array& a, bool keepdims, StreamOrDevice s) {
  return arg_reduce_flat(a, keepdims, ArgReduce::ArgMax, "argmax", s);
}
array argmin(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return arg_reduce(a, axis, keepdims, ArgReduce::ArgMin, "argmin", s);
}
array argmin(const array& a, bool keepdims, StreamOrDevice s) {
  return arg_reduce_flat(a, keepdims, ArgReduce::ArgMin, "argmin", s);
}

// ---------------------------------------------------------------- softmax

array softmax(const array& a, const std::vector<int>& axes_in, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto axes = normalize_axes(axes_in, static_cast<int>(a.ndim()), "softmax");
  Dtype out = float_dtype(a.dtype());
  if (a.size() == 0) return astype(a, out, stream);
  // complex64 is composed (as in MLX), shifted by the lexicographic maximum: the fused
  // kernels are real-only.
  if (!is_complex(out) && axes.size() == 1 && axes[0] == static_cast<int>(a.ndim()) - 1) {
    array x = astype(a, out, stream);
    return array(x.shape(), out, std::make_shared<Softmax>(stream), {x});
  }
  // Half types work in float32 so the normalizing sum is not rounded before the divide.
  array x = astype(a, work_dtype(a.dtype()), stream);
  array m = stop_gradient(max(x, axes, true, stream), stream);
  array e = exp(subtract(x, m, stream), stream);
  array y = divide(e, sum(e, axes, true, stream), stream);
  return astype(y, out, stream);
}

array softmax(const array& a, int axis, StreamOrDevice s) {
  return softmax(a, std::vector<int>{axis}, s);
}

// ---------------------------------------------------------------- cumsum, cumprod

namespace {

array scan(const array& a, int axis_in, bool reverse, bool inclusive, Scan::ReduceType type,
           const char* op, StreamOrDevice s) {
  auto stream = to_stream(s);
  int axis = normalize_axis(axis_in, static_cast<int>(a.ndim()), op);
  auto prim = std::make_shared<Scan>(stream, type, axis, reverse, inclusive);
  return array(a.shape(), Scan::out_dtype(type, a.dtype()), std::move(prim), {a});
}

}  // namespace

array cumsum(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, axis, reverse, inclusive, Scan::Sum, "cumsum", s);
}

array cumprod(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, axis, reverse, inclusive, Scan::Prod, "cumprod", s);
}

// complex64 orders lexicographically (real part, then imaginary), as in NumPy and MLX.
array cummax(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, axis, reverse, inclusive, Scan::Max, "cummax", s);
}

array cummin(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, axis, reverse, inclusive, Scan::Min, "cummin", s);
}

// Integers and bool are computed in float32, as MLX does.
array logcumsumexp(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  const Dtype d = is_inexact(a.dtype()) ? a.dtype() : float32;
  return scan(astype(a, d, s), axis, reverse, inclusive, Scan::LogAddExp, "logcumsumexp", s);
}

// ---------------------------------------------------------------- sort, argsort

namespace {

// Complex values order by real part, then imaginary part (NumPy, MLX): two stable sorts, the
// minor key first.
array complex_argsort(const array& a, int axis, const Stream& s) {
  array by_imag = argsort(imag(a, s), axis, s);
  array real_then = take_along_axis(real(a, s), by_imag, axis, s);
  return take_along_axis(by_imag, argsort(real_then, axis, s), axis, s);
}

}  // namespace

array sort(const array& a, int axis_in, StreamOrDevice s) {
  auto stream = to_stream(s);
  int axis = normalize_axis(axis_in, static_cast<int>(a.ndim()), "sort");
  if (is_complex(a.dtype()))
    return take_along_axis(a, complex_argsort(a, axis, stream), axis, stream);
  return array(a.shape(), a.dtype(), std::make_shared<Sort>(stream, axis), {a});
}

array sort(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  return sort(reshape(a, {-1}, stream), 0, stream);
}

array argsort(const array& a, int axis_in, StreamOrDevice s) {
  auto stream = to_stream(s);
  int axis = normalize_axis(axis_in, static_cast<int>(a.ndim()), "argsort");
  if (is_complex(a.dtype())) return complex_argsort(a, axis, stream);
  return array(a.shape(), uint32, std::make_shared<ArgSort>(stream, axis), {a});
}

array argsort(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  return argsort(reshape(a, {-1}, stream), 0, stream);
}

}  // namespace kiln
