#!/usr/bin/env python3
"""Linear algebra, FFT and convolution: kiln against PyTorch (and NumPy/SciPy on the CPU),
same device, same run.

Workloads (issue 15):
  - conv2d forward + backward (input and weight gradients) of ResNet-50's convolution layers,
    batch 32, NHWC, bfloat16 and float32 (TF32 off on both sides);
  - fft of 2^24 complex64 values; batched rfft of a (4096, 4096) float32 array;
  - cholesky, solve and svd of a batch of 64x64 float32 matrices and of one 4096x4096.

Medians after warm-up; each timed call ends with the result on the device (kiln: eval;
PyTorch: torch.cuda.synchronize). Writes benchmarks/results/linalg-fft-conv-<device>-<date>
.{json,md}. With --device cpu the same workloads run on the CPU at sizes a CPU finishes
(benchmarks/cpu/linalg_fft_conv.py).

    python benchmarks/gpu/linalg_fft_conv.py [--device gpu|cpu] [--quick] [--out-dir DIR]
"""

import argparse
import datetime
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

import kiln.core as mx  # noqa: E402
from overhead import cpu_name, save_results  # noqa: E402

# ResNet-50 (v1.5) convolutions: (name, H=W of the input, C_in, C_out, kernel, stride).
RESNET50 = [
    ("conv1 7x7/2", 224, 3, 64, 7, 2),
    ("l1 1x1 64-64", 56, 64, 64, 1, 1),
    ("l1 3x3 64-64", 56, 64, 64, 3, 1),
    ("l1 1x1 64-256", 56, 64, 256, 1, 1),
    ("l1 1x1 256-64", 56, 256, 64, 1, 1),
    ("l2 3x3/2 128", 56, 128, 128, 3, 2),
    ("l2 3x3 128", 28, 128, 128, 3, 1),
    ("l2 1x1 128-512", 28, 128, 512, 1, 1),
    ("l3 3x3/2 256", 28, 256, 256, 3, 2),
    ("l3 3x3 256", 14, 256, 256, 3, 1),
    ("l3 1x1 256-1024", 14, 256, 1024, 1, 1),
    ("l4 3x3/2 512", 14, 512, 512, 3, 2),
    ("l4 3x3 512", 7, 512, 512, 3, 1),
    ("l4 1x1 512-2048", 7, 512, 2048, 1, 1),
]


def median_time(fn, warmup, repeats):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def kiln_cases(device, quick):
    """{name: callable} of kiln workloads (each evaluates its result)."""
    rng = np.random.default_rng(0)
    cases = {}
    gpu = device == mx.gpu
    batch = 8 if quick else (32 if gpu else 4)
    layers = RESNET50[:3] if quick else RESNET50
    dtypes = [mx.bfloat16, mx.float32] if gpu else [mx.float32]
    for dt in dtypes:
        for name, hw, ci, co, k, st in layers:
            if not gpu and hw > 56:
                continue
            pad = k // 2
            x = mx.array(rng.standard_normal((batch, hw, hw, ci), dtype=np.float32)).astype(dt)
            w = mx.array(rng.standard_normal((co, k, k, ci), dtype=np.float32) * 0.05).astype(dt)
            y = mx.conv2d(x, w, stride=st, padding=pad)
            dy = mx.ones_like(y)
            mx.eval(x, w, dy)

            def run(x=x, w=w, dy=dy, st=st, pad=pad):
                out, grads = mx.vjp(lambda a, b: mx.conv2d(a, b, stride=st, padding=pad), [x, w], [dy])
                mx.eval(out, *grads)

            cases[f"conv2d fwd+bwd {name} {str(dt).split('.')[-1]} N={batch}"] = (run, ("conv", name, hw, ci, co, k, st, pad, dt, batch))
    n = 1 << (16 if quick else (24 if gpu else 22))
    z = mx.array((rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64))
    cases[f"fft 2^{n.bit_length() - 1} complex64"] = (lambda: mx.eval(mx.fft.fft(z)), ("fft", n))
    side = 256 if quick else (4096 if gpu else 2048)
    r = mx.array(rng.standard_normal((side, side), dtype=np.float32))
    cases[f"rfft batched ({side}, {side}) float32"] = (lambda: mx.eval(mx.fft.rfft(r)), ("rfft", side))
    bsz, big = (64, 256) if quick else ((512, 4096) if gpu else (64, 1024))
    a = rng.standard_normal((bsz, 64, 64), dtype=np.float32)
    spd = mx.array(a @ np.swapaxes(a, -1, -2) + 64 * np.eye(64, dtype=np.float32))
    b = mx.array(rng.standard_normal((bsz, 64, 1), dtype=np.float32))
    g = rng.standard_normal((big, big), dtype=np.float32)
    spd_big = mx.array(g @ g.T / big + np.eye(big, dtype=np.float32))
    b_big = mx.array(rng.standard_normal((big, 1), dtype=np.float32))
    A_big = mx.array(g)
    mx.eval(spd, b, spd_big, b_big, A_big)
    cases[f"cholesky {bsz}x64x64"] = (lambda: mx.eval(mx.linalg.cholesky(spd)), ("cholesky", spd))
    cases[f"solve {bsz}x64x64"] = (lambda: mx.eval(mx.linalg.solve(spd, b)), ("solve", spd, b))
    cases[f"svd {bsz}x64x64"] = (lambda: mx.eval(*mx.linalg.svd(spd)), ("svd", spd))
    cases[f"cholesky {big}x{big}"] = (lambda: mx.eval(mx.linalg.cholesky(spd_big)), ("cholesky", spd_big))
    cases[f"solve {big}x{big}"] = (lambda: mx.eval(mx.linalg.solve(spd_big, b_big)), ("solve", spd_big, b_big))
    cases[f"svd {big}x{big}"] = (lambda: mx.eval(*mx.linalg.svd(A_big)), ("svd", A_big))
    return cases


def torch_case(torch, tdev, spec):
    """The PyTorch counterpart of a kiln case (None when not comparable)."""
    sync = (lambda: torch.cuda.synchronize()) if tdev == "cuda" else (lambda: None)
    kind = spec[0]
    if kind == "conv":
        _, _, hw, ci, co, k, st, pad, dt, batch = spec
        tdt = {mx.bfloat16: torch.bfloat16, mx.float32: torch.float32}[dt]
        x = torch.randn(batch, ci, hw, hw, device=tdev, dtype=tdt).to(memory_format=torch.channels_last)
        w = (0.05 * torch.randn(co, ci, k, k, device=tdev, dtype=tdt)).to(memory_format=torch.channels_last)
        x.requires_grad_(True)
        w.requires_grad_(True)

        def run():
            y = torch.nn.functional.conv2d(x, w, stride=st, padding=pad)
            gx, gw = torch.autograd.grad(y, (x, w), torch.ones_like(y))
            sync()

        return run
    if kind == "fft":
        z = torch.randn(spec[1], dtype=torch.complex64, device=tdev)
        return lambda: (torch.fft.fft(z), sync())
    if kind == "rfft":
        r = torch.randn(spec[1], spec[1], device=tdev)
        return lambda: (torch.fft.rfft(r), sync())
    arrays = [torch.from_numpy(np.array(v)).to(tdev) for v in spec[1:]]
    if kind == "cholesky":
        return lambda: (torch.linalg.cholesky(arrays[0]), sync())
    if kind == "solve":
        return lambda: (torch.linalg.solve(arrays[0], arrays[1]), sync())
    if kind == "svd":
        return lambda: (torch.linalg.svd(arrays[0]), sync())
    return None


def numpy_case(spec):
    kind = spec[0]
    if kind == "fft":
        z = np.random.default_rng(1).standard_normal(spec[1]).astype(np.complex64)
        return lambda: np.fft.fft(z)
    if kind == "rfft":
        r = np.random.default_rng(1).standard_normal((spec[1], spec[1]), dtype=np.float32)
        return lambda: np.fft.rfft(r)
    arrays = [np.array(v) for v in spec[1:]] if kind != "conv" else []
    if kind == "cholesky":
        return lambda: np.linalg.cholesky(arrays[0])
    if kind == "solve":
        return lambda: np.linalg.solve(arrays[0], arrays[1])
    if kind == "svd":
        return lambda: np.linalg.svd(arrays[0])
    return None


def main(default_device="gpu"):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["gpu", "cpu"], default=default_device)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    device = mx.gpu if args.device == "gpu" else mx.cpu
    if device == mx.gpu and not mx.is_available(mx.gpu):
        sys.exit("linalg_fft_conv.py: no GPU is available to kiln")
    mx.set_default_device(device)
    warmup, repeats = (1, 3) if args.quick else (3, 11)
    try:
        import torch

        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        tdev = "cuda" if device == mx.gpu else "cpu"
        if tdev == "cuda" and not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None
    rows = []
    for name, (fn, spec) in kiln_cases(device, args.quick).items():
        big = name.startswith("svd") and ("4096" in name or "1024" in name)
        reps, warm = (3, 1) if big else (repeats, warmup)
        row = {"workload": name, "kiln_seconds": median_time(fn, warm, reps)}
        if torch is not None:
            try:
                t = torch_case(torch, tdev, spec)
                if t is not None:
                    row["torch_seconds"] = median_time(t, warm, reps)
            except Exception as e:  # a peer failing is reported, not fatal
                row["torch_error"] = str(e)[:200]
        if device == mx.cpu:
            n = numpy_case(spec)
            if n is not None:
                row["numpy_seconds"] = median_time(n, warm, reps)
        rows.append(row)
        print(name, {k: (f"{v * 1e3:.3f} ms" if isinstance(v, float) else v) for k, v in row.items() if k != "workload"})
    date = datetime.date.today().isoformat()
    dev_name = mx.device_info(mx.gpu).get("device_name", "gpu") if device == mx.gpu else cpu_name()
    report = {
        "benchmark": "linalg fft conv",
        "date": date,
        "device": args.device,
        "device_name": dev_name,
        "python": platform.python_version(),
        "torch": getattr(torch, "__version__", None) if torch is not None else None,
        "numpy": np.__version__,
        "kiln": mx.__version__,
        "quick": args.quick,
        "rows": rows,
    }
    peers = ["torch_seconds"] + (["numpy_seconds"] if device == mx.cpu else [])
    lines = [f"# Linear algebra, FFT and convolution ({args.device}), {date}", "",
             f"Device: {dev_name}; kiln {mx.__version__}, PyTorch {report['torch'] or 'not installed'}, "
             f"NumPy {np.__version__}. Medians after warm-up; ratio = peer time / kiln time (above 1: kiln faster).",
             "", "| workload | kiln | " + " | ".join(p.split("_")[0] for p in peers) + " |",
             "|---|---:|" + "---:|" * len(peers)]
    for r in rows:
        cells = [f"{r['kiln_seconds'] * 1e3:.3f} ms"]
        for p in peers:
            v = r.get(p)
            cells.append(f"{v * 1e3:.3f} ms ({v / r['kiln_seconds']:.2f}x)" if v else "-")
        lines.append(f"| {r['workload']} | " + " | ".join(cells) + " |")
    save_results(args.out_dir, "linalg-fft-conv", dev_name, date, report, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
