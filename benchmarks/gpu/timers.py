"""Timers shared by the GPU benchmarks: medians over rounds of batched calls, after warm-up.

Lazy frameworks (kiln, MLX) are timed on the host around a batch of calls ended by one
synchronize, so the launch overhead a user pays is included; PyTorch with CUDA events around
the batch. Each batch is sized to run for about `min_batch_s` seconds (3 to `max_batch`
calls), measured from one warm call.
"""

import statistics
import sys
import time


def _batch(one_call_s, min_batch_s, max_batch):
    return max(3, min(max_batch, int(min_batch_s / max(one_call_s, 1e-6))))


def time_lazy(eval_fn, sync, fn, rounds, min_batch_s=0.02, max_batch=1000):
    """Median seconds per call of fn(), whose outputs `eval_fn(list of outputs)` evaluates."""
    eval_fn([fn()])  # warm-up: compiles, allocates
    sync()
    t0 = time.perf_counter()
    eval_fn([fn()])
    sync()
    n = _batch(time.perf_counter() - t0, min_batch_s, max_batch)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        outs = [fn() for _ in range(n)]
        eval_fn(outs)
        sync()
        times.append((time.perf_counter() - t0) / n)
        del outs
    return statistics.median(times)


def time_kiln(fn, rounds, min_batch_s=0.02, max_batch=1000):
    """time_lazy for kiln: each call's outputs are submitted as they would be in a loop."""
    import kiln.core as kx

    def submit(outs):
        for o in outs:
            kx.async_eval(o)

    return time_lazy(submit, kx.synchronize, fn, rounds, min_batch_s, max_batch)


def time_mlx(fn, rounds, min_batch_s=0.02, max_batch=1000):
    """time_lazy for MLX (its CUDA build, in a process that never imports kiln)."""
    import mlx.core as mlx

    return time_lazy(mlx.eval, mlx.synchronize, fn, rounds, min_batch_s, max_batch)


def time_torch(fn, rounds, min_batch_s=0.02, max_batch=1000):
    """Median seconds per call of fn() on PyTorch's current CUDA stream, by CUDA events."""
    import torch

    fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    n = _batch(start.elapsed_time(end) / 1e3, min_batch_s, max_batch)
    times = []
    for _ in range(rounds):
        start.record()
        for _ in range(n):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / n)
    return statistics.median(times)


def torch_copy_bandwidth(rounds, nbytes):
    """Bytes per second of a device-to-device copy of `nbytes` through PyTorch (read plus
    write), the ceiling of a memory-bound kernel measured in the same run."""
    import torch

    x = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    return 2 * nbytes / time_torch(lambda: y.copy_(x), rounds)


def guarded(results, key, timer, fn, rounds):
    """results[key] = timer(fn, rounds), or a note on stderr when the peer cannot run it."""
    try:
        results[key] = timer(fn, rounds)
    except Exception as e:  # a peer without this op or backend, or a failure of ours
        print(f"  {key}: skipped ({type(e).__name__}: {str(e)[:200]})", file=sys.stderr)


def kiln_from_torch(t, dtype=None):
    """The values of torch tensor `t` as an evaluated kiln array (through float32 NumPy),
    in `dtype` or the kiln dtype matching t's."""
    import kiln.core as kx

    names = {"torch.bfloat16": kx.bfloat16, "torch.float16": kx.float16}
    a = kx.array(t.detach().float().cpu().numpy()).astype(
        dtype or names.get(str(t.dtype), kx.float32)
    )
    kx.eval(a)
    return a


def mlx_from_torch(t):
    """As kiln_from_torch, for MLX."""
    import mlx.core as mlx

    names = {"torch.bfloat16": mlx.bfloat16, "torch.float16": mlx.float16}
    a = mlx.array(t.detach().float().cpu().numpy()).astype(
        names.get(str(t.dtype), mlx.float32)
    )
    mlx.eval(a)
    return a
