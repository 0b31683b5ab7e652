#!/usr/bin/env python3
"""compile on the GPU (issue 18), against PyTorch eager and torch.compile in the same run.

- a 10-op chain (GELU-tanh written with core ops, then a scale and a residual add) on 2^26
  float32 and bfloat16: kiln compiled (one generated kernel; the launches per call are
  counted), kiln eager, PyTorch eager, torch.compile, and the device copy bandwidth on the same
  bytes (the chain reads two arrays and writes one); targets: one kernel, at least 90% of the
  copy bandwidth, faster than torch.compile;
- a training step of a 3-layer MLP (float32, 4096x1024 -> 4096 -> 4096 -> 10, cross-entropy,
  value_and_grad + SGD, the parameters captured with inputs=/outputs=): kiln compiled and eager
  against PyTorch eager and torch.compile, with TF32 matmuls on and off (each setting in its
  own process); MLX's compiled step measured 2.79 ms on an H100 with TF32;
- 100 small elementwise ops on 16 floats: time per call (launch and wait) of kiln compiled,
  kiln eager, PyTorch eager and torch.compile with CUDA graphs ("reduce-overhead").

GPU work is timed on the host around batches of calls that end in a synchronize (kiln's calls
submitted with async_eval, as PyTorch's run asynchronously: a loop that does not read each
result); medians over rounds after warm-up. The 100-op case waits for every call. Writes benchmarks/results/gpu-compile-<device>-<date>.{json,md}.

    PYTHONPATH=python python benchmarks/gpu/compile.py [--quick] [--out-dir DIR]
    PYTHONPATH=python python benchmarks/gpu/compile.py --smoke   # the code paths, on the CPU
"""

import argparse
import datetime
import io
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time
from functools import partial

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

import kiln.core as mx  # noqa: E402
from overhead import save_results  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def chain(x, y, m):
    """GELU-tanh (8 ops), a scale and a residual add: 10 elementwise ops."""
    g = 0.5 * x * (1 + m.tanh(0.7978845608 * (x + 0.044715 * (x * x * x))))
    return g * 1.5 + y


def small_ops(x, m):
    for _ in range(25):
        x = m.sin(x) * 0.5 + x * 0.25 - 0.125
    return x


def timed(fn, sync, batch, rounds, warmup=2):
    """Median seconds per call of `fn` over `rounds` batches of `batch` calls, each batch
    ending in `sync()`."""
    for _ in range(warmup):
        for _ in range(batch):
            fn()
        sync()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        times.append((time.perf_counter() - t) / batch)
    return statistics.median(times)


def kiln_sync():
    mx.synchronize()


def torch_sync():
    torch.cuda.synchronize()


def launches():
    return mx._core._compile_stats()["gpu_kernel_launches"]


# ---------------------------------------------------------------- the 10-op chain


def chains(n, batch, rounds, smoke):
    seconds, kernels = {}, {}
    for name in ("float32", "bfloat16"):
        dt = getattr(mx, name)
        x = mx.random.normal((n,)).astype(dt)
        y = mx.random.normal((n,)).astype(dt)
        mx.eval(x, y)
        cchain = mx.compile(partial(chain, m=mx))
        mx.eval(cchain(x, y))
        before = launches()
        mx.eval(cchain(x, y))
        kernels[name] = launches() - before
        s = io.StringIO()
        mx.export_to_dot(s, cchain(x, y))
        kernels[name + " (Compiled nodes)"] = s.getvalue().count("Compiled")
        seconds[f"chain {name}, kiln compiled"] = timed(
            lambda: mx.async_eval(cchain(x, y)), kiln_sync, batch, rounds
        )
        seconds[f"chain {name}, kiln eager"] = timed(
            lambda: mx.async_eval(chain(x, y, mx)), kiln_sync, batch, rounds
        )
        seconds[f"copy {name}, kiln copy of one input"] = timed(
            lambda: mx.async_eval(mx.copy(x)), kiln_sync, batch, rounds
        )
        if torch is not None and not smoke:
            tdt = getattr(torch, name)
            xt = torch.randn(n, device="cuda", dtype=tdt)
            yt = torch.randn(n, device="cuda", dtype=tdt)
            tchain = torch.compile(partial(chain, m=torch))
            tchain(xt, yt)
            seconds[f"chain {name}, PyTorch eager"] = timed(
                lambda: chain(xt, yt, torch), torch_sync, batch, rounds
            )
            seconds[f"chain {name}, torch.compile"] = timed(
                lambda: tchain(xt, yt), torch_sync, batch, rounds
            )
            # The chain moves 3 arrays; a copy of 1.5 arrays moves as many bytes.
            src = torch.empty(3 * n // 2, device="cuda", dtype=tdt)
            dst = torch.empty_like(src)
            seconds[f"copy {name}, device (PyTorch copy_ of the chain's bytes)"] = timed(
                lambda: dst.copy_(src), torch_sync, batch, rounds
            )
    return seconds, kernels


# ---------------------------------------------------------------- MLP training step


def mlp_child(tf32, n_batch, dims, steps, rounds, smoke):
    """Runs in its own process (the TF32 setting is read at start-up): prints JSON."""
    out = {}
    din, dh, dout = dims
    rng = mx.random.key(0)
    k = mx.random.split(rng, 4)

    def init(key, shape):
        return mx.random.normal(shape, key=key) * (1.0 / shape[0]) ** 0.5

    params = {
        "w1": init(k[0], (din, dh)),
        "b1": mx.zeros((dh,)),
        "w2": init(k[1], (dh, dh)),
        "b2": mx.zeros((dh,)),
        "w3": init(k[2], (dh, dout)),
        "b3": mx.zeros((dout,)),
    }
    x = mx.random.normal((n_batch, din))
    y = mx.random.randint(0, dout, (n_batch,))
    mx.eval(params, x, y)

    def loss_fn(p, x, y):
        h = mx.maximum(x @ p["w1"] + p["b1"], 0)
        h = mx.maximum(h @ p["w2"] + p["b2"], 0)
        logits = h @ p["w3"] + p["b3"]
        picked = mx.take_along_axis(logits, mx.expand_dims(y, -1), axis=-1)
        return mx.mean(mx.logsumexp(logits, axis=-1) - mx.squeeze(picked, -1))

    def make_step(p):
        state = [p]

        def step(x, y):
            loss, grads = mx.value_and_grad(loss_fn)(state[0], x, y)
            state[0] = {name: state[0][name] - 0.01 * grads[name] for name in grads}
            return loss

        return state, step

    for label, compiled in (("kiln compiled", True), ("kiln eager", False)):
        state, step = make_step(dict(params))
        if compiled:
            step = partial(mx.compile, inputs=state, outputs=state)(step)
        run = lambda: mx.async_eval(step(x, y), state)
        out[f"MLP step, {label}, TF32 {'on' if tf32 else 'off'}"] = timed(
            run, kiln_sync, steps, rounds
        )
    if torch is not None and not smoke:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        tp = {
            k: torch.tensor(np.array(v), device="cuda").requires_grad_() for k, v in params.items()
        }
        xt = torch.tensor(np.array(x), device="cuda")
        yt = torch.tensor(np.array(y).astype(np.int64), device="cuda")

        def tloss(p, x, y):
            h = torch.relu(x @ p["w1"] + p["b1"])
            h = torch.relu(h @ p["w2"] + p["b2"])
            return torch.nn.functional.cross_entropy(h @ p["w3"] + p["b3"], y)

        def make_tstep(lossf):
            def tstep():
                loss = lossf(tp, xt, yt)
                loss.backward()
                with torch.no_grad():
                    ps = list(tp.values())
                    torch._foreach_add_(ps, [q.grad for q in ps], alpha=-0.01)
                    for q in ps:
                        q.grad = None
                return loss

            return tstep

        ceager = make_tstep(tloss)
        ccomp = make_tstep(torch.compile(tloss))
        ccomp()
        for label, f in (("PyTorch eager", ceager), ("torch.compile", ccomp)):
            out[f"MLP step, {label}, TF32 {'on' if tf32 else 'off'}"] = timed(
                f, torch_sync, steps, rounds
            )
    print(json.dumps(out))


def mlps(args):
    seconds = {}
    for tf32 in (True, False):
        env = dict(
            os.environ, KILN_MATMUL_TF32="1" if tf32 else "0", PYTHONPATH=str(ROOT / "python")
        )
        cmd = [sys.executable, __file__, "--mlp-child", "1" if tf32 else "0"]
        if args.quick:
            cmd.append("--quick")
        if args.smoke:
            cmd.append("--smoke")
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            raise SystemExit("the MLP benchmark failed")
        seconds.update(json.loads(r.stdout.strip().splitlines()[-1]))
    return seconds


# ---------------------------------------------------------------- small ops


def small(batch, rounds, smoke):
    seconds = {}
    x = mx.random.normal((16,))
    mx.eval(x)
    csmall = mx.compile(partial(small_ops, m=mx))
    mx.eval(csmall(x))
    seconds["100 ops on 16 floats, kiln compiled (per call + wait)"] = timed(
        lambda: (mx.eval(csmall(x)), mx.synchronize()), lambda: None, batch, rounds
    )
    seconds["100 ops on 16 floats, kiln eager (per call + wait)"] = timed(
        lambda: (mx.eval(small_ops(x, mx)), mx.synchronize()),
        lambda: None,
        batch // 10 or 1,
        rounds,
    )
    if torch is not None and not smoke:
        xt = torch.randn(16, device="cuda")
        tc = torch.compile(partial(small_ops, m=torch), mode="reduce-overhead")
        for _ in range(3):
            tc(xt)
        seconds["100 ops on 16 floats, PyTorch eager (per call + wait)"] = timed(
            lambda: (small_ops(xt, torch), torch.cuda.synchronize()),
            lambda: None,
            batch // 10 or 1,
            rounds,
        )
        seconds["100 ops on 16 floats, torch.compile reduce-overhead (per call + wait)"] = timed(
            lambda: (tc(xt), torch.cuda.synchronize()), lambda: None, batch, rounds
        )
    return seconds


def device_name():
    try:
        return mx.device_info(mx.gpu).get("device_name", "gpu")
    except Exception:
        return "gpu"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="run the code paths on the CPU with tiny sizes (no results)",
    )
    parser.add_argument("--mlp-child", help=argparse.SUPPRESS)
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    if args.smoke:
        mx.set_default_device(mx.cpu)
    elif not mx.is_available(mx.gpu):
        sys.exit("compile.py: no GPU is available to kiln")
    else:
        mx.set_default_device(mx.gpu)
    small_sizes = args.quick or args.smoke
    if args.mlp_child is not None:
        dims = (64, 128, 10) if args.smoke else (1024, 4096, 10)
        mlp_child(
            args.mlp_child == "1",
            64 if args.smoke else 4096,
            dims,
            2 if args.smoke else (5 if args.quick else 20),
            2 if small_sizes else 7,
            args.smoke,
        )
        return

    n = (1 << 12) if args.smoke else ((1 << 22) if args.quick else (1 << 26))
    batch, rounds = (2, 2) if args.smoke else ((5, 3) if args.quick else (20, 9))
    seconds, kernels = chains(n, batch, rounds, args.smoke)
    seconds.update(mlps(args))
    seconds.update(small(20 if args.smoke else 2000, rounds, args.smoke))

    date = datetime.date.today().isoformat()
    name = "cpu (smoke test)" if args.smoke else device_name()
    checks = []
    for dt in ("float32", "bfloat16"):
        itemsize = 4 if dt == "float32" else 2
        nbytes = 3 * n * itemsize
        c = seconds[f"chain {dt}, kiln compiled"]
        checks.append(
            {
                "name": f"chain {dt}: kernels per call",
                "value": kernels[dt],
                "target": "1",
                "met": kernels[dt] == 1,
            }
        )
        copy = seconds.get(f"copy {dt}, device (PyTorch copy_ of the chain's bytes)")
        if copy:
            checks.append(
                {
                    "name": f"chain {dt}: fraction of copy bandwidth",
                    "value": copy / c,
                    "target": ">= 0.9",
                    "met": copy / c >= 0.9,
                }
            )
        tc = seconds.get(f"chain {dt}, torch.compile")
        if tc:
            checks.append(
                {
                    "name": f"chain {dt}: torch.compile / kiln compiled",
                    "value": tc / c,
                    "target": "> 1",
                    "met": tc / c > 1,
                }
            )
        checks.append(
            {
                "name": f"chain {dt}: GB/s",
                "value": nbytes / c / 1e9,
                "target": "reported",
                "met": None,
            }
        )
    for tf in ("on", "off"):
        k = seconds[f"MLP step, kiln compiled, TF32 {tf}"]
        tc = seconds.get(f"MLP step, torch.compile, TF32 {tf}")
        if tc:
            checks.append(
                {
                    "name": f"MLP step TF32 {tf}: torch.compile / kiln compiled",
                    "value": tc / k,
                    "target": "> 1",
                    "met": tc / k > 1,
                }
            )
        if tf == "on":
            checks.append(
                {
                    "name": "MLP step TF32 on: MLX compiled (2.79 ms, H100) / kiln compiled",
                    "value": 2.79e-3 / k,
                    "target": "> 1",
                    "met": 2.79e-3 / k > 1,
                }
            )
    report = {
        "benchmark": "gpu compile",
        "date": date,
        "device_name": name,
        "python": platform.python_version(),
        "torch": torch.__version__ if torch is not None else None,
        "kiln": mx.__version__,
        "quick": args.quick,
        "chain_elements": n,
        "kernels_per_chain_call": kernels,
        "seconds": seconds,
        "checks": checks,
    }
    lines = [
        f"# compile on the GPU, {date}",
        "",
        f"Device: {name}; PyTorch {report['torch'] or 'not installed'}; kiln "
        f"{mx.__version__}. Medians of batches ending in a synchronize.",
        "",
        "| case | time |",
        "|---|---:|",
    ]
    for k, v in seconds.items():
        lines.append(f"| {k} | {v * 1e6:.2f} µs |" if v < 1e-3 else f"| {k} | {v * 1e3:.3f} ms |")
    lines.append("")
    for c in checks:
        verdict = "" if c["met"] is None else (" met" if c["met"] else " NOT met")
        lines.append(f"- {c['name']}: {c['value']:.3f} (target {c['target']}){verdict}")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.smoke:
        save_results(
            args.out_dir, "gpu-compile", name, date + ("-quick" if args.quick else ""), report, text
        )


if __name__ == "__main__":
    main()
