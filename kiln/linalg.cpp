// kiln::linalg ops: argument checks, dtype rules and the compositions (norms, det, pinv,
// cross, lu); the factorizations themselves are primitives (primitives_factor.h).
#include "kiln/linalg.h"

#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "kiln/ops.h"
#include "kiln/primitives_factor.h"
#include "kiln/utils.h"

namespace kiln::linalg {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Dtype at_least_float(Dtype d) {
  return is_inexact(d) ? d : promote_types(d, float32);
}

void check_matrix(const char* op, const array& a) {
  if (a.ndim() < 2) {
    throw std::invalid_argument(msg("[linalg::", op,
                                    "] Arrays must have >= 2 dimensions. Received array with ",
                                    a.ndim(), " dimensions."));
  }
}

void check_square(const char* op, const array& a, const char* what = "Only defined for") {
  check_matrix(op, a);
  if (a.shape(-1) != a.shape(-2)) {
    throw std::invalid_argument(msg("[linalg::", op, "] ", what, " square matrices; got shape ",
                                    shape_str(a.shape()), "."));
  }
}

void check_float(const char* op, Dtype d) {
  if (d != float32 && d != float64) {
    throw std::invalid_argument(msg("[linalg::", op,
                                    "] Arrays must have type float32 or float64. Received array "
                                    "with type ",
                                    d, "."));
  }
}

void check_float_or_complex(const char* op, Dtype d) {
  if (d != float32 && d != float64 && d != complex64) {
    throw std::invalid_argument(msg("[linalg::", op,
                                    "] Arrays must have type float32, float64 or complex64. "
                                    "Received array with type ",
                                    d, "."));
  }
}

Dtype real_of(Dtype d) {
  return d == complex64 ? float32 : d;
}

array mT(const array& x, const Stream& s) {
  return swapaxes(x, -1, -2, s);
}

array diag_part(const array& x, const Stream& s) {
  return linalg_detail::diagonal(x, s);
}

// Moves axes (r, c) of `a` (normalized, distinct) to (-2, -1).
array to_matrix_axes(const array& a, int r, int c, const Stream& s) {
  std::vector<int> perm;
  for (int i = 0; i < static_cast<int>(a.ndim()); ++i) {
    if (i != r && i != c) perm.push_back(i);
  }
  perm.push_back(r);
  perm.push_back(c);
  return transpose(a, perm, s);
}

array l2_norm(const array& a, const std::vector<int>& axes, bool keepdims, const Stream& s) {
  if (is_complex(a.dtype())) {
    array m = abs(a, s);
    return sqrt(sum(multiply(m, m, s), axes, keepdims, s), s);
  }
  array x = is_floating_point(a.dtype()) ? a : astype(a, float32, s);
  return sqrt(sum(square(x, s), axes, keepdims, s), s);
}

array vector_norm(const array& a, double ord, int axis, bool keepdims, const Stream& s) {
  const Dtype dtype = real_of(at_least_float(a.dtype()));
  std::vector<int> ax{axis};
  if (ord == 0.0) return astype(sum(not_equal(a, array(0), s), ax, keepdims, s), dtype, s);
  if (ord == 1.0) return astype(sum(abs(a, s), ax, keepdims, s), dtype, s);
  if (ord == 2.0) return l2_norm(a, ax, keepdims, s);
  if (ord == kInf) return astype(max(abs(a, s), ax, keepdims, s), dtype, s);
  if (ord == -kInf) return astype(min(abs(a, s), ax, keepdims, s), dtype, s);
  array m = astype(abs(a, s), dtype, s);
  return power(sum(power(m, array(ord, dtype), s), ax, keepdims, s), array(1.0 / ord, dtype), s);
}

// Singular-value matrix norms: f(S) over axes (r, c), with the axes kept as size 1 if asked.
template <typename F>
array singular_value_norm(const array& a, int r, int c, bool keepdims, F reduce, const Stream& s) {
  array x = to_matrix_axes(a, r, c, s);
  array out = reduce(svd(x, false, s)[0]);
  if (keepdims) out = expand_dims(out, {std::min(r, c), std::max(r, c)}, s);
  return out;
}

array matrix_norm_impl(const array& a, double ord, int r, int c, bool keepdims, const Stream& s) {
  const Dtype dtype = real_of(at_least_float(a.dtype()));
  // Induced norms: reduce the absolute values over `inner` (keeping it), then over `outer`.
  auto induced = [&](int inner, int outer, bool largest) {
    array t = sum(abs(a, s), inner, true, s);
    t = largest ? max(t, outer, true, s) : min(t, outer, true, s);
    if (!keepdims) t = squeeze(t, std::vector<int>{r, c}, s);
    return astype(t, dtype, s);
  };
  if (ord == 1.0) return induced(r, c, true);
  if (ord == -1.0) return induced(r, c, false);
  if (ord == kInf) return induced(c, r, true);
  if (ord == -kInf) return induced(c, r, false);
  if (ord == 2.0 || ord == -2.0) {
    return singular_value_norm(
        a, r, c, keepdims,
        [&](const array& sv) { return ord > 0 ? max(sv, -1, false, s) : min(sv, -1, false, s); },
        s);
  }
  std::ostringstream o;
  o << ord;
  throw std::invalid_argument(msg("[linalg::norm] Invalid ord ", o.str(), " for matrix norm."));
}

array matrix_norm_impl(const array& a, const std::string& ord, int r, int c, bool keepdims,
                       const Stream& s) {
  if (ord == "f" || ord == "fro") return l2_norm(a, {r, c}, keepdims, s);
  if (ord == "nuc") {
    check_float_or_complex("norm", a.dtype());
    return singular_value_norm(
        a, r, c, keepdims, [&](const array& sv) { return sum(sv, -1, false, s); }, s);
  }
  throw std::invalid_argument(msg("[linalg::norm] Invalid ord value '", ord, "' for matrix norm."));
}

std::vector<int> norm_axes(const array& a, const std::optional<std::vector<int>>& axis) {
  std::vector<int> ax;
  if (axis) {
    ax = *axis;
  } else {
    ax.resize(a.ndim());
    std::iota(ax.begin(), ax.end(), 0);
  }
  if (ax.size() > 2) {
    throw std::invalid_argument("[linalg::norm] Received too many axes for norm.");
  }
  for (int& x : ax) x = normalize_axis(x, static_cast<int>(a.ndim()), "linalg::norm");
  if (ax.size() == 2 && ax[0] == ax[1]) {
    throw std::invalid_argument(
        msg("[linalg::norm] The two axes of a matrix norm must differ; got ", ax[0], " twice."));
  }
  return ax;
}

// The solve family's checks (MLX's messages); returns the promoted dtype.
Dtype check_solve(const char* op, const array& a, const array& b) {
  if (a.ndim() < 2) {
    throw std::invalid_argument(msg("[linalg::", op,
                                    "] First input must have >= 2 dimensions. Received array with ",
                                    a.ndim(), " dimensions."));
  }
  if (b.ndim() < 1) {
    throw std::invalid_argument(
        msg("[linalg::", op, "] Second input must have >= 1 dimensions. Received array with ",
            b.ndim(), " dimensions."));
  }
  if (a.shape(-1) != a.shape(-2)) {
    throw std::invalid_argument(msg("[linalg::", op,
                                    "] First input must be a square matrix. Received array "
                                    "with shape ",
                                    shape_str(a.shape()), "."));
  }
  const int last = b.ndim() > 1 ? -2 : -1;
  if (a.shape(-1) != b.shape(last)) {
    throw std::invalid_argument(msg("[linalg::", op, "] Last dimension of first input with shape ",
                                    shape_str(a.shape()),
                                    " must match second to last dimension of second input with "
                                    "shape ",
                                    shape_str(b.shape()), "."));
  }
  Dtype out = promote_types(a.dtype(), b.dtype());
  if (out != float32 && out != float64) {
    throw std::invalid_argument(msg("[linalg::", op,
                                    "] Input arrays must promote to float32 or float64. Received "
                                    "arrays with type ",
                                    a.dtype(), " and ", b.dtype(), "."));
  }
  return out;
}

// Broadcasts the batch axes of a (..., n, n) and b (..., n) or (..., n, k) and builds `make`.
template <typename Make>
array solve_common(const char* op, const array& a_in, const array& b_in, const Stream& s,
                   Make make) {
  const Dtype dtype = check_solve(op, a_in, b_in);
  array a = astype(a_in, dtype, s);
  array b = astype(b_in, dtype, s);
  const bool vec = b.ndim() == 1;
  if (vec) b = expand_dims(b, -1, s);
  const int n = a.shape(-1), k = b.shape(-1);
  Shape batch = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                 Shape(b.shape().begin(), b.shape().end() - 2), "linalg::solve");
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {n, n});
  sb.insert(sb.end(), {n, k});
  a = broadcast_to(a, sa, s);
  b = broadcast_to(b, sb, s);
  array x(sb, dtype, make(), {a, b});
  return vec ? squeeze(x, -1, s) : x;
}

// det of n <= 3 matrices by cofactors: exact for small integers, and plain products for grad.
array det_small(const array& a, const Stream& s) {
  const int n = a.shape(-1);
  Shape batch(a.shape().begin(), a.shape().end() - 2);
  if (n == 0) return broadcast_to(array(1.0, a.dtype()), batch, s);
  auto e = [&](int i, int j) {
    Shape start(a.ndim(), 0), stop = a.shape();
    start[a.ndim() - 2] = i;
    stop[a.ndim() - 2] = i + 1;
    start[a.ndim() - 1] = j;
    stop[a.ndim() - 1] = j + 1;
    return reshape(slice(a, start, stop, s), batch, s);
  };
  if (n == 1) return e(0, 0);
  if (n == 2) return subtract(multiply(e(0, 0), e(1, 1), s), multiply(e(0, 1), e(1, 0), s), s);
  auto minor = [&](int r0, int c0, int r1, int c1) {
    return subtract(multiply(e(r0, c0), e(r1, c1), s), multiply(e(r0, c1), e(r1, c0), s), s);
  };
  return add(
      subtract(multiply(e(0, 0), minor(1, 1, 2, 2), s), multiply(e(0, 1), minor(1, 0, 2, 2), s), s),
      multiply(e(0, 2), minor(1, 0, 2, 1), s), s);
}

Dtype check_det(const char* op, const array& a) {
  if (is_complex(a.dtype())) {
    throw std::invalid_argument(msg("[linalg::", op, "] Complex inputs are not supported."));
  }
  check_square(op, a);
  Dtype d = at_least_float(a.dtype());
  if (a.shape(-1) > 3) check_float(op, d);
  return d;
}

// {sign, log|det|} through LU: the sign of the permutation times those of U's diagonal.
std::pair<array, array> slogdet_lu(const array& a, const Stream& s) {
  const Dtype dtype = a.dtype();
  const int n = a.shape(-1);
  auto [LU, pivots] = lu_factor(a, s);
  array d = diag_part(LU, s);
  array swaps = sum(not_equal(pivots, arange(0, n, uint32, s), s), -1, false, s);
  array negatives = sum(less(d, array(0.0, dtype), s), -1, false, s);
  array odd = remainder(astype(add(swaps, negatives, s), int32, s), array(2, int32), s);
  array sgn = astype(subtract(array(1, int32), multiply(array(2, int32), odd, s), s), dtype, s);
  array logabs = sum(log(abs(d, s), s), -1, false, s);
  array singular = any(equal(d, array(0.0, dtype), s), -1, false, s);
  sgn = where(singular, array(0.0, dtype), sgn, s);
  logabs = where(singular, array(-kInf, dtype), logabs, s);
  return {sgn, logabs};
}

}  // namespace

// ---------------------------------------------------------------- norms

array norm(const array& a, const std::optional<std::vector<int>>& axis, bool keepdims,
           StreamOrDevice s) {
  auto stream = to_stream(s);
  if (!axis) {
    array out = l2_norm(flatten(a, 0, -1, stream), {0}, false, stream);
    if (keepdims) out = reshape(out, Shape(a.ndim(), 1), stream);
    return out;
  }
  if (axis->size() > 2) {
    throw std::invalid_argument("[linalg::norm] Received too many axes for norm.");
  }
  auto ax = normalize_axes(*axis, static_cast<int>(a.ndim()), "linalg::norm", false);
  return l2_norm(a, ax, keepdims, stream);
}

array norm(const array& a, double ord, const std::optional<std::vector<int>>& axis, bool keepdims,
           StreamOrDevice s) {
  auto stream = to_stream(s);
  auto ax = norm_axes(a, axis);
  if (ax.size() == 1) return vector_norm(a, ord, ax[0], keepdims, stream);
  if (ax.size() == 2) return matrix_norm_impl(a, ord, ax[0], ax[1], keepdims, stream);
  throw std::invalid_argument("[linalg::norm] A norm needs at least one axis; got a 0-d array.");
}

array norm(const array& a, const std::string& ord, const std::optional<std::vector<int>>& axis,
           bool keepdims, StreamOrDevice s) {
  auto stream = to_stream(s);
  std::vector<int> ax;
  if (axis) {
    ax = *axis;
  } else {
    ax.resize(a.ndim());
    std::iota(ax.begin(), ax.end(), 0);
  }
  if (ax.size() != 2) {
    throw std::invalid_argument(msg("[linalg::norm] Norm '", ord,
                                    "' only supported for matrices, but received ", ax.size(),
                                    " axis/axes."));
  }
  ax = norm_axes(a, ax);
  return matrix_norm_impl(a, ord, ax[0], ax[1], keepdims, stream);
}

array matrix_norm(const array& a, double ord, const std::vector<int>& axis, bool keepdims,
                  StreamOrDevice s) {
  if (axis.size() != 2) {
    throw std::invalid_argument(
        msg("[linalg::matrix_norm] Expected two axes; got ", axis.size(), "."));
  }
  return norm(a, ord, axis, keepdims, s);
}

array matrix_norm(const array& a, const std::string& ord, const std::vector<int>& axis,
                  bool keepdims, StreamOrDevice s) {
  if (axis.size() != 2) {
    throw std::invalid_argument(
        msg("[linalg::matrix_norm] Expected two axes; got ", axis.size(), "."));
  }
  return norm(a, ord, axis, keepdims, s);
}

// ---------------------------------------------------------------- factorizations

array cholesky(const array& a, bool upper, StreamOrDevice s) {
  check_float("cholesky", a.dtype());
  check_square("cholesky", a, "Cholesky decomposition is only defined for");
  auto stream = to_stream(s);
  return array(a.shape(), a.dtype(), std::make_shared<Cholesky>(stream, upper), {a});
}

array cholesky_inv(const array& L, bool upper, StreamOrDevice s) {
  check_float("cholesky_inv", L.dtype());
  check_square("cholesky_inv", L, "Cholesky inverse is only defined for");
  auto stream = to_stream(s);
  array t = tri_inv(L, upper, stream);
  // a = L L^T -> a^-1 = L^-T L^-1; a = U^T U -> a^-1 = U^-1 U^-T.
  return upper ? matmul(t, mT(t, stream), stream) : matmul(mT(t, stream), t, stream);
}

static array inverse(const char* op, const array& a, bool tri, bool upper, StreamOrDevice s) {
  check_float(op, a.dtype());
  check_square(op, a, "Inverses are only defined for");
  auto stream = to_stream(s);
  return array(a.shape(), a.dtype(), std::make_shared<Inverse>(stream, tri, upper), {a});
}

array inv(const array& a, StreamOrDevice s) {
  return inverse("inv", a, false, false, s);
}

array tri_inv(const array& a, bool upper, StreamOrDevice s) {
  return inverse("tri_inv", a, true, upper, s);
}

std::pair<array, array> qr(const array& a, StreamOrDevice s) {
  check_float("qr", a.dtype());
  check_matrix("qr", a);
  auto stream = to_stream(s);
  auto prim = std::make_shared<QRF>(stream);
  auto out = array::make_arrays(prim->output_shapes({a}), {a.dtype(), a.dtype()}, prim, {a});
  return {out[0], out[1]};
}

std::vector<array> svd(const array& a, bool compute_uv, StreamOrDevice s) {
  check_float_or_complex("svd", a.dtype());
  check_matrix("svd", a);
  auto stream = to_stream(s);
  auto prim = std::make_shared<SVD>(stream, compute_uv);
  const Dtype r = real_of(a.dtype());
  std::vector<Dtype> dtypes =
      compute_uv ? std::vector<Dtype>{a.dtype(), r, a.dtype()} : std::vector<Dtype>{r};
  auto out = array::make_arrays(prim->output_shapes({a}), dtypes, prim, {a});
  if (stream.device.type == Device::gpu && a.size() > 0) {
    // cuSOLVER's gesvdj converges on NaN input to finite values; LAPACK (and MLX) give NaN.
    const int nd = static_cast<int>(a.ndim());
    array has_nan = any(isnan(a, stream), {nd - 2, nd - 1}, true, stream);  // (..., 1, 1)
    for (auto& o : out) {
      array mask = o.ndim() == a.ndim() ? has_nan : squeeze(has_nan, {nd - 1}, stream);
      o = where(mask, array(std::numeric_limits<float>::quiet_NaN(), o.dtype()), o, stream);
    }
  }
  return out;
}

array pinv(const array& a, StreamOrDevice s) {
  check_float("pinv", a.dtype());
  check_matrix("pinv", a);
  auto stream = to_stream(s);
  const int m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  if (a.size() == 0) {  // NumPy: zeros of the transposed shape
    Shape t = a.shape();
    std::swap(t[a.ndim() - 2], t[a.ndim() - 1]);
    return zeros(t, a.dtype(), stream);
  }
  auto usv = svd(a, true, stream);
  Shape start(a.ndim(), 0), stop = a.shape();
  stop[a.ndim() - 2] = m;
  stop[a.ndim() - 1] = k;
  array U = slice(usv[0], start, stop, stream);  // (..., m, k)
  stop[a.ndim() - 2] = k;
  stop[a.ndim() - 1] = n;
  array Vt = slice(usv[2], start, stop, stream);  // (..., k, n)
  array S = expand_dims(usv[1], -2, stream);      // (..., 1, k)
  const double eps = a.dtype() == float64 ? std::numeric_limits<double>::epsilon()
                                          : std::numeric_limits<float>::epsilon();
  array cutoff =
      multiply(array(10.0 * std::max(m, n) * eps, a.dtype()), max(S, -1, true, stream), stream);
  array rS =
      where(greater(S, cutoff, stream), reciprocal(S, stream), array(0.0, a.dtype()), stream);
  // pinv = V diag(1/S) U^T
  return matmul(multiply(mT(Vt, stream), rS, stream), mT(U, stream), stream);
}

array cross(const array& a, const array& b, int axis, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto check = [&](const array& x) {
    const int nd = static_cast<int>(x.ndim());
    if (axis >= nd || axis < -nd) {
      throw std::invalid_argument(
          msg("[linalg::cross] axis ", axis, " invalid for array with ", nd, " dimensions."));
    }
    if (x.shape(axis) < 2 || x.shape(axis) > 3) {
      throw std::invalid_argument(
          msg("[linalg::cross] The specified axis must have size 2 or 3; "
              "got shape ",
              shape_str(x.shape()), "."));
    }
  };
  check(a);
  check(b);
  const bool a2 = a.shape(axis) == 2, b2 = b.shape(axis) == 2;
  const Dtype dtype = promote_types(a.dtype(), b.dtype());
  Shape sa = a.shape(), sb = b.shape();
  sa[axis < 0 ? axis + a.ndim() : axis] = 3;
  sb[axis < 0 ? axis + b.ndim() : axis] = 3;
  Shape shape = broadcast_shapes(sa, sb, "linalg::cross");
  const int ax = axis < 0 ? axis + static_cast<int>(shape.size()) : axis;
  shape[ax] = a2 ? 2 : 3;
  auto as = split(broadcast_to(astype(a, dtype, stream), shape, stream), a2 ? 2 : 3, ax, stream);
  shape[ax] = b2 ? 2 : 3;
  auto bs = split(broadcast_to(astype(b, dtype, stream), shape, stream), b2 ? 2 : 3, ax, stream);
  auto m = [&](const array& x, const array& y) { return multiply(x, y, stream); };
  std::vector<array> out;
  if (a2 && b2) {
    array z = zeros_like(as[0], stream);
    out = {z, z};
  } else if (b2) {
    out = {negative(m(as[2], bs[1]), stream), m(as[2], bs[0])};
  } else if (a2) {
    out = {m(as[1], bs[2]), negative(m(as[0], bs[2]), stream)};
  } else {
    out = {subtract(m(as[1], bs[2]), m(as[2], bs[1]), stream),
           subtract(m(as[2], bs[0]), m(as[0], bs[2]), stream)};
  }
  out.push_back(subtract(m(as[0], bs[1]), m(as[1], bs[0]), stream));
  return concatenate(out, ax, stream);
}

// ---------------------------------------------------------------- eigen-decompositions

static char check_eig(const char* op, const array& a, const std::string* uplo) {
  check_float_or_complex(op, a.dtype());
  check_square(op, a);
  if (!uplo) return 'L';
  if (*uplo != "L" && *uplo != "U") {
    throw std::invalid_argument(
        msg("[linalg::", op, "] UPLO must be 'L' or 'U'; got '", *uplo, "'."));
  }
  return (*uplo)[0];
}

array eigvalsh(const array& a, const std::string& UPLO, StreamOrDevice s) {
  char uplo = check_eig("eigvalsh", a, &UPLO);
  auto prim = std::make_shared<Eigh>(to_stream(s), uplo, false);
  return array::make_arrays(prim->output_shapes({a}), {real_of(a.dtype())}, prim, {a})[0];
}

std::pair<array, array> eigh(const array& a, const std::string& UPLO, StreamOrDevice s) {
  char uplo = check_eig("eigh", a, &UPLO);
  auto prim = std::make_shared<Eigh>(to_stream(s), uplo, true);
  auto out =
      array::make_arrays(prim->output_shapes({a}), {real_of(a.dtype()), a.dtype()}, prim, {a});
  return {out[0], out[1]};
}

array eigvals(const array& a, StreamOrDevice s) {
  check_eig("eigvals", a, nullptr);
  auto prim = std::make_shared<Eig>(to_stream(s), false);
  return array::make_arrays(prim->output_shapes({a}), {complex64}, prim, {a})[0];
}

std::pair<array, array> eig(const array& a, StreamOrDevice s) {
  check_eig("eig", a, nullptr);
  auto prim = std::make_shared<Eig>(to_stream(s), true);
  auto out = array::make_arrays(prim->output_shapes({a}), {complex64, complex64}, prim, {a});
  return {out[0], out[1]};
}

// ---------------------------------------------------------------- LU, solvers, determinants

static std::vector<array> lu_outputs(const char* op, const array& a, const Stream& s) {
  check_float(op, a.dtype());
  check_matrix(op, a);
  auto prim = std::make_shared<LUF>(s);
  return array::make_arrays(prim->output_shapes({a}), {a.dtype(), uint32, uint32}, prim, {a});
}

std::vector<array> lu(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto out = lu_outputs("lu", a, stream);
  const int m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  array L = tril(out[0], -1, stream);
  array U = triu(out[0], 0, stream);
  Shape start(a.ndim(), 0);
  if (n != k) {
    Shape stop = L.shape();
    stop.back() = k;
    L = slice(L, start, stop, stream);
  } else if (m != k) {
    Shape stop = U.shape();
    stop[U.ndim() - 2] = k;
    U = slice(U, start, stop, stream);
  }
  L = add(L, eye(m, k, 0, a.dtype(), stream), stream);
  return {out[2], L, U};
}

std::pair<array, array> lu_factor(const array& a, StreamOrDevice s) {
  auto out = lu_outputs("lu_factor", a, to_stream(s));
  return {out[0], out[1]};
}

array solve(const array& a, const array& b, StreamOrDevice s) {
  auto stream = to_stream(s);
  return solve_common("solve", a, b, stream, [&] { return std::make_shared<Solve>(stream); });
}

array solve_triangular(const array& a, const array& b, bool upper, StreamOrDevice s) {
  auto stream = to_stream(s);
  return solve_common("solve_triangular", a, b, stream,
                      [&] { return std::make_shared<SolveTriangular>(stream, upper); });
}

std::pair<array, array> slogdet(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  const Dtype d = check_det("slogdet", a);
  array x = astype(a, d, stream);
  if (x.shape(-1) <= 3) {
    array v = det_small(x, stream);
    return {sign(v, stream), log(abs(v, stream), stream)};
  }
  return slogdet_lu(x, stream);
}

array det(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  const Dtype d = check_det("det", a);
  array x = astype(a, d, stream);
  if (x.shape(-1) <= 3) return det_small(x, stream);
  auto [sgn, logabs] = slogdet_lu(x, stream);
  return multiply(sgn, exp(logabs, stream), stream);
}

}  // namespace kiln::linalg
