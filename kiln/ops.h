// Operations: build the lazy graph. Names and semantics follow MLX and NumPy.
//
// Every op checks its arguments and throws std::invalid_argument tagged with the op's
// name and the offending values, e.g. "[matmul] Last dimension of a (4, 3) must match
// first of b (5, 2)."; every op takes the stream or device it runs on last (default: the
// default stream of the default device). Shapes broadcast as in NumPy.
#pragma once

#include <optional>
#include <string>
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
array linspace(double start, double stop, int num = 50, Dtype dtype = float32, StreamOrDevice s = {});

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
inline array zeros(const Shape& shape, StreamOrDevice s = {}) { return zeros(shape, float32, s); }
array zeros_like(const array& a, StreamOrDevice s = {});
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array ones(const Shape& shape, StreamOrDevice s = {}) { return ones(shape, float32, s); }
array ones_like(const array& a, StreamOrDevice s = {});
array full_like(const array& a, array vals, StreamOrDevice s = {});

/** An n x m matrix with ones on the k-th diagonal (k > 0 above the main diagonal). */
array eye(int n, int m, int k, Dtype dtype = float32, StreamOrDevice s = {});
inline array eye(int n, Dtype dtype, StreamOrDevice s = {}) { return eye(n, n, 0, dtype, s); }
inline array eye(int n, StreamOrDevice s = {}) { return eye(n, n, 0, float32, s); }
inline array eye(int n, int m, StreamOrDevice s = {}) { return eye(n, m, 0, float32, s); }
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
array slice_update(
    const array& src,
    const array& update,
    Shape start,
    Shape stop,
    Shape strides,
    StreamOrDevice s = {});
array slice_update(
    const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s = {});

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
array pad(
    const array& a,
    const std::vector<std::pair<int, int>>& pad_width,
    const array& pad_value = array(0),
    StreamOrDevice s = {});

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
array clip(
    const array& a,
    const std::optional<array>& a_min,
    const std::optional<array>& a_max,
    StreamOrDevice s = {});
/** |a - b| <= atol + rtol * |b| elementwise (NumPy isclose). */
array isclose(
    const array& a,
    const array& b,
    double rtol = 1e-5,
    double atol = 1e-8,
    bool equal_nan = false,
    StreamOrDevice s = {});
/** All of isclose, as a 0-d bool array. */
array allclose(
    const array& a,
    const array& b,
    double rtol = 1e-5,
    double atol = 1e-8,
    bool equal_nan = false,
    StreamOrDevice s = {});
/** Same shape and equal values, as a 0-d bool array (false for different shapes). */
array array_equal(const array& a, const array& b, bool equal_nan = false, StreamOrDevice s = {});

// ---------------------------------------------------------------- reductions (ops_reduce.cpp)
// Each reduces over all axes, one axis, or a list of axes (negative counts from the end,
// duplicates are an error); `keepdims` keeps reduced axes with size 1.

#define KILN_REDUCTION(NAME)                                                                  \
  array NAME(const array& a, bool keepdims = false, StreamOrDevice s = {});                  \
  array NAME(const array& a, const std::vector<int>& axes, bool keepdims = false,            \
             StreamOrDevice s = {});                                                         \
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
/** log(sum(exp(a))) computed stably. */
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

/** exp(a - logsumexp(a)) along the axes, computed stably. */
array softmax(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array softmax(const array& a, int axis = -1, StreamOrDevice s = {});

/** Inclusive (or exclusive) cumulative sum / product along `axis`, optionally reversed. */
array cumsum(const array& a, int axis, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cumprod(const array& a, int axis, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});

// ---------------------------------------------------------------- linear algebra (ops_linalg.cpp)

/**
 * Matrix product with NumPy semantics: 1-d operands are promoted to matrices and the added
 * axis removed; leading (batch) axes broadcast. float32/float64 use BLAS; float16 and
 * bfloat16 accumulate in float32. Integer inputs are an error (as MLX).
 */
array matmul(const array& a, const array& b, StreamOrDevice s = {});
/** alpha * (a @ b) + beta * c, with c broadcast to the product's shape. */
array addmm(
    array c, array a, array b, float alpha = 1.0f, float beta = 1.0f, StreamOrDevice s = {});
/** Sum over the last axis of a and b: sum(a * b, -1) for vectors, matmul otherwise. */
array inner(const array& a, const array& b, StreamOrDevice s = {});
array outer(const array& a, const array& b, StreamOrDevice s = {});

// ---------------------------------------------------------------- indexing (ops_indexing.cpp)

/** Elements at `indices` of the flattened array (negative indices wrap). */
array take(const array& a, const array& indices, StreamOrDevice s = {});
/** Slices at `indices` along `axis`: result shape a.shape[:axis] + indices.shape + a.shape[axis+1:]. */
array take(const array& a, const array& indices, int axis, StreamOrDevice s = {});
array take(const array& a, int index, int axis, StreamOrDevice s = {});
/** NumPy take_along_axis: `indices` broadcasts against `a` except along `axis`. */
array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s = {});
/** `a` with `values` written at `indices` along `axis` (NumPy put_along_axis). */
array put_along_axis(
    const array& a, const array& indices, const array& values, int axis, StreamOrDevice s = {});
/**
 * General gather: `indices[i]` indexes axis `axes[i]` of `a` (all index arrays broadcast
 * together); `slice_sizes` gives the extent taken along every axis of `a`. Result shape:
 * broadcast index shape + slice_sizes.
 */
array gather(
    const array& a,
    const std::vector<array>& indices,
    const std::vector<int>& axes,
    const Shape& slice_sizes,
    StreamOrDevice s = {});
/**
 * General scatter, the inverse of gather: writes `updates` (shape: broadcast index shape +
 * slice shape) into `a` at `indices` along `axes`. Duplicate indices: scatter keeps one
 * (unspecified which); the others combine all (add, multiply, max, min).
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
#define KILN_SCALAR_OPERATOR(OP)                                              \
  template <typename T>                                                       \
    requires std::is_arithmetic_v<T> || is_half_v<T> || is_complex_v<T>       \
  array operator OP(const array& a, T b) {                                    \
    return a OP array(b);                                                     \
  }                                                                           \
  template <typename T>                                                       \
    requires std::is_arithmetic_v<T> || is_half_v<T> || is_complex_v<T>       \
  array operator OP(T a, const array& b) {                                    \
    return array(a) OP b;                                                     \
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
