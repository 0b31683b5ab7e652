"""kiln.nn.losses: every loss against its NumPy formula for every reduction, weights,
defaults, gradients and bad input."""

import math

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn
from nn_helpers import check_grad, f64, np64

L = nn.losses
REDUCTIONS = ["none", "mean", "sum"]


def reduce(loss, reduction):
    return {"none": loss, "mean": np.mean(loss), "sum": np.sum(loss)}[reduction]


def log_softmax(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def check(actual, expected, rtol=1e-10):
    got = np64(actual)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


@pytest.fixture
def data(rng):
    n, c = 6, 5
    return dict(
        logits=rng.standard_normal((n, c)) * 2,
        labels=rng.integers(0, c, n),
        probs=np.exp(log_softmax(rng.standard_normal((n, c)))),
        x=rng.standard_normal((n, c)),
        y=rng.standard_normal((n, c)),
        z=rng.standard_normal((n, c)),
        signs=rng.choice([-1.0, 1.0], (n, c)),
        unit=rng.uniform(0.05, 0.95, (n, c)),
        weights=rng.uniform(0.5, 2.0, n),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy(data, reduction):
    logits, labels, probs = data["logits"], data["labels"], data["probs"]
    logp = log_softmax(logits)
    expected = -logp[np.arange(len(labels)), labels]
    check(
        L.cross_entropy(f64(logits), mx.array(labels), reduction=reduction),
        reduce(expected, reduction),
    )
    # Probabilities as targets.
    check(
        L.cross_entropy(f64(logits), f64(probs), reduction=reduction),
        reduce(-(probs * logp).sum(-1), reduction),
    )
    # Label smoothing: the target distribution mixes in the uniform one.
    eps, c = 0.2, logits.shape[1]
    smooth = np.full_like(logp, eps / c)
    smooth[np.arange(len(labels)), labels] += 1 - eps
    check(
        L.cross_entropy(f64(logits), mx.array(labels), label_smoothing=eps, reduction=reduction),
        reduce(-(smooth * logp).sum(-1), reduction),
    )
    # Per-sample weights.
    w = data["weights"]
    check(
        L.cross_entropy(f64(logits), mx.array(labels), weights=f64(w), reduction=reduction),
        reduce(expected * w, reduction),
    )


def test_cross_entropy_axis_and_default(data, rng):
    logits = rng.standard_normal((3, 4, 2))
    labels = rng.integers(0, 4, (3, 2))
    logp = log_softmax(logits, axis=1)
    expected = -np.take_along_axis(logp, labels[:, None, :], axis=1)[:, 0]
    out = L.cross_entropy(f64(logits), mx.array(labels), axis=1)
    check(out, expected)  # default reduction: none
    assert (
        L.cross_entropy(f64(logits).astype(mx.float32), mx.array(labels), axis=1).dtype
        == mx.float32
    )


def test_cross_entropy_grad(data, rng):
    labels = mx.array(data["labels"])
    check_grad(
        lambda z: L.cross_entropy(z, labels, reduction="sum", label_smoothing=0.1),
        (f64(data["logits"]),),
        rng,
    )
    probs = f64(data["probs"])
    check_grad(lambda z: L.cross_entropy(z, probs, reduction="mean"), (f64(data["logits"]),), rng)


def test_cross_entropy_errors(data):
    logits = f64(data["logits"])
    with pytest.raises(ValueError, match=r"\[0, 1\), got 1.0"):
        L.cross_entropy(logits, mx.array(data["labels"]), label_smoothing=1.0)
    with pytest.raises(ValueError, match=r"Targets shape \(5,\)"):
        L.cross_entropy(logits, mx.zeros((5,), dtype=mx.int32))
    with pytest.raises(ValueError, match=r"Weights with shape \(3,\)"):
        L.cross_entropy(logits, mx.array(data["labels"]), weights=mx.ones((3,)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(data, reduction):
    x, p, t = data["x"], data["unit"], (data["unit"] > 0.5).astype(np.float64)
    expected = -(t * np.log(1 / (1 + np.exp(-x))) + (1 - t) * np.log(1 - 1 / (1 + np.exp(-x))))
    check(L.binary_cross_entropy(f64(x), f64(t), reduction=reduction), reduce(expected, reduction))
    expected_p = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    check(
        L.binary_cross_entropy(f64(p), f64(t), with_logits=False, reduction=reduction),
        reduce(expected_p, reduction),
    )
    w = data["unit"]
    check(
        L.binary_cross_entropy(f64(x), f64(t), weights=f64(w), reduction=reduction),
        reduce(expected * w, reduction),
    )


def test_binary_cross_entropy_clips_log_and_defaults(rng):
    p = f64([0.0, 1.0, 0.5])
    t = f64([1.0, 0.0, 1.0])
    check(
        L.binary_cross_entropy(p, t, with_logits=False, reduction="none"),
        [100.0, 100.0, math.log(2)],
    )
    x = f64(rng.standard_normal(4))
    y = f64(rng.uniform(0, 1, 4))
    assert L.binary_cross_entropy(x, y).shape == ()  # default reduction: mean
    check(L.binary_cross_entropy(f64([1000.0, -1000.0]), f64([1.0, 0.0]), reduction="sum"), 0.0)
    check_grad(lambda z: L.binary_cross_entropy(z, y), (x,), rng)
    with pytest.raises(
        ValueError, match=r"Inputs shape \(4,\) does not match targets shape \(3,\)"
    ):
        L.binary_cross_entropy(x, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(data, reduction):
    x, y = data["x"], data["y"]
    d = x - y
    check(L.l1_loss(f64(x), f64(y), reduction=reduction), reduce(np.abs(d), reduction))
    check(L.mse_loss(f64(x), f64(y), reduction=reduction), reduce(d**2, reduction))
    beta = 0.7
    smooth = np.where(np.abs(d) < beta, 0.5 * d**2 / beta, np.abs(d) - 0.5 * beta)
    check(
        L.smooth_l1_loss(f64(x), f64(y), beta=beta, reduction=reduction), reduce(smooth, reduction)
    )
    delta = 0.8
    huber = np.where(np.abs(d) <= delta, 0.5 * d**2, delta * (np.abs(d) - 0.5 * delta))
    check(L.huber_loss(f64(x), f64(y), delta=delta, reduction=reduction), reduce(huber, reduction))
    check(
        L.log_cosh_loss(f64(x), f64(y), reduction=reduction), reduce(np.log(np.cosh(d)), reduction)
    )


def test_regression_loss_defaults_and_errors(data):
    x, y = f64(data["x"]), f64(data["y"])
    for fn in (L.l1_loss, L.mse_loss, L.smooth_l1_loss):
        assert fn(x, y).shape == ()  # mean by default
        with pytest.raises(
            ValueError, match=r"Predictions shape \(6, 5\) does not match targets shape \(5,\)"
        ):
            fn(x, y[0])
    for fn in (L.huber_loss, L.log_cosh_loss):
        assert fn(x, y).shape == (6, 5)  # none by default


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_and_kl_div(data, reduction, rng):
    logp = log_softmax(data["logits"])
    labels = data["labels"]
    check(
        L.nll_loss(f64(logp), mx.array(labels), reduction=reduction),
        reduce(-logp[np.arange(len(labels)), labels], reduction),
    )
    logq = log_softmax(rng.standard_normal(logp.shape))
    check(
        L.kl_div_loss(f64(logp), f64(logq), reduction=reduction),
        reduce((np.exp(logq) * (logq - logp)).sum(-1), reduction),
    )
    logp3 = log_softmax(rng.standard_normal((2, 4, 3)), axis=1)
    labels3 = rng.integers(0, 4, (2, 3))
    check(
        L.nll_loss(f64(logp3), mx.array(labels3), axis=1, reduction=reduction),
        reduce(-np.take_along_axis(logp3, labels3[:, None], 1)[:, 0], reduction),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll(data, reduction, full):
    mu, y, var = data["x"], data["y"], data["unit"]
    var = var.copy()
    var[0, 0] = 1e-9  # clamped to eps
    v = np.maximum(var, 1e-6)
    expected = 0.5 * (np.log(v) + (y - mu) ** 2 / v) + (0.5 * math.log(2 * math.pi) if full else 0)
    check(
        L.gaussian_nll_loss(f64(mu), f64(y), f64(var), full=full, reduction=reduction),
        reduce(expected, reduction),
        rtol=1e-9,
    )


def test_gaussian_nll_errors(data):
    x = f64(data["x"])
    with pytest.raises(ValueError, match="targets shape"):
        L.gaussian_nll_loss(x, x[0], x)
    with pytest.raises(ValueError, match="vars shape"):
        L.gaussian_nll_loss(x, x, x[:, 0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2, 3])
def test_triplet(data, reduction, p):
    a, pos, neg = data["x"], data["y"], data["z"]

    def dist(u, v):
        return ((np.abs(u - v) ** p).sum(-1) + 1e-6) ** (1 / p)

    expected = np.maximum(dist(a, pos) - dist(a, neg) + 0.5, 0)
    check(
        L.triplet_loss(f64(a), f64(pos), f64(neg), p=p, margin=0.5, reduction=reduction),
        reduce(expected, reduction),
        rtol=1e-9,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_hinge_cosine_margin_ranking(data, reduction):
    x, y, s = data["x"], data["y"], data["signs"]
    check(
        L.hinge_loss(f64(x), f64(s), reduction=reduction),
        reduce(np.maximum(1 - x * s, 0), reduction),
    )
    cos = (x * y).sum(1) / np.maximum(np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1), 1e-8)
    check(L.cosine_similarity_loss(f64(x), f64(y), reduction=reduction), reduce(cos, reduction))
    cos0 = (x * y).sum(0) / np.maximum(np.linalg.norm(x, axis=0) * np.linalg.norm(y, axis=0), 1e-8)
    check(
        L.cosine_similarity_loss(f64(x), f64(y), axis=0, reduction=reduction),
        reduce(cos0, reduction),
    )
    check(
        L.margin_ranking_loss(f64(x), f64(y), f64(s), margin=0.3, reduction=reduction),
        reduce(np.maximum(0, -s * (x - y) + 0.3), reduction),
    )
    with pytest.raises(ValueError, match=r"targets.shape=\(5,\)"):
        L.margin_ranking_loss(f64(x), f64(y), f64(s[0]))


def test_cosine_similarity_zero_vectors():
    out = L.cosine_similarity_loss(mx.zeros((2, 3)), mx.ones((2, 3)))
    assert np.all(np64(out) == 0)


ALL_LOSSES = [
    lambda r: L.cross_entropy(mx.zeros((2, 3)), mx.array([0, 1]), reduction=r),
    lambda r: L.binary_cross_entropy(mx.zeros((2,)), mx.ones((2,)), reduction=r),
    lambda r: L.l1_loss(mx.zeros((2,)), mx.ones((2,)), reduction=r),
    lambda r: L.mse_loss(mx.zeros((2,)), mx.ones((2,)), reduction=r),
    lambda r: L.nll_loss(mx.zeros((2, 3)), mx.array([0, 1]), reduction=r),
    lambda r: L.gaussian_nll_loss(mx.zeros((2,)), mx.ones((2,)), mx.ones((2,)), reduction=r),
    lambda r: L.kl_div_loss(mx.zeros((2, 3)), mx.zeros((2, 3)), reduction=r),
    lambda r: L.smooth_l1_loss(mx.zeros((2,)), mx.ones((2,)), reduction=r),
    lambda r: L.triplet_loss(mx.zeros((2, 3)), mx.ones((2, 3)), mx.ones((2, 3)), reduction=r),
    lambda r: L.hinge_loss(mx.zeros((2,)), mx.ones((2,)), reduction=r),
    lambda r: L.huber_loss(mx.zeros((2,)), mx.ones((2,)), reduction=r),
    lambda r: L.log_cosh_loss(mx.zeros((2,)), mx.ones((2,)), reduction=r),
    lambda r: L.cosine_similarity_loss(mx.ones((2, 3)), mx.ones((2, 3)), reduction=r),
    lambda r: L.margin_ranking_loss(mx.zeros((2,)), mx.ones((2,)), mx.ones((2,)), reduction=r),
]


@pytest.mark.parametrize("index", range(len(ALL_LOSSES)))
def test_unknown_reduction_is_rejected(index):
    with pytest.raises(ValueError, match="Invalid reduction 'average'.*none.*mean.*sum"):
        ALL_LOSSES[index]("average")
    for reduction in REDUCTIONS:
        assert ALL_LOSSES[index](reduction).ndim == (
            0 if reduction != "none" else ALL_LOSSES[index]("none").ndim
        )


def test_losses_keep_float32(rng):
    x = mx.array(rng.standard_normal((4, 3)).astype(np.float32))
    y = mx.array(rng.standard_normal((4, 3)).astype(np.float32))
    for loss in (
        L.mse_loss(x, y),
        L.huber_loss(x, y),
        L.log_cosh_loss(x, y),
        L.binary_cross_entropy(x, mx.sigmoid(y)),
    ):
        assert loss.dtype == mx.float32
