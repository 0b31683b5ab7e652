// Creation ops: ranges, constant fills, identity matrices and triangular masks.
#include <cmath>
#include <limits>
#include <memory>

#include "kiln/compile.h"
#include "kiln/ops.h"
#include "kiln/primitives_compile.h"
#include "kiln/primitives_creation.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

void check_shape(const Shape& shape, const char* op) {
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument(
          msg("[", op, "] Negative dimension ", d, " in shape ", shape_str(shape), "."));
    }
  }
}

// vals broadcast to shape and converted to dtype, in a buffer of its own.
array fill(const char* op, const Shape& shape, const array& vals, Dtype dtype, StreamOrDevice s) {
  check_shape(shape, op);
  bool ok = vals.ndim() <= shape.size();
  for (size_t i = 0; ok && i < vals.ndim(); ++i) {
    int dv = vals.shape()[vals.ndim() - 1 - i];
    ok = dv == 1 || dv == shape[shape.size() - 1 - i];
  }
  if (!ok) {
    throw std::invalid_argument(msg("[", op, "] Cannot broadcast vals of shape ",
                                    shape_str(vals.shape()), " to shape ", shape_str(shape), "."));
  }
  auto stream = to_stream(s);
  return copy(broadcast_to(astype(vals, dtype, stream), shape, stream), stream);
}

// The integral values arange produces (first and last, NumPy's rule) must fit `dtype`.
// Whether the range's values fit in `dtype` (an integer type).
bool integer_range_fits(double start, double step, int size, Dtype dtype) {
  double lo = 0, hi = 0;  // hi is exclusive
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      lo = static_cast<double>(std::numeric_limits<T>::min());
      hi = std::ldexp(1.0, std::numeric_limits<T>::digits);  // max + 1, exact in double
    }
  });
  double first = std::trunc(start);
  double last = size > 1 ? first + (size - 1) * (std::trunc(start + step) - first) : first;
  return std::min(first, last) >= lo && std::max(first, last) < hi;
}

void check_integer_range(double start, double step, int size, Dtype dtype) {
  if (!integer_range_fits(start, step, size, dtype)) {
    double first = std::trunc(start);
    throw std::invalid_argument(msg("[arange] Values from ", first, " by ", step,
                                    " cannot be represented in ", dtype, "."));
  }
}

}  // namespace

array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s) {
  if (dtype == bool_) {
    throw std::invalid_argument("[arange] Cannot make a range of dtype bool.");
  }
  if (!std::isfinite(start) || !std::isfinite(stop) || std::isnan(step)) {
    throw std::invalid_argument(
        msg("[arange] start and stop must be finite and step a number; "
            "got start=",
            start, ", stop=", stop, ", step=", step, "."));
  }
  if (step == 0) {
    throw std::invalid_argument(
        msg("[arange] step must be non-zero; got start=", start, ", stop=", stop, ", step=0."));
  }
  if (std::isinf(step)) {
    // An infinite step reaches past stop at once: the start alone when it points toward stop
    // (NumPy's and MLX's rule), else nothing.
    int size = (stop - start) * step > 0 ? 1 : 0;
    return array({size}, dtype, std::make_shared<Arange>(to_stream(s), start, 0.0, size, dtype),
                 {});
  }
  // NumPy's length rule; (stop - start) may overflow to inf, which fails the bound too. A
  // quotient that underflows to zero still has one element when it points forward (NumPy).
  double span = stop - start, ratio = span / step;
  double len = ratio == 0 && span != 0 ? (std::signbit(ratio) ? 0 : 1) : std::ceil(ratio);
  if (!(len <= std::numeric_limits<int32_t>::max())) {
    throw std::invalid_argument(msg("[arange] The range from ", start, " to ", stop, " by ", step,
                                    " has ", len, " elements, more than the maximum ",
                                    std::numeric_limits<int32_t>::max(), "."));
  }
  int size = len > 0 ? static_cast<int>(len) : 0;
  if (is_integral(dtype) && size > 0 && dtype != int64 && dtype != uint64 &&
      !integer_range_fits(start, step, size, dtype)) {
    // An explicit narrower integer dtype wraps the values, as MLX does.
    check_integer_range(start, step, size, int64);
    return astype(arange(start, stop, step, int64, s), dtype, s);
  }
  if (is_integral(dtype) && size > 0) check_integer_range(start, step, size, dtype);
  return array({size}, dtype, std::make_shared<Arange>(to_stream(s), start, step, size, dtype), {});
}

array arange(double start, double stop, double step, StreamOrDevice s) {
  return arange(start, stop, step, float32, s);
}
array arange(double start, double stop, Dtype dtype, StreamOrDevice s) {
  return arange(start, stop, 1.0, dtype, s);
}
array arange(double start, double stop, StreamOrDevice s) {
  return arange(start, stop, 1.0, float32, s);
}
array arange(double stop, Dtype dtype, StreamOrDevice s) {
  return arange(0.0, stop, 1.0, dtype, s);
}
array arange(double stop, StreamOrDevice s) {
  return arange(0.0, stop, 1.0, float32, s);
}

array arange(int start, int stop, int step, StreamOrDevice s) {
  if (step == 0) {
    throw std::invalid_argument(
        msg("[arange] step must be non-zero; got start=", start, ", stop=", stop, ", step=0."));
  }
  // Exact integer ceil((stop - start) / step); every value lies in [start, stop), so int32.
  int64_t span = static_cast<int64_t>(stop) - start;
  int64_t size = 0;
  if (step > 0 && span > 0) size = (span + step - 1) / step;
  if (step < 0 && span < 0) size = (-span - step - 1) / -static_cast<int64_t>(step);
  int n = static_cast<int>(size);
  return array({n}, int32, std::make_shared<Arange>(to_stream(s), start, step, n, int32), {});
}
array arange(int start, int stop, StreamOrDevice s) {
  return arange(start, stop, 1, s);
}
array arange(int stop, StreamOrDevice s) {
  return arange(0, stop, 1, s);
}

array linspace(double start, double stop, int num, Dtype dtype, StreamOrDevice s) {
  if (num < 0) {
    throw std::invalid_argument(msg("[linspace] num must be non-negative; got ", num, "."));
  }
  return array({num}, dtype, std::make_shared<Linspace>(to_stream(s), start, stop, num, dtype), {});
}

array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s) {
  return fill("full", shape, vals, dtype, s);
}
array full(Shape shape, array vals, StreamOrDevice s) {
  Dtype dtype = vals.dtype();
  return fill("full", shape, vals, dtype, s);
}
array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s) {
  return fill("zeros", shape, array(0, dtype), dtype, s);
}
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s) {
  return fill("ones", shape, array(1, dtype), dtype, s);
}
namespace {
// In a shapeless compile trace, the fill follows a's shape on replays (BroadcastLike).
array fill_like(const char* op, const array& a, const array& vals, StreamOrDevice s) {
  array out = fill(op, a.shape(), vals, a.dtype(), s);
  if (!detail::in_shapeless_trace()) return out;
  auto stream = to_stream(s);
  return copy(array(a.shape(), a.dtype(), std::make_shared<BroadcastLike>(stream),
                    {astype(vals, a.dtype(), stream), stop_gradient(a, stream)}),
              stream);
}
}  // namespace

array zeros_like(const array& a, StreamOrDevice s) {
  return fill_like("zeros_like", a, array(0, a.dtype()), s);
}
array ones_like(const array& a, StreamOrDevice s) {
  return fill_like("ones_like", a, array(1, a.dtype()), s);
}
array full_like(const array& a, array vals, StreamOrDevice s) {
  return fill_like("full_like", a, vals, s);
}

array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s) {
  if (n < 0 || m < 0) {
    throw std::invalid_argument(msg(
        "[eye] The number of rows and columns must be non-negative; got n=", n, ", m=", m, "."));
  }
  return array({n, m}, dtype, std::make_shared<Eye>(to_stream(s), n, m, k, dtype), {});
}

array identity(int n, Dtype dtype, StreamOrDevice s) {
  if (n < 0) {
    throw std::invalid_argument(msg("[identity] n must be non-negative; got ", n, "."));
  }
  return eye(n, n, 0, dtype, s);
}

namespace {
array triangular(const char* op, array x, int k, bool upper, StreamOrDevice s) {
  if (x.ndim() < 2) {
    throw std::invalid_argument(msg("[", op,
                                    "] The input must have at least 2 dimensions; got shape ",
                                    shape_str(x.shape()), "."));
  }
  auto shape = x.shape();
  auto dtype = x.dtype();
  return array(std::move(shape), dtype, std::make_shared<Triangular>(to_stream(s), k, upper),
               {std::move(x)});
}
}  // namespace

array tril(array x, int k, StreamOrDevice s) {
  return triangular("tril", std::move(x), k, false, s);
}
array triu(array x, int k, StreamOrDevice s) {
  return triangular("triu", std::move(x), k, true, s);
}

}  // namespace kiln
