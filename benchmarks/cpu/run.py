#!/usr/bin/env python3
"""CPU benchmark: kiln against NumPy and against OpenBLAS called directly, in one run.

Runs the C++ binary kiln_bench_cpu (kiln and cblas_sgemm timings, JSON on stdout) and
times the same cases with NumPy in this process, alternating the two for a few rounds so
that both see the same machine load; per case, the median over rounds of each round's
median after warm-up. Writes benchmarks/results/cpu-<cpu model>-<YYYY-MM-DD>.{json,md}:
times, throughput (GB/s of compulsory traffic, or GFLOP/s), ratios and the issue's targets.

    python benchmarks/cpu/run.py [--build-dir build/dev] [--rounds 3] [--quick] [--out-dir DIR]

Build the binary first: cmake --build build/dev --target kiln_bench_cpu
"""

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
N_ELEM = 1 << 24
N_RED = 4096
OPS_CHAIN = 10000

# name -> (kind, compulsory bytes or flops, description). Bytes count each input read and
# the output written once (float32).
CASES = {
    "add_2^24_f32": ("bytes", 3 * 4 * N_ELEM, "add, 2^24 float32"),
    "exp_2^24_f32": ("bytes", 2 * 4 * N_ELEM, "exp, 2^24 float32"),
    "sum_all_4096^2_f32": ("bytes", 4 * N_RED * N_RED, "sum over all, (4096, 4096) float32"),
    "sum_last_axis_4096^2_f32": (
        "bytes",
        4 * N_RED * N_RED + 4 * N_RED,
        "sum over the last axis, (4096, 4096) float32",
    ),
    "matmul_1024^3_f32": ("flops", 2 * 1024**3, "matmul 1024^3 float32"),
    "matmul_2048^3_f32": ("flops", 2 * 2048**3, "matmul 2048^3 float32"),
}


def median_time(f, warmup, reps):
    for _ in range(warmup):
        f()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def numpy_timings(warmup, reps):
    rng = np.random.default_rng(0)
    x = rng.random(N_ELEM, dtype=np.float32)
    y = rng.random(N_ELEM, dtype=np.float32)
    m = rng.random((N_RED, N_RED), dtype=np.float32)
    out = {
        "add_2^24_f32": median_time(lambda: np.add(x, y), warmup, reps),
        "exp_2^24_f32": median_time(lambda: np.exp(x), warmup, reps),
        "sum_all_4096^2_f32": median_time(lambda: m.sum(), warmup, reps),
        "sum_last_axis_4096^2_f32": median_time(lambda: m.sum(axis=-1), warmup, reps),
    }
    del x, y, m
    for n, mreps in ((1024, 15), (2048, 7)):
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        out[f"matmul_{n}^3_f32"] = median_time(lambda: a @ b, warmup, min(reps, mreps))

    # For scale: NumPy's own cost of one float32 scalar add.
    def chain():
        v, one = np.float32(0), np.float32(1)
        for _ in range(OPS_CHAIN):
            v = v + one

    out["scalar_add_chain_10000"] = median_time(chain, warmup, reps)
    return out


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def sanitize(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


def numpy_blas():
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # older NumPy: no dict mode
        return "unknown"


def run_binary(binary, quick):
    cmd = [str(binary)] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{binary} failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout)


def throughput(kind, amount, seconds):
    return amount / seconds / 1e9  # GB/s or GFLOP/s


def summarize(kiln, numpy_s):
    """One row per case: medians, throughputs, ratio and target."""

    def seconds(name):
        return kiln.get(name, {}).get("seconds")

    rows = []
    for name, (kind, amount, desc) in CASES.items():
        unit = "GB/s" if kind == "bytes" else "GFLOP/s"
        is_matmul = name.startswith("matmul")
        peer_name = "OpenBLAS (cblas_sgemm, same binary)" if is_matmul else "NumPy"
        peer_s = seconds("cblas_sgemm" + name[len("matmul") :]) if is_matmul else numpy_s[name]
        k = seconds(name)
        row = {
            "case": name,
            "description": desc,
            "unit": unit,
            "kiln_seconds": k,
            "kiln_error": kiln.get(name, {}).get("error"),
            "numpy_seconds": numpy_s.get(name),
            "numpy_throughput": throughput(kind, amount, numpy_s[name]),
            "peer": peer_name,
            "peer_seconds": peer_s,
            "target_ratio": 0.95 if is_matmul else 1.0,
        }
        if is_matmul:
            row["blas_throughput"] = throughput(kind, amount, peer_s) if peer_s else None
        if k and peer_s:
            row["kiln_throughput"] = throughput(kind, amount, k)
            row["ratio"] = peer_s / k  # kiln throughput / peer throughput
            row["met"] = row["ratio"] >= row["target_ratio"]
        rows.append(row)

    total = seconds("scalar_add_chain_10000")
    build = seconds("scalar_add_chain_10000_build_only")
    overhead = {
        "case": "scalar_add_chain_10000",
        "description": "build and eval a chain of 10,000 scalar adds",
        "kiln_us_per_op": total / OPS_CHAIN * 1e6 if total else None,
        "kiln_build_us_per_op": build / OPS_CHAIN * 1e6 if build else None,
        "numpy_scalar_us_per_op": numpy_s["scalar_add_chain_10000"] / OPS_CHAIN * 1e6,
        "target_us_per_op": 2.0,
        "kiln_error": kiln.get("scalar_add_chain_10000", {}).get("error"),
    }
    if total:
        overhead["met"] = overhead["kiln_us_per_op"] < 2.0
    return rows, overhead


def fmt(v, digits=2):
    return "—" if v is None else f"{v:.{digits}f}"


def markdown(report):
    m = report["machine"]
    lines = [
        f"# CPU benchmark, {report['date']}",
        "",
        f"- Machine: {m['hostname']}, {m['cpu_model']}, {m['logical_cpus']} logical CPUs",
        f"- Load average before / after: {m['load_before']} / {m['load_after']}",
        f"- Environment: {m['environment'] or 'no OPENBLAS_* or KILN_* variables'}",
        f"- kiln {report['binary_info'].get('kiln_version')} with "
        f"{report['binary_info'].get('kiln_threads')} threads; "
        f"{report['binary_info'].get('openblas_config')} "
        f"({report['binary_info'].get('openblas_threads')} threads)",
        f"- NumPy {report['numpy']['version']} (BLAS: {report['numpy']['blas']}), "
        f"Python {platform.python_version()}",
        f"- Median over {report['rounds']} alternating rounds of kiln and NumPy of each round's "
        f"median of {report['binary_info'].get('reps')} runs (matmul: 15 at 1024, 7 at 2048; "
        "kiln and cblas_sgemm alternate run by run) after "
        f"{report['binary_info'].get('warmup')} warm-up runs; kiln and NumPy both allocate "
        "their outputs.",
        "",
    ]
    busy = max(m["load_before"], m["load_after"]) > 0.5 * m["logical_cpus"]
    if busy:
        lines += [
            "> The machine was shared and busy during this run (load average above half its "
            "CPUs): absolute numbers are noisy, ratios less so.",
            "",
        ]
    lines += [
        "| case | kiln | peer | peer | kiln / peer | target | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        if r["kiln_error"]:
            kiln_cell = f"not run: {r['kiln_error']}"
        else:
            ms = r["kiln_seconds"] * 1e3
            kiln_cell = f"{fmt(r.get('kiln_throughput'))} {r['unit']} ({fmt(ms)} ms)"
        peer_tp = r.get("blas_throughput") if "blas_throughput" in r else r.get("numpy_throughput")
        peer_cell = f"{fmt(peer_tp)} {r['unit']} ({fmt((r['peer_seconds'] or 0) * 1e3)} ms)"
        met = "—" if "met" not in r else ("yes" if r["met"] else "**no**")
        lines.append(
            f"| {r['description']} | {kiln_cell} | {r['peer']} | {peer_cell} | "
            f"{fmt(r.get('ratio'))} | >= {r['target_ratio']} | {met} |"
        )
    o = report["overhead"]
    met = "—" if "met" not in o else ("yes" if o["met"] else "**no**")
    if o["kiln_error"]:
        kiln_cell = f"not run: {o['kiln_error']}"
    else:
        build = fmt(o["kiln_build_us_per_op"])
        kiln_cell = f"{fmt(o['kiln_us_per_op'])} us/op (graph building alone {build})"
    lines.append(
        f"| per-op overhead: {o['description']} | {kiln_cell} | NumPy scalar add | "
        f"{fmt(o['numpy_scalar_us_per_op'], 3)} us/op | — | "
        f"< {o['target_us_per_op']} us/op | {met} |"
    )
    matmuls = [r for r in report["rows"] if r["case"].startswith("matmul")]
    lines += ["", "NumPy's own matmul, for reference (its bundled BLAS):", ""]
    for r in matmuls:
        lines.append(f"- {r['description']}: {fmt(r['numpy_throughput'])} GFLOP/s")
    lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=str(ROOT / "build" / "dev"))
    parser.add_argument("--binary", help="path to kiln_bench_cpu (overrides --build-dir)")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--rounds", type=int, default=3, help="alternations of kiln and NumPy")
    parser.add_argument("--tag", default="", help="suffix of the result files' names")
    parser.add_argument("--quick", action="store_true", help="few repetitions (smoke test)")
    args = parser.parse_args()

    binary = Path(args.binary or Path(args.build_dir) / "benchmarks" / "cpp" / "kiln_bench_cpu")
    if not binary.exists():
        sys.exit(
            f"{binary} not found; build it: "
            f"cmake --build {args.build_dir} --target kiln_bench_cpu"
        )

    warmup, reps = (1, 3) if args.quick else (3, 21)
    load_before = round(os.getloadavg()[0], 2)
    kiln_rounds, numpy_rounds = [], []
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}: kiln and OpenBLAS ({binary})", file=sys.stderr)
        raw = run_binary(binary, args.quick)
        kiln_rounds.append(raw["results"])
        print(f"round {r + 1}/{args.rounds}: NumPy", file=sys.stderr)
        numpy_rounds.append(numpy_timings(warmup, reps))
    load_after = round(os.getloadavg()[0], 2)

    kiln_results = {}
    for name in kiln_rounds[0]:
        times = [k[name]["seconds"] for k in kiln_rounds if "seconds" in k.get(name, {})]
        kiln_results[name] = (
            {"seconds": statistics.median(times)} if times else kiln_rounds[0][name]
        )
    numpy_s = {name: statistics.median(n[name] for n in numpy_rounds) for name in numpy_rounds[0]}
    rows, overhead = summarize(kiln_results, numpy_s)
    model = cpu_model()
    date = datetime.date.today().isoformat()
    report = {
        "date": date,
        "machine": {
            "hostname": platform.node(),
            "cpu_model": model,
            "logical_cpus": os.cpu_count(),
            "load_before": load_before,
            "load_after": load_after,
            # Overrides of OpenBLAS's kernel choice or thread count, if any.
            "environment": {
                k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "KILN_"))
            },
        },
        "binary_info": raw["info"],
        "rounds": args.rounds,
        "numpy": {"version": np.__version__, "blas": numpy_blas(), "seconds": numpy_s},
        "rows": rows,
        "overhead": overhead,
        "kiln_rounds": kiln_rounds,
        "numpy_rounds": numpy_rounds,
    }
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"cpu-{sanitize(model)}-{date}{'-' + sanitize(args.tag) if args.tag else ''}"
    Path(f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    md = markdown(report)
    Path(f"{stem}.md").write_text(md)
    print(md)
    print(f"wrote {stem}.json and {stem}.md", file=sys.stderr)


if __name__ == "__main__":
    main()
