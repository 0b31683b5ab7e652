"""Numerically stable softmax over the last axis: exp(x - max) / sum(exp(x - max)).

One threadgroup per row, three passes over the row: the maximum (simd_max, then the
simdgroup maxima through threadgroup memory), the sum of exp(x - max), and the write.
Subtracting the maximum keeps exp from overflowing; the result is the same.

x: (rows, D) of dtype T. Checked and timed against kiln's fused softmax (mx.softmax).
"""

import sys

import kiln.core as mx

from cookbook import Recipe, main, random_normal

# Threadgroup-wide max and sum, returned to every thread (see layernorm.py).
METAL_HEADER = """
METAL_FUNC float threadgroup_max(float v, threadgroup float* partial, uint lane, uint simd,
                                 uint n_simd) {
  v = simd_max(v);
  if (lane == 0) {
    partial[simd] = v;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  v = simd_max(lane < n_simd ? partial[lane] : -INFINITY);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return v;
}

METAL_FUNC float threadgroup_sum(float v, threadgroup float* partial, uint lane, uint simd,
                                 uint n_simd) {
  v = simd_sum(v);
  if (lane == 0) {
    partial[simd] = v;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  v = simd_sum(lane < n_simd ? partial[lane] : 0.0f);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return v;
}
"""

METAL_SOURCE = """
  uint row = threadgroup_position_in_grid.x;
  uint tid = thread_position_in_threadgroup.x;
  uint lane = thread_index_in_simdgroup;
  uint simd = simdgroup_index_in_threadgroup;
  uint n_threads = threads_per_threadgroup.x;
  uint n_simd = (n_threads + 31) / 32;
  uint D = x_shape[1];
  const device T* x_row = x + size_t(row) * D;
  device T* y_row = y + size_t(row) * D;
  threadgroup float partial[32];

  float row_max = -INFINITY;
  for (uint i = tid; i < D; i += n_threads) {
    row_max = max(row_max, float(x_row[i]));
  }
  row_max = threadgroup_max(row_max, partial, lane, simd, n_simd);

  float sum = 0.0f;
  for (uint i = tid; i < D; i += n_threads) {
    sum += metal::exp(float(x_row[i]) - row_max);
  }
  float inv_sum = 1.0f / threadgroup_sum(sum, partial, lane, simd, n_simd);

  for (uint i = tid; i < D; i += n_threads) {
    y_row[i] = T(metal::exp(float(x_row[i]) - row_max) * inv_sum);
  }
"""

CUDA_HEADER = """
template <typename Op>
__device__ float block_reduce(float v, float* partial, float identity, Op op) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int n_warps = (blockDim.x + 31) / 32;
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < n_warps ? partial[lane] : identity;
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  __syncthreads();
  return v;
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
"""

CUDA_SOURCE = """
  const int row = blockIdx.x, tid = threadIdx.x;
  const int D = x_shape[1];
  const T* x_row = x + size_t(row) * D;
  T* y_row = y + size_t(row) * D;
  __shared__ float partial[32];

  float row_max = -INFINITY;
  for (int i = tid; i < D; i += blockDim.x) row_max = fmaxf(row_max, static_cast<float>(x_row[i]));
  row_max = block_reduce(row_max, partial, -INFINITY, MaxOp());

  float sum = 0.0f;
  for (int i = tid; i < D; i += blockDim.x) sum += expf(static_cast<float>(x_row[i]) - row_max);
  const float inv_sum = 1.0f / block_reduce(sum, partial, 0.0f, SumOp());

  for (int i = tid; i < D; i += blockDim.x) {
    y_row[i] = static_cast<T>(expf(static_cast<float>(x_row[i]) - row_max) * inv_sum);
  }
"""

_names = dict(input_names=["x"], output_names=["y"])
_metal = mx.fast.metal_kernel(
    name="cookbook_softmax", source=METAL_SOURCE, header=METAL_HEADER, **_names
)
_cuda = mx.fast.cuda_kernel(
    name="cookbook_softmax", source=CUDA_SOURCE, header=CUDA_HEADER, **_names
)


def softmax(kernel, x):
    rows, D = x.shape
    tg = min(1024, max(32, 32 * ((D // 4 + 31) // 32)))
    return kernel(
        inputs=[x],
        template=[("T", x.dtype)],
        grid=(rows * tg, 1, 1),
        threadgroup=(tg, 1, 1),
        output_shapes=[x.shape],
        output_dtypes=[x.dtype],
    )[0]


def inputs(size, key):
    rows, D = {"small": (9, 500), "large": (8192, 4096)}[size]
    return (random_normal((rows, D), key, scale=4.0),)


RECIPES = [
    Recipe(
        name="softmax",
        description="softmax, three passes",
        kernels={"metal": lambda x: softmax(_metal, x), "cuda": lambda x: softmax(_cuda, x)},
        reference=lambda x: mx.softmax(x.astype(mx.float32), axis=-1),
        builtin=lambda x: mx.softmax(x, axis=-1),
        builtin_name="mx.softmax",
        inputs=inputs,
        tolerance=1e-6,
    )
]

if __name__ == "__main__":
    sys.exit(main(RECIPES))
