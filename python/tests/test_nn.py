"""kiln.nn activations (functions and modules) against NumPy formulas and finite
differences, the public names of the package, and the stand-ins in nn/_fallback.py for core
functions that are not in kiln.core yet (fast.*, linalg, unflatten, diag, compile)."""

import math

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn
from kiln.nn import _fallback
from nn_helpers import check_grad, f64, np64


def np_softplus(x):
    return np.logaddexp(x, 0)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_erf(x):
    return np.vectorize(math.erf)(x)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


ACTIVATIONS = {
    # name: (function reference, module class, module kwargs)
    "sigmoid": (np_sigmoid, nn.Sigmoid, {}),
    "relu": (lambda x: np.maximum(x, 0), nn.ReLU, {}),
    "relu2": (lambda x: np.maximum(x, 0) ** 2, nn.ReLU2, {}),
    "relu6": (lambda x: np.clip(x, 0, 6), nn.ReLU6, {}),
    "leaky_relu": (lambda x: np.where(x > 0, x, 0.01 * x), nn.LeakyReLU, {}),
    "log_softmax": (lambda x: np.log(np_softmax(x)), nn.LogSoftmax, {}),
    "elu": (lambda x: np.where(x > 0, x, np.exp(x) - 1), nn.ELU, {}),
    "softmax": (np_softmax, nn.Softmax, {}),
    "softplus": (np_softplus, nn.Softplus, {}),
    "softsign": (lambda x: x / (1 + np.abs(x)), nn.Softsign, {}),
    "softshrink": (lambda x: np.where(np.abs(x) > 0.5, x - np.sign(x) * 0.5, 0), nn.Softshrink, {}),
    "celu": (lambda x: np.maximum(x, 0) + np.minimum(np.exp(x) - 1, 0), nn.CELU, {}),
    "silu": (lambda x: x * np_sigmoid(x), nn.SiLU, {}),
    "log_sigmoid": (lambda x: -np_softplus(-x), nn.LogSigmoid, {}),
    "gelu": (lambda x: 0.5 * x * (1 + np_erf(x / math.sqrt(2))), nn.GELU, {}),
    "gelu_approx": (
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
        nn.GELU,
        {"approx": "tanh"},
    ),
    "gelu_fast_approx": (lambda x: x * np_sigmoid(1.702 * x), nn.GELU, {"approx": "fast"}),
    "glu": (
        lambda x: x[..., : x.shape[-1] // 2] * np_sigmoid(x[..., x.shape[-1] // 2 :]),
        nn.GLU,
        {},
    ),
    "selu": (lambda x: 1.0507 * np.where(x > 0, x, 1.67326 * (np.exp(x) - 1)), nn.SELU, {}),
    "mish": (lambda x: x * np.tanh(np_softplus(x)), nn.Mish, {}),
    "hardswish": (lambda x: x * np.clip(x + 3, 0, 6) / 6, nn.Hardswish, {}),
    "hard_tanh": (lambda x: np.clip(x, -1, 1), nn.HardTanh, {}),
    "hard_shrink": (lambda x: np.where(np.abs(x) > 0.5, x, 0), nn.HardShrink, {}),
    "softmin": (lambda x: np_softmax(-x), nn.Softmin, {}),
    "tanh": (np.tanh, nn.Tanh, {}),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_function_and_module(rng, name):
    reference, module_cls, kwargs = ACTIVATIONS[name]
    xn = (rng.standard_normal((3, 8)) * 3).astype(np.float32)
    x = mx.array(xn)
    expected = reference(xn.astype(np.float64))
    fn = getattr(nn, name)
    np.testing.assert_allclose(np64(fn(x)), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np64(module_cls(**kwargs)(x)), expected, rtol=1e-5, atol=1e-6)
    assert fn(x.astype(mx.float16)).dtype == mx.float16
    # Gradients in float64, away from the kinks of the piecewise functions.
    x64 = f64(rng.uniform(0.6, 2.5, (2, 6)) * rng.choice([-1, 1], (2, 6)))
    weights = f64(rng.standard_normal(fn(x64).shape))
    check_grad(lambda v: mx.sum(fn(v) * weights), (x64,), rng)


def test_parametrized_activations(rng):
    xn = rng.standard_normal((4, 5)) * 2
    x = f64(xn)
    np.testing.assert_allclose(np64(nn.leaky_relu(x, 0.2)), np.where(xn > 0, xn, 0.2 * xn))
    np.testing.assert_allclose(np64(nn.LeakyReLU(0.3)(x)), np.where(xn > 0, xn, 0.3 * xn))
    np.testing.assert_allclose(np64(nn.elu(x, 2.0)), np.where(xn > 0, xn, 2 * (np.exp(xn) - 1)))
    np.testing.assert_allclose(np64(nn.ELU(0.5)(x)), np.where(xn > 0, xn, 0.5 * (np.exp(xn) - 1)))
    np.testing.assert_allclose(
        np64(nn.celu(x, 2.0)), np.maximum(xn, 0) + np.minimum(2 * (np.exp(xn / 2) - 1), 0)
    )
    np.testing.assert_allclose(
        np64(nn.CELU(0.5)(x)), np.maximum(xn, 0) + np.minimum(0.5 * (np.exp(xn / 0.5) - 1), 0)
    )
    np.testing.assert_allclose(
        np64(nn.softshrink(x, 1.0)), np.where(np.abs(xn) > 1, xn - np.sign(xn), 0)
    )
    np.testing.assert_allclose(
        np64(nn.Softshrink(0.2)(x)), np.where(np.abs(xn) > 0.2, xn - 0.2 * np.sign(xn), 0)
    )
    np.testing.assert_allclose(np64(nn.hard_shrink(x, 1.0)), np.where(np.abs(xn) > 1, xn, 0))
    np.testing.assert_allclose(np64(nn.HardShrink(0.2)(x)), np.where(np.abs(xn) > 0.2, xn, 0))
    np.testing.assert_allclose(np64(nn.hard_tanh(x, -0.5, 2.0)), np.clip(xn, -0.5, 2.0))
    alpha = rng.standard_normal(5)
    np.testing.assert_allclose(np64(nn.prelu(x, f64(alpha))), np.where(xn > 0, xn, alpha * xn))
    np.testing.assert_allclose(
        np64(nn.log_softmax(x, axis=0)), np.log(np_softmax(xn, axis=0)), rtol=1e-12
    )
    np.testing.assert_allclose(np64(nn.softmax(x, axis=0)), np_softmax(xn, axis=0), rtol=1e-12)
    np.testing.assert_allclose(np64(nn.softmin(x, axis=0)), np_softmax(-xn, axis=0), rtol=1e-12)
    np.testing.assert_allclose(np64(nn.glu(x[:, :4], axis=0)), xn[:2, :4] * np_sigmoid(xn[2:, :4]))
    np.testing.assert_allclose(np64(nn.GLU(axis=0)(x)), xn[:2] * np_sigmoid(xn[2:]))


def test_step():
    x = mx.array([-1.0, 0.0, 0.5, 2.0])
    assert nn.step(x).tolist() == [0, 1, 1, 1]
    assert nn.Step(1.0)(x).tolist() == [0, 0, 0, 1]
    assert nn.step(x).dtype == mx.int32


def test_log_softmax_is_stable():
    x = mx.array([[1000.0, 0.0, -1000.0]])
    y = np64(nn.log_softmax(x))
    assert np.all(np.isfinite(y[0, :2])) and np.isclose(y[0, 0], 0.0)
    assert np.isclose(np64(nn.log_sigmoid(mx.array([-100.0])))[0], -100.0)
    assert np.isclose(np64(nn.softplus(mx.array([100.0])))[0], 100.0)


def test_public_names_match_mlx():
    names = """ALiBi AvgPool1d AvgPool2d AvgPool3d BatchNorm Bilinear CELU Conv1d Conv2d Conv3d
    ConvTranspose1d ConvTranspose2d ConvTranspose3d Dropout Dropout2d Dropout3d ELU Embedding
    GELU GLU GRU GroupNorm HardShrink HardTanh Hardswish Identity InstanceNorm LSTM LayerNorm
    LeakyReLU Linear LogSigmoid LogSoftmax MaxPool1d MaxPool2d MaxPool3d Mish Module
    MultiHeadAttention PReLU QQLinear QuantizedEmbedding QuantizedLinear RMSNorm RNN ReLU ReLU2
    ReLU6 RoPE SELU Sequential SiLU Sigmoid SinusoidalPositionalEncoding Softmax Softmin
    Softplus Softshrink Softsign Step Tanh Transformer TransformerDecoder
    TransformerDecoderLayer TransformerEncoder TransformerEncoderLayer Upsample
    average_gradients celu elu gelu gelu_approx gelu_fast_approx glu hard_shrink hard_tanh
    hardswish init leaky_relu log_sigmoid log_softmax losses mish prelu quantize relu relu2
    relu6 selu sigmoid silu softmax softmin softplus softshrink softsign step tanh
    value_and_grad""".split()
    missing = [n for n in names if not hasattr(nn, n)]
    assert missing == []
    import kiln.nn.init as init
    import kiln.nn.losses as losses
    import kiln.optimizers as optim

    for module, wanted in [
        (
            init,
            "constant normal uniform identity glorot_normal glorot_uniform he_normal he_uniform sparse orthogonal",
        ),
        (
            losses,
            "cross_entropy binary_cross_entropy l1_loss mse_loss nll_loss gaussian_nll_loss kl_div_loss smooth_l1_loss triplet_loss hinge_loss huber_loss log_cosh_loss cosine_similarity_loss margin_ranking_loss",
        ),
        (
            optim,
            "Optimizer MultiOptimizer SGD RMSprop Adagrad AdaDelta Adam AdamW Adamax Lion Adafactor Muon clip_grad_norm exponential_decay step_decay cosine_decay join_schedules linear_schedule",
        ),
    ]:
        assert [n for n in wanted.split() if not hasattr(module, n)] == []


# ---------------------------------------------------------------- fallbacks for missing core ops


def np_rms_norm(x, w, eps):
    y = x / np.sqrt((x**2).mean(-1, keepdims=True) + eps)
    return y if w is None else y * w


@pytest.mark.parametrize("with_weight", [False, True])
def test_fallback_rms_norm(rng, with_weight):
    x = rng.standard_normal((3, 7))
    w = rng.standard_normal(7) if with_weight else None
    y = _fallback._rms_norm(f64(x), None if w is None else f64(w), 1e-5)
    np.testing.assert_allclose(np64(y), np_rms_norm(x, w, 1e-5), rtol=1e-12)
    half = _fallback._rms_norm(f64(x).astype(mx.float16), None, 1e-5)
    assert half.dtype == mx.float16
    np.testing.assert_allclose(np64(half), np_rms_norm(x, None, 1e-5), rtol=1e-2, atol=1e-2)
    check_grad(
        lambda v: mx.sum(_fallback._rms_norm(v, None if w is None else f64(w), 1e-5) ** 3),
        (f64(x),),
        rng,
    )


def test_fallback_layer_norm_optional_parameters(rng):
    x = rng.standard_normal((2, 5))
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    base = (x - mean) / np.sqrt(var + 1e-5)
    w, b = rng.standard_normal(5), rng.standard_normal(5)
    for weight, bias, expected in [
        (None, None, base),
        (w, None, base * w),
        (None, b, base + b),
        (w, b, base * w + b),
    ]:
        y = _fallback._layer_norm(
            f64(x),
            None if weight is None else f64(weight),
            None if bias is None else f64(bias),
            1e-5,
        )
        np.testing.assert_allclose(np64(y), expected, rtol=1e-12)
    assert (
        _fallback._layer_norm(f64(x).astype(mx.float16), None, mx.zeros((5,)), 1e-5).dtype
        == mx.float16
    )


def test_fallback_rope_array_offsets(rng):
    x = rng.standard_normal((2, 3, 4, 8))
    offsets = np.array([0, 5])
    y = np64(
        _fallback._rope(
            f64(x), 8, traditional=False, base=10000.0, scale=1.0, offset=mx.array(offsets)
        )
    )
    for b, off in enumerate(offsets):
        yb = np64(
            _fallback._rope(
                f64(x[b : b + 1]), 8, traditional=False, base=10000.0, scale=1.0, offset=int(off)
            )
        )
        np.testing.assert_allclose(y[b : b + 1], yb, rtol=1e-6, atol=1e-7)
    scalar = np64(
        _fallback._rope(f64(x), 8, traditional=True, base=100.0, scale=1.0, offset=mx.array(3))
    )
    np.testing.assert_allclose(
        scalar, np64(_fallback._rope(f64(x), 8, traditional=True, base=100.0, scale=1.0, offset=3))
    )
    # Explicit frequencies replace the base: base^(2i/d) gives the same rotation.
    freqs = mx.array((10000.0 ** (np.arange(4) * 2 / 8)).astype(np.float32))
    with_freqs = np64(
        _fallback._rope(f64(x), 8, traditional=False, base=None, scale=1.0, offset=2, freqs=freqs)
    )
    with_base = np64(
        _fallback._rope(f64(x), 8, traditional=False, base=10000.0, scale=1.0, offset=2)
    )
    np.testing.assert_allclose(with_freqs, with_base, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="base and freqs"):
        _fallback._rope(f64(x), 8, traditional=False, base=10.0, scale=1.0, offset=0, freqs=freqs)
    with pytest.raises(ValueError, match="dims"):
        _fallback._rope(f64(x), 10, traditional=False, base=10.0, scale=1.0, offset=0)


def np_sdpa(q, k, v, scale, mask=None, sinks=None):
    repeats = q.shape[1] // k.shape[1]
    k = np.repeat(k, repeats, axis=1)
    v = np.repeat(v, repeats, axis=1)
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    if sinks is not None:
        sink = np.broadcast_to(sinks[None, :, None, None], s.shape[:-1] + (1,))
        s = np.concatenate([sink, s], -1)
        return (np_softmax(s)[..., 1:]) @ v
    return np_softmax(s) @ v


@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (6, 1)])
@pytest.mark.parametrize("mask_kind", [None, "causal", "bool", "additive", "additive_heads"])
def test_fallback_attention(rng, heads, mask_kind):
    n_q, n_kv = heads
    q = rng.standard_normal((2, n_q, 3, 4))
    k = rng.standard_normal((2, n_kv, 5, 4))
    v = rng.standard_normal((2, n_kv, 5, 6))
    np_mask, mask = None, None
    if mask_kind == "causal":
        np_mask = np.arange(2, 5)[:, None] >= np.arange(5)[None]
        mask = "causal"
    elif mask_kind == "bool":
        np_mask = rng.random((3, 5)) < 0.7
        np_mask[:, 0] = True
        mask = mx.array(np_mask)
    elif mask_kind == "additive":
        np_mask = rng.standard_normal((3, 5))
        mask = f64(np_mask)
    elif mask_kind == "additive_heads":
        np_mask = rng.standard_normal((2, n_q, 3, 5))
        mask = f64(np_mask)
    out = _fallback._scaled_dot_product_attention(f64(q), f64(k), f64(v), scale=0.5, mask=mask)
    np.testing.assert_allclose(np64(out), np_sdpa(q, k, v, 0.5, np_mask), rtol=1e-10, atol=1e-12)
    check_grad(
        lambda a, b, c: mx.sum(
            _fallback._scaled_dot_product_attention(a, b, c, scale=0.5, mask=mask) ** 2
        ),
        (f64(q), f64(k), f64(v)),
        rng,
        directions=1,
    )


def test_fallback_attention_sinks_and_errors(rng):
    q, k, v = (rng.standard_normal(s) for s in [(1, 4, 2, 3), (1, 2, 4, 3), (1, 2, 4, 3)])
    sinks = rng.standard_normal(4)
    out = _fallback._scaled_dot_product_attention(
        f64(q), f64(k), f64(v), scale=1.0, sinks=f64(sinks)
    )
    np.testing.assert_allclose(np64(out), np_sdpa(q, k, v, 1.0, sinks=sinks), rtol=1e-10)
    half = _fallback._scaled_dot_product_attention(
        *(f64(a).astype(mx.float16) for a in (q, k, v)), scale=1.0
    )
    assert half.dtype == mx.float16
    with pytest.raises(ValueError, match="multiple"):
        _fallback._scaled_dot_product_attention(f64(q[:, :3]), f64(k), f64(v), scale=1.0)
    with pytest.raises(ValueError, match="window"):
        _fallback._scaled_dot_product_attention(f64(q), f64(k), f64(v), scale=1.0, mask="window")
    with pytest.raises(ValueError, match="4-d"):
        _fallback._scaled_dot_product_attention(f64(q[0]), f64(k[0]), f64(v[0]), scale=1.0)


def test_fallback_linalg_and_shapes(rng):
    x = rng.standard_normal((4, 5))
    np.testing.assert_allclose(np64(_fallback._norm(f64(x))), np.linalg.norm(x), rtol=1e-12)
    np.testing.assert_allclose(
        np64(_fallback._norm(f64(x), axis=1, keepdims=True)),
        np.linalg.norm(x, axis=1, keepdims=True),
        rtol=1e-12,
    )
    with pytest.raises(ValueError, match="ord"):
        _fallback._norm(f64(x), ord=1)
    a = rng.standard_normal((6, 4))
    q, r = _fallback._qr(f64(a))
    q, r = np64(q), np64(r)
    np.testing.assert_allclose(q @ r, a, atol=1e-10)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-10)
    assert np.all(np.diag(r) > 0) and np.allclose(np.tril(r, -1), 0)
    qn, rn = np.linalg.qr(a)
    signs = np.sign(np.diag(rn))
    np.testing.assert_allclose(q, qn * signs, atol=1e-10)  # the sign-normalized QR is unique
    with pytest.raises(ValueError, match="square or tall"):
        _fallback._qr(f64(a.T))
    assert _fallback._unflatten(mx.zeros((2, 12, 3)), 1, (3, -1)).shape == (2, 3, 4, 3)
    assert _fallback._unflatten(mx.zeros((2, 12)), -1, (2, 2, 3)).shape == (2, 2, 2, 3)
    m = rng.standard_normal((3, 5))
    for k in (-2, 0, 1, 4):
        np.testing.assert_array_equal(np64(_fallback._diag(f64(m), k)), np.diag(m, k))
    np.testing.assert_array_equal(np64(_fallback._diag(f64([[7.0]]))), [7.0])


def test_fallback_compile_is_usable_as_decorator():
    calls = []

    @_fallback.compile
    def f(x):
        calls.append(1)
        return x + 1

    assert f(mx.array(1)).item() == 2
    g = _fallback.compile(lambda x: x * 2, shapeless=True)
    assert g(mx.array(3)).item() == 6


def test_fallback_namespace_prefers_core():
    class Real:
        def rms_norm(self, *args):
            return "real"

    ns = _fallback._Namespace(Real(), rms_norm=lambda *a: "fallback", rope=lambda *a: "rope")
    assert ns.rms_norm() == "real" and ns.rope() == "rope"
    with pytest.raises(AttributeError, match="no fallback"):
        ns.layer_norm
