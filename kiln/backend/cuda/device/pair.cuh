// Two neighbouring elements computed together by compile's vectorized kernels
// (backend/cuda/compiled.cpp): half types sit packed in one 32-bit register, so that add,
// subtract and multiply take one packed instruction (add/sub/mul.rn.{f16,bf16}x2) for both,
// and results computed in float round to a pair with one cvt.rn.{f16,bf16}x2.f32.
//
// Every function gives, element by element, exactly what kiln::apply and kiln::cast give
// for one element: the packed operations round once, as the scalar path's float operation
// followed by its rounding does (see packed_op in compiled.cpp for why they agree).
#pragma once

#include "kiln/backend/cuda/device/binary_ops.cuh"
#include "kiln/backend/cuda/device/cast.cuh"

namespace kiln_fused {

template <typename T>
struct Pair {
  T x, y;
};
template <>
struct Pair<kiln::float16> {
  unsigned int u;  // low half: the first element
};
template <>
struct Pair<kiln::bfloat16> {
  unsigned int u;
};

template <typename T>
__device__ __forceinline__ T lo(Pair<T> p) {
  if constexpr (kiln::is_half_v<T>) {
    T t;
    t.bits = static_cast<unsigned short>(p.u);
    return t;
  } else {
    return p.x;
  }
}

template <typename T>
__device__ __forceinline__ T hi(Pair<T> p) {
  if constexpr (kiln::is_half_v<T>) {
    T t;
    t.bits = static_cast<unsigned short>(p.u >> 16);
    return t;
  } else {
    return p.y;
  }
}

template <typename T>
__device__ __forceinline__ Pair<T> make2(T a, T b) {
  if constexpr (kiln::is_half_v<T>)
    return {static_cast<unsigned int>(a.bits) | static_cast<unsigned int>(b.bits) << 16};
  else
    return {a, b};
}

/** Elements k and k + 1 of `v` (k even, v 16-byte aligned). */
template <typename T>
__device__ __forceinline__ Pair<T> load2(const T* v) {
  if constexpr (kiln::is_half_v<T>)
    return {*reinterpret_cast<const unsigned int*>(v)};
  else
    return {v[0], v[1]};
}

template <typename T>
__device__ __forceinline__ void store2(T* v, Pair<T> p) {
  if constexpr (kiln::is_half_v<T>) {
    *reinterpret_cast<unsigned int*>(v) = p.u;
  } else {
    v[0] = p.x;
    v[1] = p.y;
  }
}

/** kiln::cast<Out> of both elements; float to a half type rounds both in one instruction. */
template <typename Out, typename A, typename B>
__device__ __forceinline__ Pair<Out> round2(A a, B b) {
#if __CUDA_ARCH__ >= 800
  if constexpr (kiln::is_same_v<A, float> && kiln::is_same_v<B, float> &&
                kiln::is_same_v<Out, kiln::bfloat16>) {
    unsigned int u;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(b), "f"(a));
    return {u};
  } else if constexpr (kiln::is_same_v<A, float> && kiln::is_same_v<B, float> &&
                       kiln::is_same_v<Out, kiln::float16>) {
    unsigned int u;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(b), "f"(a));
    return {u};
  }
#endif
  return make2(kiln::cast<Out>(a), kiln::cast<Out>(b));
}

template <typename Out, typename In>
__device__ __forceinline__ Pair<Out> cast2(Pair<In> p) {
  if constexpr (kiln::is_same_v<Out, In>)
    return p;
  else if constexpr (kiln::is_half_v<In>)
    return round2<Out>(static_cast<float>(lo(p)), static_cast<float>(hi(p)));
  else
    return round2<Out>(lo(p), hi(p));
}

template <typename Out, typename In>
__device__ __forceinline__ Pair<Out> static_cast2(Pair<In> p) {
  if constexpr (kiln::is_same_v<Out, In>)
    return p;
  else
    return make2(static_cast<Out>(lo(p)), static_cast<Out>(hi(p)));
}

/** kiln::apply<Out>(op, x...) on both elements. */
template <typename Out, typename Op, typename... In>
__device__ __forceinline__ Pair<Out> apply2(Op op, Pair<In>... x) {
  return round2<Out>(op(static_cast<kiln::compute_t<In>>(lo(x))...),
                     op(static_cast<kiln::compute_t<In>>(hi(x))...));
}

// ---------------------------------------------------------------- packed half arithmetic

// PTX's .rn also forbids contracting these with a neighbouring op into a fused multiply-add.
#define KILN_PACKED_F16(NAME, INSTR)                                           \
  __device__ __forceinline__ Pair<kiln::float16> NAME(Pair<kiln::float16> a,   \
                                                      Pair<kiln::float16> b) { \
    unsigned int u;                                                            \
    asm(INSTR " %0, %1, %2;" : "=r"(u) : "r"(a.u), "r"(b.u));                  \
    return {u};                                                                \
  }
KILN_PACKED_F16(add2, "add.rn.f16x2")
KILN_PACKED_F16(sub2, "sub.rn.f16x2")
KILN_PACKED_F16(mul2, "mul.rn.f16x2")
#undef KILN_PACKED_F16

// bfloat16x2 add, sub and mul are sm_90's; sm_80 has only the packed fma, through which
// a + b = a * 1 + b, a - b = b * -1 + a and a * b = a * b + -0 (each rounded once).
#define KILN_PACKED_BF16(NAME, INSTR, FMA_A, FMA_B, FMA_C, OP)                   \
  __device__ __forceinline__ Pair<kiln::bfloat16> NAME(Pair<kiln::bfloat16> a,   \
                                                       Pair<kiln::bfloat16> b) { \
    KILN_PACKED_BF16_BODY(INSTR, FMA_A, FMA_B, FMA_C, OP)                        \
  }
#if __CUDA_ARCH__ >= 900
#define KILN_PACKED_BF16_BODY(INSTR, FMA_A, FMA_B, FMA_C, OP) \
  unsigned int u;                                             \
  asm(INSTR " %0, %1, %2;" : "=r"(u) : "r"(a.u), "r"(b.u));   \
  return {u};
#elif __CUDA_ARCH__ >= 800
#define KILN_PACKED_BF16_BODY(INSTR, FMA_A, FMA_B, FMA_C, OP)                          \
  unsigned int u;                                                                      \
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(u) : "r"(FMA_A), "r"(FMA_B), "r"(FMA_C)); \
  return {u};
#else
#define KILN_PACKED_BF16_BODY(INSTR, FMA_A, FMA_B, FMA_C, OP) \
  return apply2<kiln::bfloat16>(kiln::OP(), a, b);
#endif
KILN_PACKED_BF16(add2, "add.rn.bf16x2", a.u, 0x3f803f80u, b.u, Add)
KILN_PACKED_BF16(sub2, "sub.rn.bf16x2", b.u, 0xbf80bf80u, a.u, Subtract)
KILN_PACKED_BF16(mul2, "mul.rn.bf16x2", a.u, b.u, 0x80008000u, Multiply)
#undef KILN_PACKED_BF16_BODY
#undef KILN_PACKED_BF16

template <typename H>
__device__ __forceinline__ Pair<H> square2(Pair<H> a) {
  return mul2(a, a);
}

}  // namespace kiln_fused
