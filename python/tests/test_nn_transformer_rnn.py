"""kiln.nn attention, transformer, recurrent (RNN, GRU, LSTM) and activation modules
against float64 NumPy references, with gradients against finite differences."""

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn
from nn_helpers import f64, module_grad_check, np64
from nn_layer_refs import close, f32, params_np, as_float64, np_layer_norm, np_sigmoid, np_attention

# ---------------------------------------------------------------- attention and transformers


@pytest.mark.parametrize("bias", [False, True])
def test_multi_head_attention(rng, bias):
    mha = nn.MultiHeadAttention(
        8, 2, query_input_dims=6, key_input_dims=5, value_dims=4, value_output_dims=3, bias=bias
    )
    p = params_np(mha)
    q, qn = f32(rng, 2, 3, 6)
    k, kn = f32(rng, 2, 4, 5)
    v, vn = f32(rng, 2, 4, 5)
    mask = rng.standard_normal((3, 4)).astype(np.float32)

    def proj(name, x):
        y = x @ p[f"{name}.weight"].T
        return y + p[f"{name}.bias"] if bias else y

    def heads(x):
        return x.reshape(x.shape[0], x.shape[1], 2, -1).transpose(0, 2, 1, 3)

    out = np_attention(
        heads(proj("query_proj", qn)),
        heads(proj("key_proj", kn)),
        heads(proj("value_proj", vn)),
        mask,
    )
    out = out.transpose(0, 2, 1, 3).reshape(2, 3, -1)
    close(mha(q, k, v, mx.array(mask)), proj("out_proj", out), rtol=1e-4, atol=1e-5)
    module_grad_check(
        as_float64(nn.MultiHeadAttention(4, 2, bias=True)),
        [f64(rng.standard_normal((1, 3, 4)))] * 3,
        rng,
    )


def test_additive_causal_mask():
    mask = np64(nn.MultiHeadAttention.create_additive_causal_mask(4))
    assert np.all(mask[np.tril_indices(4)] == 0)
    assert np.all(mask[np.triu_indices(4, 1)] == np.finfo(np.float32).min)
    assert nn.MultiHeadAttention.create_additive_causal_mask(3, mx.float16).dtype == mx.float16


def test_transformer_encoder_layer_matches_reference(rng):
    for norm_first in (True, False):
        layer = nn.TransformerEncoderLayer(8, 2, mlp_dims=16, norm_first=norm_first)
        p = params_np(layer)
        x, xn = f32(rng, 2, 5, 8)
        mask = np64(nn.MultiHeadAttention.create_additive_causal_mask(5))

        def attn(y):
            def proj(name, z):
                return z @ p[f"attention.{name}.weight"].T

            def heads(z):
                return z.reshape(2, 5, 2, 4).transpose(0, 2, 1, 3)

            o = np_attention(
                heads(proj("query_proj", y)),
                heads(proj("key_proj", y)),
                heads(proj("value_proj", y)),
                mask,
            )
            return proj("out_proj", o.transpose(0, 2, 1, 3).reshape(2, 5, 8))

        def ln(name, y):
            return np_layer_norm(y, 1e-5, p[f"{name}.weight"], p[f"{name}.bias"])

        def mlp(y):
            h = np.maximum(y @ p["linear1.weight"].T + p["linear1.bias"], 0)
            return h @ p["linear2.weight"].T + p["linear2.bias"]

        if norm_first:
            h = xn + attn(ln("ln1", xn))
            expected = h + mlp(ln("ln2", h))
        else:
            h = ln("ln1", xn + attn(xn))
            expected = ln("ln2", h + mlp(h))
        close(layer(x, mx.array(mask.astype(np.float32))), expected, rtol=1e-4, atol=1e-4)


def test_transformer_shapes_causality_and_grad(rng):
    model = nn.Transformer(
        dims=8, num_heads=2, num_encoder_layers=2, num_decoder_layers=2, mlp_dims=16
    )
    src, _ = f32(rng, 2, 6, 8)
    tgt, tgtn = f32(rng, 2, 4, 8)
    causal = nn.MultiHeadAttention.create_additive_causal_mask(4)
    out = model(src, tgt, None, causal, None)
    assert out.shape == (2, 4, 8)
    # Changing the last target position leaves earlier outputs unchanged.
    tgt2 = tgtn.copy()
    tgt2[:, -1] += rng.standard_normal(8)
    out2 = model(src, mx.array(tgt2.astype(np.float32)), None, causal, None)
    close(out2[:, :-1], np64(out[:, :-1]), rtol=1e-5, atol=1e-5)
    assert not np.allclose(np64(out2[:, -1]), np64(out[:, -1]))
    # A smooth activation for the finite differences: the default relu's kink at 0 lies within
    # the step (1e-6 times a normal direction) of one of its 16 inputs in ~6e-5 of draws.
    small = as_float64(
        nn.TransformerDecoderLayer(4, 2, mlp_dims=8, norm_first=False, activation=nn.gelu)
    )
    memory = f64(rng.standard_normal((1, 3, 4)))
    module_grad_check(
        small,
        [f64(rng.standard_normal((1, 2, 4))), memory, f64(np.zeros((2, 2))), f64(np.zeros((2, 3)))],
        rng,
    )


def test_transformer_custom_parts():
    class PassThrough(nn.Module):  # no parameters: an empty dict
        def __call__(self, x, *args):
            return x

    model = nn.Transformer(
        dims=4, num_heads=2, custom_encoder=PassThrough(), custom_decoder=PassThrough()
    )
    assert isinstance(model.encoder, PassThrough) and isinstance(model.decoder, PassThrough)


# ---------------------------------------------------------------- recurrent layers


def test_rnn(rng):
    rnn = nn.RNN(3, 4)
    p = params_np(rnn)
    x, xn = f32(rng, 2, 5, 3)
    h = np.zeros((2, 4))
    states = []
    for t in range(5):
        h = np.tanh(xn[:, t] @ p["Wxh"].T + p["bias"] + h @ p["Whh"].T)
        states.append(h)
    close(rnn(x), np.stack(states, 1))
    relu_rnn = nn.RNN(3, 4, bias=False, nonlinearity=nn.relu)
    assert relu_rnn.bias is None and "bias" not in relu_rnn.parameters()
    h0, h0n = f32(rng, 4)
    q = params_np(relu_rnn)
    h = np.maximum(xn[1, 0] @ q["Wxh"].T + h0n @ q["Whh"].T, 0)
    close(relu_rnn(x[1], h0)[0], h)  # unbatched input with an initial state
    module_grad_check(as_float64(nn.RNN(2, 3)), [f64(rng.standard_normal((2, 3, 2)))], rng)


def test_gru(rng):
    gru = nn.GRU(3, 4)
    p = params_np(gru)
    x, xn = f32(rng, 2, 5, 3)
    h0, h0n = f32(rng, 2, 4)
    h = h0n
    states = []
    for t in range(5):
        gx = xn[:, t] @ p["Wx"].T + p["b"]
        gh = h @ p["Wh"].T
        r = np_sigmoid(gx[:, :4] + gh[:, :4])
        z = np_sigmoid(gx[:, 4:8] + gh[:, 4:8])
        n = np.tanh(gx[:, 8:] + r * (gh[:, 8:] + p["bhn"]))
        h = (1 - z) * n + z * h
        states.append(h)
    close(gru(x, h0), np.stack(states, 1))
    # No initial state is a zero state.
    close(gru(x), np64(gru(x, mx.zeros((2, 4)))))
    assert nn.GRU(3, 4, bias=False)(x).shape == (2, 5, 4)
    module_grad_check(as_float64(nn.GRU(2, 3)), [f64(rng.standard_normal((2, 3, 2)))], rng)


def test_lstm(rng):
    lstm = nn.LSTM(3, 4)
    p = params_np(lstm)
    x, xn = f32(rng, 2, 5, 3)
    h, c = np.zeros((2, 4)), np.zeros((2, 4))
    hs, cs = [], []
    for t in range(5):
        g = xn[:, t] @ p["Wx"].T + p["bias"] + h @ p["Wh"].T
        i, f, gg, o = np.split(g, 4, axis=-1)
        c = np_sigmoid(f) * c + np_sigmoid(i) * np.tanh(gg)
        h = np_sigmoid(o) * np.tanh(c)
        hs.append(h)
        cs.append(c)
    hidden, cell = lstm(x)
    close(hidden, np.stack(hs, 1))
    close(cell, np.stack(cs, 1))
    lstm64 = as_float64(nn.LSTM(2, 3))
    weights = f64(rng.standard_normal((2, 3, 3)))

    class Both(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lstm64

        def __call__(self, x):
            hidden, cell = self.lstm(x)
            return hidden + 2 * cell

    module_grad_check(Both(), [f64(rng.standard_normal((2, 3, 2)))], rng)


# ---------------------------------------------------------------- activations as modules


def test_prelu_module(rng):
    layer = nn.PReLU(3, init=0.1)
    assert np.allclose(np64(layer.weight), 0.1)
    x, xn = f32(rng, 4, 3)
    close(layer(x), np.where(xn > 0, xn, 0.1 * xn))
    # Inputs at least 0.1 away from the kink at 0, which a normal input lies within the finite
    # differences' step (1e-6 times a normal direction) of in ~1.4e-5 of draws.
    xg = rng.standard_normal((4, 3))
    module_grad_check(as_float64(nn.PReLU(3)), [f64(xg + 0.1 * np.sign(xg))], rng)
