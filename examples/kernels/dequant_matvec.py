"""4-bit dequantize-matvec: y = W x where W (O, I) is stored as 4-bit integers with a scale
and a bias per group of GROUP consecutive inputs (MLX's affine quantization:
w = scale * q + bias, q in 0..15).

Decoding LLM tokens is a stream of matrix-vector products limited by reading the weights;
at 4 bits they are a quarter of float16's bytes. The kernel reads each packed word once
and never writes W out: one simdgroup per output row, each lane taking every 32nd uint32
word (8 weights), so the simdgroup's loads are contiguous, then simd_sum. Per group the
bias factors out: sum_j (s q_j + b) x_j = s sum_j q_j x_j + b sum_j x_j.

w_q: (O, I / 8) uint32, 8 weights per word (weight 8k + j in bits 4j..4j+3);
scales, biases: (O, I / GROUP) of dtype T; x: (I,) of dtype T; y: (O,) of dtype T.
"""

import sys

import numpy as np

import kiln.core as mx

from cookbook import Recipe, main, random_normal

GROUP = 64  # weights per scale and bias

METAL_SOURCE = """
  uint row = thread_position_in_grid.y;
  uint lane = thread_index_in_simdgroup;
  uint words = w_q_shape[1];          // I / 8
  uint groups = scales_shape[1];      // I / GROUP
  const device uint* w_row = w_q + size_t(row) * words;

  float acc = 0.0f;
  for (uint k = lane; k < words; k += 32) {
    uint packed = w_row[k];
    uint g = k / (GROUP / 8);
    float qx = 0.0f, x_sum = 0.0f;
    for (uint j = 0; j < 8; ++j) {
      float xv = float(x[k * 8 + j]);
      qx += float((packed >> (4 * j)) & 0xFu) * xv;
      x_sum += xv;
    }
    acc += float(scales[row * groups + g]) * qx + float(biases[row * groups + g]) * x_sum;
  }
  acc = simd_sum(acc);
  if (lane == 0) {
    y[row] = T(acc);
  }
"""

CUDA_SOURCE = """
  const int row = blockIdx.y * blockDim.y + threadIdx.y;  // one warp per row
  const int lane = threadIdx.x;                           // blockDim.x == 32
  if (row >= w_q_shape[0]) return;  // whole warps leave together
  const int words = w_q_shape[1], groups = scales_shape[1];
  const uint32_t* w_row = w_q + size_t(row) * words;

  float acc = 0.0f;
  for (int k = lane; k < words; k += 32) {
    const uint32_t packed = w_row[k];
    const int g = k / (GROUP / 8);
    float qx = 0.0f, x_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float xv = static_cast<float>(x[k * 8 + j]);
      qx += static_cast<float>((packed >> (4 * j)) & 0xFu) * xv;
      x_sum += xv;
    }
    acc += static_cast<float>(scales[row * groups + g]) * qx +
           static_cast<float>(biases[row * groups + g]) * x_sum;
  }
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0) y[row] = static_cast<T>(acc);
"""

_names = dict(input_names=["w_q", "scales", "biases", "x"], output_names=["y"])
_metal = mx.fast.metal_kernel(name="cookbook_dequant_matvec", source=METAL_SOURCE, **_names)
_cuda = mx.fast.cuda_kernel(name="cookbook_dequant_matvec", source=CUDA_SOURCE, **_names)

ROWS_PER_THREADGROUP = 4


def dequant_matvec(kernel, w_q, scales, biases, x):
    rows = w_q.shape[0]
    return kernel(
        inputs=[w_q, scales, biases, x],
        template=[("T", x.dtype), ("GROUP", GROUP)],
        grid=(32, rows, 1),  # x: the 32 lanes of a row's simdgroup, y: the rows
        threadgroup=(32, ROWS_PER_THREADGROUP, 1),
        output_shapes=[(rows,)],
        output_dtypes=[x.dtype],
    )[0]


def dequantize(w_q, scales, biases):
    """W (O, I) in float32 from its packed form, with kiln ops."""
    rows, words = w_q.shape
    shifts = mx.arange(0, 32, 4, dtype=mx.uint32)  # (8,): weight j of a word at bits 4j
    q = mx.bitwise_and(mx.right_shift(mx.expand_dims(w_q, 2), shifts), mx.array(15, mx.uint32))
    q = q.reshape(rows, -1, GROUP).astype(mx.float32)  # (O, groups, GROUP)
    scales = mx.expand_dims(scales.astype(mx.float32), 2)
    biases = mx.expand_dims(biases.astype(mx.float32), 2)
    w = q * scales + biases
    return w.reshape(rows, words * 8)


def reference(w_q, scales, biases, x):
    return dequantize(w_q, scales, biases) @ x.astype(mx.float32)


def inputs(size, key, dtype=mx.float16):
    rows, cols = {"small": (37, 512), "large": (14336, 4096)}[size]
    k1, k2, k3, k4 = mx.random.split(key, 4)
    # Random 4-bit codes, packed 8 to a word (NumPy: the packing is data preparation).
    codes = np.asarray(mx.random.randint(0, 16, (rows, cols // 8, 8), dtype=mx.uint32, key=k1))
    packed = (codes << (4 * np.arange(8, dtype=np.uint32))).sum(axis=2, dtype=np.uint32)
    groups = cols // GROUP
    scales = random_normal((rows, groups), k2, dtype, scale=0.02)
    biases = random_normal((rows, groups), k3, dtype, scale=0.1)
    x = random_normal((cols,), k4, dtype)
    return mx.array(packed), scales, biases, x


RECIPES = [
    Recipe(
        name="dequant_matvec",
        description="4-bit dequantize-matvec (float16 activations)",
        kernels={
            "metal": lambda *a: dequant_matvec(_metal, *a),
            "cuda": lambda *a: dequant_matvec(_cuda, *a),
        },
        reference=reference,
        builtin_name="kiln ops (dequantize, matmul)",
        inputs=inputs,
        tolerance=2e-3,  # the float16 output's rounding
    )
]

if __name__ == "__main__":
    sys.exit(main(RECIPES))
