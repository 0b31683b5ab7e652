"""The seed document's extension benchmark: simple_axpby (kiln ops) vs the axpby extension.

``simple_axpby(x, y, alpha, beta) = alpha * x + beta * y`` against ``axpby`` of
examples/extensions/axpby on (256, 512) float32 arrays, 5,000 evaluated calls each after 100
warm-up calls, exactly as the seed's script, which prints one line:

    Simple axpby: 0.114 s | Custom axpby: 0.109 s

The seed's timed run is repeated (--rounds, alternating the two functions so that drifts in
machine load hit both alike) and the medians are reported. On the GPU, each call's eval waits
for the GPU to finish, as on the CPU.

    PYTHONPATH=python:<extension package dir> python benchmarks/extension/axpby_bench.py \
        [--device cpu|gpu]

where the package directory is the one holding kiln_sample_extensions (after ``ctest -R
extension``: <build>/extension-test/python; after ``python setup.py build_ext --inplace``:
examples/extensions/axpby). Writes benchmarks/results/extension-axpby-<device>-<name>-<date>.
{md,json} (--out-dir to write elsewhere).
"""

import argparse
import datetime
import os
import pathlib
import platform
import statistics
import sys
import time

import kiln.core as mx
from kiln_sample_extensions import axpby

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))
from overhead import save_results  # noqa: E402  (the benchmarks' result files)


def simple_axpby(x: mx.array, y: mx.array, alpha: float, beta: float) -> mx.array:
    return alpha * x + beta * y


def bench(f, x, y, alpha, beta, iterations, warmup):
    # Warm up
    for i in range(warmup):
        z = f(x, y, alpha, beta)
        mx.eval(z)

    # Timed run
    s = time.time()
    for i in range(iterations):
        z = f(x, y, alpha, beta)
        mx.eval(z)
    e = time.time()
    return e - s


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def gpu_name():
    try:
        import subprocess

        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.splitlines()[0].strip()
    except Exception:
        return "gpu"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5, help="repeats of the seed's timed run")
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()

    device = mx.gpu if args.device == "gpu" else mx.cpu
    if not mx.is_available(device):
        sys.exit(f"{args.device} is not available")
    mx.set_default_device(device)

    M = 256
    N = 512

    x = mx.random.normal((M, N))
    y = mx.random.normal((M, N))
    alpha = 4.0
    beta = 2.0

    mx.eval((x, y))

    times = {"simple": [], "custom": []}
    for r in range(args.rounds):
        order = [("simple", simple_axpby), ("custom", axpby)]
        for name, f in order if r % 2 == 0 else reversed(order):
            times[name].append(bench(f, x, y, alpha, beta, args.iterations, args.warmup))
        simple_s, custom_s = times["simple"][-1], times["custom"][-1]
        print(f"Simple axpby: {simple_s:.3f} s | Custom axpby: {custom_s:.3f} s")

    simple_time = statistics.median(times["simple"])
    custom_time = statistics.median(times["custom"])
    # The two must agree before their times mean anything.
    agree = mx.allclose(simple_axpby(x, y, alpha, beta), axpby(x, y, alpha, beta), rtol=1e-5).item()

    device_name = cpu_name() if device == mx.cpu else gpu_name()
    date = datetime.date.today().isoformat()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    # Settings that change the CPU numbers (OpenBLAS's threads run cblas_saxpby).
    env = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "OMP_", "KILN_"))}
    report = {
        "benchmark": "extension axpby (seed document)",
        "date": date,
        "device": args.device,
        "device_name": device_name,
        "cpu_count": os.cpu_count(),
        "load_average_1min": load,
        "python": platform.python_version(),
        "kiln": mx.__version__,
        "shape": [M, N],
        "dtype": "float32",
        "iterations": args.iterations,
        "warmup": args.warmup,
        "seconds": times,
        "median_seconds": {"simple": simple_time, "custom": custom_time},
        "results_agree": agree,
        "environment": env,
    }
    per_call = lambda t: t / args.iterations * 1e6  # noqa: E731
    lines = [
        f"# Extension benchmark: simple_axpby vs axpby, {date}",
        "",
        f"Device: {args.device} ({device_name}), {os.cpu_count()} CPU cores"
        + (f", 1-minute load average {load:.1f} at the end" if load is not None else "")
        + f"; Python {report['python']}, kiln {report['kiln']}"
        + (f"; {' '.join(f'{k}={v}' for k, v in env.items())}" if env else "")
        + ".",
        f"({M}, {N}) float32, alpha = {alpha}, beta = {beta}: {args.iterations} calls, each "
        f"evaluated, after {args.warmup} warm-up calls (the seed's script); medians of "
        f"{args.rounds} such runs, alternating the two functions.",
        "",
        "| function | total (s) | µs per call |",
        "|---|---:|---:|",
        f"| simple_axpby | {simple_time:.3f} | {per_call(simple_time):.1f} |",
        f"| axpby (extension primitive) | {custom_time:.3f} | {per_call(custom_time):.1f} |",
        "",
        f"Simple axpby: {simple_time:.3f} s | Custom axpby: {custom_time:.3f} s",
        "",
        f"- results agree (allclose): {agree}",
        f"- custom / simple: {custom_time / simple_time:.2f}",
    ]
    text = "\n".join(lines) + "\n"
    print(text)

    save_results(args.out_dir, f"extension-axpby-{args.device}", device_name, date, report, text)
    if not agree:
        sys.exit("simple_axpby and axpby disagree")


if __name__ == "__main__":
    main()
