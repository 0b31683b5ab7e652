"""The main demo and the kernel cookbook on the CPU (issue 9): the digits loader and split,
the fused bias+GELU and silu*up kernels against kiln ops (values and gradients), a short
training run that must pass a lower accuracy bar, every cookbook kernel in both flavours
against its reference, the seed examples, the demo's messages for what is missing, and
`python -m kiln info` / `cache clear`.

CPU kernels compile with the host compiler (about a second each the first time, then from
the disk cache), so sizes stay small: CI has two cores."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import kiln.core as mx
from conftest import SEED

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "examples" / "python"), str(ROOT / "examples" / "kernels")]

from demo import digits  # noqa: E402

HAS_KERNELS = hasattr(mx.fast, "metal_kernel") and hasattr(mx.fast, "cuda_kernel")
needs_kernels = pytest.mark.skipif(not HAS_KERNELS, reason="this build has no custom kernels")

try:
    DIGITS = digits.digits_path()
except digits.DataMissing as e:
    DIGITS, DIGITS_MISSING = None, str(e)
needs_digits = pytest.mark.skipif(DIGITS is None, reason="scikit-learn's digits.csv.gz is missing")


@pytest.fixture(autouse=True)
def on_the_cpu():
    with mx.stream(mx.cpu):
        yield


def env_with_pythonpath(**extra):
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"), env.get("PYTHONPATH")]))
    return env


# ---------------------------------------------------------------- data


@needs_digits
def test_digits_are_the_real_data_set():
    x, y = digits.load_digits()
    assert x.shape == (1797, 64) and x.dtype == np.float32
    assert 0.0 <= x.min() and x.max() <= 1.0 and x.max() == 1.0  # 16 / 16
    assert y.shape == (1797,) and sorted(set(y.tolist())) == list(range(10))
    assert np.bincount(y).min() >= 170  # about 180 images of each digit


@needs_digits
def test_split_is_fixed_by_its_seed_and_disjoint():
    x, y = digits.load_digits()
    ids = np.arange(len(x), dtype=np.float32)[:, None]
    a = digits.train_test_split(ids, y, seed=0)
    b = digits.train_test_split(ids, y, seed=0)
    c = digits.train_test_split(ids, y, seed=1)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not np.array_equal(a[2], c[2])
    train, test = set(a[0][:, 0].tolist()), set(a[2][:, 0].tolist())
    assert len(test) == 359 and len(train) == 1438 and not train & test


def test_missing_data_set_says_what_to_install(monkeypatch):
    monkeypatch.setattr(digits.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(digits.DataMissing, match="pip install scikit-learn"):
        digits.digits_path()


# ---------------------------------------------------------------- the demo's kernels


@needs_kernels
def test_bias_gelu_kernels_match_kiln_ops(rng):
    from demo import mlp

    z = mx.array(rng.standard_normal((37, 70)).astype(np.float32) * 3)
    b = mx.array(rng.standard_normal(70).astype(np.float32))
    ct = mx.array(rng.standard_normal((37, 70)).astype(np.float32))
    np.testing.assert_allclose(np.array(mlp.bias_gelu(z, b)),
                               np.array(mlp.bias_gelu_reference(z, b)), rtol=1e-5, atol=1e-6)

    def loss(f):
        return lambda z, b: mx.sum(f(z, b) * ct)

    got = mx.grad(loss(mlp.bias_gelu), argnums=(0, 1))(z, b)
    want = mx.grad(loss(mlp.bias_gelu_reference), argnums=(0, 1))(z, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-4, atol=1e-5)


@needs_kernels
def test_silu_mul_kernels_match_kiln_ops(rng):
    from demo import llama_mlp as lm

    shape = (5, 7, 9)  # 315 elements: the last thread has a partial group of 4
    gate, up, ct = (mx.array(rng.standard_normal(shape).astype(np.float32) * 3) for _ in range(3))
    np.testing.assert_allclose(np.array(lm.silu_mul(gate, up)),
                               np.array(lm.silu_mul_reference(gate, up)), rtol=1e-5, atol=1e-6)
    _, got = mx.vjp(lm.silu_mul, [gate, up], [ct])
    _, want = mx.vjp(lm.silu_mul_reference, [gate, up], [ct])
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-4, atol=1e-5)


@needs_kernels
def test_llama_block_gradients_through_the_fused_kernels(rng):
    from demo import llama_mlp as lm

    params = lm.init_block(16, 40, mx.float32, seed=int(rng.integers(1 << 30)))
    x = mx.array(rng.standard_normal((6, 16)).astype(np.float32))

    def grads(act):
        loss = lambda p, x: mx.sum(mx.square(lm.block(p, x, act)))  # noqa: E731
        return mx.grad(loss, argnums=(0, 1))(params, x)

    (gp, gx), (rp, rx) = grads(lm.silu_mul), grads(lm.silu_mul_reference)
    for name in params:
        np.testing.assert_allclose(np.array(gp[name]), np.array(rp[name]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(gx), np.array(rx), rtol=1e-4, atol=1e-5)


@needs_kernels
@needs_digits
def test_training_a_few_epochs_passes_the_lower_bar():
    from demo.train import train

    data = digits.train_test_split(*digits.load_digits(), seed=0)
    _, history = train(data, epochs=4, log=None, bars=False, seed=SEED % 1000)
    assert history[-1]["loss"] < 0.5 * history[0]["loss"]
    assert history[-1]["test_accuracy"] >= 0.90, history


@needs_kernels
def test_seed_examples_agree_with_exp():
    from demo import seed_examples

    results = seed_examples.run(log=lambda *_: None)
    assert len(results) == 3 and all(ok for _, ok, _ in results), results


# ---------------------------------------------------------------- the cookbook


def cookbook_cases():
    if not HAS_KERNELS:
        return []
    import run_all

    recipes, failures = run_all.load_recipes()
    assert not failures, failures
    return [pytest.param(r, f, id=f"{r.name}-{f}") for r in recipes for f in ("metal", "cuda")]


def test_cookbook_covers_the_seed_guides_list():
    if not HAS_KERNELS:
        pytest.skip("this build has no custom kernels")
    names = {p.values[0].name for p in cookbook_cases()}
    assert names >= {"rmsnorm", "layernorm", "softmax", "silu_2d", "rope", "attention",
                     "attention_causal", "attention_sliding_window", "attention_gqa",
                     "dequant_matvec", "simdgroup_matmul"}


@needs_kernels
@pytest.mark.parametrize("recipe, flavour", cookbook_cases())
def test_cookbook_kernel_on_the_cpu(recipe, flavour):
    from cookbook import check

    err, ok = check(recipe, flavour, size="small", seed=SEED)
    assert ok, f"{recipe.name} ({flavour}): max error {err:.3g} > {recipe.tolerance:g}"


def nvrtc_version():
    tools = getattr(mx, "kernel_toolchain", None)
    return tools()["nvrtc_version"] if tools else None


def demo_kernel_calls():
    """(label, call) pairs running each kernel of the demo once, on small inputs."""
    from demo import llama_mlp as lm
    from demo import mlp

    def calls(dtype):
        z, b = mx.zeros((4, 8), dtype=dtype), mx.zeros((8,), dtype=dtype)
        return [
            (f"bias_gelu {dtype}", lambda: mlp._launch("forward", [z, b], z)),
            (f"bias_gelu_vjp {dtype}", lambda: mlp._launch("backward", [z, b, z], z)),
            (f"silu_mul {dtype}", lambda: lm._launch("forward", [z, z], 1)),
            (f"silu_mul_vjp {dtype}", lambda: lm._launch("backward", [z, z, z], 2)),
        ]

    return calls(mx.float32) + calls(mx.float16)


@needs_kernels
@pytest.mark.skipif(not nvrtc_version(), reason="built without NVRTC (no CUDA toolkit)")
def test_every_kernel_compiles_for_the_gpu(monkeypatch):
    """NVRTC compiles every cookbook and demo kernel for sm_90 as it would be launched
    (dtypes, ranks and template arguments recorded from a call): no GPU needed."""
    recorded = []

    def record(self, *, inputs, output_shapes, output_dtypes, template=None, **_):
        recorded.append((self, [a.dtype for a in inputs], [a.ndim for a in inputs],
                         list(output_dtypes), template or []))
        return [mx.zeros(s, dtype=d) for s, d in zip(output_shapes, output_dtypes)]

    monkeypatch.setattr(mx.fast.CustomKernel, "__call__", record)
    labels = []
    for param in cookbook_cases():
        recipe, flavour = param.values
        recipe.kernels[flavour](*recipe.inputs("small", mx.random.key(0)))
        labels.append(f"{recipe.name} ({flavour})")
    for label, call in demo_kernel_calls():
        call()
        labels.append(label)
    assert len(recorded) == len(labels)
    failures = []
    for label, (kernel, in_dtypes, ndims, out_dtypes, template) in zip(labels, recorded):
        try:
            kernel.compile(in_dtypes, ndims, out_dtypes, template=template, target="sm_90")
        except mx.fast.KernelCompileError as e:
            failures.append(f"{label}: {e}")
    assert not failures, "\n\n".join(failures)


# ---------------------------------------------------------------- bad input and tools


def run_demo(*args, **env):
    return subprocess.run([sys.executable, str(ROOT / "examples/python/demo.py"), *args],
                          capture_output=True, text=True, env=env_with_pythonpath(**env),
                          timeout=600)


def test_demo_without_the_data_file_says_what_to_install(tmp_path):
    # scikit-learn's package without its data folder: what a broken install looks like.
    fake = tmp_path / "site" / "sklearn"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    proc = run_demo("--device", "cpu", "--parts", "2",
                    PYTHONPATH=f"{tmp_path / 'site'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped part 2" in proc.stdout and "has no datasets/data/digits.csv.gz" in proc.stdout
    assert "pip install scikit-learn" in proc.stdout

    proc = run_demo("--device", "cpu", "--parts", "2", "--data", str(tmp_path / "none.csv.gz"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped part 2" in proc.stdout and "none.csv.gz" in proc.stdout


@needs_kernels
def test_demo_without_a_compiler_says_what_to_install_and_still_trains(tmp_path):
    if DIGITS is None:
        pytest.skip("scikit-learn's digits.csv.gz is missing")
    proc = run_demo("--device", "cpu", "--parts", "1,2", "--epochs", "2",
                    KILN_CXX=str(tmp_path / "no-such-compiler"))
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "no C++ compiler" in out and "apt-get install -y g++" in out
    assert "skipped part 1" in out and "epoch  2" in out


def test_benchmark_report_from_dated_results(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import report

    results = tmp_path / "results"
    results.mkdir()
    gpu = {"date": "2031-01-02T10:00:00+00:00", "torch": {"exp_f32": {"ms": 2.0}},
           "kiln": {"info": {"device": "Test GPU X"},
                    "results": {"exp_f32": {"ms": 1.0}, "sum_f32": {"error": "boom"}}},
           "checks": [{"name": "exp vs copy", "value": 0.95, "target": 0.9}]}
    old = {"benchmark": "python per-call overhead", "date": "2030-05-05",
           "device": "Device(gpu, 0)", "device_name": "Test GPU X", "notes": [],
           "seconds_per_call": {"kiln add + eval": 4e-6, "torch add + synchronize": 5e-6}}
    newer = dict(old, date="2030-06-06", seconds_per_call={"kiln add + eval": 2e-6,
                                                           "torch add + synchronize": 5e-6})
    files = {"gpu-test-gpu-x-2031-01-02.json": gpu,
             "python-overhead-gpu-test-gpu-x-2030-05-05.json": old,
             "python-overhead-gpu-test-gpu-x-2030-06-06.json": newer,
             "gpu-test-gpu-x-2031-01-02-quick.json": dict(gpu, torch={})}  # tagged: left out
    for name, content in files.items():
        (results / name).write_text(json.dumps(content))
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n{report.README_BEGIN}\nold\n{report.README_END}\nafter\n")

    written = report.write_reports(results)
    assert [(w[0], w[1], w[2]) for w in written] == [("gpu", "Test GPU X", "2031-01-02")]
    md = (results / "test-gpu-x-2031-01-02.md").read_text()
    assert "| exp_f32 | 1.000 ms | PyTorch | 2.000 ms | 2 |" in md  # the peer takes twice as long
    assert "| Python call: add of 16 floats | 2.00 µs | PyTorch | 5.00 µs | 2.5 |" in md  # newest
    assert "sum_f32: kiln error: boom" in md and "exp vs copy: 0.950 (>= 0.9) ok" in md
    data = json.loads((results / "test-gpu-x-2031-01-02.json").read_text())
    assert {s["source"] for s in data["suites"]} == {
        "gpu-test-gpu-x-2031-01-02.json", "python-overhead-gpu-test-gpu-x-2030-06-06.json"}
    try:
        import matplotlib  # noqa: F401

        assert (results / "test-gpu-x-2031-01-02.png").stat().st_size > 1000
    except ImportError:
        pass
    assert report.update_readme(readme, written)
    text = readme.read_text()
    assert text.startswith("# x\n\nbefore\n") and text.endswith(f"{report.README_END}\nafter\n")
    assert "### Test GPU X (GPU), 2031-01-02" in text and "old" not in text
    assert "#### GPU ops" in text  # the report's headings sit below the README's


def test_kiln_info_and_cache_clear(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    kept = cache / "notes.txt"
    kept.write_text("not kiln's")
    ours = [cache / (f"{i:064x}" + ext) for i, ext in enumerate([".kso", ".cpp", ".kjit", ".cu"])]
    for f in ours:
        f.write_bytes(b"x" * 100)
    env = env_with_pythonpath(KILN_CACHE_DIR=str(cache))

    info = subprocess.run([sys.executable, "-m", "kiln", "info"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert info.returncode == 0, info.stderr
    assert f"kiln {mx.__version__}" in info.stdout
    assert "cpu:" in info.stdout and "gpu" in info.stdout
    assert f"kernel cache: {cache}, 2 compiled kernels" in info.stdout

    clear = subprocess.run([sys.executable, "-m", "kiln", "cache", "clear"], capture_output=True,
                           text=True, env=env, timeout=120)
    assert clear.returncode == 0, clear.stderr
    assert "removed 4 files" in clear.stdout
    assert not any(f.exists() for f in ours) and kept.exists()
