"""LayerNorm with a two-pass reduction: y = (x - mean) / sqrt(var + eps) * w + b over the
last axis.

One threadgroup per row. The first pass sums x for the mean; the second sums (x - mean)^2
for the variance, reading the row again instead of using E[x^2] - mean^2, which loses
every digit when |mean| is large against the spread. Both passes reduce with the same
helper (simdgroup sums, then the simdgroup partials through threadgroup memory).

x: (rows, D) of dtype T, w and b: (D,) of dtype T, eps: a 0-d float32 array.
"""

import sys

import kiln.core as mx

from cookbook import Recipe, main, random_normal

# Sum of v over the threadgroup, returned to every thread. `partial` holds one float per
# simdgroup; the closing barrier lets the caller use it again for the next reduction.
METAL_HEADER = """
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

  float sum = 0.0f;
  for (uint i = tid; i < D; i += n_threads) {
    sum += float(x_row[i]);
  }
  float mean = threadgroup_sum(sum, partial, lane, simd, n_simd) / float(D);

  float sum_sq = 0.0f;
  for (uint i = tid; i < D; i += n_threads) {
    float d = float(x_row[i]) - mean;
    sum_sq += d * d;
  }
  float var = threadgroup_sum(sum_sq, partial, lane, simd, n_simd) / float(D);

  float inv_std = metal::rsqrt(var + eps);
  for (uint i = tid; i < D; i += n_threads) {
    y_row[i] = T((float(x_row[i]) - mean) * inv_std * float(w[i]) + float(b[i]));
  }
"""

CUDA_HEADER = """
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum of v over the block (whole warps), returned to every thread; `partial` holds one float
// per warp and is free again when this returns.
__device__ float block_sum(float v, float* partial) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int n_warps = (blockDim.x + 31) / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = warp_sum(lane < n_warps ? partial[lane] : 0.0f);
  __syncthreads();
  return v;
}
"""

CUDA_SOURCE = """
  const int row = blockIdx.x, tid = threadIdx.x;
  const int D = x_shape[1];
  const T* x_row = x + size_t(row) * D;
  T* y_row = y + size_t(row) * D;
  __shared__ float partial[32];

  float sum = 0.0f;
  for (int i = tid; i < D; i += blockDim.x) sum += static_cast<float>(x_row[i]);
  const float mean = block_sum(sum, partial) / D;

  float sum_sq = 0.0f;
  for (int i = tid; i < D; i += blockDim.x) {
    const float d = static_cast<float>(x_row[i]) - mean;
    sum_sq += d * d;
  }
  const float inv_std = rsqrtf(block_sum(sum_sq, partial) / D + eps);

  for (int i = tid; i < D; i += blockDim.x) {
    const float v = (static_cast<float>(x_row[i]) - mean) * inv_std;
    y_row[i] = static_cast<T>(v * static_cast<float>(w[i]) + static_cast<float>(b[i]));
  }
"""

_names = dict(input_names=["x", "w", "b", "eps"], output_names=["y"])
_metal = mx.fast.metal_kernel(
    name="cookbook_layernorm", source=METAL_SOURCE, header=METAL_HEADER, **_names
)
_cuda = mx.fast.cuda_kernel(
    name="cookbook_layernorm", source=CUDA_SOURCE, header=CUDA_HEADER, **_names
)


def layer_norm(kernel, x, w, b, eps):
    rows, D = x.shape
    tg = min(1024, max(32, 32 * ((D // 4 + 31) // 32)))  # whole simdgroups
    return kernel(
        inputs=[x, w, b, eps],
        template=[("T", x.dtype)],
        grid=(rows * tg, 1, 1),
        threadgroup=(tg, 1, 1),
        output_shapes=[x.shape],
        output_dtypes=[x.dtype],
    )[0]


def reference(x, w, b, eps):
    x32 = x.astype(mx.float32)
    mean = mx.mean(x32, axis=-1, keepdims=True)
    var = mx.var(x32, axis=-1, keepdims=True)
    return (x32 - mean) * mx.rsqrt(var + eps) * w + b


def inputs(size, key):
    rows, D = {"small": (11, 300), "large": (8192, 4096)}[size]
    k1, k2, k3 = mx.random.split(key, 3)
    # An offset mean: the case where the one-pass formula E[x^2] - mean^2 goes wrong.
    x = random_normal((rows, D), k1) + 100.0
    return x, random_normal((D,), k2), random_normal((D,), k3), mx.array(1e-5)


RECIPES = [
    Recipe(
        name="layernorm",
        description="LayerNorm, two-pass",
        kernels={
            "metal": lambda *a: layer_norm(_metal, *a),
            "cuda": lambda *a: layer_norm(_cuda, *a),
        },
        reference=reference,
        inputs=inputs,
        tolerance=2e-5,
    )
]

if __name__ == "__main__":
    sys.exit(main(RECIPES))
