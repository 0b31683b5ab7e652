// rope on the GPU (backend/cuda/fast_rope.cpp). The input is (B, heads..., L, D); a rotation
// angle depends on the position and the frequency only, so a thread owns one slice of
// features at one position of one batch element, computes its N angles once and applies them
// to a chunk of heads (kBatch rows loaded before any is stored). Slices: in the default
// layout with aligned rows, a 16-byte vector of the first half and its partner half a
// rotation away (each element read once); traditional, N consecutive features; past `dims`,
// a copy. Rows are read through their strides (a transposed (B, T, H, D) input needs no
// copy); the output is row-contiguous.
//
// Angles as the CPU computes them: inverse frequencies rounded to float (from double, in
// shared memory once per block), position (offset + t) * scale in float, their product in
// float, then sincosf.
#pragma once

#include "kiln/backend/cuda/device/indexing.cuh"
#include "kiln/backend/cuda/device/norm/rows.cuh"

namespace kiln {

struct RopeArgs {
  Dims<int> mid_shape;          // the axes between the batch and L (the heads), collapsed
  Dims<long long> mid_strides;  // their strides in x
  int mid_ndim;                 // 0 for a 3-d input
  int dims;                     // features rotated
  int half;                     // dims / 2
  int n_offsets;                // 1, or one per batch element
  int heads;                    // product of mid_shape
  int head_chunk;               // heads per thread
  int chunks;                   // ceil(heads / head_chunk)
  int units;                    // feature slices per row
  long long B, L, D;
  long long sb, sl, sd;  // x's strides along the batch, L and the features
  double log_base;       // log(base), unless has_freqs
  float scale;
  bool has_freqs;
  bool forward;   // false: rotate by the opposite angles (the vjp)
  bool vec;       // sd == 1 and every row and partner vector 16-byte aligned
  bool y_like_x;  // y has x's strides (x dense in another axis order), else it is dense
};

namespace rope_detail {

constexpr int kBatch = 4;  // rows in flight per thread

/** The offset of head `h`'s row at (b, t) = 0 in x. */
__device__ inline long long head_loc(int h, const RopeArgs& a) {
  if (a.mid_ndim == 0) return 0;
  if (a.mid_ndim == 1) return h * a.mid_strides.v[0];
  return elem_to_loc<long long>(h, a.mid_shape, a.mid_strides, a.mid_ndim);
}

}  // namespace rope_detail

template <typename T, bool TRADITIONAL>
__global__ void __launch_bounds__(256)
    rope(const T* __restrict__ x, T* __restrict__ y, const int* __restrict__ offsets,
         const float* __restrict__ freqs, const __grid_constant__ RopeArgs a) {
  using A = rows::Acc<T>;
  using rope_detail::kBatch;
  constexpr int N = rows::kVec<T>;
  extern __shared__ float inv_freq_f[];
  A* inv_freq = reinterpret_cast<A*>(inv_freq_f);
  for (int i = threadIdx.x; i < a.half; i += blockDim.x) {
    inv_freq[i] = a.has_freqs ? A(1) / static_cast<A>(freqs[i])
                              : static_cast<A>(exp(-static_cast<double>(i) * a.log_base / a.half));
  }
  __syncthreads();
  // Thread order: slice fastest, then position, head chunk and batch element, so that a
  // warp reads whole rows of consecutive positions.
  long long tid = global_thread_x<long long>();
  const int u = static_cast<int>(tid % a.units);
  tid /= a.units;
  const long long t = tid % a.L;
  tid /= a.L;
  const int chunk = static_cast<int>(tid % a.chunks);
  const long long b = tid / a.chunks;
  if (b >= a.B) return;
  const int h0 = chunk * a.head_chunk;
  const int h1 = min(a.heads, h0 + a.head_chunk);
  const T* xb = x + b * a.sb + t * a.sl;
  T* yb = a.y_like_x ? y + b * a.sb + t * a.sl : y + (b * a.heads * a.L + t) * a.D;
  const long long y_head = a.L * a.D;  // dense y: + h * L * D

  // The slice's first feature and, per slot k, its frequency (-1: not rotated).
  const bool pairs = !TRADITIONAL && a.vec;
  const int e0 = pairs && u >= a.half / N ? a.dims + (u - a.half / N) * N : u * N;
  const A pos = (static_cast<A>(offsets[a.n_offsets > 1 ? b : 0]) + static_cast<A>(t)) *
                static_cast<A>(a.scale);
  A c[N], s[N];
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const int j = e0 + k;
    const int i = j >= a.dims ? -1 : pairs ? j : TRADITIONAL ? j / 2 : j < a.half ? j : j - a.half;
    if (i < 0 || (TRADITIONAL && a.vec && k % 2 == 1)) continue;  // odd slots share k - 1's
    const A th = pos * inv_freq[i];
    if constexpr (is_same_v<A, double>)
      sincos(th, &s[k], &c[k]);
    else
      sincosf(th, &s[k], &c[k]);
    if (!a.forward) s[k] = -s[k];
  }

  if (!a.vec) {  // any stride or alignment: element by element
    for (int h = h0; h < h1; ++h) {
      const T* xr = xb + rope_detail::head_loc(h, a);
      T* yr = yb + (a.y_like_x ? rope_detail::head_loc(h, a) : h * y_head);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const int j = e0 + k;
        if (j >= a.D) break;
        const A xj = rows::to_acc<A>(xr[j * a.sd]);
        A r = xj;
        if (j < a.dims) {
          const int p = TRADITIONAL ? j ^ 1 : j < a.half ? j + a.half : j - a.half;
          const A xp = rows::to_acc<A>(xr[p * a.sd]);
          const bool first = TRADITIONAL ? j % 2 == 0 : j < a.half;
          r = first ? xj * c[k] - xp * s[k] : xp * s[k] + xj * c[k];
        }
        yr[j] = rows::from_acc<T>(r);
      }
    }
    return;
  }

  // Vectorized: kBatch heads' vectors loaded (clamped to the chunk's last head), then stored.
  const bool copy = e0 >= a.dims;
  for (int hb = h0; hb < h1; hb += kBatch) {
    Vec<T, N> lo[kBatch], hi[kBatch];
#pragma unroll
    for (int q = 0; q < kBatch; ++q) {
      const T* xr = xb + rope_detail::head_loc(min(hb + q, h1 - 1), a) + e0;
      lo[q] = load_vec<N>(xr);
      if (pairs && !copy) hi[q] = load_vec<N>(xr + a.half);
    }
#pragma unroll
    for (int q = 0; q < kBatch; ++q) {
      if (hb + q >= h1) break;
      T* yr = yb + (a.y_like_x ? rope_detail::head_loc(hb + q, a) : (hb + q) * y_head) + e0;
      if (copy) {
        store_vec<N>(yr, lo[q]);
      } else if (pairs) {
        Vec<T, N> olo, ohi;
#pragma unroll
        for (int k = 0; k < N; ++k) {
          const A x1 = rows::to_acc<A>(lo[q].v[k]), x2 = rows::to_acc<A>(hi[q].v[k]);
          olo.v[k] = rows::from_acc<T>(x1 * c[k] - x2 * s[k]);
          ohi.v[k] = rows::from_acc<T>(x2 * c[k] + x1 * s[k]);
        }
        store_vec<N>(yr, olo);
        store_vec<N>(yr + a.half, ohi);
      } else {  // traditional: (even, odd) pairs inside the vector (the host checks N even)
        Vec<T, N> o;
#pragma unroll
        for (int k = 0; k < N; k += 2) {
          const A x1 = rows::to_acc<A>(lo[q].v[k]), x2 = rows::to_acc<A>(lo[q].v[k + 1]);
          o.v[k] = rows::from_acc<T>(x1 * c[k] - x2 * s[k]);
          o.v[k + 1] = rows::from_acc<T>(x1 * s[k] + x2 * c[k]);
        }
        store_vec<N>(yr, o);
      }
    }
  }
}

}  // namespace kiln
