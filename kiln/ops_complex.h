// Internal helper of the op layer: complex64 values from their parts.
#pragma once

#include <complex>

#include "kiln/ops.h"

namespace kiln::detail {

/** re + i * im as complex64 (exact: i * im is (0 * im - 0, im) before the sum). */
inline array complex_from_parts(const array& re, const array& im, StreamOrDevice s = {}) {
  return add(astype(re, complex64, s),
             multiply(astype(im, complex64, s), array(std::complex<float>(0.0f, 1.0f)), s), s);
}

}  // namespace kiln::detail
