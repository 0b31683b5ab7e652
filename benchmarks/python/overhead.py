"""Per-call overhead of a small op from Python: kiln vs PyTorch (eager) vs NumPy, in the
same run.

Each case adds two 16-element float32 arrays (too small for the arithmetic to matter) and
waits for the result, so the time is the cost of calling the library: argument parsing,
dispatch, graph construction and scheduling for kiln, the eager kernel call for PyTorch
and NumPy. kiln's lazy graph construction alone is reported too. Times are medians over
repeats of many calls, after warm-up; the repeats of all cases alternate, so that the noise
of a shared machine falls on every library alike.

    PYTHONPATH=python python benchmarks/python/overhead.py [--device cpu|gpu]

Writes benchmarks/results/python-overhead-<device>-<date>.{md,json}. The target (issue 5)
is kiln within 1.5x of PyTorch's eager per-op time; PyTorch is skipped (and the report says
so) when it is not installed.
"""

import argparse
import datetime
import json
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

import kiln.core as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]
SIZE = 16


def median_seconds(fn, number, repeats, warmup=200):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def interleaved_medians(cases, repeats, warmup=200):
    """Per-call seconds of each case, {name: (fn, calls per repeat)}: the repeats of all the
    cases alternate (in a rotating order), so a slow phase of a shared, noisy machine hits
    every case alike instead of the one that happened to run then."""
    for fn, number in cases.values():
        for _ in range(min(warmup, number)):
            fn()
    times = {name: [] for name in cases}
    names = list(cases)
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, number = cases[name]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append((time.perf_counter() - start) / number)
    return {name: statistics.median(t) for name, t in times.items()}


def save_results(out_dir, prefix, device_name, date, report, text):
    """Writes <out_dir>/<prefix>-<device>-<date>.{json,md} (the device name made file-safe)."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() else "-" for c in device_name).strip("-").lower()
    stem = out_dir / f"{prefix}-{safe}-{date}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    stem.with_suffix(".md").write_text(text)
    print(f"wrote {stem}.md and .json")


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def kiln_cases(device):
    s = mx.new_stream(device)
    x = mx.array(np.arange(SIZE, dtype=np.float32), dtype=mx.float32)
    y = mx.array(np.ones(SIZE, dtype=np.float32))
    mx.eval(x, y)

    def chain():
        z = x
        for _ in range(100):
            z = mx.add(z, y)
        mx.eval(z)

    # The default stream, as PyTorch's calls use theirs; an explicit `stream=` keyword costs
    # pybind11's keyword matching on top (its own row).
    return {
        "kiln add + eval": lambda: mx.eval(mx.add(x, y)),
        "kiln add(stream=s) + eval": lambda: mx.eval(mx.add(x, y, stream=s)),
        "kiln x + y (operator) + eval": lambda: mx.eval(x + y),
        "kiln x + 1.0 (weak scalar) + eval": lambda: mx.eval(mx.add(x, 1.0)),
        "kiln add, graph only (no eval)": lambda: mx.add(x, y),
        "kiln 100 chained adds, one eval (per add)": (chain, 100),
    }


def torch_cases(device):
    import torch

    dev = "cuda" if device == mx.gpu else "cpu"
    x = torch.arange(SIZE, dtype=torch.float32, device=dev)
    y = torch.ones(SIZE, dtype=torch.float32, device=dev)
    if dev == "cuda":
        sync = torch.cuda.synchronize
        return {
            "torch add + synchronize": lambda: (torch.add(x, y), sync()),
            "torch x + 1.0 + synchronize": lambda: (x + 1.0, sync()),
        }
    return {"torch add": lambda: torch.add(x, y), "torch x + 1.0": lambda: x + 1.0}


def numpy_cases():
    x = np.arange(SIZE, dtype=np.float32)
    y = np.ones(SIZE, dtype=np.float32)
    return {"numpy add": lambda: np.add(x, y), "numpy x + 1.0": lambda: x + np.float32(1.0)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "gpu"], default=None)
    parser.add_argument("--number", type=int, default=2000, help="calls per repeat")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()

    device = mx.Device(mx.gpu if args.device == "gpu" else mx.cpu) if args.device else mx.default_device()
    if device == mx.gpu and not mx.is_available(mx.gpu):
        sys.exit("no GPU is available")
    mx.set_default_device(device)

    cases, per_add = {}, {}
    for name, case in kiln_cases(device).items():
        fn, per = case if isinstance(case, tuple) else (case, 1)
        cases[name] = (fn, max(args.number // per, 20))
        per_add[name] = per
    notes = []
    try:
        import torch  # noqa: F401

        torch_version = torch.__version__
        cases.update({name: (fn, args.number) for name, fn in torch_cases(device).items()})
    except ImportError:
        torch_version = None
        notes.append("PyTorch is not installed here: its cases were skipped, so the 1.5x target is not checked.")
    cases.update({name: (fn, args.number) for name, fn in numpy_cases().items()})
    results = interleaved_medians(cases, args.repeats)
    for name, per in per_add.items():
        results[name] /= per

    device_name = cpu_name() if device == mx.cpu else "gpu"
    if device == mx.gpu:
        try:
            import torch

            device_name = torch.cuda.get_device_name()
        except Exception:
            pass
    date = datetime.date.today().isoformat()
    ratio = None
    torch_key = "torch add + synchronize" if device == mx.gpu else "torch add"
    if torch_key in results:
        ratio = results["kiln add + eval"] / results[torch_key]
        notes.append(f"kiln add + eval / {torch_key} = {ratio:.2f}x (target <= 1.5x).")
    report = {
        "benchmark": "python per-call overhead",
        "date": date,
        "device": str(device),
        "device_name": device_name,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch_version,
        "kiln": mx.__version__,
        "array_size": SIZE,
        "seconds_per_call": results,
        "kiln_over_torch": ratio,
        "notes": notes,
    }

    lines = [
        f"# Python per-call overhead, {date}",
        "",
        f"Device: {device} ({device_name}); Python {report['python']}, NumPy {report['numpy']}, "
        f"PyTorch {torch_version or 'not installed'}, kiln {report['kiln']}.",
        f"Each call adds two {SIZE}-element float32 arrays and waits for the result; medians of "
        f"{args.repeats} repeats after warm-up.",
        "",
        "| case | µs per call |",
        "|---|---:|",
    ]
    lines += [f"| {name} | {sec * 1e6:.2f} |" for name, sec in results.items()]
    lines += [""] + [f"- {n}" for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)

    save_results(args.out_dir, f"python-overhead-{device.type.name}", device_name, date, report, text)


if __name__ == "__main__":
    main()
