// complex64_t: the element type of complex64 arrays in generated signatures (two floats,
// laid out as std::complex<float>), with the arithmetic MLX's own type offers.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"

namespace metal {

struct alignas(8) complex64_t {
  float real;
  float imag;

  complex64_t() = default;
  KILN_HD constexpr complex64_t(float re, float im) : real(re), imag(im) {}
  template <typename S, detail::enable_if_t<detail::is_arithmetic_v<S>, int> = 0>
  KILN_HD constexpr complex64_t(S re) : real(static_cast<float>(re)), imag(0.0f) {}

  friend KILN_HD complex64_t operator+(complex64_t a, complex64_t b) {
    return {a.real + b.real, a.imag + b.imag};
  }
  friend KILN_HD complex64_t operator-(complex64_t a, complex64_t b) {
    return {a.real - b.real, a.imag - b.imag};
  }
  friend KILN_HD complex64_t operator*(complex64_t a, complex64_t b) {
    return {a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real};
  }
  friend KILN_HD complex64_t operator/(complex64_t a, complex64_t b) {
    float d = b.real * b.real + b.imag * b.imag;
    return {(a.real * b.real + a.imag * b.imag) / d, (a.imag * b.real - a.real * b.imag) / d};
  }
  friend KILN_HD complex64_t operator-(complex64_t a) { return {-a.real, -a.imag}; }
  friend KILN_HD bool operator==(complex64_t a, complex64_t b) {
    return a.real == b.real && a.imag == b.imag;
  }
  friend KILN_HD bool operator!=(complex64_t a, complex64_t b) { return !(a == b); }
  KILN_HD complex64_t& operator+=(complex64_t b) { return *this = *this + b; }
  KILN_HD complex64_t& operator-=(complex64_t b) { return *this = *this - b; }
  KILN_HD complex64_t& operator*=(complex64_t b) { return *this = *this * b; }
  KILN_HD complex64_t& operator/=(complex64_t b) { return *this = *this / b; }
};

static_assert(sizeof(complex64_t) == 8, "complex64_t is two floats");

}  // namespace metal
