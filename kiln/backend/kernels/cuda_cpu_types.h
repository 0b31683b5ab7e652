// CUDA's built-in vector types (float4, int2, ...), dim3 and the make_* functions, for
// CUDA-flavour kernels on the CPU. Sizes and alignments are CUDA's, so reinterpreting a
// float array as float4 reads the same elements as on the GPU.
#pragma once

#include <cstdint>

#include "kiln/backend/kernels/cuda_cpu_abi.h"

// 1-component types are aligned like their element, 2- and 4-component types to their size
// (capped at 16 bytes), 3-component types like their element (no padding), as in CUDA.
#define KILN_CUDA_VEC(T, name, A2, A4)                          \
  struct name##1 {                                              \
    T x;                                                        \
  };                                                            \
  struct alignas(A2) name##2 {                                  \
    T x, y;                                                     \
  };                                                            \
  struct name##3 {                                              \
    T x, y, z;                                                  \
  };                                                            \
  struct alignas(A4) name##4 {                                  \
    T x, y, z, w;                                               \
  };                                                            \
  inline constexpr name##1 make_##name##1(T x) {                \
    return {x};                                                 \
  }                                                             \
  inline constexpr name##2 make_##name##2(T x, T y) {           \
    return {x, y};                                              \
  }                                                             \
  inline constexpr name##3 make_##name##3(T x, T y, T z) {      \
    return {x, y, z};                                           \
  }                                                             \
  inline constexpr name##4 make_##name##4(T x, T y, T z, T w) { \
    return {x, y, z, w};                                        \
  }

KILN_CUDA_VEC(signed char, char, 2, 4)
KILN_CUDA_VEC(unsigned char, uchar, 2, 4)
KILN_CUDA_VEC(short, short, 4, 8)
KILN_CUDA_VEC(unsigned short, ushort, 4, 8)
KILN_CUDA_VEC(int, int, 8, 16)
KILN_CUDA_VEC(float, float, 8, 16)
KILN_CUDA_VEC(long, long, 16, 16)
KILN_CUDA_VEC(unsigned long, ulong, 16, 16)
KILN_CUDA_VEC(long long, longlong, 16, 16)
KILN_CUDA_VEC(unsigned long long, ulonglong, 16, 16)
KILN_CUDA_VEC(double, double, 16, 16)
#undef KILN_CUDA_VEC

// uint is special: uint3 is the type of threadIdx and blockIdx.
struct uint1 {
  unsigned int x;
};
struct alignas(8) uint2 {
  unsigned int x, y;
};
typedef kiln::cpu_rt::Dim3 uint3;
struct alignas(16) uint4 {
  unsigned int x, y, z, w;
};
inline constexpr uint1 make_uint1(unsigned int x) {
  return {x};
}
inline constexpr uint2 make_uint2(unsigned int x, unsigned int y) {
  return {x, y};
}
inline constexpr uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) {
  return {x, y, z};
}
inline constexpr uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) {
  return {x, y, z, w};
}

static_assert(sizeof(float4) == 16 && alignof(float4) == 16 && sizeof(float3) == 12,
              "CUDA's vector layouts");

/** CUDA's dim3: block and grid sizes, unspecified components 1. */
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return {x, y, z}; }
};
