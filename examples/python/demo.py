#!/usr/bin/env python3
"""kiln's main demo: custom kernels written as source strings, run inside a real training
job, on the GPU when there is one and on the CPU otherwise (`make demo`).

  1. The seed documents' custom-kernel examples (both call forms, the strided variant),
     checked against mx.exp.
  2. A digits classifier (scikit-learn's 1,797 8x8 images, read from its package) whose
     hidden activation is a fused bias+GELU kernel with its vjp kernel attached through
     custom_function, trained with value_and_grad and Adam written with kiln ops.
  3. A Llama-style MLP block, down(silu(gate(x)) * up(x)), with silu(gate) * up as one
     fused kernel (and a fused backward), checked and timed against the unfused ops.

    PYTHONPATH=python python examples/python/demo.py [--device cpu|gpu] [--epochs N]
                                                     [--parts 1,2,3] [--data PATH]

When something is missing (the data file, a C++ compiler for CPU kernels, a GPU), the demo
says what and how to install it, and runs every part it can. Exits non-zero when a check
fails.
"""

import argparse
import pathlib
import statistics
import sys
import time
import traceback

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import kiln.core as mx  # noqa: E402

from demo import environment, seed_examples  # noqa: E402
from demo.progress import progress  # noqa: E402

ACCURACY_TARGET = 0.97  # test accuracy after DEFAULT_EPOCHS
DEFAULT_EPOCHS = 20


class Report:
    """What each part found: checks passed or failed, parts skipped and what to install."""

    def __init__(self):
        self.failed, self.skipped, self.install, self.summary = [], [], [], []

    def missing(self, what, how):
        """`what` is missing; `how` says how to get it (usually the install command)."""
        if (what, how) not in self.install:
            self.install.append((what, how))


def heading(text):
    print(f"\n{text}\n{'-' * len(text)}", flush=True)


def rel_error(a, b):
    """max |a - b| / max |b| in float32 (a Python float)."""
    a32, b32 = a.astype(mx.float32), b.astype(mx.float32)
    scale = max(mx.max(mx.abs(b32)).item(), 1e-30)
    return mx.max(mx.abs(a32 - b32)).item() / scale


def median_ms(fn, reps=10, warmup=2):
    """Median milliseconds of evaluating fn() (after warm-up: the first call compiles)."""
    for _ in range(warmup):
        mx.eval(fn())
    mx.synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        mx.eval(fn())
        mx.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


# ---------------------------------------------------------------- part 1


def part_seed_examples(report, kernels_ok):
    heading("[1/3] The seed documents' custom kernels, checked against mx.exp")
    if not kernels_ok:
        report.skipped.append("1: the seed examples (custom kernels cannot run here)")
        print("  skipped: custom kernels cannot run here (see below)")
        return
    results = seed_examples.run()
    bad = [label for label, ok, _ in results if not ok]
    if bad:
        report.failed.append("1: seed examples disagree with mx.exp: " + ", ".join(bad))
    agree = len(results) - len(bad)
    report.summary.append(f"seed examples: {agree}/{len(results)} agree with mx.exp")


# ---------------------------------------------------------------- part 2


def part_digits(report, kernels_ok, epochs, data_path):
    heading("[2/3] A digits classifier with a fused bias+GELU kernel (and its vjp kernel)")
    try:
        import numpy  # noqa: F401 - the loader and the split use it
    except ImportError:
        print("  skipped: NumPy is missing")
        report.skipped.append("2: the digits classifier (no NumPy)")
        report.missing("NumPy", f"install it with:  {sys.executable} -m pip install numpy")
        return
    from demo import mlp
    from demo.digits import DataMissing, digits_path, load_digits, train_test_split
    from demo.train import train

    try:
        path = pathlib.Path(data_path) if data_path else digits_path()
        x, y = load_digits(path)
    except (DataMissing, OSError) as e:
        print(f"  skipped: {e}")
        report.skipped.append("2: the digits classifier (no data file)")
        if data_path:
            report.missing(f"the data file {data_path}",
                           "leave out --data to read scikit-learn's copy")
        else:
            report.missing("the digits data set (scikit-learn)",
                           f"install it with:  {sys.executable} -m pip install scikit-learn")
        return
    data = train_test_split(x, y, test_fraction=0.2, seed=0)
    print(f"  data: {len(x):,} images of 8x8 pixels from {path}")
    print(f"  split (seed 0): {len(data[0]):,} to train, {len(data[2]):,} to test")

    activation = mlp.bias_gelu
    if kernels_ok:
        # The kernels against the same function in kiln ops, values and gradients.
        k1, k2, k3 = mx.random.split(mx.random.key(1), 3)
        z, b = mx.random.normal((33, 128), key=k1), mx.random.normal((128,), key=k2)
        ct = mx.random.normal((33, 128), key=k3)

        def loss(f):
            return lambda z, b: mx.sum(f(z, b) * ct)

        fwd = rel_error(mlp.bias_gelu(z, b), mlp.bias_gelu_reference(z, b))
        gk = mx.grad(loss(mlp.bias_gelu), argnums=(0, 1))(z, b)
        gr = mx.grad(loss(mlp.bias_gelu_reference), argnums=(0, 1))(z, b)
        bwd = max(rel_error(gk[0], gr[0]), rel_error(gk[1], gr[1]))
        ok = fwd < 1e-5 and bwd < 1e-5
        print(f"  kernel vs kiln ops: forward rel. error {fwd:.1e}, gradients (z, b) {bwd:.1e}"
              f"  {'ok' if ok else 'MISMATCH'}")
        if not ok:
            report.failed.append("2: the bias+GELU kernels disagree with kiln ops")
    else:
        activation = mlp.bias_gelu_reference
        print("  custom kernels cannot run here: the activation is the same GELU in kiln ops")

    print(f"  model: 64 -> 128 (bias+GELU {'kernel' if kernels_ok else 'ops'}) -> 10, "
          f"cross-entropy, Adam (lr 2e-3, cosine decay), batches of 32, {epochs} epochs "
          f"on {mx.default_device()}")
    _, history = train(data, epochs=epochs, activation=activation)
    final = history[-1]
    per_epoch = statistics.median(h["seconds"] for h in history[1:] or history) * 1e3
    met = final["test_accuracy"] >= ACCURACY_TARGET
    verdict = ("met" if met else "NOT met") if epochs >= DEFAULT_EPOCHS else \
        f"{'met' if met else 'not met'}: the target is for {DEFAULT_EPOCHS} epochs"
    print(f"  test accuracy {final['test_accuracy']:.2%} (target >= {ACCURACY_TARGET:.0%}): "
          f"{verdict}; median {per_epoch:.1f} ms per epoch "
          f"(first epoch {history[0]['seconds'] * 1e3:.1f} ms, compiles included)")
    if not met and epochs >= DEFAULT_EPOCHS:
        report.failed.append(
            f"2: test accuracy {final['test_accuracy']:.2%} < {ACCURACY_TARGET:.0%}")
    report.summary.append(f"digits: test accuracy {final['test_accuracy']:.2%} after {epochs} "
                          f"epochs, {per_epoch:.1f} ms/epoch")


# ---------------------------------------------------------------- part 3


def part_llama(report, kernels_ok):
    from demo import llama_mlp as lm

    heading("[3/3] A Llama-style MLP block: down(silu(gate(x)) * up(x))")
    on_gpu = mx.default_device() == mx.gpu
    # Llama-2-7B's MLP widths on the GPU; small ones on the CPU.
    tokens, dim, hidden, dtype, tol = (
        (2048, 4096, 11008, mx.float16, 2e-2) if on_gpu else (64, 256, 688, mx.float32, 1e-5)
    )
    params = lm.init_block(dim, hidden, dtype)
    kx, kc = mx.random.split(mx.random.key(2))
    x = mx.random.normal((tokens, dim), key=kx).astype(dtype)
    ct = mx.random.normal((tokens, dim), key=kc).astype(dtype)
    mx.eval(params, x, ct)
    print(f"  x ({tokens}, {dim}), w_gate and w_up ({dim}, {hidden}), w_down ({hidden}, {dim}), "
          f"{str(dtype).split('.')[-1]} on {mx.default_device()}")

    def fwd(act):
        return lambda: lm.block(params, x, act)

    def fwd_bwd(act):
        grad = mx.value_and_grad(lambda p, x: mx.sum(lm.block(p, x, act) * ct), argnums=(0, 1))
        return lambda: grad(params, x)

    if not kernels_ok:
        print("  custom kernels cannot run here: timing the unfused block only")
        print(f"  unfused forward {median_ms(fwd(lm.silu_mul_reference)):.2f} ms")
        report.skipped.append("3: the fused silu*up kernel (custom kernels cannot run here)")
        return

    # Checks: forward and every gradient, fused against unfused.
    y_fused, y_ref = fwd(lm.silu_mul)(), fwd(lm.silu_mul_reference)()
    errors = {"forward": rel_error(y_fused, y_ref)}
    (_, g_fused), (_, g_ref) = fwd_bwd(lm.silu_mul)(), fwd_bwd(lm.silu_mul_reference)()
    for name in ("w_gate", "w_up", "w_down"):
        errors[f"d {name}"] = rel_error(g_fused[0][name], g_ref[0][name])
    errors["d x"] = rel_error(g_fused[1], g_ref[1])
    ok = all(e <= tol for e in errors.values())
    print("  fused vs unfused, max rel. error: "
          + ", ".join(f"{k} {v:.1e}" for k, v in errors.items())
          + f"  (tolerance {tol:g}) {'ok' if ok else 'MISMATCH'}")
    if not ok:
        report.failed.append("3: the fused block disagrees with the unfused ops")

    gate, up = x @ params["w_gate"], x @ params["w_up"]
    mx.eval(gate, up)

    def elementwise_bwd(act):
        return lambda: mx.vjp(act, [gate, up], [gate])[1]

    cases = [
        ("silu(gate) * up alone",
         lambda: lm.silu_mul(gate, up), lambda: lm.silu_mul_reference(gate, up)),
        ("its backward alone",
         elementwise_bwd(lm.silu_mul), elementwise_bwd(lm.silu_mul_reference)),
        ("block forward", fwd(lm.silu_mul), fwd(lm.silu_mul_reference)),
        ("block forward + backward", fwd_bwd(lm.silu_mul), fwd_bwd(lm.silu_mul_reference)),
    ]
    reps = 20 if on_gpu else 10
    rows = []
    for label, fused, unfused in progress(cases, "timing"):
        rows.append((label, median_ms(fused, reps), median_ms(unfused, reps)))
    print(f"  {'':26s} {'fused':>10s} {'unfused':>10s} {'speed-up':>9s}")
    for label, f_ms, u_ms in rows:
        print(f"  {label:26s} {f_ms:8.3f} ms {u_ms:8.3f} ms {u_ms / f_ms:8.2f}x")
    report.summary.append(
        f"Llama MLP: fused silu*up {rows[0][1]:.3f} ms vs {rows[0][2]:.3f} ms unfused; "
        f"block fwd+bwd {rows[3][1]:.2f} ms vs {rows[3][2]:.2f} ms")


# ---------------------------------------------------------------- main


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "gpu"], help="default: the GPU if usable")
    parser.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS)
    parser.add_argument("--parts", default="1,2,3", help="which parts to run, e.g. 2,3")
    parser.add_argument("--data", help="path of digits.csv.gz (default: scikit-learn's copy)")
    args = parser.parse_args(argv)
    parts = {int(p) for p in args.parts.split(",") if p.strip()}

    report = Report()
    has_gpu, gpu_text = environment.gpu_status()
    if args.device == "gpu" and not has_gpu:
        print(f"kiln demo: --device gpu, but {gpu_text}", file=sys.stderr)
        return 2
    if args.device:
        mx.set_default_device(mx.gpu if args.device == "gpu" else mx.cpu)
    on_gpu = mx.default_device() == mx.gpu

    print(f"kiln {mx.__version__}: custom kernels from source strings, inside a real training job")
    print(f"  device: {mx.default_device()} ({gpu_text if has_gpu else 'the CPU'})")
    if not has_gpu:
        print(f"  no GPU: {gpu_text}")
        print("  (with an NVIDIA GPU and its driver, the same demo runs there unchanged)")
        what, command = environment.gpu_install_hint()
        report.missing(what, command)
    kernels_ok = environment.kernels_built()
    if not kernels_ok:
        print("  this build of kiln.core has no custom kernels (kiln.core.fast.metal_kernel)")
        report.missing("custom kernels in this build", "update and rebuild:  git pull && make demo")
    elif not on_gpu:
        cxx = environment.host_compiler()
        if cxx:
            print(f"  CPU kernels compile with {cxx} (about a second each the first time, "
                  "then from the disk cache)")
        else:
            kernels_ok = False
            print("  no C++ compiler: CPU custom kernels need one (or set KILN_CXX)")
            report.missing("a C++ compiler for CPU kernels",
                           f"install one with:  {environment.apt_install('g++')}")

    runners = {
        1: lambda: part_seed_examples(report, kernels_ok),
        2: lambda: part_digits(report, kernels_ok, args.epochs, args.data),
        3: lambda: part_llama(report, kernels_ok),
    }
    for part in sorted(parts & runners.keys()):
        try:
            runners[part]()
        except Exception as e:  # noqa: BLE001 - one part failing leaves the others running
            traceback.print_exc()
            first = str(e).splitlines()[0] if str(e) else ""
            report.failed.append(f"{part}: {type(e).__name__}: {first}")

    heading("Summary")
    for line in report.summary:
        print(f"  {line}")
    for line in report.skipped:
        print(f"  skipped part {line}")
    for what, command in report.install:
        print(f"  missing {what}: {command}")
    for line in report.failed:
        print(f"  FAILED part {line}")
    if not report.failed:
        print("  every part that ran passed its checks")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
