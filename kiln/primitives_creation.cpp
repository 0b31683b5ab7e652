// Transformations and shape logic of the creation primitives.
#include "kiln/primitives_creation.h"

#include "kiln/ops.h"

namespace kiln {

namespace {
// A creation primitive has no inputs, so no tangent or cotangent ever reaches it: its jvp
// is the zero tangent of a constant, its vjp has no inputs to return, and vmap leaves it
// unbatched (a fresh node with the same parameters).
std::pair<std::vector<array>, std::vector<int>> unbatched(const Shape& shape, Dtype dtype,
                                                          std::shared_ptr<Primitive> primitive) {
  return {{array(shape, dtype, std::move(primitive), {})}, {-1}};
}
}  // namespace

// ---------------------------------------------------------------- Arange
bool Arange::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Arange*>(&other);
  return o && o->start_ == start_ && o->step_ == step_ && o->size_ == size_ && o->dtype_ == dtype_;
}
std::vector<Shape> Arange::output_shapes(const std::vector<array>&) {
  return {{size_}};
}
std::vector<array> Arange::jvp(const std::vector<array>&, const std::vector<array>&,
                               const std::vector<int>&) {
  return {zeros({size_}, dtype_, stream())};
}
std::vector<array> Arange::vjp(const std::vector<array>&, const std::vector<array>&,
                               const std::vector<int>&, const std::vector<array>&) {
  return {};
}
std::pair<std::vector<array>, std::vector<int>> Arange::vmap(const std::vector<array>&,
                                                             const std::vector<int>&) {
  return unbatched({size_}, dtype_,
                   std::make_shared<Arange>(stream(), start_, step_, size_, dtype_));
}

// ---------------------------------------------------------------- Linspace
bool Linspace::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Linspace*>(&other);
  return o && o->start_ == start_ && o->stop_ == stop_ && o->num_ == num_ && o->dtype_ == dtype_;
}
std::vector<Shape> Linspace::output_shapes(const std::vector<array>&) {
  return {{num_}};
}
std::vector<array> Linspace::jvp(const std::vector<array>&, const std::vector<array>&,
                                 const std::vector<int>&) {
  return {zeros({num_}, dtype_, stream())};
}
std::vector<array> Linspace::vjp(const std::vector<array>&, const std::vector<array>&,
                                 const std::vector<int>&, const std::vector<array>&) {
  return {};
}
std::pair<std::vector<array>, std::vector<int>> Linspace::vmap(const std::vector<array>&,
                                                               const std::vector<int>&) {
  return unbatched({num_}, dtype_,
                   std::make_shared<Linspace>(stream(), start_, stop_, num_, dtype_));
}

// ---------------------------------------------------------------- Eye
bool Eye::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Eye*>(&other);
  return o && o->n_ == n_ && o->m_ == m_ && o->k_ == k_ && o->dtype_ == dtype_;
}
std::vector<Shape> Eye::output_shapes(const std::vector<array>&) {
  return {{n_, m_}};
}
std::vector<array> Eye::jvp(const std::vector<array>&, const std::vector<array>&,
                            const std::vector<int>&) {
  return {zeros({n_, m_}, dtype_, stream())};
}
std::vector<array> Eye::vjp(const std::vector<array>&, const std::vector<array>&,
                            const std::vector<int>&, const std::vector<array>&) {
  return {};
}
std::pair<std::vector<array>, std::vector<int>> Eye::vmap(const std::vector<array>&,
                                                          const std::vector<int>&) {
  return unbatched({n_, m_}, dtype_, std::make_shared<Eye>(stream(), n_, m_, k_, dtype_));
}

// ---------------------------------------------------------------- Triangular
// Masking is linear: the derivative in either direction is the same mask.
bool Triangular::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Triangular*>(&other);
  return o && o->k_ == k_ && o->upper_ == upper_;
}
std::vector<array> Triangular::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                   const std::vector<int>&) {
  return {upper_ ? triu(tangents[0], k_, stream()) : tril(tangents[0], k_, stream())};
}
std::vector<array> Triangular::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                   const std::vector<int>&, const std::vector<array>&) {
  return {upper_ ? triu(cotangents[0], k_, stream()) : tril(cotangents[0], k_, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Triangular::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  // The mask applies to the last two axes; a batch axis in front leaves them in place.
  array x = axes[0] < 0 ? inputs[0] : moveaxis(inputs[0], axes[0], 0, stream());
  array out = upper_ ? triu(x, k_, stream()) : tril(x, k_, stream());
  return {{out}, {axes[0] < 0 ? -1 : 0}};
}

}  // namespace kiln
