"""Batched LU-based solvers on the GPU: kiln's linalg.solve, inv and lu_factor against PyTorch's
for batches of small and large matrices (float32, diagonally dominant). Host-timed batches of
5 calls ending in a synchronize, median of 7; prints one line per (batch, n) with the
float64 residual of kiln's solve. Results were recorded by hand in
benchmarks/results/gpu-linalg-batched-<device>-<date>.md.

    PYTHONPATH=python python benchmarks/gpu/linalg_batched.py
"""
import sys, time, statistics
sys.path.insert(0, "python")
import numpy as np, torch
import kiln.core as mx

def t_host(fn, sync, reps=7, inner=5):
    fn(); sync()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        ts.append((time.perf_counter() - t) / inner)
    return statistics.median(ts) * 1e3

rng = np.random.default_rng(0)
for (batch, n) in [(512, 64), (4096, 16), (64, 128), (16, 256), (8, 512), (2, 1024), (512, 8)]:
    a = rng.standard_normal((batch, n, n), dtype=np.float32) + n * np.eye(n, dtype=np.float32)
    b = rng.standard_normal((batch, n, 1), dtype=np.float32)
    ka, kb = mx.array(a), mx.array(b); mx.eval(ka, kb)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    ks = t_host(lambda: mx.eval(mx.linalg.solve(ka, kb)), mx.synchronize)
    ts = t_host(lambda: torch.linalg.solve(ta, tb), torch.cuda.synchronize)
    ki = t_host(lambda: mx.eval(mx.linalg.inv(ka)), mx.synchronize)
    ti = t_host(lambda: torch.linalg.inv(ta), torch.cuda.synchronize)
    kl = t_host(lambda: mx.eval(*mx.linalg.lu_factor(ka)), mx.synchronize)
    tl = t_host(lambda: torch.linalg.lu_factor(ta), torch.cuda.synchronize)
    x = np.array(mx.linalg.solve(ka, kb)); err = np.abs(np.einsum("bij,bjk->bik", a.astype(np.float64), x) - b).max()
    print(f"batch {batch:5d} n {n:5d}: solve kiln {ks:8.3f} ms torch {ts:8.3f} | inv kiln {ki:8.3f} torch {ti:8.3f} | lu kiln {kl:8.3f} torch {tl:8.3f} | resid {err:.2e}", flush=True)
