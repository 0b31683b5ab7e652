// complex64 math with the conventions the CPU backend inherits from std::complex<float> (glibc's
// C99 functions): principal branches, the sign of a zero imaginary part choosing the side of a
// branch cut, and C99 Annex G's recovery of infinities in division.
//
// Transcendental functions compute in double and round once at the end: glibc needs special
// algorithms to keep float accuracy near cancellations, double's 29 extra bits make the
// textbook identities accurate to within an ulp of float instead. Complex math is rare next to
// memory traffic, so the double arithmetic costs little.
#pragma once

#include "kiln/backend/cuda/device/types.cuh"

namespace kiln {

namespace detail {

/** A complex double, for intermediate results. */
struct zd {
  double re, im;
};

__device__ inline zd widen(complex64 z) {
  return {z.re, z.im};
}
__device__ inline complex64 narrow(zd z) {
  return {static_cast<float>(z.re), static_cast<float>(z.im)};
}
__device__ inline zd zmul(zd a, zd b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

/** a / b in double; operands that came from float never overflow or underflow |b|^2. */
__device__ inline zd zdiv(zd a, zd b) {
  const double d = b.re * b.re + b.im * b.im;
  zd r{(a.re * b.re + a.im * b.im) / d, (a.im * b.re - a.re * b.im) / d};
  if (isnan(r.re) && isnan(r.im)) {
    // C99 Annex G (as GCC's __divsc3): recover infinities and zeros computed as NaN.
    const double inf = infinity<double>();
    if (d == 0 && (!isnan(a.re) || !isnan(a.im))) {
      const double s = copysign(inf, b.re);
      r = {s * a.re, s * a.im};
    } else if ((isinf(a.re) || isinf(a.im)) && isfinite(b.re) && isfinite(b.im)) {
      const double x = copysign(isinf(a.re) ? 1.0 : 0.0, a.re);
      const double y = copysign(isinf(a.im) ? 1.0 : 0.0, a.im);
      r = {inf * (x * b.re + y * b.im), inf * (y * b.re - x * b.im)};
    } else if ((isinf(b.re) || isinf(b.im)) && isfinite(a.re) && isfinite(a.im)) {
      const double x = copysign(isinf(b.re) ? 1.0 : 0.0, b.re);
      const double y = copysign(isinf(b.im) ? 1.0 : 0.0, b.im);
      r = {0.0 * (a.re * x + a.im * y), 0.0 * (a.im * x - a.re * y)};
    }
  }
  return r;
}

__device__ inline zd zexp(zd z) {
  // e^(-inf + iy) is 0 for every y, NaN and infinite ones included (C99).
  if (isinf(z.re) && z.re < 0) return {0.0, copysign(0.0, z.im)};
  const double m = exp(z.re);
  if (z.im == 0) return {m, z.im};  // the real axis exactly, keeping the zero's sign
  double s, c;
  sincos(z.im, &s, &c);
  return {m * c, m * s};
}

__device__ inline zd zlog(zd z) {
  return {log(hypot(z.re, z.im)), atan2(z.im, z.re)};
}

/** Principal square root (Kahan): the real part is >= 0 and the imaginary part takes the
 * sign of z's, so -4 + 0i gives 2i and -4 - 0i gives -2i. */
__device__ inline zd zsqrt(zd z) {
  if (z.re == 0 && z.im == 0) return {0.0, z.im};
  if (isinf(z.im)) return {infinity<double>(), z.im};
  const double t = sqrt((fabs(z.re) + hypot(z.re, z.im)) * 0.5);
  if (z.re >= 0) return {t, z.im / (2 * t)};
  return {fabs(z.im) / (2 * t), copysign(t, z.im)};
}

/** tanh(x + iy) = (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y): the denominator is
 * cosh 2x + cos 2y without its cancellation. */
__device__ inline zd ztanh(zd z) {
  double s, c;
  sincos(z.im, &s, &c);
  if (fabs(z.re) > 22) {
    // tanh(x) rounds to +-1 in double; the imaginary part is 4 sin y cos y e^(-2|x|).
    return {copysign(1.0, z.re), 4 * s * c * exp(-2 * fabs(z.re))};
  }
  const double sh = sinh(z.re), ch = cosh(z.re);
  const double d = sh * sh + c * c;
  return {sh * ch / d, s * c / d};
}

/** asinh(z) = log(z + sqrt(z^2 + 1)), evaluated for Re z >= 0 where the sum cannot cancel;
 * asinh is odd. */
__device__ inline zd zasinh(zd z) {
  if (z.re < 0) {
    zd w = zasinh({-z.re, -z.im});
    return {-w.re, -w.im};
  }
  const zd r = zsqrt({(z.re - z.im) * (z.re + z.im) + 1, 2 * z.re * z.im});
  return zlog({z.re + r.re, z.im + r.im});
}

/** atanh(z) = (log(1 + z) - log(1 - z)) / 2, with 1 real so that 1 - z keeps -Im z's sign of
 * zero (it picks the side of the cut |x| > 1). */
__device__ inline zd zatanh(zd z) {
  const zd p = zlog({1 + z.re, z.im}), m = zlog({1 - z.re, -z.im});
  return {(p.re - m.re) * 0.5, (p.im - m.im) * 0.5};
}

}  // namespace detail

// ---------------------------------------------------------------- complex64 functions
// The transcendental ones are __noinline__: a module's kernels (contiguous and strided
// variants, each unrolled) then share one body, which halves their compile time; a call
// costs nothing next to the double-precision math.

__device__ inline float cabs(complex64 z) {
  return hypotf(z.re, z.im);
}
__device__ inline complex64 operator/(complex64 a, complex64 b) {
  return detail::narrow(detail::zdiv(detail::widen(a), detail::widen(b)));
}
__device__ __noinline__ complex64 cexp(complex64 z) {
  return detail::narrow(detail::zexp(detail::widen(z)));
}
__device__ __noinline__ complex64 clog(complex64 z) {
  return detail::narrow(detail::zlog(detail::widen(z)));
}
/** log(z) / log(base), for log2 and log10. */
__device__ __noinline__ complex64 clog_base(complex64 z, double ln_base) {
  const detail::zd l = detail::zlog(detail::widen(z));
  return detail::narrow({l.re / ln_base, l.im / ln_base});
}
__device__ __noinline__ complex64 csqrt(complex64 z) {
  return detail::narrow(detail::zsqrt(detail::widen(z)));
}
__device__ __noinline__ complex64 crsqrt(complex64 z) {
  return detail::narrow(detail::zdiv({1, 0}, detail::zsqrt(detail::widen(z))));
}
/** e^z - 1 and log(1 + z), as the CPU defines them for complex64 (no special care near 0;
 * 0 + Im z turns a -0 into +0 as the CPU's complex addition does, which picks the side of
 * log's cut). */
__device__ __noinline__ complex64 cexpm1(complex64 z) {
  const detail::zd e = detail::zexp(detail::widen(z));
  return detail::narrow({e.re - 1, e.im});
}
__device__ __noinline__ complex64 clog1p(complex64 z) {
  return detail::narrow(detail::zlog({1.0 + z.re, 0.0 + z.im}));
}
/** 1 / (1 + e^-z). */
__device__ __noinline__ complex64 csigmoid(complex64 z) {
  const detail::zd e = detail::zexp({-static_cast<double>(z.re), -static_cast<double>(z.im)});
  return detail::narrow(detail::zdiv({1, 0}, {1 + e.re, 0.0 + e.im}));
}

/** a^b = e^(b log a). A zero base gives 0 for Re b > 0, inf + NaN i for a negative real b
 * and NaN otherwise, as glibc's cpowf. */
__device__ __noinline__ complex64 cpow(complex64 a, complex64 b) {
  if (a.re == 0 && a.im == 0) {
    const float nan = __int_as_float(0x7fc00000);
    if (b.re > 0) return {0.0f, 0.0f};
    if (b.re < 0 && b.im == 0) return {infinity<float>(), nan};
    return {nan, nan};
  }
  const detail::zd l = detail::zlog(detail::widen(a));
  return detail::narrow(detail::zexp(detail::zmul(detail::widen(b), l)));
}

__device__ __noinline__ complex64 csin(complex64 z) {
  double s, c;
  sincos(static_cast<double>(z.re), &s, &c);
  return detail::narrow({s * cosh(static_cast<double>(z.im)), c * sinh(static_cast<double>(z.im))});
}
__device__ __noinline__ complex64 ccos(complex64 z) {
  double s, c;
  sincos(static_cast<double>(z.re), &s, &c);
  return detail::narrow(
      {c * cosh(static_cast<double>(z.im)), -(s * sinh(static_cast<double>(z.im)))});
}
__device__ __noinline__ complex64 csinh(complex64 z) {
  double s, c;
  sincos(static_cast<double>(z.im), &s, &c);
  return detail::narrow({sinh(static_cast<double>(z.re)) * c, cosh(static_cast<double>(z.re)) * s});
}
__device__ __noinline__ complex64 ccosh(complex64 z) {
  double s, c;
  sincos(static_cast<double>(z.im), &s, &c);
  return detail::narrow({cosh(static_cast<double>(z.re)) * c, sinh(static_cast<double>(z.re)) * s});
}
__device__ __noinline__ complex64 ctanh(complex64 z) {
  return detail::narrow(detail::ztanh(detail::widen(z)));
}
/** tan z = -i tanh(iz). */
__device__ __noinline__ complex64 ctan(complex64 z) {
  const detail::zd w = detail::ztanh({-static_cast<double>(z.im), z.re});
  return detail::narrow({w.im, -w.re});
}
__device__ __noinline__ complex64 casinh(complex64 z) {
  return detail::narrow(detail::zasinh(detail::widen(z)));
}
/** asin z = -i asinh(iz). */
__device__ __noinline__ complex64 casin(complex64 z) {
  const detail::zd w = detail::zasinh({-static_cast<double>(z.im), z.re});
  return detail::narrow({w.im, -w.re});
}
/** acos z = pi/2 - asin z (exact in double where acos z is small). */
__device__ __noinline__ complex64 cacos(complex64 z) {
  const detail::zd w = detail::zasinh({-static_cast<double>(z.im), z.re});
  return detail::narrow({1.5707963267948966 - w.im, w.re});
}
/** acosh z = log(z + sqrt(z + 1) sqrt(z - 1)) (Kahan's form, with the principal cuts). */
__device__ __noinline__ complex64 cacosh(complex64 z) {
  const double x = z.re, y = z.im;
  const detail::zd p = detail::zmul(detail::zsqrt({x + 1, y}), detail::zsqrt({x - 1, y}));
  return detail::narrow(detail::zlog({x + p.re, y + p.im}));
}
__device__ __noinline__ complex64 catanh(complex64 z) {
  return detail::narrow(detail::zatanh(detail::widen(z)));
}
/** atan z = -i atanh(iz). */
__device__ __noinline__ complex64 catan(complex64 z) {
  const detail::zd w = detail::zatanh({-static_cast<double>(z.im), z.re});
  return detail::narrow({w.im, -w.re});
}

}  // namespace kiln
