#include "kiln/utils.h"

#include <algorithm>
#include <stdexcept>

namespace kiln {

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << shape_str(shape); }

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw std::invalid_argument(
          msg("[", op, "] Shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast."));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_shapes(const std::vector<array>& arrays, const char* op) {
  if (arrays.empty()) return {};
  Shape out = arrays[0].shape();
  for (size_t i = 1; i < arrays.size(); ++i) out = broadcast_shapes(out, arrays[i].shape(), op);
  return out;
}

int normalize_axis(int axis, int ndim, const char* op) {
  if (axis < -ndim || axis >= ndim) {
    throw std::invalid_argument(msg(
        "[", op, "] Axis ", axis, " is out of bounds for an array with ", ndim, " dimensions."));
  }
  return axis < 0 ? axis + ndim : axis;
}

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op, bool sort) {
  std::vector<int> out;
  out.reserve(axes.size());
  for (int ax : axes) {
    int a = normalize_axis(ax, ndim, op);
    if (std::find(out.begin(), out.end(), a) != out.end()) {
      throw std::invalid_argument(msg("[", op, "] Duplicate axis ", ax, " in the axes."));
    }
    out.push_back(a);
  }
  if (sort) std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kiln
