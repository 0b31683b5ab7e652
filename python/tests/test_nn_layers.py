"""kiln.nn layers: each forward against a float64 NumPy reference, gradients against finite
differences (float64), training/evaluation behaviour and invalid arguments. Affine,
dropout, normalization, pooling, upsampling and positional layers; attention, transformer
and recurrent layers are in test_nn_transformer_rnn.py, convolution and quantized layers in
test_nn_conv_quantized.py."""

import math

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn
from kiln.utils import tree_flatten
from nn_helpers import F32_SLACK, check_grad, f64, module_grad_check, np64
from nn_layer_refs import close, f32, params_np, as_float64, np_layer_norm, np_rope, np_pool

# ---------------------------------------------------------------- affine layers


def test_linear_forward_and_grad(rng):
    layer = nn.Linear(5, 3)
    assert layer.weight.shape == (3, 5) and layer.bias.shape == (3,)
    x, xn = f32(rng, 2, 4, 5)
    p = params_np(layer)
    close(layer(x), xn @ p["weight"].T + p["bias"])
    no_bias = nn.Linear(5, 3, bias=False)
    assert "bias" not in no_bias
    close(no_bias(x), xn @ np64(no_bias.weight).T)
    module_grad_check(as_float64(nn.Linear(4, 3)), [f64(rng.standard_normal((2, 4)))], rng)


def test_linear_init_range():
    mx.random.seed(0)
    w = np64(nn.Linear(400, 300).weight)
    bound = 1 / math.sqrt(400)
    assert np.abs(w).max() <= bound * F32_SLACK and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound


def test_bilinear_forward_and_grad(rng):
    layer = nn.Bilinear(3, 4, 2)
    assert layer.weight.shape == (2, 4, 3)
    x1, x1n = f32(rng, 5, 3)
    x2, x2n = f32(rng, 5, 4)
    p = params_np(layer)
    expected = np.einsum("ni,oji,nj->no", x1n, p["weight"], x2n) + p["bias"]
    close(layer(x1, x2), expected)
    # Leading batch axes are kept.
    y1, y1n = f32(rng, 2, 3, 3)
    y2, y2n = f32(rng, 2, 3, 4)
    close(layer(y1, y2), np.einsum("abi,oji,abj->abo", y1n, p["weight"], y2n) + p["bias"])
    module_grad_check(
        as_float64(nn.Bilinear(2, 3, 2)),
        [f64(rng.standard_normal((3, 2))), f64(rng.standard_normal((3, 3)))],
        rng,
    )


def test_identity_and_sequential(rng):
    x, xn = f32(rng, 3, 4)
    assert nn.Identity(1, 2, key="ignored")(x) is x
    seq = nn.Sequential(nn.Linear(4, 6), nn.relu, nn.Linear(6, 2))
    p = params_np(seq)
    h = np.maximum(xn @ p["layers.0.weight"].T + p["layers.0.bias"], 0)
    close(seq(x), h @ p["layers.2.weight"].T + p["layers.2.bias"])
    assert [k for k, _ in tree_flatten(seq.parameters())] == [
        "layers.0.weight",
        "layers.0.bias",
        "layers.2.weight",
        "layers.2.bias",
    ]


def test_embedding(rng):
    emb = nn.Embedding(10, 4)
    table = np64(emb.weight)
    idx = rng.integers(0, 10, size=(3, 5))
    close(emb(mx.array(idx)), table[idx])
    x, xn = f32(rng, 2, 4)
    close(emb.as_linear(x), xn @ table.T)
    emb64 = as_float64(nn.Embedding(6, 3))
    ids = mx.array(rng.integers(0, 6, size=(7,)))
    weights = f64(rng.standard_normal((7, 3)))

    def loss(params):
        emb64.update(params)
        return mx.sum(emb64(ids) * weights)

    check_grad(loss, (emb64.trainable_parameters(),), rng)
    grad = mx.grad(loss)(emb64.trainable_parameters())["weight"]
    expected = np.zeros((6, 3))
    np.add.at(expected, np.array(ids), np64(weights))
    close(grad, expected, rtol=1e-12, atol=1e-12)


def test_embedding_init_statistics():
    mx.random.seed(1)
    w = np64(nn.Embedding(2000, 64).weight)
    assert abs(w.mean()) < 0.01 and abs(w.std() - 1 / 8) < 0.005


@pytest.mark.parametrize(
    "make, name, value",
    [
        (lambda: nn.Linear(0, 3), "input_dims", 0),
        (lambda: nn.Linear(-2, 3), "input_dims", -2),
        (lambda: nn.Linear(3, -1), "output_dims", -1),
        (lambda: nn.Bilinear(2, -3, 1), "input2_dims", -3),
        (lambda: nn.Embedding(-1, 3), "num_embeddings", -1),
        (lambda: nn.Embedding(4, 0), "dims", 0),
        (lambda: nn.LayerNorm(-4), "dims", -4),
        (lambda: nn.LayerNorm(4, eps=0.0), "eps", 0.0),
        (lambda: nn.RMSNorm(4, eps=-1e-5), "eps", -1e-05),
        (lambda: nn.GroupNorm(3, 8), "num_groups", 3),
        (lambda: nn.GroupNorm(0, 8), "num_groups", 0),
        (lambda: nn.BatchNorm(0), "num_features", 0),
        (lambda: nn.InstanceNorm(3, eps=0), "eps", 0),
        (lambda: nn.MultiHeadAttention(10, 3), "num_heads", 3),
        (lambda: nn.MultiHeadAttention(-8, 2), "dims", -8),
        (lambda: nn.MultiHeadAttention(8, 0), "num_heads", 0),
        (lambda: nn.Dropout(1.0), "p", 1.0),
        (lambda: nn.Dropout2d(-0.1), "p", -0.1),
        (lambda: nn.RoPE(5), "dims", 5),
        (lambda: nn.SinusoidalPositionalEncoding(7), "dims", 7),
        (lambda: nn.MaxPool2d(0), "kernel_size", "(0, 0)"),
        (lambda: nn.AvgPool1d(2, stride=-1), "stride", "(-1,)"),
        (lambda: nn.MaxPool1d(2, padding=-1), "padding", "(-1,)"),
        (lambda: nn.MaxPool2d((2, 2, 2)), "kernel_size", "(2, 2, 2)"),
        (lambda: nn.RNN(-1, 4), "input_size", -1),
        (lambda: nn.GRU(3, 0), "hidden_size", 0),
        (lambda: nn.LSTM(0, 2), "input_size", 0),
        (lambda: nn.RNN(2, 2, nonlinearity="tanh"), "nonlinearity", "tanh"),
        (lambda: nn.GELU("sigmoid"), "approx", "sigmoid"),
        (lambda: nn.Upsample(2.0, mode="area"), "mode", "area"),
        (lambda: nn.Conv2d(4, 2, 3, groups=3), "groups", 3),
        (lambda: nn.Conv1d(0, 2, 3), "in_channels", 0),
        (lambda: nn.ConvTranspose2d(2, 2, 0), "kernel_size", 0),
    ],
)
def test_invalid_layer_arguments_name_argument_and_value(make, name, value):
    with pytest.raises(ValueError) as info:
        make()
    message = str(info.value)
    assert name in message and str(value) in message, message


# ---------------------------------------------------------------- dropout


def test_dropout_statistics_and_eval():
    mx.random.seed(5)
    layer = nn.Dropout(0.3)
    x = mx.ones((200, 100))
    y = np64(layer(x))
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    layer.eval()
    assert layer(x) is x
    assert nn.Dropout(0.0)(x) is x


@pytest.mark.parametrize(
    "cls, shape, spatial",
    [(nn.Dropout2d, (8, 5, 6, 40), (1, 2)), (nn.Dropout3d, (8, 3, 4, 5, 40), (1, 2, 3))],
)
def test_channel_dropout_drops_whole_channels(cls, shape, spatial):
    mx.random.seed(7)
    layer = cls(0.5)
    y = np64(layer(mx.ones(shape)))
    per_channel = y.reshape(shape[0], -1, shape[-1])
    # Every (sample, channel) is either all zero or all 2.
    assert np.all((per_channel == 0).all(1) | (per_channel == 2).all(1))
    assert 0.35 < (per_channel[:, 0] == 0).mean() < 0.65
    # Unbatched input works too.
    assert layer(mx.ones(shape[1:])).shape == shape[1:]
    layer.eval()
    x = mx.ones(shape)
    assert layer(x) is x


def test_channel_dropout_rejects_wrong_rank():
    with pytest.raises(ValueError, match="5 dimensions"):
        nn.Dropout2d()(mx.ones((1, 2, 3, 4, 5)))
    with pytest.raises(ValueError, match="3 dimensions"):
        nn.Dropout3d()(mx.ones((1, 2, 3)))


# ---------------------------------------------------------------- normalization


def test_layer_norm(rng):
    x, xn = f32(rng, 2, 3, 8)
    ln = nn.LayerNorm(8, eps=1e-4)
    ln.update(
        {
            "weight": mx.array(rng.standard_normal(8).astype(np.float32)),
            "bias": mx.array(rng.standard_normal(8).astype(np.float32)),
        }
    )
    p = params_np(ln)
    close(ln(x), np_layer_norm(xn, 1e-4, p["weight"], p["bias"]))
    close(nn.LayerNorm(8, affine=False)(x), np_layer_norm(xn, 1e-5))
    no_bias = nn.LayerNorm(8, bias=False)
    assert "bias" not in no_bias and "weight" in no_bias
    close(no_bias(x), np_layer_norm(xn, 1e-5))
    module_grad_check(as_float64(nn.LayerNorm(5)), [f64(rng.standard_normal((3, 5)))], rng)


def test_layer_norm_half_precision(rng):
    x, xn = f32(rng, 4, 64)
    for dtype in (mx.float16, mx.bfloat16):
        xh = x.astype(dtype)
        y = nn.LayerNorm(64, affine=False)(xh)
        assert y.dtype == dtype
        close(y, np_layer_norm(np64(xh), 1e-5), rtol=2e-2, atol=2e-2)
        # float32 parameters promote the result, as MLX's fast.layer_norm does.
        assert nn.LayerNorm(64)(xh).dtype == mx.float32
        assert nn.LayerNorm(64, affine=False)(xh).dtype == dtype


def test_rms_norm(rng):
    x, xn = f32(rng, 3, 2, 16)
    norm = nn.RMSNorm(16, eps=1e-6)
    norm.weight = mx.array(rng.standard_normal(16).astype(np.float32))
    expected = xn / np.sqrt((xn**2).mean(-1, keepdims=True) + 1e-6) * np64(norm.weight)
    close(norm(x), expected)
    y = norm(x.astype(mx.bfloat16))
    assert y.dtype == mx.promote_types(mx.bfloat16, mx.float32)
    module_grad_check(as_float64(nn.RMSNorm(6)), [f64(rng.standard_normal((2, 6)))], rng)


@pytest.mark.parametrize("pytorch_compatible", [False, True])
def test_group_norm(rng, pytorch_compatible):
    groups, dims = 3, 12
    x, xn = f32(rng, 2, 4, 5, dims)
    gn = nn.GroupNorm(groups, dims, eps=1e-5, pytorch_compatible=pytorch_compatible)
    gn.update(
        {
            "weight": mx.array(rng.standard_normal(dims).astype(np.float32)),
            "bias": mx.array(rng.standard_normal(dims).astype(np.float32)),
        }
    )
    p = params_np(gn)
    channel = np.arange(dims)
    group_of = channel // (dims // groups) if pytorch_compatible else channel % groups
    y = np.empty_like(xn)
    for b in range(xn.shape[0]):
        for g in range(groups):
            sel = xn[b][..., group_of == g]
            y[b][..., group_of == g] = (sel - sel.mean()) / np.sqrt(sel.var() + 1e-5)
    close(gn(x), y * p["weight"] + p["bias"])
    close(nn.GroupNorm(groups, dims, affine=False, pytorch_compatible=pytorch_compatible)(x), y)
    module_grad_check(
        as_float64(nn.GroupNorm(2, 4, pytorch_compatible=pytorch_compatible)),
        [f64(rng.standard_normal((2, 3, 4)))],
        rng,
    )


def test_instance_norm(rng):
    x, xn = f32(rng, 2, 3, 4, 5)
    mean = xn.mean(axis=(1, 2), keepdims=True)
    var = xn.var(axis=(1, 2), keepdims=True)
    expected = (xn - mean) / np.sqrt(var + 1e-5)
    close(nn.InstanceNorm(5)(x), expected)
    inorm = nn.InstanceNorm(5, affine=True)
    inorm.weight = mx.array(rng.standard_normal(5).astype(np.float32))
    close(inorm(x), expected * np64(inorm.weight))
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        inorm(mx.ones((2, 5)))
    module_grad_check(
        as_float64(nn.InstanceNorm(3, affine=True)), [f64(rng.standard_normal((2, 4, 3)))], rng
    )


@pytest.mark.parametrize("shape", [(16, 4), (4, 5, 4), (3, 4, 5, 4)])
def test_batch_norm_training_and_running_stats(rng, shape):
    bn = nn.BatchNorm(4, momentum=0.2)
    x, xn = f32(rng, *shape)
    axes = tuple(range(len(shape) - 1))
    mean, var = xn.mean(axes), xn.var(axes)
    close(bn(x), (xn - mean) / np.sqrt(var + 1e-5))
    n = np.prod(shape[:-1])
    close(bn.running_mean, 0.2 * mean)
    close(bn.running_var, 0.8 + 0.2 * var * n / (n - 1))
    bn.eval()
    rm, rv = np64(bn.running_mean), np64(bn.running_var)
    close(bn(x), (xn - rm) / np.sqrt(rv + 1e-5))
    close(bn.running_mean, rm)  # evaluation does not update the statistics


def test_batch_norm_without_tracking_or_affine(rng):
    bn = nn.BatchNorm(3, affine=False, track_running_stats=False)
    assert list(bn.keys()) == []
    x, xn = f32(rng, 6, 3)
    bn.eval()  # without running statistics, evaluation uses the batch's
    close(bn(x), (xn - xn.mean(0)) / np.sqrt(xn.var(0) + 1e-5))


def test_batch_norm_errors_and_grad(rng):
    bn = nn.BatchNorm(3)
    with pytest.raises(ValueError, match="got 5"):
        bn(mx.ones((1, 2, 2, 2, 3)))
    with pytest.raises(ValueError, match="more than one value per channel"):
        bn(mx.ones((1, 3)))
    bn.eval()
    assert bn(mx.ones((1, 3))).shape == (1, 3)
    module_grad_check(
        as_float64(nn.BatchNorm(3, track_running_stats=False)),
        [f64(rng.standard_normal((5, 3)))],
        rng,
    )


# ---------------------------------------------------------------- pooling


POOL_CASES = [
    (nn.MaxPool1d, np.max, (2, 9, 3), dict(kernel_size=3, stride=2, padding=1)),
    (nn.AvgPool1d, np.mean, (2, 8, 3), dict(kernel_size=2)),
    (nn.AvgPool1d, np.mean, (2, 9, 3), dict(kernel_size=4, stride=1, padding=2)),
    (nn.MaxPool2d, np.max, (2, 6, 7, 3), dict(kernel_size=(2, 3), stride=(1, 2))),
    (nn.MaxPool2d, np.max, (1, 6, 6, 2), dict(kernel_size=2)),
    (nn.AvgPool2d, np.mean, (2, 7, 5, 2), dict(kernel_size=3, stride=2, padding=(1, 0))),
    (nn.MaxPool3d, np.max, (1, 4, 5, 6, 2), dict(kernel_size=2, stride=(2, 1, 3))),
    (nn.AvgPool3d, np.mean, (1, 4, 4, 4, 2), dict(kernel_size=2)),
]


@pytest.mark.parametrize("cls, reduce, shape, kwargs", POOL_CASES)
def test_pooling(rng, cls, reduce, shape, kwargs):
    d = len(shape) - 2
    x, xn = f32(rng, *shape)

    def per_axis(v):
        return [v] * d if isinstance(v, int) else list(v)

    kernel = per_axis(kwargs["kernel_size"])
    stride = per_axis(kwargs.get("stride", kwargs["kernel_size"]))
    padding = per_axis(kwargs.get("padding", 0))
    close(cls(**kwargs)(x), np_pool(xn, kernel, stride, padding, reduce))


@pytest.mark.parametrize("cls", [nn.MaxPool2d, nn.AvgPool2d])
@pytest.mark.parametrize("stride", [1, 2])
def test_pooling_grad(rng, cls, stride):
    # Distinct values at least 0.05 apart (a shuffled grid plus jitter): max pooling has a kink
    # where two values of a window tie, and normal inputs put two within the finite
    # differences' step (1e-6 times a normal direction) in ~4e-5 of draws.
    values = (rng.permutation(40) - 19.5) / 10 + rng.uniform(-0.025, 0.025, 40)
    module_grad_check(cls(2, stride=stride), [f64(values.reshape(1, 4, 5, 2))], rng)


def test_pooling_repr_and_errors():
    assert (
        repr(nn.MaxPool2d(3, 2, 1))
        == "MaxPool2d(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))"
    )
    with pytest.raises(ValueError, match="spatial"):
        nn.MaxPool2d(2)(mx.ones((4, 4, 2, 2, 2)))
    with pytest.raises(ValueError, match="larger than"):
        nn.AvgPool1d(5)(mx.ones((1, 3, 1)))


# ---------------------------------------------------------------- upsample


def np_positions(n, scale, align_corners):
    m = int(scale * n)
    i = np.arange(m, dtype=np.float64)
    if align_corners:
        return i * ((n - 1) / max(m - 1, 1))
    # Output samples 1/scale apart, centred on the input's centre.
    return (i - (m - 1) / 2) / scale + (n - 1) / 2


def np_keys_cubic(t, a):
    t = np.abs(t)
    return np.where(
        t <= 1,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        np.where(t < 2, a * (((t - 5) * t + 8) * t - 4), 0.0),
    )


def np_resample_matrix(n, scale, mode, align_corners, antialias):
    """(m, n) matrix mapping an axis of n samples to int(scale * n) samples."""
    pos = np_positions(n, scale, align_corners)
    M = np.zeros((len(pos), n))
    for i, c in enumerate(pos):
        if antialias:
            kernel, radius = (
                (lambda t: np.maximum(1 - np.abs(t), 0), 1.0)
                if mode == "linear"
                else (lambda t: np_keys_cubic(t, -0.5), 2.0)
            )
            stretch = 1 / scale if scale < 1 else 1.0
            taps = np.floor(c) + np.arange(
                -math.ceil(radius * stretch), math.ceil(radius * stretch) + 1
            )
            taps = taps[(taps >= 0) & (taps < n)]
            w = kernel((c - taps) / stretch)
            if w.sum() > 0:
                w = w / w.sum()
            for t, wt in zip(taps.astype(int), w):
                M[i, t] += wt
        elif mode == "linear":
            c = min(max(c, 0), n - 1)
            lo, hi = int(np.floor(c)), int(np.ceil(c))
            M[i, lo] += 1 - (c - lo)
            M[i, hi] += c - lo
        else:  # cubic, a = -0.75, clamped borders
            f = np.floor(c)
            for k in (-1, 0, 1, 2):
                M[i, int(min(max(f + k, 0), n - 1))] += np_keys_cubic(c - (f + k), -0.75)
    return M


def np_upsample(x, scales, mode, align_corners=False, antialias=False):
    for axis, s in enumerate(scales, start=1):
        n = x.shape[axis]
        if mode == "nearest":
            m = int(s * n)
            i = np.arange(m)
            idx = np.round((i + 0.5) * (n / m) - 0.5) if m > n else np.floor(i * (n / m))
            x = np.take(x, idx.astype(int), axis=axis)
        else:
            M = np_resample_matrix(n, s, mode, align_corners, antialias)
            x = np.moveaxis(np.tensordot(M, np.moveaxis(x, axis, 0), axes=1), 0, axis)
    return x


UPSAMPLE_CASES = [
    ("nearest", 2, False, False),
    ("nearest", (3, 1), False, False),
    ("nearest", 1.5, False, False),
    ("nearest", (0.5, 2.5), False, False),
    ("linear", 2, False, False),
    ("linear", (1.5, 0.6), False, False),
    ("linear", 2, True, False),
    ("linear", (2.5, 0.5), True, False),
    ("linear", (0.5, 0.4), False, True),
    ("linear", (2.0, 1.5), False, True),
    ("cubic", 2, False, False),
    ("cubic", (1.7, 0.6), False, False),
    ("cubic", (2, 3), True, False),
    ("cubic", (0.5, 0.3), False, True),
]


@pytest.mark.parametrize("mode, scale, align_corners, antialias", UPSAMPLE_CASES)
def test_upsample_2d(rng, mode, scale, align_corners, antialias):
    x, xn = f32(rng, 2, 5, 6, 3)
    layer = nn.Upsample(scale, mode=mode, align_corners=align_corners, antialias=antialias)
    scales = scale if isinstance(scale, tuple) else (scale, scale)
    close(layer(x), np_upsample(xn, scales, mode, align_corners, antialias), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_upsample_1d_and_3d(rng, mode):
    x, xn = f32(rng, 2, 7, 2)
    close(nn.Upsample(2.5, mode=mode)(x), np_upsample(xn, (2.5,), mode))
    x, xn = f32(rng, 1, 3, 4, 2, 2)
    close(nn.Upsample((2, 1.5, 2), mode=mode)(x), np_upsample(xn, (2, 1.5, 2), mode))


@pytest.mark.parametrize(
    "mode, align_corners", [("linear", False), ("linear", True), ("cubic", False)]
)
def test_upsample_grad(rng, mode, align_corners):
    module_grad_check(
        nn.Upsample(1.5, mode=mode, align_corners=align_corners),
        [f64(rng.standard_normal((1, 3, 4, 2)))],
        rng,
    )


def test_upsample_errors_and_repr():
    with pytest.raises(ValueError, match="nearest"):
        nn.Upsample(2.0, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="align_corners"):
        nn.Upsample(2.0, mode="linear", align_corners=True, antialias=True)
    with pytest.raises(ValueError, match="2D"):
        nn.Upsample(2.0)(mx.ones((2, 3)))
    with pytest.raises(ValueError, match="scale_factor"):
        nn.Upsample((2.0, 2.0))(mx.ones((1, 3, 2)))
    assert repr(nn.Upsample(2, mode="cubic", antialias=True)) == (
        "Upsample(scale_factor=2.0, mode='cubic', align_corners=False, antialias=True)"
    )


# ---------------------------------------------------------------- positional encodings


@pytest.mark.parametrize(
    "dims, traditional, base, scale",
    [(8, False, 10000, 1.0), (6, True, 500.0, 0.5), (4, False, 10.0, 2.0)],
)
@pytest.mark.parametrize("offset", [0, 5])
def test_rope(rng, dims, traditional, base, scale, offset):
    x, xn = f32(rng, 2, 3, 7, 8)
    rope = nn.RoPE(dims, traditional=traditional, base=base, scale=scale)
    close(
        rope(x, offset=offset),
        np_rope(xn, dims, traditional, base, scale, offset),
        rtol=1e-4,
        atol=1e-5,
    )
    assert rope(x.astype(mx.float16)).dtype == mx.float16


def test_rope_grad(rng):
    module_grad_check(nn.RoPE(4), [f64(rng.standard_normal((1, 2, 3, 6)))], rng)


def test_sinusoidal_positional_encoding(rng):
    pos = np.arange(10, dtype=np.float32)
    for dims, kwargs in [
        (8, {}),
        (6, dict(cos_first=True, full_turns=True, scale=1.0)),
        (2, dict(min_freq=0.01)),
    ]:
        enc = nn.SinusoidalPositionalEncoding(dims, **kwargs)
        half = dims // 2
        lo, hi = math.log(kwargs.get("min_freq", 1e-4)), math.log(1.0)
        frac = np.array([1.0]) if half == 1 else 1 - np.arange(half) / (half - 1)
        sigmas = np.exp(frac * (hi - lo) + lo) * (2 * math.pi if kwargs.get("full_turns") else 1)
        angles = pos[:, None] * sigmas
        parts = [np.sin(angles), np.cos(angles)]
        if kwargs.get("cos_first"):
            parts.reverse()
        scale = kwargs.get("scale", math.sqrt(2 / dims))
        close(enc(mx.array(pos)), np.concatenate(parts, -1) * scale, rtol=1e-5, atol=1e-5)


def test_alibi(rng):
    scores, sn = f32(rng, 2, 8, 3, 5)
    out = nn.ALiBi()(scores, offset=2)
    slopes = 2.0 ** (-np.arange(1, 9))  # 8 heads: 2^(-8h/8)
    dist = -np.abs(np.arange(2, 5)[:, None] - np.arange(5)[None])
    close(out, sn + slopes[None, :, None, None] * dist)
    # A non power of two number of heads interleaves the next power's slopes.
    slopes6 = np64(nn.ALiBi.create_alibi_slope(6)).reshape(-1)
    np.testing.assert_allclose(slopes6, [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3], rtol=1e-6)
    mask = np.full((3, 5), -1.0, dtype=np.float32)
    close(
        nn.ALiBi()(scores, offset=2, mask=mx.array(mask)),
        sn + slopes[None, :, None, None] * dist - 1,
    )
