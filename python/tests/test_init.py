"""kiln.nn.init: each initializer's shape, dtype and distribution statistics (means and
standard deviations within a few standard errors of the theory), fan computations and bad
input."""

import math

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn.init as init
from nn_helpers import F32_SLACK, np64


@pytest.fixture(autouse=True)
def seeded(rng):
    mx.random.seed(int(rng.integers(2**31)))


def assert_moments(values, mean, std, sigmas=6):
    """The sample mean and standard deviation agree with the theory within `sigmas`
    standard errors (normal approximations)."""
    n = values.size
    assert abs(values.mean() - mean) <= sigmas * std / math.sqrt(n), (values.mean(), mean)
    # The sample std's standard error is about std / sqrt(2n).
    assert abs(values.std() - std) <= sigmas * std / math.sqrt(2 * n) * 1.5, (values.std(), std)


def test_constant():
    a = init.constant(0.5)(mx.zeros((3, 2)))
    assert a.shape == (3, 2) and a.dtype == mx.float32 and np.all(np64(a) == 0.5)
    b = init.constant(-2, dtype=mx.float16)(mx.zeros((4,), dtype=mx.int32))
    assert b.dtype == mx.float16 and np.all(np64(b) == -2)


def test_normal_and_uniform():
    template = mx.zeros((300, 200))
    values = np64(init.normal(mean=1.5, std=0.25)(template))
    assert values.shape == (300, 200)
    assert_moments(values, 1.5, 0.25)
    u = np64(init.uniform(low=-3.0, high=1.0)(template))
    assert u.min() >= -3.0 and u.max() < 1.0
    assert_moments(u, -1.0, 4 / math.sqrt(12))
    assert init.normal(dtype=mx.bfloat16)(mx.zeros((2, 2))).dtype == mx.bfloat16
    assert init.uniform(dtype=mx.float16)(mx.zeros((2, 2))).dtype == mx.float16


def test_identity():
    eye = init.identity()(mx.zeros((4, 4)))
    np.testing.assert_array_equal(np64(eye), np.eye(4))
    assert init.identity(dtype=mx.float16)(mx.zeros((2, 2))).dtype == mx.float16
    with pytest.raises(ValueError, match=r"square matrix but got shape \(3, 4\)"):
        init.identity()(mx.zeros((3, 4)))
    with pytest.raises(ValueError, match="square"):
        init.identity()(mx.zeros((3,)))


# (shape, fan_in, fan_out): the receptive field multiplies both fans.
FANS = [((200, 300), 300, 200), ((64, 3, 3, 32), 288, 576), ((128, 5, 40), 200, 640)]


@pytest.mark.parametrize("shape, fan_in, fan_out", FANS)
def test_glorot(shape, fan_in, fan_out):
    template = mx.zeros(shape)
    std = math.sqrt(2.0 / (fan_in + fan_out))
    assert_moments(np64(init.glorot_normal()(template)), 0.0, std)
    assert_moments(np64(init.glorot_normal()(template, gain=2.0)), 0.0, 2 * std)
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    u = np64(init.glorot_uniform()(template, gain=0.5))
    assert np.abs(u).max() <= 0.5 * limit * F32_SLACK
    assert_moments(u, 0.0, 0.5 * limit / math.sqrt(3))


@pytest.mark.parametrize("shape, fan_in, fan_out", FANS)
@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_he(shape, fan_in, fan_out, mode):
    fan = fan_in if mode == "fan_in" else fan_out
    template = mx.zeros(shape)
    assert_moments(np64(init.he_normal()(template, mode=mode)), 0.0, 1 / math.sqrt(fan))
    assert_moments(
        np64(init.he_normal()(template, mode=mode, gain=math.sqrt(2))), 0.0, math.sqrt(2 / fan)
    )
    limit = math.sqrt(3.0 / fan)
    u = np64(init.he_uniform()(template, mode=mode))
    assert np.abs(u).max() <= limit * F32_SLACK
    assert_moments(u, 0.0, limit / math.sqrt(3))


def test_fan_errors():
    with pytest.raises(ValueError, match="at least 2 dimensional.*1 dimensions"):
        init.glorot_uniform()(mx.zeros((5,)))
    with pytest.raises(ValueError, match="at least 2 dimensional"):
        init.he_normal()(mx.zeros(()))
    with pytest.raises(ValueError, match="Invalid mode: fan_avg"):
        init.he_uniform()(mx.zeros((3, 3)), mode="fan_avg")
    with pytest.raises(ValueError, match="Invalid mode: both"):
        init.he_normal()(mx.zeros((3, 3)), mode="both")


@pytest.mark.parametrize("sparsity", [0.1, 0.5, 0.97])
def test_sparse(sparsity):
    rows, cols = 40, 50
    values = np64(init.sparse(sparsity, mean=2.0, std=0.5)(mx.zeros((rows, cols))))
    zeros_per_row = (values == 0).sum(1)
    np.testing.assert_array_equal(zeros_per_row, math.ceil(sparsity * cols))
    kept = values[values != 0]
    assert_moments(kept, 2.0, 0.5)
    # The zeroed columns differ between rows (a fresh permutation per row).
    patterns = {tuple(np.flatnonzero(row == 0)) for row in values}
    assert len(patterns) > 1
    assert init.sparse(0.5, dtype=mx.float16)(mx.zeros((4, 4))).dtype == mx.float16
    with pytest.raises(ValueError, match="2-d"):
        init.sparse(0.5)(mx.zeros((2, 3, 4)))


@pytest.mark.parametrize("shape", [(6, 6), (8, 3), (3, 8)])
def test_orthogonal(shape):
    q = np64(init.orthogonal()(mx.zeros(shape)))
    assert q.shape == shape
    small = min(shape)
    gram = q.T @ q if shape[0] >= shape[1] else q @ q.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)
    scaled = np64(init.orthogonal(gain=3.0, dtype=mx.float16)(mx.zeros(shape)).astype(mx.float32))
    gram = scaled.T @ scaled if shape[0] >= shape[1] else scaled @ scaled.T
    np.testing.assert_allclose(gram, 9 * np.eye(small), atol=0.1)


def test_orthogonal_is_haar_distributed():
    # The sign-corrected QR makes Q Haar distributed: each entry of an n x n Haar matrix has
    # mean 0 and variance 1/n, and the diagonal is not biased towards positive values.
    n, draws = 8, 300
    qs = np.stack([np64(init.orthogonal()(mx.zeros((n, n)))) for _ in range(draws)])
    assert abs(qs.mean()) < 6 / math.sqrt(n * n * draws) * (1 / math.sqrt(n))
    np.testing.assert_allclose(qs.var(), 1 / n, rtol=0.1)
    assert abs(np.mean(np.diagonal(qs, axis1=1, axis2=2) > 0) - 0.5) < 0.1


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="2D array but got a 3D array"):
        init.orthogonal()(mx.zeros((2, 2, 2)))
