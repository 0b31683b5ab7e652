"""RMSNorm with a simdgroup reduction: y = x / sqrt(mean(x^2) + eps) * w over the last axis.

One threadgroup per row. Each thread sums the squares of a strided slice of the row,
simd_sum (a warp shuffle tree in CUDA) reduces within each simdgroup of 32 threads, the
simdgroup partials meet in threadgroup memory, and every simdgroup reduces them again so
that all threads hold the total without a broadcast. Sums are in float whatever T is.

x: (rows, D) of dtype T, w: (D,) of dtype T, eps: a 0-d float32 array (scalars travel as
0-d inputs: the body sees `eps` as a `const float&`).
"""

import sys

import kiln.core as mx

from cookbook import Recipe, main, random_normal

METAL_SOURCE = """
  uint row = threadgroup_position_in_grid.x;
  uint tid = thread_position_in_threadgroup.x;
  uint lane = thread_index_in_simdgroup;
  uint simd = simdgroup_index_in_threadgroup;
  uint n_threads = threads_per_threadgroup.x;
  uint D = x_shape[1];
  const device T* x_row = x + size_t(row) * D;
  device T* y_row = y + size_t(row) * D;

  float sum_sq = 0.0f;
  for (uint i = tid; i < D; i += n_threads) {
    float v = float(x_row[i]);
    sum_sq += v * v;
  }
  sum_sq = simd_sum(sum_sq);

  threadgroup float partial[32];  // one slot per simdgroup: at most 1024 / 32
  if (lane == 0) {
    partial[simd] = sum_sq;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint n_simd = (n_threads + 31) / 32;
  sum_sq = simd_sum(lane < n_simd ? partial[lane] : 0.0f);

  float inv_rms = metal::rsqrt(sum_sq / float(D) + eps);
  for (uint i = tid; i < D; i += n_threads) {
    y_row[i] = T(float(x_row[i]) * inv_rms * float(w[i]));
  }
"""

CUDA_SOURCE = """
  const int row = blockIdx.x;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int D = x_shape[1];
  const T* x_row = x + size_t(row) * D;
  T* y_row = y + size_t(row) * D;

  float sum_sq = 0.0f;
  for (int i = tid; i < D; i += blockDim.x) {
    const float v = static_cast<float>(x_row[i]);
    sum_sq += v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  }

  __shared__ float partial[32];  // one slot per warp
  if (lane == 0) partial[warp] = sum_sq;
  __syncthreads();
  const int n_warps = (blockDim.x + 31) / 32;
  sum_sq = lane < n_warps ? partial[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) {
    sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  }

  const float inv_rms = rsqrtf(sum_sq / D + eps);
  for (int i = tid; i < D; i += blockDim.x) {
    y_row[i] = static_cast<T>(static_cast<float>(x_row[i]) * inv_rms * static_cast<float>(w[i]));
  }
"""

_metal = mx.fast.metal_kernel(
    name="cookbook_rmsnorm", input_names=["x", "w", "eps"], output_names=["y"], source=METAL_SOURCE
)
_cuda = mx.fast.cuda_kernel(
    name="cookbook_rmsnorm", input_names=["x", "w", "eps"], output_names=["y"], source=CUDA_SOURCE
)


def _threads_per_row(D):
    # Whole simdgroups (the CUDA body shuffles over full warps), about 4 elements per thread.
    return min(1024, max(32, 32 * ((D // 4 + 31) // 32)))


def rms_norm(kernel, x, w, eps):
    rows, D = x.shape
    tg = _threads_per_row(D)
    return kernel(
        inputs=[x, w, eps],
        template=[("T", x.dtype)],
        grid=(rows * tg, 1, 1),  # grid counts threads: one threadgroup per row
        threadgroup=(tg, 1, 1),
        output_shapes=[x.shape],
        output_dtypes=[x.dtype],
    )[0]


def reference(x, w, eps):
    x32 = x.astype(mx.float32)
    return x32 * mx.rsqrt(mx.mean(mx.square(x32), axis=-1, keepdims=True) + eps) * w


def inputs(size, key):
    rows, D = {"small": (13, 200), "large": (8192, 4096)}[size]
    k1, k2 = mx.random.split(key)
    return random_normal((rows, D), k1), random_normal((D,), k2), mx.array(1e-5)


RECIPES = [
    Recipe(
        name="rmsnorm",
        description="RMSNorm, simdgroup reduction",
        kernels={
            "metal": lambda x, w, eps: rms_norm(_metal, x, w, eps),
            "cuda": lambda x, w, eps: rms_norm(_cuda, x, w, eps),
        },
        reference=reference,
        inputs=inputs,
        tolerance=1e-5,
    )
]

if __name__ == "__main__":
    sys.exit(main(RECIPES))
