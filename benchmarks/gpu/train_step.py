#!/usr/bin/env python3
"""One training step on the GPU (issue 20): kiln against PyTorch eager and torch.compile on the
same device in the same run.

A step is forward, loss, backward and the AdamW update with its parameter writes. Workloads:

- transformer: one pre-norm Llama-style block as an MLX user writes it with ``kiln.nn``
  (RMSNorm, multi-head causal attention through ``fast.scaled_dot_product_attention`` with
  separate q/k/v/o projections, RMSNorm, SwiGLU MLP of hidden width 2816, no biases), d_model
  1024, 16 heads, sequence 1024, batch 16, bfloat16 parameters and activations; loss = mean
  of the squares of the block's output (in float32). Tokens/s and model TFLOP/s.
- cnn: 4 x (Conv2d 3x3 padding 1 without bias + BatchNorm + ReLU), channels 3 -> 64 -> 128 ->
  128 -> 256 with a 2x2 max-pool after each of the first three, global average pool, Linear
  to 10 classes, cross-entropy against random labels; 64x64 images, batch 64, float32 and
  bfloat16. kiln's convolutions are channels-last (NHWC); PyTorch's model and input are put
  in torch.channels_last memory format so both run NHWC convolutions. Images/s.

Variants: kiln eager (``nn.value_and_grad`` + ``optim.AdamW.update`` + ``mx.eval`` of the
loss, the model and the optimizer state), kiln compiled (the whole step under
``partial(mx.compile, inputs=state, outputs=state)`` with ``state = [model.state,
optimizer.state]``), PyTorch eager (``torch.optim.AdamW``, its default foreach
implementation) and ``torch.compile`` of the model (loss, backward and optimizer eager). kiln's
AdamW runs with ``bias_correction=True`` (PyTorch's arithmetic); both use lr 1e-4, weight
decay 0.01. TF32 is off in both unless --tf32 (kiln's default; PyTorch's cuDNN default is on).

Timing: PyTorch with CUDA events around batches of steps; kiln with the host clock around
batches of steps (each step ends in ``mx.eval``, as a training loop does) closed by a
synchronize. Medians over rounds after warm-up steps (which include every compile; their
time is reported). The first-step loss of each variant is printed as a sanity check (same
magnitude across frameworks; the initializations differ). Results:
benchmarks/results/<device kind>-train-step-<device>-<date>.{json,md}.

    PYTHONPATH=python python benchmarks/gpu/train_step.py [--only transformer|cnn] [--tf32]
    PYTHONPATH=python python benchmarks/gpu/train_step.py --quick --device cpu  # a smoke run
"""

import argparse
import datetime
import gc
import os
import pathlib
import platform
import statistics
import sys
import time
from functools import partial

ROOT = pathlib.Path(__file__).resolve().parents[2]
# This tree's kiln first when it is built here; otherwise the one PYTHONPATH names.
if any((ROOT / "python" / "kiln").glob("_core*")):
    sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

if "--tf32" in sys.argv:  # kiln reads it at its first float32 matmul or convolution
    os.environ["KILN_MATMUL_TF32"] = "1"

import numpy as np  # noqa: E402

import kiln.core as mx  # noqa: E402
import kiln.nn as nn  # noqa: E402
import kiln.optimizers as optim  # noqa: E402
from overhead import cpu_name, save_results  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the report says the PyTorch rows were skipped
    torch = None

LR, WEIGHT_DECAY = 1e-4, 0.01


def _err(e):
    return f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"


# ---------------------------------------------------------------- the models, kiln


class KilnBlock(nn.Module):
    def __init__(self, dims, heads, hidden):
        super().__init__()
        self.heads = heads
        self.attention_norm = nn.RMSNorm(dims, eps=1e-5)
        self.wq = nn.Linear(dims, dims, bias=False)
        self.wk = nn.Linear(dims, dims, bias=False)
        self.wv = nn.Linear(dims, dims, bias=False)
        self.wo = nn.Linear(dims, dims, bias=False)
        self.mlp_norm = nn.RMSNorm(dims, eps=1e-5)
        self.w1 = nn.Linear(dims, hidden, bias=False)
        self.w3 = nn.Linear(dims, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dims, bias=False)

    def __call__(self, x):
        B, L, D = x.shape
        h = self.attention_norm(x)
        q, k, v = (
            p(h).reshape(B, L, self.heads, -1).transpose(0, 2, 1, 3)
            for p in (self.wq, self.wk, self.wv)
        )
        o = mx.fast.scaled_dot_product_attention(
            q, k, v, scale=q.shape[-1] ** -0.5, mask="causal"
        )
        x = x + self.wo(o.transpose(0, 2, 1, 3).reshape(B, L, D))
        h = self.mlp_norm(x)
        return x + self.w2(nn.silu(self.w1(h)) * self.w3(h))


def kiln_block_loss(model, x):
    return mx.mean(mx.square(model(x).astype(mx.float32)))


class KilnCNN(nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.convs = [
            nn.Conv2d(a, b, 3, padding=1, bias=False)
            for a, b in zip(channels[:-1], channels[1:])
        ]
        self.norms = [nn.BatchNorm(b) for b in channels[1:]]
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(channels[-1], classes)

    def __call__(self, x):  # x: (N, H, W, C)
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            x = nn.relu(norm(conv(x)))
            if i < len(self.convs) - 1:
                x = self.pool(x)
        return self.head(mx.mean(x, axis=(1, 2)))


def kiln_cnn_loss(model, x, y):
    logits = model(x).astype(mx.float32)
    return nn.losses.cross_entropy(logits, y, reduction="mean")


# ---------------------------------------------------------------- the models, PyTorch


def torch_models():
    """The PyTorch classes (defined once torch is known to be importable)."""

    class RMSNorm(torch.nn.Module):  # torch.nn.RMSNorm where it exists (torch >= 2.4)
        def __init__(self, dims, eps):
            super().__init__()
            self.eps = eps
            self.weight = torch.nn.Parameter(torch.ones(dims))

        def forward(self, x):
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)

    norm = (
        (lambda d: torch.nn.RMSNorm(d, eps=1e-5))
        if hasattr(torch.nn, "RMSNorm")
        else (lambda d: RMSNorm(d, 1e-5))
    )

    class TorchBlock(torch.nn.Module):
        def __init__(self, dims, heads, hidden):
            super().__init__()
            self.heads = heads
            self.attention_norm = norm(dims)
            self.wq = torch.nn.Linear(dims, dims, bias=False)
            self.wk = torch.nn.Linear(dims, dims, bias=False)
            self.wv = torch.nn.Linear(dims, dims, bias=False)
            self.wo = torch.nn.Linear(dims, dims, bias=False)
            self.mlp_norm = norm(dims)
            self.w1 = torch.nn.Linear(dims, hidden, bias=False)
            self.w3 = torch.nn.Linear(dims, hidden, bias=False)
            self.w2 = torch.nn.Linear(hidden, dims, bias=False)

        def forward(self, x):
            B, L, D = x.shape
            h = self.attention_norm(x)
            q, k, v = (
                p(h).view(B, L, self.heads, -1).transpose(1, 2)
                for p in (self.wq, self.wk, self.wv)
            )
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.wo(o.transpose(1, 2).reshape(B, L, D))
            h = self.mlp_norm(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    class TorchCNN(torch.nn.Module):
        def __init__(self, channels, classes):
            super().__init__()
            self.convs = torch.nn.ModuleList(
                torch.nn.Conv2d(a, b, 3, padding=1, bias=False)
                for a, b in zip(channels[:-1], channels[1:])
            )
            self.norms = torch.nn.ModuleList(
                torch.nn.BatchNorm2d(b) for b in channels[1:]
            )
            self.pool = torch.nn.MaxPool2d(2)
            self.head = torch.nn.Linear(channels[-1], classes)

        def forward(self, x):  # x: (N, C, H, W) in channels_last memory format
            for i, (conv, bn) in enumerate(zip(self.convs, self.norms)):
                x = F.relu(bn(conv(x)))
                if i < len(self.convs) - 1:
                    x = self.pool(x)
            return self.head(x.mean((2, 3)))

    return TorchBlock, TorchCNN


def torch_block_loss(model, x):
    return model(x).float().square().mean()


def torch_cnn_loss(model, x, y):
    return F.cross_entropy(model(x).float(), y)


# ---------------------------------------------------------------- timers


def time_steps(run, sync, warmup, steps, rounds, events=False):
    """Runs `run` (one training step, returning the loss) `warmup` times, then `rounds`
    batches of `steps` steps, each batch closed by `sync()`. Returns (median seconds per
    step, first-step loss, warm-up seconds). With `events`, CUDA events time the batches.
    """
    t0 = time.perf_counter()
    first = float(run().item())
    for _ in range(warmup - 1):
        run()
    sync()
    warm = time.perf_counter() - t0
    times = []
    if events:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
    for _ in range(rounds):
        if events:
            start.record()
        else:
            t = time.perf_counter()
        for _ in range(steps):
            run()
        if events:
            end.record()
            sync()
            times.append(start.elapsed_time(end) / 1e3 / steps)
        else:
            sync()
            times.append((time.perf_counter() - t) / steps)
    return statistics.median(times), first, warm


def release():
    gc.collect()
    mx.clear_cache()
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


# ---------------------------------------------------------------- variants


def kiln_variant(model, loss_fn, batch, compiled, cfg):
    """Times the kiln training step of `model` on `batch` (a tuple of arrays)."""
    opt = optim.AdamW(learning_rate=LR, weight_decay=WEIGHT_DECAY, bias_correction=True)
    opt.init(model.trainable_parameters())
    mx.eval(model.state, opt.state)
    loss_and_grad = nn.value_and_grad(model, loss_fn)

    def step(*batch):
        loss, grads = loss_and_grad(model, *batch)
        opt.update(model, grads)
        return loss

    state = [model.state, opt.state]
    if compiled:
        step = partial(mx.compile, inputs=state, outputs=state)(step)

    def run():
        loss = step(*batch)
        mx.eval(loss, state)
        return loss

    return time_steps(run, mx.synchronize, **cfg)


def torch_variant(model, loss_fn, batch, compiled, cfg):
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    fwd = torch.compile(model) if compiled else model

    def run():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(fwd, *batch)
        loss.backward()
        opt.step()
        return loss

    cuda = batch[0].is_cuda
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    return time_steps(run, sync, events=cuda, **cfg)


def run_variants(workload, make_kiln, make_torch, cfg, args, torch_dev):
    """{impl: result dict} for the four variants of one workload."""
    out = {}
    plans = [("kiln eager", "kiln", False), ("kiln compiled", "kiln", True)]
    if torch is not None:
        plans += [("PyTorch eager", "torch", False)]
        if args.torch_compile:
            plans += [("torch.compile", "torch", True)]
    for impl, fw, compiled in plans:
        print(f"[{workload}] {impl} ...", file=sys.stderr, flush=True)
        try:
            if fw == "kiln":
                model, loss_fn, batch = make_kiln()
                s, first, warm = kiln_variant(model, loss_fn, batch, compiled, cfg)
            else:
                model, loss_fn, batch = make_torch(torch_dev)
                s, first, warm = torch_variant(model, loss_fn, batch, compiled, cfg)
            out[impl] = {"seconds": s, "first_loss": first, "warmup_seconds": warm}
            print(
                f"[{workload}] {impl}: {s * 1e3:.3f} ms/step, first-step loss "
                f"{first:.4f}, warm-up {warm:.1f} s",
                file=sys.stderr,
                flush=True,
            )
        except Exception as e:  # a backend or compiler that cannot run this model
            out[impl] = {"error": _err(e)}
            print(f"[{workload}] {impl}: FAILED {_err(e)}", file=sys.stderr, flush=True)
        finally:
            model = loss_fn = batch = None
            release()
    return out


def transformer(cfg, args, torch_dev):
    B, L, D, H, hidden = (
        (2, 32, 64, 4, 176) if args.quick else (16, 1024, 1024, 16, 2816)
    )
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((B, L, D), dtype=np.float32)

    def make_kiln():
        model = KilnBlock(D, H, hidden)
        model.set_dtype(mx.bfloat16)
        x = mx.array(x_np).astype(mx.bfloat16)
        return model, kiln_block_loss, (x,)

    def make_torch(dev):
        TorchBlock, _ = torch_models()
        model = TorchBlock(D, H, hidden).to(device=dev, dtype=torch.bfloat16)
        x = torch.from_numpy(x_np).to(device=dev, dtype=torch.bfloat16)
        return model, torch_block_loss, (x,)

    res = run_variants("transformer", make_kiln, make_torch, cfg, args, torch_dev)
    tokens = B * L
    # Matmul FLOPs x3 (forward, two gradients) + causal attention (forward x3.5).
    linear = 2 * tokens * (4 * D * D + 3 * D * hidden)
    attention = 4 * B * L * L * D / 2
    flops = 3 * linear + 3.5 * attention
    name = f"transformer block d{D} h{H} L{L} B{B} bf16"
    return name, res, {"unit": "tokens/s", "per_step": tokens, "flops": flops}


def cnn(cfg, args, torch_dev, dtype):
    N, S, channels = (
        (4, 16, (3, 8, 16, 16, 32)) if args.quick else (64, 64, (3, 64, 128, 128, 256))
    )
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((N, S, S, channels[0]), dtype=np.float32)
    y_np = rng.integers(0, 10, (N,))

    def make_kiln():
        model = KilnCNN(channels, 10)
        model.set_dtype(getattr(mx, dtype))
        x = mx.array(x_np).astype(getattr(mx, dtype))
        y = mx.array(y_np.astype(np.int32))
        return model, kiln_cnn_loss, (x, y)

    def make_torch(dev):
        _, TorchCNN = torch_models()
        tdt = getattr(torch, dtype)
        model = TorchCNN(channels, 10).to(device=dev, dtype=tdt)
        model = model.to(memory_format=torch.channels_last)
        x = torch.from_numpy(x_np).to(device=dev, dtype=tdt).permute(0, 3, 1, 2)
        x = x.contiguous(memory_format=torch.channels_last)
        y = torch.from_numpy(y_np).to(device=dev)
        return model, torch_cnn_loss, (x, y)

    res = run_variants(f"cnn {dtype}", make_kiln, make_torch, cfg, args, torch_dev)
    name = f"cnn {'-'.join(map(str, channels))} {S}x{S} B{N} {dtype}"
    return name, res, {"unit": "images/s", "per_step": N, "flops": None}


# ---------------------------------------------------------------- report


def device_name(device):
    if device == "cpu":
        return cpu_name()
    try:
        return mx.device_info(mx.gpu).get("device_name", "gpu")
    except Exception:
        return torch.cuda.get_device_name() if torch else "gpu"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, few steps")
    parser.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    parser.add_argument("--only", choices=["transformer", "cnn"])
    parser.add_argument(
        "--tf32", action="store_true", help="TF32 float32 matmuls/convs in both"
    )
    parser.add_argument(
        "--torch-compile",
        choices=["auto", "on", "off"],
        default="auto",
        help="the torch.compile rows (auto: on, except with --quick)",
    )
    parser.add_argument("--steps", type=int, help="steps per timed batch")
    parser.add_argument("--rounds", type=int, help="timed batches (the median is kept)")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    args.torch_compile = args.torch_compile == "on" or (
        args.torch_compile == "auto" and not args.quick
    )
    if args.device == "gpu":
        if not mx.is_available(mx.gpu):
            sys.exit(
                "train_step.py: no GPU is available to kiln (--device cpu runs on the CPU)"
            )
        mx.set_default_device(mx.gpu)
    else:
        mx.set_default_device(mx.cpu)

    global torch
    torch_note = None
    torch_dev = None
    if torch is None:
        torch_note = "PyTorch is not installed: its rows are skipped"
    elif args.device == "gpu" and not torch.cuda.is_available():
        torch_note = "PyTorch sees no CUDA device: its rows are skipped"
        torch = None
    else:
        torch_dev = torch.device("cuda" if args.device == "gpu" else "cpu")
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
        torch.backends.cudnn.benchmark = False
        torch.manual_seed(0)
    mx.random.seed(0)

    cfg = {
        "warmup": 2 if args.quick else 3,
        "steps": args.steps or (2 if args.quick else 5),
        "rounds": args.rounds or (3 if args.quick else 5),
    }
    t_start = time.perf_counter()
    workloads = []
    if args.only in (None, "transformer"):
        workloads.append(transformer(cfg, args, torch_dev))
    if args.only in (None, "cnn"):
        for dtype in ("float32", "bfloat16"):
            workloads.append(cnn(cfg, args, torch_dev, dtype))
    total = time.perf_counter() - t_start

    rows = []
    for wl, res, meta in workloads:
        eager = res.get("PyTorch eager", {}).get("seconds")
        comp = res.get("torch.compile", {}).get("seconds")
        for impl, r in res.items():
            row = {"workload": wl, "impl": impl, **r, "unit": meta["unit"]}
            if "seconds" in r:
                row["rate"] = meta["per_step"] / r["seconds"]
                if meta["flops"]:
                    row["tflops"] = meta["flops"] / r["seconds"] / 1e12
                if impl.startswith("kiln"):
                    row["kiln_over_torch_eager"] = (
                        r["seconds"] / eager if eager else None
                    )
                    row["kiln_over_torch_compile"] = (
                        r["seconds"] / comp if comp else None
                    )
            rows.append(row)

    date = datetime.date.today().isoformat()
    name = device_name(args.device)
    tver = torch.__version__ if torch is not None else None
    notes = [
        f"Device: {name} ({args.device}); kiln {mx.__version__}; PyTorch "
        f"{tver or 'not installed'}; Python {platform.python_version()}; run {date}, "
        f"{total:.1f} s in all.",
        "One step = forward, loss, backward, AdamW update (lr 1e-4, weight decay 0.01; kiln "
        "with bias_correction=True, PyTorch's default foreach AdamW) including the parameter "
        "writes. kiln compiled: the whole step under mx.compile with the model and optimizer "
        "state as inputs/outputs; torch.compile: the model only (loss, backward, optimizer "
        "eager).",
        f"Medians of {cfg['rounds']} batches of {cfg['steps']} steps after {cfg['warmup']} "
        "warm-up steps (their time, in its own column, includes the compiles, cold unless a "
        "disk cache held them). "
        + (
            "PyTorch timed with CUDA events, kiln with the host clock around batches ending "
            "in a synchronize"
            if args.device == "gpu"
            else "Both timed with the host clock"
        )
        + " (each kiln step ends in mx.eval).",
        "CNN: kiln is NHWC; PyTorch's model and input are in torch.channels_last memory "
        "format. TF32 "
        + ("on in both (--tf32)." if args.tf32 else "off in both (kiln's default).")
        + " Time ratios are kiln time / PyTorch time: below 1, kiln is faster.",
    ]
    if torch_note:
        notes.append(torch_note + ".")
    if torch is not None and not args.torch_compile:
        notes.append("torch.compile rows skipped (--quick or --torch-compile off).")
    lines = [f"# One training step, kiln and PyTorch, {name}, {date}", ""]
    lines += notes
    lines += [
        "",
        "| workload | impl | ms / step | rate | TFLOP/s | first-step loss | warm-up s "
        "| kiln / PyTorch eager | kiln / torch.compile |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def ratio(v):
        return f"{v:.2f}" if v else ""

    for r in rows:
        if "error" in r:
            lines.append(
                f"| {r['workload']} | {r['impl']} | error: {r['error'].replace('|', '/')} |||||||"
            )
            continue
        tf = f"{r['tflops']:.3g}" if "tflops" in r else ""
        lines.append(
            f"| {r['workload']} | {r['impl']} | {r['seconds'] * 1e3:.3f} | "
            f"{r['rate']:,.0f} {r['unit']} | {tf} | {r['first_loss']:.4f} | "
            f"{r['warmup_seconds']:.2f} | {ratio(r.get('kiln_over_torch_eager'))} | "
            f"{ratio(r.get('kiln_over_torch_compile'))} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    report = {
        "benchmark": "train step",
        "date": date,
        "device": args.device,
        "device_name": name,
        "python": platform.python_version(),
        "torch": tver,
        "kiln": mx.__version__,
        "quick": args.quick,
        "tf32": args.tf32,
        "timing": cfg,
        "total_seconds": total,
        "notes": notes,
        "rows": rows,
    }
    prefix = f"{args.device}-train-step" + ("-quick" if args.quick else "")
    save_results(args.out_dir, prefix, name, date, report, text)


if __name__ == "__main__":
    main()
