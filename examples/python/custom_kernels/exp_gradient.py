"""A differentiable custom kernel: exp, with its vjp written as a second kernel that reuses
the forward output (d exp(x) = exp(x) dx). custom_function attaches the rule; grad, vjp
and value_and_grad then call it. Run: PYTHONPATH=python python examples/python/custom_kernels/exp_gradient.py"""

import kiln.core as mx

exp_forward = mx.fast.metal_kernel(
    name="exp_forward",
    input_names=["x"],
    output_names=["y"],
    source="""
        uint i = thread_position_in_grid.x;
        y[i] = metal::exp(x[i]);
    """,
)
exp_backward = mx.fast.metal_kernel(
    name="exp_backward",
    input_names=["cotangent", "y"],
    output_names=["dx"],
    source="""
        uint i = thread_position_in_grid.x;
        dx[i] = cotangent[i] * y[i];
    """,
)


def launch(kernel, inputs, like):
    return kernel(
        inputs=inputs,
        output_shapes=[like.shape],
        output_dtypes=[like.dtype],
        grid=(like.size, 1, 1),
        threadgroup=(256, 1, 1),
    )[0]


@mx.custom_function
def my_exp(x):
    return launch(exp_forward, [x], x)


@my_exp.vjp
def my_exp_vjp(primals, cotangent, output):
    return launch(exp_backward, [cotangent, output], output)


x = mx.random.normal(shape=(1000,))
(y,), (dx,) = mx.vjp(my_exp, [x], [mx.ones_like(x)])
assert mx.allclose(y, mx.exp(x)) and mx.allclose(dx, mx.exp(x))
print("exp with a vjp kernel: ok")
