// global_norm's kernels. `partials` reads every array once: a block sums the squares of one
// chunk of one array (16 KB, 16-byte loads where the array is aligned) in double and writes
// its sum; a table of up to kNormSegments arrays travels as the kernel's parameter, so one
// launch covers a model's gradients. `finish` adds the partial sums in a fixed order (the
// result does not depend on scheduling) and writes the square root.
#pragma once

#include "kiln/backend/cuda/device/indexing.cuh"

namespace kiln::gnorm {

constexpr int kBlock = 256;
constexpr int kChunkBytes = 16384;  // per block: 4 vectors of 16 bytes per thread
constexpr int kNormSegments = 160;

// dtype: 0 float32, 1 float16, 2 bfloat16, 3 float64 (host: backend/cuda/fast_global_norm.cpp).
struct Segment {
  unsigned long long ptr;
  long long n;
  int first_block;
  int dtype;
};
struct Segments {
  Segment s[kNormSegments];
  int count;
};

__device__ inline double block_sum(double v) {
  __shared__ double warp_sums[kBlock / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = 0;
  if (warp == 0) {
    v = lane < kBlock / 32 ? warp_sums[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

template <typename T>
__device__ inline double chunk_squares(const T* p, long long lo, long long hi) {
  constexpr int N = 16 / sizeof(T);
  double acc = 0;
  const bool aligned = reinterpret_cast<unsigned long long>(p) % 16 == 0 && lo % N == 0;
  if (aligned && hi - lo == kChunkBytes / static_cast<long long>(sizeof(T))) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const Vec<T, N> v = load_vec<N>(p + lo + (k * kBlock + threadIdx.x) * N);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const double x = static_cast<double>(static_cast<float>(v.v[j]));
        acc = fma(x, x, acc);
      }
    }
  } else {
    for (long long i = lo + threadIdx.x; i < hi; i += kBlock) {
      const double x = static_cast<double>(static_cast<float>(p[i]));
      acc = fma(x, x, acc);
    }
  }
  return acc;
}

template <>
__device__ inline double chunk_squares<double>(const double* p, long long lo, long long hi) {
  double acc = 0;
  for (long long i = lo + threadIdx.x; i < hi; i += kBlock) acc = fma(p[i], p[i], acc);
  return acc;
}

__global__ void __launch_bounds__(kBlock)
    partials(const __grid_constant__ Segments g, double* __restrict__ out, int out_offset) {
  const int b = static_cast<int>(blockIdx.x);
  int lo = 0, hi = g.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (g.s[mid].first_block <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  const Segment& sg = g.s[lo];
  const int size = sg.dtype == 3 ? 8 : sg.dtype == 0 ? 4 : 2;
  const long long per_block = kChunkBytes / size;
  const long long first = (b - sg.first_block) * per_block;
  const long long last = first + per_block < sg.n ? first + per_block : sg.n;
  double acc;
  switch (sg.dtype) {
    case 0:
      acc = chunk_squares(reinterpret_cast<const float*>(sg.ptr), first, last);
      break;
    case 1:
      acc = chunk_squares(reinterpret_cast<const float16*>(sg.ptr), first, last);
      break;
    case 2:
      acc = chunk_squares(reinterpret_cast<const bfloat16*>(sg.ptr), first, last);
      break;
    default:
      acc = chunk_squares(reinterpret_cast<const double*>(sg.ptr), first, last);
      break;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) out[out_offset + b] = acc;
}

template <typename Out>
__global__ void __launch_bounds__(kBlock)
    finish(const double* __restrict__ partial, int n, Out* __restrict__ out) {
  double acc = 0;
  for (int i = threadIdx.x; i < n; i += kBlock) acc += partial[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) *out = static_cast<Out>(sqrt(acc));
}

}  // namespace kiln::gnorm
