#!/usr/bin/env python3
"""GPU sort-based ops: kiln against PyTorch on the same GPU in the same run (issue 14).

Cases, on one row of 2^24 float32 and on (4096, 32768) float32 along the last axis:
sort (values), argsort, topk (k = 64 and k = n / 16), argpartition (kth = n / 2) and median
for kiln; torch.sort (values and int64 indices: PyTorch has no values-only sort),
torch.topk, torch.kthvalue (the closest to argpartition: the kth value and its index) and
torch.median for PyTorch; and the device copy bandwidth (PyTorch copying 1 GiB).

Each time is the median over rounds, after warm-up, of a batch of independent calls:
PyTorch's timed with CUDA events around the batch, kiln's on the host around the batch and
its final synchronize (kiln's streams are its own; one batch of these ops runs for tens of
milliseconds, so the host's share is small). The effective bandwidth of a case counts the
input read once and the outputs written once, against the measured copy bandwidth: the
floor an algorithm that reads its input once cannot beat (a radix sort makes one pass per
8 key bits; a radix select reads the row two or three times).

    PYTHONPATH=python python benchmarks/gpu/sort.py [--quick] [--out-dir DIR]

Writes benchmarks/results/gpu-sort-<device>-<date>.{json,md}. Needs a GPU; PyTorch's columns
are empty (and the report says so) without PyTorch.
"""

import argparse
import datetime
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
from overhead import save_results  # noqa: E402


def kiln_seconds(make, batch, rounds, warmup=2):
    """Seconds per call: batches of `batch` independent calls, each ending in a synchronize."""
    times = []
    for r in range(warmup + rounds):
        start = time.perf_counter()
        outs = [make() for _ in range(batch)]
        mx.eval(*outs)
        mx.synchronize()
        if r >= warmup:
            times.append((time.perf_counter() - start) / batch)
        del outs
    return statistics.median(times)


def torch_seconds(torch, make, batch, rounds, warmup=2):
    """Seconds per call from CUDA events around batches of `batch` calls."""
    times = []
    for r in range(warmup + rounds):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        outs = [make() for _ in range(batch)]
        stop.record()
        torch.cuda.synchronize()
        if r >= warmup:
            times.append(start.elapsed_time(stop) / 1e3 / batch)
        del outs
    return statistics.median(times)


def flatten(outs):
    return outs if isinstance(outs, (list, tuple)) else [outs]


def cases_for(shape, values):
    """(name, kiln maker, torch maker or None, bytes written per call) for one input."""
    n = shape[-1]
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    x, xt = values
    k_small, k_big = 64, n // 16
    cases = [
        ("sort", lambda: mx.sort(x, axis=-1), None, 4 * rows * n),
        ("argsort", lambda: mx.argsort(x, axis=-1), None, 4 * rows * n),
        (
            "sort (values + indices)",
            None,
            (lambda: xt.sort(dim=-1)) if xt is not None else None,
            12 * rows * n,
        ),
        (
            f"topk k={k_small}",
            lambda: mx.topk(x, k_small, axis=-1),
            (lambda: xt.topk(k_small, dim=-1)) if xt is not None else None,
            4 * rows * k_small,
        ),
        (
            f"topk k={k_big}",
            lambda: mx.topk(x, k_big, axis=-1),
            (lambda: xt.topk(k_big, dim=-1)) if xt is not None else None,
            4 * rows * k_big,
        ),
        (
            "argpartition kth=n/2",
            lambda: mx.argpartition(x, n // 2, axis=-1),
            None,
            4 * rows * n,
        ),
        (
            "kthvalue k=n/2",
            None,
            (lambda: xt.kthvalue(n // 2, dim=-1)) if xt is not None else None,
            12 * rows,
        ),
        (
            "median",
            lambda: mx.median(x, axis=-1),
            (lambda: xt.median(dim=-1)) if xt is not None else None,
            4 * rows,
        ),
    ]
    return cases


def check_results(shape, x):
    """The ops' answers agree with PyTorch's (or NumPy's) on this input: a guard that the
    timed calls compute what they claim."""
    n = shape[-1]
    if len(shape) > 1:
        x = x[:16]  # enough rows to tell, without sorting 512 MB on the host
    xs = np.array(x)
    got_sort = np.array(mx.sort(x, axis=-1))
    want = np.sort(xs, axis=-1)
    ok = bool(np.array_equal(got_sort, want))
    top = np.sort(np.array(mx.topk(x, 64, axis=-1)), axis=-1)
    ok &= bool(np.array_equal(top, want[..., n - 64 :]))
    med = np.array(mx.median(x, axis=-1))
    ok &= bool(np.allclose(med, np.median(xs, axis=-1), rtol=1e-6))
    idx = np.array(mx.argpartition(x, n // 2, axis=-1)).astype(np.int64)
    ok &= bool(
        np.array_equal(
            np.take_along_axis(xs, idx[..., n // 2 : n // 2 + 1], -1)[..., 0],
            want[..., n // 2],
        )
    )
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, few rounds (a smoke test)"
    )
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    if not mx.is_available(mx.gpu):
        sys.exit("sort.py: no GPU is available to kiln")
    mx.set_default_device(mx.gpu)
    try:
        import torch

        torch_version = torch.__version__ if torch.cuda.is_available() else None
        if torch_version is None:
            torch = None
    except ImportError:
        torch, torch_version = None, None

    shapes = [(1 << 20,), (256, 8192)] if args.quick else [(1 << 24,), (4096, 32768)]
    batch, rounds = (2, 3) if args.quick else (5, 9)
    rng = np.random.default_rng(0)
    results, checks = [], {}

    copy_gbs = None
    if torch is not None:
        src = torch.empty(1 << (24 if args.quick else 28), dtype=torch.float32, device="cuda")
        dst = torch.empty_like(src)
        src.normal_()
        t = torch_seconds(torch, lambda: dst.copy_(src), batch * 4, rounds)
        copy_gbs = 2 * src.numel() * 4 / t / 1e9
        del src, dst

    for shape in shapes:
        data = rng.standard_normal(shape, dtype=np.float32)
        x = mx.array(data)
        mx.eval(x)
        xt = torch.from_numpy(data).cuda() if torch is not None else None
        label = "x".join(map(str, shape)) + " float32"
        checks[label] = check_results(shape, x)
        nbytes_in = data.nbytes
        for name, kmake, tmake, out_bytes in cases_for(shape, (x, xt)):
            row = {"shape": label, "case": name}
            moved = nbytes_in + out_bytes
            if kmake is not None:
                s = kiln_seconds(kmake, batch, rounds)
                row["kiln_ms"] = s * 1e3
                row["kiln_gbs"] = moved / s / 1e9
            if tmake is not None:
                s = torch_seconds(torch, tmake, batch, rounds)
                row["torch_ms"] = s * 1e3
                row["torch_gbs"] = moved / s / 1e9
            results.append(row)
            print(row, file=sys.stderr, flush=True)
        del x, xt

    date = datetime.date.today().isoformat()
    try:
        name = mx.device_info(mx.gpu).get("device_name", "gpu")
    except Exception:
        name = "gpu"
    report = {
        "benchmark": "gpu sort-based ops",
        "date": date,
        "device_name": name,
        "python": platform.python_version(),
        "torch": torch_version,
        "kiln": mx.__version__,
        "quick": args.quick,
        "copy_gb_per_s": copy_gbs,
        "results_agree_with_numpy": checks,
        "cases": results,
    }
    lines = [
        f"# GPU sort-based ops, {date}",
        "",
        f"Device: {name}; Python {report['python']}, PyTorch {torch_version or 'not available'}, "
        f"kiln {report['kiln']}. Medians over {rounds} rounds of {batch} calls after warm-up "
        "(PyTorch: CUDA events; kiln: host time around each batch and its synchronize). "
        "GB/s: input read once + outputs written once"
        + (f"; device copy {copy_gbs:.0f} GB/s (PyTorch, 1 GiB)." if copy_gbs else "."),
        "",
        "| input | case | kiln | kiln GB/s (of copy) | PyTorch | PyTorch GB/s |",
        "|---|---|---:|---:|---:|---:|",
    ]

    def fmt_ms(v):
        return "" if v is None else f"{v:.3f} ms"

    for r in results:
        frac = f" ({r['kiln_gbs'] / copy_gbs:.0%})" if copy_gbs and "kiln_gbs" in r else ""
        lines.append(
            f"| {r['shape']} | {r['case']} | {fmt_ms(r.get('kiln_ms'))} | "
            f"{r['kiln_gbs']:.0f}{frac} |"
            if "kiln_gbs" in r
            else f"| {r['shape']} | {r['case']} | | |"
        )
        if "torch_ms" in r:
            lines[-1] += f" {fmt_ms(r['torch_ms'])} | {r['torch_gbs']:.0f} |"
        else:
            lines[-1] += " | |"
    lines += [
        "",
        "Results agree with NumPy: " + ", ".join(f"{k}: {v}" for k, v in checks.items()),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    save_results(
        args.out_dir,
        "gpu-sort" + ("-quick" if args.quick else ""),
        name,
        date,
        report,
        text,
    )


if __name__ == "__main__":
    main()
