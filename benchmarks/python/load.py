"""Loading a 2 GiB checkpoint: time and peak memory of kiln.core.load against PyTorch's
safetensors (safetensors.torch.load_file), the safetensors package's NumPy loader, and
np.load for a 2 GiB .npy, in the same run.

Every case runs in a fresh process (so peak memory is its own), loads the whole file and
makes every array's data present (kiln: load + eval; the others load eagerly), and reports
the wall time and the peak resident set size (ru_maxrss) above the process's size just
before the load. A loader that holds the file twice shows a peak near 4 GiB; one that reads
straight into the arrays' memory, near 2 GiB. The file is read once first, so every case
reads from the page cache (warm cache; dropping the cache would disturb the machine).
Times are medians of --repeats processes; the peak is the largest.

    PYTHONPATH=python python benchmarks/python/load.py [--gib 2] [--repeats 3] [--dir DIR]

Writes benchmarks/results/load-<cpu>-<date>.{md,json}. PyTorch's case is skipped (and the
report says so) where PyTorch is not installed.
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(case, path):
    """Runs one case in this (fresh) process; prints a JSON line."""
    import numpy as np

    if case == "kiln":
        import kiln.core as mx

        load = lambda: mx.eval(list(mx.load(path).values()))  # noqa: E731
    elif case == "kiln-npy":
        import kiln.core as mx

        load = lambda: mx.eval(mx.load(path))  # noqa: E731
    elif case == "torch":
        import safetensors.torch as st

        load = lambda: st.load_file(path)  # noqa: E731
    elif case == "safetensors-numpy":
        import safetensors.numpy as st

        load = lambda: st.load_file(path)  # noqa: E731
    elif case == "numpy-npy":
        load = lambda: np.load(path)  # noqa: E731
    else:
        raise SystemExit(f"unknown case {case}")
    before = rss_bytes()
    start = time.perf_counter()
    out = load()
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    del out
    print(json.dumps({"seconds": seconds, "peak_rss": peak, "rss_before": before}))


def make_files(directory, gib):
    """A safetensors file of float32 and float16 tensors and a .npy of one float32 array,
    each `gib` GiB, written by kiln (in this child process)."""
    import kiln.core as mx

    n = 8192
    tensor_bytes = n * n * 4
    total = int(gib * (1 << 30))
    arrays, size, i = {}, 0, 0
    while size < total:
        dtype = mx.float32 if i % 5 < 3 else mx.float16
        rows = min(n, (total - size) // (n * dtype.size))
        if rows == 0:
            break
        arrays[f"layer{i}.weight"] = (
            (mx.arange(rows * n, dtype=mx.float32) % 251).astype(dtype).reshape(rows, n)
        )
        size += rows * n * dtype.size
        i += 1
    mx.save_safetensors(str(directory / "model.safetensors"), arrays)
    del arrays
    mx.clear_cache()
    mx.save(
        str(directory / "array.npy"),
        (mx.arange(total // 4, dtype=mx.float32) % 251).reshape(-1, 8192),
    )
    assert tensor_bytes > 0


def run_case(case, path, repeats):
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, __file__, "--child", case, str(path)],
            env=env,
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            return {
                "error": (
                    out.stderr.strip().splitlines()[-1]
                    if out.stderr.strip()
                    else "failed"
                )
            }
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "peak_rss_gib": max(r["peak_rss"] for r in runs) / (1 << 30),
        "peak_above_start_gib": max(r["peak_rss"] - r["rss_before"] for r in runs)
        / (1 << 30),
        "runs": runs,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--dir",
        default=None,
        help="where the files are written (default: a temporary one)",
    )
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument(
        "--child", nargs=2, metavar=("CASE", "PATH"), help=argparse.SUPPRESS
    )
    parser.add_argument("--make", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    if args.make:
        return make_files(pathlib.Path(args.make), args.gib)

    from overhead import cpu_name, save_results

    tmp = tempfile.TemporaryDirectory(dir=args.dir)
    directory = pathlib.Path(tmp.name)
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    subprocess.run(
        [sys.executable, __file__, "--make", str(directory), "--gib", str(args.gib)],
        env=env,
        check=True,
    )
    st_path, npy_path = directory / "model.safetensors", directory / "array.npy"
    for p in (st_path, npy_path):  # warm the page cache
        with open(p, "rb") as f:
            while f.read(1 << 26):
                pass

    notes = []
    load_avg = os.getloadavg()[0]
    if load_avg > 0.5 * (os.cpu_count() or 1):
        notes.append(
            f"The machine was busy (load average {load_avg:.1f} on {os.cpu_count()} cores): "
            "times are noisy; the peak memory is not."
        )
    versions = {"python": platform.python_version()}
    for mod in ("numpy", "safetensors", "torch"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            versions[mod] = None
    import kiln.core as mx

    versions["kiln"] = mx.__version__
    cases = {
        "kiln.core.load (safetensors) + eval": ("kiln", st_path),
        "safetensors.numpy.load_file": ("safetensors-numpy", st_path),
        "safetensors.torch.load_file (PyTorch)": ("torch", st_path),
        "kiln.core.load (npy) + eval": ("kiln-npy", npy_path),
        "numpy.load (npy)": ("numpy-npy", npy_path),
    }
    if versions["torch"] is None:
        del cases["safetensors.torch.load_file (PyTorch)"]
        notes.append(
            "PyTorch is not installed here: safetensors.torch was not measured."
        )
    if versions["safetensors"] is None:
        del cases["safetensors.numpy.load_file"]
        notes.append(
            "The safetensors package is not installed here: its loaders were not measured."
        )
    results = {
        name: run_case(case, path, args.repeats) for name, (case, path) in cases.items()
    }
    file_gib = {
        "safetensors": st_path.stat().st_size / (1 << 30),
        "npy": npy_path.stat().st_size / (1 << 30),
    }
    tmp.cleanup()

    date = datetime.date.today().isoformat()
    device_name = cpu_name()
    report = {
        "benchmark": "load a 2 GiB file: time and peak memory",
        "date": date,
        "device_name": device_name,
        "cores": os.cpu_count(),
        "versions": versions,
        "file_gib": file_gib,
        "repeats": args.repeats,
        "results": results,
        "notes": notes,
    }
    lines = [
        f"# Loading a {args.gib:g} GiB file, {date}",
        "",
        f"CPU: {device_name} ({os.cpu_count()} cores); "
        + ", ".join(f"{k} {v or 'not installed'}" for k, v in versions.items())
        + ".",
        f"Files: safetensors {file_gib['safetensors']:.2f} GiB (float32 and float16 tensors of 8192 columns), "
        f"npy {file_gib['npy']:.2f} GiB (one float32 array). Warm page cache; each case in a fresh process; "
        f"median time of {args.repeats} processes, largest peak.",
        "",
        "| case | time (s) | GiB/s | peak RSS above start (GiB) | peak RSS (GiB) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error']} | | | |")
            continue
        size = file_gib["npy" if "npy" in name else "safetensors"]
        lines.append(
            f"| {name} | {r['seconds']:.3f} | {size / r['seconds']:.2f} | "
            f"{r['peak_above_start_gib']:.2f} | {r['peak_rss_gib']:.2f} |"
        )
    lines += ["", *[f"- {n}" for n in notes]]
    text = "\n".join(lines) + "\n"
    print(text)
    save_results(args.out_dir, "load", device_name, date, report, text)


if __name__ == "__main__":
    main()
