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


def _attention_reference(q, k, v, scale):
    # Causal softmax attention in float64: (B, H, L, D) each.
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    L = s.shape[-1]
    s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhij,bhjd->bhid", p, v)


@pytest.mark.parametrize("force", [False, True])
def test_attention_evaluated_inside_grad(rng, force):
    # Fused attention has a second output (each row's logsumexp) that its vjp reads. When
    # the attention is evaluated mid-trace and nothing holds that output, it must come back
    # with its values rather than as an unevaluated array.
    q, qn = random_array(rng, (1, 2, 5, 8), mx.float32)
    k, kn = random_array(rng, (1, 2, 5, 8), mx.float32)
    v, vn = random_array(rng, (1, 2, 5, 8), mx.float32)
    c, cn = random_array(rng, (1, 2, 5, 8), mx.float32)

    def f(q):
        o = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.35, mask="causal")
        if force:
            o.tolist()
        return (o * c).sum()

    g = mx.grad(f)(q)
    eps = 1e-6
    qd = qn.astype(np.float64)
    ref = np.zeros_like(qd)
    for idx in np.ndindex(qd.shape):
        hi, lo = qd.copy(), qd.copy()
        hi[idx] += eps
        lo[idx] -= eps
        up = (_attention_reference(hi, kn, vn, 0.35) * cn).sum()
        down = (_attention_reference(lo, kn, vn, 0.35) * cn).sum()
        ref[idx] = (up - down) / (2 * eps)
    assert_close(g, ref, rtol=1e-4, atol=1e-4)


def test_multi_output_sibling_dropped_then_differentiated(rng):
    # linalg.qr's outputs share one node; dropping Q after an eval mid-trace must not lose it.
    a, an = random_array(rng, (4, 3), mx.float32)

    def f(a):
        r = mx.linalg.qr(a, stream=mx.cpu)[1]
        r.tolist()
        return (r * r).sum()

    # sum(R^2) = sum(A^2) (Q is orthonormal), so the gradient is 2A.
    assert_close(mx.grad(f)(a), 2 * an, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_ties_send_gradient_to_second(op):
    # MLX's rule: where a == b the whole cotangent goes to b.
    a = mx.array([1.0, 2.0, 3.0])
    b = mx.array([2.0, 2.0, 2.0])
    ga, gb = mx.grad(lambda x, y: getattr(mx, op)(x, y).sum(), argnums=(0, 1))(a, b)
    wins = (
        np.array([1.0, 2.0, 3.0]) > 2.0
        if op == "maximum"
        else np.array([1.0, 2.0, 3.0]) < 2.0
    )
    np.testing.assert_array_equal(np.array(ga), wins.astype(np.float32))
    np.testing.assert_array_equal(np.array(gb), (~wins).astype(np.float32))


def test_clip_passes_no_gradient_at_its_bounds():
    # Clipped activations (qkv clipping) hit the bound exactly; there the gradient is 0.
    x = mx.array([-2.0, -1.0, 0.5, 1.0, 4.0])
    g = mx.grad(
        lambda v: (mx.clip(v, -1.0, 1.0) * mx.array([1.0, 2.0, 3.0, 4.0, 5.0])).sum()
    )(x)
    np.testing.assert_array_equal(np.array(g), np.array([0, 0, 3, 0, 0], np.float32))


def test_quantize_returns_a_list(rng):
    # KV-cache code extends or maps over the result as MLX returns it: a list.
    w, _ = random_array(rng, (4, 64), mx.float32)
    affine = mx.quantize(w, group_size=32, bits=4)
    assert isinstance(affine, list) and len(affine) == 3
    fp = mx.quantize(w, mode="mxfp4")
    assert isinstance(fp, list) and len(fp) == 2
    back = mx.dequantize(*affine, group_size=32, bits=4)
    assert back.shape == (4, 64)


def _assert_inverse_cdf_draws(got, logits, u):
    """Category i where u * total falls in [c_i, c_i + w_i) of the exclusive cumulative sum
    (float64). kiln sums in float32, off by at most ~n ulp of the total (2.4e-6 for 40
    terms): a draw that close to a boundary may land on either side of it (7.5e-7 of
    draws, 3.6e-5 of runs when compared exactly)."""
    w = np.exp(logits - logits.max())
    c = np.concatenate([[0.0], np.cumsum(w)[:-1]])
    total = w.sum()
    for g, x in zip(np.ravel(got), np.ravel(u)):
        r = np.searchsorted(c, x * total, side="right") - 1
        if g != r:
            assert abs(int(g) - int(r)) == 1, (g, r)
            assert abs(x * total - c[max(g, r)]) <= 1e-5 * total, (g, r, x)


@pytest.mark.parametrize(
    "shape, axis, kwargs",
    [
        ((1, 40), -1, {}),
        ((40,), 0, {"shape": (3,)}),
        ((1, 1, 40), 2, {}),
        ((40, 1), 0, {}),
    ],
)
def test_categorical_one_distribution_inverts_its_cdf(rng, shape, axis, kwargs):
    # A sampler's (1, vocab) logits: MLX inverts the CDF with one uniform per draw, so a
    # seeded generation draws MLX's tokens.
    logits, ln = random_array(rng, shape, mx.float32)
    for seed in range(8):
        key = mx.random.key(seed)
        got = mx.random.categorical(logits, axis=axis, key=key, **kwargs)
        u = mx.random.uniform(shape=got.shape, key=key)
        _assert_inverse_cdf_draws(
            np.array(got), np.moveaxis(ln, axis, -1).ravel().astype(np.float64), np.array(u)
        )


def test_categorical_scalar_draw_and_many_distributions_use_gumbel(rng):
    for shape in [(40,), (3, 40)]:
        logits, _ = random_array(rng, shape, mx.float32)
        key = mx.random.key(11)
        got = mx.random.categorical(logits, key=key)
        g = mx.random.gumbel(shape=shape, key=key)
        np.testing.assert_array_equal(
            np.array(got), np.array(mx.argmax(g + logits, axis=-1))
        )
