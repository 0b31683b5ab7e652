#!/usr/bin/env python3
"""kiln against MLX's own CUDA build on the same GPU: one script written against the MLX API,
run once with `kiln.core` and once with `mlx.core`, each in its own process (the two are never
imported together), then one report.

Workloads (bfloat16 unless said): 4-bit affine quantized matvec (group 64) at batch 1 and 8,
mxfp4 and nvfp4 matvec at batch 1, 4-bit affine at batch 4096;
fast.rms_norm, fast.rope, softmax and an elementwise add (GB/s on the bytes they must move);
scaled_dot_product_attention prefill (causal) and decode (grouped-query, one query); a 4096^3
matmul; a sum over 64M elements; the cold first call (compile included) and the warm
launch-to-result time of a small `fast.cuda_kernel` (issue 16).

Timing: host clock around batches of calls that end in `synchronize` (each batch tens of
milliseconds); medians over rounds. Results: benchmarks/results/mlx-peer-<device>-<date>.{json,md}.

    PYTHONPATH=python python benchmarks/gpu/mlx_peer.py                 # both, MLX when importable
    python benchmarks/gpu/mlx_peer.py --framework kiln|mlx --json F     # one side (used by the above)
    PYTHONPATH=python python benchmarks/gpu/mlx_peer.py --quick --device cpu  # a smoke run
"""

import argparse
import datetime
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]

CUDA_KERNEL_SOURCE = """
    // unsigned int, not Metal's uint: MLX's CUDA build does not define uint in CUDA bodies.
    unsigned int elem = blockIdx.x * blockDim.x + threadIdx.x;
    if (elem < inp_shape[0]) {
        out[elem] = inp[elem] * 2.0f + 1.0f;
    }
"""


def time_host(mx, fn, rounds, min_batch_s=0.03):
    mx.eval(fn())
    mx.synchronize()
    t0 = time.perf_counter()
    mx.eval(fn())
    mx.synchronize()
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(3, min(1000, int(min_batch_s / one)))
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        outs = [fn() for _ in range(n)]
        mx.eval(outs)
        mx.synchronize()
        times.append((time.perf_counter() - t0) / n)
        del outs
    return statistics.median(times)


def workloads(mx, quick):
    """{name: (fn, bytes moved or None, flops or None)}."""
    bf = mx.bfloat16
    key = mx.random.key(0)

    def rnd(shape, dtype=bf, scale=1.0):
        return (mx.random.normal(shape, key=key) * scale).astype(dtype)

    out = {}
    mats = [(4096, 4096)] if quick else [(4096, 4096), (14336, 4096), (28672, 8192)]
    for N, K in mats:
        w = rnd((N, K), scale=0.02)
        wq, s, b = mx.quantize(w, group_size=64, bits=4)
        for M in (1, 8):
            x = rnd((M, K))
            mx.eval(wq, s, b, x)
            nbytes = N * K // 2 + (N * K // 64) * 4 + M * K * 2 + M * N * 2
            out[f"qmv 4-bit g64 N={N} K={K} M={M}"] = (
                lambda x=x, wq=wq, s=s, b=b: mx.quantized_matmul(x, wq, s, b, transpose=True, group_size=64, bits=4),
                nbytes,
                2 * M * N * K,
            )
        del wq, s, b
        for mode, gs in (("mxfp4", 32), ("nvfp4", 16)):
            wq, s = mx.quantize(w, mode=mode)
            x = rnd((1, K))
            mx.eval(wq, s, x)
            out[f"qmv {mode} N={N} K={K} M=1"] = (
                lambda x=x, wq=wq, s=s, mode=mode: mx.quantized_matmul(x, wq, s, None, transpose=True, mode=mode),
                N * K // 2 + N * K // gs + K * 2 + N * 2,
                2 * N * K,
            )
    # The large-batch path: 4-bit affine at batch 4096 (TFLOP/s).
    N, K, M = (4096, 4096, 512) if quick else (14336, 4096, 4096)
    wq, s, b = mx.quantize(rnd((N, K), scale=0.02), group_size=64, bits=4)
    xq = rnd((M, K))
    mx.eval(wq, s, b, xq)
    out[f"qmm 4-bit g64 N={N} K={K} M={M}"] = (
        lambda: mx.quantized_matmul(xq, wq, s, b, transpose=True, group_size=64, bits=4),
        None,
        2 * M * N * K,
    )
    R, D = (256, 1024) if quick else (4096, 8192)
    x = rnd((R, D))
    g = rnd((D,))
    mx.eval(x, g)
    out[f"rms_norm ({R}, {D})"] = (lambda: mx.fast.rms_norm(x, g, 1e-5), 2 * R * D * 2 + D * 2, None)
    out[f"softmax ({R}, {D})"] = (lambda: mx.softmax(x, axis=-1), 2 * R * D * 2, None)
    y = rnd((R, D))
    mx.eval(y)
    out[f"add ({R}, {D})"] = (lambda: x + y, 3 * R * D * 2, None)
    B, H, L, Dh = (1, 4, 256, 64) if quick else (1, 32, 4096, 128)
    q = rnd((B, H, L, Dh))
    mx.eval(q)
    out[f"rope ({B}, {H}, {L}, {Dh})"] = (
        lambda: mx.fast.rope(q, Dh, traditional=False, base=10000.0, scale=1.0, offset=0),
        2 * B * H * L * Dh * 2,
        None,
    )
    B, H, L = (1, 4, 256) if quick else (4, 32, 2048)
    qa, ka, va = rnd((B, H, L, 128)), rnd((B, H, L, 128)), rnd((B, H, L, 128))
    mx.eval(qa, ka, va)
    out[f"sdpa causal B={B} H={H} L={L} D=128"] = (
        lambda: mx.fast.scaled_dot_product_attention(qa, ka, va, scale=128**-0.5, mask="causal"),
        None,
        2 * 2 * B * H * L * L * 128 // 2,
    )
    Lk = 512 if quick else 8192
    qd, kd, vd = rnd((1, 32, 1, 128)), rnd((1, 8, Lk, 128)), rnd((1, 8, Lk, 128))
    mx.eval(qd, kd, vd)
    out[f"sdpa decode Hq=32 Hkv=8 Lk={Lk}"] = (
        lambda: mx.fast.scaled_dot_product_attention(qd, kd, vd, scale=128**-0.5),
        2 * 2 * 8 * Lk * 128 + 2 * 2 * 32 * 128,
        None,
    )
    n = 512 if quick else 4096
    a, bm = rnd((n, n)), rnd((n, n))
    mx.eval(a, bm)
    out[f"matmul {n}^3"] = (lambda: a @ bm, None, 2 * n**3)
    S = (1 << 20) if quick else (1 << 26)
    big = rnd((S,))
    mx.eval(big)
    out[f"sum 2^{S.bit_length() - 1}"] = (lambda: mx.sum(big), S * 2, None)
    return out


def custom_kernel_times(mx, rounds):
    """(cold first call incl. compile, warm call) of a small fast.cuda_kernel, seconds."""
    if not hasattr(mx.fast, "cuda_kernel"):
        return None, None
    # A fresh name and source per process run, so no on-disk cache serves the cold call.
    tag = f"{os.getpid()}_{time.time_ns()}"
    k = mx.fast.cuda_kernel(
        name=f"peer_axpb_{tag}",
        input_names=["inp"],
        output_names=["out"],
        source=CUDA_KERNEL_SOURCE + f"// {tag}\n",
    )
    x = mx.arange(4096, dtype=mx.float32)
    mx.eval(x)

    def call():
        return k(
            inputs=[x],
            grid=(4096, 1, 1),
            threadgroup=(256, 1, 1),
            output_shapes=[(4096,)],
            output_dtypes=[mx.float32],
        )[0]

    t0 = time.perf_counter()
    mx.eval(call())
    mx.synchronize()
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(max(rounds, 5) * 4):
        t0 = time.perf_counter()
        mx.eval(call())
        mx.synchronize()
        warm.append(time.perf_counter() - t0)
    return cold, statistics.median(warm)


def run_side(framework, quick, rounds, device, pattern=None):
    if framework == "kiln":
        sys.path.insert(0, str(ROOT / "python"))
        import kiln.core as mx
    else:
        import mlx.core as mx
    mx.set_default_device(mx.gpu if device == "gpu" else mx.cpu)
    res = {"framework": framework, "version": getattr(mx, "__version__", "?"), "cases": {}}
    for name, (fn, nbytes, flops) in workloads(mx, quick).items():
        if pattern and not re.search(pattern, name):
            continue
        try:
            t = time_host(mx, fn, rounds)
            res["cases"][name] = {"s": t, "bytes": nbytes, "flops": flops}
        except Exception as e:  # an op the framework lacks on this device
            res["cases"][name] = {"error": f"{type(e).__name__}: {str(e)[:160]}"}
        print(f"[{framework}] {name}: {res['cases'][name]}", file=sys.stderr, flush=True)
    if device == "gpu" and not pattern:
        try:
            cold, warm = custom_kernel_times(mx, rounds)
            res["custom_kernel"] = {"cold_s": cold, "warm_s": warm}
        except Exception as e:
            res["custom_kernel"] = {"error": f"{type(e).__name__}: {str(e)[:160]}"}
    return res


def device_name():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20).stdout.strip().splitlines()[0]
    except Exception:
        return "cpu"


def report(sides, device, date, out_dir, stem="mlx-peer"):
    names = list(sides[0]["cases"])
    fw = [s["framework"] for s in sides]
    lines = [f"# kiln and MLX's CUDA build, same GPU, {date}", "",
             f"Device: {device}. " + ", ".join(f"{s['framework']} {s['version']}" for s in sides) +
             ". Host-timed batches ending in synchronize, medians; ratio = MLX time / kiln time (above 1: kiln faster).", "",
             "| workload | " + " | ".join(fw) + (" | ratio |" if len(sides) > 1 else ""),
             "|---|" + "---:|" * (len(sides) + (1 if len(sides) > 1 else 0))]
    for n in names:
        cells = []
        for s in sides:
            c = s["cases"].get(n, {})
            if "s" not in c:
                cells.append("error: " + c.get("error", "missing").split(":")[0])
                continue
            extra = ""
            if c.get("bytes"):
                extra = f", {c['bytes'] / c['s'] / 1e9:.0f} GB/s"
            elif c.get("flops"):
                extra = f", {c['flops'] / c['s'] / 1e12:.1f} TFLOP/s"
            cells.append(f"{c['s'] * 1e6:.1f} us{extra}")
        ratio = ""
        if len(sides) > 1:
            a, b = sides[0]["cases"].get(n, {}), sides[1]["cases"].get(n, {})
            ratio = f" {b['s'] / a['s']:.2f}x |" if "s" in a and "s" in b else " - |"
        lines.append(f"| {n} | " + " | ".join(cells) + " |" + ratio)
    lines += ["", "Custom kernel (fast.cuda_kernel, 4096 floats): cold first call incl. compile / warm call:", ""]
    for s in sides:
        ck = s.get("custom_kernel", {})
        if "cold_s" in ck and ck["cold_s"] is not None:
            lines.append(f"- {s['framework']}: {ck['cold_s'] * 1e3:.1f} ms / {ck['warm_s'] * 1e6:.1f} us")
        else:
            lines.append(f"- {s['framework']}: {ck.get('error', 'not run')}")
    text = "\n".join(lines) + "\n"
    slug = device.lower().replace(" ", "-")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}-{slug}-{date}.md").write_text(text)
    (out_dir / f"{stem}-{slug}-{date}.json").write_text(json.dumps({"device": device, "date": date, "sides": sides}, indent=1))
    print(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", choices=["kiln", "mlx"])
    ap.add_argument("--json", help="with --framework: write that side's results here")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--mlx-python", default=os.environ.get("MLX_PYTHON", sys.executable),
                    help="interpreter whose path (PYTHONPATH=MLX_PATH) imports mlx")
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--filter", help="run only the workloads whose name matches this regex "
                    "(results: <stem>-<device>-<date>.*, stem from --stem)")
    ap.add_argument("--stem", default="mlx-peer", help="the result files' name prefix")
    args = ap.parse_args()
    if args.framework:
        res = run_side(args.framework, args.quick, args.rounds, args.device, args.filter)
        pathlib.Path(args.json).write_text(json.dumps(res))
        return
    sides = []
    common = ["--quick"] * args.quick + ["--rounds", str(args.rounds), "--device", args.device]
    if args.filter:
        common += ["--filter", args.filter]
    for fw, py, extra_path in (("kiln", sys.executable, str(ROOT / "python")),
                               ("mlx", args.mlx_python, os.environ.get("MLX_PATH", ""))):
        out = pathlib.Path(f"/tmp/mlx_peer_{fw}_{os.getpid()}.json")
        env = dict(os.environ)
        env["PYTHONPATH"] = extra_path  # each process sees only its own framework
        probe = subprocess.run([py, "-c", f"import {'kiln.core' if fw == 'kiln' else 'mlx.core'}"], env=env,
                               capture_output=True)
        if probe.returncode != 0:
            print(f"mlx_peer: {fw} is not importable here; skipped", file=sys.stderr)
            continue
        r = subprocess.run([py, __file__, "--framework", fw, "--json", str(out)] + common, env=env)
        if r.returncode == 0 and out.exists():
            sides.append(json.loads(out.read_text()))
            out.unlink()
    if not sides:
        sys.exit("mlx_peer: nothing ran")
    report(sides, device_name() if args.device == "gpu" else "cpu", datetime.date.today().isoformat(),
           pathlib.Path(args.out_dir), args.stem)


if __name__ == "__main__":
    main()
