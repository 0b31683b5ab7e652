"""The LLM example (examples/llm, issue 23) on a tiny config: data preparation and the
pure-Python tokenizer, the schedule, training lowering the loss, checkpoint round trips,
KV-cache generation against full recomputation, the custom kernels against the built-ins
(values and gradients, float32 and bfloat16), quantized generation, data-parallel
training through kiln.launch, the PyTorch reference, and the one-line bad-input messages.

Needs no network: the corpus is the excerpt shipped with the example (sample.txt) and the
tokenizer is trained on it with Hugging Face `tokenizers` where installed, else the data
is byte-level."""

import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn
from kiln.utils import tree_flatten

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

from llm import bench as B  # noqa: E402
from llm import cli  # noqa: E402
from llm import config as C  # noqa: E402
from llm import data as D  # noqa: E402
from llm import generate as G  # noqa: E402
from llm import kernels as K  # noqa: E402
from llm import train as T  # noqa: E402
from llm.errors import LLMError  # noqa: E402
from llm.model import KVCache, Model, loss_fn  # noqa: E402

HAS_TOKENIZERS = importlib.util.find_spec("tokenizers") is not None
MAIN = ROOT / "examples" / "llm" / "main.py"


@pytest.fixture(autouse=True)
def on_the_cpu():
    with mx.stream(mx.cpu):
        yield


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("llmdata") / "sample"
    D.prepare(d, 384, "sample", tokenizer="bpe" if HAS_TOKENIZERS else "byte", log=lambda *_: None)
    return d


@pytest.fixture(scope="module")
def data(data_dir):
    return D.TokenData(data_dir)


def tiny(data, **train):
    cfg = C.model_config("tiny", data.vocab_size)
    tc = C.preset("tiny").train
    for k, v in train.items():
        setattr(tc, k, v)
    return cfg, tc


def run_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"), env.get("PYTHONPATH")]))
    return env


# ---------------------------------------------------------------- data


def test_prepared_files_and_memmap(data_dir, data):
    meta = json.loads((data_dir / "meta.json").read_text())
    assert meta["train_tokens"] == data.splits["train"].size > 1000
    assert meta["val_tokens"] == data.splits["val"].size > 100
    assert isinstance(data.splits["train"], np.memmap) and data.splits["train"].dtype == np.uint16
    assert int(data.splits["train"].max()) < data.vocab_size
    # The tokens decode back to the text they came from.
    tok = data.tokenizer()
    text = tok.decode(data.splits["train"][:200])
    assert text and text in D.SAMPLE_TEXT.read_text()
    # Prepared once: a second call keeps the files.
    stamp = (data_dir / "train.bin").stat().st_mtime_ns
    D.prepare(data_dir, 384, "sample", log=lambda *_: None)
    assert (data_dir / "train.bin").stat().st_mtime_ns == stamp


def test_split_by_chapter():
    chapters = [f"Book {i}\n\n1 verse {i}.\n" for i in range(1, 61)]
    assert D.split_chapters("".join(chapters)) == chapters
    train, val = D.train_val_split(chapters)
    assert len(val) == 3 and len(train) == 57 and not set(train) & set(val)


@pytest.mark.skipif(not HAS_TOKENIZERS, reason="Hugging Face tokenizers is not installed")
def test_pure_python_bpe_equals_tokenizers(data_dir):
    import tokenizers

    hf = tokenizers.Tokenizer.from_file(str(data_dir / "tokenizer.json"))
    py = D.PyBPE(json.loads((data_dir / "tokenizer.json").read_text()))
    text = D.SAMPLE_TEXT.read_text() + "\nWhat's 42? naïve café -- ok_then  \n\n end"
    assert py.encode(text) == hf.encode(text).ids
    ids = hf.encode(text).ids
    assert py.decode(ids) == hf.decode(ids) == text


def test_batches_are_a_function_of_seed_and_step(data):
    a = D.train_batch(data, 8, 16, seed=3, step=5)
    b = D.train_batch(data, 8, 16, seed=3, step=5)
    c = D.train_batch(data, 8, 16, seed=3, step=6)
    assert np.array_equal(a[0], b[0]) and not np.array_equal(a[0], c[0])
    assert np.array_equal(a[0][:, 1:], a[1][:, :-1])  # targets are the inputs shifted by one
    # Rank r of 2 gets rows r*4 .. r*4+3 of the global batch.
    halves = [D.train_batch(data, 8, 16, 3, 5, rank=r, world=2)[0] for r in range(2)]
    assert np.array_equal(np.concatenate(halves), a[0])
    v1 = D.val_batches(data, 4, 16, 3)
    v2 = D.val_batches(data, 4, 16, 3)
    assert len(v1) == 3 and all(np.array_equal(x[0], y[0]) for x, y in zip(v1, v2))


def test_schedule_matches_the_plain_python_one():
    tc = C.TrainConfig(steps=50, warmup_steps=5, learning_rate=1e-3, min_lr_ratio=0.1)
    sched = T.make_schedule(tc)
    for s in (0, 1, 4, 5, 6, 27, 49, 60):
        assert abs(sched(mx.array(s)).item() - C.lr_at(s, tc)) < 1e-9 + 1e-6 * C.lr_at(s, tc), s
    assert C.lr_at(0, tc) == pytest.approx(2e-4) and C.lr_at(4, tc) == pytest.approx(1e-3)
    assert C.lr_at(49, tc) == pytest.approx(1e-4, rel=2e-2) and C.lr_at(50, tc) == pytest.approx(
        1e-4
    )


def test_presets_have_the_stated_sizes():
    for name, lo, hi in (("small", 8e6, 12e6), ("gpu100m", 85e6, 115e6)):
        p = C.preset(name)
        p.model.vocab_size = p.vocab_size
        assert lo < C.count_parameters(p.model) < hi, name
    cfg = C.model_config("tiny", 384)
    model = Model(cfg)
    assert sum(v.size for _, v in tree_flatten(model.parameters())) == C.count_parameters(cfg)


# ---------------------------------------------------------------- model and kernels


def test_custom_kernels_match_the_builtins_with_gradients():
    for (name, dtype), (custom, builtin) in B.check_kernels(shape=(3, 7, 80)).items():
        # float32: rounding only; bfloat16: no worse than the built-ins (which round
        # their intermediates to bfloat16) by more than one bfloat16 step.
        bound = 2e-6 if "float32" in dtype else builtin + 8e-3
        assert custom < bound, (name, dtype, custom, builtin)


def test_add_rms_norm_block_layout_on_the_cpu():
    # The GPU layout (a block per row, warp shuffles) runs on the CPU too.
    old = K.ADD_RMS_LAYOUT
    try:
        K.ADD_RMS_LAYOUT = "block"
        res = B.check_kernels(shape=(5, 64))
    finally:
        K.ADD_RMS_LAYOUT = old
    assert res[("add_rms_norm", str(mx.float32))][0] < 2e-6


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_model_with_custom_kernels_equals_builtin(data, dtype):
    cfg, tc = tiny(data)
    model = T.build_model(cfg, "builtin", dtype, seed=1)
    x, y = (mx.array(a) for a in D.train_batch(data, 4, 16, 0, 0))
    lg = nn.value_and_grad(model, loss_fn)
    loss_b, grads_b = lg(model, x, y)
    model.set_kernels("custom")
    loss_c, grads_c = lg(model, x, y)
    tol = 1e-5 if dtype == "float32" else 3e-2
    assert abs(loss_b.item() - loss_c.item()) < tol * max(1, abs(loss_b.item()))
    for (k, gb), (_, gc) in zip(tree_flatten(grads_b), tree_flatten(grads_c)):
        gb, gc = np.array(gb.astype(mx.float32)), np.array(gc.astype(mx.float32))
        scale = max(np.abs(gb).max(), 1e-6)
        assert np.abs(gb - gc).max() / scale < (1e-4 if dtype == "float32" else 0.1), k


def test_training_lowers_the_loss_and_writes_its_files(data, tmp_path):
    cfg, tc = tiny(data, steps=24, eval_every=12, checkpoint_every=12, learning_rate=3e-3)
    res = T.train(cfg, tc, data, tmp_path, progress=False, log=lambda *_: None)
    first, last = np.mean(res.losses[:3]), np.mean(res.losses[-3:])
    assert len(res.losses) == 24 and last < first - 0.5, (first, last)
    assert set(res.val_losses) == {12, 24} and res.val_losses[24] < res.val_losses[12]
    rows = T.read_log(tmp_path / "log.csv")
    assert [int(r["step"]) for r in rows] == list(range(1, 25))
    assert float(rows[-1]["loss"]) == pytest.approx(res.losses[-1])
    assert (tmp_path / "loss.png").exists() or importlib.util.find_spec("matplotlib") is None
    assert (tmp_path / "init.safetensors").exists() and (tmp_path / "summary.json").exists()
    assert T.latest_checkpoint(tmp_path).name == "step_000024"
    opt = mx.load(str(T.checkpoint_dir(tmp_path, 12) / "optimizer.safetensors"))
    assert opt["step"].item() == 12 and any(k.endswith(".m") for k in opt)


@pytest.mark.parametrize("compile", [True, False])
def test_resume_gives_the_same_next_losses(data, tmp_path, compile):
    cfg, tc = tiny(data, steps=6, eval_every=100, checkpoint_every=3)
    full = T.train(
        cfg,
        tc,
        data,
        tmp_path / "a",
        compile=compile,
        progress=False,
        plot=False,
        log=lambda *_: None,
    )
    # Resume the same run from its step-3 checkpoint: steps 4..6 again.
    shutil.rmtree(T.checkpoint_dir(tmp_path / "a", 6))
    again = T.train(
        cfg,
        tc,
        data,
        tmp_path / "a",
        compile=compile,
        resume=True,
        progress=False,
        plot=False,
        log=lambda *_: None,
    )
    assert again.losses == full.losses[3:]
    rows = T.read_log(tmp_path / "a" / "log.csv")
    assert [int(r["step"]) for r in rows] == list(range(1, 7))


def test_compiled_and_uncompiled_steps_agree(data, tmp_path):
    cfg, tc = tiny(data, steps=4, eval_every=100, checkpoint_every=100)
    a = T.train(
        cfg, tc, data, tmp_path / "c", compile=True, progress=False, plot=False, log=lambda *_: None
    )
    b = T.train(
        cfg,
        tc,
        data,
        tmp_path / "u",
        compile=False,
        progress=False,
        plot=False,
        log=lambda *_: None,
    )
    np.testing.assert_allclose(a.losses, b.losses, rtol=1e-5)


def test_bfloat16_training_runs(data, tmp_path):
    cfg, tc = tiny(data, steps=8, eval_every=8, checkpoint_every=100)
    res = T.train(
        cfg,
        tc,
        data,
        tmp_path,
        dtype="bfloat16",
        kernels="custom",
        progress=False,
        plot=False,
        log=lambda *_: None,
    )
    assert np.isfinite(res.losses).all() and res.losses[-1] < res.losses[0]
    assert res.model.model.layers[0].mlp.up_proj.weight.dtype == mx.bfloat16


# ---------------------------------------------------------------- generation


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    cfg, tc = tiny(data, steps=30, eval_every=30, checkpoint_every=30)
    T.train(cfg, tc, data, out, progress=False, plot=False, log=lambda *_: None)
    return out


def test_kv_cache_generation_equals_recomputation(trained, data, monkeypatch):
    monkeypatch.setattr(KVCache, "step", 8)  # the cache grows several times
    model = G.load_model(T.latest_checkpoint(trained))
    prompt = data.tokenizer().encode("And God said")
    with_cache, _ = G.generate(model, prompt, 20, use_cache=True)
    without, _ = G.generate(model, prompt, 20, use_cache=False)
    assert with_cache == without and len(with_cache) == 20
    # The cached logits themselves equal the full forward's.
    cache = model.make_cache()
    seq = mx.array([prompt + with_cache[:5]])
    full = model(seq)
    part = mx.concatenate(
        [
            model(seq[:, :4], cache=cache),
            model(seq[:, 4:7], cache=cache),
            model(seq[:, 7:], cache=cache),
        ],
        axis=1,
    )
    np.testing.assert_allclose(np.array(part), np.array(full), atol=2e-4)


def test_sampling_temperature_and_top_p():
    logits = mx.array([[0.0, 3.0, 2.9, -1.0, 1.0]])
    assert G.sample(logits, 0.0).item() == 1
    # A tiny nucleus keeps only the most likely token.
    draws = {G.sample(logits, 1.0, top_p=1e-3, key=mx.random.key(i)).item() for i in range(20)}
    assert draws == {1}
    # top_p 0.8 keeps tokens 1 and 2 (about 0.46 + 0.42 of the mass) and nothing else.
    draws = [G.sample(logits, 1.0, top_p=0.8, key=mx.random.key(i)).item() for i in range(200)]
    assert set(draws) == {1, 2}
    draws = {G.sample(logits, 5.0, key=mx.random.key(i)).item() for i in range(200)}
    assert draws == {0, 1, 2, 3, 4}  # a high temperature reaches every token


def test_quantized_generation_and_perplexity(trained, data):
    ckpt = T.latest_checkpoint(trained)
    batches = D.val_batches(data, 4, 32, 2)
    model = G.load_model(ckpt)
    full = G.perplexity(model, batches)
    G.quantize(model, bits=4, group_size=32)
    assert type(model.model.layers[0].mlp.up_proj).__name__ == "QuantizedLinear"
    q4 = G.perplexity(model, batches)
    assert np.isfinite(q4) and abs(q4 / full - 1) < 0.25, (full, q4)
    tokens, stats = G.generate(
        model, data.tokenizer().encode("In the"), 12, temperature=0.8, top_p=0.9
    )
    assert len(tokens) == 12 and all(0 <= t < data.vocab_size for t in tokens)
    assert stats["generation_tokens_per_s"] > 0


# ---------------------------------------------------------------- the command line and bad input


def test_cli_end_to_end(tmp_path, data_dir, capsys):
    out = tmp_path / "run"
    rc = cli.main(
        [
            "train",
            "--config",
            "tiny",
            "--data",
            str(data_dir),
            "--out",
            str(out),
            "--steps",
            "6",
            "--no-progress",
            "--no-plot",
            "--eval-every",
            "6",
            "--device",
            "cpu",
        ]
    )
    assert rc == 0
    rc = cli.main(
        [
            "generate",
            "--checkpoint",
            str(out),
            "--prompt",
            "Let there be",
            "--max-tokens",
            "8",
            "--quantize",
            "4",
            "--device",
            "cpu",
        ]
    )
    assert rc == 0
    rc = cli.main(
        [
            "quantize",
            "--checkpoint",
            str(out),
            "--max-tokens",
            "4",
            "--eval-batches",
            "2",
            "--group-size",
            "32",
            "--device",
            "cpu",
        ]
    )
    text = capsys.readouterr().out
    assert (
        rc == 0 and "Let there be" in text and "validation perplexity" in text and "4-bit" in text
    )


def _one_line_error(capsys, argv, *needles):
    rc = cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, (n, err)
    return err


def test_bad_input_messages(tmp_path, data_dir, trained, capsys):
    # Missing token files, tokenizer and corpus: what is missing and the fixing command.
    _one_line_error(
        capsys,
        ["train", "--config", "tiny", "--data", str(tmp_path / "none")],
        "meta.json",
        "main.py prepare",
    )
    broken = tmp_path / "broken"
    shutil.copytree(data_dir, broken)
    (broken / "val.bin").unlink()
    _one_line_error(
        capsys, ["train", "--config", "tiny", "--data", str(broken)], "val.bin", "prepare"
    )
    if (broken / "tokenizer.json").exists():
        (broken / "tokenizer.json").unlink()
        with pytest.raises(LLMError, match="tokenizer.json.*prepare"):
            D.Tokenizer(broken)
    _one_line_error(
        capsys,
        ["prepare", "--corpus", str(tmp_path / "nope.txt"), "--data-dir", str(tmp_path / "d")],
        "nope.txt",
        "missing",
    )
    # A checkpoint from another config cannot be resumed.
    other = tmp_path / "other"
    shutil.copytree(trained, other)
    err = _one_line_error(
        capsys,
        [
            "train",
            "--config",
            "small",
            "--data",
            str(data_dir),
            "--out",
            str(other),
            "--resume",
            "--steps",
            "31",
            "--no-progress",
        ],
        "another model config",
        "hidden_size",
    )
    assert "--config" in err
    # A generate with no checkpoint says how to train one.
    _one_line_error(
        capsys, ["generate", "--out", str(tmp_path / "empty")], "no checkpoint", "main.py train"
    )
    # Asking for a GPU where there is none.
    if not mx.is_available(mx.gpu):
        _one_line_error(
            capsys, ["train", "--device", "gpu", "--data", str(data_dir)], "no GPU", "--device cpu"
        )


def test_missing_corpus_package_message(monkeypatch):
    monkeypatch.setattr(D.shutil, "which", lambda name: None)
    with pytest.raises(LLMError, match=r"bible-kjv.*apt-get install -y bible-kjv bible-kjv-text"):
        D.kjv_text()


@pytest.mark.skipif(
    shutil.which("bible") is None, reason="the KJV (bible-kjv, bible-kjv-text) is not installed"
)
def test_the_kjv_corpus_reads_whole():
    text = D.kjv_text()
    chapters = D.split_chapters(text)
    assert len(chapters) == 1189  # the KJV's chapter count
    assert chapters[0].startswith("Genesis 1\n") and "Amen." in chapters[-1]


# ---------------------------------------------------------------- data-parallel and the PyTorch reference


@pytest.mark.skipif(
    shutil.which("mpirun") is None or not mx.distributed.is_available("mpi"),
    reason="Open MPI is not installed",
)
def test_data_parallel_training_matches_one_process(tmp_path, data_dir):
    args = [
        "train",
        "--config",
        "tiny",
        "--data",
        str(data_dir),
        "--steps",
        "6",
        "--eval-every",
        "3",
        "--batch-size",
        "8",
        "--no-progress",
        "--no-plot",
        "--device",
        "cpu",
    ]
    one = subprocess.run(
        [sys.executable, str(MAIN), *args, "--out", str(tmp_path / "one")],
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert one.returncode == 0, one.stdout + one.stderr
    two = subprocess.run(
        [
            sys.executable,
            "-m",
            "kiln.launch",
            "-n",
            "2",
            "--backend",
            "mpi",
            "--timeout",
            "250",
            str(MAIN),
            *args,
            "--out",
            str(tmp_path / "two"),
        ],
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert two.returncode == 0, two.stdout + two.stderr
    assert "2 process(es)" in two.stdout
    a = T.read_log(tmp_path / "one" / "log.csv")
    b = T.read_log(tmp_path / "two" / "log.csv")
    np.testing.assert_allclose(
        [float(r["loss"]) for r in b], [float(r["loss"]) for r in a], rtol=2e-4
    )
    np.testing.assert_allclose(float(b[-1]["val_loss"]), float(a[-1]["val_loss"]), rtol=2e-4)


def _python_with_torch():
    for exe in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if exe and Path(exe).exists():
            ok = (
                subprocess.run([exe, "-c", "import torch, numpy"], capture_output=True).returncode
                == 0
            )
            if ok:
                return exe
    return None


def test_pytorch_reference_follows_kiln(tmp_path, data_dir):
    exe = _python_with_torch()
    if exe is None:
        pytest.skip("PyTorch is not installed")
    cfg_args = [
        "train",
        "--config",
        "tiny",
        "--data",
        str(data_dir),
        "--out",
        str(tmp_path),
        "--steps",
        "12",
        "--eval-every",
        "6",
        "--no-progress",
        "--no-plot",
        "--device",
        "cpu",
    ]
    assert cli.main(cfg_args) == 0
    res = subprocess.run(
        [
            exe,
            str(ROOT / "examples" / "llm" / "torch_ref.py"),
            str(tmp_path),
            "--device",
            "cpu",
            "--threads",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    kiln_rows = T.read_log(tmp_path / "log.csv")
    with open(tmp_path / "torch-eager" / "log.csv") as f:
        torch_rows = list(csv.DictReader(f))
    np.testing.assert_allclose(
        [float(r["loss"]) for r in torch_rows], [float(r["loss"]) for r in kiln_rows], rtol=2e-4
    )
    assert [r["val_loss"] != "" for r in torch_rows] == [r["val_loss"] != "" for r in kiln_rows]


def _nvrtc_version():
    tools = getattr(mx, "kernel_toolchain", None)
    return tools()["nvrtc_version"] if tools else None


@pytest.mark.skipif(not _nvrtc_version(), reason="built without NVRTC (no CUDA toolkit)")
def test_every_llm_kernel_compiles_for_the_gpu(monkeypatch):
    """NVRTC compiles the model's kernels (forward and backward, float32 and bfloat16, the
    GPU launch layout) for sm_90 as they are launched: no GPU needed."""
    recorded = []

    def record(self, *, inputs, output_shapes, output_dtypes, template=None, **_):
        recorded.append(
            (
                self,
                [a.dtype for a in inputs],
                [a.ndim for a in inputs],
                list(output_dtypes),
                template or [],
            )
        )
        return [mx.zeros(s, dtype=d) for s, d in zip(output_shapes, output_dtypes)]

    monkeypatch.setattr(mx.fast.CustomKernel, "__call__", record)
    monkeypatch.setattr(K, "_on_cpu", lambda: False)
    for dtype in (mx.float32, mx.bfloat16):
        a = mx.zeros((2, 3, 64), dtype)
        w = mx.ones((64,), dtype)
        mx.eval(mx.vjp(K.swiglu, [a, a], [a]))
        mx.eval(mx.vjp(lambda x, r, w: K.add_rms_norm(x, r, w, 1e-5), [a, a, w], [a, a]))
    assert len(recorded) == 8
    failures = []
    for kernel, in_dtypes, ndims, out_dtypes, template in recorded:
        try:
            kernel.compile(in_dtypes, ndims, out_dtypes, template=template, target="sm_90")
        except mx.fast.KernelCompileError as e:
            failures.append(str(e))
    assert not failures, "\n\n".join(failures)


MLX_PYTHON = os.environ.get("KILN_MLX_PYTHON", "/work/mlxenv/bin/python")

# Runs examples/llm/model.py on MLX with only its imports redirected (kiln.* -> mlx.*),
# loads a kiln checkpoint and writes the logits of the tokens given.
MLX_SCRIPT = """
import json, sys, types
import numpy as np
import mlx.core as mx, mlx.nn as nn, mlx.optimizers as optim, mlx.utils
kiln = types.ModuleType("kiln")
sys.modules.update({"kiln": kiln, "kiln.core": mx, "kiln.nn": nn, "kiln.optimizers": optim,
                    "kiln.utils": mlx.utils})
sys.path.insert(0, sys.argv[1])
from llm import config as C, model as M
ckpt, tokens, out = sys.argv[2:5]
cfg = C.from_dict(C.ModelConfig, json.load(open(ckpt + "/config.json"))["model"])
model = M.Model(cfg)
model.load_weights(ckpt + "/model.safetensors")
x = mx.array(np.load(tokens))
np.save(out, np.array(model(x)))
"""


def test_the_model_file_runs_on_mlx_with_the_same_logits(trained, tmp_path):
    """examples/llm/model.py is MLX code: on MLX (imports redirected) a kiln checkpoint gives
    kiln's logits."""
    if not os.path.exists(MLX_PYTHON):
        pytest.skip(f"no MLX interpreter at {MLX_PYTHON} (KILN_MLX_PYTHON)")
    if subprocess.run([MLX_PYTHON, "-c", "import mlx.core, numpy"], capture_output=True).returncode:
        pytest.skip(f"{MLX_PYTHON} cannot import mlx.core and numpy")
    ckpt = T.latest_checkpoint(trained)
    model = G.load_model(ckpt)
    tokens = np.random.default_rng(0).integers(0, model.args.vocab_size, (2, 13)).astype(np.int32)
    np.save(tmp_path / "x.npy", tokens)
    res = subprocess.run(
        [
            MLX_PYTHON,
            "-c",
            MLX_SCRIPT,
            str(ROOT / "examples"),
            str(ckpt),
            str(tmp_path / "x.npy"),
            str(tmp_path / "y.npy"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    theirs = np.load(tmp_path / "y.npy")
    mine = np.array(model(mx.array(tokens)))
    np.testing.assert_allclose(mine, theirs, atol=2e-5 * max(1.0, np.abs(theirs).max()))


def test_framework_switch_names_a_bad_choice():
    # LLM_FRAMEWORK picks the imports (kiln or MLX); anything else is one clear line.
    env = dict(os.environ, LLM_FRAMEWORK="torch")
    res = subprocess.run(
        [sys.executable, str(MAIN), "train", "--config", "tiny", "--steps", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode != 0
    assert "LLM_FRAMEWORK='torch': choose kiln or mlx" in res.stderr + res.stdout
