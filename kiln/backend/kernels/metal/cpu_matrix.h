// Metal's simdgroup_matrix<T, 8, 8> on the CPU: simdgroup_load, simdgroup_store,
// simdgroup_multiply and simdgroup_multiply_accumulate, make_filled_simdgroup_matrix.
//
// The lanes hold their two elements in the layout of metal/gpu_matrix.h (Metal's: lane
// l = (l4 l3 l2 l1 l0 in bits) holds row 4*l4 + 2*l2 + l1, columns 4*l3 + 2*l0 and the next
// one), so thread_elements() sees the same values on both devices. A product is one warp
// exchange of both operands, then each lane computes its two elements in the order of the
// GPU's shuffle path (in float; in double for double). The whole simdgroup must take part.
#pragma once

#include "kiln/backend/kernels/cuda_cpu_runtime.h"
#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/vec.h"

namespace metal {

template <typename T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix is 8x8 on this backend");
  vec<T, 2> e_;  // this lane's two elements

  simdgroup_matrix() = default;
  /** A diagonal matrix holding `d` on its diagonal, as Metal's constructor. */
  explicit simdgroup_matrix(T d);
  vec<T, 2>& thread_elements() { return e_; }
  const vec<T, 2>& thread_elements() const { return e_; }
};

typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

namespace detail {

inline uint32_t matrix_lane() {
  return kiln::cpu_rt::self().linear % 32u;
}
inline int mat_row(unsigned lane) {
  return static_cast<int>(((lane >> 4) & 1) * 4 + ((lane >> 2) & 1) * 2 + ((lane >> 1) & 1));
}
inline int mat_col(unsigned lane) {
  return static_cast<int>(((lane >> 3) & 1) * 4 + (lane & 1) * 2);
}
inline unsigned mat_lane(int row, int col) {
  return static_cast<unsigned>(((row >> 2) & 1) << 4 | ((col >> 2) & 1) << 3 |
                               ((row >> 1) & 1) << 2 | (row & 1) << 1 | ((col >> 1) & 1));
}

template <typename T>
using mat_acc_t = conditional_t<is_same_v<T, double>, double, float>;

template <typename TA, typename TB>
struct MatPair {
  vec<TA, 2> a;
  vec<TB, 2> b;
};

}  // namespace detail

template <typename T, int C, int R>
simdgroup_matrix<T, C, R>::simdgroup_matrix(T diag) {
  const unsigned lane = detail::matrix_lane();
  const int row = detail::mat_row(lane), col = detail::mat_col(lane);
  e_ = vec<T, 2>(row == col ? diag : T(0), row == col + 1 ? diag : T(0));
}

/** A matrix with every element `value`. */
template <typename T, int C, int R>
simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, C, R> m;
  m.e_ = vec<T, 2>(value);
  return m;
}

/**
 * Loads the 8x8 block at `origin` (x = column, y = row) of a row-major matrix with
 * `elements_per_row` elements per row; `transpose` loads that block transposed. `src` is a
 * pointer (checked in checking mode).
 */
template <typename T, typename P, typename O = vec<ulong, 2>>
void simdgroup_load(simdgroup_matrix<T, 8, 8>& d, P&& src, ulong elements_per_row = 8,
                    O origin = O(0), bool transpose = false) {
  const unsigned lane = detail::matrix_lane();
  const int row = detail::mat_row(lane), col = detail::mat_col(lane);
  for (int j = 0; j < 2; ++j) {
    const ulong r = transpose ? col + j : row, c = transpose ? row : col + j;
    d.e_[j] = static_cast<T>(src[(origin.y + r) * elements_per_row + origin.x + c]);
  }
}

/** Stores `a` into the 8x8 block at `origin` (transposed with `transpose`). `origin`'s type
 * is a parameter so that headers that never load or store do not instantiate ulong2. */
template <typename T, typename P, typename O = vec<ulong, 2>>
void simdgroup_store(const simdgroup_matrix<T, 8, 8>& a, P&& dst, ulong elements_per_row = 8,
                     O origin = O(0), bool transpose = false) {
  const unsigned lane = detail::matrix_lane();
  const int row = detail::mat_row(lane), col = detail::mat_col(lane);
  for (int j = 0; j < 2; ++j) {
    const ulong r = transpose ? col + j : row, c = transpose ? row : col + j;
    using U = detail::remove_cv_t<std::remove_reference_t<decltype(dst[0])>>;
    dst[(origin.y + r) * elements_per_row + origin.x + c] = static_cast<U>(a.e_[j]);
  }
}

/** d = a * b + c. */
template <typename TD, typename TA, typename TB, typename TC>
void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d,
                                   const simdgroup_matrix<TA, 8, 8>& a,
                                   const simdgroup_matrix<TB, 8, 8>& b,
                                   const simdgroup_matrix<TC, 8, 8>& c, KILN_SITE_PARAMS) {
  typedef detail::mat_acc_t<TD> A;
  auto v = kiln::cpu_rt::warp_exchange(0xffffffffu, detail::MatPair<TA, TB>{a.e_, b.e_}, KILN_SITE);
  const unsigned lane = v.lane;
  const int row = detail::mat_row(lane), col = detail::mat_col(lane);
  A acc0 = static_cast<A>(c.e_[0]), acc1 = static_cast<A>(c.e_[1]);
  for (int k = 0; k < 8; k += 2) {
    const vec<TA, 2> ak = v.from(detail::mat_lane(row, k)).a;  // A[row][k..k+1]
    const vec<TB, 2> b0 = v.from(detail::mat_lane(k, col)).b;  // B[k][col..col+1]
    const vec<TB, 2> b1 = v.from(detail::mat_lane(k + 1, col)).b;
    acc0 += static_cast<A>(ak[0]) * static_cast<A>(b0[0]) +
            static_cast<A>(ak[1]) * static_cast<A>(b1[0]);
    acc1 += static_cast<A>(ak[0]) * static_cast<A>(b0[1]) +
            static_cast<A>(ak[1]) * static_cast<A>(b1[1]);
  }
  d.e_ = vec<TD, 2>(static_cast<TD>(acc0), static_cast<TD>(acc1));
}

/** d = a * b. */
template <typename TD, typename TA, typename TB>
void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                        const simdgroup_matrix<TB, 8, 8>& b, KILN_SITE_PARAMS) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<TD, 8, 8>(TD(0)), KILN_SITE);
}

}  // namespace metal
