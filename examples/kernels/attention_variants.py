"""Attention variants: causal, sliding window and grouped-query (GQA), one kernel.

Multi-head attention for q (H, N, D) and k, v (H_kv, M, D), extending attention.py's
tiled online softmax with what production models use:

- causal: the query at position i sees keys j <= i (queries are the last N of M positions,
  as when decoding after a prompt, so i counts from M - N);
- sliding window (Mistral): causal, and only the last WINDOW keys, i - WINDOW < j <= i;
- grouped-query (GQA, Ainslie et al. 2023, arXiv:2305.13245): H query heads share H_kv
  key/value heads, head h reading kv head h / (H / H_kv); nothing is copied.

The grid is (N queries, H heads). Masks cost nothing where they matter most: a threadgroup
skips every key tile that none of its queries can see (the bounds are the same for all its
threads, so the barriers stay uniform), and inside a tile a masked key is skipped before
the online softmax update. CAUSAL (bool) and WINDOW (int, 0 = none) are template
arguments, so each variant compiles to its own code without run-time branches on them.
"""

import sys

import kiln.core as mx

from cookbook import Recipe, main, random_normal

METAL_SOURCE = """
  uint q_row = thread_position_in_grid.x;
  uint head = thread_position_in_grid.y;
  uint tid = thread_position_in_threadgroup.x;
  uint n_threads = threads_per_threadgroup.x;
  uint N = q_shape[1], M = k_shape[1];
  uint kv_head = head / (q_shape[0] / k_shape[0]);
  uint offset = M - N;        // query i sits at key position i + offset
  uint pos = q_row + offset;

  // Keys visible to some query of this threadgroup: [lo, hi).
  uint first = q_row - tid, last = first + n_threads - 1;
  uint hi = CAUSAL ? min(M, last + offset + 1) : M;
  uint lo = (WINDOW > 0 && first + offset + 1 > uint(WINDOW)) ? first + offset + 1 - WINDOW : 0;

  const device T* q_ptr = q + (size_t(head) * N + q_row) * HEAD_DIM;
  const device T* k_ptr = k + size_t(kv_head) * M * HEAD_DIM;
  const device T* v_ptr = v + size_t(kv_head) * M * HEAD_DIM;
  threadgroup float k_tile[BLOCK * HEAD_DIM];
  threadgroup float v_tile[BLOCK * HEAD_DIM];

  float q_reg[HEAD_DIM], acc[HEAD_DIM];
  for (uint d = 0; d < HEAD_DIM; ++d) {
    q_reg[d] = float(q_ptr[d]) * scale;
    acc[d] = 0.0f;
  }
  float row_max = -INFINITY, row_sum = 0.0f;

  for (uint start = lo; start < hi; start += BLOCK) {
    uint n = min(uint(BLOCK), hi - start);
    for (uint i = tid; i < n * HEAD_DIM; i += n_threads) {
      k_tile[i] = float(k_ptr[start * HEAD_DIM + i]);
      v_tile[i] = float(v_ptr[start * HEAD_DIM + i]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (uint j = 0; j < n; ++j) {
      uint key = start + j;
      if ((CAUSAL && key > pos) || (WINDOW > 0 && key + WINDOW <= pos)) {
        continue;  // masked
      }
      float score = 0.0f;
      for (uint d = 0; d < HEAD_DIM; ++d) {
        score += q_reg[d] * k_tile[j * HEAD_DIM + d];
      }
      float new_max = max(row_max, score);
      float correction = metal::exp(row_max - new_max);
      float p = metal::exp(score - new_max);
      row_sum = row_sum * correction + p;
      for (uint d = 0; d < HEAD_DIM; ++d) {
        acc[d] = acc[d] * correction + p * v_tile[j * HEAD_DIM + d];
      }
      row_max = new_max;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  device T* o_ptr = out + (size_t(head) * N + q_row) * HEAD_DIM;
  for (uint d = 0; d < HEAD_DIM; ++d) {
    o_ptr[d] = T(acc[d] / row_sum);
  }
"""

CUDA_SOURCE = """
  const int N = q_shape[1], M = k_shape[1];
  const int q_row = blockIdx.x * blockDim.x + threadIdx.x;
  const int head = blockIdx.y;
  const bool active = q_row < N;  // whole blocks: the last one may run past the queries
  const int kv_head = head / (q_shape[0] / k_shape[0]);
  const int offset = M - N;
  const int pos = q_row + offset;

  const int first = blockIdx.x * blockDim.x, last = min(first + (int)blockDim.x, N) - 1;
  const int hi = CAUSAL ? min(M, last + offset + 1) : M;
  const int lo = WINDOW > 0 ? max(0, first + offset + 1 - WINDOW) : 0;

  const T* k_ptr = k + size_t(kv_head) * M * HEAD_DIM;
  const T* v_ptr = v + size_t(kv_head) * M * HEAD_DIM;
  __shared__ float k_tile[BLOCK * HEAD_DIM];
  __shared__ float v_tile[BLOCK * HEAD_DIM];

  float q_reg[HEAD_DIM], acc[HEAD_DIM];
  for (int d = 0; d < HEAD_DIM; ++d) {
    const size_t at = (size_t(head) * N + q_row) * HEAD_DIM + d;
    q_reg[d] = active ? static_cast<float>(q[at]) * scale : 0.0f;
    acc[d] = 0.0f;
  }
  float row_max = -INFINITY, row_sum = 0.0f;

  for (int start = lo; start < hi; start += BLOCK) {
    const int n = min(BLOCK, hi - start);
    for (int i = threadIdx.x; i < n * HEAD_DIM; i += blockDim.x) {
      k_tile[i] = static_cast<float>(k_ptr[size_t(start) * HEAD_DIM + i]);
      v_tile[i] = static_cast<float>(v_ptr[size_t(start) * HEAD_DIM + i]);
    }
    __syncthreads();
    for (int j = 0; active && j < n; ++j) {
      const int key = start + j;
      if ((CAUSAL && key > pos) || (WINDOW > 0 && key + WINDOW <= pos)) continue;
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
    T* o_ptr = out + (size_t(head) * N + q_row) * HEAD_DIM;
    for (int d = 0; d < HEAD_DIM; ++d) o_ptr[d] = static_cast<T>(acc[d] / row_sum);
  }
"""

_names = dict(input_names=["q", "k", "v", "scale"], output_names=["out"])
_metal = mx.fast.metal_kernel(name="cookbook_attention_variants", source=METAL_SOURCE, **_names)
_cuda = mx.fast.cuda_kernel(name="cookbook_attention_variants", source=CUDA_SOURCE, **_names)

BLOCK = 32


def attention(kernel, q, k, v, scale, causal=False, window=0, threads=64):
    heads, n, head_dim = q.shape
    if heads % k.shape[0]:
        raise ValueError(f"{heads} query heads cannot share {k.shape[0]} key/value heads")
    return kernel(
        inputs=[q, k, v, scale],
        template=[("T", q.dtype), ("HEAD_DIM", head_dim), ("BLOCK", BLOCK),
                  ("CAUSAL", causal), ("WINDOW", window)],
        grid=(n, heads, 1),
        threadgroup=(threads, 1, 1),
        output_shapes=[q.shape],
        output_dtypes=[q.dtype],
    )[0]


def reference(q, k, v, scale, causal=False, window=0):
    """Dense scores with an additive mask; kv heads repeated for GQA."""
    heads, n, _ = q.shape
    kv_heads, m, _ = k.shape
    k = mx.repeat(k.astype(mx.float32), heads // kv_heads, axis=0)
    v = mx.repeat(v.astype(mx.float32), heads // kv_heads, axis=0)
    scores = (q.astype(mx.float32) * scale) @ mx.swapaxes(k, 1, 2)  # (H, N, M)
    pos = mx.expand_dims(mx.arange(n) + (m - n), 1)
    key = mx.expand_dims(mx.arange(m), 0)
    visible = mx.ones((n, m), dtype=mx.bool_)
    if causal:
        visible = visible & (key <= pos)
    if window:
        visible = visible & (key > pos - window)
    scores = mx.where(visible, scores, mx.array(float("-inf")))
    return mx.softmax(scores, axis=-1) @ v


def make_inputs(shapes):
    def inputs(size, key):
        (heads, n, d), (kv_heads, m, _) = shapes[size]
        kq, kk, kv = mx.random.split(key, 3)
        return (random_normal((heads, n, d), kq), random_normal((kv_heads, m, d), kk),
                random_normal((kv_heads, m, d), kv), mx.array(d**-0.5))

    return inputs


def variant(name, description, shapes, **mask):
    return Recipe(
        name=name,
        description=description,
        kernels={
            "metal": lambda *a: attention(_metal, *a, **mask),
            "cuda": lambda *a: attention(_cuda, *a, **mask),
        },
        reference=lambda *a: reference(*a, **mask),
        inputs=make_inputs(shapes),
        tolerance=1e-5,
    )


LARGE = ((32, 2048, 64), (32, 2048, 64))
RECIPES = [
    variant("attention_causal", "causal attention",
            {"small": ((3, 50, 32), (3, 70, 32)), "large": LARGE}, causal=True),
    variant("attention_sliding_window", "sliding-window attention (causal)",
            {"small": ((2, 300, 16), (2, 300, 16)), "large": LARGE}, causal=True, window=128),
    variant("attention_gqa", "grouped-query attention",
            {"small": ((8, 33, 16), (2, 41, 16)), "large": ((32, 2048, 64), (8, 2048, 64))}),
]

if __name__ == "__main__":
    sys.exit(main(RECIPES))
