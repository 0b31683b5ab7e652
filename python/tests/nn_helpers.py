"""Helpers shared by the kiln.nn / kiln.optimizers tests: directional finite-difference
gradient checks in float64 and conversions."""

import numpy as np

import kiln.core as mx
from kiln.utils import tree_flatten, tree_map

# Bounds computed in float64 may round up by one float32 ulp in float32 samples.
F32_SLACK = 1 + 2**-22


def f64(values):
    """A float64 kiln array of `values` (NumPy or nested lists)."""
    return mx.array(np.asarray(values, dtype=np.float64), dtype=mx.float64)


def np64(a):
    """A kiln array as float64 NumPy."""
    return np.array(a.astype(mx.float32) if a.dtype == mx.bfloat16 else a).astype(np.float64)


def check_grad(fn, args, rng, directions=3, eps=1e-6, rtol=1e-6, atol=1e-8):
    """Checks ``mx.grad(fn)`` against central finite differences along random directions.

    `fn(*args)` returns a scalar; `args` is a tuple of trees of float64 arrays. For each
    direction ``v`` (a tree like `args`), ``sum(grad * v)`` must match
    ``(fn(args + eps v) - fn(args - eps v)) / (2 eps)``.
    """
    args = tuple(args)
    grads = mx.grad(fn, argnums=tuple(range(len(args))))(*args)
    if len(args) == 1:
        grads = (grads,)  # one argnum gives its gradient itself, as MLX
    flat_grads = [g for _, g in tree_flatten(list(grads))]
    for _ in range(directions):
        direction = tree_map(lambda a: f64(rng.standard_normal(a.shape)), list(args))
        flat_dirs = [v for _, v in tree_flatten(direction)]
        analytic = sum(float(mx.sum(g * v).item()) for g, v in zip(flat_grads, flat_dirs))
        plus = tree_map(lambda a, v: a + eps * v, list(args), direction)
        minus = tree_map(lambda a, v: a - eps * v, list(args), direction)
        numeric = (fn(*plus).item() - fn(*minus).item()) / (2 * eps)
        assert abs(analytic - numeric) <= atol + rtol * max(
            1.0, abs(numeric)
        ), f"directional derivative {analytic} != finite difference {numeric}"


def module_grad_check(model, inputs, rng, **kwargs):
    """Checks the gradients of ``sum(model(*inputs) * w)`` (random ``w``) with respect to the
    model's trainable parameters and its floating inputs; the model and inputs must be
    float64."""
    out = model(*inputs)
    weights = f64(rng.standard_normal(out.shape))

    def loss(params, *xs):
        model.update(params)
        return mx.sum(model(*xs) * weights)

    params = model.trainable_parameters()
    try:
        check_grad(loss, (params, *inputs), rng, **kwargs)
    finally:
        model.update(params)
