// Transformations and shapes of the random primitives.
#include "kiln/primitives_random.h"

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

// ---------------------------------------------------------------- BitsToUniform
// out = low + (high - low) * u with u in [0, 1) fixed by the bits: d out = (1 - u) d low +
// u d high. Integer outputs have no derivative.

namespace {

// u itself: the same bits mapped onto [0, 1).
array unit_values(const array& bits, Dtype dtype, const Stream& s) {
  auto lo = broadcast_to(array(0.0f, dtype), bits.shape(), s);
  auto hi = broadcast_to(array(1.0f, dtype), bits.shape(), s);
  return array(bits.shape(), dtype, std::make_shared<BitsToUniform>(s), {bits, lo, hi});
}

}  // namespace

std::vector<array> BitsToUniform::jvp(const std::vector<array>& primals,
                                      const std::vector<array>& tangents,
                                      const std::vector<int>& argnums) {
  const auto& s = stream();
  Dtype dtype = primals[1].dtype();
  if (!is_floating_point(dtype)) return {zeros(primals[0].shape(), dtype, s)};
  array u = unit_values(primals[0], dtype, s);
  std::optional<array> out;
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] == 0) continue;
    array w = argnums[i] == 1 ? subtract(array(1.0f, dtype), u, s) : u;
    array t = multiply(tangents[i], w, s);
    out = out ? add(*out, t, s) : t;
  }
  return {out ? *out : zeros(primals[0].shape(), dtype, s)};
}

std::vector<array> BitsToUniform::vjp(const std::vector<array>& primals,
                                      const std::vector<array>& cotangents,
                                      const std::vector<int>& argnums, const std::vector<array>&) {
  const auto& s = stream();
  Dtype dtype = primals[1].dtype();
  std::optional<array> u;
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0 || !is_floating_point(dtype)) {
      grads.push_back(zeros_like(primals[arg], s));
      continue;
    }
    if (!u) u = unit_values(primals[0], dtype, s);
    array w = arg == 1 ? subtract(array(1.0f, dtype), *u, s) : *u;
    grads.push_back(multiply(cotangents[0], w, s));
  }
  return grads;
}

std::pair<std::vector<array>, std::vector<int>> BitsToUniform::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  auto [in, axis] = vmap_elementwise(inputs, axes, stream());
  Shape shape = in[0].shape();
  Dtype dtype = in[1].dtype();
  return {{array(std::move(shape), dtype, std::make_shared<BitsToUniform>(stream()), in)}, {axis}};
}

}  // namespace kiln
