"""Multi-head rotary position embedding (RoPE) on a 3-D grid, for x (batch, heads, seq, D).

RoPE (Su et al. 2021, "RoFormer", arXiv:2104.09864) rotates each pair of features by an
angle proportional to the position: for pair i < D/2 at position s, with
theta_i = base^(-2i/D),

    out[i]       = x[i] cos(s theta_i) - x[i + D/2] sin(s theta_i)
    out[i + D/2] = x[i] sin(s theta_i) + x[i + D/2] cos(s theta_i)

(the "rotate half" layout of Llama; MLX calls the interleaved one `traditional`). The grid
is (D/2 pairs, seq positions, batch * heads), so each thread reads its pair, position and
head from thread_position_in_grid and the 4-D tensor is indexed with the shape alone.

x: (batch, heads, seq, D) of dtype T, D even; base: a 0-d float32 array (e.g. 10000).
"""

import math
import sys

import kiln.core as mx

from cookbook import Recipe, main, random_normal

METAL_SOURCE = """
  uint pair = thread_position_in_grid.x;  // 0 .. D/2
  uint pos = thread_position_in_grid.y;   // 0 .. seq
  uint head = thread_position_in_grid.z;  // batch * heads
  uint seq = x_shape[2], D = x_shape[3], half_d = D / 2;
  size_t row = (size_t(head) * seq + pos) * D;

  float theta = metal::exp2(-float(2 * pair) / float(D) * metal::log2(base));
  float angle = float(pos) * theta;
  float c = metal::cos(angle), s = metal::sin(angle);
  float x1 = float(x[row + pair]), x2 = float(x[row + pair + half_d]);
  y[row + pair] = T(x1 * c - x2 * s);
  y[row + pair + half_d] = T(x1 * s + x2 * c);
"""

CUDA_SOURCE = """
  const int pair = blockIdx.x * blockDim.x + threadIdx.x;
  const int pos = blockIdx.y * blockDim.y + threadIdx.y;
  const int head = blockIdx.z * blockDim.z + threadIdx.z;
  const int seq = x_shape[2], D = x_shape[3], half_d = D / 2;
  if (pair >= half_d || pos >= seq || head >= x_shape[0] * x_shape[1]) return;
  const size_t row = (size_t(head) * seq + pos) * D;

  const float theta = exp2f(-float(2 * pair) / D * log2f(base));
  float s, c;
  sincosf(pos * theta, &s, &c);
  const float x1 = static_cast<float>(x[row + pair]);
  const float x2 = static_cast<float>(x[row + pair + half_d]);
  y[row + pair] = static_cast<T>(x1 * c - x2 * s);
  y[row + pair + half_d] = static_cast<T>(x1 * s + x2 * c);
"""

_names = dict(input_names=["x", "base"], output_names=["y"])
_metal = mx.fast.metal_kernel(name="cookbook_rope", source=METAL_SOURCE, **_names)
_cuda = mx.fast.cuda_kernel(name="cookbook_rope", source=CUDA_SOURCE, **_names)


def rope(kernel, x, base):
    batch, heads, seq, D = x.shape
    half_d = D // 2
    return kernel(
        inputs=[x, base],
        template=[("T", x.dtype)],
        grid=(half_d, seq, batch * heads),
        threadgroup=(min(half_d, 64), 4, 1),
        output_shapes=[x.shape],
        output_dtypes=[x.dtype],
    )[0]


def reference(x, base):
    *_, seq, D = x.shape
    half_d = D // 2
    theta = mx.exp(mx.arange(half_d, dtype=mx.float32) * (-2.0 / D * math.log(base.item())))
    angle = mx.expand_dims(mx.arange(seq, dtype=mx.float32), 1) * theta  # (seq, D/2)
    c, s = mx.cos(angle), mx.sin(angle)
    x1, x2 = mx.split(x.astype(mx.float32), 2, axis=-1)
    return mx.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)


def inputs(size, key):
    shape = {"small": (2, 3, 17, 32), "large": (4, 32, 2048, 128)}[size]
    return random_normal(shape, key), mx.array(10000.0)


RECIPES = [
    Recipe(
        name="rope",
        description="multi-head RoPE, 3-D grid",
        kernels={"metal": lambda *a: rope(_metal, *a), "cuda": lambda *a: rope(_cuda, *a)},
        reference=reference,
        inputs=inputs,
        # Angles reach seq radians: one float32 ulp of theta moves them by ~seq * 6e-8.
        tolerance=1e-3,
    )
]

if __name__ == "__main__":
    sys.exit(main(RECIPES))
