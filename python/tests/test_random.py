"""kiln.core.random: keys make results reproducible, samplers have the right shapes,
dtypes, ranges and moments (bounds of several standard errors, so a correct sampler fails
with negligible probability)."""

import math

import numpy as np
import pytest

import kiln.core as mx

N = 20000


def test_keys_and_split():
    k = mx.random.key(42)
    assert k.dtype == mx.uint32 and k.shape == (2,)
    assert mx.random.key(2**40 + 3).tolist() == [2**40 >> 32, 3]
    ks = mx.random.split(k)
    assert ks.shape == (2, 2) and ks.dtype == mx.uint32
    assert ks[0].tolist() != ks[1].tolist()
    assert mx.random.split(k, 5).shape == (5, 2)
    assert mx.random.split(k, 3).tolist() == mx.random.split(k, 3).tolist()


def test_same_key_same_values():
    k = mx.random.key(7)
    a = mx.random.uniform(shape=(100,), key=k)
    b = mx.random.uniform(shape=(100,), key=k)
    assert a.tolist() == b.tolist()
    c = mx.random.uniform(shape=(100,), key=mx.random.key(8))
    assert a.tolist() != c.tolist()
    mx.random.seed(3)
    d = mx.random.normal((10,))
    e = mx.random.normal((10,))
    mx.random.seed(3)
    assert mx.random.normal((10,)).tolist() == d.tolist()
    assert d.tolist() != e.tolist()


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64])
def test_uniform(dtype):
    x = mx.random.uniform(-2, 3, (N,), dtype=dtype, key=mx.random.key(1))
    assert x.dtype == dtype and x.shape == (N,)
    v = np.asarray(x.astype(mx.float64))
    assert v.min() >= -2
    assert v.max() < 3 if dtype in (mx.float32, mx.float64) else v.max() <= 3  # half types round up
    se = 5 / math.sqrt(12 * N)  # standard error of the mean of U(-2, 3)
    assert abs(v.mean() - 0.5) < 6 * se
    lo = mx.array([0.0, 10.0])
    y = mx.random.uniform(lo, lo + 1, (N // 2, 2), key=mx.random.key(2))
    yn = np.asarray(y)
    assert yn[:, 0].max() < 1 and yn[:, 1].min() >= 10


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
def test_normal(dtype):
    x = np.asarray(mx.random.normal((N,), dtype=dtype, loc=1.5, scale=2.0, key=mx.random.key(3)).astype(mx.float64))
    assert abs(x.mean() - 1.5) < 6 * 2 / math.sqrt(N)
    assert abs(x.std() - 2.0) < 0.05
    assert mx.random.normal((2, 3)).shape == (2, 3)


def test_randint():
    x = mx.random.randint(-3, 7, (N,), key=mx.random.key(4))
    assert x.dtype == mx.int32
    v = np.asarray(x)
    assert v.min() == -3 and v.max() == 6
    counts = np.bincount(v + 3, minlength=10)
    assert np.all(np.abs(counts - N / 10) < 6 * math.sqrt(N / 10))
    assert mx.random.randint(0, 5, (4,), dtype=mx.uint8).dtype == mx.uint8


def test_bernoulli_and_bits():
    b = mx.random.bernoulli(0.3, (N,), key=mx.random.key(5))
    assert b.dtype == mx.bool_
    assert abs(np.asarray(b).mean() - 0.3) < 6 * math.sqrt(0.21 / N)
    p = mx.array([0.0, 1.0])
    assert mx.random.bernoulli(p).tolist() == [False, True]
    for width, dtype in ((1, mx.uint8), (2, mx.uint16), (4, mx.uint32), (8, mx.uint64)):
        assert mx.random.bits((3,), width).dtype == dtype
    with pytest.raises(ValueError, match=r"\[bits\]"):
        mx.random.bits((3,), 3)


def test_truncated_normal_gumbel_categorical():
    t = np.asarray(mx.random.truncated_normal(-1.0, 0.5, (N,), key=mx.random.key(6)))
    assert t.min() >= -1.0 and t.max() <= 0.5
    g = np.asarray(mx.random.gumbel((N,), key=mx.random.key(7)))
    assert abs(g.mean() - 0.5772156649) < 6 * (math.pi / math.sqrt(6)) / math.sqrt(N)
    logits = mx.array([0.0, 1.0, 2.0])
    c = mx.random.categorical(logits, num_samples=N, key=mx.random.key(8))
    assert c.shape == (N,) and c.dtype == mx.uint32
    freq = np.bincount(np.asarray(c), minlength=3) / N
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    assert np.all(np.abs(freq - p) < 6 * np.sqrt(p * (1 - p) / N))
    batch = mx.random.categorical(mx.zeros((4, 5)), axis=-1)
    assert batch.shape == (4,)
    assert mx.random.categorical(mx.zeros((4, 5)), shape=(2, 4)).shape == (2, 4)
    with pytest.raises(ValueError, match=r"\[categorical\]"):
        mx.random.categorical(logits, shape=(2,), num_samples=3)
