"""Patterns that language-model code written for MLX relies on (as in mlx-lm's models,
caches, quantization and LoRA training), checked against NumPy float64 references."""

import numpy as np
import pytest

import kiln.core as mx
from conftest import assert_close, random_array


@pytest.mark.parametrize("force", ["numpy", "eval", "tolist", "item"])
def test_eval_inside_grad_keeps_traced_inputs(rng, force):
    # A model may read a traced intermediate on the host mid-trace (routing indices built
    # with NumPy); the eval must not let an op overwrite an input the vjp still needs.
    w, wn = random_array(rng, (3, 4), mx.float32)
    x, xn = random_array(rng, (2, 3), mx.float32)

    def f(w):
        h = mx.sin(x @ w)
        if force == "numpy":
            np.array(h)
        elif force == "eval":
            mx.eval(h)
        elif force == "tolist":
            h.tolist()
        else:
            h[0, 0].item()
        return (mx.exp(h) * h).sum()

    g = mx.grad(f)(w)
    xd, wd = xn.astype(np.float64), wn.astype(np.float64)
    pre = xd @ wd
    h = np.sin(pre)
    dh = np.exp(h) * (1 + h)
    assert_close(g, xd.T @ (dh * np.cos(pre)), rtol=1e-5, atol=1e-5)


def test_eval_inside_grad_with_index_assignment(rng):
    # The routed-experts training path: host-side routing, then rows written in place.
    w, wn = random_array(rng, (4, 4), mx.float32)
    x, xn = random_array(rng, (5, 4), mx.float32)

    def f(w):
        h = mx.tanh(x @ w)
        rows = np.where(np.array(h)[:, 0] > 0)[0]
        y = mx.zeros((5, 4))
        if rows.size:
            y[mx.array(rows)] = mx.exp(h[mx.array(rows)])
        return (y * y).sum()

    g = mx.grad(f)(w)
    xd, wd = xn.astype(np.float64), wn.astype(np.float64)
    pre = xd @ wd
    h = np.tanh(pre)
    mask = (h[:, 0] > 0)[:, None]
    dh = np.where(mask, 2 * np.exp(2 * h), 0.0)
    assert_close(g, xd.T @ (dh * (1 - h * h)), rtol=1e-5, atol=1e-5)
