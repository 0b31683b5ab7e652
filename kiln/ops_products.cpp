// Matrix-product variants of MLX (gather_mm, segmented_mm, block_masked_mm), the
// Walsh-Hadamard transform, and the 8-bit float conversions, built on matmul, gathers and the
// unary primitives.
#include <cmath>
#include <memory>
#include <string_view>

#include "kiln/compile.h"
#include "kiln/ops.h"
#include "kiln/primitives_unary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

void require_matrices(const array& a, const array& b, const char* op) {
  if (a.ndim() < 2 || b.ndim() < 2) {
    throw std::invalid_argument(msg("[", op, "] Inputs must have at least 2 dimensions; got ",
                                    shape_str(a.shape()), " and ", shape_str(b.shape()), "."));
  }
  if (a.shape(-1) != b.shape(-2)) {
    throw std::invalid_argument(msg("[", op, "] Last dimension of a ", shape_str(a.shape()),
                                    " must match the second-to-last of b ", shape_str(b.shape()),
                                    "."));
  }
}

void require_floating(const array& a, const array& b, const char* op) {
  if (!is_floating_point(a.dtype()) || !is_floating_point(b.dtype())) {
    throw std::invalid_argument(msg("[", op, "] Only floating types are supported; got ", a.dtype(),
                                    " and ", b.dtype(), "."));
  }
}

// The matrices of `x` (batch axes flattened) picked by `indices` (default: all, in order).
array pick_matrices(const array& x, const std::optional<array>& indices, const char* op,
                    const Stream& s) {
  if (!indices) return x;
  if (!is_integral(indices->dtype()) || indices->dtype() == bool_) {
    throw std::invalid_argument(
        msg("[", op, "] Indices must be integers; got ", indices->dtype(), "."));
  }
  // The stack follows x's matrix shape in shapeless compile traces (so does take's gather).
  return take(detail::matrix_stack(x, s), *indices, 0, s);
}

// An element mask of extent (rows, cols) from a block mask (.., ceil(rows/bs), ceil(cols/bs)).
array expand_block_mask(const array& m, int bs, int rows, int cols, const Stream& s) {
  array e = repeat(repeat(m, bs, -2, s), bs, -1, s);
  Shape start(e.ndim(), 0), stop = e.shape();
  stop[e.ndim() - 2] = rows;
  stop[e.ndim() - 1] = cols;
  return slice(e, start, stop, s);
}

// Applies a block mask: bool masks select (zeros elsewhere), floating masks scale.
array apply_mask(const array& x, const array& mask, const Stream& s) {
  if (mask.dtype() == bool_) return where(mask, x, zeros_like(x, s), s);
  return multiply(x, astype(mask, x.dtype(), s), s);
}

void check_block_mask(const std::optional<array>& m, int rows, int cols, int bs, const char* what) {
  if (!m) return;
  const int br = (rows + bs - 1) / bs, bc = (cols + bs - 1) / bs;
  if (m->ndim() < 2 || m->shape(-2) != br || m->shape(-1) != bc) {
    throw std::invalid_argument(msg("[block_masked_mm] ", what, " must have shape (..., ", br, ", ",
                                    bc, ") for block size ", bs, "; got ", shape_str(m->shape()),
                                    "."));
  }
  if (!(m->dtype() == bool_ || is_floating_point(m->dtype()))) {
    throw std::invalid_argument(
        msg("[block_masked_mm] ", what, " must be bool or floating; got ", m->dtype(), "."));
  }
}

}  // namespace

array gather_mm(const array& a, const array& b, std::optional<array> lhs_indices,
                std::optional<array> rhs_indices, bool sorted_indices, StreamOrDevice sd) {
  auto s = to_stream(sd);
  require_matrices(a, b, "gather_mm");
  require_floating(a, b, "gather_mm");
  // Picked matrices broadcast against each other as matmul's batch axes do.
  return matmul(pick_matrices(a, lhs_indices, "gather_mm", s),
                pick_matrices(b, rhs_indices, "gather_mm", s), s);
}

array segmented_mm(const array& a, const array& b, const array& segments, StreamOrDevice sd) {
  auto s = to_stream(sd);
  if (a.ndim() != 2 || b.ndim() != 2) {
    throw std::invalid_argument(msg("[segmented_mm] a and b must be matrices; got ",
                                    shape_str(a.shape()), " and ", shape_str(b.shape()), "."));
  }
  require_matrices(a, b, "segmented_mm");
  require_floating(a, b, "segmented_mm");
  if (segments.ndim() < 1 || segments.shape(-1) != 2 || !is_integral(segments.dtype())) {
    throw std::invalid_argument(
        msg("[segmented_mm] segments must be integer pairs of shape "
            "(..., 2); got ",
            shape_str(segments.shape()), " ", segments.dtype(), "."));
  }
  const int K = a.shape(1);
  // Segment j covers [start, end) of the contraction axis: mask a's columns outside it.
  array k = arange(0, K, 1, int32, s);
  array seg = astype(segments, int32, s);
  array start = expand_dims(take(seg, 0, -1, s), -1, s);
  array end = expand_dims(take(seg, 1, -1, s), -1, s);
  array mask = logical_and(greater_equal(k, start, s), less(k, end, s), s);  // (..., K)
  array am = where(expand_dims(mask, -2, s), a, zeros_like(a, s), s);        // (..., M, K)
  return matmul(am, b, s);
}

array block_masked_mm(const array& a, const array& b, int block_size, std::optional<array> mask_out,
                      std::optional<array> mask_lhs, std::optional<array> mask_rhs,
                      StreamOrDevice sd) {
  auto s = to_stream(sd);
  require_matrices(a, b, "block_masked_mm");
  require_floating(a, b, "block_masked_mm");
  if (block_size != 32 && block_size != 64) {
    throw std::invalid_argument(
        msg("[block_masked_mm] Only block sizes 32 and 64 are supported; got ", block_size, "."));
  }
  const int M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  check_block_mask(mask_out, M, N, block_size, "mask_out");
  check_block_mask(mask_lhs, M, K, block_size, "mask_lhs");
  check_block_mask(mask_rhs, K, N, block_size, "mask_rhs");
  array x = a, y = b;
  if (mask_lhs) x = apply_mask(x, expand_block_mask(*mask_lhs, block_size, M, K, s), s);
  if (mask_rhs) y = apply_mask(y, expand_block_mask(*mask_rhs, block_size, K, N, s), s);
  array c = matmul(x, y, s);
  if (mask_out) c = apply_mask(c, expand_block_mask(*mask_out, block_size, M, N, s), s);
  return c;
}

// ---------------------------------------------------------------- Hadamard

namespace {

// The Hadamard matrices of orders 12, 20 and 28 that MLX uses (row i, '+' = 1), in the
// convention y = x @ H; with them kiln's transform gives MLX's results bit for bit in float32.
constexpr std::string_view kHadamard12 =
    "+-++++++++++--+-+-+-+-+-+++-++----+++---+--+-++-+++++-++----+-+---+--+-+++--+++-++--"
    "+--++---+--+++----+++-+++--+-++---+-++++----+++-+-+--+-++---";
constexpr std::string_view kHadamard20 =
    "+-----++++--++--+--+-+---+-+++---+++-+----+--++-+++---+-+-+----+-+++-+++-----+-+----"
    "+++++--++--+--+-+----+----+-++---++--+----+----+-++---++--+----+--+-+-++---+---+----"
    "+-++-+-++-------+----+-++-+-++--++--+-+--++----+----+++--+-+---+----+----+++--+-+---"
    "+----+----+++--+-+---+----+-+--+++--+-----+----++-++-++--+-+++++-----+-+++++--+-+++-"
    "+---+-+-+-+++-++-++--+--++-+---++++++-+---+--++-++--++++++-----+";
constexpr std::string_view kHadamard28 =
    "+--------++++--+-++-+-++--++-+--------+++++-+-++-+-++--+--+----+---+++-+-+-++++-++--"
    "---+---++---+++-+-+-+-++-++-----+--+++---+++-+-+---++-++-----+-++++----++-+-++--++-+"
    "------+-++++--+-++-+-++--++-++----++------+--++---+-++-++++-----+------+--++-+-+-++-"
    "-+++-----+------+--++-+-+-++--+++-----+---+--+--++-+-+-+---+++-----+--++--+--++-+-+-"
    "----+++-----+--++--+--++-+-++----++------+--++--++-++-+-+-+--+--++--+++------++----+"
    "-+-+--++-++--+-+-----+++----+-+-+--++-++----+-----+++----+-+-+--++-++----+-----+++--"
    "--+-+-+--++-++----+-----+++-+--+-+-+--++-+-----+-----+++-+--+-+++--++-------++----++"
    "+--++--+-+--+---++++-+-------+--++--+-+--+---++++-+-------+--+++-+-+--+---+++--+----"
    "+--+--+-+-+-+-++---++---+---++--+----+-+-++++---+----+---++--+-+--+-+-++++--------+-"
    "--++--+-+--+-+-++++--------+";

// The m x m matrix in `signs` (row-major, '+' = 1), as `dtype`.
array sign_matrix(std::string_view signs, int m, Dtype dtype) {
  std::vector<float> v(static_cast<size_t>(m) * m);
  for (size_t i = 0; i < v.size(); ++i) v[i] = signs[i] == '+' ? 1.0f : -1.0f;
  return astype(array(v.begin(), {m, m}, float32), dtype);
}

// Sylvester's Hadamard matrix of order p = 2^k: entry (i, j) is (-1)^popcount(i & j).
array sylvester(int p, Dtype dtype) {
  std::vector<float> v(static_cast<size_t>(p) * p);
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j)
      v[static_cast<size_t>(i) * p + j] = (__builtin_popcount(i & j) & 1) ? -1.0f : 1.0f;
  return astype(array(v.begin(), {p, p}, float32), dtype);
}

// x @ h along axis `axis` of x.
array apply_along(const array& x, const array& h, int axis, const Stream& s) {
  const int nd = static_cast<int>(x.ndim());
  if (axis == nd - 1) return matmul(x, h, s);
  return moveaxis(matmul(moveaxis(x, axis, -1, s), h, s), -1, axis, s);
}

}  // namespace

array hadamard_transform(const array& a, std::optional<float> scale, StreamOrDevice sd) {
  auto s = to_stream(sd);
  if (a.ndim() == 0) return reshape(hadamard_transform(reshape(a, {1}, sd), scale, sd), {}, sd);
  if (is_complex(a.dtype())) {
    throw std::invalid_argument("[hadamard_transform] Complex inputs are not supported.");
  }
  const Dtype dtype = is_floating_point(a.dtype()) ? a.dtype() : float32;
  const int n = a.shape(-1);
  int m = 1;
  for (int c : {12, 20, 28}) {
    if (n % c == 0 && ((n / c) & (n / c - 1)) == 0) m = c;
  }
  const int p = n / m;
  if (n <= 0 || (p & (p - 1)) != 0) {
    throw std::invalid_argument(
        msg("[hadamard] Only supports n = m*2^k where m in (1, 12, 20, 28); got n = ", n, "."));
  }
  // H_n = H_m (x) H_p, and H_p = H_p1 (x) H_p2 (x) ... with factors of at most 2^8, so the
  // transform is one small matmul along each axis of x viewed as (..., m, p1, p2, ...).
  std::vector<int> factors;
  for (int rest = p; rest > 1;) {
    int f = std::min(rest, 256);
    factors.push_back(f);
    rest /= f;
  }
  Shape shape(a.shape().begin(), a.shape().end() - 1);
  const int lead = static_cast<int>(shape.size());
  shape.push_back(m);
  for (int f : factors) shape.push_back(f);
  array x = reshape(astype(a, dtype, s), shape, s);
  if (m > 1) {
    std::string_view signs = m == 12 ? kHadamard12 : m == 20 ? kHadamard20 : kHadamard28;
    x = apply_along(x, sign_matrix(signs, m, dtype), lead, s);
  }
  for (size_t i = 0; i < factors.size(); ++i) {
    x = apply_along(x, sylvester(factors[i], dtype), lead + 1 + static_cast<int>(i), s);
  }
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(n));
  x = reshape(x, a.shape(), s);
  return sc == 1.0 ? x : multiply(x, array(sc, dtype), s);
}

// ---------------------------------------------------------------- 8-bit floats

array to_fp8(const array& a, StreamOrDevice sd) {
  auto s = to_stream(sd);
  if (is_complex(a.dtype())) {
    throw std::invalid_argument("[to_fp8] Complex inputs are not supported.");
  }
  array x = is_floating_point(a.dtype()) ? a : astype(a, float32, s);
  return array(x.shape(), uint8, std::make_shared<ToFP8>(s), {x});
}

array from_fp8(const array& a, Dtype dtype, StreamOrDevice sd) {
  auto s = to_stream(sd);
  if (a.dtype() != uint8) {
    throw std::invalid_argument(
        msg("[from_fp8] Input must be uint8 (fp8 e4m3 bits); got ", a.dtype(), "."));
  }
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        msg("[from_fp8] The output dtype must be floating; got ", dtype, "."));
  }
  array f(a.shape(), float32, std::make_shared<FromFP8>(s), {a});
  return astype(f, dtype, s);
}

}  // namespace kiln
