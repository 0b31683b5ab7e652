#!/usr/bin/env python3
"""The fused built-ins on the GPU (issue 17): kiln.core.fast against PyTorch on the same GPU in
the same run, and against MLX's CUDA build where it is installed.

Workloads (bfloat16 unless stated):
- rms_norm, layer_norm, softmax (last axis), cross_entropy on (32768, 4096) and (4096, 32768),
  forward and backward; rope on (4, 32, 4096, 128): GB/s on the bytes each must move (read +
  written once) against the device copy bandwidth measured in the same run (targets: >= 90% of
  copy forward, >= 85% backward, and faster than every peer);
- scaled_dot_product_attention forward (and backward) at B4 H32 L4096 D128 and B8 H32 L2048
  D64, causal and not, in TFLOP/s (4 B H Lq Lk D, halved under the causal mask), against
  F.scaled_dot_product_attention with the cuDNN and flash backends; decode (Lq 1, Lk 32768,
  GQA 32/8, D128) in GB/s of the K/V bytes.

Peers: PyTorch eager (F.rms_norm, F.layer_norm, torch.softmax, F.cross_entropy, the rope
written with tensor ops), torch.compile of the same functions, PyTorch's SDPA backends, and
mlx.core.fast on MLX's CUDA build (skipped when absent). PyTorch is timed with CUDA events
around batches of calls; kiln and MLX (whose streams Python cannot record events on) with the
host clock around batches that end in a synchronize, each batch long enough (tens of
milliseconds) that the host's share is negligible. Medians over rounds after warm-up.
Results: benchmarks/results/gpu-fast-<device>-<date>.{json,md}.

    PYTHONPATH=python python benchmarks/gpu/fast.py [--quick] [--only NAME] [--out-dir DIR]
"""

import argparse
import datetime
import math
import pathlib
import platform
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks" / "python"))

import kiln.core as kx  # noqa: E402
from overhead import save_results  # noqa: E402
from timers import (  # noqa: E402
    guarded,
    kiln_from_torch,
    mlx_from_torch,
    time_kiln,
    time_mlx,
    time_torch,
    torch_copy_bandwidth,
)

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the report says which peers ran
    torch = None

try:
    import mlx.core as mlx

    if not (hasattr(mlx, "cuda") and mlx.cuda.is_available()):
        mlx = None
except Exception:
    mlx = None


# ---------------------------------------------------------------- inputs


def compiled(f):
    try:
        return torch.compile(f)
    except Exception:
        return None


# ---------------------------------------------------------------- workloads


def row_ops(shape, rounds, quick):
    """rms_norm, layer_norm, softmax, cross_entropy on bf16 `shape`: {case: seconds}, bytes."""
    rows, n = shape
    tx = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    tw = torch.rand(n, device="cuda", dtype=torch.bfloat16) + 0.5
    tb = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    tg = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    tt = torch.randint(0, n, (rows,), device="cuda")
    x, w, b, g = (kiln_from_torch(t) for t in (tx, tw, tb, tg))
    t = kx.array(tt.cpu().numpy()).astype(kx.int32)
    kx.eval(t)
    res, nbytes = {}, {}
    elems = rows * n
    nbytes["rms_norm fwd"] = nbytes["layer_norm fwd"] = nbytes["softmax fwd"] = (
        4 * elems
    )
    nbytes["cross_entropy fwd"] = 2 * elems
    nbytes["rms_norm bwd"] = nbytes["layer_norm bwd"] = 6 * elems  # read x, g; write dx
    nbytes["cross_entropy bwd"] = 4 * elems
    nbytes["softmax bwd"] = 6 * elems

    # kiln
    guarded(
        res,
        "rms_norm fwd | kiln",
        time_kiln,
        lambda: kx.fast.rms_norm(x, w, 1e-5),
        rounds,
    )
    guarded(
        res,
        "layer_norm fwd | kiln",
        time_kiln,
        lambda: kx.fast.layer_norm(x, w, b, 1e-5),
        rounds,
    )
    guarded(
        res, "softmax fwd | kiln", time_kiln, lambda: kx.softmax(x, axis=-1), rounds
    )
    guarded(
        res,
        "cross_entropy fwd | kiln",
        time_kiln,
        lambda: kx.fast.cross_entropy(x, t),
        rounds,
    )
    guarded(
        res,
        "rms_norm bwd | kiln",
        time_kiln,
        lambda: kx.vjp(lambda a, c: kx.fast.rms_norm(a, c, 1e-5), [x, w], [g])[1],
        rounds,
    )
    guarded(
        res,
        "layer_norm bwd | kiln",
        time_kiln,
        lambda: kx.vjp(
            lambda a, c, d: kx.fast.layer_norm(a, c, d, 1e-5), [x, w, b], [g]
        )[1],
        rounds,
    )
    gl = kx.ones((rows,), dtype=kx.float32)
    guarded(
        res,
        "cross_entropy bwd | kiln",
        time_kiln,
        lambda: kx.vjp(lambda a: kx.fast.cross_entropy(a, t), [x], [gl])[1],
        rounds,
    )
    guarded(
        res,
        "softmax bwd | kiln",
        time_kiln,
        lambda: kx.vjp(lambda a: kx.softmax(a, axis=-1), [x], [g])[1],
        rounds,
    )

    # PyTorch eager and compiled
    def t_rms(a, c):
        return F.rms_norm(a, (n,), c, 1e-5)

    def t_rms_manual(a, c):
        a32 = a.float()
        return (a32 * torch.rsqrt(a32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(
            a.dtype
        ) * c

    def t_ln(a, c, d):
        return F.layer_norm(a, (n,), c, d, 1e-5)

    def t_sm(a):
        return torch.softmax(a, dim=-1)

    def t_ce(a, tg_):
        return F.cross_entropy(a.float(), tg_, reduction="none")

    peers = {"PyTorch eager": (t_rms, t_ln, t_sm, t_ce)}
    if not quick:
        peers["torch.compile"] = tuple(
            compiled(f) for f in (t_rms_manual, t_ln, t_sm, t_ce)
        )
    for peer, (f_rms, f_ln, f_sm, f_ce) in peers.items():
        if f_rms is None:
            continue
        guarded(
            res, f"rms_norm fwd | {peer}", time_torch, lambda: f_rms(tx, tw), rounds
        )
        guarded(
            res,
            f"layer_norm fwd | {peer}",
            time_torch,
            lambda: f_ln(tx, tw, tb),
            rounds,
        )
        guarded(res, f"softmax fwd | {peer}", time_torch, lambda: f_sm(tx), rounds)
        guarded(
            res, f"cross_entropy fwd | {peer}", time_torch, lambda: f_ce(tx, tt), rounds
        )
        for name, fn, args in (
            ("rms_norm", f_rms, (tw,)),
            ("layer_norm", f_ln, (tw, tb)),
            ("softmax", f_sm, ()),
        ):
            xr = tx.detach().requires_grad_()
            params = [p.detach().requires_grad_() for p in args]

            def bwd(fn=fn, xr=xr, params=params):
                out = fn(xr, *params)
                return torch.autograd.grad(out, [xr] + params, tg)

            guarded(res, f"{name} bwd | {peer}", time_torch, bwd, rounds)
        xr = tx.detach().requires_grad_()
        go = torch.ones(rows, device="cuda")
        guarded(
            res,
            f"cross_entropy bwd | {peer}",
            time_torch,
            lambda: torch.autograd.grad(f_ce(xr, tt), [xr], go),
            rounds,
        )

    if mlx is not None:
        mxx, mw, mb = (mlx_from_torch(a) for a in (tx, tw, tb))
        mt = mlx.array(tt.cpu().numpy())
        guarded(
            res,
            "rms_norm fwd | MLX CUDA",
            time_mlx,
            lambda: mlx.fast.rms_norm(mxx, mw, 1e-5),
            rounds,
        )
        guarded(
            res,
            "layer_norm fwd | MLX CUDA",
            time_mlx,
            lambda: mlx.fast.layer_norm(mxx, mw, mb, 1e-5),
            rounds,
        )
        guarded(
            res,
            "softmax fwd | MLX CUDA",
            time_mlx,
            lambda: mlx.softmax(mxx, axis=-1),
            rounds,
        )
        if hasattr(mlx.fast, "cross_entropy"):
            guarded(
                res,
                "cross_entropy fwd | MLX CUDA",
                time_mlx,
                lambda: mlx.fast.cross_entropy(mxx, mt),
                rounds,
            )
    return res, nbytes


def rope_case(rounds, quick):
    shape = (4, 32, 4096, 128)
    tx = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    x = kiln_from_torch(tx)
    res = {}
    guarded(
        res,
        "rope fwd | kiln",
        time_kiln,
        lambda: kx.fast.rope(
            x, 128, traditional=False, base=10000.0, scale=1.0, offset=0
        ),
        rounds,
    )
    inv = 1.0 / (
        10000.0 ** (torch.arange(0, 64, device="cuda", dtype=torch.float32) / 64)
    )
    th = torch.arange(4096, device="cuda", dtype=torch.float32)[:, None] * inv
    cos, sin = th.cos(), th.sin()

    def t_rope(a):
        a1, a2 = a[..., :64].float(), a[..., 64:].float()
        return torch.cat([a1 * cos - a2 * sin, a1 * sin + a2 * cos], -1).to(a.dtype)

    guarded(res, "rope fwd | PyTorch eager", time_torch, lambda: t_rope(tx), rounds)
    if not quick:
        c = compiled(t_rope)
        if c is not None:
            guarded(res, "rope fwd | torch.compile", time_torch, lambda: c(tx), rounds)
    if mlx is not None:
        mxx = mlx_from_torch(tx)
        guarded(
            res,
            "rope fwd | MLX CUDA",
            time_mlx,
            lambda: mlx.fast.rope(
                mxx, 128, traditional=False, base=10000.0, scale=1.0, offset=0
            ),
            rounds,
        )
    return res, {"rope fwd": 2 * 2 * math.prod(shape)}


def sdpa_cases(rounds, quick):
    res, work = {}, {}
    shapes = [(4, 32, 32, 4096, 4096, 128), (8, 32, 32, 2048, 2048, 64)]
    if quick:
        shapes = [(1, 8, 8, 1024, 1024, 128)]
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for B, Hq, Hk, Lq, Lk, D in shapes:
        tq = torch.randn(B, Hq, Lq, D, device="cuda", dtype=torch.bfloat16)
        tk = torch.randn(B, Hk, Lk, D, device="cuda", dtype=torch.bfloat16)
        tv = torch.randn(B, Hk, Lk, D, device="cuda", dtype=torch.bfloat16)
        q, k, v = (kiln_from_torch(a) for a in (tq, tk, tv))
        scale = D**-0.5
        for causal in (False, True):
            name = f"sdpa fwd B{B} H{Hq} L{Lq} D{D}{' causal' if causal else ''}"
            work[name] = 4 * B * Hq * Lq * Lk * D / (2 if causal else 1)
            mask = "causal" if causal else None
            guarded(
                res,
                f"{name} | kiln",
                time_kiln,
                lambda: kx.fast.scaled_dot_product_attention(
                    q, k, v, scale=scale, mask=mask
                ),
                rounds,
            )
            for peer, backend in (
                ("cuDNN", SDPBackend.CUDNN_ATTENTION),
                ("FA2", SDPBackend.FLASH_ATTENTION),
            ):

                def run(backend=backend, causal=causal):
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(
                            tq, tk, tv, is_causal=causal, scale=scale
                        )

                guarded(res, f"{name} | {peer}", time_torch, run, rounds)
            if mlx is not None:
                mq, mk, mv = (mlx_from_torch(a) for a in (tq, tk, tv))
                guarded(
                    res,
                    f"{name} | MLX CUDA",
                    time_mlx,
                    lambda: mlx.fast.scaled_dot_product_attention(
                        mq, mk, mv, scale=scale, mask=mask
                    ),
                    rounds,
                )
            # Backward (2.5 times the forward's FLOPs).
            bname = name.replace("fwd", "bwd")
            work[bname] = 2.5 * work[name]
            g = kx.ones(q.shape, dtype=kx.bfloat16)
            guarded(
                res,
                f"{bname} | kiln",
                time_kiln,
                lambda: kx.vjp(
                    lambda a, b_, c: kx.fast.scaled_dot_product_attention(
                        a, b_, c, scale=scale, mask=mask
                    ),
                    [q, k, v],
                    [g],
                )[1],
                rounds,
            )
            tqr, tkr, tvr = (a.detach().requires_grad_() for a in (tq, tk, tv))
            tg = torch.ones_like(tq)

            def bwd(causal=causal):
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    o = F.scaled_dot_product_attention(
                        tqr, tkr, tvr, is_causal=causal, scale=scale
                    )
                return torch.autograd.grad(o, [tqr, tkr, tvr], tg)

            guarded(res, f"{bname} | cuDNN", time_torch, bwd, rounds)

    # Decode: one query, a long context, grouped heads.
    B, Hq, Hk, Lk, D = (4, 32, 8, 32768, 128) if not quick else (1, 32, 8, 4096, 128)
    tq = torch.randn(B, Hq, 1, D, device="cuda", dtype=torch.bfloat16)
    tk = torch.randn(B, Hk, Lk, D, device="cuda", dtype=torch.bfloat16)
    tv = torch.randn(B, Hk, Lk, D, device="cuda", dtype=torch.bfloat16)
    q, k, v = (kiln_from_torch(a) for a in (tq, tk, tv))
    name = f"sdpa decode B{B} Lq1 Lk{Lk} GQA {Hq}/{Hk} D{D}"
    work[name] = 2 * 2 * B * Hk * Lk * D  # K and V bytes
    guarded(
        res,
        f"{name} | kiln",
        time_kiln,
        lambda: kx.fast.scaled_dot_product_attention(q, k, v, scale=D**-0.5),
        rounds,
    )
    guarded(
        res,
        f"{name} | PyTorch eager",
        time_torch,
        lambda: F.scaled_dot_product_attention(
            tq, tk, tv, scale=D**-0.5, enable_gqa=True
        ),
        rounds,
    )
    if mlx is not None:
        mq, mk, mv = (mlx_from_torch(a) for a in (tq, tk, tv))
        guarded(
            res,
            f"{name} | MLX CUDA",
            time_mlx,
            lambda: mlx.fast.scaled_dot_product_attention(mq, mk, mv, scale=D**-0.5),
            rounds,
        )
    return res, work


# ---------------------------------------------------------------- report


def device_name():
    try:
        return kx.device_info(kx.gpu).get("device_name", "gpu")
    except Exception:
        return torch.cuda.get_device_name() if torch else "gpu"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    parser.add_argument(
        "--only", choices=["rows", "rope", "sdpa"], help="one group of workloads"
    )
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    if not kx.is_available(kx.gpu):
        sys.exit("fast.py: no GPU is available to kiln")
    if torch is None or not torch.cuda.is_available():
        sys.exit(
            "fast.py: PyTorch with CUDA is needed for the copy bandwidth and the peers"
        )
    kx.set_default_device(kx.gpu)
    rounds = 3 if args.quick else 11

    copy_bps = torch_copy_bandwidth(rounds, (1 << 28) if args.quick else (1 << 31))
    seconds, amounts, units = {}, {}, {}
    shapes = [(32768, 4096), (4096, 32768)] if not args.quick else [(4096, 4096)]
    if args.only in (None, "rows"):
        for shape in shapes:
            res, nbytes = row_ops(shape, rounds, args.quick)
            tag = f" ({shape[0]}, {shape[1]})"
            for k, v in res.items():
                wl, peer = k.split(" | ")
                seconds[f"{wl}{tag} | {peer}"] = v
            for wl, b in nbytes.items():
                amounts[wl + tag], units[wl + tag] = b, "GB/s"
    if args.only in (None, "rope"):
        res, nbytes = rope_case(rounds, args.quick)
        seconds.update(res)
        for wl, b in nbytes.items():
            amounts[wl], units[wl] = b, "GB/s"
    if args.only in (None, "sdpa"):
        res, work = sdpa_cases(rounds, args.quick)
        seconds.update(res)
        for wl, w in work.items():
            amounts[wl], units[wl] = w, "GB/s" if "decode" in wl else "TFLOP/s"

    rows = []
    for key, s in seconds.items():
        wl, peer = key.split(" | ")
        unit = units.get(wl, "")
        rate = amounts.get(wl, 0) / s / (1e12 if unit == "TFLOP/s" else 1e9)
        rows.append(
            {"workload": wl, "impl": peer, "seconds": s, "rate": rate, "unit": unit}
        )
    checks = []
    for wl in amounts:
        k = next((r for r in rows if r["workload"] == wl and r["impl"] == "kiln"), None)
        if not k:
            continue
        peers = [r for r in rows if r["workload"] == wl and r["impl"] != "kiln"]
        best = min(peers, key=lambda r: r["seconds"]) if peers else None
        c = {
            "workload": wl,
            "kiln_rate": k["rate"],
            "unit": k["unit"],
            "fastest_peer": best["impl"] if best else None,
            "peer_over_kiln": best["seconds"] / k["seconds"] if best else None,
        }
        if k["unit"] == "GB/s":
            c["fraction_of_copy"] = k["rate"] * 1e9 / copy_bps
        checks.append(c)

    date = datetime.date.today().isoformat()
    name = device_name()
    report = {
        "benchmark": "gpu fast built-ins",
        "date": date,
        "device_name": name,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "mlx": getattr(mlx, "__version__", None) if mlx else None,
        "kiln": kx.__version__,
        "quick": args.quick,
        "copy_gb_per_s": copy_bps / 1e9,
        "rows": rows,
        "checks": checks,
    }
    lines = [
        f"# kiln.core.fast on {name}, {date}",
        "",
        f"PyTorch {torch.__version__}, MLX CUDA {report['mlx'] or 'not installed'}, kiln "
        f"{kx.__version__}. Device copy (PyTorch, same run): {copy_bps / 1e9:.0f} GB/s. "
        "Medians after warm-up; PyTorch timed with CUDA events, kiln and MLX with the host "
        "clock around synchronized batches.",
        "",
        "| workload | impl | time | rate |",
        "|---|---|---:|---:|",
    ]
    for r in rows:
        t = (
            f"{r['seconds'] * 1e6:.1f} µs"
            if r["seconds"] < 1e-3
            else f"{r['seconds'] * 1e3:.3f} ms"
        )
        lines.append(
            f"| {r['workload']} | {r['impl']} | {t} | {r['rate']:.0f} {r['unit']} |"
        )
    lines += [
        "",
        "| workload | kiln | of copy | fastest peer | peer time / kiln time |",
        "|---|---:|---:|---|---:|",
    ]
    for c in checks:
        frac = f"{100 * c['fraction_of_copy']:.0f}%" if "fraction_of_copy" in c else ""
        ratio = f"{c['peer_over_kiln']:.2f}" if c["peer_over_kiln"] else ""
        lines.append(
            f"| {c['workload']} | {c['kiln_rate']:.0f} {c['unit']} | {frac} | "
            f"{c['fastest_peer'] or ''} | {ratio} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    prefix = "gpu-fast" + ("-quick" if args.quick else "")
    save_results(args.out_dir, prefix, name, date, report, text)


if __name__ == "__main__":
    main()
