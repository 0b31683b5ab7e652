"""kiln.nn convolution, transposed convolution and quantized layers against float64 NumPy
references, with gradients against finite differences."""

import math

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn
from kiln.utils import tree_flatten
from nn_helpers import F32_SLACK, f64, module_grad_check, np64
from nn_layer_refs import close, f32, params_np, as_float64

# ---------------------------------------------------------------- convolutions (need mx.conv*)


def np_conv(x, w, stride, padding, dilation, groups):
    """Channels-last convolution: x (N, *spatial, Cin), w (Cout, *kernel, Cin/groups)."""
    d = x.ndim - 2
    x = np.pad(x, [(0, 0)] + [(p, p) for p in padding] + [(0, 0)])
    kernel = w.shape[1:-1]
    out_spatial = [
        (n - dl * (k - 1) - 1) // s + 1
        for n, k, s, dl in zip(x.shape[1:-1], kernel, stride, dilation)
    ]
    cin_g, cout_g = w.shape[-1], w.shape[0] // groups
    out = np.zeros([x.shape[0], *out_spatial, w.shape[0]])
    for idx in np.ndindex(*out_spatial):
        for kidx in np.ndindex(*kernel):
            pos = tuple(i * s + k * dl for i, s, k, dl in zip(idx, stride, kidx, dilation))
            patch = x[(slice(None), *pos)]
            for g in range(groups):
                wg = w[(slice(g * cout_g, (g + 1) * cout_g), *kidx)]
                out[(slice(None), *idx, slice(g * cout_g, (g + 1) * cout_g))] += (
                    patch[:, g * cin_g : (g + 1) * cin_g] @ wg.T
                )
    return out


def test_conv1d(rng):
    layer = nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2)
    x, xn = f32(rng, 2, 9, 4)
    p = params_np(layer)
    close(layer(x), np_conv(xn, p["weight"], [2], [1], [1], 2) + p["bias"], rtol=1e-4, atol=1e-4)
    module_grad_check(as_float64(nn.Conv1d(2, 3, 2)), [f64(rng.standard_normal((1, 5, 2)))], rng)


def test_conv2d(rng):
    layer = nn.Conv2d(3, 4, (3, 2), stride=(1, 2), padding=(1, 0), dilation=2)
    x, xn = f32(rng, 2, 7, 6, 3)
    p = params_np(layer)
    close(
        layer(x),
        np_conv(xn, p["weight"], [1, 2], [1, 0], [2, 2], 1) + p["bias"],
        rtol=1e-4,
        atol=1e-4,
    )
    module_grad_check(
        as_float64(nn.Conv2d(2, 2, 2, bias=False)), [f64(rng.standard_normal((1, 4, 4, 2)))], rng
    )


def test_conv3d(rng):
    layer = nn.Conv3d(2, 3, 2, stride=1, padding=1)
    x, xn = f32(rng, 1, 3, 4, 3, 2)
    p = params_np(layer)
    close(
        layer(x),
        np_conv(xn, p["weight"], [1] * 3, [1] * 3, [1] * 3, 1) + p["bias"],
        rtol=1e-4,
        atol=1e-4,
    )


def np_conv_transpose(x, w, stride, padding, dilation, output_padding):
    """Scatter form: each input position adds w * x at stride-spaced output positions."""
    kernel = w.shape[1:-1]
    full = [
        (n - 1) * s + dl * (k - 1) + 1 + op
        for n, s, k, dl, op in zip(x.shape[1:-1], stride, kernel, dilation, output_padding)
    ]
    out = np.zeros([x.shape[0], *full, w.shape[0]])
    for idx in np.ndindex(*x.shape[1:-1]):
        for kidx in np.ndindex(*kernel):
            pos = tuple(i * s + k * dl for i, s, k, dl in zip(idx, stride, kidx, dilation))
            out[(slice(None), *pos)] += x[(slice(None), *idx)] @ w[(slice(None), *kidx)].T
    crop = tuple(slice(p, f - p) for p, f in zip(padding, full))
    return out[(slice(None), *crop)]


def test_conv_transpose1d(rng):
    layer = nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1)
    x, xn = f32(rng, 2, 5, 3)
    p = params_np(layer)
    close(
        layer(x),
        np_conv_transpose(xn, p["weight"], [2], [1], [1], [1]) + p["bias"],
        rtol=1e-4,
        atol=1e-4,
    )


def test_conv_transpose2d(rng):
    layer = nn.ConvTranspose2d(2, 3, 2, stride=2)
    x, xn = f32(rng, 1, 3, 4, 2)
    p = params_np(layer)
    close(
        layer(x),
        np_conv_transpose(xn, p["weight"], [2, 2], [0, 0], [1, 1], [0, 0]) + p["bias"],
        rtol=1e-4,
        atol=1e-4,
    )


def test_conv_transpose3d(rng):
    layer = nn.ConvTranspose3d(2, 2, 2)
    x, xn = f32(rng, 1, 2, 3, 2, 2)
    p = params_np(layer)
    close(
        layer(x),
        np_conv_transpose(xn, p["weight"], [1] * 3, [0] * 3, [1] * 3, [0] * 3) + p["bias"],
        rtol=1e-4,
        atol=1e-4,
    )


def test_conv_layers_construct_without_core_conv():
    conv = nn.Conv2d(4, 8, 3, groups=2)
    assert conv.weight.shape == (8, 3, 3, 2) and conv.bias.shape == (8,)
    bound = 1 / math.sqrt(2 * 9)
    assert np.abs(np64(conv.weight)).max() <= bound * F32_SLACK
    assert nn.ConvTranspose1d(3, 5, 4).weight.shape == (5, 4, 3)
    assert nn.Conv3d(2, 4, (1, 2, 3), bias=False).weight.shape == (4, 1, 2, 3, 2)
    assert repr(nn.Conv1d(4, 6, 3, groups=2)) == (
        "Conv1d(4, 6, kernel_size=3, stride=1, padding=0, dilation=1, groups=2, bias=True)"
    )


# ---------------------------------------------------------------- quantized layers (need mx.quantize)


def test_quantize_linear_and_embedding(rng):
    model = nn.Sequential(nn.Embedding(16, 64), nn.Linear(64, 32))
    x = mx.array(rng.integers(0, 16, size=(2, 3)))
    reference = np64(model(x))
    nn.quantize(model, group_size=32, bits=8)
    assert isinstance(model.layers[0], nn.QuantizedEmbedding)
    assert isinstance(model.layers[1], nn.QuantizedLinear)
    close(model(x), reference, rtol=5e-2, atol=5e-2)
    assert [k for k, _ in tree_flatten(model.trainable_parameters())] == ["layers.1.bias"]


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
def test_qqlinear_from_linear_and_bias(rng, mode):
    # As MLX 0.32.4: a Linear with a bias cannot become a QQLinear (NotImplementedError),
    # whichever way the conversion is asked for; a bias-free one keeps its weight.
    with pytest.raises(NotImplementedError, match="bias"):
        nn.QQLinear.from_linear(nn.Linear(64, 32), mode=mode)
    with pytest.raises(NotImplementedError, match="bias"):
        nn.Linear(64, 32).to_quantized(mode=mode, quantize_input=True)
    with pytest.raises(NotImplementedError, match="bias"):
        nn.quantize(nn.Sequential(nn.Linear(64, 32)), mode=mode, quantize_input=True)
    linear = nn.Linear(64, 32, bias=False)
    q = linear.to_quantized(mode=mode, quantize_input=True)
    assert isinstance(q, nn.QQLinear) and "bias" not in q
    assert [k for k, _ in tree_flatten(q.parameters())] == ["weight"]
    assert np.array_equal(np64(q.weight), np64(linear.weight))
    x = mx.array(rng.standard_normal((3, 64)).astype(np.float32))
    want = mx.qqmm(x, linear.weight, mode=mode)
    close(q(x), np64(want), rtol=1e-5, atol=1e-5)
    q.eval()  # weights quantized once, as qqmm quantizes them on the fly
    assert q.weight.dtype == mx.uint32
    close(q(x), np64(want), rtol=1e-5, atol=1e-5)


def test_quantize_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="Invalid quantization mode 'int3'"):
        nn.QuantizedLinear(64, 32, mode="int3")
