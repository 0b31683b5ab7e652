#!/usr/bin/env python3
"""GPU custom kernels from Python: kiln's `fast.cuda_kernel` / `fast.metal_kernel` against
CuPy's RawKernel on the same GPU in the same run (issue 6).

- per-call host cost of launching a cached kernel on 256 floats: launch + wait for the result
  (kiln: build the call and `eval`; CuPy: allocate the output, launch, synchronize), and
  launches alone (kiln `async_eval`, CuPy's asynchronous launch) with one wait at the end;
  target: kiln at most CuPy's;
- cold compile: the first call of a small kernel whose source neither cache has seen (a unique
  comment in each trial), compile and module load included; target: at most CuPy's;
- cold eval of 60 distinct kernels in one graph (they compile in parallel) against the same
  number evaluated one at a time;
- disk-cache load: the first call of an already compiled kernel in a new process, after the
  process created its inputs (so the CUDA context exists), for both libraries;
- throughput of the seed documents' exp kernel (a Metal body) on 2^28 float32, with a CUDA
  body of the same kernel, kiln's built-in `exp` and CuPy's RawKernel, as GB/s (bytes read +
  written) against the device copy bandwidth (CuPy copying the same array into preallocated
  arrays).

Times are medians over rounds after warm-up (kiln's and CuPy's per-call rounds alternate);
GPU work is timed on the host around batches of launches that end in a synchronize (each
exp batch moves several GiB, so the host's share is small). Writes benchmarks/results/gpu-custom-kernel-<device>-<date>.{json,md}.

    PYTHONPATH=python python benchmarks/gpu/custom_kernel.py [--quick] [--out-dir DIR]
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

import kiln.core as mx  # noqa: E402
from overhead import interleaved_medians, median_seconds  # noqa: E402  (its timers)

SEED_EXP = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""
CUDA_EXP = """
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < size_t(inp_shape[0])) out[i] = expf(inp[i]);
"""
CUPY_EXP = r"""
extern "C" __global__ void cupy_exp(const float* inp, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = expf(inp[i]);
}
"""
SMALL_N = 256


def cuda_exp_kernel(tag=""):
    """kiln's CUDA-body exp; `tag` makes a source no cache has seen."""
    return mx.fast.cuda_kernel(name="bench_exp", input_names=["inp"], output_names=["out"],
                               source=CUDA_EXP + (f"    // {tag}\n" if tag else ""))


def kiln_launch(kernel, x):
    return kernel(inputs=[x], grid=(x.size, 1, 1), threadgroup=(256, 1, 1),
                  output_shapes=[x.shape], output_dtypes=[x.dtype])[0]


def cupy_exp_kernel(cp, tag=""):
    return cp.RawKernel(CUPY_EXP + (f"// {tag}\n" if tag else ""), "cupy_exp")


def cupy_launch(cp, kernel, x):
    out = cp.empty_like(x)
    kernel(((x.size + 255) // 256,), (256,), (x, out, cp.int64(x.size)))
    return out


# ---------------------------------------------------------------- host cost per call


def call_costs(cp, number, repeats):
    x = mx.random.normal((SMALL_N,))
    mx.eval(x)
    k = cuda_exp_kernel()
    mx.eval(kiln_launch(k, x))

    def kiln_async():
        outs = [kiln_launch(k, x) for _ in range(number)]
        for o in outs:
            mx.async_eval(o)
        mx.synchronize()

    cases = {"kiln launch + eval": (lambda: mx.eval(kiln_launch(k, x)), number),
             "kiln launch + async_eval (per call)": (kiln_async, 1)}
    if cp is not None:
        xc = cp.random.standard_normal(SMALL_N, dtype=cp.float32)
        kc = cupy_exp_kernel(cp)
        cupy_launch(cp, kc, xc)
        stream = cp.cuda.get_current_stream()

        def cupy_sync():
            cupy_launch(cp, kc, xc)
            stream.synchronize()

        def cupy_async():
            outs = [cupy_launch(cp, kc, xc) for _ in range(number)]
            stream.synchronize()
            return outs

        cases["CuPy launch + synchronize"] = (cupy_sync, number)
        cases["CuPy launch (per call)"] = (cupy_async, 1)
    # kiln's and CuPy's repeats alternate: the host's noise falls on both alike.
    res = interleaved_medians(cases, repeats, warmup=20)
    for name in ("kiln launch + async_eval (per call)", "CuPy launch (per call)"):
        if name in res:
            res[name] /= number
    return res


# ---------------------------------------------------------------- compile and disk cache


def cold_compiles(cp, trials):
    res = {}
    x = mx.random.normal((SMALL_N,))
    mx.eval(x)
    times = []
    for _ in range(trials):
        k = cuda_exp_kernel(uuid.uuid4().hex)
        start = time.perf_counter()
        mx.eval(kiln_launch(k, x))
        times.append(time.perf_counter() - start)
    res["kiln cold compile (first call)"] = statistics.median(times)
    if cp is not None:
        xc = cp.random.standard_normal(SMALL_N, dtype=cp.float32)
        cp.cuda.get_current_stream().synchronize()
        times = []
        for _ in range(trials):
            k = cupy_exp_kernel(cp, uuid.uuid4().hex)
            start = time.perf_counter()
            cupy_launch(cp, k, xc)
            cp.cuda.get_current_stream().synchronize()
            times.append(time.perf_counter() - start)
        res["CuPy cold compile (first call)"] = statistics.median(times)
    return res


def cold_eval_many(count):
    """The first eval of `count` distinct kernels no cache has seen, all in one graph (as a
    model with many custom kernels evaluates them), against the same kernels evaluated one at a
    time (another set of sources): kiln compiles a graph's kernels in parallel (issue 16)."""
    x = mx.random.normal((SMALL_N,))
    mx.eval(x)

    def kernels():
        tag = uuid.uuid4().hex
        return [cuda_exp_kernel(f"{tag} {i}") for i in range(count)]

    ks = kernels()
    start = time.perf_counter()
    mx.eval([kiln_launch(k, x) for k in ks])
    together = time.perf_counter() - start
    ks = kernels()
    start = time.perf_counter()
    for k in ks:
        mx.eval(kiln_launch(k, x))
    one_by_one = time.perf_counter() - start
    return {f"kiln cold eval of {count} kernels, one graph": together,
            f"kiln cold eval of {count} kernels, one at a time": one_by_one}


CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[2])
which, tag = sys.argv[1], sys.argv[3]
if which == "kiln":
    import kiln.core as mx
    sys.path.insert(0, sys.argv[4])
    from custom_kernel import cuda_exp_kernel, kiln_launch
    x = mx.random.normal((256,)); mx.eval(x); mx.synchronize()
    k = cuda_exp_kernel(tag)
    t = time.perf_counter(); mx.eval(kiln_launch(k, x)); first = time.perf_counter() - t
    t = time.perf_counter(); mx.eval(kiln_launch(k, x)); warm = time.perf_counter() - t
else:
    import cupy as cp
    sys.path.insert(0, sys.argv[4])
    from custom_kernel import cupy_exp_kernel, cupy_launch
    x = cp.random.standard_normal(256, dtype=cp.float32); cp.cuda.get_current_stream().synchronize()
    k = cupy_exp_kernel(cp, tag)
    s = cp.cuda.get_current_stream()
    t = time.perf_counter(); cupy_launch(cp, k, x); s.synchronize(); first = time.perf_counter() - t
    t = time.perf_counter(); cupy_launch(cp, k, x); s.synchronize(); warm = time.perf_counter() - t
print(first, warm)
"""


def disk_loads(have_cupy, trials):
    """First call in a new process of a kernel an earlier process compiled: (first, warm) medians."""
    res = {}
    here = str(pathlib.Path(__file__).resolve().parent)
    for which in ["kiln"] + (["cupy"] if have_cupy else []):
        firsts, warms = [], []
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, KILN_CACHE_DIR=cache, CUPY_CACHE_DIR=cache, KILN_DEVICE="gpu")
            tag = uuid.uuid4().hex
            cmd = [sys.executable, "-c", CHILD, which, str(ROOT / "python"), tag, here]
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)  # compiles
            for _ in range(trials):
                out = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True)
                first, warm = map(float, out.stdout.split())
                firsts.append(first)
                warms.append(warm)
        name = "kiln" if which == "kiln" else "CuPy"
        res[f"{name} disk-cache load (first call, new process)"] = statistics.median(firsts)
        res[f"{name} warm call in that process"] = statistics.median(warms)
    return res


# ---------------------------------------------------------------- exp throughput


def throughput(cp, n, batch, rounds):
    """Seconds per exp (or copy) of n float32 for each kernel; batches end in a synchronize."""
    res = {}
    x = mx.random.normal((n,))
    mx.eval(x)
    seed = mx.fast.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                                source=SEED_EXP)
    cuda = cuda_exp_kernel()

    def seed_call():
        return seed(inputs=[x], template=[("T", mx.float32)], grid=(n, 1, 1),
                    threadgroup=(256, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])[0]

    kiln_cases = {
        "kiln seed exp kernel (Metal body)": seed_call,
        "kiln exp kernel (CUDA body)": lambda: kiln_launch(cuda, x),
        "kiln built-in exp": lambda: mx.exp(x),
    }
    check = mx.max(mx.abs(seed_call() - mx.exp(x))).item()
    for name, make in kiln_cases.items():
        def run():
            mx.eval(*[make() for _ in range(batch)])

        res[name] = median_seconds(run, 1, rounds, warmup=2) / batch
    del x
    if cp is not None:
        xc = cp.random.standard_normal(n, dtype=cp.float32)
        kc = cupy_exp_kernel(cp)
        stream = cp.cuda.get_current_stream()

        def cupy_run():
            outs = [cupy_launch(cp, kc, xc) for _ in range(batch)]
            stream.synchronize()
            return outs

        dsts = [cp.empty_like(xc) for _ in range(batch)]  # preallocated: a copy, no allocation

        def copy_run():
            for d in dsts:
                cp.copyto(d, xc)
            stream.synchronize()

        res["CuPy RawKernel exp"] = median_seconds(cupy_run, 1, rounds, warmup=2) / batch
        res["device copy (CuPy copyto)"] = median_seconds(copy_run, 1, rounds, warmup=2) / batch
    return res, check


def device_name():
    try:
        return mx.device_info(mx.gpu).get("device_name", "gpu")
    except Exception:
        return "gpu"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats (a smoke test)")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    if not mx.is_available(mx.gpu):
        sys.exit("custom_kernel.py: no GPU is available to kiln")
    mx.set_default_device(mx.gpu)
    try:
        import cupy as cp

        cupy_version = cp.__version__
    except ImportError:
        cp, cupy_version = None, None

    number, repeats = (200, 5) if args.quick else (2000, 15)
    n = (1 << 22) if args.quick else (1 << 28)
    batch, rounds = (4, 3) if args.quick else (5, 11)
    trials = 3 if args.quick else 7

    seconds = {}
    seconds.update(call_costs(cp, number, repeats))
    seconds.update(cold_compiles(cp, trials))
    seconds.update(disk_loads(cp is not None, trials))
    many = 12 if args.quick else 60
    seconds.update(cold_eval_many(many))
    tp, max_err = throughput(cp, n, batch, rounds)
    seconds.update(tp)

    nbytes = 2 * 4 * n
    gbs = {k: nbytes / v / 1e9 for k, v in tp.items()}
    copy_key = "device copy (CuPy copyto)"
    checks = []

    def check(name, kiln_key, peer_key, target_text, ok):
        if kiln_key in seconds and peer_key in seconds:
            ratio = seconds[peer_key] / seconds[kiln_key]
            checks.append({"name": name, "ratio": ratio, "target": target_text, "met": ok(ratio)})

    check("launch + wait: CuPy / kiln", "kiln launch + eval", "CuPy launch + synchronize", ">= 1",
          lambda r: r >= 1)
    check("launch only: CuPy / kiln", "kiln launch + async_eval (per call)", "CuPy launch (per call)",
          ">= 1", lambda r: r >= 1)
    check("cold compile: CuPy / kiln", "kiln cold compile (first call)",
          "CuPy cold compile (first call)", ">= 1", lambda r: r >= 1)
    check(f"cold eval of {many} kernels: one at a time / one graph",
          f"kiln cold eval of {many} kernels, one graph",
          f"kiln cold eval of {many} kernels, one at a time", "reported (> 1: compiled in parallel)",
          lambda r: None)
    if copy_key in gbs:
        for k in ("kiln seed exp kernel (Metal body)", "kiln exp kernel (CUDA body)", "kiln built-in exp"):
            checks.append({"name": f"{k}: fraction of copy bandwidth", "ratio": gbs[k] / gbs[copy_key],
                           "target": "reported", "met": None})

    date = datetime.date.today().isoformat()
    name = device_name()
    report = {
        "benchmark": "gpu custom kernels",
        "date": date,
        "device_name": name,
        "python": platform.python_version(),
        "cupy": cupy_version,
        "kiln": mx.__version__,
        "quick": args.quick,
        "exp_elements": n,
        "exp_max_abs_error_vs_builtin": max_err,
        "seconds": seconds,
        "exp_gb_per_s": gbs,
        "checks": checks,
    }
    lines = [
        f"# GPU custom kernels from Python, {date}",
        "",
        f"Device: {name}; Python {report['python']}, CuPy {cupy_version or 'not installed'}, "
        f"kiln {report['kiln']}. Medians after warm-up; GPU work timed on the host around batches "
        f"that end in a synchronize.",
        "",
        "| case | time |",
        "|---|---:|",
    ]
    for k, v in seconds.items():
        extra = f" ({gbs[k]:.0f} GB/s)" if k in gbs else ""
        lines.append(f"| {k} | {v * 1e6:.2f} µs{extra} |" if v < 1e-3 else f"| {k} | {v * 1e3:.3f} ms{extra} |")
    lines += ["", f"exp on {n} float32 (bytes read + written: {nbytes / 2**30:.1f} GiB per call); "
              f"seed kernel vs built-in exp, max abs difference {max_err:.2e}.", ""]
    for c in checks:
        verdict = "" if c["met"] is None else (" met" if c["met"] else " NOT met")
        lines.append(f"- {c['name']}: {c['ratio']:.3f} (target {c['target']}){verdict}")
    if cp is None:
        lines.append("- CuPy is not installed: its columns are empty and the targets unchecked.")
    text = "\n".join(lines) + "\n"
    print(text)
    out_dir = pathlib.Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    slug = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    stem = out_dir / f"gpu-custom-kernel-{slug}-{date}{'-quick' if args.quick else ''}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    stem.with_suffix(".md").write_text(text)
    print(f"wrote {stem}.md and .json", file=sys.stderr)


if __name__ == "__main__":
    main()
