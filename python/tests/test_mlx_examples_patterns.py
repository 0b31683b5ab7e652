"""Behaviours that MLX's example programs (ml-explore/mlx-examples) rely on, checked on kiln.

Each test names the pattern it covers; the programs themselves are not part of kiln. Values
said to come from MLX were returned by MLX 0.32.4's CPU build for the same expressions.
"""

import math

import numpy as np
import pytest

import kiln.core as mx

# ------------------------------------------------------------ categorical sampling
# Token sampling at batch size 1 (T5 / Whisper / speculative decoding generate loops call
# mx.random.categorical(logits[:, -1, :]) on logits of shape (1, vocab)).


def _inverse_cdf_reference(logits, axis, out_shape, key):
    """The inverse-CDF draw MLX makes for a single distribution, from kiln's own ops:
    weights exp(l - max), one float32 uniform per sample, right-side search of u * sum(w)."""
    x = mx.moveaxis(logits, axis, -1).reshape(-1)
    w = mx.exp(x - x.max())
    cdf = mx.cumsum(w)
    u = mx.random.uniform(shape=out_shape, key=key)
    idx = mx.searchsorted(cdf, u * w.sum(), side="right")
    return mx.minimum(idx, x.size - 1).astype(mx.uint32)


@pytest.mark.parametrize(
    "shape,axis,kwargs",
    [
        ((1, 37), -1, {}),  # a batch of one row: the generate loops' case
        ((37, 1), 0, {}),  # the same distribution along axis 0
        ((1, 1, 37), -1, {}),
        ((37,), 0, {"shape": (5,)}),
        ((1, 37), 1, {"shape": (2, 3)}),
        ((37,), 0, {"num_samples": 4}),
    ],
)
def test_categorical_single_distribution_inverts_the_cdf(rng, shape, axis, kwargs):
    logits = mx.array((rng.standard_normal(shape) * 2).astype(np.float32))
    for seed in range(5):
        key = mx.random.key(int(rng.integers(0, 2**31)) + seed)
        got = mx.random.categorical(logits, axis=axis, key=key, **kwargs)
        if "shape" in kwargs:
            out_shape = kwargs["shape"]
        else:
            out_shape = tuple(s for i, s in enumerate(shape) if i != axis % len(shape))
            if "num_samples" in kwargs:
                out_shape = out_shape + (kwargs["num_samples"],)
        assert got.shape == out_shape and got.dtype == mx.uint32
        want = _inverse_cdf_reference(logits, axis, out_shape, key)
        np.testing.assert_array_equal(np.array(got), np.array(want))


def test_categorical_batched_and_scalar_keep_gumbel_max(rng):
    # Several distributions, or a single one drawn to a scalar, stay on Gumbel-max.
    for shape in [(3, 11), (11,)]:
        logits = mx.array(rng.standard_normal(shape).astype(np.float32))
        key = mx.random.key(int(rng.integers(0, 2**31)))
        got = mx.random.categorical(logits, key=key)
        want = mx.argmax(logits + mx.random.gumbel(shape, key=key), axis=-1)
        np.testing.assert_array_equal(np.array(got), np.array(want))


def test_categorical_batch_one_matches_mlx_values():
    logits = mx.array([[0.5, -1.0, 2.0, 0.0, 1.5]])
    got = [mx.random.categorical(logits, key=mx.random.key(s)).item() for s in range(8)]
    assert got == [2, 1, 2, 4, 2, 3, 2, 4]  # MLX 0.32.4
    got = mx.random.categorical(logits, shape=(6,), key=mx.random.key(11)).tolist()
    assert got == [4, 4, 2, 2, 2, 2]  # MLX 0.32.4
    mx.random.seed(5)
    got = [mx.random.categorical(logits).item() for _ in range(6)]
    assert got == [4, 4, 3, 2, 2, 4]  # MLX 0.32.4, from the global key sequence


def test_categorical_single_distribution_infinite_logits():
    # +inf entries share the draws; a row of -inf draws every category (not always 0).
    pos = mx.array([[0.0, math.inf, 1.0, math.inf, 2.0]])
    draws = {mx.random.categorical(pos, key=mx.random.key(s)).item() for s in range(40)}
    assert draws == {1, 3}
    neg = mx.array([[-math.inf] * 5])
    draws = {mx.random.categorical(neg, key=mx.random.key(s)).item() for s in range(60)}
    assert draws == {0, 1, 2, 3, 4}


def test_categorical_single_distribution_frequencies(rng):
    # The inverse-CDF path samples the softmax distribution (chi-square-style bound).
    logits = mx.array(rng.standard_normal((1, 6)).astype(np.float32))
    p = np.exp(np.array(logits[0], dtype=np.float64))
    p /= p.sum()
    n = 20000
    draws = mx.random.categorical(
        logits, shape=(n,), key=mx.random.key(int(rng.integers(0, 2**31)))
    )
    counts = np.bincount(np.array(draws), minlength=6)
    sigma = np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(counts - n * p) < 5 * sigma + 1)


# ------------------------------------------------------------ modules as the examples build them
import kiln.nn as nn  # noqa: E402
import kiln.optimizers as optim  # noqa: E402
from kiln.utils import tree_flatten  # noqa: E402


def _param_names(module):
    return sorted(k for k, _ in tree_flatten(module.parameters()))


def test_module_containers_filled_after_assignment(tmp_path):
    # Flux's autoencoder assigns self.mid = {} / self.up = [] and fills them afterwards.
    class Blocks(nn.Module):
        def __init__(self):
            super().__init__()
            self.mid = {}
            self.mid["block_1"] = nn.Linear(3, 4)
            self.up = []
            self.up.append({"block": [nn.Linear(4, 4)]})
            self.up.insert(0, {"block": [nn.Linear(4, 2)], "attn": []})

    m = Blocks()
    assert _param_names(m) == [
        "mid.block_1.bias",
        "mid.block_1.weight",
        "up.0.block.0.bias",
        "up.0.block.0.weight",
        "up.1.block.0.bias",
        "up.1.block.0.weight",
    ]
    path = str(tmp_path / "w.safetensors")
    m.save_weights(path)
    fresh = Blocks()
    fresh.load_weights(path)
    for (k, a), (_, b) in zip(tree_flatten(m.parameters()), tree_flatten(fresh.parameters())):
        np.testing.assert_array_equal(np.array(a), np.array(b), err_msg=k)


def test_module_whose_init_skips_base_init():
    # CLIP's Encoder/CLIPModel, T5 and MusicGen never call super().__init__().
    class Encoder(nn.Module):
        def __init__(self):
            self.layers = [nn.Linear(2, 2) for _ in range(2)]

    class Model(nn.Module):
        def __init__(self):
            self.encoder = Encoder()
            self.scale = mx.array(0.5)

        def __call__(self, x):
            for l in self.encoder.layers:
                x = l(x)
            return x * self.scale

    m = Model()
    assert _param_names(m) == [
        "encoder.layers.0.bias",
        "encoder.layers.0.weight",
        "encoder.layers.1.bias",
        "encoder.layers.1.weight",
        "scale",
    ]
    m.load_weights([("scale", mx.array(2.0))], strict=False)
    x = mx.ones((1, 2))
    y = x
    for l in m.encoder.layers:
        y = l(y)
    np.testing.assert_allclose(np.array(m(x)), np.array(y) * 2.0, rtol=1e-6)


def test_module_truthiness_and_private_children(tmp_path):
    # ESM tests `if self.rot_emb:` (a module holding an array); MusicGen keeps its codec in
    # `_audio_decoder`, which parameters() and save_weights leave out.
    assert bool(nn.Linear(2, 2)) and not bool(nn.ReLU())

    class Gen(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(2, 2)
            self._audio_decoder = nn.Linear(2, 2)

    g = Gen()
    assert _param_names(g) == ["head.bias", "head.weight"]
    path = str(tmp_path / "g.safetensors")
    g.save_weights(path)
    assert sorted(mx.load(path).keys()) == ["head.bias", "head.weight"]
    assert "_audio_decoder" in dict(g.named_modules())


def test_compiled_training_step_with_random_state():
    # cvae / dreambooth: @partial(mx.compile, inputs=state, outputs=state) around a step whose
    # loss draws noise; each call must draw fresh noise, as the uncompiled step does.
    def run(compiled):
        mx.random.seed(4)
        model = nn.Linear(3, 2)
        opt = optim.Adam(learning_rate=1e-2)
        state = [model.state, opt.state, mx.random.state]

        def loss_fn(m, x):
            noise = mx.random.normal(x.shape)
            return (m(x + noise) ** 2).mean()

        def step(x):
            loss, grads = nn.value_and_grad(model, loss_fn)(model, x)
            opt.update(model, grads)
            return loss

        if compiled:
            step = mx.compile(step, inputs=state, outputs=state)
        x = mx.ones((4, 3))
        losses = []
        for _ in range(4):
            loss = step(x)
            mx.eval(state)
            losses.append(loss.item())
        return losses, np.array(model.weight)

    plain_losses, plain_w = run(False)
    comp_losses, comp_w = run(True)
    assert len(set(plain_losses)) == 4  # the noise changes between steps
    np.testing.assert_allclose(comp_losses, plain_losses, rtol=1e-5)
    np.testing.assert_allclose(comp_w, plain_w, rtol=1e-5, atol=1e-6)
