// Operations: build the lazy graph. Names and semantics follow MLX and NumPy.
//
// Every op checks its arguments and throws std::invalid_argument tagged with the op's
// name and the offending values, e.g. "[matmul] Last dimension of a (4, 3) must match
// first of b (5, 2)."; every op takes the stream or device it runs on last (default: the
// default stream of the default device). Shapes broadcast as in NumPy.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln {

// ---------------------------------------------------------------- creation (ops_creation.cpp)

/** Values from `start` to `stop` (exclusive) by `step`, as `dtype`. Throws for a zero or
 * non-finite step, or a dtype that is not numeric (bool). */
array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s = {});
/** As above; float32. */
array arange(double start, double stop, double step, StreamOrDevice s = {});
array arange(double start, double stop, Dtype dtype, StreamOrDevice s = {});
array arange(double start, double stop, StreamOrDevice s = {});
array arange(double stop, Dtype dtype, StreamOrDevice s = {});
array arange(double stop, StreamOrDevice s = {});
/** Integer ranges are int32. */
array arange(int start, int stop, int step, StreamOrDevice s = {});
array arange(int start, int stop, StreamOrDevice s = {});
array arange(int stop, StreamOrDevice s = {});

/** `num` evenly spaced values over [start, stop] (both included); throws for num < 0. */
array linspace(double start, double stop, int num = 50, Dtype dtype = float32,
               StreamOrDevice s = {});

/** An array of `shape` filled with `vals` (broadcast to shape), converted to `dtype`. */
array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s = {});
array full(Shape shape, array vals, StreamOrDevice s = {});
template <typename T>
array full(Shape shape, T val, Dtype dtype, StreamOrDevice s = {}) {
  return full(std::move(shape), array(val, dtype), s);
}
template <typename T>
array full(Shape shape, T val, StreamOrDevice s = {}) {
  return full(std::move(shape), array(val), s);
}
array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array zeros(const Shape& shape, StreamOrDevice s = {}) {
  return zeros(shape, float32, s);
}
array zeros_like(const array& a, StreamOrDevice s = {});
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array ones(const Shape& shape, StreamOrDevice s = {}) {
  return ones(shape, float32, s);
}
array ones_like(const array& a, StreamOrDevice s = {});
array full_like(const array& a, array vals, StreamOrDevice s = {});

/** An n x m matrix with ones on the k-th diagonal (k > 0 above the main diagonal). */
array eye(int n, int m, int k, Dtype dtype = float32, StreamOrDevice s = {});
inline array eye(int n, Dtype dtype, StreamOrDevice s = {}) {
  return eye(n, n, 0, dtype, s);
}
inline array eye(int n, StreamOrDevice s = {}) {
  return eye(n, n, 0, float32, s);
}
inline array eye(int n, int m, StreamOrDevice s = {}) {
  return eye(n, m, 0, float32, s);
}
/** The n x n identity. */
array identity(int n, Dtype dtype = float32, StreamOrDevice s = {});

/** Lower (upper) triangle: zeros above (below) the k-th diagonal of the last two axes. */
array tril(array x, int k = 0, StreamOrDevice s = {});
array triu(array x, int k = 0, StreamOrDevice s = {});

// ---------------------------------------------------------------- layout (ops_layout.cpp)

/** Converts to `dtype` (NumPy casting: complex->real keeps the real part, float->int
 * truncates, x->bool is x != 0). */
array astype(array a, Dtype dtype, StreamOrDevice s = {});
/** A copy with its own buffer. */
array copy(array a, StreamOrDevice s = {});
/** A row-contiguous array (column-contiguous accepted if `allow_col_major`); no copy if it
 * already is. */
array contiguous(const array& a, bool allow_col_major = false, StreamOrDevice s = {});
/** A view of `a`'s elements (in row-major order) with the given shape, strides (elements)
 * and offset. Throws for negative shapes and views reaching outside `a`. */
array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s = {});

/** Same data, new shape; one dimension may be -1 (inferred). A view when the layout allows. */
array reshape(const array& a, Shape shape, StreamOrDevice s = {});
/** Merges axes start_axis..end_axis into one. */
array flatten(const array& a, int start_axis = 0, int end_axis = -1, StreamOrDevice s = {});
/** Removes size-1 axes (all, or the given ones, which must have size 1). */
array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array squeeze(const array& a, int axis, StreamOrDevice s = {});
array squeeze(const array& a, StreamOrDevice s = {});
/** Inserts size-1 axes at the given positions of the result. */
array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array expand_dims(const array& a, int axis, StreamOrDevice s = {});

/** Permutes axes; without `axes`, reverses them. */
array transpose(const array& a, std::vector<int> axes, StreamOrDevice s = {});
array transpose(const array& a, StreamOrDevice s = {});
array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s = {});
array moveaxis(const array& a, int source, int destination, StreamOrDevice s = {});

/** Broadcasts to `shape` (NumPy rules); a view with zero strides. */
array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s = {});
std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s = {});

/**
 * Slice [start, stop) with `strides` steps per axis (negative steps walk backwards; start
 * and stop are clamped as in Python). A view.
 */
array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s = {});
array slice(const array& a, Shape start, Shape stop, StreamOrDevice s = {});
/** `src` with the slice [start, stop) by `strides` replaced by `update` (broadcast). */
array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                   StreamOrDevice s = {});
array slice_update(const array& src, const array& update, Shape start, Shape stop,
                   StreamOrDevice s = {});

/** Splits into `num_splits` equal parts along `axis` (throws if it does not divide). */
std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s = {});
std::vector<array> split(const array& a, int num_splits, StreamOrDevice s = {});
/** Splits before each of `indices` along `axis`. */
std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s = {});
std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s = {});

/** Joins along an existing axis; dtypes promote. Without an axis, flattens first. */
array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s = {});
array concatenate(std::vector<array> arrays, StreamOrDevice s = {});
/** Joins along a new axis; all shapes must be equal. */
array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s = {});
array stack(const std::vector<array>& arrays, StreamOrDevice s = {});

/** Repeats the array `reps` times per axis (NumPy tile). */
array tile(const array& a, std::vector<int> reps, StreamOrDevice s = {});
/** Repeats each element `repeats` times along `axis` (flattened when absent). */
array repeat(const array& a, int repeats, int axis, StreamOrDevice s = {});
array repeat(const array& a, int repeats, StreamOrDevice s = {});
/** Pads with a constant; `pad_width` gives (before, after) per axis. */
array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width,
          const array& pad_value = array(0), StreamOrDevice s = {});

// ---------------------------------------------------------------- unary (ops_unary.cpp)

array abs(const array& a, StreamOrDevice s = {});
array negative(const array& a, StreamOrDevice s = {});
/** -1, 0 or 1 (for complex: a / |a|). */
array sign(const array& a, StreamOrDevice s = {});
array square(const array& a, StreamOrDevice s = {});
// The following promote integer inputs to float32.
array sqrt(const array& a, StreamOrDevice s = {});
array rsqrt(const array& a, StreamOrDevice s = {});
array reciprocal(const array& a, StreamOrDevice s = {});
array exp(const array& a, StreamOrDevice s = {});
array expm1(const array& a, StreamOrDevice s = {});
array log(const array& a, StreamOrDevice s = {});
array log1p(const array& a, StreamOrDevice s = {});
array log2(const array& a, StreamOrDevice s = {});
array log10(const array& a, StreamOrDevice s = {});
array sin(const array& a, StreamOrDevice s = {});
array cos(const array& a, StreamOrDevice s = {});
array tan(const array& a, StreamOrDevice s = {});
array arcsin(const array& a, StreamOrDevice s = {});
array arccos(const array& a, StreamOrDevice s = {});
array arctan(const array& a, StreamOrDevice s = {});
array sinh(const array& a, StreamOrDevice s = {});
array cosh(const array& a, StreamOrDevice s = {});
array tanh(const array& a, StreamOrDevice s = {});
array arcsinh(const array& a, StreamOrDevice s = {});
array arccosh(const array& a, StreamOrDevice s = {});
array arctanh(const array& a, StreamOrDevice s = {});
/** Gauss error function and its inverse (real floating types). */
array erf(const array& a, StreamOrDevice s = {});
array erfinv(const array& a, StreamOrDevice s = {});
/** 1 / (1 + exp(-a)). */
array sigmoid(const array& a, StreamOrDevice s = {});
array floor(const array& a, StreamOrDevice s = {});
array ceil(const array& a, StreamOrDevice s = {});
/** Rounds half to even at `decimals` decimal places (NumPy round). */
array round(const array& a, int decimals = 0, StreamOrDevice s = {});
array logical_not(const array& a, StreamOrDevice s = {});
/** Bitwise NOT of integer or bool arrays. */
array bitwise_invert(const array& a, StreamOrDevice s = {});
array isnan(const array& a, StreamOrDevice s = {});
array isinf(const array& a, StreamOrDevice s = {});
array isfinite(const array& a, StreamOrDevice s = {});
array isposinf(const array& a, StreamOrDevice s = {});
array isneginf(const array& a, StreamOrDevice s = {});
/** The same values with no gradient flowing through. */
array stop_gradient(const array& a, StreamOrDevice s = {});
/** Real and imaginary parts, conjugate (complex64; identity or zeros for real). */
array real(const array& a, StreamOrDevice s = {});
array imag(const array& a, StreamOrDevice s = {});
array conjugate(const array& a, StreamOrDevice s = {});

// ---------------------------------------------------------------- binary (ops_binary.cpp)

array add(const array& a, const array& b, StreamOrDevice s = {});
array subtract(const array& a, const array& b, StreamOrDevice s = {});
array multiply(const array& a, const array& b, StreamOrDevice s = {});
/** True division: integer inputs give float32. */
array divide(const array& a, const array& b, StreamOrDevice s = {});
/** Floor of the quotient (Python semantics for integers and floats). */
array floor_divide(const array& a, const array& b, StreamOrDevice s = {});
/** Remainder with the sign of the divisor (Python's %). */
array remainder(const array& a, const array& b, StreamOrDevice s = {});
array power(const array& a, const array& b, StreamOrDevice s = {});
array maximum(const array& a, const array& b, StreamOrDevice s = {});
array minimum(const array& a, const array& b, StreamOrDevice s = {});
array equal(const array& a, const array& b, StreamOrDevice s = {});
array not_equal(const array& a, const array& b, StreamOrDevice s = {});
array less(const array& a, const array& b, StreamOrDevice s = {});
array less_equal(const array& a, const array& b, StreamOrDevice s = {});
array greater(const array& a, const array& b, StreamOrDevice s = {});
array greater_equal(const array& a, const array& b, StreamOrDevice s = {});
array logical_and(const array& a, const array& b, StreamOrDevice s = {});
array logical_or(const array& a, const array& b, StreamOrDevice s = {});
/** Bitwise ops on integer or bool arrays. */
array bitwise_and(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_or(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_xor(const array& a, const array& b, StreamOrDevice s = {});
array left_shift(const array& a, const array& b, StreamOrDevice s = {});
array right_shift(const array& a, const array& b, StreamOrDevice s = {});
array arctan2(const array& a, const array& b, StreamOrDevice s = {});
/** log(exp(a) + exp(b)) without overflow. */
array logaddexp(const array& a, const array& b, StreamOrDevice s = {});

/** Elementwise choice: x where condition else y; all three broadcast. */
array where(const array& condition, const array& x, const array& y, StreamOrDevice s = {});
/** Limits values to [a_min, a_max]; either bound may be absent, not both. */
array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max,
           StreamOrDevice s = {});
/** |a - b| <= atol + rtol * |b| elementwise (NumPy isclose). */
array isclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false, StreamOrDevice s = {});
/** All of isclose, as a 0-d bool array. */
array allclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false, StreamOrDevice s = {});
/** Same shape and equal values, as a 0-d bool array (false for different shapes). */
array array_equal(const array& a, const array& b, bool equal_nan = false, StreamOrDevice s = {});

// ---------------------------------------------------------------- reductions (ops_reduce.cpp)
// Each reduces over all axes, one axis, or a list of axes (negative counts from the end,
// duplicates are an error); `keepdims` keeps reduced axes with size 1.

#define KILN_REDUCTION(NAME)                                                      \
  array NAME(const array& a, bool keepdims = false, StreamOrDevice s = {});       \
  array NAME(const array& a, const std::vector<int>& axes, bool keepdims = false, \
             StreamOrDevice s = {});                                              \
  array NAME(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
/** Sum; bool and small integers accumulate in int32/uint32 as MLX. */
KILN_REDUCTION(sum)
KILN_REDUCTION(prod)
KILN_REDUCTION(max)
KILN_REDUCTION(min)
/** Mean; integer inputs give float32. */
KILN_REDUCTION(mean)
/** Logical reductions; bool result. */
KILN_REDUCTION(all)
KILN_REDUCTION(any)
/** log(sum(exp(a))) computed stably; complex64 as MLX (shifted by the lexicographic max). */
KILN_REDUCTION(logsumexp)
#undef KILN_REDUCTION

/** Variance and standard deviation with `ddof` delta degrees of freedom. */
array var(const array& a, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});
array var(const array& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0,
          StreamOrDevice s = {});
array var(const array& a, int axis, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});
array std(const array& a, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});
array std(const array& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0,
          StreamOrDevice s = {});
array std(const array& a, int axis, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});

/** Index (uint32) of the first maximum / minimum, over the flattened array or one axis. */
array argmax(const array& a, bool keepdims = false, StreamOrDevice s = {});
array argmax(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
array argmin(const array& a, bool keepdims = false, StreamOrDevice s = {});
array argmin(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

/** exp(a - logsumexp(a)) along the axes, computed stably; complex64 in, complex64 out. */
array softmax(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array softmax(const array& a, int axis = -1, StreamOrDevice s = {});

/** Inclusive (or exclusive) cumulative sum / product along `axis`, optionally reversed. */
array cumsum(const array& a, int axis, bool reverse = false, bool inclusive = true,
             StreamOrDevice s = {});
array cumprod(const array& a, int axis, bool reverse = false, bool inclusive = true,
              StreamOrDevice s = {});

// ---------------------------------------------------------------- linear algebra (ops_linalg.cpp)

/**
 * Matrix product with NumPy semantics: 1-d operands are promoted to matrices and the added
 * axis removed; leading (batch) axes broadcast. float32/float64 use BLAS; float16 and
 * bfloat16 accumulate in float32. Integer inputs are an error (as MLX).
 */
array matmul(const array& a, const array& b, StreamOrDevice s = {});
/** alpha * (a @ b) + beta * c, with c broadcast to the product's shape. */
array addmm(array c, array a, array b, float alpha = 1.0f, float beta = 1.0f,
            StreamOrDevice s = {});
/** Sum over the last axis of a and b: sum(a * b, -1) for vectors, matmul otherwise. */
array inner(const array& a, const array& b, StreamOrDevice s = {});
array outer(const array& a, const array& b, StreamOrDevice s = {});

// ---------------------------------------------------------------- indexing (ops_indexing.cpp)

/** Elements at `indices` of the flattened array (negative indices wrap). */
array take(const array& a, const array& indices, StreamOrDevice s = {});
/** Slices at `indices` along `axis`: result shape a.shape[:axis] + indices.shape +
 * a.shape[axis+1:]. */
array take(const array& a, const array& indices, int axis, StreamOrDevice s = {});
array take(const array& a, int index, int axis, StreamOrDevice s = {});
/** NumPy take_along_axis: `indices` broadcasts against `a` except along `axis`. */
array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s = {});
/** `a` with `values` written at `indices` along `axis` (NumPy put_along_axis). */
array put_along_axis(const array& a, const array& indices, const array& values, int axis,
                     StreamOrDevice s = {});
/**
 * General gather: `indices[i]` indexes axis `axes[i]` of `a` (all index arrays broadcast
 * together); `slice_sizes` gives the extent taken along every axis of `a`. Result shape:
 * broadcast index shape + slice_sizes.
 */
array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
             const Shape& slice_sizes, StreamOrDevice s = {});
/**
 * General scatter, the inverse of gather: writes `updates` (shape: broadcast index shape +
 * slice shape) into `a` at `indices` along `axes`. Duplicate indices: scatter keeps the
 * update of the last index position (NumPy's rule, on the CPU and the GPU); the others
 * combine all (add, multiply, max, min).
 */
array scatter(const array& a, const std::vector<array>& indices, const array& updates,
              const std::vector<int>& axes, StreamOrDevice s = {});
array scatter_add(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s = {});
array scatter_prod(const array& a, const std::vector<array>& indices, const array& updates,
                   const std::vector<int>& axes, StreamOrDevice s = {});
array scatter_max(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s = {});
array scatter_min(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s = {});

/** Sorted copy / sorting permutation (uint32) along `axis` (flattened when absent); stable. */
array sort(const array& a, int axis, StreamOrDevice s = {});
array sort(const array& a, StreamOrDevice s = {});
array argsort(const array& a, int axis, StreamOrDevice s = {});
array argsort(const array& a, StreamOrDevice s = {});

// ---------------------------------------------------------------- NumPy-style ops built on the
// above (ops_numpy.cpp, ops_einsum.cpp): MLX's names and semantics.

/** trunc: rounds toward zero (floating inputs; integers are returned unchanged). */
array trunc(const array& a, StreamOrDevice s = {});
/** Radians to degrees and back; integer inputs are computed in float32. */
array degrees(const array& a, StreamOrDevice s = {});
array radians(const array& a, StreamOrDevice s = {});
/** Logical exclusive or of the truthiness of `a` and `b` (bool result). */
array logical_xor(const array& a, const array& b, StreamOrDevice s = {});
/** (floor_divide(a, b), remainder(a, b)); both have zero derivatives, as MLX's divmod. */
std::vector<array> divmod(const array& a, const array& b, StreamOrDevice s = {});
/** NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (default: the largest and
 * lowest finite values of the dtype). Non-floating inputs are returned unchanged. */
array nan_to_num(const array& a, float nan = 0.0f, std::optional<float> posinf = std::nullopt,
                 std::optional<float> neginf = std::nullopt, StreamOrDevice s = {});

/** Reverses the order of elements along `axes` (all axes when empty); a strided view. */
array flip(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array flip(const array& a, StreamOrDevice s = {});
/** Rolls elements by `shift` along `axes` (the flattened array when no axes are given);
 * elements pushed off one end come back at the other. */
array roll(const array& a, int shift, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, const std::vector<int>& axes, StreamOrDevice s = {});
/** Views with at least 1, 2 or 3 dimensions (NumPy's rules for where the new axes go). */
array atleast_1d(const array& a, StreamOrDevice s = {});
array atleast_2d(const array& a, StreamOrDevice s = {});
array atleast_3d(const array& a, StreamOrDevice s = {});
/** Splits `axis` into `shape` (one entry may be -1). */
array unflatten(const array& a, int axis, Shape shape, StreamOrDevice s = {});
/** The slices of `a` along `axis`, with that axis removed. */
std::vector<array> unstack(const array& a, int axis = 0, StreamOrDevice s = {});
/** Swaps the last two axes. Throws for fewer than 2 dimensions. */
array matrix_transpose(const array& a, StreamOrDevice s = {});
/** Reinterprets the bytes of `a` as `dtype`; the last axis scales by the size ratio.
 * Throws when the last axis (or a 0-d array) cannot be split or merged evenly. */
array view(const array& a, Dtype dtype, StreamOrDevice s = {});
/** Coordinate grids: "xy" (Cartesian, the default) or "ij" (matrix) indexing. */
std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse = false,
                            const std::string& indexing = "xy", StreamOrDevice s = {});
/** The `offset`-th diagonal of the (axis1, axis2) planes, as the last axis of the result. */
array diagonal(const array& a, int offset = 0, int axis1 = 0, int axis2 = 1, StreamOrDevice s = {});
/** For a 1-d input, a square matrix with `a` on the k-th diagonal; for a 2-d input, its k-th
 * diagonal. */
array diag(const array& a, int k = 0, StreamOrDevice s = {});
/** Sum along the `offset`-th diagonal of the (axis1, axis2) planes. */
array trace(const array& a, int offset = 0, int axis1 = 0, int axis2 = 1,
            std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
/** The n-th discrete difference along `axis`: a[1:] - a[:-1], n times. */
array diff(const array& a, int n = 1, int axis = -1, StreamOrDevice s = {});

/** An n x m matrix with ones at and below the k-th diagonal. */
array tri(int n, int m, int k = 0, Dtype dtype = float32, StreamOrDevice s = {});
/** Window functions of length M (NumPy's definitions), float32. */
array bartlett(int M, StreamOrDevice s = {});
array blackman(int M, StreamOrDevice s = {});
array hamming(int M, StreamOrDevice s = {});
array hanning(int M, StreamOrDevice s = {});

/** Number of non-zero elements (uint32), over all axes or the given ones. */
array count_nonzero(const array& a, const std::vector<int>& axes, bool keepdims = false,
                    StreamOrDevice s = {});
array count_nonzero(const array& a, bool keepdims = false, StreamOrDevice s = {});
/** (min, max) over the axes (all when empty). */
std::vector<array> minmax(const array& a, const std::vector<int>& axes, bool keepdims = false,
                          StreamOrDevice s = {});
/** Cumulative maximum / minimum / log-sum-exp along `axis`, as cumsum. */
array cummax(const array& a, int axis, bool reverse = false, bool inclusive = true,
             StreamOrDevice s = {});
array cummin(const array& a, int axis, bool reverse = false, bool inclusive = true,
             StreamOrDevice s = {});
array logcumsumexp(const array& a, int axis, bool reverse = false, bool inclusive = true,
                   StreamOrDevice s = {});

/** Contraction of the last `axes` axes of a with the first `axes` axes of b (NumPy). */
array tensordot(const array& a, const array& b, int axes = 2, StreamOrDevice s = {});
/** Contraction of a's axes `axes_a` with b's `axes_b`, in pairs. */
array tensordot(const array& a, const array& b, const std::vector<int>& axes_a,
                const std::vector<int>& axes_b, StreamOrDevice s = {});
/** sum(conj(a) * b, axis) with broadcasting. */
array vecdot(const array& a, const array& b, int axis = -1, StreamOrDevice s = {});
/** Kronecker product. */
array kron(const array& a, const array& b, StreamOrDevice s = {});
/** Einstein summation (NumPy's subscripts, with "->" and "..."), contracted pairwise along
 * a greedy path of matrix products. Throws [einsum] for malformed subscripts. */
array einsum(const std::string& subscripts, const std::vector<array>& operands,
             StreamOrDevice s = {});
/** The pairwise contraction path einsum takes and a printable report of it. */
std::pair<std::vector<std::vector<int>>, std::string> einsum_path(
    const std::string& subscripts, const std::vector<array>& operands);
/** Walsh-Hadamard transform along the last axis (its length n must be m * 2^k with m in
 * {1, 12, 20, 28}), multiplied by `scale` (default 1/sqrt(n)). */
array hadamard_transform(const array& a, std::optional<float> scale = std::nullopt,
                         StreamOrDevice s = {});
/** Matrix products of a[lhs_indices] and b[rhs_indices] (indices into the broadcast batch
 * axes of each operand; absent means all, in order), MLX's gather_mm. */
array gather_mm(const array& a, const array& b, std::optional<array> lhs_indices = std::nullopt,
                std::optional<array> rhs_indices = std::nullopt, bool sorted_indices = false,
                StreamOrDevice s = {});
/** Matrix products over segments of the contraction axis: `segments` (..., 2) holds
 * [start, end) pairs along K; the result has shape segments.shape[:-1] + (M, N). */
array segmented_mm(const array& a, const array& b, const array& segments, StreamOrDevice s = {});
/** matmul with block masks (block_size 32 or 64): `mask_out` (.., M/bs, N/bs) masks output
 * blocks, `mask_lhs` (.., M/bs, K/bs) and `mask_rhs` (.., K/bs, N/bs) input blocks; bool
 * masks select, floating masks also scale. */
array block_masked_mm(const array& a, const array& b, int block_size = 64,
                      std::optional<array> mask_out = std::nullopt,
                      std::optional<array> mask_lhs = std::nullopt,
                      std::optional<array> mask_rhs = std::nullopt, StreamOrDevice s = {});

/** Float to 8-bit float e4m3 (uint8 storage, saturating, round to nearest even) and back. */
array to_fp8(const array& a, StreamOrDevice s = {});
array from_fp8(const array& a, Dtype dtype = bfloat16, StreamOrDevice s = {});

/** MLX's slice with start indices known only at run time: the block of `slice_size` (one
 * size per axis of `a`) starting at `start[i]` along `axes[i]` (0 along the others); starts
 * are clamped so the block fits. */
array dynamic_slice(const array& a, const array& start, const std::vector<int>& axes,
                    const Shape& slice_size, StreamOrDevice s = {});
/** `src` with the block of `update`'s shape at run-time `start` (along `axes`) replaced. */
array dynamic_slice_update(const array& src, const array& update, const array& start,
                           const std::vector<int>& axes, StreamOrDevice s = {});
/** pad with NumPy's non-constant modes: "edge" (repeat the border), "reflect" (mirror
 * without the border) or "symmetric" (mirror with it), or "constant" (`pad_value`). Throws
 * for an unknown mode, or for extending an empty axis other than with constants. */
array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width,
          const std::string& mode, const array& pad_value = array(0), StreamOrDevice s = {});

/** `inputs` returned as new arrays whose evaluation also waits for `dependencies`. */
std::vector<array> depends(const std::vector<array>& inputs,
                           const std::vector<array>& dependencies);
// ---------------------------------------------------------------- convolution (ops_conv.cpp)
// Channels-last layouts (MLX's): input (N, spatial..., C_in), weight (C_out, kernel...,
// C_in / groups), output (N, spatial..., C_out), 1 to 3 spatial axes. float32, float64,
// float16, bfloat16 (the half types accumulate in float32); integers are an error. Errors
// (std::invalid_argument, tag [conv]): mismatched ranks or channels, C_out not divisible by
// groups, non-positive strides or dilations, a padded input smaller than the dilated kernel.

/**
 * The general convolution: per spatial axis a stride, padding before (`padding_lo`) and after
 * (`padding_hi`, default: as padding_lo; may be negative), kernel dilation and input dilation
 * (zeros inserted between input elements); `flip` reverses the kernel (a true convolution
 * instead of a cross-correlation). Each vector may be empty (default), one value for every
 * axis, or one per axis.
 */
array conv_general(array input, array weight, std::vector<int> stride = {},
                   std::vector<int> padding_lo = {}, std::vector<int> padding_hi = {},
                   std::vector<int> kernel_dilation = {}, std::vector<int> input_dilation = {},
                   int groups = 1, bool flip = false, StreamOrDevice s = {});
/** 1-d convolution: input (N, L, C_in), weight (C_out, K, C_in / groups). */
array conv1d(const array& input, const array& weight, int stride = 1, int padding = 0,
             int dilation = 1, int groups = 1, StreamOrDevice s = {});
/** 2-d convolution: input (N, H, W, C_in), weight (C_out, KH, KW, C_in / groups). */
array conv2d(const array& input, const array& weight, const std::pair<int, int>& stride = {1, 1},
             const std::pair<int, int>& padding = {0, 0},
             const std::pair<int, int>& dilation = {1, 1}, int groups = 1, StreamOrDevice s = {});
/** 3-d convolution: input (N, D, H, W, C_in), weight (C_out, KD, KH, KW, C_in / groups). */
array conv3d(const array& input, const array& weight,
             const std::tuple<int, int, int>& stride = {1, 1, 1},
             const std::tuple<int, int, int>& padding = {0, 0, 0},
             const std::tuple<int, int, int>& dilation = {1, 1, 1}, int groups = 1,
             StreamOrDevice s = {});
/**
 * Transposed convolutions (the gradient of conv with respect to its input), MLX's layout:
 * weight (C_out, kernel..., C_in / groups). Output size per axis:
 * (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1.
 */
array conv_transpose1d(const array& input, const array& weight, int stride = 1, int padding = 0,
                       int dilation = 1, int output_padding = 0, int groups = 1,
                       StreamOrDevice s = {});
array conv_transpose2d(const array& input, const array& weight,
                       const std::pair<int, int>& stride = {1, 1},
                       const std::pair<int, int>& padding = {0, 0},
                       const std::pair<int, int>& dilation = {1, 1},
                       const std::pair<int, int>& output_padding = {0, 0}, int groups = 1,
                       StreamOrDevice s = {});
array conv_transpose3d(const array& input, const array& weight,
                       const std::tuple<int, int, int>& stride = {1, 1, 1},
                       const std::tuple<int, int, int>& padding = {0, 0, 0},
                       const std::tuple<int, int, int>& dilation = {1, 1, 1},
                       const std::tuple<int, int, int>& output_padding = {0, 0, 0}, int groups = 1,
                       StreamOrDevice s = {});
/** NumPy's 1-d convolve: "full" (n + m - 1), "same" (max(n, m)) or "valid" (|n - m| + 1). */
array convolve(const array& a, const array& v, const std::string& mode = "full",
               StreamOrDevice s = {});
// ---------------------------------------------------------------- selection (ops_sort.cpp)
// Along one axis (negative counts from the end; the flattened array when absent). A bad axis
// throws std::out_of_range, a bad k / kth std::invalid_argument (MLX's IndexError and
// ValueError). Every dtype: complex numbers order by real part, then imaginary part (MLX's
// order). GPU: radix select, no sort (backend/cuda/device/radix_select.cuh).

/**
 * A copy of `a` partitioned around its element of sorted rank `kth` along `axis` (kth in
 * [-n, n), negative counting from the end): that element at position kth, smaller ones before
 * it, larger ones after, NaN ordering last as in sort. The order is the stable three-way
 * partition (smaller elements in their order, then the equal ones, then the larger), the same
 * on every device. Gradient: through the permutation.
 */
array partition(const array& a, int kth, int axis, StreamOrDevice s = {});
array partition(const array& a, int kth, StreamOrDevice s = {});
/** The uint32 positions along `axis` that partition `a` as partition() does. */
array argpartition(const array& a, int kth, int axis, StreamOrDevice s = {});
array argpartition(const array& a, int kth, StreamOrDevice s = {});
/**
 * The `k` largest elements along `axis` (0 <= k <= n; NaN counts as largest), in the order
 * of positions n - k .. n - 1 of partition(a, n - k, axis): not sorted. Shape: `a`'s with k
 * along the axis (the flattened array gives shape {k}). Gradient: to the selected elements.
 */
array topk(const array& a, int k, int axis, StreamOrDevice s = {});
array topk(const array& a, int k, StreamOrDevice s = {});
/**
 * Median over all axes, one axis or a list of axes: the middle element of the sorted values,
 * or the mean of the two middle ones; NaN where the values hold a NaN. Floating and complex
 * inputs keep their dtype, others give float32. An empty reduction throws std::invalid_argument, a
 * bad axis std::out_of_range. Gradient: to the middle element(s) (half each for two), none where
 * NaN.
 */
array median(const array& a, bool keepdims = false, StreamOrDevice s = {});
array median(const array& a, const std::vector<int>& axes, bool keepdims = false,
             StreamOrDevice s = {});
array median(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
/**
 * For each element of `values` (any shape), the uint32 index where it would be inserted into
 * the 1-D ascending `sorted_sequence` to keep it sorted: with side "left" the count of
 * elements ordering before it, with "right" the count not ordering after it (NaN orders
 * last). Both compare in their promoted dtype. Throws std::invalid_argument for a sequence
 * that is not 1-D or a bad side. No gradient (integer output).
 */
array searchsorted(const array& sorted_sequence, const array& values,
                   const std::string& side = "left", StreamOrDevice s = {});
/**
 * The sorted unique elements of the flattened `a`, padded or truncated to `size` entries
 * (static shapes, as MLX): equal values (-0.0 and 0.0 alike) form one entry, every NaN its
 * own. Returns {values} and, on request and in this order, the uint32 index of each entry's
 * first occurrence in the flattened array, the uint32 inverse (a's shape: the entry of each
 * element, clamped to size - 1) and the int32 count of each entry. Entries past the last
 * unique value hold `fill_value` (cast to a's dtype; default: the first entry), the first
 * entry's index and a count of 0. Throws std::invalid_argument for a negative size, a fill
 * value with more than one element, or an empty `a` with size > 0 and no fill value.
 * Gradient of the values: to each entry's first occurrence (and to the fill value).
 */
std::vector<array> unique(const array& a, int size, bool return_index = false,
                          bool return_inverse = false, bool return_counts = false,
                          const std::optional<array>& fill_value = std::nullopt,
                          StreamOrDevice s = {});

// ---------------------------------------------------------------- operators

array operator-(const array& a);
array operator!(const array& a);
array operator~(const array& a);
array operator+(const array& a, const array& b);
array operator-(const array& a, const array& b);
array operator*(const array& a, const array& b);
array operator/(const array& a, const array& b);
array operator%(const array& a, const array& b);
array operator==(const array& a, const array& b);
array operator!=(const array& a, const array& b);
array operator<(const array& a, const array& b);
array operator<=(const array& a, const array& b);
array operator>(const array& a, const array& b);
array operator>=(const array& a, const array& b);
array operator&&(const array& a, const array& b);
array operator||(const array& a, const array& b);
array operator&(const array& a, const array& b);
array operator|(const array& a, const array& b);
array operator^(const array& a, const array& b);
array operator<<(const array& a, const array& b);
array operator>>(const array& a, const array& b);

// A C++ scalar on either side becomes a 0-d array of its own dtype, as in MLX's C++ API.
#define KILN_SCALAR_OPERATOR(OP)                                                         \
  template <typename T>                                                                  \
  requires std::is_arithmetic_v<T> || is_half_v<T> || is_complex_v<T> array operator OP( \
      const array& a, T b) {                                                             \
    return a OP array(b);                                                                \
  }                                                                                      \
  template <typename T>                                                                  \
  requires std::is_arithmetic_v<T> || is_half_v<T> || is_complex_v<T> array operator OP( \
      T a, const array& b) {                                                             \
    return array(a) OP b;                                                                \
  }
KILN_SCALAR_OPERATOR(+)
KILN_SCALAR_OPERATOR(-)
KILN_SCALAR_OPERATOR(*)
KILN_SCALAR_OPERATOR(/)
KILN_SCALAR_OPERATOR(%)
KILN_SCALAR_OPERATOR(==)
KILN_SCALAR_OPERATOR(!=)
KILN_SCALAR_OPERATOR(<)
KILN_SCALAR_OPERATOR(<=)
KILN_SCALAR_OPERATOR(>)
KILN_SCALAR_OPERATOR(>=)
#undef KILN_SCALAR_OPERATOR

}  // namespace kiln
