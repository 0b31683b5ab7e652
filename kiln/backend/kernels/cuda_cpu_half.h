// cuda_fp16.h and cuda_bf16.h for CUDA-flavour kernels on the CPU: __half and
// __nv_bfloat16 are kiln's half types (metal/half.h, arithmetic in float rounded back as
// the GPU does), with CUDA's conversion and arithmetic intrinsics and the paired types.
#pragma once

#include <cmath>

#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/vec.h"

typedef metal::half __half;
typedef metal::half half;
typedef metal::bfloat __nv_bfloat16;
typedef metal::bfloat nv_bfloat16;
typedef metal::vec<metal::half, 2> __half2;
typedef metal::vec<metal::half, 2> half2;
typedef metal::vec<metal::bfloat, 2> __nv_bfloat162;
typedef metal::vec<metal::bfloat, 2> nv_bfloat162;

// Conversions (round to nearest even unless the name says otherwise).
inline __half __float2half(float f) {
  return __half(f);
}
inline __half __float2half_rn(float f) {
  return __half(f);
}
inline float __half2float(__half h) {
  return float(h);
}
inline __half __double2half(double d) {
  return __half(static_cast<float>(d));
}
inline __half __int2half_rn(int i) {
  return __half(static_cast<float>(i));
}
inline int __half2int_rz(__half h) {
  return static_cast<int>(float(h));
}
inline int __half2int_rn(__half h) {
  return static_cast<int>(std::nearbyint(float(h)));
}
inline __half __ushort_as_half(unsigned short b) {
  return __half::from_bits(b);
}
inline unsigned short __half_as_ushort(__half h) {
  return h.bits_;
}
inline __half __short_as_half(short b) {
  return __half::from_bits(static_cast<uint16_t>(b));
}
inline short __half_as_short(__half h) {
  return static_cast<short>(h.bits_);
}
inline __nv_bfloat16 __float2bfloat16(float f) {
  return __nv_bfloat16(f);
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  return __nv_bfloat16(f);
}
inline float __bfloat162float(__nv_bfloat16 b) {
  return float(b);
}
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) {
  return __nv_bfloat16::from_bits(b);
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) {
  return b.bits_;
}

// Arithmetic and comparisons, for both types.
#define KILN_HALF_INTRINSICS(H, P)                     \
  inline H P##add(H a, H b) {                          \
    return H(float(a) + float(b));                     \
  }                                                    \
  inline H P##sub(H a, H b) {                          \
    return H(float(a) - float(b));                     \
  }                                                    \
  inline H P##mul(H a, H b) {                          \
    return H(float(a) * float(b));                     \
  }                                                    \
  inline H P##div(H a, H b) {                          \
    return H(float(a) / float(b));                     \
  }                                                    \
  inline H P##neg(H a) {                               \
    return -a;                                         \
  }                                                    \
  inline H P##abs(H a) {                               \
    return H::from_bits(a.bits_ & 0x7fffu);            \
  }                                                    \
  inline H P##fma(H a, H b, H c) {                     \
    return H(std::fmaf(float(a), float(b), float(c))); \
  }                                                    \
  inline H P##max(H a, H b) {                          \
    return H(std::fmax(float(a), float(b)));           \
  }                                                    \
  inline H P##min(H a, H b) {                          \
    return H(std::fmin(float(a), float(b)));           \
  }                                                    \
  inline bool P##eq(H a, H b) {                        \
    return float(a) == float(b);                       \
  }                                                    \
  inline bool P##ne(H a, H b) {                        \
    return float(a) != float(b);                       \
  }                                                    \
  inline bool P##lt(H a, H b) {                        \
    return float(a) < float(b);                        \
  }                                                    \
  inline bool P##le(H a, H b) {                        \
    return float(a) <= float(b);                       \
  }                                                    \
  inline bool P##gt(H a, H b) {                        \
    return float(a) > float(b);                        \
  }                                                    \
  inline bool P##ge(H a, H b) {                        \
    return float(a) >= float(b);                       \
  }                                                    \
  inline bool P##isnan(H a) {                          \
    return std::isnan(float(a));                       \
  }                                                    \
  inline bool P##isinf(H a) {                          \
    return std::isinf(float(a));                       \
  }

KILN_HALF_INTRINSICS(__half, __h)
// bfloat16 names its add/mul like half's (__hadd takes either); only what differs:
#undef KILN_HALF_INTRINSICS

inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) + float(b));
}
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) - float(b));
}
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) * float(b));
}
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) / float(b));
}
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __nv_bfloat16(std::fmaf(float(a), float(b), float(c)));
}
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(std::fmax(float(a), float(b)));
}
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(std::fmin(float(a), float(b)));
}

// The math functions of cuda_fp16.h: computed in float, rounded once.
#define KILN_HALF_MATH(NAME, F)                \
  inline __half NAME(__half a) {               \
    return __half(F(float(a)));                \
  }                                            \
  inline __nv_bfloat16 NAME(__nv_bfloat16 a) { \
    return __nv_bfloat16(F(float(a)));         \
  }
KILN_HALF_MATH(hexp, std::exp)
KILN_HALF_MATH(hexp2, std::exp2)
KILN_HALF_MATH(hlog, std::log)
KILN_HALF_MATH(hlog2, std::log2)
KILN_HALF_MATH(hlog10, std::log10)
KILN_HALF_MATH(hsqrt, std::sqrt)
KILN_HALF_MATH(hsin, std::sin)
KILN_HALF_MATH(hcos, std::cos)
KILN_HALF_MATH(hfloor, std::floor)
KILN_HALF_MATH(hceil, std::ceil)
KILN_HALF_MATH(htrunc, std::trunc)
KILN_HALF_MATH(hrint, std::nearbyint)
#undef KILN_HALF_MATH
inline __half hrsqrt(__half a) {
  return __half(1.0f / std::sqrt(float(a)));
}
inline __half hrcp(__half a) {
  return __half(1.0f / float(a));
}

// Pairs.
inline __half2 __halves2half2(__half a, __half b) {
  return __half2(a, b);
}
inline __half2 __floats2half2_rn(float a, float b) {
  return __half2(__half(a), __half(b));
}
inline __half2 __float2half2_rn(float a) {
  return __half2(__half(a), __half(a));
}
inline __half2 __half2half2(__half a) {
  return __half2(a, a);
}
inline __half __low2half(__half2 v) {
  return v.x;
}
inline __half __high2half(__half2 v) {
  return v.y;
}
inline float __low2float(__half2 v) {
  return float(v.x);
}
inline float __high2float(__half2 v) {
  return float(v.y);
}
inline __half2 __hadd2(__half2 a, __half2 b) {
  return __half2(__hadd(a.x, b.x), __hadd(a.y, b.y));
}
inline __half2 __hsub2(__half2 a, __half2 b) {
  return __half2(__hsub(a.x, b.x), __hsub(a.y, b.y));
}
inline __half2 __hmul2(__half2 a, __half2 b) {
  return __half2(__hmul(a.x, b.x), __hmul(a.y, b.y));
}
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}
