"""Matrix multiply with 8x8 simdgroup matrices: C = A B for A (M, K), B (K, N) in float16
(or any T), C in float32; M, N and K multiples of 8.

Metal's simdgroup_matrix<T, 8, 8> spreads an 8x8 tile over the 32 lanes of a simdgroup
(two elements each); simdgroup_load/store move tiles between memory and lanes and
simdgroup_multiply_accumulate is the hardware matrix product. On NVIDIA GPUs kiln runs
half and bfloat products accumulated in float on tensor cores (mma.sync), so the Metal
body below is a tensor-core kernel as written. One simdgroup computes one 8x8 tile of C,
walking K eight at a time (the seed article's kernel, with A's row length K where the
article passes N).

The CUDA body does the same tiling by hand: the warp stages the A and B tiles in shared
memory and each lane computes its two elements of the C tile with FMAs. (A CUDA kernel
after speed would use WMMA or mma.sync; this one shows the layout, and also runs on the
CPU.) Both are timed against kiln's matmul in float16 (cuBLASLt on the GPU); a real GEMM
also stages larger tiles in shared memory for reuse, which is why these are slower.
"""

import sys

import kiln.core as mx

from cookbook import Recipe, main, random_normal

METAL_SOURCE = """
  uint tile_col = threadgroup_position_in_grid.x;
  uint tile_row = threadgroup_position_in_grid.y;
  uint K = a_shape[1], N = b_shape[1];

  simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_matrix<T, 8, 8> a_tile, b_tile;
  for (uint k = 0; k < K; k += 8) {
    // Origins are (column, row) of the tile's first element.
    simdgroup_load(a_tile, a, K, ulong2(k, tile_row * 8));
    simdgroup_load(b_tile, b, N, ulong2(tile_col * 8, k));
    simdgroup_multiply_accumulate(acc, a_tile, b_tile, acc);
  }
  simdgroup_store(acc, c, N, ulong2(tile_col * 8, tile_row * 8));
"""

CUDA_SOURCE = """
  const int tile_col = blockIdx.x, tile_row = blockIdx.y;  // one warp per 8x8 tile of C
  const int lane = threadIdx.x;
  const int K = a_shape[1], N = b_shape[1];
  const int r = lane / 4, c0 = 2 * (lane % 4);  // this lane's two elements: (r, c0), (r, c0 + 1)
  __shared__ float a_tile[8][8], b_tile[8][8];

  float acc0 = 0.0f, acc1 = 0.0f;
  for (int k = 0; k < K; k += 8) {
    const size_t a_at = size_t(tile_row * 8 + r) * K + k + c0;
    const size_t b_at = size_t(k + r) * N + tile_col * 8 + c0;
    a_tile[r][c0] = static_cast<float>(a[a_at]);
    a_tile[r][c0 + 1] = static_cast<float>(a[a_at + 1]);
    b_tile[r][c0] = static_cast<float>(b[b_at]);
    b_tile[r][c0 + 1] = static_cast<float>(b[b_at + 1]);
    __syncwarp();
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      acc0 += a_tile[r][kk] * b_tile[kk][c0];
      acc1 += a_tile[r][kk] * b_tile[kk][c0 + 1];
    }
    __syncwarp();  // before the next step overwrites the tiles
  }
  const size_t c_at = size_t(tile_row * 8 + r) * N + tile_col * 8 + c0;
  c[c_at] = acc0;
  c[c_at + 1] = acc1;
"""

_names = dict(input_names=["a", "b"], output_names=["c"])
_metal = mx.fast.metal_kernel(name="cookbook_simdgroup_matmul", source=METAL_SOURCE, **_names)
_cuda = mx.fast.cuda_kernel(name="cookbook_simdgroup_matmul", source=CUDA_SOURCE, **_names)


def matmul_8x8(kernel, a, b):
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2 or m % 8 or n % 8 or k % 8:
        raise ValueError(f"shapes {a.shape} @ {b.shape}: the inner sizes must match and all "
                         "must be multiples of 8")
    return kernel(
        inputs=[a, b],
        template=[("T", a.dtype)],
        grid=(32 * (n // 8), m // 8, 1),  # one 32-thread simdgroup per 8x8 tile of C
        threadgroup=(32, 1, 1),
        output_shapes=[(m, n)],
        output_dtypes=[mx.float32],
    )[0]


def inputs(size, key):
    m, k, n = {"small": (40, 64, 24), "large": (4096, 4096, 4096)}[size]
    ka, kb = mx.random.split(key)
    return random_normal((m, k), ka, mx.float16), random_normal((k, n), kb, mx.float16)


RECIPES = [
    Recipe(
        name="simdgroup_matmul",
        description="8x8 simdgroup_matrix matmul (float16 in, float32 out)",
        kernels={
            "metal": lambda a, b: matmul_8x8(_metal, a, b),
            "cuda": lambda a, b: matmul_8x8(_cuda, a, b),
        },
        # Products of float16 values are exact in float32: the check sees summation order only.
        reference=lambda a, b: a.astype(mx.float32) @ b.astype(mx.float32),
        builtin=lambda a, b: a @ b,
        builtin_name="matmul (float16)",
        inputs=inputs,
        tolerance=1e-4,
    )
]

if __name__ == "__main__":
    sys.exit(main(RECIPES))
