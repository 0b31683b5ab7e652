"""Loading a 2 GiB checkpoint: time and peak memory of kiln.core.load against PyTorch's
safetensors (safetensors.torch.load_file), the safetensors package's NumPy loader, and
np.load for a 2 GiB .npy, in the same run.

Every case runs in a fresh process (so peak memory is its own), loads the whole file and
makes every array's data present (kiln: load + eval; safetensors.torch maps the file, so
one byte of every page of its tensors is read; the others load eagerly), and reports
the wall time and the peak resident set size (ru_maxrss) above the process's size just
before the load. A loader that holds the file twice shows a peak near 4 GiB; one that reads
straight into the arrays' memory, near 2 GiB. The file is read once first, so every case
reads from the page cache (warm cache; dropping the cache would disturb the machine).
Times are medians of --repeats processes; the peak is the largest.

Where a CUDA GPU is present, two more cases load the safetensors file onto it: kiln's
`mx.load(path, stream=mx.gpu)` (the host reads each tensor into the array's host buffer, which
the Load primitive then uploads on the GPU stream: loads default to the CPU, as in MLX, so the
stream names the GPU), with `mx.eval` of every array and `mx.synchronize()`, against PyTorch's
`safetensors.torch.load_file(path, device="cuda")` and `torch.cuda.synchronize()`. The time
runs from the call until every array is resident on the GPU; each process first creates its
CUDA context (outside the clock and before the starting RSS is read). Besides the host RSS,
they report the GPU allocator's peak: `mx.get_peak_memory(device=mx.gpu)` (bytes held by
arrays) and `torch.cuda.max_memory_allocated()` (bytes held by tensors), neither counting the
context or cached free blocks. Each GPU case runs when its own framework sees a GPU (kiln:
`mx.is_available(mx.gpu)`; PyTorch: `torch.cuda.is_available()`, with safetensors installed).

    PYTHONPATH=python python benchmarks/python/load.py [--gib 2] [--repeats 3] [--dir DIR]

Writes benchmarks/results/load-<cpu>-<date>.{md,json}, or load-<gpu>-<date>.{md,json} when
GPU cases ran. PyTorch's cases are skipped (and the report says so) where PyTorch is not
installed, and the safetensors package's where it is not installed.
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

    gpu_peak = None
    if case == "kiln":
        import kiln.core as mx

        load = lambda: mx.eval(list(mx.load(path).values()))  # noqa: E731
    elif case == "kiln-gpu":
        import kiln.core as mx

        mx.eval(mx.zeros(1, stream=mx.gpu))  # the CUDA context, outside the clock
        mx.synchronize()
        mx.reset_peak_memory(device=mx.gpu)

        def load():
            arrays = mx.load(path, stream=mx.gpu)
            mx.eval(list(arrays.values()))
            mx.synchronize()
            return arrays

        gpu_peak = lambda: mx.get_peak_memory(device=mx.gpu)  # noqa: E731
    elif case == "torch-gpu":
        import safetensors.torch as st
        import torch

        torch.zeros(1, device="cuda")  # the CUDA context, outside the clock
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()

        def load():
            tensors = st.load_file(path, device="cuda")
            torch.cuda.synchronize()
            return tensors

        gpu_peak = torch.cuda.max_memory_allocated
    elif case == "kiln-npy":
        import kiln.core as mx

        load = lambda: mx.eval(mx.load(path))  # noqa: E731
    elif case == "torch":
        import safetensors.torch as st
        import torch

        def load():
            # load_file maps the file: the pages arrive when first read, so read one byte of
            # each (4096-byte pages) to count their arrival.
            tensors = st.load_file(path)
            for t in tensors.values():
                t.reshape(-1).view(torch.uint8)[::4096].sum()
            return tensors

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
    result = {"seconds": seconds, "peak_rss": peak, "rss_before": before}
    if gpu_peak is not None:
        result["gpu_peak"] = gpu_peak()
    del out
    print(json.dumps(result))


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
    result = {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "peak_rss_gib": max(r["peak_rss"] for r in runs) / (1 << 30),
        "peak_above_start_gib": max(r["peak_rss"] - r["rss_before"] for r in runs)
        / (1 << 30),
        "runs": runs,
    }
    if all("gpu_peak" in r for r in runs):
        result["gpu_peak_gib"] = max(r["gpu_peak"] for r in runs) / (1 << 30)
    return result


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
    gpu_name, gpu_cases = None, {}
    if mx.is_available(mx.gpu):
        gpu_name = mx.device_info(mx.gpu).get("device_name", "gpu")
        gpu_cases["kiln.core.load (safetensors) onto the GPU"] = "kiln-gpu"
    if versions["torch"] is not None:
        import torch

        if torch.cuda.is_available():
            gpu_name = gpu_name or torch.cuda.get_device_name()
            gpu_cases["safetensors.torch.load_file onto the GPU"] = "torch-gpu"
            if "kiln-gpu" not in gpu_cases.values():
                notes.append("kiln sees no GPU: its GPU load was not measured.")
        elif gpu_name:
            notes.append("PyTorch sees no CUDA device: its GPU load was not measured.")
    cases.update({name: (case, st_path) for name, case in gpu_cases.items()})
    if versions["torch"] is None:
        del cases["safetensors.torch.load_file (PyTorch)"]
        notes.append(
            "PyTorch is not installed here: safetensors.torch was not measured."
        )
    if versions["safetensors"] is None:
        for name in [name for name, (case, _) in cases.items() if "torch" in case]:
            del cases[name]
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
    gpu_rows = any("gpu_peak_gib" in r for r in results.values())
    report = {
        "benchmark": "load a 2 GiB file: time and peak memory",
        "date": date,
        "device_name": device_name,
        **({"gpu_name": gpu_name} if gpu_name else {}),
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
        + "."
        + (f" GPU: {gpu_name}." if gpu_name else ""),
        f"Files: safetensors {file_gib['safetensors']:.2f} GiB (float32 and float16 tensors of 8192 columns), "
        f"npy {file_gib['npy']:.2f} GiB (one float32 array). Warm page cache; each case in a fresh process; "
        f"median time of {args.repeats} processes, largest peak.",
        "",
        "| case | time (s) | GiB/s | peak RSS above start (GiB) | peak RSS (GiB) |"
        + (" GPU allocator peak (GiB) |" if gpu_rows else ""),
        "|---|---:|---:|---:|---:|" + ("---:|" if gpu_rows else ""),
    ]
    for name, r in results.items():
        if "error" in r:
            lines.append(
                f"| {name} | failed: {r['error']} | | | |" + (" |" if gpu_rows else "")
            )
            continue
        size = file_gib["npy" if "npy" in name else "safetensors"]
        lines.append(
            f"| {name} | {r['seconds']:.3f} | {size / r['seconds']:.2f} | "
            f"{r['peak_above_start_gib']:.2f} | {r['peak_rss_gib']:.2f} |"
        )
        if gpu_rows:
            gpu = r.get("gpu_peak_gib")
            lines[-1] += f" {gpu:.2f} |" if gpu is not None else " |"
    if gpu_rows:
        notes.insert(
            0,
            "Onto the GPU: the time until every array is resident there (kiln: "
            "load(path, stream=mx.gpu) + eval + synchronize; PyTorch: "
            "load_file(path, device='cuda') + torch.cuda.synchronize()), after the "
            "CUDA context is up. GPU allocator peak: mx.get_peak_memory(device=mx.gpu), "
            "torch.cuda.max_memory_allocated() (the arrays' bytes, not the context).",
        )
    lines += ["", *[f"- {n}" for n in notes]]
    text = "\n".join(lines) + "\n"
    print(text)
    save_results(
        args.out_dir, "load", gpu_name if gpu_rows else device_name, date, report, text
    )


if __name__ == "__main__":
    main()
