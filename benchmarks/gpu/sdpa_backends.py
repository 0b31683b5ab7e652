#!/usr/bin/env python3
"""scaled_dot_product_attention backends on the GPU (issue 17): kiln's own kernels, kiln's
cuDNN path (KILN_SDPA_BACKEND=cudnn) and PyTorch's F.scaled_dot_product_attention with its cuDNN
and flash backends, at the LLM demo's attention shape (B32 H12 L512 D64, causal, bfloat16),
forward and forward + backward (dq, dk, dv).

PyTorch is timed with CUDA events around batches of calls; kiln (whose streams Python cannot
record events on) with the host clock around batches that end in a synchronize, each batch
long enough (tens of milliseconds) that the host's share is negligible. Medians over rounds
after warm-up. The report says whether the cuDNN path really ran (kiln's counters) and how far
its outputs are from kiln's kernels'. Results: benchmarks/results/gpu-sdpa-<device>-<date>.{json,md}.

    PYTHONPATH=python python benchmarks/gpu/sdpa_backends.py [--quick] [--shape B,H,L,D]
        [--no-causal] [--out-dir DIR]
"""

import argparse
import datetime
import pathlib
import platform
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

import numpy as np  # noqa: E402

import kiln.core as kx  # noqa: E402
from overhead import save_results  # noqa: E402
from timers import guarded, kiln_from_torch, time_kiln, time_torch  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds")
    parser.add_argument("--shape", default="32,12,512,64", help="B,H,L,D")
    parser.add_argument("--no-causal", action="store_true")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    if not kx.is_available(kx.gpu):
        sys.exit("sdpa_backends.py: no GPU is available to kiln")
    if torch is None or not torch.cuda.is_available():
        sys.exit("sdpa_backends.py: PyTorch with CUDA is needed for the peers")
    kx.set_default_device(kx.gpu)
    rounds = 3 if args.quick else 11
    B, H, L, D = (int(x) for x in args.shape.split(","))
    causal = not args.no_causal
    mask = "causal" if causal else None
    scale = D**-0.5
    status = kx.fast._sdpa_cudnn_status()
    print(f"kiln cuDNN path: {'available' if not status else status}", file=sys.stderr)

    torch.manual_seed(0)
    tq, tk, tv, tg = (
        torch.randn(B, H, L, D, device="cuda", dtype=torch.bfloat16) for _ in range(4)
    )
    q, k, v, g = (kiln_from_torch(a) for a in (tq, tk, tv, tg))
    kx.eval(q, k, v, g)

    def kiln_fwd():
        return [kx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=mask)]

    def kiln_fwd_bwd():
        outs, grads = kx.vjp(
            lambda a, b, c: kx.fast.scaled_dot_product_attention(
                a, b, c, scale=scale, mask=mask
            ),
            [q, k, v],
            [g],
        )
        return list(outs) + list(grads)

    shape = f"B{B} H{H} L{L} D{D}{' causal' if causal else ''} bf16"
    flops_fwd = 4 * B * H * L * L * D / (2 if causal else 1)
    work = {f"fwd {shape}": flops_fwd, f"fwd+bwd {shape}": 3.5 * flops_fwd}
    seconds = {}
    notes = {}
    reference = None
    for label, backend in (("kiln kernels", "kiln"), ("kiln cuDNN path", "cudnn")):
        kx.fast._set_sdpa_backend(backend)
        try:
            before = kx.fast._sdpa_cudnn_counts()
            out = kiln_fwd_bwd()
            kx.eval(out)
            after = kx.fast._sdpa_cudnn_counts()
            ran = {k_: after[k_] - before[k_] for k_ in ("forward", "backward")}
            vals = [np.array(a.astype(kx.float32)) for a in out]
            if reference is None:
                reference = vals
            else:
                diffs = [float(np.max(np.abs(a - b))) for a, b in zip(vals, reference)]
                notes["max |cuDNN path - kiln kernels| (o, dq, dk, dv)"] = diffs
            notes[f"{label}: cuDNN served forward, backward"] = [
                ran["forward"],
                ran["backward"],
            ]
            guarded(seconds, f"fwd {shape} | {label}", time_kiln, kiln_fwd, rounds)
            guarded(
                seconds, f"fwd+bwd {shape} | {label}", time_kiln, kiln_fwd_bwd, rounds
            )
        finally:
            kx.fast._set_sdpa_backend(None)

    from torch.nn.attention import SDPBackend, sdpa_kernel

    tqr, tkr, tvr = (a.detach().requires_grad_() for a in (tq, tk, tv))
    for label, backend in (
        ("PyTorch cuDNN", SDPBackend.CUDNN_ATTENTION),
        ("PyTorch flash", SDPBackend.FLASH_ATTENTION),
    ):

        def t_fwd(backend=backend):
            with sdpa_kernel(backend), torch.no_grad():
                return F.scaled_dot_product_attention(
                    tq, tk, tv, is_causal=causal, scale=scale
                )

        def t_fwd_bwd(backend=backend):
            with sdpa_kernel(backend):
                o = F.scaled_dot_product_attention(
                    tqr, tkr, tvr, is_causal=causal, scale=scale
                )
            return torch.autograd.grad(o, [tqr, tkr, tvr], tg)

        guarded(seconds, f"fwd {shape} | {label}", time_torch, t_fwd, rounds)
        guarded(seconds, f"fwd+bwd {shape} | {label}", time_torch, t_fwd_bwd, rounds)

    rows = []
    for key, s in seconds.items():
        wl, impl = key.split(" | ")
        rows.append(
            {"workload": wl, "impl": impl, "seconds": s, "tflops": work[wl] / s / 1e12}
        )
    date = datetime.date.today().isoformat()
    try:
        name = kx.device_info(kx.gpu).get("device_name", "gpu")
    except Exception:
        name = torch.cuda.get_device_name()
    report = {
        "benchmark": "gpu sdpa backends",
        "date": date,
        "device_name": name,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "kiln": kx.__version__,
        "quick": args.quick,
        "cudnn_path_status": status or "available",
        "rows": rows,
        "notes": notes,
    }
    lines = [
        f"# scaled_dot_product_attention backends on {name}, {date}",
        "",
        f"PyTorch {torch.__version__}, kiln {kx.__version__}; kiln's cuDNN path: "
        f"{status or 'available'}. Medians after warm-up; PyTorch timed with CUDA events, "
        "kiln with the host clock around synchronized batches. fwd+bwd counts 3.5 times the "
        "forward's FLOPs.",
        "",
        "| workload | impl | time | TFLOP/s |",
        "|---|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workload']} | {r['impl']} | {r['seconds'] * 1e3:.3f} ms | "
            f"{r['tflops']:.0f} |"
        )
    lines.append("")
    for k_, v_ in notes.items():
        lines.append(f"- {k_}: {v_}")
    text = "\n".join(lines) + "\n"
    print(text)
    save_results(
        args.out_dir,
        "gpu-sdpa" + ("-quick" if args.quick else ""),
        name,
        date,
        report,
        text,
    )


if __name__ == "__main__":
    main()
