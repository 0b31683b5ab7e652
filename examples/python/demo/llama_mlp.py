"""A Llama-style MLP block, down(silu(gate(x)) * up(x)), with `silu(gate) * up` as one
fused kernel (the seed article's `silu_gate_fused`, in the Metal flavour as MLX users
write it) and its backward as a second fused kernel attached with `custom_function`.

The seed's kernel applies SiLU to its second argument (`gate * silu(up)`); here the
arguments follow Llama's convention: SiLU of the gate projection, times the up projection.
"""

import kiln.core as mx

ELEMS_PER_THREAD = 4  # as the seed's kernel: each thread handles 4 consecutive elements

# out = silu(gate) * up over flat arrays, in float whatever T is.
FORWARD_SOURCE = """
  uint n = gate_shape[0];
  uint start = thread_position_in_grid.x * N_PER_THREAD;
  for (uint i = start; i < min(start + N_PER_THREAD, n); ++i) {
    float g = float(gate[i]);
    float silu = g / (1.0f + metal::exp(-g));
    out[i] = T(silu * float(up[i]));
  }
"""

# d gate = ct * up * silu'(gate), d up = ct * silu(gate), where
# silu'(g) = sigmoid(g) * (1 + g * (1 - sigmoid(g))).
BACKWARD_SOURCE = """
  uint n = gate_shape[0];
  uint start = thread_position_in_grid.x * N_PER_THREAD;
  for (uint i = start; i < min(start + N_PER_THREAD, n); ++i) {
    float g = float(gate[i]);
    float u = float(up[i]);
    float c = float(ct[i]);
    float sig = 1.0f / (1.0f + metal::exp(-g));
    d_gate[i] = T(c * u * sig * (1.0f + g * (1.0f - sig)));
    d_up[i] = T(c * g * sig);
  }
"""

_kernels = {}


def _kernel(which):
    if not _kernels:
        _kernels["forward"] = mx.fast.metal_kernel(
            name="demo_silu_mul",
            input_names=["gate", "up"],
            output_names=["out"],
            source=FORWARD_SOURCE,
        )
        _kernels["backward"] = mx.fast.metal_kernel(
            name="demo_silu_mul_vjp",
            input_names=["gate", "up", "ct"],
            output_names=["d_gate", "d_up"],
            source=BACKWARD_SOURCE,
        )
    return _kernels[which]


def _launch(which, inputs, n_outputs):
    flat = [a.reshape(-1) for a in inputs]  # views: the kernels index flat arrays
    like = inputs[0]
    threads = (like.size + ELEMS_PER_THREAD - 1) // ELEMS_PER_THREAD
    outs = _kernel(which)(
        inputs=flat,
        template=[("T", like.dtype), ("N_PER_THREAD", ELEMS_PER_THREAD)],
        grid=(max(threads, 1), 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes=[(like.size,)] * n_outputs,
        output_dtypes=[like.dtype] * n_outputs,
    )
    return [o.reshape(like.shape) for o in outs]


@mx.custom_function
def silu_mul(gate, up):
    """silu(gate) * up, one fused kernel (gate and up of one shape and dtype)."""
    return _launch("forward", [gate, up], 1)[0]


@silu_mul.vjp
def _silu_mul_vjp(primals, cotangent, output):
    gate, up = primals
    d_gate, d_up = _launch("backward", [gate, up, cotangent], 2)
    return d_gate, d_up


def silu_mul_reference(gate, up):
    """The same with kiln ops: three elementwise kernels and their intermediates."""
    return gate * mx.sigmoid(gate) * up


def init_block(dim, hidden, dtype, seed=0):
    """Weights of a block: w_gate, w_up (dim, hidden) and w_down (hidden, dim)."""
    k1, k2, k3 = mx.random.split(mx.random.key(seed), 3)
    return {
        "w_gate": (mx.random.normal((dim, hidden), key=k1) * dim**-0.5).astype(dtype),
        "w_up": (mx.random.normal((dim, hidden), key=k2) * dim**-0.5).astype(dtype),
        "w_down": (mx.random.normal((hidden, dim), key=k3) * hidden**-0.5).astype(dtype),
    }


def block(params, x, act=silu_mul):
    """down(act(gate(x), up(x))) for x (tokens, dim)."""
    return act(x @ params["w_gate"], x @ params["w_up"]) @ params["w_down"]
