// metal::fast:: (the GPU's approximate intrinsics) and metal::precise:: (correctly rounded
// library calls). Part of math.h, which includes it at its end: it uses math.h's map macros.
#pragma once

namespace metal {

/** The GPU's approximate intrinsics (on the CPU, the same functions as metal::). */
namespace fast {
#ifdef __CUDA_ARCH__
#define KILN_FAST(NAME, F32)                                 \
  template <typename T>                                      \
  KILN_HD detail::if_float_t<T> NAME(T x) {                  \
    return T(F32(static_cast<float>(x)));                    \
  }                                                          \
  template <typename V>                                      \
  KILN_HD detail::if_float_vec_t<V> NAME(const V& v) {       \
    vec_t<V> a = v, r;                                       \
    for (int i = 0; i < vec_t<V>::N; ++i) r[i] = NAME(a[i]); \
    return r;                                                \
  }
KILN_FAST(exp, __expf)
KILN_FAST(exp10, __exp10f)
KILN_FAST(log, __logf)
KILN_FAST(log2, __log2f)
KILN_FAST(log10, __log10f)
KILN_FAST(sin, __sinf)
KILN_FAST(cos, __cosf)
KILN_FAST(tan, __tanf)
KILN_FAST(rsqrt, ::rsqrtf)
KILN_FAST(sqrt, __fsqrt_rn)
#undef KILN_FAST
KILN_HD float exp2(float x) {
  return __expf(x * 0.69314718055994531f);
}
template <typename T>
KILN_HD detail::if_float_t<T> pow(T x, T y) {
  return T(__powf(static_cast<float>(x), static_cast<float>(y)));
}
KILN_HD float divide(float x, float y) {
  return __fdividef(x, y);
}
#else
using metal::cos;
using metal::exp;
using metal::exp10;
using metal::exp2;
using metal::log;
using metal::log10;
using metal::log2;
using metal::pow;
using metal::rsqrt;
using metal::sin;
using metal::sqrt;
using metal::tan;
KILN_HD float divide(float x, float y) {
  return x / y;
}
#endif
using metal::abs;
using metal::acos;
using metal::acosh;
using metal::asin;
using metal::asinh;
using metal::atan;
using metal::atan2;
using metal::atanh;
using metal::ceil;
using metal::clamp;
using metal::copysign;
using metal::cosh;
using metal::cospi;
using metal::fabs;
using metal::fdim;
using metal::floor;
using metal::fma;
using metal::fmax;
using metal::fmin;
using metal::fmod;
using metal::fract;
using metal::frexp;
using metal::isfinite;
using metal::isinf;
using metal::isnan;
using metal::ldexp;
using metal::max;
using metal::max3;
using metal::median3;
using metal::min;
using metal::min3;
using metal::mix;
using metal::modf;
using metal::powr;
using metal::rint;
using metal::round;
using metal::saturate;
using metal::sign;
using metal::sincos;
using metal::sinh;
using metal::sinpi;
using metal::smoothstep;
using metal::step;
using metal::tanh;
using metal::tanpi;
using metal::trunc;
}  // namespace fast

/** Correctly rounded library calls (metal:: already uses them). */
namespace precise {
using metal::abs;
using metal::acos;
using metal::acosh;
using metal::asin;
using metal::asinh;
using metal::atan;
using metal::atan2;
using metal::atanh;
using metal::ceil;
using metal::clamp;
using metal::copysign;
using metal::cos;
using metal::cosh;
using metal::cospi;
using metal::exp;
using metal::exp10;
using metal::exp2;
using metal::fabs;
using metal::fdim;
using metal::floor;
using metal::fma;
using metal::fmax;
using metal::fmin;
using metal::fmod;
using metal::fract;
using metal::frexp;
using metal::isfinite;
using metal::isinf;
using metal::isnan;
using metal::ldexp;
using metal::log;
using metal::log10;
using metal::log2;
using metal::max;
using metal::max3;
using metal::median3;
using metal::min;
using metal::min3;
using metal::mix;
using metal::modf;
using metal::pow;
using metal::powr;
using metal::rint;
using metal::round;
using metal::rsqrt;
using metal::saturate;
using metal::sign;
using metal::sin;
using metal::sincos;
using metal::sinh;
using metal::sinpi;
using metal::smoothstep;
using metal::sqrt;
using metal::step;
using metal::tan;
using metal::tanh;
using metal::tanpi;
using metal::trunc;
}  // namespace precise

#undef KILN_MATH1
#undef KILN_MATH2

}  // namespace metal
