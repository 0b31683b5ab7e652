#!/usr/bin/env python3
"""The LLM example's compiled training step on one GPU or data-parallel on several: wall time
per step, tokens/s, and where a step's GPU time goes (issues 22 and 23).

    python benchmarks/gpu/llm_step.py [--batch 32] [--profile]                 # 1 GPU
    python -m kiln.launch -n 2 benchmarks/gpu/llm_step.py --batch 32 [--profile]   # 2 GPUs

The step is `examples/llm`'s own (`train.make_step`: forward, backward, gradient averaging
over the ranks in 32 MB batches, clipping, AdamW, under `mx.compile`) on the King James
Bible token files (`examples/llm/main.py prepare`). `--batch` is the global batch in
sequences; each rank takes its share, as `train.py` does. After 6 warm-up steps, two passes
of `--steps` steps run with two steps in flight (as `train.py` runs them) and the faster pass
is reported; then 5 synchronized steps give the host's share (building the step's graph,
submitting it, waiting). Rank 0 prints one line per measurement.

`--profile` records 3 synchronized steps on every rank with torch.profiler (CUPTI sees
kiln's kernels and the driver calls) and rank 0 prints kernel time per step by category,
the top kernels, the driver calls, and the GPU's idle time before each kind of kernel.
"""

import argparse
import collections
import dataclasses
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "examples"))

import numpy as np  # noqa: E402

from llm import config as C  # noqa: E402
from llm import data as D  # noqa: E402
from llm import train as T  # noqa: E402
from llm.framework import mx  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="gpu100m")
    ap.add_argument("--batch", type=int, default=32, help="global batch, in sequences")
    ap.add_argument("--steps", type=int, default=20, help="steps per timed pass")
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (a smoke test)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument(
        "--no-overlap",
        action="store_true",
        help="sum the gradients on the compute stream (after the whole backward pass)",
    )
    ap.add_argument(
        "--sum-then-divide",
        action="store_true",
        help="average the gradients as before grouped_all_mean: a sum, then a divide each",
    )
    return ap.parse_args()


def category(name):
    n = name.lower()
    if "nccl" in n:
        return "nccl"
    if "memcpy" in n or "memset" in n:
        return "memcpy/memset"
    if any(k in n for k in ("gemm", "cublas", "cutlass", "sm90_xmma", "nvjet")):
        return "gemm"
    if any(k in n for k in ("flash", "fmha", "cudnn", "sdpa", "attn")):
        return "attention"
    if "kiln_fused" in n:
        return "compile-fused"
    return "other"


def profile(run_step, steps, rank):
    from torch.profiler import ProfilerActivity, profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for i in range(steps):
            run_step(200 + i)
        mx.synchronize()
    if rank != 0:
        return
    events = list(prof.events())
    gpu = [e for e in events if e.device_type.name == "CUDA"]
    time_by, count_by = collections.Counter(), collections.Counter()
    for e in gpu:
        time_by[e.name] += e.device_time_total
        count_by[e.name] += 1
    cats = collections.Counter()
    for name, t in time_by.items():
        cats[category(name)] += t
    print(f"GPU activity per step: {sum(time_by.values()) / steps / 1e3:.2f} ms in "
          f"{len(gpu) / steps:.0f} kernels and copies")
    for c, t in cats.most_common():
        print(f"  {c:14s} {t / steps / 1e3:8.2f} ms")
    print("top kernels (us per step, launches per step):")
    for name, t in time_by.most_common(15):
        print(f"  {t / steps:9.1f} x{count_by[name] / steps:6.1f}  {name[:110]}")
    host, host_n = collections.Counter(), collections.Counter()
    for e in events:
        if e.device_type.name != "CUDA":
            host[e.name] += e.cpu_time_total
            host_n[e.name] += 1
    print("driver and runtime calls (us per step, calls per step):")
    for name, t in host.most_common(6):
        print(f"  {t / steps:9.1f} x{host_n[name] / steps:6.1f}  {name[:80]}")
    # GPU idle time before each kernel (after the previous one ended), by kernel name.
    spans = sorted((e.time_range.start, e.time_range.end, e.name) for e in gpu)
    idle, idle_n = collections.Counter(), collections.Counter()
    end = spans[0][1]
    for start, stop, name in spans[1:]:
        if start > end + 1.0:
            idle[name[:80]] += start - end
            idle_n[name[:80]] += 1
        end = max(end, stop)
    print(f"GPU idle between kernels: {sum(idle.values()) / steps / 1e3:.2f} ms per step; "
          "largest, by the kernel after the gap:")
    for name, t in idle.most_common(8):
        print(f"  {t / steps:9.1f} x{idle_n[name] / steps:6.1f}  {name}")
    # Memsets come from libraries (kiln's own are few): name them by their neighbours.
    around = collections.Counter()
    for i, (_, _, name) in enumerate(spans):
        if "memset" in name.lower():
            before = spans[i - 1][2][:50] if i > 0 else "-"
            after = spans[i + 1][2][:50] if i + 1 < len(spans) else "-"
            around[(before, after)] += 1
    print("memsets per step, by the kernels before and after:")
    for (before, after), k in around.most_common(6):
        print(f"  x{k / steps:6.1f}  {before} | {after}")


def main():
    args = parse_args()
    mx.set_default_device(mx.cpu if args.cpu else mx.gpu)
    group = mx.distributed.init()
    if args.sum_then_divide:
        dist = mx.distributed
        grouped_sum = dist.grouped_all_sum
        dist.grouped_all_mean = lambda xs, group=None, stream=None: [
            s / group.size() for s in grouped_sum(xs, group=group, stream=stream)
        ]
    rank, world = group.rank(), group.size()
    preset = C.preset(args.config)
    tc = dataclasses.replace(preset.train, batch_size=args.batch)
    try:
        data = D.TokenData(ROOT / "examples" / "llm" / "data" / "kjv-bpe8192")
    except Exception as e:  # the token files are made once, where the corpus is installed
        print(f"skipped: {e}")
        return
    cfg = C.model_config(args.config, data.vocab_size)
    model = T.build_model(cfg, "builtin", "bfloat16", 0)
    optimizer = T.make_optimizer(tc)
    optimizer.init(model.trainable_parameters())
    step = T.make_step(model, optimizer, tc, world, True, overlap=not args.no_overlap)

    def batch(i):
        x, y = D.train_batch(data, tc.batch_size, tc.seq_len, tc.seed, i, rank, world)
        return mx.array(x), mx.array(y)

    def pipelined(first, n):
        mx.synchronize()
        t0 = time.perf_counter()
        previous = None
        for i in range(n):
            loss, norm = step(*batch(first + i))
            mx.async_eval(loss, norm, model.parameters(), optimizer.state)
            if previous is not None:
                mx.eval(previous)
            previous = loss
        mx.eval(previous)
        mx.synchronize()
        return (time.perf_counter() - t0) / n

    def synchronized(i):
        loss, norm = step(*batch(i))
        mx.eval(loss, norm, model.parameters(), optimizer.state)

    pipelined(0, 6)
    walls = [pipelined(6 + k * args.steps, args.steps) for k in range(2)]
    split = []
    for i in range(5):
        mx.synchronize()
        t0 = time.perf_counter()
        loss, norm = step(*batch(100 + i))
        t1 = time.perf_counter()
        mx.async_eval(loss, norm, model.parameters(), optimizer.state)
        t2 = time.perf_counter()
        last_loss = loss.item()
        mx.synchronize()
        split.append((t1 - t0, t2 - t1, time.perf_counter() - t2))
    build, submit, wait = np.median(np.array(split), axis=0) * 1e3
    wall = min(walls)
    if rank == 0:
        print(f"{args.config}, {world} process(es), global batch {args.batch} x {tc.seq_len}: "
              f"{wall * 1e3:.2f} ms per step with two in flight, "
              f"{args.batch * tc.seq_len / wall:,.0f} tokens/s; a synchronized step: build "
              f"{build:.2f} ms, submit {submit:.2f} ms, wait {wait:.2f} ms; peak memory "
              f"{mx.get_peak_memory() / 2**30:.2f} GiB; last step's loss {last_loss:.6f}",
              flush=True)
    if args.profile:
        profile(synchronized, 3, rank)


if __name__ == "__main__":
    main()
