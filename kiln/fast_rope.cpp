// rope: argument checks, the node it builds and its transforms. Kernels:
// backend/cpu/fast_rope.cpp, backend/cuda/fast_rope.cpp.
#include <cmath>

#include "kiln/fast.h"
#include "kiln/fast_primitives.h"
#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

// The rotation written with core ops. Inputs: x, offset (int32), [freqs (float32)].
ArrayFn rope_fallback(int dims, bool traditional, float base, float scale, bool forward, Stream s) {
  return [=](const std::vector<array>& in) {
    const array& x0 = in[0];
    const Dtype acc = x0.dtype() == float64 ? float64 : float32;
    const Shape shape = x0.shape();
    const int nd = static_cast<int>(x0.ndim());
    // (B, N, T, D): a missing N is 1, several middle axes merge.
    array x = astype(reshape(x0, {shape[0], -1, shape[nd - 2], shape[nd - 1]}, s), acc, s);
    const int B = x.shape(0), N = x.shape(1), T = x.shape(2), D = x.shape(3);
    const int half = dims / 2;
    array offset = astype(in[1], acc, s);
    array pos = arange(0.0, static_cast<double>(T), 1.0, acc, s);
    pos = offset.size() > 1 ? add(reshape(offset, {B, 1, 1}, s), pos, s) : add(pos, offset, s);
    pos = multiply(pos, array(scale, acc), s);
    array inv_freq = in.size() > 2
                         ? reciprocal(astype(in[2], acc, s), s)
                         : exp(multiply(arange(0.0, -static_cast<double>(half), -1.0, acc, s),
                                        array(std::log(static_cast<double>(base)) / half, acc), s),
                               s);
    array theta = multiply(expand_dims(pos, -1, s), inv_freq, s);  // (T, h) or (B, 1, T, h)
    if (theta.ndim() == 3) theta = expand_dims(theta, 1, s);
    array c = cos(theta, s), sn = sin(theta, s);
    if (!forward) sn = negative(sn, s);
    array x1 = traditional ? slice(x, {0, 0, 0, 0}, {B, N, T, dims}, {1, 1, 1, 2}, s)
                           : slice(x, {0, 0, 0, 0}, {B, N, T, half}, s);
    array x2 = traditional ? slice(x, {0, 0, 0, 1}, {B, N, T, dims}, {1, 1, 1, 2}, s)
                           : slice(x, {0, 0, 0, half}, {B, N, T, dims}, s);
    array y1 = subtract(multiply(x1, c, s), multiply(x2, sn, s), s);
    array y2 = add(multiply(x1, sn, s), multiply(x2, c, s), s);
    array y = traditional ? reshape(stack({y1, y2}, -1, s), {B, N, T, dims}, s)
                          : concatenate({y1, y2}, -1, s);
    if (dims < D) y = concatenate({y, slice(x, {0, 0, 0, dims}, {B, N, T, D}, s)}, -1, s);
    return std::vector<array>{reshape(astype(y, x0.dtype(), s), shape, s)};
  };
}

}  // namespace

std::shared_ptr<RoPE> make_rope(Stream s, int dims, bool traditional, float base, float scale,
                                bool forward) {
  return std::make_shared<RoPE>(s, rope_fallback(dims, traditional, base, scale, forward, s), dims,
                                traditional, base, scale, forward);
}

namespace {

array rope_impl(std::vector<array> inputs, int dims, bool traditional, float base, float scale,
                bool forward, Stream s) {
  const Shape shape = inputs[0].shape();
  const Dtype dtype = inputs[0].dtype();
  return array(shape, dtype, make_rope(s, dims, traditional, base, scale, forward),
               std::move(inputs));
}

}  // namespace

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           const array& offset, const std::optional<array>& freqs, StreamOrDevice s_) {
  const Stream s = to_stream(s_);
  if (x.ndim() < 3) {
    throw std::invalid_argument(
        msg("[rope] Input must have at least 3 dimensions but got input with ", x.ndim(),
            " dimensions."));
  }
  if (!is_floating_point(x.dtype())) {
    throw std::invalid_argument(
        msg("[rope] Input must be a floating type but got ", x.dtype(), "."));
  }
  if (offset.ndim() > 1) {
    throw std::invalid_argument(msg("[rope] offset must have at most one dimension but has shape ",
                                    shape_str(offset.shape()), "."));
  }
  if (offset.size() != 1 && offset.size() != static_cast<size_t>(x.shape(0))) {
    throw std::invalid_argument(msg("[rope] offset must be a scalar or vector with ", x.shape(0),
                                    " elements but has shape ", shape_str(offset.shape()), "."));
  }
  if (!issubdtype(offset.dtype(), Dtype::Category::integer)) {
    throw std::invalid_argument(
        msg("[rope] offset must be an integer but got type ", offset.dtype(), "."));
  }
  if (dims <= 0) {
    throw std::invalid_argument(msg("[rope] dims must be positive but got ", dims, "."));
  }
  if (dims % 2 != 0) {
    throw std::invalid_argument(msg("[rope] dims must be even but got ", dims, "."));
  }
  if (dims > x.shape(-1)) {
    throw std::invalid_argument(msg("[rope] dims must not exceed the input's last dimension (",
                                    x.shape(-1), ") but got ", dims, "."));
  }
  if (freqs && base) {
    throw std::invalid_argument("[rope] Only one of base or freqs can have a value.");
  }
  if (!freqs && !base) throw std::invalid_argument("[rope] Neither base nor freqs has a value.");
  if (freqs && (freqs->ndim() != 1 || freqs->shape(0) != dims / 2)) {
    throw std::invalid_argument(msg("[rope] freqs must be one dimensional with size ", dims / 2,
                                    " but got shape ", shape_str(freqs->shape()), "."));
  }
  if (freqs && !issubdtype(freqs->dtype(), Dtype::Category::floating) &&
      !issubdtype(freqs->dtype(), Dtype::Category::integer)) {
    throw std::invalid_argument(
        msg("[rope] freqs must be real numbers but got type ", freqs->dtype(), "."));
  }
  std::vector<array> inputs{x, offset.dtype() == int32 ? offset : astype(offset, int32, s)};
  if (freqs) inputs.push_back(astype(*freqs, float32, s));
  return rope_impl(std::move(inputs), dims, traditional, base.value_or(1.0f), scale, true, s);
}

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           int offset, const std::optional<array>& freqs, StreamOrDevice s) {
  return rope(x, dims, traditional, base, scale, array(offset, int32), freqs, s);
}

bool RoPE::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const RoPE*>(&other);
  return o && o->dims_ == dims_ && o->traditional_ == traditional_ && o->base_ == base_ &&
         o->scale_ == scale_ && o->forward_ == forward_;
}

std::vector<Shape> RoPE::output_shapes(const std::vector<array>& inputs) {
  return {inputs[0].shape()};
}

std::vector<array> RoPE::vjp(const std::vector<array>& primals,
                             const std::vector<array>& cotangents, const std::vector<int>& argnums,
                             const std::vector<array>&) {
  for (int a : argnums) {
    if (a != 0) {
      throw std::invalid_argument(
          "[rope] The vjp with respect to the offset or the frequencies is not supported.");
    }
  }
  // The rotation is orthogonal: its transpose rotates by the opposite angles.
  std::vector<array> in = primals;
  in[0] = cotangents[0];
  return {rope_impl(std::move(in), dims_, traditional_, base_, scale_, !forward_, stream())};
}

}  // namespace kiln::fast
