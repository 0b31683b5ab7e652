// Metal's simdgroup_matrix<T, 8, 8> on NVIDIA warps: simdgroup_load, simdgroup_store,
// simdgroup_multiply and simdgroup_multiply_accumulate, make_filled_simdgroup_matrix.
//
// Each of the 32 lanes holds two elements, in Metal's layout (thread_elements() sees the
// same values as on an Apple GPU): lane l = (l4 l3 l2 l1 l0 in bits) holds row
// 4*l4 + 2*l2 + l1, columns 4*l3 + 2*l0 and the next one. Products of half or bfloat
// matrices accumulated in float run on tensor cores (mma.sync m16n8k8, sm_80 and later);
// the others exchange rows and columns with shuffles and accumulate in float (in double
// for double). The whole simdgroup must take part, as in Metal.
#pragma once

#include "kiln/backend/kernels/metal/gpu_simd.h"
#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/vec.h"

namespace metal {

template <typename T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix is 8x8 on this backend");
  vec<T, 2> e_;  // this lane's two elements

  simdgroup_matrix() = default;
  /** A diagonal matrix holding `d` on its diagonal, as Metal's constructor. */
  KILN_HD explicit simdgroup_matrix(T d);
  KILN_HD vec<T, 2>& thread_elements() { return e_; }
  KILN_HD const vec<T, 2>& thread_elements() const { return e_; }
};

typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

namespace detail {

// The row and first column of this lane's elements, and the lane holding (row, col).
KILN_HD int mat_row(unsigned lane) {
  return static_cast<int>(((lane >> 4) & 1) * 4 + ((lane >> 2) & 1) * 2 + ((lane >> 1) & 1));
}
KILN_HD int mat_col(unsigned lane) {
  return static_cast<int>(((lane >> 3) & 1) * 4 + (lane & 1) * 2);
}
KILN_HD unsigned mat_lane(int row, int col) {
  return static_cast<unsigned>(((row >> 2) & 1) << 4 | ((col >> 2) & 1) << 3 |
                               ((row >> 1) & 1) << 2 | (row & 1) << 1 | ((col >> 1) & 1));
}

template <typename T>
using acc_t = conditional_t<is_same_v<T, double>, double, float>;

// D = A * B + C by shuffles, accumulating in acc_t.
template <typename TD, typename TA, typename TB, typename TC>
KILN_HD void mma_shuffle(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                         const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c) {
  typedef acc_t<TD> A;
  const unsigned mask = __activemask();
  const unsigned lane = lane_id();
  const int row = mat_row(lane), col = mat_col(lane);
  A acc0 = static_cast<A>(c.e_[0]), acc1 = static_cast<A>(c.e_[1]);
  for (int k = 0; k < 8; k += 2) {
    vec<TA, 2> ak = shuffle<Shfl::idx>(mask, a.e_, mat_lane(row, k));  // A[row][k..k+1]
    vec<TB, 2> b0 = shuffle<Shfl::idx>(mask, b.e_, mat_lane(k, col));  // B[k][col..col+1]
    vec<TB, 2> b1 = shuffle<Shfl::idx>(mask, b.e_, mat_lane(k + 1, col));
    acc0 += static_cast<A>(ak[0]) * static_cast<A>(b0[0]) +
            static_cast<A>(ak[1]) * static_cast<A>(b1[0]);
    acc1 += static_cast<A>(ak[0]) * static_cast<A>(b0[1]) +
            static_cast<A>(ak[1]) * static_cast<A>(b1[1]);
  }
  d.e_ = vec<TD, 2>(static_cast<TD>(acc0), static_cast<TD>(acc1));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KILN_SIMDGROUP_MMA 1
// D (16x8, float) = A (16x8) * B (8x8) + C with one mma.sync; the fragments are PTX's for
// m16n8k8 (lane g*4+t: a01 = A[g][2t..2t+1], a23 = A[g+8][2t..2t+1], b01 = B[2t..2t+1][g],
// c/d = rows g and g+8, columns 2t and 2t+1), 16-bit values packed two to a register.
template <typename TI>
KILN_HD void mma_m16n8k8(float (&d)[4], uint32_t a01, uint32_t a23, uint32_t b01,
                         const float (&c)[4]) {
  if constexpr (is_same_v<TI, half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%7,%8,%9,%10};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a01), "r"(a23), "r"(b01), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%7,%8,%9,%10};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a01), "r"(a23), "r"(b01), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  }
}
#endif

#ifdef KILN_SIMDGROUP_MMA
// D = A * B + C on tensor cores for 16-bit inputs and float accumulators. The 8x8 A is the
// top half of mma's 16x8 operand (the bottom half is zero); the lanes' elements move
// between Metal's layout and mma's fragments by shuffles.
template <typename TI>
KILN_HD void mma_tensor(simdgroup_matrix<float, 8, 8>& d, const simdgroup_matrix<TI, 8, 8>& a,
                        const simdgroup_matrix<TI, 8, 8>& b,
                        const simdgroup_matrix<float, 8, 8>& c) {
  const unsigned mask = __activemask();
  const unsigned lane = lane_id();
  const int g = static_cast<int>(lane >> 2), t = static_cast<int>(lane & 3);
  // A[g][2t..2t+1] and C[g][2t..2t+1]: one pair each in Metal's layout.
  vec<TI, 2> ap = shuffle<Shfl::idx>(mask, a.e_, mat_lane(g, 2 * t));
  vec<float, 2> cp = shuffle<Shfl::idx>(mask, c.e_, mat_lane(g, 2 * t));
  // B[2t][g] and B[2t+1][g]: element (g & 1) of two lanes' pairs.
  vec<TI, 2> b0 = shuffle<Shfl::idx>(mask, b.e_, mat_lane(2 * t, g & ~1));
  vec<TI, 2> b1 = shuffle<Shfl::idx>(mask, b.e_, mat_lane(2 * t + 1, g & ~1));
  const uint32_t a01 = uint32_t(ap[0].bits_) | (uint32_t(ap[1].bits_) << 16);
  const uint32_t b01 = uint32_t(b0[g & 1].bits_) | (uint32_t(b1[g & 1].bits_) << 16);
  const float cin[4] = {cp[0], cp[1], 0.0f, 0.0f};
  float dout[4];
  mma_m16n8k8<TI>(dout, a01, 0u, b01, cin);
  // Back to Metal's layout: D[row][col..col+1] is held by fragment lane row*4 + col/2.
  const vec<float, 2> frag(dout[0], dout[1]);
  d.e_ =
      shuffle<Shfl::idx>(mask, frag, static_cast<unsigned>(mat_row(lane) * 4 + mat_col(lane) / 2));
}
#endif

}  // namespace detail

template <typename T, int C, int R>
KILN_HD simdgroup_matrix<T, C, R>::simdgroup_matrix(T diag) {
  const unsigned lane = detail::lane_id();
  const int row = detail::mat_row(lane), col = detail::mat_col(lane);
  e_ = vec<T, 2>(row == col ? diag : T(0), row == col + 1 ? diag : T(0));
}

/** A matrix with every element `value`. */
template <typename T, int C, int R>
KILN_HD simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, C, R> m;
  m.e_ = vec<T, 2>(value);
  return m;
}

/**
 * Loads the 8x8 block at `origin` (x = column, y = row) of a row-major matrix with
 * `elements_per_row` elements per row; `transpose` loads that block transposed. `src` is a
 * pointer or array (checked in checking mode).
 */
template <typename T, typename P, typename O = vec<ulong, 2>>
KILN_HD void simdgroup_load(simdgroup_matrix<T, 8, 8>& d, P&& src, ulong elements_per_row = 8,
                            O origin = O(0), bool transpose = false) {
  const unsigned lane = detail::lane_id();
  const int row = detail::mat_row(lane), col = detail::mat_col(lane);
  for (int j = 0; j < 2; ++j) {
    const ulong r = transpose ? col + j : row, c = transpose ? row : col + j;
    d.e_[j] = static_cast<T>(src[(origin.y + r) * elements_per_row + origin.x + c]);
  }
}

/** Stores `a` into the 8x8 block at `origin` (transposed with `transpose`). `origin`'s type
 * is a parameter so that headers that never load or store do not instantiate ulong2. */
template <typename T, typename P, typename O = vec<ulong, 2>>
KILN_HD void simdgroup_store(const simdgroup_matrix<T, 8, 8>& a, P&& dst,
                             ulong elements_per_row = 8, O origin = O(0), bool transpose = false) {
  const unsigned lane = detail::lane_id();
  const int row = detail::mat_row(lane), col = detail::mat_col(lane);
  for (int j = 0; j < 2; ++j) {
    const ulong r = transpose ? col + j : row, c = transpose ? row : col + j;
    auto& e = dst[(origin.y + r) * elements_per_row + origin.x + c];
    e = static_cast<detail::decay_value_t<decltype(e)>>(a.e_[j]);
  }
}

/** d = a * b + c. */
template <typename TD, typename TA, typename TB, typename TC>
KILN_HD void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d,
                                           const simdgroup_matrix<TA, 8, 8>& a,
                                           const simdgroup_matrix<TB, 8, 8>& b,
                                           const simdgroup_matrix<TC, 8, 8>& c) {
#ifdef KILN_SIMDGROUP_MMA
  if constexpr (detail::is_same_v<TD, float> && detail::is_same_v<TC, float> &&
                detail::is_same_v<TA, TB> && is_half_v<TA>) {
    detail::mma_tensor(d, a, b, c);
    return;
  }
#endif
  detail::mma_shuffle(d, a, b, c);
}

/** d = a * b. */
template <typename TD, typename TA, typename TB>
KILN_HD void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                const simdgroup_matrix<TB, 8, 8>& b) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<TD, 8, 8>(TD(0)));
}

}  // namespace metal
