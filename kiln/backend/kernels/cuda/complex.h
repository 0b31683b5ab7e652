// complex64_t of the CUDA flavour, as in MLX's CUDA backend: cuda::std::complex<float>, with
// real()/imag() accessors (the Metal flavour's complex64_t has .real/.imag fields instead,
// as MLX's Metal one), arithmetic with complex and real operands, comparisons (MLX's
// lexicographic order), and abs, arg, norm, conj, exp, log, sqrt, polar. Included on demand
// on the GPU (a complex64 dtype or these names; the CPU prelude always has it).
// kiln-on-demand: complex64_t complex real imag conj norm polar arg
#pragma once

#include "kiln/backend/kernels/cuda/std.h"
#include "kiln/backend/kernels/metal/math.h"

namespace cuda {
namespace std {

template <typename T>
struct alignas(2 * sizeof(T)) complex {
  T re_, im_;

  typedef T value_type;
  complex() = default;
  KILN_HD constexpr complex(T re, T im = T(0)) : re_(re), im_(im) {}
  template <typename U>
  KILN_HD constexpr explicit complex(const complex<U>& o) : re_(T(o.real())), im_(T(o.imag())) {}

  KILN_HD constexpr T real() const { return re_; }
  KILN_HD constexpr T imag() const { return im_; }
  KILN_HD void real(T v) { re_ = v; }
  KILN_HD void imag(T v) { im_ = v; }

  friend KILN_HD complex operator+(complex a, complex b) { return {a.re_ + b.re_, a.im_ + b.im_}; }
  friend KILN_HD complex operator-(complex a, complex b) { return {a.re_ - b.re_, a.im_ - b.im_}; }
  friend KILN_HD complex operator*(complex a, complex b) {
    return {a.re_ * b.re_ - a.im_ * b.im_, a.re_ * b.im_ + a.im_ * b.re_};
  }
  friend KILN_HD complex operator/(complex a, complex b) {
    const T d = b.re_ * b.re_ + b.im_ * b.im_;
    return {(a.re_ * b.re_ + a.im_ * b.im_) / d, (a.im_ * b.re_ - a.re_ * b.im_) / d};
  }
  friend KILN_HD complex operator+(complex a, T b) { return {a.re_ + b, a.im_}; }
  friend KILN_HD complex operator+(T a, complex b) { return {a + b.re_, b.im_}; }
  friend KILN_HD complex operator-(complex a, T b) { return {a.re_ - b, a.im_}; }
  friend KILN_HD complex operator-(T a, complex b) { return {a - b.re_, -b.im_}; }
  friend KILN_HD complex operator*(complex a, T b) { return {a.re_ * b, a.im_ * b}; }
  friend KILN_HD complex operator*(T a, complex b) { return {a * b.re_, a * b.im_}; }
  friend KILN_HD complex operator/(complex a, T b) { return {a.re_ / b, a.im_ / b}; }
  friend KILN_HD complex operator/(T a, complex b) { return complex(a) / b; }
  friend KILN_HD complex operator-(complex a) { return {-a.re_, -a.im_}; }
  friend KILN_HD complex operator+(complex a) { return a; }
  friend KILN_HD bool operator==(complex a, complex b) { return a.re_ == b.re_ && a.im_ == b.im_; }
  friend KILN_HD bool operator!=(complex a, complex b) { return !(a == b); }
  // MLX's order: by real part, then imaginary part.
  friend KILN_HD bool operator>(complex a, complex b) {
    return a.re_ > b.re_ || (a.re_ == b.re_ && a.im_ > b.im_);
  }
  friend KILN_HD bool operator<(complex a, complex b) { return b > a; }
  friend KILN_HD bool operator<=(complex a, complex b) { return !(a > b); }
  friend KILN_HD bool operator>=(complex a, complex b) { return !(a < b); }
  KILN_HD complex& operator+=(complex b) { return *this = *this + b; }
  KILN_HD complex& operator-=(complex b) { return *this = *this - b; }
  KILN_HD complex& operator*=(complex b) { return *this = *this * b; }
  KILN_HD complex& operator/=(complex b) { return *this = *this / b; }
};

template <typename T>
KILN_HD T real(complex<T> z) {
  return z.real();
}
template <typename T>
KILN_HD T imag(complex<T> z) {
  return z.imag();
}
template <typename T>
KILN_HD T abs(complex<T> z) {
  return metal::sqrt(z.real() * z.real() + z.imag() * z.imag());
}
template <typename T>
KILN_HD T norm(complex<T> z) {
  return z.real() * z.real() + z.imag() * z.imag();
}
template <typename T>
KILN_HD T arg(complex<T> z) {
  return metal::atan2(z.imag(), z.real());
}
template <typename T>
KILN_HD complex<T> conj(complex<T> z) {
  return {z.real(), -z.imag()};
}
template <typename T>
KILN_HD complex<T> polar(T r, T theta = T(0)) {
  return {r * metal::cos(theta), r * metal::sin(theta)};
}
template <typename T>
KILN_HD complex<T> exp(complex<T> z) {
  return polar(metal::exp(z.real()), z.imag());
}
template <typename T>
KILN_HD complex<T> log(complex<T> z) {
  return {metal::log(abs(z)), arg(z)};
}
template <typename T>
KILN_HD complex<T> sqrt(complex<T> z) {
  const T r = abs(z);
  const T re = metal::sqrt((r + z.real()) / T(2));
  const T im = metal::sqrt((r - z.real()) / T(2));
  return {re, z.imag() < T(0) ? -im : im};
}

}  // namespace std
}  // namespace cuda

namespace kiln_cuda {
/** The element type of complex64 arrays in CUDA-flavour signatures (MLX's). */
typedef cuda::std::complex<float> complex64_t;
using cuda::std::abs;
using cuda::std::arg;
using cuda::std::conj;
using cuda::std::imag;
using cuda::std::norm;
using cuda::std::real;
}  // namespace kiln_cuda
