"""kiln.nn activations (functions and modules) against NumPy formulas and finite
differences, and the public names of the package."""

import math

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn
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
    # Gradients in float64, at least 0.1 away from every kink of the piecewise functions (0,
    # +-0.5, +-1, +-3, +-6): the finite differences' step (1e-6 times a normal direction) must
    # not cross one (hard_tanh's kink at +-1 inside [0.6, 2.5] failed ~2e-5 of draws).
    magnitude = rng.uniform(0.6, 2.2, (2, 6))
    magnitude = np.where(magnitude > 0.9, magnitude + 0.2, magnitude)  # [0.6, 0.9] u [1.1, 2.4]
    x64 = f64(magnitude * rng.choice([-1, 1], (2, 6)))
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
