// NumPy-style ops that MLX has, built from the primitives of the other families: element
// helpers, flips and rolls, diagonals, grids, windows, contractions and bit views.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <numeric>

#include "kiln/ops.h"
#include "kiln/primitives_layout.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// Integers and bool compute in float32, as MLX's transcendental ops do.
Dtype inexact_of(Dtype d) {
  return is_inexact(d) ? d : float32;
}

void require_ndim(const array& a, size_t n, const char* op) {
  if (a.ndim() < n) {
    throw std::invalid_argument(msg("[", op, "] Needs an array with at least ", n,
                                    " dimensions; got shape ", shape_str(a.shape()), "."));
  }
}

// Whole-axis slice bounds of `a` with `axis` restricted to [b, e).
array take_range(const array& a, int axis, int b, int e, const Stream& s) {
  Shape start(a.ndim(), 0), stop = a.shape();
  start[axis] = b;
  stop[axis] = e;
  return slice(a, std::move(start), std::move(stop), s);
}

}  // namespace

// ---------------------------------------------------------------- elementwise helpers

array degrees(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  Dtype d = inexact_of(a.dtype());
  return multiply(astype(a, d, stream), array(180.0 / std::numbers::pi, d), stream);
}

array radians(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  Dtype d = inexact_of(a.dtype());
  return multiply(astype(a, d, stream), array(std::numbers::pi / 180.0, d), stream);
}

array logical_xor(const array& a, const array& b, StreamOrDevice s) {
  auto stream = to_stream(s);
  return not_equal(astype(a, bool_, stream), astype(b, bool_, stream), stream);
}

std::vector<array> divmod(const array& a, const array& b, StreamOrDevice s) {
  auto stream = to_stream(s);
  // As MLX's DivMod, both outputs are piecewise constant for the transformations (the
  // remainder's tangent is zero too), so MLX programs get the same gradients.
  return {floor_divide(a, b, stream), stop_gradient(remainder(a, b, stream), stream)};
}

array nan_to_num(const array& a, float nan, std::optional<float> posinf,
                 std::optional<float> neginf, StreamOrDevice s) {
  auto stream = to_stream(s);
  const Dtype d = a.dtype();
  if (is_complex(d)) {
    throw std::invalid_argument("[nan_to_num] Complex inputs are not supported.");
  }
  if (!is_floating_point(d)) return a;
  // The dtype's largest finite values, as NumPy's defaults.
  double big = d == float16    ? 65504.0
               : d == bfloat16 ? 3.3895313892515355e38
               : d == float32  ? std::numeric_limits<float>::max()
                               : std::numeric_limits<double>::max();
  array hi(posinf ? static_cast<double>(*posinf) : big, d);
  array lo(neginf ? static_cast<double>(*neginf) : -big, d);
  array r = where(isnan(a, stream), array(static_cast<double>(nan), d), a, stream);
  r = where(isposinf(a, stream), hi, r, stream);
  return where(isneginf(a, stream), lo, r, stream);
}

// ---------------------------------------------------------------- flips, rolls, reshapes

array flip(const array& a, const std::vector<int>& axes_in, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  std::vector<int> axes = axes_in;
  if (axes.empty()) {
    axes.resize(nd);
    std::iota(axes.begin(), axes.end(), 0);
  }
  axes = normalize_axes(axes, nd, "flip");
  if (axes.empty()) return a;
  Shape start(nd, 0), stop = a.shape(), strides(nd, 1);
  for (int ax : axes) {
    start[ax] = -1;
    stop[ax] = -a.shape(ax) - 1;
    strides[ax] = -1;
  }
  return slice(a, std::move(start), std::move(stop), std::move(strides), s);
}

array flip(const array& a, StreamOrDevice s) {
  return flip(a, std::vector<int>{}, s);
}

array roll(const array& a, const Shape& shift, const std::vector<int>& axes_in, StreamOrDevice s) {
  auto stream = to_stream(s);
  // Shifts and axes broadcast against each other, as NumPy's (an axis may repeat).
  const size_t count = std::max(shift.size(), axes_in.size());
  if ((shift.size() != count && shift.size() != 1) ||
      (axes_in.size() != count && axes_in.size() != 1)) {
    throw std::invalid_argument(msg("[roll] Got ", shift.size(), " shifts for ", axes_in.size(),
                                    " axes; they must match or one must be a single value."));
  }
  const int nd = static_cast<int>(a.ndim());
  array out = a;
  for (size_t i = 0; i < count && !axes_in.empty(); ++i) {
    int ax = normalize_axis(axes_in[axes_in.size() == 1 ? 0 : i], nd, "roll");
    int n = a.shape(ax);
    if (n == 0) continue;
    int64_t k = shift.size() == 1 ? shift[0] : shift[i];
    k = ((k % n) + n) % n;
    if (k == 0) continue;
    // The last k elements come first.
    out = concatenate({take_range(out, ax, n - static_cast<int>(k), n, stream),
                       take_range(out, ax, 0, n - static_cast<int>(k), stream)},
                      ax, stream);
  }
  return out;
}

array roll(const array& a, int shift, StreamOrDevice s) {
  auto stream = to_stream(s);
  array flat = reshape(a, {-1}, stream);
  return reshape(roll(flat, Shape{shift}, {0}, stream), a.shape(), stream);
}

array atleast_1d(const array& a, StreamOrDevice s) {
  return a.ndim() == 0 ? reshape(a, {1}, s) : a;
}

array atleast_2d(const array& a, StreamOrDevice s) {
  if (a.ndim() == 0) return reshape(a, {1, 1}, s);
  if (a.ndim() == 1) return expand_dims(a, 0, s);
  return a;
}

array atleast_3d(const array& a, StreamOrDevice s) {
  if (a.ndim() == 0) return reshape(a, {1, 1, 1}, s);
  if (a.ndim() == 1) return reshape(a, {1, a.shape(0), 1}, s);
  if (a.ndim() == 2) return expand_dims(a, 2, s);
  return a;
}

array unflatten(const array& a, int axis_in, Shape shape, StreamOrDevice s) {
  if (shape.empty()) {
    throw std::invalid_argument("[unflatten] The new shape must have at least one dimension.");
  }
  const int nd = static_cast<int>(a.ndim());
  if (nd == 0) {
    throw std::invalid_argument("[unflatten] Cannot unflatten a 0-dimensional array.");
  }
  int axis = normalize_axis(axis_in, nd, "unflatten");
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw std::invalid_argument(msg("[unflatten] Invalid shape ", shape_str(shape),
                                      ": at most one -1 and no other "
                                      "negative sizes."));
    } else {
      known *= shape[i];
    }
  }
  const int n = a.shape(axis);
  if (infer >= 0) {
    if (known == 0 || n % known != 0) {
      throw std::invalid_argument(msg("[unflatten] Cannot infer the -1 of ", shape_str(shape),
                                      " for an axis of size ", n, "."));
    }
    shape[infer] = static_cast<int32_t>(n / known);
  } else if (known != n) {
    throw std::invalid_argument(msg("[unflatten] Shape ", shape_str(shape),
                                    " does not match the size ", n, " of axis ", axis, "."));
  }
  Shape out(a.shape().begin(), a.shape().begin() + axis);
  out.insert(out.end(), shape.begin(), shape.end());
  out.insert(out.end(), a.shape().begin() + axis + 1, a.shape().end());
  return reshape(a, std::move(out), s);
}

std::vector<array> unstack(const array& a, int axis_in, StreamOrDevice s) {
  auto stream = to_stream(s);
  if (a.ndim() == 0) {
    throw std::invalid_argument("[unstack] Cannot unstack a 0-dimensional array.");
  }
  int axis = normalize_axis(axis_in, static_cast<int>(a.ndim()), "unstack");
  std::vector<array> out;
  for (int i = 0; i < a.shape(axis); ++i) {
    out.push_back(squeeze(take_range(a, axis, i, i + 1, stream), axis, stream));
  }
  return out;
}

array matrix_transpose(const array& a, StreamOrDevice s) {
  require_ndim(a, 2, "matrix_transpose");
  return swapaxes(a, -1, -2, s);
}

array view(const array& a, Dtype dtype, StreamOrDevice s) {
  auto stream = to_stream(s);
  if (a.dtype() == dtype) return a;
  const int64_t in_size = a.itemsize(), out_size = dtype.size;
  Shape shape = a.shape();
  if (in_size != out_size) {
    if (shape.empty()) {
      throw std::invalid_argument(
          msg("[view] Changing the type of a scalar is only allowed for types with the same "
              "size; got ",
              a.dtype(), " to ", dtype, "."));
    }
    int64_t bytes = int64_t{shape.back()} * in_size;
    if (bytes % out_size != 0) {
      throw std::invalid_argument(
          msg("[view] When viewing as a larger dtype, the size in bytes of the last axis must "
              "be a multiple of the requested type size; got a last axis of ",
              bytes, " bytes (", a.dtype(), ") for ", dtype, "."));
    }
    shape.back() = static_cast<int32_t>(bytes / out_size);
  }
  return array(std::move(shape), dtype, std::make_shared<View>(stream, dtype),
               {contiguous(a, false, stream)});
}

std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse,
                            const std::string& indexing, StreamOrDevice s) {
  auto stream = to_stream(s);
  if (indexing != "xy" && indexing != "ij") {
    throw std::invalid_argument(
        msg("[meshgrid] indexing must be \"xy\" or \"ij\"; got \"", indexing, "\"."));
  }
  const size_t n = arrays.size();
  // Cartesian indexing swaps the first two output axes.
  auto position = [&](size_t i) -> size_t {
    if (indexing == "xy" && n >= 2 && i < 2) return 1 - i;
    return i;
  };
  Shape full_shape(n, 1);
  std::vector<array> out;
  for (size_t i = 0; i < n; ++i) {
    array flat = reshape(arrays[i], {-1}, stream);
    Shape shape(n, 1);
    shape[position(i)] = flat.shape(0);
    full_shape[position(i)] = flat.shape(0);
    out.push_back(reshape(flat, shape, stream));
  }
  if (!sparse) {
    for (auto& x : out) x = broadcast_to(x, full_shape, stream);
  }
  return out;
}

// ---------------------------------------------------------------- diagonals

array diagonal(const array& a, int offset, int axis1_in, int axis2_in, StreamOrDevice s) {
  auto stream = to_stream(s);
  require_ndim(a, 2, "diagonal");
  const int nd = static_cast<int>(a.ndim());
  int axis1 = normalize_axis(axis1_in, nd, "diagonal");
  int axis2 = normalize_axis(axis2_in, nd, "diagonal");
  if (axis1 == axis2) {
    throw std::invalid_argument(
        msg("[diagonal] axis1 and axis2 must differ; both are ", axis1, "."));
  }
  // The two axes last, so each (n1, n2) plane is a row-major block.
  std::vector<int> perm;
  for (int i = 0; i < nd; ++i)
    if (i != axis1 && i != axis2) perm.push_back(i);
  perm.push_back(axis1);
  perm.push_back(axis2);
  array t = transpose(a, perm, stream);
  const int64_t n1 = a.shape(axis1), n2 = a.shape(axis2);
  const int64_t len =
      std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
  Shape shape(t.shape().begin(), t.shape().end() - 2);
  shape.push_back(static_cast<int32_t>(len));
  Strides strides(shape.size());
  int64_t stride = n1 * n2;
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape[i];
  }
  strides.back() = n2 + 1;
  const int64_t start = len == 0 ? 0 : (offset >= 0 ? offset : -int64_t{offset} * n2);
  return as_strided(t, std::move(shape), std::move(strides), start, stream);
}

array diag(const array& a, int k, StreamOrDevice s) {
  auto stream = to_stream(s);
  if (a.ndim() == 2) return diagonal(a, k, 0, 1, stream);
  if (a.ndim() != 1) {
    throw std::invalid_argument(
        msg("[diag] Input must be 1- or 2-dimensional; got shape ", shape_str(a.shape()), "."));
  }
  const int len = a.shape(0), n = len + std::abs(k);
  // Row i holds a[i] at column i + k (k >= 0); column j holds a[j] at row j - k (k < 0).
  array padded = pad(a, {{0, std::abs(k)}}, array(0, a.dtype()), stream);
  array values = k >= 0 ? reshape(padded, {n, 1}, stream) : reshape(padded, {1, n}, stream);
  array mask = astype(eye(n, n, k, bool_, stream), bool_, stream);
  return where(mask, values, zeros({n, n}, a.dtype(), stream), stream);
}

array trace(const array& a, int offset, int axis1, int axis2, std::optional<Dtype> dtype,
            StreamOrDevice s) {
  auto stream = to_stream(s);
  array d = diagonal(a, offset, axis1, axis2, stream);
  if (dtype) d = astype(d, *dtype, stream);
  return sum(d, -1, false, stream);
}

array diff(const array& a, int n, int axis_in, StreamOrDevice s) {
  auto stream = to_stream(s);
  if (n < 0) throw std::invalid_argument(msg("[diff] Order n must be non-negative; got ", n, "."));
  if (n == 0) return a;
  require_ndim(a, 1, "diff");
  int axis = normalize_axis(axis_in, static_cast<int>(a.ndim()), "diff");
  array out = a;
  for (int i = 0; i < n && out.shape(axis) > 0; ++i) {
    const int len = out.shape(axis);
    array hi = take_range(out, axis, 1, len, stream),
          lo = take_range(out, axis, 0, len - 1, stream);
    out = out.dtype() == bool_ ? not_equal(hi, lo, stream) : subtract(hi, lo, stream);
  }
  if (n > a.shape(axis)) {
    Shape shape = a.shape();
    shape[axis] = 0;
    return zeros(shape, out.dtype(), stream);
  }
  return out;
}

// ---------------------------------------------------------------- run-time slices and padding

namespace {

// The start along each of `axes`, clamped so that a block of `sizes` fits.
std::vector<array> clamped_starts(const array& a, const array& start, const std::vector<int>& axes,
                                  const Shape& sizes, const char* op, const Stream& s) {
  if (!is_integral(start.dtype()) || start.dtype() == bool_) {
    throw std::invalid_argument(
        msg("[", op, "] start_indices must be integers; got ", start.dtype(), "."));
  }
  if (static_cast<size_t>(start.size()) != axes.size()) {
    throw std::invalid_argument(
        msg("[", op, "] Got ", start.size(), " start indices for ", axes.size(), " axes."));
  }
  array flat = astype(reshape(start, {-1}, s), int32, s);
  std::vector<array> out;
  for (size_t i = 0; i < axes.size(); ++i) {
    int ax = axes[i];
    int hi = std::max(0, a.shape(ax) - sizes[ax]);
    out.push_back(clip(take(flat, static_cast<int>(i), 0, s), array(0), array(hi), s));
  }
  return out;
}

std::vector<int> normalized(const std::vector<int>& axes, int nd, const char* op) {
  std::vector<int> out;
  for (int ax : axes) out.push_back(normalize_axis(ax, nd, op));
  return out;
}

}  // namespace

array dynamic_slice(const array& a, const array& start, const std::vector<int>& axes_in,
                    const Shape& slice_size, StreamOrDevice sd) {
  auto s = to_stream(sd);
  const char* op = "slice";
  const int nd = static_cast<int>(a.ndim());
  if (slice_size.size() != a.ndim()) {
    throw std::invalid_argument(msg("[slice] slice_size ", shape_str(slice_size),
                                    " must give one size per axis of an array of shape ",
                                    shape_str(a.shape()), "."));
  }
  for (int i = 0; i < nd; ++i) {
    if (slice_size[i] < 0 || slice_size[i] > a.shape(i)) {
      throw std::invalid_argument(msg("[slice] slice_size ", shape_str(slice_size),
                                      " does not fit in an array of shape ", shape_str(a.shape()),
                                      "."));
    }
  }
  std::vector<int> axes = normalized(axes_in, nd, op);
  if (axes.empty()) return slice(a, Shape(nd, 0), slice_size, s);
  std::vector<array> starts = clamped_starts(a, start, axes, slice_size, op, s);
  return gather(a, starts, axes, slice_size, s);
}

array dynamic_slice_update(const array& src, const array& update, const array& start,
                           const std::vector<int>& axes_in, StreamOrDevice sd) {
  auto s = to_stream(sd);
  const char* op = "slice_update";
  const int nd = static_cast<int>(src.ndim());
  if (update.ndim() > src.ndim()) {
    throw std::invalid_argument(msg("[slice_update] An update of shape ", shape_str(update.shape()),
                                    " has more dimensions than the array ", shape_str(src.shape()),
                                    "."));
  }
  Shape size(nd - update.ndim(), 1);
  size.insert(size.end(), update.shape().begin(), update.shape().end());
  for (int i = 0; i < nd; ++i) {
    if (size[i] > src.shape(i)) {
      throw std::invalid_argument(
          msg("[slice_update] An update of shape ", shape_str(update.shape()),
              " does not fit in an array of shape ", shape_str(src.shape()), "."));
    }
  }
  std::vector<int> axes = normalized(axes_in, nd, op);
  array upd = reshape(astype(update, src.dtype(), s), size, s);
  if (axes.empty()) return slice_update(src, upd, Shape(nd, 0), size, s);
  std::vector<array> starts = clamped_starts(src, start, axes, size, op, s);
  return scatter(src, starts, upd, axes, s);
}

array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width,
          const std::string& mode, const array& pad_value, StreamOrDevice sd) {
  if (mode == "constant") return pad(a, pad_width, pad_value, sd);
  if (mode != "edge" && mode != "reflect" && mode != "symmetric") {
    throw std::invalid_argument(
        msg("[pad] Unknown mode '", mode, "'; expected constant, edge, reflect or symmetric."));
  }
  auto s = to_stream(sd);
  const int nd = static_cast<int>(a.ndim());
  if (pad_width.size() != a.ndim() && pad_width.size() != 1) {
    throw std::invalid_argument(msg("[pad] Got ", pad_width.size(),
                                    " (before, after) pairs for an array of shape ",
                                    shape_str(a.shape()), "; need one per dimension or one."));
  }
  array out = a;
  for (int ax = 0; ax < nd; ++ax) {
    auto [before, after] = pad_width.size() == 1 ? pad_width[0] : pad_width[ax];
    if (before < 0 || after < 0) {
      throw std::invalid_argument(msg("[pad] Pad widths must be non-negative; got (", before, ", ",
                                      after, ") for axis ", ax, "."));
    }
    if (before == 0 && after == 0) continue;
    const int64_t n = a.shape(ax);
    if (n == 0) {
      throw std::invalid_argument(
          msg("[pad] Cannot extend the empty axis ", ax, " in mode '", mode, "'."));
    }
    // The source position of every output position along the axis (NumPy's rules, which
    // repeat periodically when the pad is wider than the axis).
    std::vector<int32_t> src(n + before + after);
    for (int64_t i = 0; i < static_cast<int64_t>(src.size()); ++i) {
      int64_t j = i - before;
      if (mode == "edge") {
        j = std::clamp<int64_t>(j, 0, n - 1);
      } else if (mode == "reflect") {
        const int64_t period = 2 * (n - 1);
        j = period == 0 ? 0 : ((j % period) + period) % period;
        if (j >= n) j = period - j;
      } else {
        const int64_t period = 2 * n;
        j = ((j % period) + period) % period;
        if (j >= n) j = period - 1 - j;
      }
      src[i] = static_cast<int32_t>(j);
    }
    array idx(src.begin(), {static_cast<int32_t>(src.size())}, int32);
    out = take(out, idx, ax, s);
  }
  return out;
}

// ---------------------------------------------------------------- creation

array tri(int n, int m, int k, Dtype dtype, StreamOrDevice s) {
  auto stream = to_stream(s);
  if (n < 0 || m < 0) {
    throw std::invalid_argument(msg("[tri] Sizes must be non-negative; got ", n, " x ", m, "."));
  }
  array rows = reshape(arange(0, n, 1, int32, stream), {n, 1}, stream);
  array cols = reshape(arange(0, m, 1, int32, stream), {1, m}, stream);
  return astype(greater_equal(add(rows, array(k), stream), cols, stream), dtype, stream);
}

namespace {

// A window of length M from its value at each n in [0, M) (NumPy's definitions, computed in
// double on the host and rounded once).
template <typename F>
array window(int M, const char* op, F value) {
  if (M < 0) throw std::invalid_argument(msg("[", op, "] M must be non-negative; got ", M, "."));
  std::vector<float> w(M);
  if (M == 1) w[0] = 1.0f;
  for (int n = 0; M > 1 && n < M; ++n) w[n] = static_cast<float>(value(n, M - 1.0));
  return array(w.begin(), {M}, float32);
}

}  // namespace

array bartlett(int M, StreamOrDevice s) {
  return window(M, "bartlett",
                [](double n, double d) { return n <= d / 2 ? 2.0 * n / d : 2.0 - 2.0 * n / d; });
}

array blackman(int M, StreamOrDevice s) {
  return window(M, "blackman", [](double n, double d) {
    const double t = 2.0 * std::numbers::pi * n / d;
    return 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2.0 * t);
  });
}

array hamming(int M, StreamOrDevice s) {
  return window(M, "hamming", [](double n, double d) {
    return 0.54 - 0.46 * std::cos(2.0 * std::numbers::pi * n / d);
  });
}

array hanning(int M, StreamOrDevice s) {
  return window(M, "hanning", [](double n, double d) {
    return 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * n / d);
  });
}

// ---------------------------------------------------------------- reductions

array count_nonzero(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto stream = to_stream(s);
  return sum(not_equal(a, array(0, a.dtype()), stream), axes, keepdims, stream);
}

array count_nonzero(const array& a, bool keepdims, StreamOrDevice s) {
  auto stream = to_stream(s);
  return sum(not_equal(a, array(0, a.dtype()), stream), keepdims, stream);
}

std::vector<array> minmax(const array& a, const std::vector<int>& axes, bool keepdims,
                          StreamOrDevice s) {
  auto stream = to_stream(s);
  if (axes.empty()) return {min(a, keepdims, stream), max(a, keepdims, stream)};
  return {min(a, axes, keepdims, stream), max(a, axes, keepdims, stream)};
}

// ---------------------------------------------------------------- contractions

array tensordot(const array& a, const array& b, const std::vector<int>& axes_a_in,
                const std::vector<int>& axes_b_in, StreamOrDevice s) {
  auto stream = to_stream(s);
  if (axes_a_in.size() != axes_b_in.size()) {
    throw std::invalid_argument(msg("[tensordot] Got ", axes_a_in.size(), " axes of a and ",
                                    axes_b_in.size(), " axes of b; they contract in pairs."));
  }
  const int na = static_cast<int>(a.ndim()), nb = static_cast<int>(b.ndim());
  std::vector<int> axes_a, axes_b;
  for (size_t i = 0; i < axes_a_in.size(); ++i) {
    axes_a.push_back(normalize_axis(axes_a_in[i], na, "tensordot"));
    axes_b.push_back(normalize_axis(axes_b_in[i], nb, "tensordot"));
    if (a.shape(axes_a.back()) != b.shape(axes_b.back())) {
      throw std::invalid_argument(msg("[tensordot] Axis ", axes_a_in[i], " of a ",
                                      shape_str(a.shape()), " and axis ", axes_b_in[i], " of b ",
                                      shape_str(b.shape()), " have different sizes."));
    }
  }
  auto free_axes = [](int nd, const std::vector<int>& used) {
    std::vector<int> out;
    for (int i = 0; i < nd; ++i)
      if (std::find(used.begin(), used.end(), i) == used.end()) out.push_back(i);
    return out;
  };
  std::vector<int> free_a = free_axes(na, axes_a), free_b = free_axes(nb, axes_b);
  if (free_a.size() + axes_a.size() != static_cast<size_t>(na) ||
      free_b.size() + axes_b.size() != static_cast<size_t>(nb)) {
    throw std::invalid_argument("[tensordot] An axis is listed twice.");
  }
  int64_t m = 1, k = 1, n = 1;
  Shape out_shape;
  for (int i : free_a) {
    m *= a.shape(i);
    out_shape.push_back(a.shape(i));
  }
  for (int i : axes_a) k *= a.shape(i);
  for (int i : free_b) {
    n *= b.shape(i);
    out_shape.push_back(b.shape(i));
  }
  std::vector<int> perm_a = free_a, perm_b = axes_b;
  perm_a.insert(perm_a.end(), axes_a.begin(), axes_a.end());
  perm_b.insert(perm_b.end(), free_b.begin(), free_b.end());
  array a2 = reshape(transpose(a, perm_a, stream),
                     {static_cast<int32_t>(m), static_cast<int32_t>(k)}, stream);
  array b2 = reshape(transpose(b, perm_b, stream),
                     {static_cast<int32_t>(k), static_cast<int32_t>(n)}, stream);
  return reshape(matmul(a2, b2, stream), std::move(out_shape), stream);
}

array tensordot(const array& a, const array& b, int axes, StreamOrDevice s) {
  if (axes < 0 || axes > static_cast<int>(a.ndim()) || axes > static_cast<int>(b.ndim())) {
    throw std::invalid_argument(msg("[tensordot] Cannot contract ", axes,
                                    " axes of arrays of shapes ", shape_str(a.shape()), " and ",
                                    shape_str(b.shape()), "."));
  }
  std::vector<int> axes_a, axes_b;
  for (int i = 0; i < axes; ++i) {
    axes_a.push_back(static_cast<int>(a.ndim()) - axes + i);
    axes_b.push_back(i);
  }
  return tensordot(a, b, axes_a, axes_b, s);
}

array vecdot(const array& a, const array& b, int axis, StreamOrDevice s) {
  auto stream = to_stream(s);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), "vecdot");
  if (shape.empty()) {
    throw std::invalid_argument("[vecdot] Inputs must have at least one dimension.");
  }
  int ax = normalize_axis(axis, static_cast<int>(shape.size()), "vecdot");
  return sum(multiply(conjugate(a, stream), b, stream), ax, false, stream);
}

array kron(const array& a, const array& b, StreamOrDevice s) {
  auto stream = to_stream(s);
  if (a.size() == 0 || b.size() == 0) {
    throw std::invalid_argument(msg("[kron] Inputs must be non-empty; got shapes ",
                                    shape_str(a.shape()), " and ", shape_str(b.shape()), "."));
  }
  const size_t nd = std::max(a.ndim(), b.ndim());
  Shape sa(nd - a.ndim(), 1), sb(nd - b.ndim(), 1);
  sa.insert(sa.end(), a.shape().begin(), a.shape().end());
  sb.insert(sb.end(), b.shape().begin(), b.shape().end());
  // Interleave: a's axes at even positions, b's at odd, then merge each pair.
  Shape ea, eb, out;
  for (size_t i = 0; i < nd; ++i) {
    ea.insert(ea.end(), {sa[i], 1});
    eb.insert(eb.end(), {1, sb[i]});
    const int64_t d = int64_t{sa[i]} * sb[i];
    if (d > std::numeric_limits<int32_t>::max()) {
      throw std::overflow_error(
          msg("[kron] The result would have ", d, " elements along axis ", i, "."));
    }
    out.push_back(static_cast<int32_t>(d));
  }
  array p = multiply(reshape(a, ea, stream), reshape(b, eb, stream), stream);
  return reshape(p, out, stream);
}

}  // namespace kiln
