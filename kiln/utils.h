// Helpers shared by ops: broadcasting, axis normalization, formatting for messages.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "kiln/array.h"

namespace kiln {

/** The NumPy broadcast of two shapes; throws "[op] Shapes (..) and (..) cannot be broadcast." */
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast_shapes");
Shape broadcast_shapes(const std::vector<array>& arrays, const char* op = "broadcast_shapes");

/** Maps a possibly negative axis into [0, ndim); throws "[op] Axis x is out of bounds for
 * array of dimension n." */
int normalize_axis(int axis, int ndim, const char* op);
/** Normalizes every axis and rejects duplicates; the result is sorted if `sort`. */
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op, bool sort = true);

/** "(2, 3)" */
std::string shape_str(const Shape& shape);
std::ostream& operator<<(std::ostream& os, const Shape& shape);

/** Formats a message from its parts, e.g. msg("[add] Bad shape ", shape_str(s), "."). */
template <typename... Parts>
std::string msg(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

/** Offset (in elements) of the element with row-major index `idx` of an array with
 * `shape` and `strides`. */
inline int64_t elem_to_loc(int64_t idx, const Shape& shape, const Strides& strides) {
  int64_t loc = 0;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0 && idx > 0; --i) {
    loc += (idx % shape[i]) * strides[i];
    idx /= shape[i];
  }
  return loc;
}

/** Total number of elements of `shape`. */
inline size_t shape_size(const Shape& shape) {
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  return n;
}

}  // namespace kiln
