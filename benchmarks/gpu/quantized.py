#!/usr/bin/env python3
"""Quantized matrix products on the GPU (issue 19): kiln's quantized_matmul against the
bfloat16 cuBLAS matmul of the same shape through PyTorch, the device copy bandwidth, and MLX's
CUDA build where it is installed, in the same run.

Workloads (bfloat16 activations, weights (N, K) quantized, x @ W.T):
- 4-bit affine, group 64: matvec at batch 1 and 8 on (4096, 4096), (14336, 4096) and
  (28672, 8192); GB/s on the bytes it must read (packed weights + scales + biases + x, and the
  output written) against the copy bandwidth (target: >= 85% at batch 1);
- mxfp4 and nvfp4 matvec at batch 1 on the same weights (target: >= 80% of copy);
- batch 512 and 4096 on (14336, 4096): TFLOP/s (2 M N K) against PyTorch's bf16 matmul of
  the same shape (target: at most 1.2x its time at 4096).

kiln and MLX are timed with the host clock around batches of calls that end in a
synchronize (each batch tens of milliseconds); PyTorch with CUDA events. Medians over rounds.
Results: benchmarks/results/gpu-quantized-<device>-<date>.{json,md}.

    PYTHONPATH=python python benchmarks/gpu/quantized.py [--quick] [--out-dir DIR]
"""

import argparse
import datetime
import json
import pathlib
import platform
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import numpy as np  # noqa: E402

import kiln.core as kx  # noqa: E402
import timers  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

try:
    import mlx.core as mlx

    if not (hasattr(mlx, "cuda") and mlx.cuda.is_available()):
        mlx = None
except Exception:
    mlx = None


def time_kiln(fn, rounds):
    return timers.time_lazy(kx.eval, kx.synchronize, fn, rounds, 0.03, 2000)


def time_mlx(fn, rounds):
    return timers.time_lazy(mlx.eval, mlx.synchronize, fn, rounds, 0.03, 2000)


def time_torch(fn, rounds):
    return timers.time_torch(fn, rounds, 0.03, 2000)


def copy_bandwidth(rounds, nbytes=1 << 30):
    if torch is not None:
        x = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        y = torch.empty_like(x)
        return 2 * nbytes / time_torch(lambda: y.copy_(x), rounds)
    x = kx.zeros((nbytes // 4,), kx.float32)
    kx.eval(x)
    return 2 * nbytes / time_kiln(lambda: x + 0, rounds)  # reads and writes nbytes


def bytes_read(N, K, M, bits, gs, mode):
    w = N * K * bits / 8
    groups = N * K // gs
    s = groups * (4 if mode == "affine" else 1)  # bf16 scale + bias, or one uint8 scale
    return w + s + M * K * 2 + M * N * 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args()
    rounds = 5 if args.quick else 15
    kx.set_default_device(kx.gpu)
    device = torch.cuda.get_device_name() if torch is not None else "gpu"
    copy_bw = copy_bandwidth(rounds)
    print(f"device {device}; copy bandwidth {copy_bw / 1e9:.0f} GB/s")
    rng = np.random.default_rng(0)
    shapes = [(4096, 4096), (14336, 4096)] + ([] if args.quick else [(28672, 8192)])
    cases = []
    for N, K in shapes:
        for mode, gs, bits, batches in [
            ("affine", 64, 4, [1, 8]),
            ("mxfp4", 32, 4, [1]),
            ("nvfp4", 16, 4, [1]),
        ]:
            for M in batches:
                cases.append((N, K, M, mode, gs, bits))
    for M in [512] + ([] if args.quick else [4096]):
        cases.append((14336, 4096, M, "affine", 64, 4))
    results = []
    for N, K, M, mode, gs, bits in cases:
        w = kx.array(rng.standard_normal((N, K), dtype=np.float32) * 0.02).astype(
            kx.bfloat16
        )
        q = kx.quantize(w, gs, bits, mode=mode)
        x = kx.array(rng.standard_normal((M, K), dtype=np.float32)).astype(kx.bfloat16)
        biases = q[2] if mode == "affine" else None
        kx.eval(q, x)
        del w
        row = {"N": N, "K": K, "M": M, "mode": mode, "group_size": gs, "bits": bits}
        t = time_kiln(
            lambda: kx.quantized_matmul(x, q[0], q[1], biases, True, gs, bits, mode),
            rounds,
        )
        row["kiln_s"] = t
        nbytes = bytes_read(N, K, M, bits, gs, mode)
        row["kiln_GBps"] = nbytes / t / 1e9
        row["kiln_copy_fraction"] = nbytes / t / copy_bw
        row["kiln_TFLOPs"] = 2 * M * N * K / t / 1e12
        if torch is not None:
            tw = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
            tx = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            tt = time_torch(lambda: tx @ tw.T, rounds)
            row["torch_bf16_s"] = tt
            row["kiln_over_torch_bf16"] = t / tt
            del tw, tx
        if mlx is not None:
            try:
                mw = mlx.array(
                    rng.standard_normal((N, K), dtype=np.float32) * 0.02
                ).astype(mlx.bfloat16)
                mq = mlx.quantize(mw, gs, bits, mode=mode)
                mxx = mlx.array(np.array(x.astype(kx.float32))).astype(mlx.bfloat16)
                mb = mq[2] if mode == "affine" else None
                mlx.eval(mq, mxx)
                tm = time_mlx(
                    lambda: mlx.quantized_matmul(
                        mxx, mq[0], mq[1], mb, True, gs, bits, mode
                    ),
                    rounds,
                )
                row["mlx_s"] = tm
                row["mlx_GBps"] = nbytes / tm / 1e9
            except Exception as e:
                print(f"  mlx skipped: {type(e).__name__}: {e}", file=sys.stderr)
        results.append(row)
        print(
            f"{mode:6s} N={N:5d} K={K:5d} M={M:4d}: kiln {t * 1e6:9.1f} us "
            f"{row['kiln_GBps']:7.0f} GB/s ({100 * row['kiln_copy_fraction']:.0f}% of copy) "
            f"{row['kiln_TFLOPs']:6.1f} TFLOP/s"
            + (
                f"; torch bf16 {row['torch_bf16_s'] * 1e6:9.1f} us"
                if "torch_bf16_s" in row
                else ""
            )
            + (f"; mlx {row['mlx_s'] * 1e6:9.1f} us" if "mlx_s" in row else "")
        )
    date = datetime.date.today().isoformat()
    slug = "".join(c if c.isalnum() else "-" for c in device.lower()).strip("-")
    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "device": device,
        "date": date,
        "host": platform.node(),
        "copy_GBps": copy_bw / 1e9,
        "torch": torch.__version__ if torch is not None else None,
        "mlx": mlx.__version__ if mlx is not None else None,
    }
    (out / f"gpu-quantized-{slug}-{date}.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=1)
    )
    lines = [
        f"# Quantized matmul on {device}, {date}",
        "",
        f"Copy bandwidth {copy_bw / 1e9:.0f} GB/s. Medians over {rounds} rounds.",
        "",
        "| mode | N | K | M | kiln us | GB/s | % copy | TFLOP/s | torch bf16 us | kiln/torch | mlx us |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['mode']} | {r['N']} | {r['K']} | {r['M']} | {r['kiln_s'] * 1e6:.1f} | "
            f"{r['kiln_GBps']:.0f} | {100 * r['kiln_copy_fraction']:.0f} | {r['kiln_TFLOPs']:.1f} | "
            f"{r.get('torch_bf16_s', float('nan')) * 1e6:.1f} | "
            f"{r.get('kiln_over_torch_bf16', float('nan')):.2f} | "
            f"{r.get('mlx_s', float('nan')) * 1e6:.1f} |"
        )
    (out / f"gpu-quantized-{slug}-{date}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
