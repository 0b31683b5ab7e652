#!/usr/bin/env python3
"""Runs every cookbook kernel in both flavours (Metal and CUDA bodies) on the default
device, checks each against kiln ops or a kiln built-in, times both, and prints a table:
kernel, flavour, max error, time, time of the built-in.

    PYTHONPATH=python python examples/kernels/run_all.py [--size small|large] [--only NAME]
                                                         [--flavour metal|cuda] [--save]

Sizes: "large" on a GPU and "small" on the CPU by default (on the CPU, custom kernels run
their threads as fibers: the point there is that the same source runs and agrees). The
first call of each kernel compiles it (NVRTC on the GPU, the host C++ compiler on the
CPU) and caches it on disk; timings start after warm-up. With --save, writes
benchmarks/results/cookbook-<device>-<date>.{json,md} (benchmarks/report.py reads them).
Exits non-zero when a kernel fails or misses its tolerance.
"""

import argparse
import datetime
import importlib
import json
import pathlib
import platform
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent / "python"))  # the demo's progress bar

# One module per kernel family, in the order of the seed guide's list.
MODULES = [
    "rmsnorm",
    "layernorm",
    "softmax",
    "silu",
    "rope",
    "attention",
    "attention_variants",
    "dequant_matvec",
    "simdgroup_matmul",
]


def load_recipes(names=MODULES):
    """(recipes, failures): the recipes of every module that imports; for the others, one
    row naming the error (e.g. a build whose kiln.core.fast has no custom kernels)."""
    recipes, failures = [], []
    for name in names:
        try:
            recipes += importlib.import_module(name).RECIPES
        except Exception as e:  # noqa: BLE001 - reported, the other modules go on
            failures.append({"kernel": name, "flavour": "—", "error": f"{type(e).__name__}: {e}"})
    return recipes, failures


def device_name(mx):
    if mx.default_device() == mx.gpu and hasattr(mx, "device_info"):
        return mx.device_info(mx.gpu)["device_name"]
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def save(mx, size, rows, table, out):
    """<out>/cookbook-<device>-<date>.{json,md}."""
    name, date = device_name(mx), datetime.date.today().isoformat()
    kind = "gpu" if mx.default_device() == mx.gpu else "cpu"
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"cookbook-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}-{date}"
    report = {"benchmark": "kernel cookbook", "date": date, "device_name": name,
              "device_kind": kind, "size": size, "kiln": mx.__version__, "rows": rows}
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    stem.with_suffix(".md").write_text(
        f"# Kernel cookbook, {date}\n\nDevice: {name} ({kind}); kiln {mx.__version__}; {size} "
        "inputs; medians after warm-up (the first call compiles). Each kernel is timed against "
        "the kiln computation it is checked against (or a faster built-in where one exists).\n\n"
        f"```\n{table}\n```\n")
    print(f"wrote {stem}.json and .md")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["small", "large"], default=None)
    parser.add_argument("--only", action="append", help="run this kernel (repeatable)")
    parser.add_argument("--flavour", choices=["metal", "cuda"], default=None)
    parser.add_argument("--reps", type=int, default=10, help="timed runs per kernel")
    parser.add_argument("--save", action="store_true",
                        help="write the table to <out-dir>/cookbook-<device>-<date>.{json,md}")
    parser.add_argument("--out-dir", default=str(HERE.parents[1] / "benchmarks" / "results"))
    args = parser.parse_args(argv)

    import kiln.core as mx

    from cookbook import FLAVOURS, bench, default_size, format_table
    from demo.progress import progress

    recipes, rows = load_recipes()
    if args.only:
        recipes = [r for r in recipes if r.name in args.only]
    size = args.size or default_size()
    print(f"kiln {mx.__version__} cookbook on {mx.default_device()} ({size} inputs)", flush=True)
    jobs = [(r, f) for r in recipes for f in ([args.flavour] if args.flavour else FLAVOURS)]
    for recipe, flavour in progress(jobs, "kernels"):
        try:
            rows.append(bench(recipe, flavour, size, reps=args.reps))
        except Exception as e:  # noqa: BLE001 - a failing kernel is a row, not the end
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            rows.append({"kernel": recipe.name, "flavour": flavour,
                         "error": f"{type(e).__name__}: {first}"})
    table = format_table(rows)
    print(table)
    if args.save:
        save(mx, size, rows, table, pathlib.Path(args.out_dir))
    failed = [r for r in rows if not r.get("ok")]
    if failed:
        print(f"{len(failed)} of {len(rows)} failed: " + ", ".join(
            f"{r['kernel']} ({r['flavour']})" for r in failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
