// The fused Softmax over the last axis of a row-contiguous input, as the CPU computes it:
// m = the NaN-propagating maximum of the row, s = sum(exp(x - m)), out = exp(x - m) / s,
// half types in float and rounded once. A group of threads (a warp, or the whole block for
// long rows) owns a row and reads it three times; the later reads hit the L1/L2 caches.
#pragma once

#include "kiln/backend/cuda/device/reduce.cuh"

namespace kiln {

template <typename Acc>
__device__ inline Acc softmax_exp(Acc x) {
  if constexpr (is_same_v<Acc, double>)
    return exp(x);
  else
    return expf(x);
}

/** T: float16, bfloat16, float32 or float64; Acc: float, or double for float64. */
template <typename T, typename Acc>
__global__ void __launch_bounds__(kReduceBlock)
    softmax_rows(const T* __restrict__ in, T* __restrict__ out, long long rows, long long n,
                 int group) {
  using MaxP = ReducePolicy<MaxOp, Acc, Acc, Acc>;
  using SumP = ReducePolicy<SumOp, Acc, Acc, Acc>;
  const int lane = threadIdx.x % group;
  const long long row =
      static_cast<long long>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (row >= rows) return;
  const T* x = in + row * n;
  T* y = out + row * n;
  __shared__ Acc shared_value;

  Acc m = MaxP::init();
  for (long long j = lane; j < n; j += group) m = MaxOp::apply(m, static_cast<Acc>(x[j]));
  m = group_combine<MaxP>(m, group);
  // Broadcast the group's result from its first thread.
  if (group > 32) {
    if (threadIdx.x == 0) shared_value = m;
    __syncthreads();
    m = shared_value;
    __syncthreads();
  } else {
    m = __shfl_sync(0xffffffffu, m, 0);
  }

  Acc s = SumP::init();
  for (long long j = lane; j < n; j += group) s += softmax_exp(static_cast<Acc>(x[j]) - m);
  s = group_combine<SumP>(s, group);
  if (group > 32) {
    if (threadIdx.x == 0) shared_value = s;
    __syncthreads();
    s = shared_value;
  } else {
    s = __shfl_sync(0xffffffffu, s, 0);
  }

  for (long long j = lane; j < n; j += group) {
    const Acc e = softmax_exp(static_cast<Acc>(x[j]) - m) / s;
    if constexpr (is_half_v<T>)
      y[j] = T(static_cast<float>(e));
    else
      y[j] = static_cast<T>(e);
  }
}

}  // namespace kiln
