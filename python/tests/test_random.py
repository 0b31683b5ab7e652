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


def test_dtype_none_means_the_default():
    k = mx.random.key(0)
    assert mx.random.uniform(dtype=None, key=k).dtype == mx.float32
    assert mx.random.normal(dtype=None, key=k).dtype == mx.float32
    assert mx.random.randint(0, 3, dtype=None, key=k).dtype == mx.int32
    assert mx.random.gumbel(dtype=None, key=k).dtype == mx.float32
    assert mx.random.laplace(dtype=None, key=k).dtype == mx.float32
    assert mx.random.truncated_normal(0, 1, dtype=None, key=k).dtype == mx.float32


def test_normal_loc_scale_arrays_and_complex():
    k = mx.random.key(11)
    loc = mx.array([1.0, -2.0, 30.0])
    scale = mx.array([[0.5], [4.0]])
    x = np.asarray(mx.random.normal((2, 3), loc=loc, scale=scale, key=k))
    z = np.asarray(mx.random.normal((2, 3), key=k))
    assert np.allclose(x, np.asarray(scale) * z + np.asarray(loc), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError):
        mx.random.normal((2, 10, 2), loc=mx.zeros((10,)))
    c = mx.random.normal((N,), dtype=mx.complex64, key=mx.random.key(12))
    assert c.dtype == mx.complex64 and c.shape == (N,)
    cv = np.asarray(c)
    for part in (cv.real, cv.imag):  # variance 1/2 each
        assert abs(part.mean()) < 6 * math.sqrt(0.5 / N)
        assert abs(part.var() - 0.5) < 0.03
    w = np.asarray(mx.random.normal((4,), dtype=mx.complex64, loc=3.0 + 1j, scale=2.0, key=k))
    base = np.asarray(mx.random.normal((4,), dtype=mx.complex64, key=k))
    assert np.allclose(w, 2 * base + (3 + 1j), atol=1e-6)
    with pytest.raises(ValueError, match=r"\[normal\]"):
        mx.random.normal((2,), dtype=mx.int32)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64])
def test_laplace(dtype):
    x = mx.random.laplace((N,), dtype=dtype, loc=1.5, scale=0.5, key=mx.random.key(13))
    assert x.dtype == dtype and x.shape == (N,)
    v = np.asarray(x.astype(mx.float64))
    assert np.all(np.isfinite(v))
    assert abs(v.mean() - 1.5) < 6 * math.sqrt(0.5 / N)  # variance 2 b^2
    assert abs(v.var() - 0.5) < 0.05
    k = mx.random.key(14)
    a = mx.random.laplace((3, 2), loc=1.0, scale=2.0, key=k)
    b = 2.0 * mx.random.laplace((3, 2), key=k) + 1.0
    assert np.allclose(np.asarray(a), np.asarray(b), atol=1e-6)
    with pytest.raises(ValueError, match=r"\[laplace\]"):
        mx.random.laplace((2,), dtype=mx.int32)


def test_permutation():
    k = mx.random.key(15)
    p = mx.random.permutation(50, key=k)
    assert p.dtype == mx.uint32 and sorted(p.tolist()) == list(range(50))
    assert p.tolist() == np.argsort(np.asarray(mx.random.bits((50,), key=k)), kind="stable").tolist()
    x = mx.arange(12).reshape(3, 4)
    for axis in (0, 1, -1):
        y = mx.random.permutation(x, axis=axis, key=k)
        assert y.dtype == x.dtype and y.shape == x.shape
        assert np.array_equal(np.sort(np.asarray(y), axis=axis), np.asarray(x))
        n = x.shape[axis]
        order = np.asarray(mx.random.permutation(n, key=k))
        assert np.array_equal(np.asarray(y), np.take(np.asarray(x), order, axis=axis))
    assert mx.random.permutation(0, key=k).shape == (0,)
    assert mx.random.permutation(mx.array([[1]])).shape == (1, 1)
    with pytest.raises(IndexError, match=r"\[permutation\]"):
        mx.random.permutation(x, axis=2)
    with pytest.raises(ValueError, match=r"\[permutation\]"):
        mx.random.permutation(-1)


def test_categorical_axis_errors_are_index_errors():
    with pytest.raises(IndexError, match=r"\[categorical\]"):
        mx.random.categorical(mx.zeros((2, 3)), axis=3)


def test_randint_bool_and_errors():
    b = mx.random.randint(0, 2, (N,), dtype=mx.bool_, key=mx.random.key(16))
    assert b.dtype == mx.bool_
    assert abs(np.asarray(b).mean() - 0.5) < 6 * math.sqrt(0.25 / N)
    with pytest.raises(ValueError, match=r"\[randint\]"):
        mx.random.randint(0, 2, (3,), dtype=mx.float32)


def test_multivariate_normal_checks():
    k = mx.random.key(17)
    mean, cov = mx.zeros((2,)), mx.eye(2)
    for t in (mx.float16, mx.int32, mx.float64):
        with pytest.raises(ValueError, match=r"\[multivariate_normal\] dtype"):
            mx.random.multivariate_normal(mean, cov, dtype=t, key=k, stream=mx.cpu)
    for m, c, shape in (
        (mx.zeros((2, 2)), mx.zeros((2, 2)), (3,)),
        (mx.zeros((2,)), mx.zeros((2, 2, 2)), (3,)),
        (mx.zeros((3,)), mx.zeros((2, 2)), ()),
        (mx.zeros((2,)), mx.zeros((2, 3)), ()),
    ):
        with pytest.raises(ValueError, match=r"\[multivariate_normal\]"):
            mx.random.multivariate_normal(m, c, shape, key=k, stream=mx.cpu)


def test_multivariate_normal_moments():
    mean = mx.array([4.0, 7.0])
    cov = mx.array([[2.0, 0.5], [0.5, 1.0]])
    x = mx.random.multivariate_normal(mean, cov, (N,), key=mx.random.key(18), stream=mx.cpu)
    assert x.shape == (N, 2) and x.dtype == mx.float32
    v = np.asarray(x, dtype=np.float64)
    assert np.allclose(v.mean(0), [4.0, 7.0], atol=0.05)
    assert np.allclose(np.cov(v.T), np.asarray(cov), atol=0.08)
    # Batches broadcast: mean (3, 2) against shape (4, 3).
    y = mx.random.multivariate_normal(mx.zeros((3, 2)), cov, (4, 3), stream=mx.cpu)
    assert y.shape == (4, 3, 2)


# ---------------------------------------------------------------- mx.random.state


def test_random_state_holds_the_calling_threads_key():
    import threading

    state = mx.random.state
    assert len(state) == 1
    mx.random.seed(5)
    assert state[0].dtype == mx.uint32 and state[0].shape == (2,)
    assert state[0].tolist() == [0, 5] and state[-1].tolist() == [0, 5]
    assert [k.tolist() for k in state] == [[0, 5]]
    with pytest.raises(IndexError, match=r"\[random.state\]"):
        state[1]
    with pytest.raises(TypeError):
        state[0] = mx.random.key(1)  # MLX's state takes no item assignment
    mx.eval(state)  # a tree holding the key

    seen = {}

    def worker():
        seen["same_object"] = mx.random.state is state
        seen["own_key"] = mx.random.state[0].tolist()
        mx.random.seed(9)
        seen["draw"] = mx.random.uniform(shape=(3,)).tolist()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen["same_object"]
    assert seen["own_key"] != [0, 5]  # a new thread's key comes from the clock
    assert state[0].tolist() == [0, 5]  # the worker's seed left this thread's key alone
    mx.random.seed(9)
    assert mx.random.uniform(shape=(3,)).tolist() == seen["draw"]


def test_random_state_samplers_advance_it():
    mx.random.seed(3)
    k0 = mx.random.state[0].tolist()
    a = mx.random.normal((4,))
    k1 = mx.random.state[0].tolist()
    assert k0 != k1
    # The sampler used the second half of split(k0); the state keeps the first.
    kept, used = mx.random.split(mx.array(k0, dtype=mx.uint32))
    assert k1 == kept.tolist()
    assert mx.array_equal(a, mx.random.normal((4,), key=used))


def test_random_state_in_compile_per_thread():
    import threading
    from functools import partial

    fun = partial(mx.compile, inputs=mx.random.state, outputs=mx.random.state)(
        lambda: mx.random.uniform(shape=(8,))
    )
    mx.random.seed(11)
    ref = [mx.random.uniform(shape=(8,)).tolist() for _ in range(2)]
    out = {}

    def worker():
        mx.random.seed(11)
        out["vals"] = [fun().tolist() for _ in range(2)]

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert out["vals"] == ref  # compiled draws follow the worker's own seeded key
    mx.random.seed(11)
    assert [fun().tolist() for _ in range(2)] == ref
