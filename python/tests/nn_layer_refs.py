"""Shared pieces of the kiln.nn layer tests: tolerances, float32 inputs, float64 copies
of modules, and NumPy float64 references of the layers."""

import math

import numpy as np

import kiln.core as mx
from kiln.utils import tree_flatten
from nn_helpers import f64, np64

RTOL = 1e-5
ATOL = 1e-5


def close(actual, expected, rtol=RTOL, atol=ATOL):
    got = np64(actual)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def f32(rng, *shape):
    """(float32 kiln array, float64 NumPy copy)."""
    values = rng.standard_normal(shape).astype(np.float32)
    return mx.array(values), values.astype(np.float64)


def params_np(module):
    return {k: np64(v) for k, v in tree_flatten(module.parameters())}


def as_float64(module):
    module.set_dtype(mx.float64)
    return module


# ---------------------------------------------------------------- NumPy references


def np_layer_norm(x, eps, weight=None, bias=None):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_rope(x, dims, traditional, base, scale, offset):
    T, half = x.shape[-2], dims // 2
    inv_freq = base ** (-np.arange(half) * 2.0 / dims)
    theta = ((offset + np.arange(T)) * scale)[:, None] * inv_freq[None]
    cos, sin = np.cos(theta), np.sin(theta)
    out = x.copy()
    if traditional:
        x1, x2 = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = x1 * cos - x2 * sin
        out[..., 1:dims:2] = x1 * sin + x2 * cos
    else:
        x1, x2 = x[..., :half], x[..., half:dims]
        out[..., :half] = x1 * cos - x2 * sin
        out[..., half:dims] = x1 * sin + x2 * cos
    return out


def np_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + mask
    return np_softmax(scores) @ v


def np_pool(x, kernel, stride, padding, reduce):
    """Loops over windows of x (N, *spatial, C), padded with -inf (max) or 0 (mean)."""
    d = len(kernel)
    pad_value = -np.inf if reduce is np.max else 0.0
    x = np.pad(x, [(0, 0)] + [(p, p) for p in padding] + [(0, 0)], constant_values=pad_value)
    spatial = x.shape[1:-1]
    out_shape = [(n - k) // s + 1 for n, k, s in zip(spatial, kernel, stride)]
    out = np.empty([x.shape[0], *out_shape, x.shape[-1]])
    for idx in np.ndindex(*out_shape):
        window = tuple(slice(i * s, i * s + k) for i, s, k in zip(idx, stride, kernel))
        out[(slice(None), *idx)] = reduce(x[(slice(None), *window)], axis=tuple(range(1, d + 1)))
    return out
