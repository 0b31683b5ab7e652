// cuda_fp16.h and cuda_bf16.h for CUDA-flavour kernels, on the GPU and the CPU alike:
// __half and __nv_bfloat16 are kiln's half types (metal/half.h: arithmetic in float rounded
// once, which for +, -, *, / and sqrt gives the correctly rounded half result, as the GPU's
// half instructions do), so that the element types of the generated signature (float16_t,
// bfloat16_t) and MLX's (__half, __nv_bfloat16) are one type; with CUDA's conversion,
// arithmetic and math intrinsics and the paired types. An `#include <cuda_fp16.h>` in a body
// is dropped (signature.cpp): this is what it would declare. Included on demand on the GPU
// (the generator adds it when a body or header names the API; the CPU prelude always has
// it).
// kiln-on-demand: *half* *bfloat16* __h* hexp hexp2 hlog hlog2 hlog10 hsqrt hrsqrt hrcp hsin hcos hfloor hceil htrunc hrint
#pragma once

#include "kiln/backend/kernels/cuda/mlx.h"
#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/math.h"
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
KILN_HD __half __float2half(float f) {
  return __half(f);
}
KILN_HD __half __float2half_rn(float f) {
  return __half(f);
}
KILN_HD float __half2float(__half h) {
  return float(h);
}
KILN_HD __half __double2half(double d) {
  return __half(static_cast<float>(d));
}
KILN_HD __half __int2half_rn(int i) {
  return __half(static_cast<float>(i));
}
KILN_HD int __half2int_rz(__half h) {
  return static_cast<int>(float(h));
}
KILN_HD int __half2int_rn(__half h) {
  return static_cast<int>(::rintf(float(h)));
}
KILN_HD __half __ushort_as_half(unsigned short b) {
  return __half::from_bits(b);
}
KILN_HD unsigned short __half_as_ushort(__half h) {
  return h.bits_;
}
KILN_HD __half __short_as_half(short b) {
  return __half::from_bits(static_cast<uint16_t>(b));
}
KILN_HD short __half_as_short(__half h) {
  return static_cast<short>(h.bits_);
}
KILN_HD __nv_bfloat16 __float2bfloat16(float f) {
  return __nv_bfloat16(f);
}
KILN_HD __nv_bfloat16 __float2bfloat16_rn(float f) {
  return __nv_bfloat16(f);
}
KILN_HD float __bfloat162float(__nv_bfloat16 b) {
  return float(b);
}
KILN_HD __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) {
  return __nv_bfloat16::from_bits(b);
}
KILN_HD unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) {
  return b.bits_;
}

// Arithmetic and comparisons, for both types.
#define KILN_HALF_INTRINSICS(H, P)                     \
  KILN_HD H P##add(H a, H b) {                          \
    return H(float(a) + float(b));                     \
  }                                                    \
  KILN_HD H P##sub(H a, H b) {                          \
    return H(float(a) - float(b));                     \
  }                                                    \
  KILN_HD H P##mul(H a, H b) {                          \
    return H(float(a) * float(b));                     \
  }                                                    \
  KILN_HD H P##div(H a, H b) {                          \
    return H(float(a) / float(b));                     \
  }                                                    \
  KILN_HD H P##neg(H a) {                               \
    return -a;                                         \
  }                                                    \
  KILN_HD H P##abs(H a) {                               \
    return H::from_bits(a.bits_ & 0x7fffu);            \
  }                                                    \
  KILN_HD H P##fma(H a, H b, H c) {                     \
    return H(::fmaf(float(a), float(b), float(c))); \
  }                                                    \
  KILN_HD H P##max(H a, H b) {                          \
    return H(::fmaxf(float(a), float(b)));           \
  }                                                    \
  KILN_HD H P##min(H a, H b) {                          \
    return H(::fminf(float(a), float(b)));           \
  }                                                    \
  KILN_HD bool P##eq(H a, H b) {                        \
    return float(a) == float(b);                       \
  }                                                    \
  KILN_HD bool P##ne(H a, H b) {                        \
    return float(a) != float(b);                       \
  }                                                    \
  KILN_HD bool P##lt(H a, H b) {                        \
    return float(a) < float(b);                        \
  }                                                    \
  KILN_HD bool P##le(H a, H b) {                        \
    return float(a) <= float(b);                       \
  }                                                    \
  KILN_HD bool P##gt(H a, H b) {                        \
    return float(a) > float(b);                        \
  }                                                    \
  KILN_HD bool P##ge(H a, H b) {                        \
    return float(a) >= float(b);                       \
  }                                                    \
  KILN_HD bool P##isnan(H a) {                          \
    return metal::isnan(float(a));                       \
  }                                                    \
  KILN_HD bool P##isinf(H a) {                          \
    return metal::isinf(float(a));                       \
  }

KILN_HALF_INTRINSICS(__half, __h)
// bfloat16 names its add/mul like half's (__hadd takes either); only what differs:
#undef KILN_HALF_INTRINSICS

KILN_HD __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) + float(b));
}
KILN_HD __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) - float(b));
}
KILN_HD __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) * float(b));
}
KILN_HD __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) / float(b));
}
KILN_HD __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __nv_bfloat16(::fmaf(float(a), float(b), float(c)));
}
KILN_HD __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(::fmaxf(float(a), float(b)));
}
KILN_HD __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(::fminf(float(a), float(b)));
}

// The math functions of cuda_fp16.h: computed in float, rounded once.
#define KILN_HALF_MATH(NAME, F)                \
  KILN_HD __half NAME(__half a) {               \
    return __half(F(float(a)));                \
  }                                            \
  KILN_HD __nv_bfloat16 NAME(__nv_bfloat16 a) { \
    return __nv_bfloat16(F(float(a)));         \
  }
KILN_HALF_MATH(hexp, ::expf)
KILN_HALF_MATH(hexp2, ::exp2f)
KILN_HALF_MATH(hlog, ::logf)
KILN_HALF_MATH(hlog2, ::log2f)
KILN_HALF_MATH(hlog10, ::log10f)
KILN_HALF_MATH(hsqrt, ::sqrtf)
KILN_HALF_MATH(hsin, ::sinf)
KILN_HALF_MATH(hcos, ::cosf)
KILN_HALF_MATH(hfloor, ::floorf)
KILN_HALF_MATH(hceil, ::ceilf)
KILN_HALF_MATH(htrunc, ::truncf)
KILN_HALF_MATH(hrint, ::rintf)
#undef KILN_HALF_MATH
KILN_HD __half hrsqrt(__half a) {
  return __half(1.0f / ::sqrtf(float(a)));
}
KILN_HD __half hrcp(__half a) {
  return __half(1.0f / float(a));
}

// Pairs.
KILN_HD __half2 __halves2half2(__half a, __half b) {
  return __half2(a, b);
}
KILN_HD __half2 __floats2half2_rn(float a, float b) {
  return __half2(__half(a), __half(b));
}
KILN_HD __half2 __float2half2_rn(float a) {
  return __half2(__half(a), __half(a));
}
KILN_HD __half2 __half2half2(__half a) {
  return __half2(a, a);
}
KILN_HD __half __low2half(__half2 v) {
  return v.x;
}
KILN_HD __half __high2half(__half2 v) {
  return v.y;
}
KILN_HD float __low2float(__half2 v) {
  return float(v.x);
}
KILN_HD float __high2float(__half2 v) {
  return float(v.y);
}
KILN_HD __half2 __hadd2(__half2 a, __half2 b) {
  return __half2(__hadd(a.x, b.x), __hadd(a.y, b.y));
}
KILN_HD __half2 __hsub2(__half2 a, __half2 b) {
  return __half2(__hsub(a.x, b.x), __hsub(a.y, b.y));
}
KILN_HD __half2 __hmul2(__half2 a, __half2 b) {
  return __half2(__hmul(a.x, b.x), __hmul(a.y, b.y));
}
KILN_HD __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}

KILN_HD float2 __half22float2(__half2 v) {
  return make_float2(float(v.x), float(v.y));
}
KILN_HD __half2 __float22half2_rn(float2 v) {
  return __half2(__half(v.x), __half(v.y));
}
KILN_HD __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return __nv_bfloat162(__nv_bfloat16(a), __nv_bfloat16(b));
}
KILN_HD float2 __bfloat1622float2(__nv_bfloat162 v) {
  return make_float2(float(v.x), float(v.y));
}

