"""The custom kernels in the model's hot path, each with its backward, attached through
``mx.custom_function``:

- :func:`swiglu`: ``silu(gate) * up``, the SwiGLU MLP's elementwise part, in one pass
  instead of three (sigmoid, two multiplies) and their intermediates. The body is written in
  the Metal flavour (``mx.fast.metal_kernel``), as an MLX user writes it for Apple GPUs;
  kiln compiles it for NVIDIA GPUs and for the CPU.
- :func:`add_rms_norm`: ``h = x + residual`` and ``rms_norm(h) * weight`` in one pass over
  the row (the residual add that ends attention fused with the MLP's pre-norm), with the
  body in the CUDA flavour (``mx.fast.cuda_kernel``): one block per row, a warp-shuffle
  reduction of the sum of squares.

Both compute in float32 whatever the storage dtype is and round where the built-in
composition rounds (``h`` is rounded to the storage dtype before it is normalized), so
they match ``x * mx.sigmoid(x) * up`` and ``mx.fast.rms_norm(x + r, w, eps)``.
"""

from .framework import mx

# ---------------------------------------------------------------- SwiGLU (Metal flavour)

# Consecutive elements per thread: 4 on a GPU (many threads in flight); 16 on the CPU,
# where each kernel thread is a loop iteration and fewer, longer ones cost less.
SWIGLU_PER_THREAD = {"gpu": 4, "cpu": 16}


def _on_cpu() -> bool:
    return mx.default_device() == mx.cpu


SWIGLU_FORWARD = """
  uint n = gate_shape[0];
  uint start = thread_position_in_grid.x * N_PER_THREAD;
  uint stop = metal::min(start + N_PER_THREAD, n);
  for (uint i = start; i < stop; ++i) {
    float g = float(gate[i]);
    float s = g / (1.0f + metal::exp(-g));
    out[i] = T(s * float(up[i]));
  }
"""

# silu(g) = g * sigmoid(g);  silu'(g) = sigmoid(g) * (1 + g * (1 - sigmoid(g))).
SWIGLU_BACKWARD = """
  uint n = gate_shape[0];
  uint start = thread_position_in_grid.x * N_PER_THREAD;
  uint stop = metal::min(start + N_PER_THREAD, n);
  for (uint i = start; i < stop; ++i) {
    float g = float(gate[i]);
    float u = float(up[i]);
    float c = float(cotangent[i]);
    float sig = 1.0f / (1.0f + metal::exp(-g));
    d_gate[i] = T(c * u * sig * (1.0f + g * (1.0f - sig)));
    d_up[i] = T(c * g * sig);
  }
"""

_cache = {}


def _swiglu_kernel(which):
    key = "swiglu_" + which
    if key not in _cache:
        if which == "forward":
            _cache[key] = mx.fast.metal_kernel(
                name="llm_swiglu",
                input_names=["gate", "up"],
                output_names=["out"],
                source=SWIGLU_FORWARD,
            )
        else:
            _cache[key] = mx.fast.metal_kernel(
                name="llm_swiglu_vjp",
                input_names=["gate", "up", "cotangent"],
                output_names=["d_gate", "d_up"],
                source=SWIGLU_BACKWARD,
            )
    return _cache[key]


def _swiglu_launch(which, arrays, n_out):
    like = arrays[0]
    dtype = like.dtype
    # The kernels index flat arrays of one dtype (a cotangent may come in float32).
    flat = [a.astype(dtype).reshape(-1) for a in arrays]
    per = SWIGLU_PER_THREAD["cpu" if _on_cpu() else "gpu"]
    threads = max(1, (like.size + per - 1) // per)
    outs = _swiglu_kernel(which)(
        inputs=flat,
        template=[("T", dtype), ("N_PER_THREAD", per)],
        grid=(threads, 1, 1),
        threadgroup=(min(256, threads), 1, 1),
        output_shapes=[(like.size,)] * n_out,
        output_dtypes=[dtype] * n_out,
    )
    return [o.reshape(like.shape) for o in outs]


@mx.custom_function
def swiglu(gate, up):
    """``silu(gate) * up`` in one fused kernel (gate and up of one shape and dtype)."""
    return _swiglu_launch("forward", [gate, up], 1)[0]


@swiglu.vjp
def _swiglu_vjp(primals, cotangent, output):
    gate, up = primals
    d_gate, d_up = _swiglu_launch("backward", [gate, up, cotangent], 2)
    return d_gate, d_up


def swiglu_reference(gate, up):
    """The built-in composition the fused kernel replaces."""
    return gate * mx.sigmoid(gate) * up


# ---------------------------------------------------------------- residual add + RMSNorm (CUDA flavour)

# One block per row; each thread takes a strided slice of the row. The block reduction is
# a warp shuffle tree, then one slot per warp in shared memory, then a second shuffle.
ADD_RMS_FORWARD = """
  const int row = blockIdx.x;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int D = x_shape[1];
  const size_t base = size_t(row) * D;

  float sum_sq = 0.0f;
  for (int i = tid; i < D; i += blockDim.x) {
    // h rounds to T first: the built-in composition stores x + residual in T.
    const T hv = static_cast<T>(static_cast<float>(x[base + i]) +
                                static_cast<float>(residual[base + i]));
    h[base + i] = hv;
    const float v = static_cast<float>(hv);
    sum_sq += v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  }
  __shared__ float partial[32];
  if (lane == 0) partial[warp] = sum_sq;
  __syncthreads();
  const int n_warps = (blockDim.x + 31) / 32;
  sum_sq = lane < n_warps ? partial[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) {
    sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  }
  const float inv = rsqrtf(sum_sq / D + eps);
  for (int i = tid; i < D; i += blockDim.x) {
    const float v = static_cast<float>(h[base + i]);
    y[base + i] = static_cast<T>(v * inv * static_cast<float>(weight[i]));
  }
"""

# With g = ct_y * w and inv = rsqrt(mean(h^2) + eps):
#   dh = ct_h + inv * g - h * inv^3 * mean(g * h)        (the gradient of x and residual)
#   dw_rows[row] = ct_y * h * inv                         (summed over rows outside)
# One pass reduces sum(h^2) and sum(g * h) together, a second writes both outputs.
ADD_RMS_BACKWARD = """
  const int row = blockIdx.x;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int D = h_shape[1];
  const size_t base = size_t(row) * D;

  float sum_sq = 0.0f, sum_gh = 0.0f;
  for (int i = tid; i < D; i += blockDim.x) {
    const float v = static_cast<float>(h[base + i]);
    const float g = static_cast<float>(ct_y[base + i]) * static_cast<float>(weight[i]);
    sum_sq += v * v;
    sum_gh += g * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
    sum_gh += __shfl_xor_sync(0xffffffffu, sum_gh, offset);
  }
  __shared__ float partial_sq[32];
  __shared__ float partial_gh[32];
  if (lane == 0) {
    partial_sq[warp] = sum_sq;
    partial_gh[warp] = sum_gh;
  }
  __syncthreads();
  const int n_warps = (blockDim.x + 31) / 32;
  sum_sq = lane < n_warps ? partial_sq[lane] : 0.0f;
  sum_gh = lane < n_warps ? partial_gh[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) {
    sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
    sum_gh += __shfl_xor_sync(0xffffffffu, sum_gh, offset);
  }
  const float inv = rsqrtf(sum_sq / D + eps);
  const float coef = inv * inv * inv * sum_gh / D;
  for (int i = tid; i < D; i += blockDim.x) {
    const float v = static_cast<float>(h[base + i]);
    const float cy = static_cast<float>(ct_y[base + i]);
    const float g = cy * static_cast<float>(weight[i]);
    d_h[base + i] = static_cast<T>(static_cast<float>(ct_h[base + i]) + inv * g - v * coef);
    d_w_rows[base + i] = cy * v * inv;
  }
"""


# The same two kernels with one thread per row and no warp operations, for CPU streams:
# there each kernel thread of a block is a fiber, and a shuffle or barrier is a switch
# between fibers, so a row per thread (a plain loop) is the fast mapping.
ADD_RMS_FORWARD_ROW = """
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= x_shape[0]) return;
  const int D = x_shape[1];
  const size_t base = size_t(row) * D;
  float sum_sq = 0.0f;
  for (int i = 0; i < D; ++i) {
    const T hv = static_cast<T>(static_cast<float>(x[base + i]) +
                                static_cast<float>(residual[base + i]));
    h[base + i] = hv;
    const float v = static_cast<float>(hv);
    sum_sq += v * v;
  }
  const float inv = rsqrtf(sum_sq / D + eps);
  for (int i = 0; i < D; ++i) {
    y[base + i] = static_cast<T>(static_cast<float>(h[base + i]) * inv *
                                 static_cast<float>(weight[i]));
  }
"""

ADD_RMS_BACKWARD_ROW = """
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= h_shape[0]) return;
  const int D = h_shape[1];
  const size_t base = size_t(row) * D;
  float sum_sq = 0.0f, sum_gh = 0.0f;
  for (int i = 0; i < D; ++i) {
    const float v = static_cast<float>(h[base + i]);
    sum_sq += v * v;
    sum_gh += static_cast<float>(ct_y[base + i]) * static_cast<float>(weight[i]) * v;
  }
  const float inv = rsqrtf(sum_sq / D + eps);
  const float coef = inv * inv * inv * sum_gh / D;
  for (int i = 0; i < D; ++i) {
    const float v = static_cast<float>(h[base + i]);
    const float cy = static_cast<float>(ct_y[base + i]);
    const float g = cy * static_cast<float>(weight[i]);
    d_h[base + i] = static_cast<T>(static_cast<float>(ct_h[base + i]) + inv * g - v * coef);
    d_w_rows[base + i] = cy * v * inv;
  }
"""

# "block" (a block per row: GPUs), "row" (a thread per row: CPUs) or None: by device.
ADD_RMS_LAYOUT = None


def _add_rms_layout() -> str:
    return ADD_RMS_LAYOUT or ("row" if _on_cpu() else "block")


def _add_rms_kernel(which, layout):
    key = f"add_rms_{which}_{layout}"
    if key not in _cache:
        suffix = "" if layout == "block" else "_row"
        if which == "forward":
            _cache[key] = mx.fast.cuda_kernel(
                name="llm_add_rms_norm" + suffix,
                input_names=["x", "residual", "weight", "eps"],
                output_names=["h", "y"],
                source=ADD_RMS_FORWARD if layout == "block" else ADD_RMS_FORWARD_ROW,
            )
        else:
            _cache[key] = mx.fast.cuda_kernel(
                name="llm_add_rms_norm_vjp" + suffix,
                input_names=["h", "weight", "ct_h", "ct_y", "eps"],
                output_names=["d_h", "d_w_rows"],
                source=ADD_RMS_BACKWARD if layout == "block" else ADD_RMS_BACKWARD_ROW,
            )
    return _cache[key]


def _launch_shape(rows, D, layout):
    """(grid, threadgroup) in threads."""
    if layout == "row":
        tg = 32
        return (max(rows, 1), 1, 1), (tg, 1, 1)
    # Whole warps (the shuffles run over full warps), about 4 elements per thread.
    tg = min(1024, max(32, 32 * ((D // 4 + 31) // 32)))
    return (max(rows, 1) * tg, 1, 1), (tg, 1, 1)


def _rows(a):
    return a.reshape(-1, a.shape[-1])


@mx.custom_function
def _add_rms_norm(x, residual, weight, eps):
    shape, D = x.shape, x.shape[-1]
    x2, r2 = _rows(x), _rows(residual.astype(x.dtype))
    layout = _add_rms_layout()
    grid, tg = _launch_shape(x2.shape[0], D, layout)
    h, y = _add_rms_kernel("forward", layout)(
        inputs=[x2, r2, weight.astype(x.dtype), eps],
        template=[("T", x.dtype)],
        grid=grid,
        threadgroup=tg,
        output_shapes=[x2.shape, x2.shape],
        output_dtypes=[x.dtype, x.dtype],
    )
    return h.reshape(shape), y.reshape(shape)


@_add_rms_norm.vjp
def _add_rms_norm_vjp(primals, cotangents, outputs):
    x, residual, weight, eps = primals
    h = outputs[0]
    ct_h, ct_y = cotangents
    shape, D = x.shape, x.shape[-1]
    dtype = x.dtype
    h2 = _rows(h)
    layout = _add_rms_layout()
    grid, tg = _launch_shape(h2.shape[0], D, layout)
    d_h, d_w_rows = _add_rms_kernel("backward", layout)(
        inputs=[
            h2,
            weight.astype(dtype),
            _rows(ct_h.astype(dtype)),
            _rows(ct_y.astype(dtype)),
            eps,
        ],
        template=[("T", dtype)],
        grid=grid,
        threadgroup=tg,
        output_shapes=[h2.shape, h2.shape],
        output_dtypes=[dtype, mx.float32],
    )
    d_h = d_h.reshape(shape)
    d_w = d_w_rows.sum(axis=0).astype(weight.dtype)
    return d_h, d_h.astype(residual.dtype), d_w, mx.zeros_like(eps)


def add_rms_norm(x, residual, weight, eps: float):
    """``(h, rms_norm(h) * weight)`` with ``h = x + residual``, in one fused kernel per
    direction. x and residual: ``(..., D)``; weight: ``(D,)``."""
    return _add_rms_norm(x, residual, weight, mx.array(eps, dtype=mx.float32))


def add_rms_norm_reference(x, residual, weight, eps: float):
    """The built-in composition the fused kernel replaces."""
    h = x + residual
    return h, mx.fast.rms_norm(h, weight, eps)
