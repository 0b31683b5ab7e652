#!/usr/bin/env python3
"""GPU einsum of batched attention-like contractions: kiln against PyTorch (issue 14).

Both run on the same GPU in the same process. Cases, at B 4, H 32, Lq = Lk 1024, D 128, in
float32 and bfloat16:
- scores, bhqd,bhkd->bhqk, and weighted values, bhqk,bhkd->bhqd, on (B, H, L, D) operands;
- the same two with MLX's (B, L, H, D) layout, bqhd,bkhd->bhqk and bhqk,bkhd->bqhd, whose
  path needs a transpose of the inputs (or of the output).
Each einsum (kiln.core.einsum, torch.einsum) is timed next to the plain batched matmul that
computes the same thing (`q @ k.swapaxes(-1, -2)`, `p @ v`, with transposed views for the
(B, L, H, D) layouts), so the einsum's own overhead over a matmul is visible, and reported in
GFLOP/s of 2 B H Lq Lk D flops. The device copy bandwidth (PyTorch copying 256 MiB) gives the
scale of what a transpose of the operands can cost.

Each time is the median over rounds, after warm-up, of a batch of independent calls
(timers.py): kiln's on the host around the batch and its final synchronize (each call's
output submitted with async_eval, as in a loop; a batch is sized to run for about 20 ms and
to hold at most about 8 GiB of outputs), PyTorch's with CUDA events around the batch. Every case's answers
(kiln's and PyTorch's, einsum and matmul) are checked against a float64 NumPy einsum on a
subset (the first batch entry, the first 4 heads) of the same inputs, rounded to the dtype.

float32 products: kiln's GPU matmul (cuBLASLt) computes in full float32 unless the
environment variable KILN_MATMUL_TF32=1 is set at start-up (then TF32 tensor cores);
--tf32 sets it. torch.backends.cuda.matmul.allow_tf32 is set to the same value, and the
report records both. bfloat16 products accumulate in float32 in kiln; PyTorch's
allow_bf16_reduced_precision_reduction is left at its default and recorded.

    PYTHONPATH=python python benchmarks/gpu/einsum.py [--quick] [--tf32] [--out-dir DIR]

Writes benchmarks/results/gpu-einsum-<device>-<date>.{json,md} (gpu-einsum-quick-... with
--quick, ...-tf32-... with --tf32). Needs a GPU; PyTorch's columns are empty (and the report says so) without PyTorch
with CUDA. benchmarks/cpu/einsum.py is the CPU version (against NumPy).
"""

import argparse
import datetime
import os
import pathlib
import platform
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))

if "--tf32" in sys.argv:  # kiln reads it at its first float32 matmul
    os.environ["KILN_MATMUL_TF32"] = "1"

import numpy as np  # noqa: E402

import kiln.core as mx  # noqa: E402
from overhead import save_results  # noqa: E402
from timers import time_kiln, time_torch, torch_copy_bandwidth  # noqa: E402

# (name, subscripts): the operands' shapes follow from the labels (b, h, q, k, d).
CASES = [
    ("scores", "bhqd,bhkd->bhqk"),
    ("weighted values", "bhqk,bhkd->bhqd"),
    ("scores, (B, L, H, D) inputs", "bqhd,bkhd->bhqk"),
    ("weighted values, (B, L, H, D) values and output", "bhqk,bkhd->bqhd"),
]
OUTPUT_BUDGET = 8 << 30  # bytes of kiln outputs one timed batch may hold
CHECK_SUBSET = {"b": 1, "h": 4}  # the checked part: first batch entry, first 4 heads


def matmul_equivalent(subscripts, perm):
    """The same product as a batched matmul of (B, H, ., .) views; perm(x, axes) transposes
    in the framework at hand."""
    return {
        "bhqd,bhkd->bhqk": lambda q, k: q @ perm(k, (0, 1, 3, 2)),
        "bhqk,bhkd->bhqd": lambda p, v: p @ v,
        "bqhd,bkhd->bhqk": lambda q, k: perm(q, (0, 2, 1, 3)) @ perm(k, (0, 2, 3, 1)),
        "bhqk,bkhd->bqhd": lambda p, v: perm(p @ perm(v, (0, 2, 1, 3)), (0, 2, 1, 3)),
    }[subscripts]


def terms(subscripts):
    inputs, output = subscripts.split("->")
    return inputs.split(","), output


def subset(term):
    return tuple(slice(0, CHECK_SUBSET.get(c, None)) for c in term)


def flops(sizes):
    return 2 * sizes["b"] * sizes["h"] * sizes["q"] * sizes["k"] * sizes["d"]


def tolerance(dtype_name, tf32):
    """Largest |error| / max |reference| accepted: float32 products keep ~1e-6 of it, TF32
    ~1e-3, bfloat16 outputs are rounded to 8 bits."""
    if dtype_name == "bfloat16":
        return 2e-2
    return 1e-2 if tf32 else 1e-4


def timed(results, key, timer, fn, rounds, **kw):
    """results[key] = seconds per call, or results[key + '_error'] when the call fails."""
    try:
        results[key] = timer(fn, rounds, **kw)
    except Exception as e:  # recorded, so one failing case does not end the run
        results[key + "_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        print(f"  {key}: failed ({results[key + '_error']})", file=sys.stderr, flush=True)


def kiln_inputs(arrays, dtype):
    out = [mx.array(a).astype(dtype) for a in arrays]
    mx.eval(*out)
    return out


def torch_inputs(torch, arrays, dtype_name):
    return [torch.from_numpy(a).cuda().to(getattr(torch, dtype_name)) for a in arrays]


def check(subscripts, kiln_ops, torch_ops, kiln_fns, torch_fns, tol):
    """{implementation: max |error| / max |reference|} against a float64 NumPy einsum on the
    checked subset of the inputs (as rounded to the dtype), and whether all are within tol."""
    ins, out = terms(subscripts)
    ref_ops = [
        np.array(a[subset(t)].astype(mx.float32)).astype(np.float64) for a, t in zip(kiln_ops, ins)
    ]
    ref = np.einsum(subscripts, *ref_ops, optimize=True)
    scale = float(np.abs(ref).max()) or 1.0
    errors = {}
    for fns, ops, to_host in (
        (kiln_fns, kiln_ops, lambda x: np.array(x.astype(mx.float32))),
        (torch_fns, torch_ops, lambda x: x.float().cpu().numpy()),
    ):
        for name, fn in fns.items():
            try:
                got = to_host(fn(*ops)[subset(out)])
                errors[name] = float(np.abs(got - ref).max()) / scale
            except Exception as e:  # recorded as a disagreement
                errors[name] = f"{type(e).__name__}: {str(e)[:200]}"
    ok = all(isinstance(e, float) and e <= tol for e in errors.values())
    return errors, ok


def run_case(name, subscripts, sizes, dtype_name, rounds, torch, tf32, rng):
    """Times and checks one case in one dtype; returns its result row."""
    mx.clear_cache()  # each case starts with both allocators' caches empty
    if torch is not None:
        torch.cuda.empty_cache()
    ins, out = terms(subscripts)
    arrays = [rng.standard_normal([sizes[c] for c in t], dtype=np.float32) for t in ins]
    dtype = getattr(mx, dtype_name)
    kops = kiln_inputs(arrays, dtype)
    tops = torch_inputs(torch, arrays, dtype_name) if torch is not None else None
    del arrays
    kiln_fns = {
        "kiln einsum": lambda a, b: mx.einsum(subscripts, a, b),
        "kiln matmul": matmul_equivalent(subscripts, mx.transpose),
    }
    torch_fns = {}
    if torch is not None:
        torch_fns = {
            "PyTorch einsum": lambda a, b: torch.einsum(subscripts, a, b),
            "PyTorch matmul": matmul_equivalent(subscripts, lambda x, p: x.permute(*p)),
        }
    errors, ok = check(subscripts, kops, tops, kiln_fns, torch_fns, tolerance(dtype_name, tf32))

    out_bytes = int(np.prod([sizes[c] for c in out])) * dtype.size
    max_batch = max(3, min(1000, OUTPUT_BUDGET // out_bytes))
    row = {
        "case": name,
        "subscripts": subscripts,
        "dtype": dtype_name,
        "shapes": [[sizes[c] for c in t] for t in ins],
        "flops": flops(sizes),
        "operand_bytes": sum(int(np.prod([sizes[c] for c in t])) for t in ins) * dtype.size,
        "output_bytes": out_bytes,
        "relative_errors": errors,
        "agree": ok,
    }
    times = {}
    for key, fn in kiln_fns.items():
        timed(times, key, time_kiln, lambda fn=fn: fn(*kops), rounds, max_batch=max_batch)
    for key, fn in torch_fns.items():
        timed(times, key, time_torch, lambda fn=fn: fn(*tops), rounds)
    for key, value in times.items():
        if key.endswith("_error"):
            row[key.replace(" ", "_")] = value
        else:
            row[key.replace(" ", "_") + "_ms"] = value * 1e3
            row[key.replace(" ", "_") + "_gflops"] = row["flops"] / value / 1e9
    for peer in ("kiln", "PyTorch"):
        e, m = row.get(f"{peer}_einsum_ms"), row.get(f"{peer}_matmul_ms")
        if e and m:
            row[f"{peer}_einsum_over_matmul"] = e / m
    if row.get("kiln_einsum_ms") and row.get("PyTorch_einsum_ms"):
        row["PyTorch_over_kiln_einsum"] = row["PyTorch_einsum_ms"] / row["kiln_einsum_ms"]
    print({k: v for k, v in row.items() if k != "relative_errors"}, file=sys.stderr, flush=True)
    return row


def import_torch():
    """(torch, a note): torch when it sees a CUDA device, else None and why not."""
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed: its columns are empty"
    if not torch.cuda.is_available():
        return None, f"PyTorch {torch.__version__} sees no CUDA device: its columns are empty"
    return torch, None


def fmt(row, peer, kind):
    ms = row.get(f"{peer}_{kind}_ms")
    if ms is None:
        return "failed" if f"{peer}_{kind}_error" in row else ""
    return f"{ms:.3f} ms ({row[f'{peer}_{kind}_gflops']:.0f})"


def report_text(report, rounds):
    lines = [
        f"# GPU einsum, batched attention-like contractions, {report['date']}",
        "",
        f"Device: {report['device_name']}; Python {report['python']}, "
        f"PyTorch {report['torch'] or 'not available'}, kiln {report['kiln']}, "
        f"NumPy {report['numpy']}. Sizes {report['sizes']}. Medians over {rounds} rounds of "
        "batches of calls after warm-up (PyTorch: CUDA events; kiln: host time around each "
        "batch and its synchronize). Times in ms, (GFLOP/s of 2 B H Lq Lk D); "
        "einsum/matmul: the einsum's time over the equivalent batched matmul's.",
        "",
        f"float32 matmul: kiln TF32 {'on' if report['kiln_tf32'] else 'off'} "
        "(KILN_MATMUL_TF32), PyTorch allow_tf32="
        f"{report['torch_settings'].get('allow_tf32')}, "
        "allow_bf16_reduced_precision_reduction="
        f"{report['torch_settings'].get('allow_bf16_reduced_precision_reduction')}."
        + (
            f" Device copy {report['copy_gb_per_s']:.0f} GB/s (PyTorch, 256 MiB): a transpose"
            " of N bytes costs about 2 N / that."
            if report["copy_gb_per_s"]
            else ""
        ),
        "",
        "| dtype | case | subscripts | kiln einsum | kiln matmul | einsum/matmul "
        "| PyTorch einsum | PyTorch matmul | einsum/matmul | PyTorch/kiln (einsum) | agree |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def ratio(v):
        return "" if v is None else f"{v:.2f}"

    for r in report["cases"]:
        lines.append(
            f"| {r['dtype']} | {r['case']} | `{r['subscripts']}` | {fmt(r, 'kiln', 'einsum')} "
            f"| {fmt(r, 'kiln', 'matmul')} | {ratio(r.get('kiln_einsum_over_matmul'))} "
            f"| {fmt(r, 'PyTorch', 'einsum')} | {fmt(r, 'PyTorch', 'matmul')} "
            f"| {ratio(r.get('PyTorch_einsum_over_matmul'))} "
            f"| {ratio(r.get('PyTorch_over_kiln_einsum'))} | {'yes' if r['agree'] else 'NO'} |"
        )
    lines += [
        "",
        "agree: kiln's and PyTorch's einsum and matmul are all within "
        + ", ".join(f"{k} {tolerance(k, report['kiln_tf32']):g}" for k in report["dtypes"])
        + " (max |error| / max |reference|) of a float64 NumPy einsum of the same inputs, "
        f"on {CHECK_SUBSET['b']} batch entry and {CHECK_SUBSET['h']} heads; the errors are "
        "in the JSON file.",
    ]
    lines += [f"- {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, few rounds (a smoke test)"
    )
    parser.add_argument(
        "--tf32", action="store_true", help="float32 products on TF32 tensor cores (both)"
    )
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    if not mx.is_available(mx.gpu):
        sys.exit(
            "einsum.py: no GPU is available to kiln (no CUDA device, driver or CUDA build); "
            "benchmarks/cpu/einsum.py is the CPU version"
        )
    mx.set_default_device(mx.gpu)
    kiln_tf32 = os.environ.get("KILN_MATMUL_TF32") == "1"
    torch, torch_note = import_torch()
    notes = [torch_note] if torch_note else []
    torch_settings = {}
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = kiln_tf32
        torch_settings = {
            "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "allow_bf16_reduced_precision_reduction": (
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
            ),
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        }

    sizes = (
        {"b": 2, "h": 8, "q": 256, "k": 256, "d": 64}
        if args.quick
        else {"b": 4, "h": 32, "q": 1024, "k": 1024, "d": 128}
    )
    rounds = 3 if args.quick else 9
    dtypes = ["float32", "bfloat16"]
    copy_gbs = None
    if torch is not None:
        copy_gbs = torch_copy_bandwidth(rounds, 1 << 28) / 1e9
    rng = np.random.default_rng(0)
    rows = [
        run_case(name, subscripts, sizes, dt, rounds, torch, kiln_tf32, rng)
        for dt in dtypes
        for name, subscripts in CASES
    ]
    if not all(r["agree"] for r in rows):
        notes.append("Some results do NOT agree with the float64 reference (see agree).")

    date = datetime.date.today().isoformat()
    try:
        name = mx.device_info(mx.gpu).get("device_name", "gpu")
    except Exception:
        name = "gpu"
    report = {
        "benchmark": "gpu einsum (batched attention-like contractions)",
        "date": date,
        "device_name": name,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__ if torch is not None else None,
        "kiln": mx.__version__,
        "quick": args.quick,
        "sizes": "B {b}, H {h}, Lq {q}, Lk {k}, D {d}".format(**sizes),
        "dtypes": dtypes,
        "rounds": rounds,
        "kiln_tf32": kiln_tf32,
        "torch_settings": torch_settings,
        "copy_gb_per_s": copy_gbs,
        "cases": rows,
        "notes": notes,
    }
    text = report_text(report, rounds)
    print(text)
    save_results(
        args.out_dir,
        "gpu-einsum" + ("-quick" if args.quick else "") + ("-tf32" if kiln_tf32 else ""),
        name,
        date,
        report,
        text,
    )


if __name__ == "__main__":
    main()
