"""An MLP classifier whose hidden activation is a fused custom kernel.

`bias_gelu(z, b) = gelu(z + b)` (the tanh form of GELU) is one CUDA-flavour kernel instead
of an add and six elementwise ops; its gradient is a second kernel, attached with
`custom_function`, so `value_and_grad` of the loss runs the fused kernel backwards too. The
bias gradient is the column sum of the same result, left to kiln's `sum`.

    logits = bias_gelu(x @ w1, b1) @ w2 + b2         x: (batch, 64), logits: (batch, 10)
"""

import math

import kiln.core as mx

# Helpers shared by both kernels. `__device__` means nothing on the CPU, where the same
# source is compiled with the host compiler.
GELU_HEADER = """
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

__device__ inline float gelu(float u) {
  return 0.5f * u * (1.0f + tanhf(kSqrt2OverPi * (u + kCubic * u * u * u)));
}

// d gelu / du, differentiating the same tanh form.
__device__ inline float gelu_grad(float u) {
  const float t = tanhf(kSqrt2OverPi * (u + kCubic * u * u * u));
  const float dt = (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * u * u);
  return 0.5f * (1.0f + t) + 0.5f * u * dt;
}
"""

# out[r, c] = gelu(z[r, c] + b[c]); one thread per element, z row-contiguous.
FORWARD_SOURCE = """
  const int64_t n = int64_t(z_shape[0]) * z_shape[1];
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;  // the CUDA flavour runs whole blocks: check bounds
  const float u = static_cast<float>(z[i]) + static_cast<float>(b[i % z_shape[1]]);
  out[i] = static_cast<T>(gelu(u));
"""

# dz[r, c] = g[r, c] * gelu'(z[r, c] + b[c]).
BACKWARD_SOURCE = """
  const int64_t n = int64_t(z_shape[0]) * z_shape[1];
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float u = static_cast<float>(z[i]) + static_cast<float>(b[i % z_shape[1]]);
  dz[i] = static_cast<T>(static_cast<float>(g[i]) * gelu_grad(u));
"""

_kernels = {}


def _kernel(name):
    """The two kernels, defined on first use (defining one compiles nothing)."""
    if not _kernels:
        _kernels["forward"] = mx.fast.cuda_kernel(
            name="demo_bias_gelu",
            input_names=["z", "b"],
            output_names=["out"],
            source=FORWARD_SOURCE,
            header=GELU_HEADER,
        )
        _kernels["backward"] = mx.fast.cuda_kernel(
            name="demo_bias_gelu_vjp",
            input_names=["z", "b", "g"],
            output_names=["dz"],
            source=BACKWARD_SOURCE,
            header=GELU_HEADER,
        )
    return _kernels[name]


def _launch(which, inputs, like, threads=256):
    n = like.size
    return _kernel(which)(
        inputs=inputs,
        template=[("T", like.dtype)],
        grid=(max(n, 1), 1, 1),
        threadgroup=(threads, 1, 1),
        output_shapes=[like.shape],
        output_dtypes=[like.dtype],
    )[0]


@mx.custom_function
def bias_gelu(z, b):
    """gelu(z + b) for z (rows, cols) and b (cols,), one fused kernel."""
    return _launch("forward", [z, b], z)


@bias_gelu.vjp
def _bias_gelu_vjp(primals, cotangent, output):
    z, b = primals
    dz = _launch("backward", [z, b, cotangent], z)
    return dz, mx.sum(dz, axis=0)


def bias_gelu_reference(z, b):
    """The same function composed of kiln ops (the check, and the fallback without kernels)."""
    u = z + b
    return 0.5 * u * (1.0 + mx.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u * u * u)))


def init_params(sizes, seed=0):
    """He-initialized weights and zero biases for layers of `sizes` (e.g. [64, 128, 10])."""
    key = mx.random.key(seed)
    params = {}
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        key, sub = mx.random.split(key)
        scale = math.sqrt(2.0 / fan_in)
        params[f"w{i}"] = mx.random.normal((fan_in, fan_out), key=sub) * scale
        params[f"b{i}"] = mx.zeros((fan_out,))
    return params


def forward(params, x, activation=bias_gelu):
    """Logits (batch, classes): hidden layers x @ w + b through `activation`, then a linear
    output layer."""
    layers = len(params) // 2
    h = x
    for i in range(layers - 1):
        h = activation(h @ params[f"w{i}"], params[f"b{i}"])
    return h @ params[f"w{layers - 1}"] + params[f"b{layers - 1}"]


def cross_entropy(logits, labels):
    """Mean cross-entropy of int labels (batch,) under logits (batch, classes)."""
    picked = mx.take_along_axis(logits, mx.expand_dims(labels, 1), axis=1)
    return mx.mean(mx.logsumexp(logits, axis=1) - mx.squeeze(picked, 1))


def accuracy(params, x, labels, activation=bias_gelu):
    """Fraction of rows whose largest logit is the label (a Python float)."""
    predicted = mx.argmax(forward(params, x, activation), axis=1)
    return mx.mean((predicted == labels).astype(mx.float32)).item()
