"""The cookbook's harness: a Recipe holds a kernel in both flavours (a Metal body as MLX
users write it, and a CUDA body), inputs at two sizes, and the kiln computation it must
match; `check` and `bench` run one flavour against it.

Every recipe file (rmsnorm.py, softmax.py, ...) defines RECIPES, a list of Recipe, and
runs them when executed directly. run_all.py runs them all and prints one table.
"""

import dataclasses
import statistics
import sys
import time
from typing import Callable, Dict, List, Sequence

import numpy as np

import kiln.core as mx

FLAVOURS = ("metal", "cuda")


@dataclasses.dataclass
class Recipe:
    """One kernel in both flavours and what it is checked and timed against.

    kernels[flavour](*inputs) returns the kernel's output; reference(*inputs) computes the
    same with kiln ops (the check, in float32 or wider); builtin(*inputs) is what the
    kernel is timed against (the reference unless a faster built-in exists, e.g. matmul in
    float16). inputs(size, key) makes the inputs for size "small" (tests, CPU) or "large"
    (the GPU timing); tolerance bounds max |kernel - reference| / max(1, max |reference|).
    """

    name: str
    description: str
    kernels: Dict[str, Callable[..., mx.array]]
    reference: Callable[..., mx.array]
    inputs: Callable[[str, mx.array], Sequence[mx.array]]
    tolerance: float
    builtin: Callable[..., mx.array] = None
    builtin_name: str = "kiln ops"

    def __post_init__(self):
        if self.builtin is None:
            self.builtin = self.reference


def random_normal(shape, key, dtype=mx.float32, scale=1.0):
    """Normal(0, scale^2) values of `dtype` (drawn in float32)."""
    return (mx.random.normal(shape, key=key) * scale).astype(dtype)


def max_error(out, ref):
    """max |out - ref| / max(1, max |ref|), in float64 (a Python float)."""
    got = np.asarray(out.astype(mx.float32), dtype=np.float64)
    want = np.asarray(ref.astype(mx.float32), dtype=np.float64)
    if got.shape != want.shape:
        raise ValueError(f"shape {got.shape} != reference shape {want.shape}")
    if not np.isfinite(got).all():
        return float("inf")
    scale = max(1.0, np.max(np.abs(want), initial=0.0))
    return float(np.max(np.abs(got - want), initial=0.0) / scale)


def median_seconds(fn, warmup=3, reps=10):
    """Median wall time of evaluating fn() after warm-up (the first call compiles); each
    sample waits for the device, so it includes one launch."""
    for _ in range(warmup):
        mx.eval(fn())
    mx.synchronize()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        mx.eval(fn())
        mx.synchronize()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def default_size():
    """"large" on the GPU, "small" on the CPU (where custom kernels run threads as fibers
    and the point is correctness)."""
    return "large" if mx.default_device() == mx.gpu else "small"


def check(recipe, flavour, size="small", seed=0):
    """(max error, within tolerance) of one flavour against the reference."""
    inputs = recipe.inputs(size, mx.random.key(seed))
    out = recipe.kernels[flavour](*inputs)
    err = max_error(out, recipe.reference(*inputs))
    return err, err <= recipe.tolerance


def bench(recipe, flavour, size=None, seed=0, reps=10):
    """One row of the table: max error, the kernel's time and the built-in's (seconds)."""
    size = size or default_size()
    inputs = recipe.inputs(size, mx.random.key(seed))
    mx.eval(inputs)
    out = recipe.kernels[flavour](*inputs)
    err = max_error(out, recipe.reference(*inputs))
    kernel_s = median_seconds(lambda: recipe.kernels[flavour](*inputs), reps=reps)
    builtin_s = median_seconds(lambda: recipe.builtin(*inputs), reps=reps)
    return {
        "kernel": recipe.name,
        "flavour": flavour,
        "size": size,
        "shapes": " ".join(str(tuple(a.shape)) for a in inputs),
        "max_error": err,
        "ok": err <= recipe.tolerance,
        "tolerance": recipe.tolerance,
        "kernel_seconds": kernel_s,
        "builtin_seconds": builtin_s,
        "builtin": recipe.builtin_name,
    }


def format_table(rows):
    """The rows of `bench` as an aligned text table."""
    head = ["kernel", "flavour", "max error", "ok", "time", "built-in", "built-in time",
            "time / built-in"]
    lines = []
    for r in rows:
        if "error" in r:
            lines.append([r["kernel"], r["flavour"], "—", "FAILED", "—", "—", "—",
                          r["error"]])
            continue
        lines.append([
            r["kernel"], r["flavour"], f"{r['max_error']:.1e}", "ok" if r["ok"] else "NO",
            fmt_time(r["kernel_seconds"]), r["builtin"], fmt_time(r["builtin_seconds"]),
            f"{r['kernel_seconds'] / r['builtin_seconds']:.2f}x",
        ])
    widths = [max(len(str(c)) for c in col) for col in zip(head, *lines)] if lines else []
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in lines]
    return "\n".join(out)


def fmt_time(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main(recipes: List[Recipe], argv=None):
    """Runs `recipes` in both flavours and prints the table (a recipe file's __main__)."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=["small", "large"], default=None)
    parser.add_argument("--flavour", choices=FLAVOURS, default=None)
    args = parser.parse_args(argv)
    rows = []
    for recipe in recipes:
        for flavour in [args.flavour] if args.flavour else FLAVOURS:
            try:
                rows.append(bench(recipe, flavour, args.size))
            except Exception as e:  # noqa: BLE001 - reported in the table, the others go on
                rows.append({"kernel": recipe.name, "flavour": flavour,
                             "error": f"{type(e).__name__}: {str(e).splitlines()[0]}"})
    print(f"device: {mx.default_device()}, size: {args.size or default_size()}")
    print(format_table(rows))
    return 0 if all(r.get("ok") for r in rows) else 1


if __name__ == "__main__":
    sys.exit("cookbook.py is the harness; run a recipe file or run_all.py")
