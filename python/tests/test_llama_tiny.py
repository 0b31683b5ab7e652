"""The Llama-style example model (examples/python/llama_tiny.py, written as mlx-lm writes
models): training lowers the loss, KV-cache decoding matches full recomputation, and the
parameter names are mlx-lm's."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln.core as mx
from kiln.utils import tree_flatten

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "python" / "llama_tiny.py"


@pytest.fixture(scope="module")
def llama():
    spec = importlib.util.spec_from_file_location("llama_tiny", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def small_args(llama, **overrides):
    settings = dict(
        vocab_size=32,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
    )
    settings.update(overrides)
    return llama.ModelArgs(**settings)


def test_parameter_names_follow_mlx_lm(llama):
    model = llama.Model(small_args(llama))
    names = [k for k, _ in tree_flatten(model.parameters())]
    assert names[0] == "model.embed_tokens.weight"
    assert "model.layers.1.self_attn.k_proj.weight" in names
    assert "model.layers.0.mlp.gate_proj.weight" in names
    assert "model.layers.0.post_attention_layernorm.weight" in names
    assert names[-1] == "lm_head.weight"
    shapes = dict((k, v.shape) for k, v in tree_flatten(model.parameters()))
    assert shapes["model.layers.0.self_attn.k_proj.weight"] == (16, 32)  # 2 kv heads of 8
    tied = llama.Model(small_args(llama, tie_word_embeddings=True))
    assert "lm_head" not in tied and tied(mx.array([[1, 2, 3]])).shape == (1, 3, 32)


def test_training_lowers_the_loss(llama, rng):
    mx.random.seed(int(rng.integers(2**31)))
    model = llama.Model(small_args(llama))
    tokens = mx.array(rng.integers(0, 32, size=(4, 12)))
    losses = llama.train(model, lambda step: tokens, learning_rate=2e-2, steps=12)
    assert all(np.isfinite(losses))
    assert np.log(32) * 0.8 < losses[0] < np.log(32) * 1.25  # near uniform at the start
    assert min(losses[-3:]) < 0.7 * losses[0], losses


def test_kv_cache_decoding_matches_full_recomputation(llama, rng):
    mx.random.seed(int(rng.integers(2**31)))
    model = llama.Model(small_args(llama))
    prompt = [int(t) for t in rng.integers(0, 32, size=5)]
    cached = llama.generate(model, prompt, max_tokens=6)
    # Without a cache: run the whole sequence each step and take the last position.
    sequence = list(prompt)
    full = []
    for _ in range(6):
        logits = model(mx.array([sequence]))[0, -1]
        full.append(int(mx.argmax(logits).item()))
        sequence.append(full[-1])
    assert cached == full
    # The cached logits themselves agree with the full ones.
    cache = model.make_cache()
    model(mx.array([prompt]), cache=cache)
    step_logits = model(mx.array([[full[0]]]), cache=cache)[0, -1]
    reference = model(mx.array([prompt + [full[0]]]))[0, -1]
    np.testing.assert_allclose(np.array(step_logits), np.array(reference), rtol=1e-4, atol=1e-4)
    assert cache[0].offset == len(prompt) + 1


def test_sampling_with_temperature(llama):
    mx.random.seed(0)
    model = llama.Model(small_args(llama))
    tokens = llama.generate(model, [1, 2, 3], max_tokens=8, temperature=1.0)
    assert len(tokens) == 8 and all(0 <= t < 32 for t in tokens)


def test_example_script_runs():
    # The script imports the same kiln package as this test.
    package_parent = str(Path(os.path.abspath(mx.__file__)).parents[2])
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            p for p in [package_parent, os.environ.get("PYTHONPATH", "")] if p
        ),
    )
    result = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--steps",
            "2",
            "--batch",
            "2",
            "--seq",
            "12",
            "--tokens",
            "3",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "generated" in result.stdout and "parameters" in result.stdout
