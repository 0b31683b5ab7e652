"""GPU benchmark: kiln against PyTorch on the same GPU in the same run (issue 4).

Runs kiln's C++ benchmark (benchmarks/cpp/bench_gpu.cpp, target kiln_bench_gpu), times the
same cases with PyTorch (CUDA events around batches of independent ops, medians over
rounds after warm-up), and writes benchmarks/results/gpu-<device>-<date>.{json,md}:

- copy, add, exp on 2^28 float32 and bfloat16, as a fraction of the copy bandwidth PyTorch
  measures for the same dtype (bytes read + written; target >= 90%);
- sum over the last axis and over everything of (32768, 4096) float32 and bfloat16 (bytes
  read once; target >= 85% of that bandwidth);
- matmul bfloat16 and float16 at 4096^3 and 8192^3 (target >= 95% of PyTorch's rate);
- the host cost per op of a chain of small adds, kiln in C++ (lazy build + eval) against
  PyTorch's per-op eager time (target: at most PyTorch's);
- the first-use compile time of an elementwise kernel and its load time from the disk cache
  in a new process.

    python benchmarks/gpu/run.py [--bench PATH] [--quick] [--out-dir DIR]

scripts/gpu-check runs it with KILN_BENCH_OUT set inside the build directory, where the
binary is found; elsewhere pass --bench or set KILN_BENCH_GPU. Without PyTorch the ratios use
kiln's own copy as the bandwidth reference and the report says so. Exits non-zero only when
kiln's benchmark cannot run; missed targets are reported, not fatal.
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def find_bench(explicit):
    candidates = []
    if explicit:
        candidates.append(pathlib.Path(explicit))
    if os.environ.get("KILN_BENCH_GPU"):
        candidates.append(pathlib.Path(os.environ["KILN_BENCH_GPU"]))
    if os.environ.get("KILN_BENCH_OUT"):  # scripts/gpu-check: <build>/gpu-check-benchmarks
        candidates.append(pathlib.Path(os.environ["KILN_BENCH_OUT"]).parent / "benchmarks/cpp/kiln_bench_gpu")
    candidates.append(ROOT / "build/dev/benchmarks/cpp/kiln_bench_gpu")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    sys.exit("kiln_bench_gpu not found (tried: %s); build it or pass --bench" % ", ".join(map(str, candidates)))


def run_kiln(bench, quick):
    cmd = [str(bench)] + (["--quick"] if quick else [])
    print("running", " ".join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit("kiln_bench_gpu failed with exit code %d" % proc.returncode)
    return json.loads(proc.stdout)


# ---------------------------------------------------------------- PyTorch


def torch_cases(quick):
    """Times PyTorch's versions of kiln's cases; {} when PyTorch or CUDA is missing."""
    try:
        import torch
    except ImportError:
        return {}, "PyTorch is not installed"
    if not torch.cuda.is_available():
        return {}, "PyTorch sees no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False
    warmup, rounds = (1, 3) if quick else (3, 11)
    dev = torch.device("cuda")
    out = {}

    def per_op_ms(fn, batch):
        for _ in range(warmup):
            [fn() for _ in range(batch)]
        torch.cuda.synchronize()
        times = []
        for _ in range(rounds):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            outs = [fn() for _ in range(batch)]
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / batch)
            del outs
        return statistics.median(times)

    def record(name, fn, batch, nbytes, flops=0):
        try:
            ms = per_op_ms(fn, batch)
            out[name] = {"ms": ms, "bytes": nbytes, **({"flops": flops} if flops else {})}
        except Exception as e:  # noqa: BLE001 - reported, the other cases go on
            out[name] = {"error": str(e)}
        print("  torch %-32s %s" % (name, out[name]), file=sys.stderr, flush=True)

    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    n = (1 << 24) if quick else (1 << 28)
    exp2 = "24" if quick else "28"
    for short in ("f32", "bf16"):
        dt = dtypes[short]
        x = torch.rand(n, device=dev, dtype=torch.float32).to(dt)
        y = torch.rand(n, device=dev, dtype=torch.float32).to(dt)
        size = n * x.element_size()
        batch = 4 if quick else 8
        tag = "_2^%s_%s" % (exp2, short)
        record("copy" + tag, lambda: x.clone(), batch, 2 * size)
        record("add" + tag, lambda: torch.add(x, y), batch, 3 * size)
        record("exp" + tag, lambda: torch.exp(x), batch, 2 * size)
        del x, y
    rows = 4096 if quick else 32768
    for short in ("f32", "bf16"):
        m = torch.rand(rows, 4096, device=dev, dtype=torch.float32).to(dtypes[short])
        size = m.numel() * m.element_size()
        batch = 8 if quick else 32
        tag = "_%dx4096_%s" % (rows, short)
        record("sum_last_axis" + tag, lambda: m.sum(-1), batch, size)
        record("sum_all" + tag, lambda: m.sum(), batch, size)
        del m
    for short in ("bf16", "f16"):
        for k in ([1024] if quick else [4096, 8192]):
            a = torch.rand(k, k, device=dev, dtype=torch.float32).to(dtypes[short])
            b = torch.rand(k, k, device=dev, dtype=torch.float32).to(dtypes[short])
            record("matmul_%d^3_%s" % (k, short), lambda: a @ b, 4 if k >= 8192 else 10,
                   3 * k * k * a.element_size(), 2.0 * k * k * k)
            del a, b
    torch.cuda.empty_cache()

    # Per-op eager time of a small add from Python, in a chain of 100 (synchronized once).
    x = torch.ones(16, device=dev)
    one = torch.ones(16, device=dev)
    ops = 100

    def chain():
        z = x
        for _ in range(ops):
            z = torch.add(z, one)
        torch.cuda.synchronize()

    for _ in range(20):
        chain()
    times = []
    for _ in range(5 if quick else 51):
        t0 = time.perf_counter()
        chain()
        times.append((time.perf_counter() - t0) / ops)
    out["add_chain_16_f32_per_op"] = {"us": statistics.median(times) * 1e6, "ops": ops}
    info = "PyTorch %s (CUDA %s), allow_tf32=False" % (torch.__version__, torch.version.cuda)
    return out, info


# ---------------------------------------------------------------- report


def gbps(r):
    return r["bytes"] / (r["ms"] * 1e-3) / 1e9


def build_report(kiln, torch_results, torch_info, quick):
    kr = kiln["results"]
    rows, checks = [], []

    def ok(r):
        return isinstance(r, dict) and "ms" in r

    # Copy bandwidth reference per dtype: PyTorch's copy, else kiln's own.
    ref = {}
    for short in ("f32", "bf16"):
        name = next((k for k in kr if k.startswith("copy_") and k.endswith("_" + short)), None)
        if name and ok(torch_results.get(name)):
            ref[short] = (gbps(torch_results[name]), "PyTorch copy")
        elif name and ok(kr.get(name)):
            ref[short] = (gbps(kr[name]), "kiln copy (no PyTorch)")

    for name, r in kr.items():
        t = torch_results.get(name)
        short = name.rsplit("_", 1)[-1]
        if not ok(r):
            if "error" in r:
                rows.append((name, "error: " + r["error"], "", "", ""))
            continue  # the host-cost and first-use entries are reported below the table
        if "flops" in r:
            kt = r["flops"] / (r["ms"] * 1e-3) / 1e12
            tt = t["flops"] / (t["ms"] * 1e-3) / 1e12 if ok(t) else None
            ratio = kt / tt if tt else None
            rows.append((name, "%.3f ms" % r["ms"], "%.1f TFLOP/s" % kt,
                         "%.1f TFLOP/s" % tt if tt else "-", "%.3f" % ratio if ratio else "-"))
            if ratio:
                checks.append((name + " vs PyTorch", ratio, 0.95))
            continue
        bw = gbps(r)
        tbw = gbps(t) if ok(t) else None
        frac = bw / ref[short][0] if short in ref else None
        rows.append((name, "%.3f ms" % r["ms"], "%.0f GB/s" % bw, "%.0f GB/s" % tbw if tbw else "-",
                     "%.3f of copy" % frac if frac else "-"))
        if frac and not name.startswith("copy_"):
            checks.append((name + " vs copy bandwidth", frac, 0.85 if name.startswith("sum_") else 0.90))
        if frac and name.startswith("copy_"):
            checks.append((name + " vs copy bandwidth", frac, 0.90))

    over = kr.get("add_chain_16_f32_per_op", {})
    tover = torch_results.get("add_chain_16_f32_per_op", {})
    extra = []
    if "us" in over:
        line = "- per-op host cost, chain of %d small adds: kiln (C++) %.2f us" % (over["ops"], over["us"])
        if "us" in tover:
            line += ", PyTorch eager (Python) %.2f us: ratio %.2f (target <= 1)" % (tover["us"], over["us"] / tover["us"])
            checks.append(("per-op host cost vs PyTorch eager (lower is better)", tover["us"] / over["us"], 1.0))
        extra.append(line)
    fc, fd = kr.get("first_use_compile_exp_f32", {}), kr.get("first_use_disk_cache_exp_f32", {})
    if "first_ms" in fc:
        extra.append("- first use of exp (float32) in a new process, empty JIT cache: %.1f ms "
                     "(warm call %.3f ms; %d NVRTC compiles)" % (fc["first_ms"], fc["warm_ms"], fc["compiles"]))
    if "first_ms" in fd:
        extra.append("- the same from the disk cache in another new process: %.1f ms "
                     "(warm call %.3f ms; %d disk hits, %d compiles)"
                     % (fd["first_ms"], fd["warm_ms"], fd["disk_hits"], fd["compiles"]))
    return rows, checks, extra, ref


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", help="path of kiln_bench_gpu")
    ap.add_argument("--quick", action="store_true", help="small sizes, few rounds (smoke test)")
    ap.add_argument("--no-save", action="store_true", help="print only")
    ap.add_argument("--out-dir", default=str(RESULTS), help="where the dated results go")
    args = ap.parse_args()

    kiln = run_kiln(find_bench(args.bench), args.quick)
    torch_results, torch_info = torch_cases(args.quick)
    rows, checks, extra, ref = build_report(kiln, torch_results, torch_info, args.quick)

    info = kiln["info"]
    now = datetime.datetime.now(datetime.timezone.utc)
    device = info.get("device", "gpu")
    slug = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")
    lines = ["# GPU benchmark, %s" % now.strftime("%Y-%m-%d"), ""]
    lines.append("Device: %s (compute capability %s, %s SMs); kiln %s; %s; host %s, Python %s."
                 % (device, info.get("compute_capability"), info.get("sm_count"), info.get("kiln_version"),
                    torch_info, platform.node(), platform.python_version()))
    lines.append("Medians over %s rounds after %s warm-up rounds; device time from CUDA events around "
                 "batches of independent ops.%s" % (info.get("rounds"), info.get("warmup"),
                                                    " QUICK RUN (small sizes)." if args.quick else ""))
    for short, (bw, src) in ref.items():
        lines.append("Copy bandwidth reference %s: %.0f GB/s (%s)." % (short, bw, src))
    lines += ["", "| case | kiln | kiln rate | PyTorch rate | ratio |", "|---|---:|---:|---:|---:|"]
    lines += ["| %s |" % " | ".join(r) for r in rows]
    lines += [""] + extra + ["", "Targets:", ""]
    for name, value, target in checks:
        lines.append("- %s: %.3f (target %s %.2f) %s" % (name, value, ">=", target,
                                                         "ok" if value >= target else "MISSED"))
    report = "\n".join(lines) + "\n"

    if not args.no_save:
        out_dir = pathlib.Path(args.out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = out_dir / ("gpu-%s-%s%s" % (slug, now.strftime("%Y-%m-%d"), "-quick" if args.quick else ""))
        stem.with_suffix(".md").write_text(report)
        stem.with_suffix(".json").write_text(json.dumps(
            {"date": now.isoformat(), "kiln": kiln, "torch": torch_results, "torch_info": torch_info,
             "checks": [{"name": n, "value": v, "target": t} for n, v, t in checks]}, indent=2) + "\n")
        print("wrote %s.{md,json}" % stem, file=sys.stderr)
    print(report)


if __name__ == "__main__":
    main()
