// Transformations and shapes of the random primitives.
#include "kiln/primitives_random.h"

#include <cmath>
#include <numbers>

#include "kiln/ops.h"
#include "kiln/primitives_common.h"
#include "kiln/utils.h"

namespace kiln {

// ---------------------------------------------------------------- RandomBits
// Bits are integers: their tangents and the keys' cotangents are zero.

Dtype RandomBits::bits_dtype(int width) {
  switch (width) {
    case 1:
      return uint8;
    case 2:
      return uint16;
    case 4:
      return uint32;
    default:
      return uint64;
  }
}

bool RandomBits::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const RandomBits*>(&other);
  return o && o->shape_ == shape_ && o->width_ == width_;
}

void RandomBits::print(std::ostream& os) {
  os << "RandomBits(shape=" << shape_str(shape_) << ", width=" << width_ << ")";
}

std::vector<Shape> RandomBits::output_shapes(const std::vector<array>& inputs) {
  Shape shape(inputs[0].shape().begin(), inputs[0].shape().end() - 1);
  shape.insert(shape.end(), shape_.begin(), shape_.end());
  return {shape};
}

std::vector<array> RandomBits::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                   const std::vector<int>&) {
  return {zeros(output_shapes(primals)[0], bits_dtype(width_), stream())};
}

std::vector<array> RandomBits::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                   const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> RandomBits::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  // Each key makes its own stream, so a batch of keys is just more keys: the mapped axis
  // goes in front and the key axis stays last.
  array keys = axes[0] >= 0 ? moveaxis(inputs[0], axes[0], 0, stream()) : inputs[0];
  auto prim = std::make_shared<RandomBits>(stream(), shape_, width_);
  Shape shape = prim->output_shapes({keys})[0];
  return {{array(std::move(shape), bits_dtype(width_), prim, {keys})}, {axes[0] >= 0 ? 0 : -1}};
}

// ---------------------------------------------------------------- ErfF32, ErfInvF32
// The derivatives of erf and erfinv (computed with kiln's own erf, erfinv and exp), in the
// input's dtype: erf' = 2/sqrt(pi) e^(-x^2); erfinv' = sqrt(pi)/2 e^(erfinv(x)^2).

namespace {

array erf_f32_derivative(const array& x, const Stream& s) {
  return multiply(array(2 / std::sqrt(std::numbers::pi), x.dtype()),
                  exp(negative(square(x, s), s), s), s);
}

array erfinv_f32_derivative(const array& y, const Stream& s) {
  return multiply(array(std::sqrt(std::numbers::pi) / 2, y.dtype()), exp(square(y, s), s), s);
}

array erfinv_f32_of(const array& x, const Stream& s) {
  return array(x.shape(), x.dtype(), std::make_shared<ErfInvF32>(s), {x});
}

}  // namespace

std::vector<array> ErfF32::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents, const std::vector<int>&) {
  return {multiply(tangents[0], erf_f32_derivative(primals[0], stream()), stream())};
}

std::vector<array> ErfF32::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents, const std::vector<int>&,
                               const std::vector<array>&) {
  return {multiply(cotangents[0], erf_f32_derivative(primals[0], stream()), stream())};
}

std::pair<std::vector<array>, std::vector<int>> ErfF32::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  const array& x = inputs[0];
  return {{array(x.shape(), x.dtype(), std::make_shared<ErfF32>(stream()), {x})}, axes};
}

std::vector<array> ErfInvF32::jvp(const std::vector<array>& primals,
                                  const std::vector<array>& tangents, const std::vector<int>&) {
  array y = erfinv_f32_of(primals[0], stream());
  return {multiply(tangents[0], erfinv_f32_derivative(y, stream()), stream())};
}

std::vector<array> ErfInvF32::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>& outputs) {
  return {multiply(cotangents[0], erfinv_f32_derivative(outputs[0], stream()), stream())};
}

std::pair<std::vector<array>, std::vector<int>> ErfInvF32::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  return {{erfinv_f32_of(inputs[0], stream())}, axes};
}

}  // namespace kiln
