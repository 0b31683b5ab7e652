#!/usr/bin/env python3
"""Collective bandwidth on several GPUs: kiln.core.distributed (NCCL) against
torch.distributed (NCCL) on the same machine in the same run (issue 22).

Run one process per GPU with kiln's launcher:

    python -m kiln.launch -n 2 benchmarks/gpu/distributed.py [--quick] [--out-dir DIR]

For each message size from 1 KiB to 1 GiB (float32), all_sum and all_gather are timed for
kiln and for PyTorch: the median over rounds, after warm-up, of a batch of calls ending in a
synchronize (host clock for both, so both pay their per-call host overhead). Reported as
the time per call and the bus bandwidth of nccl-tests: all_reduce moves
2 (n - 1) / n * bytes per rank, all_gather (n - 1) / n * output bytes. The targets of the
issue: at 1 GiB kiln's all_sum bus bandwidth at least 95% of PyTorch's, and at 1 KiB a
lower latency. Rank 0 writes benchmarks/results/gpu-distributed-<device>-<date>.{json,md}.
PyTorch's columns are empty (and the report says so) without PyTorch.
"""

import argparse
import datetime
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

import kiln.core as mx  # noqa: E402


def sizes(quick):
    top = 28 if quick else 30  # bytes: 2^10 .. 2^30 (1 KiB .. 1 GiB)
    return [1 << k for k in range(10, top + 1, 2)]


def batch_for(nbytes):
    return max(2, min(200, (64 << 20) // nbytes))


def kiln_seconds(op, x, group, batch, rounds, warmup=3):
    times = []
    for r in range(warmup + rounds):
        mx.synchronize()
        start = time.perf_counter()
        outs = [op(x, group=group) for _ in range(batch)]
        mx.eval(*outs)
        mx.synchronize()
        if r >= warmup:
            times.append((time.perf_counter() - start) / batch)
        del outs
    return statistics.median(times)


def torch_seconds(torch, fn, batch, rounds, warmup=3):
    times = []
    for r in range(warmup + rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        torch.cuda.synchronize()
        if r >= warmup:
            times.append((time.perf_counter() - start) / batch)
    return statistics.median(times)


def bus_bw(op, nbytes, seconds, n):
    factor = 2 * (n - 1) / n if op == "all_sum" else (n - 1) / n
    data = nbytes if op == "all_sum" else nbytes * n
    return factor * data / seconds / 1e9


def torch_setup(rank, size):
    try:
        import torch
        import torch.distributed as tdist
    except ImportError:
        return None, "PyTorch is not installed"
    if not torch.cuda.is_available():
        return None, "PyTorch sees no GPU"
    host, port = os.environ.get("KILN_COORDINATOR", "127.0.0.1:29500").rsplit(":", 1)
    os.environ.setdefault("MASTER_ADDR", host)
    os.environ.setdefault("MASTER_PORT", str(int(port) + 1))
    torch.cuda.set_device(0)
    tdist.init_process_group("nccl", rank=rank, world_size=size)
    return torch, None


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="up to 256 MiB, fewer rounds")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    p.add_argument(
        "--cpu",
        action="store_true",
        help="smoke test of this script on CPUs (MPI, no PyTorch)",
    )
    args = p.parse_args()
    rounds = args.rounds or (5 if args.quick else 10)

    if args.cpu:
        mx.set_default_device(mx.cpu)
    group = mx.distributed.init(strict=True, backend="mpi" if args.cpu else "nccl")
    rank, n = group.rank(), group.size()
    if n < 2:
        sys.exit(
            "launch with python -m kiln.launch -n 2 (or more) on a machine with GPUs"
        )
    torch, why_no_torch = (
        (None, "not measured (--cpu)") if args.cpu else torch_setup(rank, n)
    )
    if torch is not None:
        import torch.distributed as tdist

    rows = []
    for nbytes in sizes(args.quick):
        count = nbytes // 4
        x = mx.random.normal((count,))
        mx.eval(x)
        batch = batch_for(nbytes)
        row = {"bytes": nbytes}
        for op, fn in (
            ("all_sum", mx.distributed.all_sum),
            ("all_gather", mx.distributed.all_gather),
        ):
            # all_gather: `nbytes` is the output; each rank contributes nbytes / n.
            xin = x if op == "all_sum" else x[: count // n]
            t = kiln_seconds(fn, xin, group, batch, rounds)
            row[f"kiln_{op}_us"] = t * 1e6
            row[f"kiln_{op}_busbw"] = bus_bw(
                op, nbytes if op == "all_sum" else nbytes // n, t, n
            )
        if torch is not None:
            xt = torch.randn(count, device="cuda")
            t = torch_seconds(torch, lambda: tdist.all_reduce(xt), batch, rounds)
            row["torch_all_sum_us"] = t * 1e6
            row["torch_all_sum_busbw"] = bus_bw("all_sum", nbytes, t, n)
            part = xt[: count // n].contiguous()
            out = torch.empty(count // n * n, device="cuda")
            t = torch_seconds(
                torch, lambda: tdist.all_gather_into_tensor(out, part), batch, rounds
            )
            row["torch_all_gather_us"] = t * 1e6
            row["torch_all_gather_busbw"] = bus_bw("all_gather", nbytes // n, t, n)
            del xt, part, out
        rows.append(row)
        if rank == 0:
            print(
                f"{nbytes:>11,d} B  all_sum kiln {row['kiln_all_sum_us']:9.1f} us "
                f"{row['kiln_all_sum_busbw']:7.2f} GB/s"
                + (
                    f" | torch {row['torch_all_sum_us']:9.1f} us {row['torch_all_sum_busbw']:7.2f} GB/s"
                    if torch is not None
                    else ""
                ),
                flush=True,
            )
        del x

    if rank != 0:
        return
    from overhead import save_results

    device = "cpu" if args.cpu else "gpu"
    try:
        import torch as _t

        if not args.cpu:
            device = _t.cuda.get_device_name(0)
    except Exception:
        pass
    date = datetime.date.today().isoformat()
    lines = [
        f"# Collective bus bandwidth, {n} processes ({device}), {date}",
        "",
        f"kiln.core.distributed (NCCL through kiln) against torch.distributed (NCCL), same run. "
        f"{'PyTorch: ' + why_no_torch if why_no_torch else ''}",
        "",
        "| bytes | op | kiln us | kiln GB/s | torch us | torch GB/s | kiln/torch bw |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        for op in ("all_sum", "all_gather"):
            k_us, k_bw = row[f"kiln_{op}_us"], row[f"kiln_{op}_busbw"]
            t_us, t_bw = row.get(f"torch_{op}_us"), row.get(f"torch_{op}_busbw")
            ratio = f"{k_bw / t_bw:.2f}" if t_bw else ""
            lines.append(
                f"| {row['bytes']:,} | {op} | {k_us:.1f} | {k_bw:.2f} | "
                f"{'' if t_us is None else f'{t_us:.1f}'} | {'' if t_bw is None else f'{t_bw:.2f}'} | {ratio} |"
            )
    text = "\n".join(lines) + "\n"
    print(text)
    report = {
        "device": device,
        "gpus": n,
        "date": date,
        "rows": rows,
        "torch": why_no_torch or "ok",
    }
    save_results(args.out_dir, "gpu-distributed", device, date, report, text)


if __name__ == "__main__":
    main()
