#include "kiln/primitive.h"

#include <sstream>
#include <stdexcept>

namespace kiln {

namespace {
[[noreturn]] void missing(const Primitive& p, const char* what) {
  std::ostringstream msg;
  msg << "[" << what << "] Primitive " << p.name() << " does not implement " << what << ".";
  throw std::invalid_argument(msg.str());
}
}  // namespace

std::vector<array> Primitive::jvp(
    const std::vector<array>&, const std::vector<array>&, const std::vector<int>&) {
  missing(*this, "jvp");
}

std::vector<array> Primitive::vjp(
    const std::vector<array>&,
    const std::vector<array>&,
    const std::vector<int>&,
    const std::vector<array>&) {
  missing(*this, "vjp");
}

std::pair<std::vector<array>, std::vector<int>> Primitive::vmap(
    const std::vector<array>&, const std::vector<int>&) {
  missing(*this, "vmap");
}

std::vector<Shape> Primitive::output_shapes(const std::vector<array>&) {
  missing(*this, "output_shapes");
}

}  // namespace kiln
