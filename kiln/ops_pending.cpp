// TEMPORARY during parallel development: weak definitions of ops whose families have not
// landed yet, so the library links. A real (strong) definition replaces each automatically.
// This file is deleted once every family has landed.
#include <stdexcept>
#include <string>

#include "kiln/ops.h"

#define KILN_PENDING __attribute__((weak))

namespace kiln {
namespace {
[[noreturn]] void pending(const char* op) {
  throw std::logic_error(std::string("[") + op + "] is not implemented yet.");
}
}  // namespace

KILN_PENDING array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s) { pending("arange"); }
KILN_PENDING array arange(double start, double stop, double step, StreamOrDevice s) { pending("arange"); }
KILN_PENDING array arange(double start, double stop, Dtype dtype, StreamOrDevice s) { pending("arange"); }
KILN_PENDING array arange(double start, double stop, StreamOrDevice s) { pending("arange"); }
KILN_PENDING array arange(double stop, Dtype dtype, StreamOrDevice s) { pending("arange"); }
KILN_PENDING array arange(double stop, StreamOrDevice s) { pending("arange"); }
KILN_PENDING array arange(int start, int stop, int step, StreamOrDevice s) { pending("arange"); }
KILN_PENDING array arange(int start, int stop, StreamOrDevice s) { pending("arange"); }
KILN_PENDING array arange(int stop, StreamOrDevice s) { pending("arange"); }
KILN_PENDING array linspace(double start, double stop, int num, Dtype dtype, StreamOrDevice s) { pending("linspace"); }
KILN_PENDING array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s) { pending("full"); }
KILN_PENDING array full(Shape shape, array vals, StreamOrDevice s) { pending("full"); }
KILN_PENDING array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s) { pending("zeros"); }
KILN_PENDING array zeros_like(const array& a, StreamOrDevice s) { pending("zeros_like"); }
KILN_PENDING array ones(const Shape& shape, Dtype dtype, StreamOrDevice s) { pending("ones"); }
KILN_PENDING array ones_like(const array& a, StreamOrDevice s) { pending("ones_like"); }
KILN_PENDING array full_like(const array& a, array vals, StreamOrDevice s) { pending("full_like"); }
KILN_PENDING array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s) { pending("eye"); }
KILN_PENDING array identity(int n, Dtype dtype, StreamOrDevice s) { pending("identity"); }
KILN_PENDING array tril(array x, int k, StreamOrDevice s) { pending("tril"); }
KILN_PENDING array triu(array x, int k, StreamOrDevice s) { pending("triu"); }
KILN_PENDING array astype(array a, Dtype dtype, StreamOrDevice s) { pending("astype"); }
KILN_PENDING array copy(array a, StreamOrDevice s) { pending("copy"); }
KILN_PENDING array contiguous(const array& a, bool allow_col_major, StreamOrDevice s) { pending("contiguous"); }
KILN_PENDING array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s) { pending("as_strided"); }
KILN_PENDING array reshape(const array& a, Shape shape, StreamOrDevice s) { pending("reshape"); }
KILN_PENDING array flatten(const array& a, int start_axis, int end_axis, StreamOrDevice s) { pending("flatten"); }
KILN_PENDING array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s) { pending("squeeze"); }
KILN_PENDING array squeeze(const array& a, int axis, StreamOrDevice s) { pending("squeeze"); }
KILN_PENDING array squeeze(const array& a, StreamOrDevice s) { pending("squeeze"); }
KILN_PENDING array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s) { pending("expand_dims"); }
KILN_PENDING array expand_dims(const array& a, int axis, StreamOrDevice s) { pending("expand_dims"); }
KILN_PENDING array transpose(const array& a, std::vector<int> axes, StreamOrDevice s) { pending("transpose"); }
KILN_PENDING array transpose(const array& a, StreamOrDevice s) { pending("transpose"); }
KILN_PENDING array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s) { pending("swapaxes"); }
KILN_PENDING array moveaxis(const array& a, int source, int destination, StreamOrDevice s) { pending("moveaxis"); }
KILN_PENDING array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s) { pending("broadcast_to"); }
KILN_PENDING std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s) { pending("broadcast_arrays"); }
KILN_PENDING array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s) { pending("slice"); }
KILN_PENDING array slice(const array& a, Shape start, Shape stop, StreamOrDevice s) { pending("slice"); }
KILN_PENDING array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides, StreamOrDevice s) { pending("slice_update"); }
KILN_PENDING array slice_update(const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s) { pending("slice_update"); }
KILN_PENDING std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s) { pending("split"); }
KILN_PENDING std::vector<array> split(const array& a, int num_splits, StreamOrDevice s) { pending("split"); }
KILN_PENDING std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s) { pending("split"); }
KILN_PENDING std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s) { pending("split"); }
KILN_PENDING array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s) { pending("concatenate"); }
KILN_PENDING array concatenate(std::vector<array> arrays, StreamOrDevice s) { pending("concatenate"); }
KILN_PENDING array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s) { pending("stack"); }
KILN_PENDING array stack(const std::vector<array>& arrays, StreamOrDevice s) { pending("stack"); }
KILN_PENDING array tile(const array& a, std::vector<int> reps, StreamOrDevice s) { pending("tile"); }
KILN_PENDING array repeat(const array& a, int repeats, int axis, StreamOrDevice s) { pending("repeat"); }
KILN_PENDING array repeat(const array& a, int repeats, StreamOrDevice s) { pending("repeat"); }
KILN_PENDING array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width, const array& pad_value, StreamOrDevice s) { pending("pad"); }
KILN_PENDING array abs(const array& a, StreamOrDevice s) { pending("abs"); }
KILN_PENDING array negative(const array& a, StreamOrDevice s) { pending("negative"); }
KILN_PENDING array sign(const array& a, StreamOrDevice s) { pending("sign"); }
KILN_PENDING array square(const array& a, StreamOrDevice s) { pending("square"); }
KILN_PENDING array sqrt(const array& a, StreamOrDevice s) { pending("sqrt"); }
KILN_PENDING array rsqrt(const array& a, StreamOrDevice s) { pending("rsqrt"); }
KILN_PENDING array reciprocal(const array& a, StreamOrDevice s) { pending("reciprocal"); }
KILN_PENDING array exp(const array& a, StreamOrDevice s) { pending("exp"); }
KILN_PENDING array expm1(const array& a, StreamOrDevice s) { pending("expm1"); }
KILN_PENDING array log(const array& a, StreamOrDevice s) { pending("log"); }
KILN_PENDING array log1p(const array& a, StreamOrDevice s) { pending("log1p"); }
KILN_PENDING array log2(const array& a, StreamOrDevice s) { pending("log2"); }
KILN_PENDING array log10(const array& a, StreamOrDevice s) { pending("log10"); }
KILN_PENDING array sin(const array& a, StreamOrDevice s) { pending("sin"); }
KILN_PENDING array cos(const array& a, StreamOrDevice s) { pending("cos"); }
KILN_PENDING array tan(const array& a, StreamOrDevice s) { pending("tan"); }
KILN_PENDING array arcsin(const array& a, StreamOrDevice s) { pending("arcsin"); }
KILN_PENDING array arccos(const array& a, StreamOrDevice s) { pending("arccos"); }
KILN_PENDING array arctan(const array& a, StreamOrDevice s) { pending("arctan"); }
KILN_PENDING array sinh(const array& a, StreamOrDevice s) { pending("sinh"); }
KILN_PENDING array cosh(const array& a, StreamOrDevice s) { pending("cosh"); }
KILN_PENDING array tanh(const array& a, StreamOrDevice s) { pending("tanh"); }
KILN_PENDING array arcsinh(const array& a, StreamOrDevice s) { pending("arcsinh"); }
KILN_PENDING array arccosh(const array& a, StreamOrDevice s) { pending("arccosh"); }
KILN_PENDING array arctanh(const array& a, StreamOrDevice s) { pending("arctanh"); }
KILN_PENDING array erf(const array& a, StreamOrDevice s) { pending("erf"); }
KILN_PENDING array erfinv(const array& a, StreamOrDevice s) { pending("erfinv"); }
KILN_PENDING array sigmoid(const array& a, StreamOrDevice s) { pending("sigmoid"); }
KILN_PENDING array floor(const array& a, StreamOrDevice s) { pending("floor"); }
KILN_PENDING array ceil(const array& a, StreamOrDevice s) { pending("ceil"); }
KILN_PENDING array round(const array& a, int decimals, StreamOrDevice s) { pending("round"); }
KILN_PENDING array logical_not(const array& a, StreamOrDevice s) { pending("logical_not"); }
KILN_PENDING array bitwise_invert(const array& a, StreamOrDevice s) { pending("bitwise_invert"); }
KILN_PENDING array isnan(const array& a, StreamOrDevice s) { pending("isnan"); }
KILN_PENDING array isinf(const array& a, StreamOrDevice s) { pending("isinf"); }
KILN_PENDING array isfinite(const array& a, StreamOrDevice s) { pending("isfinite"); }
KILN_PENDING array isposinf(const array& a, StreamOrDevice s) { pending("isposinf"); }
KILN_PENDING array isneginf(const array& a, StreamOrDevice s) { pending("isneginf"); }
KILN_PENDING array stop_gradient(const array& a, StreamOrDevice s) { pending("stop_gradient"); }
KILN_PENDING array real(const array& a, StreamOrDevice s) { pending("real"); }
KILN_PENDING array imag(const array& a, StreamOrDevice s) { pending("imag"); }
KILN_PENDING array conjugate(const array& a, StreamOrDevice s) { pending("conjugate"); }
KILN_PENDING array add(const array& a, const array& b, StreamOrDevice s) { pending("add"); }
KILN_PENDING array subtract(const array& a, const array& b, StreamOrDevice s) { pending("subtract"); }
KILN_PENDING array multiply(const array& a, const array& b, StreamOrDevice s) { pending("multiply"); }
KILN_PENDING array divide(const array& a, const array& b, StreamOrDevice s) { pending("divide"); }
KILN_PENDING array floor_divide(const array& a, const array& b, StreamOrDevice s) { pending("floor_divide"); }
KILN_PENDING array remainder(const array& a, const array& b, StreamOrDevice s) { pending("remainder"); }
KILN_PENDING array power(const array& a, const array& b, StreamOrDevice s) { pending("power"); }
KILN_PENDING array maximum(const array& a, const array& b, StreamOrDevice s) { pending("maximum"); }
KILN_PENDING array minimum(const array& a, const array& b, StreamOrDevice s) { pending("minimum"); }
KILN_PENDING array equal(const array& a, const array& b, StreamOrDevice s) { pending("equal"); }
KILN_PENDING array not_equal(const array& a, const array& b, StreamOrDevice s) { pending("not_equal"); }
KILN_PENDING array less(const array& a, const array& b, StreamOrDevice s) { pending("less"); }
KILN_PENDING array less_equal(const array& a, const array& b, StreamOrDevice s) { pending("less_equal"); }
KILN_PENDING array greater(const array& a, const array& b, StreamOrDevice s) { pending("greater"); }
KILN_PENDING array greater_equal(const array& a, const array& b, StreamOrDevice s) { pending("greater_equal"); }
KILN_PENDING array logical_and(const array& a, const array& b, StreamOrDevice s) { pending("logical_and"); }
KILN_PENDING array logical_or(const array& a, const array& b, StreamOrDevice s) { pending("logical_or"); }
KILN_PENDING array bitwise_and(const array& a, const array& b, StreamOrDevice s) { pending("bitwise_and"); }
KILN_PENDING array bitwise_or(const array& a, const array& b, StreamOrDevice s) { pending("bitwise_or"); }
KILN_PENDING array bitwise_xor(const array& a, const array& b, StreamOrDevice s) { pending("bitwise_xor"); }
KILN_PENDING array left_shift(const array& a, const array& b, StreamOrDevice s) { pending("left_shift"); }
KILN_PENDING array right_shift(const array& a, const array& b, StreamOrDevice s) { pending("right_shift"); }
KILN_PENDING array arctan2(const array& a, const array& b, StreamOrDevice s) { pending("arctan2"); }
KILN_PENDING array logaddexp(const array& a, const array& b, StreamOrDevice s) { pending("logaddexp"); }
KILN_PENDING array where(const array& condition, const array& x, const array& y, StreamOrDevice s) { pending("where"); }
KILN_PENDING array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max, StreamOrDevice s) { pending("clip"); }
KILN_PENDING array isclose(const array& a, const array& b, double rtol, double atol, bool equal_nan, StreamOrDevice s) { pending("isclose"); }
KILN_PENDING array allclose(const array& a, const array& b, double rtol, double atol, bool equal_nan, StreamOrDevice s) { pending("allclose"); }
KILN_PENDING array array_equal(const array& a, const array& b, bool equal_nan, StreamOrDevice s) { pending("array_equal"); }
KILN_PENDING array sum(const array& a, bool keepdims, StreamOrDevice s) { pending("sum"); }
KILN_PENDING array sum(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) { pending("sum"); }
KILN_PENDING array sum(const array& a, int axis, bool keepdims, StreamOrDevice s) { pending("sum"); }
KILN_PENDING array prod(const array& a, bool keepdims, StreamOrDevice s) { pending("prod"); }
KILN_PENDING array prod(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) { pending("prod"); }
KILN_PENDING array prod(const array& a, int axis, bool keepdims, StreamOrDevice s) { pending("prod"); }
KILN_PENDING array max(const array& a, bool keepdims, StreamOrDevice s) { pending("max"); }
KILN_PENDING array max(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) { pending("max"); }
KILN_PENDING array max(const array& a, int axis, bool keepdims, StreamOrDevice s) { pending("max"); }
KILN_PENDING array min(const array& a, bool keepdims, StreamOrDevice s) { pending("min"); }
KILN_PENDING array min(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) { pending("min"); }
KILN_PENDING array min(const array& a, int axis, bool keepdims, StreamOrDevice s) { pending("min"); }
KILN_PENDING array mean(const array& a, bool keepdims, StreamOrDevice s) { pending("mean"); }
KILN_PENDING array mean(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) { pending("mean"); }
KILN_PENDING array mean(const array& a, int axis, bool keepdims, StreamOrDevice s) { pending("mean"); }
KILN_PENDING array all(const array& a, bool keepdims, StreamOrDevice s) { pending("all"); }
KILN_PENDING array all(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) { pending("all"); }
KILN_PENDING array all(const array& a, int axis, bool keepdims, StreamOrDevice s) { pending("all"); }
KILN_PENDING array any(const array& a, bool keepdims, StreamOrDevice s) { pending("any"); }
KILN_PENDING array any(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) { pending("any"); }
KILN_PENDING array any(const array& a, int axis, bool keepdims, StreamOrDevice s) { pending("any"); }
KILN_PENDING array logsumexp(const array& a, bool keepdims, StreamOrDevice s) { pending("logsumexp"); }
KILN_PENDING array logsumexp(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) { pending("logsumexp"); }
KILN_PENDING array logsumexp(const array& a, int axis, bool keepdims, StreamOrDevice s) { pending("logsumexp"); }
KILN_PENDING array var(const array& a, bool keepdims, int ddof, StreamOrDevice s) { pending("var"); }
KILN_PENDING array var(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s) { pending("var"); }
KILN_PENDING array var(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) { pending("var"); }
KILN_PENDING array std(const array& a, bool keepdims, int ddof, StreamOrDevice s) { pending("std"); }
KILN_PENDING array std(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s) { pending("std"); }
KILN_PENDING array std(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) { pending("std"); }
KILN_PENDING array argmax(const array& a, bool keepdims, StreamOrDevice s) { pending("argmax"); }
KILN_PENDING array argmax(const array& a, int axis, bool keepdims, StreamOrDevice s) { pending("argmax"); }
KILN_PENDING array argmin(const array& a, bool keepdims, StreamOrDevice s) { pending("argmin"); }
KILN_PENDING array argmin(const array& a, int axis, bool keepdims, StreamOrDevice s) { pending("argmin"); }
KILN_PENDING array softmax(const array& a, const std::vector<int>& axes, StreamOrDevice s) { pending("softmax"); }
KILN_PENDING array softmax(const array& a, int axis, StreamOrDevice s) { pending("softmax"); }
KILN_PENDING array cumsum(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) { pending("cumsum"); }
KILN_PENDING array cumprod(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) { pending("cumprod"); }
KILN_PENDING array matmul(const array& a, const array& b, StreamOrDevice s) { pending("matmul"); }
KILN_PENDING array addmm(array c, array a, array b, float alpha, float beta, StreamOrDevice s) { pending("addmm"); }
KILN_PENDING array inner(const array& a, const array& b, StreamOrDevice s) { pending("inner"); }
KILN_PENDING array outer(const array& a, const array& b, StreamOrDevice s) { pending("outer"); }
KILN_PENDING array take(const array& a, const array& indices, StreamOrDevice s) { pending("take"); }
KILN_PENDING array take(const array& a, const array& indices, int axis, StreamOrDevice s) { pending("take"); }
KILN_PENDING array take(const array& a, int index, int axis, StreamOrDevice s) { pending("take"); }
KILN_PENDING array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s) { pending("take_along_axis"); }
KILN_PENDING array put_along_axis(const array& a, const array& indices, const array& values, int axis, StreamOrDevice s) { pending("put_along_axis"); }
KILN_PENDING array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes, const Shape& slice_sizes, StreamOrDevice s) { pending("gather"); }
KILN_PENDING array scatter(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes, StreamOrDevice s) { pending("scatter"); }
KILN_PENDING array scatter_add(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes, StreamOrDevice s) { pending("scatter_add"); }
KILN_PENDING array scatter_prod(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes, StreamOrDevice s) { pending("scatter_prod"); }
KILN_PENDING array scatter_max(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes, StreamOrDevice s) { pending("scatter_max"); }
KILN_PENDING array scatter_min(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes, StreamOrDevice s) { pending("scatter_min"); }
KILN_PENDING array sort(const array& a, int axis, StreamOrDevice s) { pending("sort"); }
KILN_PENDING array sort(const array& a, StreamOrDevice s) { pending("sort"); }
KILN_PENDING array argsort(const array& a, int axis, StreamOrDevice s) { pending("argsort"); }
KILN_PENDING array argsort(const array& a, StreamOrDevice s) { pending("argsort"); }
KILN_PENDING array operator-(const array& a) { pending("operator-"); }
KILN_PENDING array operator!(const array& a) { pending("operator!"); }
KILN_PENDING array operator~(const array& a) { pending("operator~"); }
KILN_PENDING array operator+(const array& a, const array& b) { pending("operator+"); }
KILN_PENDING array operator-(const array& a, const array& b) { pending("operator-"); }
KILN_PENDING array operator*(const array& a, const array& b) { pending("operator*"); }
KILN_PENDING array operator/(const array& a, const array& b) { pending("operator/"); }
KILN_PENDING array operator%(const array& a, const array& b) { pending("operator%"); }
KILN_PENDING array operator==(const array& a, const array& b) { pending("operator=="); }
KILN_PENDING array operator!=(const array& a, const array& b) { pending("operator!="); }
KILN_PENDING array operator<(const array& a, const array& b) { pending("operator<"); }
KILN_PENDING array operator<=(const array& a, const array& b) { pending("operator<="); }
KILN_PENDING array operator>(const array& a, const array& b) { pending("operator>"); }
KILN_PENDING array operator>=(const array& a, const array& b) { pending("operator>="); }
KILN_PENDING array operator&&(const array& a, const array& b) { pending("operator&&"); }
KILN_PENDING array operator||(const array& a, const array& b) { pending("operator||"); }
KILN_PENDING array operator&(const array& a, const array& b) { pending("operator&"); }
KILN_PENDING array operator|(const array& a, const array& b) { pending("operator|"); }
KILN_PENDING array operator^(const array& a, const array& b) { pending("operator^"); }
KILN_PENDING array operator<<(const array& a, const array& b) { pending("operator<<"); }
KILN_PENDING array operator>>(const array& a, const array& b) { pending("operator>>"); }

}  // namespace kiln
