// Kernels around the library calls of the linalg, fft and conv families (cuSOLVER, cuFFT,
// cuDNN): layout changes between kiln's row-major matrices and the libraries' column-major
// ones with triangle masks, LU pivots to permutations, casts to complex, scaling, and the
// im2col / col2im of the general convolution. T is an unsigned integer of the element's size
// where only bits move.
#pragma once

#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln {

/**
 * dst[b, r, c] = src[b, r, c] over a batch of rows x cols matrices, each side with its own
 * (batch, row, column) strides in elements. `mask`: 0 copies every element; 1 keeps r >= c
 * (lower), 2 keeps r <= c (upper), zeroing the rest.
 */
template <typename T>
__global__ void matrix_copy(const T* __restrict__ src, T* __restrict__ dst, long long batch,
                            long long rows, long long cols, long long sb, long long sr,
                            long long sc, long long db, long long dr, long long dc, int mask) {
  const long long i = global_thread_x<long long>();
  if (i >= batch * rows * cols) return;
  const long long c = i % cols, r = (i / cols) % rows, b = i / (cols * rows);
  T v = T(0);
  if (mask == 0 || (mask == 1 && r >= c) || (mask == 2 && r <= c)) {
    v = src[b * sb + r * sr + c * sc];
  }
  dst[b * db + r * dr + c * dc] = v;
}

/** Identity matrices: `one` is the bit pattern of 1 in the element type. */
template <typename T>
__global__ void identity_bits(T* __restrict__ dst, long long batch, long long n, T one) {
  const long long i = global_thread_x<long long>();
  if (i >= batch * n * n) return;
  const long long c = i % n, r = (i / n) % n;
  dst[i] = r == c ? one : T(0);
}

/** LAPACK's 1-based pivots (k per matrix) to 0-based uint32 pivots and the row indices P
 * (m per matrix) with (L U)[P] = a; `perm` is m ints of scratch per matrix. One thread per
 * matrix. */
__global__ void lu_pivots(const int* __restrict__ ipiv, unsigned int* __restrict__ pivots,
                          unsigned int* __restrict__ rows_out, int* __restrict__ perm,
                          long long batch, int m, int k) {
  const long long b = global_thread_x<long long>();
  if (b >= batch) return;
  int* p = perm + b * m;
  for (int j = 0; j < m; ++j) p[j] = j;
  for (int j = 0; j < k; ++j) {
    const int q = ipiv[b * k + j] - 1;
    pivots[b * k + j] = static_cast<unsigned int>(q);
    const int t = p[j];
    p[j] = p[q];
    p[q] = t;
  }
  for (int j = 0; j < m; ++j) rows_out[b * m + p[j]] = static_cast<unsigned int>(j);
}

/** 1-based identity pivots 1..n for every matrix (getrs on an already triangular matrix). */
__global__ void iota_pivots(int* __restrict__ ipiv, long long batch, int n) {
  const long long i = global_thread_x<long long>();
  if (i >= batch * n) return;
  ipiv[i] = static_cast<int>(i % n) + 1;
}

/** info[b] = 1 + the first j with a zero diagonal element a[b][j][j] (column-major, ld = n), or
 * 0: a singular triangular matrix, reported like LAPACK's info. One thread per matrix. */
template <typename T>
__global__ void zero_diagonal_info(const T* __restrict__ a, int* __restrict__ info, long long batch,
                                   int n) {
  const long long b = global_thread_x<long long>();
  if (b >= batch) return;
  const T* m = a + b * static_cast<long long>(n) * n;
  int first = 0;
  for (int j = 0; j < n && first == 0; ++j) {
    if (m[j + static_cast<long long>(j) * n] == T(0)) first = j + 1;
  }
  info[b] = first;
}

/** dst[i] = (src[i], 0) as complex64 for float or double src. */
template <typename T>
__global__ void to_complex64(const T* __restrict__ src, float2* __restrict__ dst, long long n) {
  const long long i = global_thread_x<long long>();
  if (i >= n) return;
  dst[i] = make_float2(static_cast<float>(src[i]), 0.0f);
}

/** x[i] *= scale over n floats (complex arrays as 2n floats). */
__global__ void scale_floats(float* __restrict__ x, long long n, float scale) {
  const long long i = global_thread_x<long long>();
  if (i >= n) return;
  x[i] *= scale;
}

/** Geometry of a convolution for the im2col kernels (up to 3 spatial dims, see
 * primitives_conv.h): input (N, in..., C), output positions out..., kernel k..., and per dim
 * stride, pad_lo, kernel and input dilation; flip reverses the taps. */
struct ConvGeom {
  int d, C, Cg;
  int in[3], out[3], k[3], stride[3], lo[3], kdil[3], idil[3];
  int flip;
  long long in_sp, out_sp, k_sp;
};

/** The input offset (spatial linear index times C) of tap t of output position o, or -1. */
__device__ inline long long conv_tap(const ConvGeom& g, long long o, long long t) {
  long long off = 0, mul = 1;
  for (int i = g.d - 1; i >= 0; --i) {
    const int oi = static_cast<int>(o % g.out[i]);
    o /= g.out[i];
    const int ki = static_cast<int>(t % g.k[i]);
    t /= g.k[i];
    const int tap = g.flip ? g.k[i] - 1 - ki : ki;
    const long long pos = static_cast<long long>(oi) * g.stride[i] +
                          static_cast<long long>(tap) * g.kdil[i] - g.lo[i];
    if (pos < 0 || pos % g.idil[i] != 0 || pos / g.idil[i] >= g.in[i]) return -1;
    off += (pos / g.idil[i]) * mul;
    mul *= g.in[i];
  }
  return off * g.C;
}

/** cols[r, (t, c)] = x[n, tap(o, t), group * Cg + c] for rows r = (n, o) in [r0, r0 + rows). */
template <typename T>
__global__ void im2col(const T* __restrict__ x, T* __restrict__ cols, ConvGeom g, int group,
                       long long r0, long long rows) {
  const long long i = global_thread_x<long long>();
  const long long kc = g.k_sp * g.Cg;
  if (i >= rows * kc) return;
  const long long r = r0 + i / kc, col = i % kc;
  const long long n = r / g.out_sp, o = r % g.out_sp, t = col / g.Cg, c = col % g.Cg;
  const long long off = conv_tap(g, o, t);
  cols[i] = off < 0 ? T(0) : x[n * g.in_sp * g.C + off + group * g.Cg + c];
}

/** dx[n, p, group * Cg + c] += cols over every (o, t) reaching input position p (the adjoint
 * of im2col), as a gather: one thread per element of dx, visiting the taps that reach it. */
template <typename T, typename Acc>
__global__ void col2im(const T* __restrict__ cols, T* __restrict__ dx, ConvGeom g, int group,
                       long long n0, long long samples) {
  const long long i = global_thread_x<long long>();
  if (i >= samples * g.in_sp * g.Cg) return;
  const long long c = i % g.Cg, p = (i / g.Cg) % g.in_sp, n = i / (g.Cg * g.in_sp);
  // Visit every output position and tap: o * stride + tap * kdil - lo == p * idil per dim.
  int pi[3];
  long long rem = p;
  for (int d = g.d - 1; d >= 0; --d) {
    pi[d] = static_cast<int>(rem % g.in[d]);
    rem /= g.in[d];
  }
  Acc acc = Acc(0);
  const long long kc = g.k_sp * g.Cg;
  for (long long t = 0; t < g.k_sp; ++t) {
    long long o = 0, trem = t;
    bool ok = true;
    int kk[3];
    for (int d = g.d - 1; d >= 0; --d) {
      kk[d] = static_cast<int>(trem % g.k[d]);
      trem /= g.k[d];
    }
    for (int d = 0; d < g.d && ok; ++d) {
      const int tap = g.flip ? g.k[d] - 1 - kk[d] : kk[d];
      const long long num = static_cast<long long>(pi[d]) * g.idil[d] + g.lo[d] -
                            static_cast<long long>(tap) * g.kdil[d];
      if (num < 0 || num % g.stride[d] != 0 || num / g.stride[d] >= g.out[d]) {
        ok = false;
      } else {
        o = o * g.out[d] + num / g.stride[d];
      }
    }
    if (ok) acc += static_cast<Acc>(cols[(n * g.out_sp + o) * kc + t * g.Cg + c]);
  }
  dx[(n0 + n) * g.in_sp * g.C + p * g.C + group * g.Cg + c] = static_cast<T>(acc);
}

}  // namespace kiln
