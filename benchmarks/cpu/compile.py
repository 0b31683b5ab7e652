#!/usr/bin/env python3
"""compile on the CPU (issue 18): chains of elementwise ops compiled (one generated kernel,
compiled by the host compiler) against the same ops eager and against NumPy, in one run.

- a 10-op chain (GELU-tanh written with core ops, then a scale and a residual add) on 2^22
  elements of float32 and bfloat16 (NumPy: float32 only), as time and GB/s of the bytes the
  chain must move (its inputs read and its output written once);
- 100 small elementwise ops on 16 floats: the time per call of the compiled function (trace
  cached: a replay and one fused kernel) against the eager ops (100 kernels);
- the first call (trace, code generation, host compiler) with an empty kernel cache, and the
  first call in a new process whose kernel is on disk.

Medians after warm-up; the compiled and eager repeats alternate so that a busy, shared machine
slows both alike. Writes benchmarks/results/cpu-compile-<cpu>-<date>.{json,md}.

    PYTHONPATH=python python benchmarks/cpu/compile.py [--quick] [--out-dir DIR]
"""

import argparse
import datetime
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

import kiln.core as mx  # noqa: E402
from overhead import cpu_name, interleaved_medians, save_results  # noqa: E402


def chain(x, y, m=mx):
    """GELU-tanh (8 ops), a scale and a residual add: 10 elementwise ops."""
    g = 0.5 * x * (1 + m.tanh(0.7978845608 * (x + 0.044715 * (x * x * x))))
    return g * 1.5 + y


def small_ops(x):
    for i in range(25):
        x = mx.sin(x) * 0.5 + x * 0.25 - 0.125
    return x


def first_calls(n):
    """Seconds of the first call with an empty kernel cache, and in a new process that finds
    the kernel on disk."""
    code = (
        "import sys, time, kiln.core as mx\n"
        f"sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r})\n"
        "from compile import chain\n"
        f"x = mx.random.normal(({n},)); y = mx.random.normal(({n},)); mx.eval(x, y)\n"
        "f = mx.compile(chain)\n"
        "t = time.perf_counter(); mx.eval(f(x, y)); print(time.perf_counter() - t)\n"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, KILN_CACHE_DIR=cache, PYTHONPATH=str(ROOT / "python"))
        run = lambda: float(
            subprocess.run(
                [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
            ).stdout.split()[-1]
        )
        cold = run()
        warm = run()
    return cold, warm


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    mx.set_default_device(mx.cpu)
    n = (1 << 18) if args.quick else (1 << 22)
    repeats = 5 if args.quick else 15
    load_before = os.getloadavg()[0]

    seconds, gbs, kernels = {}, {}, {}
    for dtype, name in [(mx.float32, "float32"), (mx.bfloat16, "bfloat16")]:
        x = mx.random.normal((n,)).astype(dtype)
        y = mx.random.normal((n,)).astype(dtype)
        mx.eval(x, y)
        cchain = mx.compile(chain)
        mx.eval(cchain(x, y))
        s = io_dot(cchain(x, y))
        kernels[name] = s.count("Compiled")
        cases = {
            f"compiled, {name}": (lambda: mx.eval(cchain(x, y)), 1),
            f"eager, {name}": (lambda: mx.eval(chain(x, y)), 1),
        }
        if dtype == mx.float32:
            xn, yn = np.array(x), np.array(y)
            cases["NumPy, float32"] = (lambda: chain(xn, yn, np), 1)
        res = interleaved_medians(cases, repeats, warmup=2)
        nbytes = 3 * n * dtype.size
        for k, v in res.items():
            seconds[f"10-op chain, {k}"] = v
            gbs[f"10-op chain, {k}"] = nbytes / v / 1e9

    xs = mx.random.normal((16,))
    mx.eval(xs)
    csmall = mx.compile(small_ops)
    mx.eval(csmall(xs))
    res = interleaved_medians(
        {
            "100 ops on 16 floats, compiled": (lambda: mx.eval(csmall(xs)), 200),
            "100 ops on 16 floats, eager": (lambda: mx.eval(small_ops(xs)), 50),
        },
        repeats,
        warmup=20,
    )
    seconds.update(res)
    cold, warm = first_calls(n)
    seconds["first call, empty kernel cache (trace + host compiler)"] = cold
    seconds["first call, new process, kernel on disk"] = warm

    date = datetime.date.today().isoformat()
    cpu = cpu_name()
    checks = []
    c, e = seconds["10-op chain, compiled, float32"], seconds["10-op chain, eager, float32"]
    checks.append(
        {
            "name": "10-op chain float32: eager / compiled",
            "ratio": e / c,
            "target": "> 1",
            "met": e / c > 1,
        }
    )
    # bfloat16 converts to float and rounds back in every op, fused or not (so that results
    # are bit for bit the eager ones): compute-bound either way, the ratio is reported.
    c, e = seconds["10-op chain, compiled, bfloat16"], seconds["10-op chain, eager, bfloat16"]
    checks.append(
        {
            "name": "10-op chain bfloat16: eager / compiled",
            "ratio": e / c,
            "target": "reported",
            "met": None,
        }
    )
    c, npy = seconds["10-op chain, compiled, float32"], seconds["10-op chain, NumPy, float32"]
    checks.append(
        {
            "name": "10-op chain float32: NumPy / compiled",
            "ratio": npy / c,
            "target": "> 1",
            "met": npy / c > 1,
        }
    )
    c, e = seconds["100 ops on 16 floats, compiled"], seconds["100 ops on 16 floats, eager"]
    checks.append(
        {
            "name": "100 small ops: eager / compiled",
            "ratio": e / c,
            "target": "> 1",
            "met": e / c > 1,
        }
    )
    report = {
        "benchmark": "cpu compile",
        "date": date,
        "cpu": cpu,
        "threads": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "kiln": mx.__version__,
        "quick": args.quick,
        "elements": n,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "fused_kernels_per_chain": kernels,
        "seconds": seconds,
        "gb_per_s": gbs,
        "checks": checks,
    }
    lines = [
        f"# compile on the CPU, {date}",
        "",
        f"CPU: {cpu} ({os.cpu_count()} logical CPUs; load average {load_before:.1f} before, "
        f"{report['load_after']:.1f} after); NumPy {np.__version__}; kiln {mx.__version__}. "
        f"Medians after warm-up, compiled and eager repeats interleaved.",
        "",
        "| case | time | GB/s |",
        "|---|---:|---:|",
    ]
    for k, v in seconds.items():
        t = f"{v * 1e6:.1f} µs" if v < 1e-3 else (f"{v * 1e3:.2f} ms" if v < 1 else f"{v:.2f} s")
        lines.append(f"| {k} | {t} | {gbs[k]:.1f} |" if k in gbs else f"| {k} | {t} | |")
    lines += [
        "",
        f"Chains on {n} elements (bytes moved: 3 x {n} x itemsize); the compiled chain "
        f"is {kernels} fused kernel(s) per dtype.",
        "",
    ]
    for c in checks:
        verdict = "" if c["met"] is None else (" met" if c["met"] else " NOT met")
        lines.append(f"- {c['name']}: {c['ratio']:.2f} (target {c['target']}){verdict}")
    lines.append(
        "- bfloat16 chains convert to float and round back in every op, fused or not (results "
        "equal the eager ones bit for bit): compute-bound either way on the CPU."
    )
    text = "\n".join(lines) + "\n"
    print(text)
    save_results(
        args.out_dir, "cpu-compile", cpu, date + ("-quick" if args.quick else ""), report, text
    )


def io_dot(a):
    import io

    s = io.StringIO()
    mx.export_to_dot(s, a)
    return s.getvalue()


if __name__ == "__main__":
    main()
