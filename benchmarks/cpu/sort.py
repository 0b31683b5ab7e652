#!/usr/bin/env python3
"""CPU sort-based ops: kiln against NumPy on the same machine in the same run (issue 14).

Cases, on one row of 2^22 float32 and on (1024, 4096) float32 along the last axis: sort,
argsort, topk (k = 64; NumPy: partition at n - k and the last k), argpartition (kth = n / 2),
median, unique (NumPy's np.unique; kiln's with size = n) and searchsorted (2^20 values into
the sorted row). Times are medians over repeats after warm-up; the repeats of kiln's and
NumPy's cases alternate, so the noise of a shared machine falls on both alike.

    PYTHONPATH=python python benchmarks/cpu/sort.py [--quick] [--out-dir DIR]

Writes benchmarks/results/cpu-sort-<cpu>-<date>.{json,md}.
"""

import argparse
import datetime
import os
import pathlib
import platform
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

import numpy as np  # noqa: E402

import kiln.core as mx  # noqa: E402
from overhead import cpu_name, interleaved_medians, save_results  # noqa: E402


def cases_for(data, x):
    n = data.shape[-1]
    k = 64
    s_np = np.sort(data, axis=-1)[..., :: max(1, n // 4096)].reshape(-1)
    s_mx = mx.array(s_np)
    q_np = data.reshape(-1)[: 1 << 20]
    q_mx = mx.array(q_np)
    mx.eval(s_mx, q_mx)
    return {
        "sort": (lambda: mx.eval(mx.sort(x, axis=-1)), lambda: np.sort(data, axis=-1)),
        "argsort": (
            lambda: mx.eval(mx.argsort(x, axis=-1)),
            lambda: np.argsort(data, axis=-1, kind="stable"),
        ),
        f"topk k={k}": (
            lambda: mx.eval(mx.topk(x, k, axis=-1)),
            lambda: np.partition(data, n - k, axis=-1)[..., n - k :],
        ),
        "argpartition kth=n/2": (
            lambda: mx.eval(mx.argpartition(x, n // 2, axis=-1)),
            lambda: np.argpartition(data, n // 2, axis=-1),
        ),
        "median": (
            lambda: mx.eval(mx.median(x, axis=-1)),
            lambda: np.median(data, axis=-1),
        ),
        "unique": (
            lambda: mx.eval(*mx.unique(x, data.size, True, True, True)),
            lambda: np.unique(data, return_index=True, return_inverse=True, return_counts=True),
        ),
        "searchsorted (2^20 values)": (
            lambda: mx.eval(mx.searchsorted(s_mx, q_mx)),
            lambda: np.searchsorted(s_np, q_np),
        ),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    mx.set_default_device(mx.cpu)
    shapes = [(1 << 18,), (64, 4096)] if args.quick else [(1 << 22,), (1024, 4096)]
    repeats = 3 if args.quick else 7
    rng = np.random.default_rng(0)
    rows = []
    for shape in shapes:
        data = rng.standard_normal(shape, dtype=np.float32)
        x = mx.array(data)
        mx.eval(x)
        label = "x".join(map(str, shape)) + " float32"
        for name, (kfn, nfn) in cases_for(data, x).items():
            t = interleaved_medians({"kiln": (kfn, 1), "numpy": (nfn, 1)}, repeats, warmup=1)
            rows.append(
                {
                    "shape": label,
                    "case": name,
                    "kiln_ms": t["kiln"] * 1e3,
                    "numpy_ms": t["numpy"] * 1e3,
                    "speedup": t["numpy"] / t["kiln"],
                }
            )
            print(rows[-1], file=sys.stderr, flush=True)
    date = datetime.date.today().isoformat()
    cpu = cpu_name()
    report = {
        "benchmark": "cpu sort-based ops",
        "date": date,
        "device_name": cpu,
        "threads": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "kiln": mx.__version__,
        "quick": args.quick,
        "cases": rows,
    }
    lines = [
        f"# CPU sort-based ops, {date}",
        "",
        f"CPU: {cpu} ({os.cpu_count()} threads); Python {report['python']}, NumPy {np.__version__}, "
        f"kiln {report['kiln']}. Medians of {repeats} alternating repeats after warm-up.",
        "",
        "| input | case | kiln | NumPy | NumPy / kiln |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['shape']} | {r['case']} | {r['kiln_ms']:.2f} ms | {r['numpy_ms']:.2f} ms "
            f"| {r['speedup']:.2f}x |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    save_results(
        args.out_dir,
        "cpu-sort" + ("-quick" if args.quick else ""),
        cpu,
        date,
        report,
        text,
    )


if __name__ == "__main__":
    main()
