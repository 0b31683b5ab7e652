"""Single-head attention, tiled over the keys, with an online softmax:
out = softmax(q k^T * scale) v for q (N, D), k and v (M, D).

One thread per query row keeps its query, its output accumulator and two softmax
statistics in registers; the threadgroup loads the keys and values one tile of BLOCK rows
at a time into threadgroup memory, shared by all its queries. The online softmax
(Milakov and Gimelshein 2018, arXiv:1805.02867; FlashAttention, Dao et al. 2022,
arXiv:2205.14135) never holds a row of scores: for each key, the running maximum m and
sum l are updated, and what was accumulated under the old maximum is rescaled by
exp(m_old - m_new). Memory stays O(N + M) instead of O(N M).

q: (N, HEAD_DIM), k and v: (M, HEAD_DIM) of dtype T; scale: a 0-d float32 array.
HEAD_DIM and BLOCK are template ints (compile-time sizes of registers and tiles).
"""

import sys

import kiln.core as mx

from cookbook import Recipe, main, random_normal

METAL_SOURCE = """
  uint q_row = thread_position_in_grid.x;
  uint tid = thread_position_in_threadgroup.x;
  uint n_threads = threads_per_threadgroup.x;
  uint M = k_shape[0];
  threadgroup float k_tile[BLOCK * HEAD_DIM];
  threadgroup float v_tile[BLOCK * HEAD_DIM];

  float q_reg[HEAD_DIM], acc[HEAD_DIM];
  for (uint d = 0; d < HEAD_DIM; ++d) {
    q_reg[d] = float(q[q_row * HEAD_DIM + d]) * scale;
    acc[d] = 0.0f;
  }
  float row_max = -INFINITY, row_sum = 0.0f;

  for (uint start = 0; start < M; start += BLOCK) {
    uint n = min(uint(BLOCK), M - start);
    for (uint i = tid; i < n * HEAD_DIM; i += n_threads) {  // the threadgroup loads the tile
      k_tile[i] = float(k[start * HEAD_DIM + i]);
      v_tile[i] = float(v[start * HEAD_DIM + i]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (uint j = 0; j < n; ++j) {
      float score = 0.0f;
      for (uint d = 0; d < HEAD_DIM; ++d) {
        score += q_reg[d] * k_tile[j * HEAD_DIM + d];
      }
      float new_max = max(row_max, score);
      float correction = metal::exp(row_max - new_max);  // 0 for the first key
      float p = metal::exp(score - new_max);
      row_sum = row_sum * correction + p;
      for (uint d = 0; d < HEAD_DIM; ++d) {
        acc[d] = acc[d] * correction + p * v_tile[j * HEAD_DIM + d];
      }
      row_max = new_max;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // before the next tile overwrites
  }

  for (uint d = 0; d < HEAD_DIM; ++d) {
    out[q_row * HEAD_DIM + d] = T(acc[d] / row_sum);
  }
"""

# The same in CUDA. Blocks are whole, so threads past the last query still help load the
# tiles and reach every barrier; they only skip the arithmetic and the write.
CUDA_SOURCE = """
  const int q_row = blockIdx.x * blockDim.x + threadIdx.x;
  const bool active = q_row < q_shape[0];
  const int M = k_shape[0];
  __shared__ float k_tile[BLOCK * HEAD_DIM];
  __shared__ float v_tile[BLOCK * HEAD_DIM];

  float q_reg[HEAD_DIM], acc[HEAD_DIM];
  for (int d = 0; d < HEAD_DIM; ++d) {
    q_reg[d] = active ? static_cast<float>(q[size_t(q_row) * HEAD_DIM + d]) * scale : 0.0f;
    acc[d] = 0.0f;
  }
  float row_max = -INFINITY, row_sum = 0.0f;

  for (int start = 0; start < M; start += BLOCK) {
    const int n = min(BLOCK, M - start);
    for (int i = threadIdx.x; i < n * HEAD_DIM; i += blockDim.x) {
      k_tile[i] = static_cast<float>(k[size_t(start) * HEAD_DIM + i]);
      v_tile[i] = static_cast<float>(v[size_t(start) * HEAD_DIM + i]);
    }
    __syncthreads();
    for (int j = 0; active && j < n; ++j) {
      float score = 0.0f;
      for (int d = 0; d < HEAD_DIM; ++d) score += q_reg[d] * k_tile[j * HEAD_DIM + d];
      const float new_max = fmaxf(row_max, score);
      const float correction = expf(row_max - new_max);
      const float p = expf(score - new_max);
      row_sum = row_sum * correction + p;
      for (int d = 0; d < HEAD_DIM; ++d) {
        acc[d] = acc[d] * correction + p * v_tile[j * HEAD_DIM + d];
      }
      row_max = new_max;
    }
    __syncthreads();
  }

  if (active) {
    for (int d = 0; d < HEAD_DIM; ++d) {
      out[size_t(q_row) * HEAD_DIM + d] = static_cast<T>(acc[d] / row_sum);
    }
  }
"""

_names = dict(input_names=["q", "k", "v", "scale"], output_names=["out"])
_metal = mx.fast.metal_kernel(name="cookbook_attention", source=METAL_SOURCE, **_names)
_cuda = mx.fast.cuda_kernel(name="cookbook_attention", source=CUDA_SOURCE, **_names)

BLOCK = 32  # keys per tile: 2 * 32 * HEAD_DIM floats of threadgroup memory


def attention(kernel, q, k, v, scale, threads=64):
    n, head_dim = q.shape
    return kernel(
        inputs=[q, k, v, scale],
        template=[("T", q.dtype), ("HEAD_DIM", head_dim), ("BLOCK", BLOCK)],
        grid=(n, 1, 1),
        threadgroup=(threads, 1, 1),
        output_shapes=[q.shape],
        output_dtypes=[q.dtype],
    )[0]


def reference(q, k, v, scale):
    scores = (q.astype(mx.float32) * scale) @ k.astype(mx.float32).T
    return mx.softmax(scores, axis=-1) @ v.astype(mx.float32)


def inputs(size, key):
    n, m, d = {"small": (70, 45, 32), "large": (4096, 4096, 64)}[size]
    kq, kk, kv = mx.random.split(key, 3)
    return (random_normal((n, d), kq), random_normal((m, d), kk), random_normal((m, d), kv),
            mx.array(d**-0.5))


RECIPES = [
    Recipe(
        name="attention",
        description="single-head tiled attention, online softmax",
        kernels={
            "metal": lambda *a: attention(_metal, *a),
            "cuda": lambda *a: attention(_cuda, *a),
        },
        reference=reference,
        inputs=inputs,
        tolerance=1e-5,
    )
]

if __name__ == "__main__":
    sys.exit(main(RECIPES))
