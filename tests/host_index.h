// Host-side helpers of the op tests that build float64 references by index arithmetic
// (indexing_test.h, layout_test.h): an array's values as complex doubles and row-major
// index <-> multi-index conversions.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

#include "test_utils.h"

namespace kiln::test {

/** The row-major values of `a` as complex doubles (the real values of a real array). */
inline std::vector<std::complex<double>> values(const array& a) {
  if (a.dtype() == complex64) return to_complex(a);
  auto d = to_double(a);
  return {d.begin(), d.end()};
}

/** The multi-index of row-major element `i` of `shape`. */
inline std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

/** The row-major position of multi-index `idx` in `shape`. */
inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

}  // namespace kiln::test
