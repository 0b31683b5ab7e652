"""Batched SiLU on a 2-D grid: y = x * sigmoid(x) = x / (1 + exp(-x)) for x (batch, N).

The grid's x dimension runs along a row and its y dimension over the rows, so each thread
reads its (row, column) from thread_position_in_grid without dividing a flat index. In the
Metal flavour kiln keeps Metal's dispatch: no thread outside the grid exists, so the body
needs no bounds check. The CUDA flavour runs whole blocks and checks.

x: (batch, N) of dtype T, row-contiguous.
"""

import sys

import kiln.core as mx

from cookbook import Recipe, main, random_normal

METAL_SOURCE = """
  uint col = thread_position_in_grid.x;
  uint row = thread_position_in_grid.y;
  size_t i = size_t(row) * x_shape[1] + col;
  float v = float(x[i]);
  y[i] = T(v / (1.0f + metal::exp(-v)));
"""

CUDA_SOURCE = """
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= x_shape[0] || col >= x_shape[1]) return;
  const size_t i = size_t(row) * x_shape[1] + col;
  const float v = static_cast<float>(x[i]);
  y[i] = static_cast<T>(v / (1.0f + expf(-v)));
"""

_metal = mx.fast.metal_kernel(
    name="cookbook_silu_2d", input_names=["x"], output_names=["y"], source=METAL_SOURCE
)
_cuda = mx.fast.cuda_kernel(
    name="cookbook_silu_2d", input_names=["x"], output_names=["y"], source=CUDA_SOURCE
)


def silu_2d(kernel, x):
    batch, n = x.shape
    return kernel(
        inputs=[x],
        template=[("T", x.dtype)],
        grid=(n, batch, 1),  # one thread per element: (column, row)
        threadgroup=(256, 1, 1),
        output_shapes=[x.shape],
        output_dtypes=[x.dtype],
    )[0]


def inputs(size, key):
    shape = {"small": (7, 1000), "large": (64, 1 << 20)}[size]
    return (random_normal(shape, key, scale=3.0),)


RECIPES = [
    Recipe(
        name="silu_2d",
        description="batched SiLU, 2-D grid",
        kernels={"metal": lambda x: silu_2d(_metal, x), "cuda": lambda x: silu_2d(_cuda, x)},
        reference=lambda x: x * mx.sigmoid(x),
        inputs=inputs,
        tolerance=1e-6,
    )
]

if __name__ == "__main__":
    sys.exit(main(RECIPES))
