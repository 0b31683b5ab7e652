#!/usr/bin/env python3
"""kiln.core.fast on the CPU (issue 17): each fused built-in against the same formula written
with kiln core ops (eager), against NumPy (forward, float32) and against PyTorch's CPU
functions when PyTorch is installed, in one run.

Workloads (float32 unless stated):
- rms_norm, layer_norm, softmax (last axis), cross_entropy on (2048, 4096), forward, and
  backward through vjp (the fused gradients against the gradients of the composition), plus
  rms_norm and softmax in bfloat16;
- rope on (1, 32, 1024, 128) (half-split, base 10000), forward;
- scaled_dot_product_attention B1 H8 L1024 D64, forward, no mask and causal.

GB/s counts the bytes each must move (inputs read and outputs written once; the backward
reads x and the cotangent and writes dx). Medians after warm-up; the implementations' repeats
alternate so that a busy, shared machine slows them alike. Writes
benchmarks/results/cpu-fast-<cpu>-<date>.{json,md}.

    PYTHONPATH=python python benchmarks/cpu/fast.py [--quick] [--out-dir DIR]
"""

import argparse
import datetime
import math
import os
import pathlib
import platform
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

import kiln.core as mx  # noqa: E402
from overhead import cpu_name, interleaved_medians, save_results  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the report says which peers ran
    torch = None

EPS = 1e-5


# ---------------------------------------------------------------- compositions (kiln ops)


def rms_ops(x, w):
    x32 = x.astype(mx.float32)
    y = x32 * mx.rsqrt(mx.mean(x32 * x32, axis=-1, keepdims=True) + EPS)
    return y.astype(x.dtype) * w


def layer_ops(x, w, b):
    mean = mx.mean(x, axis=-1, keepdims=True)
    var = mx.var(x, axis=-1, keepdims=True)
    return (x - mean) * mx.rsqrt(var + EPS) * w + b


def softmax_ops(x):
    x32 = x.astype(mx.float32)
    e = mx.exp(x32 - mx.max(x32, axis=-1, keepdims=True))
    return (e / mx.sum(e, axis=-1, keepdims=True)).astype(x.dtype)


def ce_ops(x, t):
    picked = mx.take_along_axis(x, mx.expand_dims(t, -1), axis=-1)[..., 0]
    return mx.logsumexp(x, axis=-1) - picked


def rope_ops(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return mx.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def sdpa_ops(q, k, v, scale, causal):
    s = (q * scale) @ mx.swapaxes(k, -1, -2)
    if causal:
        L = q.shape[-2]
        s = mx.where(mx.tril(mx.ones((L, L), dtype=mx.bool_)), s, -math.inf)
    return mx.softmax(s, axis=-1) @ v


# ---------------------------------------------------------------- NumPy (float32)


def np_rms(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def np_layer(x, w, b):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + EPS) * w + b


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_ce(x, t):
    m = x.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(axis=-1)) + m[..., 0]
    return lse - np.take_along_axis(x, t[:, None], axis=-1)[:, 0]


def np_rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def np_sdpa(q, k, v, scale, causal):
    s = (q * scale) @ np.swapaxes(k, -1, -2)
    if causal:
        L = q.shape[-2]
        s = np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)
    return np_softmax(s) @ v


# ---------------------------------------------------------------- workloads


def run(cases, repeats):
    return interleaved_medians(cases, repeats, warmup=2)


def rows_workloads(rows, n, repeats, dtype, numpy_peer):
    """{name: {impl: seconds}}, {name: bytes} for the row ops on (rows, n) of dtype."""
    tag = "" if dtype == mx.float32 else f" {dtype}".replace("kiln.core.", "")
    x = mx.random.normal((rows, n)).astype(dtype)
    w = (mx.random.uniform(shape=(n,)) + 0.5).astype(dtype)
    b = mx.random.normal((n,)).astype(dtype)
    g = mx.random.normal((rows, n)).astype(dtype)
    t = mx.random.randint(0, n, (rows,)).astype(mx.int32)
    gl = mx.ones((rows,), dtype=mx.float32)
    mx.eval(x, w, b, g, t, gl)
    elems, size = rows * n, dtype.size
    out, nbytes = {}, {}

    def add(name, cases, bytes_):
        out[name] = run(cases, repeats)
        nbytes[name] = bytes_

    vjp = lambda f, primals, cot: mx.eval(mx.vjp(f, primals, cot)[1])  # noqa: E731
    add(
        f"rms_norm fwd{tag}",
        {
            "kiln fast": (lambda: mx.eval(mx.fast.rms_norm(x, w, EPS)), 1),
            "kiln ops": (lambda: mx.eval(rms_ops(x, w)), 1),
        },
        2 * elems * size,
    )
    add(
        f"softmax fwd{tag}",
        {
            "kiln softmax": (lambda: mx.eval(mx.softmax(x, axis=-1)), 1),
            "kiln ops": (lambda: mx.eval(softmax_ops(x)), 1),
        },
        2 * elems * size,
    )
    add(
        f"rms_norm bwd{tag}",
        {
            "kiln fast": (
                lambda: vjp(lambda a, c: mx.fast.rms_norm(a, c, EPS), [x, w], [g]),
                1,
            ),
            "kiln ops": (lambda: vjp(rms_ops, [x, w], [g]), 1),
        },
        3 * elems * size,
    )
    add(
        f"softmax bwd{tag}",
        {
            "kiln softmax": (
                lambda: vjp(lambda a: mx.softmax(a, axis=-1), [x], [g]),
                1,
            ),
            "kiln ops": (lambda: vjp(softmax_ops, [x], [g]), 1),
        },
        3 * elems * size,
    )
    if dtype != mx.float32:
        return out, nbytes
    add(
        "layer_norm fwd",
        {
            "kiln fast": (lambda: mx.eval(mx.fast.layer_norm(x, w, b, EPS)), 1),
            "kiln ops": (lambda: mx.eval(layer_ops(x, w, b)), 1),
        },
        2 * elems * size,
    )
    add(
        "cross_entropy fwd",
        {
            "kiln fast": (lambda: mx.eval(mx.fast.cross_entropy(x, t)), 1),
            "kiln ops": (lambda: mx.eval(ce_ops(x, t)), 1),
        },
        elems * size,
    )
    add(
        "layer_norm bwd",
        {
            "kiln fast": (
                lambda: vjp(
                    lambda a, c, d: mx.fast.layer_norm(a, c, d, EPS), [x, w, b], [g]
                ),
                1,
            ),
            "kiln ops": (lambda: vjp(layer_ops, [x, w, b], [g]), 1),
        },
        3 * elems * size,
    )
    add(
        "cross_entropy bwd",
        {
            "kiln fast": (
                lambda: vjp(lambda a: mx.fast.cross_entropy(a, t), [x], [gl]),
                1,
            ),
            "kiln ops": (lambda: vjp(lambda a: ce_ops(a, t), [x], [gl]), 1),
        },
        2 * elems * size,
    )
    if numpy_peer:
        xn, wn, bn, tn = np.array(x), np.array(w), np.array(b), np.array(t)
        for name, fn in (
            ("rms_norm fwd", lambda: np_rms(xn, wn)),
            ("layer_norm fwd", lambda: np_layer(xn, wn, bn)),
            ("softmax fwd", lambda: np_softmax(xn)),
            ("cross_entropy fwd", lambda: np_ce(xn, tn)),
        ):
            out[name].update(run({"NumPy": (fn, 1)}, repeats))
    if torch is not None:
        tx, tw, tb = (torch.from_numpy(np.array(a)) for a in (x, w, b))
        tt = torch.from_numpy(np.array(t)).long()
        for name, fn in (
            ("rms_norm fwd", lambda: F.rms_norm(tx, (n,), tw, EPS)),
            ("layer_norm fwd", lambda: F.layer_norm(tx, (n,), tw, tb, EPS)),
            ("softmax fwd", lambda: torch.softmax(tx, dim=-1)),
            ("cross_entropy fwd", lambda: F.cross_entropy(tx, tt, reduction="none")),
        ):
            out[name].update(run({"PyTorch CPU": (fn, 1)}, repeats))
    return out, nbytes


def rope_workload(repeats, numpy_peer):
    shape, dims, base = (1, 32, 1024, 128), 128, 10000.0
    x = mx.random.normal(shape)
    inv = base ** (-np.arange(0, dims, 2, dtype=np.float64) / dims)
    ang = np.arange(shape[2])[:, None] * inv[None, :]
    cos, sin = mx.array(np.cos(ang), dtype=mx.float32), mx.array(
        np.sin(ang), dtype=mx.float32
    )
    mx.eval(x, cos, sin)
    cases = {
        "kiln fast": (
            lambda: mx.eval(
                mx.fast.rope(x, dims, traditional=False, base=base, scale=1.0, offset=0)
            ),
            1,
        ),
        "kiln ops": (lambda: mx.eval(rope_ops(x, cos, sin)), 1),
    }
    if numpy_peer:
        xn, cn, sn = np.array(x), np.array(cos), np.array(sin)
        cases["NumPy"] = (lambda: np_rope(xn, cn, sn), 1)
    return run(cases, repeats), 2 * x.size * 4


def sdpa_workloads(repeats, numpy_peer):
    B, H, L, D = 1, 8, 1024, 64
    q, k, v = (mx.random.normal((B, H, L, D)) for _ in range(3))
    mx.eval(q, k, v)
    scale = 1 / math.sqrt(D)
    out, flops = {}, {}
    for causal in (False, True):
        name = "sdpa fwd" + (" causal" if causal else "")
        mask = "causal" if causal else None
        cases = {
            "kiln fast": (
                lambda m=mask: mx.eval(
                    mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=m)
                ),
                1,
            ),
            "kiln ops": (lambda c=causal: mx.eval(sdpa_ops(q, k, v, scale, c)), 1),
        }
        if numpy_peer:
            qn, kn, vn = np.array(q), np.array(k), np.array(v)
            cases["NumPy"] = (lambda c=causal: np_sdpa(qn, kn, vn, scale, c), 1)
        if torch is not None:
            tq, tk, tv = (torch.from_numpy(np.array(a)) for a in (q, k, v))
            cases["PyTorch CPU"] = (
                lambda c=causal: F.scaled_dot_product_attention(
                    tq, tk, tv, is_causal=c
                ),
                1,
            )
        out[name] = run(cases, repeats)
        flops[name] = 4 * B * H * L * L * D / (2 if causal else 1)
    return out, flops


def fmt_time(s):
    return (
        f"{s * 1e6:.1f} µs"
        if s < 1e-3
        else (f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s")
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    mx.set_default_device(mx.cpu)
    rows, n = (256, 1024) if args.quick else (2048, 4096)
    repeats = 3 if args.quick else 9
    load_before = os.getloadavg()[0]

    seconds, nbytes = rows_workloads(rows, n, repeats, mx.float32, True)
    s16, b16 = rows_workloads(rows, n, repeats, mx.bfloat16, False)
    seconds.update(s16)
    nbytes.update(b16)
    seconds["rope fwd (1, 32, 1024, 128)"], nbytes["rope fwd (1, 32, 1024, 128)"] = (
        rope_workload(repeats, True)
    )
    sdpa, flops = sdpa_workloads(repeats, True)
    seconds.update(sdpa)

    date = datetime.date.today().isoformat()
    cpu = cpu_name()
    checks = []
    for name, res in seconds.items():
        fused = next(k for k in res if k.startswith("kiln") and k != "kiln ops")
        for peer, t in res.items():
            if peer == fused:
                continue
            checks.append(
                {
                    "name": f"{name}: {peer} / {fused}",
                    "ratio": t / res[fused],
                    "target": "> 1",
                    "met": t > res[fused],
                }
            )
    report = {
        "benchmark": "cpu fast",
        "date": date,
        "cpu": cpu,
        "threads": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__ if torch is not None else None,
        "kiln": mx.__version__,
        "quick": args.quick,
        "rows_shape": [rows, n],
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "seconds": seconds,
        "bytes": nbytes,
        "flops": flops,
        "checks": checks,
    }
    lines = [
        f"# kiln.core.fast on the CPU, {date}",
        "",
        f"CPU: {cpu} ({os.cpu_count()} logical CPUs; load average {load_before:.1f} before, "
        f"{report['load_after']:.1f} after); NumPy {np.__version__}; PyTorch "
        f"{torch.__version__ if torch is not None else 'not installed'}; kiln {mx.__version__}. "
        f"Row ops on ({rows}, {n}); medians after warm-up, implementations interleaved. "
        "'kiln ops' is the same formula in kiln core ops (eager); backward = vjp.",
        "",
        "| workload | impl | time | rate |",
        "|---|---|---:|---:|",
    ]
    for name, res in seconds.items():
        for impl, t in res.items():
            if name in flops:
                rate = f"{flops[name] / t / 1e9:.1f} GFLOP/s"
            else:
                rate = f"{nbytes[name] / t / 1e9:.2f} GB/s"
            lines.append(f"| {name} | {impl} | {fmt_time(t)} | {rate} |")
    lines += ["", "| check | ratio | met |", "|---|---:|---|"]
    for c in checks:
        lines.append(
            f"| {c['name']} | {c['ratio']:.2f} | {'yes' if c['met'] else 'no'} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    save_results(args.out_dir, "cpu-fast", cpu, date, report, text)


if __name__ == "__main__":
    main()
