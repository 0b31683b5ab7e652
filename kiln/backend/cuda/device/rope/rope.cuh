// rope on the GPU (backend/cuda/fast_rope.cpp): each thread writes N consecutive features of
// one row (one position of one head), or in the default layout with aligned rows N features
// and their partners half a rotation away, with 16-byte vector loads. Rows are
// read through their strides (a transposed (B, T, H, D) input needs no copy); the output is
// row-contiguous.
//
// Angles as the CPU computes them: inverse frequencies rounded to float (from double, in
// shared memory once per block), position (offset + t) * scale in float, their product in
// float, then sincosf.
#pragma once

#include "kiln/backend/cuda/device/norm/rows.cuh"

namespace kiln {

struct RopeArgs {
  Dims<int> shape;          // x.shape[:-1]: the rows
  Dims<long long> strides;  // x.strides[:-1]
  int ndim;                 // rows' dimensions
  int dims;                 // features rotated
  int half;                 // dims / 2
  int n_offsets;            // 1, or one per batch element
  long long rows;
  long long D;          // features per row
  long long sd;         // x's stride along the features
  long long L;          // positions (x.shape[-2])
  long long per_batch;  // rows per batch element
  double log_base;      // log(base), unless has_freqs
  float scale;
  bool has_freqs;
  bool forward;  // false: rotate by the opposite angles (the vjp)
  bool vec;      // sd == 1 and every row and partner vector 16-byte aligned
};

template <typename T, bool TRADITIONAL>
__global__ void __launch_bounds__(256)
    rope(const T* __restrict__ x, T* __restrict__ y, const int* __restrict__ offsets,
         const float* __restrict__ freqs, const __grid_constant__ RopeArgs a) {
  using A = rows::Acc<T>;
  constexpr int N = rows::kVec<T>;
  extern __shared__ float inv_freq_f[];
  A* inv_freq = reinterpret_cast<A*>(inv_freq_f);
  for (int i = threadIdx.x; i < a.half; i += blockDim.x) {
    inv_freq[i] = a.has_freqs ? A(1) / static_cast<A>(freqs[i])
                              : static_cast<A>(exp(-static_cast<double>(i) * a.log_base / a.half));
  }
  __syncthreads();
  // Default layout, vectorized: a thread owns a vector of the first half and its partner
  // half a rotation away (one sincos per pair, each element read once), or a vector past
  // `dims`. Otherwise a thread owns N consecutive features.
  const bool pairs = !TRADITIONAL && a.vec && a.dims == 2 * a.half;
  const long long units = pairs ? a.half / N + (a.D - a.dims) / N : (a.D + N - 1) / N;
  const long long tid = global_thread_x<long long>();
  const long long r = tid / units;
  if (r >= a.rows) return;
  const long long e0 = (tid - r * units) * N;
  const long long b = r / a.per_batch, t = r % a.L;
  const A pos = (static_cast<A>(offsets[a.n_offsets > 1 ? b : 0]) + static_cast<A>(t)) *
                static_cast<A>(a.scale);
  const T* xr = x + elem_to_loc(r, a.shape, a.strides, a.ndim);
  T* yr = y + r * a.D;
  auto angle = [&](long long i, A& c, A& s) {
    const A th = pos * inv_freq[i];
    if constexpr (is_same_v<A, double>)
      sincos(th, &s, &c);
    else
      sincosf(th, &s, &c);
    if (!a.forward) s = -s;
  };
  // Element j of the row (scalar path) and its rotated value.
  auto rotated = [&](long long j, const T* row, long long sd) -> A {
    const A xj = rows::to_acc<A>(row[j * sd]);
    if (j >= a.dims) return xj;
    A c, s;
    if (TRADITIONAL) {
      const long long i = j / 2;
      angle(i, c, s);
      return j % 2 == 0 ? xj * c - rows::to_acc<A>(row[(j + 1) * sd]) * s
                        : rows::to_acc<A>(row[(j - 1) * sd]) * s + xj * c;
    }
    if (j < a.half) {
      angle(j, c, s);
      return xj * c - rows::to_acc<A>(row[(j + a.half) * sd]) * s;
    }
    angle(j - a.half, c, s);
    return rows::to_acc<A>(row[(j - a.half) * sd]) * s + xj * c;
  };
  if (pairs) {
    if (e0 >= a.half) {  // past the rotated features: a copy
      const long long e = a.dims + (e0 - a.half);
      store_vec<N>(yr + e, load_vec<N>(xr + e));
      return;
    }
    const Vec<T, N> lo = load_vec<N>(xr + e0), hi = load_vec<N>(xr + e0 + a.half);
    Vec<T, N> olo, ohi;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      A c, s;
      angle(e0 + k, c, s);
      const A x1 = rows::to_acc<A>(lo.v[k]), x2 = rows::to_acc<A>(hi.v[k]);
      olo.v[k] = rows::from_acc<T>(x1 * c - x2 * s);
      ohi.v[k] = rows::from_acc<T>(x2 * c + x1 * s);
    }
    store_vec<N>(yr + e0, olo);
    store_vec<N>(yr + e0 + a.half, ohi);
    return;
  }
  if (!a.vec || e0 + N > a.D) {
    for (long long j = e0; j < e0 + N && j < a.D; ++j)
      yr[j] = rows::from_acc<T>(rotated(j, xr, a.sd));
    return;
  }
  const Vec<T, N> xv = load_vec<N>(xr + e0);
  Vec<T, N> o;
  if (e0 >= a.dims) {
    o = xv;
  } else if (TRADITIONAL) {
#pragma unroll
    for (int k = 0; k < N; k += 2) {
      A c, s;
      angle((e0 + k) / 2, c, s);
      const A x1 = rows::to_acc<A>(xv.v[k]), x2 = rows::to_acc<A>(xv.v[k + 1]);
      o.v[k] = rows::from_acc<T>(x1 * c - x2 * s);
      o.v[k + 1] = rows::from_acc<T>(x1 * s + x2 * c);
    }
  } else {
    // Vectors never straddle half or dims here (the host checks half % N == 0).
    const bool first = e0 < a.half;
    const Vec<T, N> pv = load_vec<N>(xr + (first ? e0 + a.half : e0 - a.half));
#pragma unroll
    for (int k = 0; k < N; ++k) {
      A c, s;
      angle((first ? e0 : e0 - a.half) + k, c, s);
      const A own = rows::to_acc<A>(xv.v[k]), other = rows::to_acc<A>(pv.v[k]);
      o.v[k] = rows::from_acc<T>(first ? own * c - other * s : other * s + own * c);
    }
  }
  store_vec<N>(yr + e0, o);
}

}  // namespace kiln
