// Tensor-core building blocks of the FlashAttention kernels (sm_80 and later): the
// m16n8k16 matrix multiply-accumulate on 16-bit inputs with float accumulators, ldmatrix
// fragment loads from shared memory, and cp.async copies into it.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), with g = lane / 4 and
// t = lane % 4: A (16 x 16, row-major) is 4 registers of 2 elements: (g, 2t..), (g + 8, 2t..),
// (g, 2t + 8..), (g + 8, 2t + 8..); B (16 x 8, column-major) is 2: (2t.., g), (2t + 8.., g);
// C and D (16 x 8 floats) are 4: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1). Two
// adjacent C tiles of n = 8, rounded to 16 bits, are exactly the A fragment of a k = 16
// step: FlashAttention-2 feeds P = exp(S - m) to the second product without shared memory.
#pragma once

#include "kiln/backend/cuda/device/async_copy.cuh"
#include "kiln/backend/cuda/device/types.cuh"

namespace kiln::mma {

/** D = A B + D for bf16 (BF16 true) or fp16 inputs. */
template <bool BF16>
__device__ inline void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if constexpr (BF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

using ::kiln::smem_addr;

/** Four 8 x 8 matrices of 16-bit elements; lanes 8m..8m+7 give the rows of matrix m. */
__device__ inline void ldmatrix_x4(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row)));
}

/** As ldmatrix_x4, each matrix transposed. */
__device__ inline void ldmatrix_x4_trans(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row)));
}

/** The transpose of an 8 x 8 matrix of 16-bit elements held as one fragment register
 * (thread: row lane / 4, columns 2 (lane % 4) and the next). */
__device__ inline unsigned movmatrix_trans(unsigned x) {
  unsigned r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}

using ::kiln::cp_async_16;
using ::kiln::cp_async_commit;
using ::kiln::cp_async_wait;

/** Two floats rounded to 16 bits, packed (the first in the low half). */
template <bool BF16>
__device__ inline unsigned pack2(float lo, float hi) {
  unsigned r;
  if constexpr (BF16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/** 2^x (ex2.approx: about 2 ulp, flushes subnormal results to zero). */
__device__ inline float exp2_approx(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
}

}  // namespace kiln::mma
