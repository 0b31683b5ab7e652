#!/usr/bin/env python3
"""CPU custom kernels against kiln's built-in ops: an elementwise kernel (a + b on 2^24
float32, target: within 3x of kiln's add), an RMSNorm kernel with threadgroup memory and
barriers on (4096, 4096) float32 (target: within 10x of the same formula in kiln ops; kiln
has no fused rms_norm), first-use compile time and disk-cache load time, at -O2 (the
default) and -O1.

Builds benchmarks/cpu/custom_kernel_bench.cpp with the host compiler against a kiln build
(its libkiln.so), runs it, and writes benchmarks/results/cpu-custom-kernel-<cpu>-<date>.{json,md}.

    python benchmarks/cpu/custom_kernel.py [--build-dir build/dev] [--quick] [--out-dir DIR]
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import cpu_model, sanitize  # noqa: E402  (the CPU benchmark's machine naming)

ELEM_BYTES = 3 * 4 * (1 << 24)  # a, b read and out written once
RMS_BYTES = 2 * 4 * 4096 * 4096  # x read (at least once) and out written


def build(build_dir, work):
    lib = Path(build_dir) / "libkiln.so"
    if not lib.exists():
        sys.exit(f"{lib} not found: build kiln first (cmake --build {build_dir} --target kiln)")
    exe = Path(work) / "custom_kernel_bench"
    cxx = os.environ.get("CXX", shutil.which("c++") or "g++")
    cmd = [cxx, "-std=c++20", "-O2", f"-I{ROOT}",
           str(ROOT / "benchmarks/cpu/custom_kernel_bench.cpp"), str(lib.resolve()),
           f"-Wl,-rpath,{lib.resolve().parent}", "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return exe


def markdown(r):
    m, k = r["machine"], r["kiln"]
    ratio_add = k["add_kernel_seconds"] / k["add_builtin_seconds"]
    ratio_rms = k["rmsnorm_kernel_seconds"] / k["rmsnorm_builtin_seconds"]
    gbs = lambda b, s: b / s / 1e9
    lines = [
        f"# CPU custom kernels, {r['date']}",
        "",
        f"- Machine: {m['hostname']}, {m['cpu_model']}, {m['logical_cpus']} logical CPUs; "
        f"load average before / after: {m['load_before']} / {m['load_after']}",
        f"- kiln with {k['threads']} threads; fibers on {k['fibers']}; host compiler "
        f"{r['compiler']}",
        "- Medians after warm-up; each kernel run alternates with its built-in counterpart.",
        "",
    ]
    if max(m["load_before"], m["load_after"]) > 0.5 * m["logical_cpus"]:
        lines += ["> The machine was shared and busy during this run: absolute times are "
                  "inflated; the ratios compare runs made side by side.", ""]
    lines += [
        "| case | custom kernel | kiln built-in | kernel / built-in | target |",
        "| --- | --- | --- | --- | --- |",
        f"| a + b, 2^24 float32 | {k['add_kernel_seconds'] * 1e3:.2f} ms "
        f"({gbs(ELEM_BYTES, k['add_kernel_seconds']):.1f} GB/s) | "
        f"{k['add_builtin_seconds'] * 1e3:.2f} ms ({gbs(ELEM_BYTES, k['add_builtin_seconds']):.1f}"
        f" GB/s) | {ratio_add:.2f}x | <= 3x: {'met' if ratio_add <= 3 else 'NOT met'} |",
        f"| RMSNorm (4096, 4096) float32 | {k['rmsnorm_kernel_seconds'] * 1e3:.1f} ms | "
        f"{k['rmsnorm_builtin_seconds'] * 1e3:.1f} ms | {ratio_rms:.2f}x | "
        f"<= 10x: {'met' if ratio_rms <= 10 else 'NOT met'} |",
        "",
        f"Max |kernel - built-in|: add {k['add_max_abs_diff']:.3g}, "
        f"RMSNorm {k['rmsnorm_max_abs_diff']:.3g}.",
        "",
        "| compile | -O2 (default) | -O1 | disk-cache load (-O2) |",
        "| --- | --- | --- | --- |",
        f"| elementwise kernel | {k['add_compile_seconds']:.2f} s | "
        f"{k['add_compile_seconds_O1']:.2f} s | {k['add_disk_load_seconds'] * 1e3:.1f} ms |",
        f"| RMSNorm kernel | {k['rmsnorm_compile_seconds']:.2f} s | "
        f"{k['rmsnorm_compile_seconds_O1']:.2f} s | {k['rmsnorm_disk_load_seconds'] * 1e3:.1f} ms |",
        "",
        f"Kernel run time at -O1: a + b {k['add_kernel_seconds_O1'] * 1e3:.2f} ms, RMSNorm "
        f"{k['rmsnorm_kernel_seconds_O1'] * 1e3:.1f} ms.",
        "",
    ]
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build-dir", default=str(ROOT / "build/dev"))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out-dir", default=str(ROOT / "benchmarks/results"))
    args = p.parse_args()

    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory() as work:
        exe = build(args.build_dir, work)
        proc = subprocess.run([str(exe)] + (["--quick"] if args.quick else []),
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"{exe} failed ({proc.returncode}):\n{proc.stderr}")
        kiln = json.loads(proc.stdout)
    cc = subprocess.run([os.environ.get("KILN_CXX", "c++"), "--version"], capture_output=True,
                        text=True).stdout.splitlines()
    report = {
        "date": datetime.date.today().isoformat(),
        "machine": {
            "hostname": platform.node(),
            "cpu_model": cpu_model(),
            "logical_cpus": os.cpu_count(),
            "load_before": load_before,
            "load_after": round(os.getloadavg()[0], 2),
        },
        "compiler": cc[0] if cc else "unknown",
        "kiln": kiln,
    }
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"cpu-custom-kernel-{sanitize(cpu_model())}-{report['date']}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    text = markdown(report)
    stem.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
