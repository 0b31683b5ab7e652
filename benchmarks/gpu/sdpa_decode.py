#!/usr/bin/env python3
"""Attention decode on the GPU (issue 17): one or a few new queries against a long key/value
cache, the step that bounds token generation. kiln's decode kernels (what `auto` runs), kiln's
cuDNN path (KILN_SDPA_BACKEND=cudnn) and PyTorch's F.scaled_dot_product_attention (its default
dispatch, with enable_gqa), bfloat16, in GB/s of the K and V bytes (the floor of the step).

Steady state: medians after warm-up (the cuDNN graph of each shape built in the warm-up).
Growing cache: a cache that grows by one key per call, as generation does, where every call
meets a new L_k: kiln's decode kernels need nothing per length, cuDNN builds a graph per
problem. Reported as the mean of single synchronized calls over consecutive lengths.

PyTorch is timed with CUDA events around batches of calls; kiln with the host clock around
batches that end in a synchronize (timers.py). Results:
benchmarks/results/gpu-sdpa-decode-<device>-<date>.{json,md}.

    PYTHONPATH=python python benchmarks/gpu/sdpa_decode.py [--quick] [--out-dir DIR]
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

import kiln.core as kx  # noqa: E402
from overhead import save_results  # noqa: E402
from timers import (  # noqa: E402
    guarded,
    kiln_from_torch,
    time_kiln,
    time_torch,
    torch_copy_bandwidth,
)

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

# (B, H_q, H_kv, L_q, L_k, D): Llama-style GQA at several cache lengths and batches, one
# multi-query step (L_q 4: speculative decoding) and plain multi-head attention.
SHAPES = [
    (1, 32, 8, 1, 4096, 128),
    (1, 32, 8, 1, 32768, 128),
    (4, 32, 8, 1, 32768, 128),
    (8, 32, 8, 1, 4096, 128),
    (4, 32, 8, 4, 32768, 128),
    (1, 32, 32, 1, 8192, 128),
    (4, 32, 8, 1, 32768, 64),
]
QUICK_SHAPES = [(1, 32, 8, 1, 4096, 128), (2, 32, 8, 1, 8192, 128)]


def steady(shape, rounds, res, work):
    B, Hq, Hk, Lq, Lk, D = shape
    name = f"B{B} H{Hq}/{Hk} Lq{Lq} Lk{Lk} D{D}"
    work[name] = 2 * 2 * B * Hk * Lk * D  # K and V bytes, bfloat16
    tq = torch.randn(B, Hq, Lq, D, device="cuda", dtype=torch.bfloat16)
    tk = torch.randn(B, Hk, Lk, D, device="cuda", dtype=torch.bfloat16)
    tv = torch.randn(B, Hk, Lk, D, device="cuda", dtype=torch.bfloat16)
    q, k, v = (kiln_from_torch(a) for a in (tq, tk, tv))
    scale = D**-0.5
    for label, backend in (
        ("kiln decode kernels", "kiln"),
        ("kiln cuDNN path", "cudnn"),
    ):
        kx.fast._set_sdpa_backend(backend)
        try:
            guarded(
                res,
                f"{name} | {label}",
                time_kiln,
                lambda: kx.fast.scaled_dot_product_attention(q, k, v, scale=scale),
                rounds,
            )
        finally:
            kx.fast._set_sdpa_backend(None)
    guarded(
        res,
        f"{name} | PyTorch",
        time_torch,
        lambda: F.scaled_dot_product_attention(
            tq, tk, tv, scale=scale, enable_gqa=True
        ),
        rounds,
    )


def growing(lengths, calls):
    """Mean seconds of one synchronized decode call at each of `calls` new cache lengths."""
    B, Hq, Hk, D = 1, 32, 8, 128
    cache = kx.random.normal((B, Hk, lengths + calls, D)).astype(kx.bfloat16)
    q = kx.random.normal((B, Hq, 1, D)).astype(kx.bfloat16)
    kx.eval(cache, q)
    out = {}
    for label, backend in (
        ("kiln decode kernels", "kiln"),
        ("kiln cuDNN path", "cudnn"),
    ):
        kx.fast._set_sdpa_backend(backend)
        try:
            times = []
            for n in range(lengths, lengths + calls):
                k = cache[:, :, :n]
                kx.eval(k)
                kx.synchronize()
                t0 = time.perf_counter()
                kx.eval(kx.fast.scaled_dot_product_attention(q, k, k, scale=D**-0.5))
                kx.synchronize()
                times.append(time.perf_counter() - t0)
            out[label] = statistics.mean(
                times[1:]
            )  # the first call may compile kiln's kernels
        finally:
            kx.fast._set_sdpa_backend(None)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two shapes, few rounds")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    if not kx.is_available(kx.gpu):
        sys.exit("sdpa_decode.py: no GPU is available to kiln")
    if torch is None or not torch.cuda.is_available():
        sys.exit("sdpa_decode.py: PyTorch with CUDA is needed for the peer")
    kx.set_default_device(kx.gpu)
    torch.manual_seed(0)
    rounds = 3 if args.quick else 11
    copy_bps = torch_copy_bandwidth(rounds, (1 << 28) if args.quick else (1 << 31))
    res, work = {}, {}
    for shape in QUICK_SHAPES if args.quick else SHAPES:
        steady(shape, rounds, res, work)
    grow_from, grow_calls = (4096, 4) if args.quick else (4096, 12)
    grow = growing(grow_from, grow_calls)

    date = datetime.date.today().isoformat()
    try:
        name = kx.device_info(kx.gpu).get("device_name", "gpu")
    except Exception:
        name = torch.cuda.get_device_name()
    rows = []
    for key, s in res.items():
        wl, impl = key.split(" | ")
        rows.append(
            {"workload": wl, "impl": impl, "seconds": s, "gbps": work[wl] / s / 1e9}
        )
    lines = [
        f"# Attention decode on {name}, {date}",
        "",
        f"PyTorch {torch.__version__}, kiln {kx.__version__}, bfloat16. Medians after warm-up; "
        "PyTorch timed with CUDA events, kiln with the host clock around synchronized batches. "
        f"GB/s of the K and V bytes; device copy (PyTorch, same run): {copy_bps / 1e9:.0f} GB/s.",
        "",
        "| workload | impl | time | GB/s | of copy |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workload']} | {r['impl']} | {r['seconds'] * 1e6:.1f} us | {r['gbps']:.0f} "
            f"| {r['gbps'] * 1e9 / copy_bps:.0%} |"
        )
    lines += [
        "",
        f"Growing cache (B1 H32/8 D128, L_k {grow_from} to {grow_from + grow_calls - 1}, one "
        "synchronized call per new length, mean):",
        "",
    ]
    for label, s in grow.items():
        lines.append(f"- {label}: {s * 1e3:.3f} ms per call")
    text = "\n".join(lines) + "\n"
    print(text)
    report = {
        "benchmark": "gpu sdpa decode",
        "date": date,
        "device_name": name,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "kiln": kx.__version__,
        "quick": args.quick,
        "copy_gb_per_s": copy_bps / 1e9,
        "rows": rows,
        "growing_cache_seconds_per_call": grow,
    }
    save_results(
        args.out_dir,
        "gpu-sdpa-decode" + ("-quick" if args.quick else ""),
        name,
        date,
        report,
        text,
    )


if __name__ == "__main__":
    main()
