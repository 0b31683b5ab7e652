#!/usr/bin/env python3
"""CPU einsum of batched attention-like contractions: kiln against NumPy (issue 14).

Both run on the same machine in the same process. The cases of benchmarks/gpu/einsum.py
(scores bhqd,bhkd->bhqk, weighted values bhqk,bhkd->bhqd, and the same two with (B, L, H, D)
operands: bqhd,bkhd->bhqk and bhqk,bkhd->bqhd), at B 2, H 8, Lq = Lk 512, D 64, float32:
kiln.core.einsum against np.einsum(..., optimize=True), and the plain batched matmul that
computes the same thing (`q @ k.swapaxes(-1, -2)`, `p @ v`, with transposed views for the
(B, L, H, D) layouts) in kiln and in NumPy, so the einsum's overhead over a matmul is visible.
GFLOP/s count 2 B H Lq Lk D flops.

Times (time.perf_counter) are medians over repeats after warm-up, each repeat a block of as
many calls as last about 0.1 s (each kiln call ends in mx.eval); the blocks of the four
implementations alternate, so the noise of a shared machine falls on all alike, and each
block starts after a pause of 0.2 s, so that one library's idle BLAS threads (which spin for
a while after a call) do not slow the other's (kiln and NumPy each bring an OpenBLAS). Every
implementation's answer is checked against a float64 NumPy einsum of the same inputs.

    PYTHONPATH=python python benchmarks/cpu/einsum.py [--quick] [--out-dir DIR]

Writes benchmarks/results/cpu-einsum-<cpu>-<date>.{json,md}.
"""

import argparse
import datetime
import importlib.util
import os
import pathlib
import platform
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

import numpy as np  # noqa: E402

import kiln.core as mx  # noqa: E402
from overhead import cpu_name, save_results  # noqa: E402


def gpu_einsum():
    """benchmarks/gpu/einsum.py, for its cases and their matmul equivalents (loaded by path:
    `import einsum` would find this file)."""
    spec = importlib.util.spec_from_file_location(
        "gpu_einsum", ROOT / "benchmarks" / "gpu" / "einsum.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SHARED = gpu_einsum()
TOLERANCE = 1e-4  # max |error| / max |reference| for float32
MIN_REPEAT_S = 0.1  # a block makes enough calls to last about this long
PAUSE_S = 0.2  # before each block (see alternating_medians)


def alternating_medians(calls, repeats):
    """Seconds per call of each of `calls`, {name: fn}: the median over `repeats` blocks of
    calls, each block as many calls as last about MIN_REPEAT_S and preceded by a pause of
    PAUSE_S; the blocks of all the calls alternate (in a rotating order). The pause lets the
    other library's BLAS threads, which spin for a while after a call, go to sleep: kiln and
    NumPy each bring an OpenBLAS, and on a machine of few cores one pool spinning slows the
    other's next call several times over."""
    numbers = {}
    for name, fn in calls.items():
        time.sleep(PAUSE_S)
        fn()  # warm-up
        start = time.perf_counter()
        fn()
        numbers[name] = max(1, int(MIN_REPEAT_S / (time.perf_counter() - start)))
    times = {name: [] for name in calls}
    names = list(calls)
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            time.sleep(PAUSE_S)
            start = time.perf_counter()
            for _ in range(numbers[name]):
                calls[name]()
            times[name].append((time.perf_counter() - start) / numbers[name])
    return {name: statistics.median(t) for name, t in times.items()}


def run_case(name, subscripts, sizes, repeats, rng):
    ins, out = SHARED.terms(subscripts)
    arrays = [rng.standard_normal([sizes[c] for c in t], dtype=np.float32) for t in ins]
    kops = [mx.array(a) for a in arrays]
    mx.eval(*kops)
    kiln_mm = SHARED.matmul_equivalent(subscripts, mx.transpose)
    numpy_mm = SHARED.matmul_equivalent(subscripts, np.transpose)
    fns = {
        "kiln einsum": lambda: mx.einsum(subscripts, *kops),
        "kiln matmul": lambda: kiln_mm(*kops),
        "NumPy einsum": lambda: np.einsum(subscripts, *arrays, optimize=True),
        "NumPy matmul": lambda: numpy_mm(*arrays),
    }
    ref = np.einsum(subscripts, *[a.astype(np.float64) for a in arrays], optimize=True)
    scale = float(np.abs(ref).max()) or 1.0
    errors = {k: float(np.abs(np.array(fn()) - ref).max()) / scale for k, fn in fns.items()}

    def evaluated(fn):
        return lambda: mx.eval(fn())

    calls = {k: evaluated(fn) if k.startswith("kiln") else fn for k, fn in fns.items()}
    t = alternating_medians(calls, repeats)
    flops = SHARED.flops(sizes)
    row = {
        "case": name,
        "subscripts": subscripts,
        "dtype": "float32",
        "shapes": [[sizes[c] for c in s] for s in ins],
        "flops": flops,
        "relative_errors": errors,
        "agree": all(e <= TOLERANCE for e in errors.values()),
    }
    for k, s in t.items():
        key = k.replace(" ", "_")
        row[key + "_ms"] = s * 1e3
        row[key + "_gflops"] = flops / s / 1e9
    for peer in ("kiln", "NumPy"):
        row[f"{peer}_einsum_over_matmul"] = t[f"{peer} einsum"] / t[f"{peer} matmul"]
    row["NumPy_over_kiln_einsum"] = t["NumPy einsum"] / t["kiln einsum"]
    print({k: v for k, v in row.items() if k != "relative_errors"}, file=sys.stderr, flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    mx.set_default_device(mx.cpu)
    sizes = (
        {"b": 1, "h": 4, "q": 128, "k": 128, "d": 32}
        if args.quick
        else {"b": 2, "h": 8, "q": 512, "k": 512, "d": 64}
    )
    repeats = 3 if args.quick else 11
    rng = np.random.default_rng(0)
    rows = [run_case(name, s, sizes, repeats, rng) for name, s in SHARED.CASES]

    date = datetime.date.today().isoformat()
    cpu = cpu_name()
    report = {
        "benchmark": "cpu einsum (batched attention-like contractions)",
        "date": date,
        "device_name": cpu,
        "threads": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "kiln": mx.__version__,
        "quick": args.quick,
        "sizes": "B {b}, H {h}, Lq {q}, Lk {k}, D {d}".format(**sizes),
        "repeats": repeats,
        "tolerance": TOLERANCE,
        "cases": rows,
    }
    lines = [
        f"# CPU einsum, batched attention-like contractions, {date}",
        "",
        f"CPU: {cpu} ({os.cpu_count()} threads); Python {report['python']}, "
        f"NumPy {np.__version__}, kiln {report['kiln']}. {report['sizes']}, float32. "
        f"Medians of {repeats} alternating blocks of about {MIN_REPEAT_S:g} s after warm-up, "
        f"each after a {PAUSE_S:g} s pause (so neither OpenBLAS's spinning threads slow the "
        "other's calls). Times in ms "
        "(GFLOP/s of 2 B H Lq Lk D); einsum/matmul: the einsum's time over the equivalent "
        "batched matmul's; NumPy's einsum with optimize=True.",
        "",
        "| case | subscripts | kiln einsum | kiln matmul | einsum/matmul | NumPy einsum "
        "| NumPy matmul | einsum/matmul | NumPy/kiln (einsum) | agree |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def fmt(r, key):
        return f"{r[key + '_ms']:.2f} ms ({r[key + '_gflops']:.0f})"

    for r in rows:
        lines.append(
            f"| {r['case']} | `{r['subscripts']}` | {fmt(r, 'kiln_einsum')} "
            f"| {fmt(r, 'kiln_matmul')} | {r['kiln_einsum_over_matmul']:.2f} "
            f"| {fmt(r, 'NumPy_einsum')} | {fmt(r, 'NumPy_matmul')} "
            f"| {r['NumPy_einsum_over_matmul']:.2f} | {r['NumPy_over_kiln_einsum']:.2f}x "
            f"| {'yes' if r['agree'] else 'NO'} |"
        )
    lines += [
        "",
        f"agree: all four answers within {TOLERANCE:g} (max |error| / max |reference|) of a "
        "float64 NumPy einsum of the same inputs; the errors are in the JSON file.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    save_results(
        args.out_dir,
        "cpu-einsum" + ("-quick" if args.quick else ""),
        cpu,
        date,
        report,
        text,
    )


if __name__ == "__main__":
    main()
