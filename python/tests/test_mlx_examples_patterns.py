"""Behaviours that MLX's example programs (ml-explore/mlx-examples) rely on, checked on kiln.

Each test names the pattern it covers; the programs themselves are not part of kiln. Values
said to come from MLX were returned by MLX 0.32.4's CPU build for the same expressions.
"""

import math

import numpy as np
import pytest

import kiln.core as mx


# ------------------------------------------------------------ categorical sampling
# Token sampling at batch size 1 (T5 / Whisper / speculative decoding generate loops call
# mx.random.categorical(logits[:, -1, :]) on logits of shape (1, vocab)).


def _inverse_cdf_reference(logits, axis, out_shape, key):
    """The inverse-CDF draw MLX makes for a single distribution, from kiln's own ops:
    weights exp(l - max), one float32 uniform per sample, right-side search of u * sum(w)."""
    x = mx.moveaxis(logits, axis, -1).reshape(-1)
    w = mx.exp(x - x.max())
    cdf = mx.cumsum(w)
    u = mx.random.uniform(shape=out_shape, key=key)
    idx = mx.searchsorted(cdf, u * w.sum(), side="right")
    return mx.minimum(idx, x.size - 1).astype(mx.uint32)


@pytest.mark.parametrize(
    "shape,axis,kwargs",
    [
        ((1, 37), -1, {}),  # a batch of one row: the generate loops' case
        ((37, 1), 0, {}),  # the same distribution along axis 0
        ((1, 1, 37), -1, {}),
        ((37,), 0, {"shape": (5,)}),
        ((1, 37), 1, {"shape": (2, 3)}),
        ((37,), 0, {"num_samples": 4}),
    ],
)
def test_categorical_single_distribution_inverts_the_cdf(rng, shape, axis, kwargs):
    logits = mx.array((rng.standard_normal(shape) * 2).astype(np.float32))
    for seed in range(5):
        key = mx.random.key(int(rng.integers(0, 2**31)) + seed)
        got = mx.random.categorical(logits, axis=axis, key=key, **kwargs)
        if "shape" in kwargs:
            out_shape = kwargs["shape"]
        else:
            out_shape = tuple(s for i, s in enumerate(shape) if i != axis % len(shape))
            if "num_samples" in kwargs:
                out_shape = out_shape + (kwargs["num_samples"],)
        assert got.shape == out_shape and got.dtype == mx.uint32
        want = _inverse_cdf_reference(logits, axis, out_shape, key)
        np.testing.assert_array_equal(np.array(got), np.array(want))


def test_categorical_batched_and_scalar_keep_gumbel_max(rng):
    # Several distributions, or a single one drawn to a scalar, stay on Gumbel-max.
    for shape in [(3, 11), (11,)]:
        logits = mx.array(rng.standard_normal(shape).astype(np.float32))
        key = mx.random.key(int(rng.integers(0, 2**31)))
        got = mx.random.categorical(logits, key=key)
        want = mx.argmax(logits + mx.random.gumbel(shape, key=key), axis=-1)
        np.testing.assert_array_equal(np.array(got), np.array(want))


def test_categorical_batch_one_matches_mlx_values():
    logits = mx.array([[0.5, -1.0, 2.0, 0.0, 1.5]])
    got = [mx.random.categorical(logits, key=mx.random.key(s)).item() for s in range(8)]
    assert got == [2, 1, 2, 4, 2, 3, 2, 4]  # MLX 0.32.4
    got = mx.random.categorical(logits, shape=(6,), key=mx.random.key(11)).tolist()
    assert got == [4, 4, 2, 2, 2, 2]  # MLX 0.32.4
    mx.random.seed(5)
    got = [mx.random.categorical(logits).item() for _ in range(6)]
    assert got == [4, 4, 3, 2, 2, 4]  # MLX 0.32.4, from the global key sequence


def test_categorical_single_distribution_infinite_logits():
    # +inf entries share the draws; a row of -inf draws every category (not always 0).
    pos = mx.array([[0.0, math.inf, 1.0, math.inf, 2.0]])
    draws = {mx.random.categorical(pos, key=mx.random.key(s)).item() for s in range(40)}
    assert draws == {1, 3}
    neg = mx.array([[-math.inf] * 5])
    draws = {mx.random.categorical(neg, key=mx.random.key(s)).item() for s in range(60)}
    assert draws == {0, 1, 2, 3, 4}


def test_categorical_single_distribution_frequencies(rng):
    # The inverse-CDF path samples the softmax distribution (chi-square-style bound).
    logits = mx.array(rng.standard_normal((1, 6)).astype(np.float32))
    p = np.exp(np.array(logits[0], dtype=np.float64))
    p /= p.sum()
    n = 20000
    draws = mx.random.categorical(logits, shape=(n,), key=mx.random.key(int(rng.integers(0, 2**31))))
    counts = np.bincount(np.array(draws), minlength=6)
    sigma = np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(counts - n * p) < 5 * sigma + 1)
