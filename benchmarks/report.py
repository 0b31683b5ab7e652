#!/usr/bin/env python3
"""The side-by-side benchmark report: one page per device from the dated results the
individual benchmarks wrote to benchmarks/results/.

For each device found (a CPU model or a GPU name), takes the latest result of each suite
(CPU ops vs NumPy and OpenBLAS, GPU ops vs PyTorch, Python call overhead vs PyTorch and
NumPy, CPU custom kernels, the kernel cookbook, the extension example), and writes

    benchmarks/results/<device>-<date>.md     tables: kiln's time, each peer's, the ratio
    benchmarks/results/<device>-<date>.json   the same rows, with their source files
    benchmarks/results/<device>-<date>.png    a chart of kiln against each peer (matplotlib)

where <date> is the newest result's. Ratios are peer time / kiln time: above 1, kiln is
faster. With --readme, the README's benchmark section (between the markers
<!-- bench:begin --> and <!-- bench:end -->) is replaced by the latest chart and table of
a GPU and of a CPU.

    python benchmarks/report.py [--results DIR] [--device TEXT] [--readme]
"""

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DATED = re.compile(r"-(\d{4}-\d{2}-\d{2})(-[a-z0-9-]+)?\.json$")
README_BEGIN, README_END = "<!-- bench:begin -->", "<!-- bench:end -->"


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def row(workload, kiln_s, peer, peer_s, note=""):
    return {"workload": workload, "kiln_seconds": kiln_s, "peer": peer, "peer_seconds": peer_s,
            "note": note}


# ---------------------------------------------------------------- one parser per suite
# Each takes a result file's JSON and returns (suite name, device kind, device name, date,
# rows, notes), or None when the file is not its kind.


def parse_cpu_ops(d):
    if "binary_info" not in d or "rows" not in d:
        return None
    rows = []
    for r in d["rows"]:
        if r.get("kiln_error") or not r.get("kiln_seconds"):
            continue
        name = r["description"]
        if r["case"].startswith("matmul"):
            rows.append(row(name, r["kiln_seconds"], "OpenBLAS (cblas_sgemm)", r["peer_seconds"]))
        rows.append(row(name, r["kiln_seconds"], "NumPy", r["numpy_seconds"]))
    o = d.get("overhead", {})
    if o.get("kiln_us_per_op"):
        rows.append(row("per-op cost: chain of 10,000 scalar adds (C++)",
                        o["kiln_us_per_op"] * 1e-6, "NumPy scalar add",
                        o["numpy_scalar_us_per_op"] * 1e-6, "kiln builds and evaluates a graph"))
    return "CPU ops", "cpu", d["machine"]["cpu_model"], d["date"], rows, []


def parse_gpu_ops(d):
    k = d.get("kiln")
    if not (isinstance(k, dict) and "results" in k and "torch" in d):
        return None
    rows, notes = [], []
    torch = d.get("torch") or {}
    for name, r in k["results"].items():
        t = torch.get(name, {})
        if "ms" in r and "ms" in t:
            rows.append(row(name, r["ms"] * 1e-3, "PyTorch", t["ms"] * 1e-3))
        elif "us" in r and "us" in t:
            rows.append(row(name, r["us"] * 1e-6, "PyTorch (eager, Python)", t["us"] * 1e-6,
                            "kiln: C++ lazy build + eval"))
        elif "first_ms" in r:
            notes.append(f"{name}: {r['first_ms']:.1f} ms first use, {r['warm_ms']:.3f} ms warm")
        elif "error" in r:
            notes.append(f"{name}: kiln error: {r['error']}")
    if not torch:
        notes.append(f"no PyTorch in this run: {d.get('torch_info', '')}")
    for c in d.get("checks", []):
        verdict = "ok" if c["value"] >= c["target"] else "missed"
        notes.append(f"target: {c['name']}: {c['value']:.3f} (>= {c['target']}) {verdict}")
    info = k.get("info", {})
    return "GPU ops", "gpu", info.get("device", "gpu"), d["date"][:10], rows, notes


def parse_python_overhead(d):
    if d.get("benchmark") != "python per-call overhead":
        return None
    s = d["seconds_per_call"]
    gpu = "gpu" in d.get("device", "")
    sync = " + synchronize" if gpu else ""
    rows = []
    for label, kiln_key, peer_keys in (
        ("Python call: add of 16 floats", "kiln add + eval",
         [("PyTorch", f"torch add{sync}"), ("NumPy", "numpy add")]),
        ("Python call: x + 1.0 (16 floats)", "kiln x + 1.0 (weak scalar) + eval",
         [("PyTorch", f"torch x + 1.0{sync}"), ("NumPy", "numpy x + 1.0")]),
    ):
        for peer, key in peer_keys:
            if kiln_key in s and key in s and not (gpu and peer == "NumPy"):
                rows.append(row(label, s[kiln_key], peer, s[key]))
    notes = list(d.get("notes", []))
    return "Python overhead", "gpu" if gpu else "cpu", d["device_name"], d["date"], rows, notes


def parse_cpu_custom_kernels(d):
    k = d.get("kiln")
    if not (isinstance(k, dict) and "add_kernel_seconds" in k):
        return None
    rows = [
        row("custom kernel: a + b, 2^24 float32", k["add_kernel_seconds"], "kiln add (built-in)",
            k["add_builtin_seconds"]),
        row("custom kernel: RMSNorm (4096, 4096)", k["rmsnorm_kernel_seconds"], "kiln ops",
            k["rmsnorm_builtin_seconds"]),
    ]
    notes = [f"first compile: elementwise {k['add_compile_seconds']:.2f} s, RMSNorm "
             f"{k['rmsnorm_compile_seconds']:.2f} s; disk-cache load "
             f"{k['add_disk_load_seconds'] * 1e3:.1f} ms"]
    return "CPU custom kernels", "cpu", d["machine"]["cpu_model"], d["date"], rows, notes


def parse_cookbook(d):
    if d.get("benchmark") != "kernel cookbook":
        return None
    rows = [
        row(f"{r['kernel']} ({r['flavour']})", r["kernel_seconds"], f"kiln: {r['builtin']}",
            r["builtin_seconds"], f"max error {r['max_error']:.1e}")
        for r in d["rows"] if "kernel_seconds" in r
    ]
    notes = [f"{r['kernel']} ({r['flavour']}) failed: {r['error']}"
             for r in d["rows"] if "error" in r]
    return (f"Kernel cookbook ({d['size']} inputs)", d["device_kind"], d["device_name"], d["date"],
            rows, notes)


def parse_extension(d):
    if not str(d.get("benchmark", "")).startswith("extension axpby"):
        return None
    m = d["median_seconds"]
    rows = [row(f"axpby {tuple(d['shape'])}, {d['iterations']} calls", m["custom"],
                "kiln ops (simple_axpby)", m["simple"])]
    kind = "gpu" if d.get("device") == "gpu" else "cpu"
    return "Extension (axpby)", kind, d["device_name"], d["date"], rows, []


def parse_gpu_custom_kernels(d):
    if d.get("benchmark") != "gpu custom kernels" or d.get("quick"):
        return None
    s = d["seconds"]
    rows = []
    for label, kiln_key, peer, peer_key in (
        ("custom kernel call from Python: launch + wait", "kiln launch + eval", "CuPy RawKernel",
         "CuPy launch + synchronize"),
        ("custom kernel call from Python: launch only", "kiln launch + async_eval (per call)",
         "CuPy RawKernel", "CuPy launch (per call)"),
        ("custom kernel cold compile (first call)", "kiln cold compile (first call)",
         "CuPy RawKernel", "CuPy cold compile (first call)"),
        ("custom kernel disk-cache load, new process", "kiln disk-cache load (first call, new process)",
         "CuPy RawKernel", "CuPy disk-cache load (first call, new process)"),
        ("seed exp kernel, 2^28 float32", "kiln seed exp kernel (Metal body)", "CuPy RawKernel",
         "CuPy RawKernel exp"),
        ("seed exp kernel, 2^28 float32", "kiln seed exp kernel (Metal body)",
         "device copy (CuPy)", "device copy (CuPy copyto)"),
    ):
        if kiln_key in s and peer_key in s:
            rows.append(row(label, s[kiln_key], peer, s[peer_key]))
    notes = [f"{c['name']}: {c['ratio']:.3f} (target {c['target']})" for c in d.get("checks", [])]
    return "GPU custom kernels", "gpu", d["device_name"], d["date"], rows, notes


def parse_linalg_fft_conv(d):
    if d.get("benchmark") != "linalg fft conv" or d.get("quick"):
        return None
    rows = []
    for r in d["rows"]:
        for key, peer in (("torch_seconds", "PyTorch"), ("numpy_seconds", "NumPy")):
            if r.get(key):
                rows.append(row(r["workload"], r["kiln_seconds"], peer, r[key]))
    kind = d.get("device", "gpu")
    return f"{kind.upper()} linalg, FFT, conv", kind, d["device_name"], d["date"], rows, []


def parse_gpu_fast(d):
    if d.get("benchmark") != "gpu fast built-ins" or d.get("quick"):
        return None
    rows = []
    for r in d["rows"]:
        if r["impl"] == "kiln":
            continue
        k = next((x for x in d["rows"] if x["workload"] == r["workload"] and x["impl"] == "kiln"), None)
        if k:
            rows.append(row(r["workload"], k["seconds"], r["impl"], r["seconds"]))
    notes = [f"{c['workload']}: {100 * c['fraction_of_copy']:.0f}% of the copy bandwidth"
             for c in d.get("checks", []) if "fraction_of_copy" in c]
    return "GPU fast built-ins", "gpu", d["device_name"], d["date"], rows, notes


PARSERS = [parse_cpu_ops, parse_gpu_ops, parse_python_overhead, parse_cpu_custom_kernels,
           parse_cookbook, parse_extension, parse_gpu_custom_kernels, parse_linalg_fft_conv,
           parse_gpu_fast]
# Suites whose peers are other libraries: these make the chart.
PEER_SUITES = {"CPU ops", "GPU ops", "Python overhead", "GPU custom kernels", "GPU fast built-ins"}


def load_results(directory):
    """Every result file understood, as dicts; files with a tag after the date (runs with
    special settings, or quick runs) and kiln's own reports are left out."""
    found = []
    for path in sorted(directory.glob("*.json")):
        m = DATED.search(path.name)
        if not m or m.group(2):
            continue
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"report: skipping {path.name}: {e}", file=sys.stderr)
            continue
        if d.get("benchmark") == "kiln report":
            continue
        for parse in PARSERS:
            try:
                got = parse(d)
            except (KeyError, TypeError, ZeroDivisionError) as e:
                print(f"report: skipping {path.name}: unexpected content ({e!r})", file=sys.stderr)
                break
            if got:
                suite, kind, name, date, rows, notes = got
                found.append({"suite": suite, "kind": kind, "device": name, "date": date,
                              "source": path.name, "rows": rows, "notes": notes})
                break
    return found


def latest_by_device(results):
    """{device slug: [the latest result of each suite]}."""
    best = {}
    for r in results:
        key = (slug(r["device"]), r["suite"])
        if key not in best or r["date"] > best[key]["date"]:
            best[key] = r
    devices = {}
    for (dev, _), r in sorted(best.items()):
        devices.setdefault(dev, []).append(r)
    return devices


# ---------------------------------------------------------------- output


def fmt_time(s):
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.2f} µs"
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.2f} s"


def markdown(device, kind, date, suites, chart_name):
    lines = [f"# kiln benchmarks: {device} ({kind.upper()}), {date}", ""]
    if chart_name:
        lines += [f"![kiln against its peers on {device}]({chart_name})", ""]
    lines += [
        "Each suite's latest run on this device; ratio = peer time / kiln time (above 1: kiln "
        "is faster). Methods, machine load and targets are in each source file's .md.",
        "",
    ]
    for s in suites:
        lines += [f"## {s['suite']} ({s['date']}, `{s['source']}`)", "",
                  "| workload | kiln | peer | peer time | ratio |", "|---|---:|---|---:|---:|"]
        for r in s["rows"]:
            ratio = r["peer_seconds"] / r["kiln_seconds"] if r["kiln_seconds"] else None
            note = f" ({r['note']})" if r["note"] else ""
            lines.append(f"| {r['workload']}{note} | {fmt_time(r['kiln_seconds'])} | {r['peer']} | "
                         f"{fmt_time(r['peer_seconds'])} | "
                         f"{f'{ratio:.3g}' if ratio else '—'} |")
        lines += [""] + [f"- {n}" for n in s["notes"]] + ([""] if s["notes"] else [])
    return "\n".join(lines) + "\n"


def chart(path, device, date, suites):
    """A horizontal bar per (workload, peer) of the peer suites: peer time / kiln time on a
    log axis. Returns False (and says why) when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"report: no chart: matplotlib is missing; install it with:  "
              f"{sys.executable} -m pip install matplotlib", file=sys.stderr)
        return False
    bars = [(f"{r['workload']}  vs {r['peer']}", r["peer_seconds"] / r["kiln_seconds"], r["peer"])
            for s in suites if s["suite"] in PEER_SUITES
            for r in s["rows"] if r["kiln_seconds"] and r["peer_seconds"]]
    if not bars:
        return False
    peers = sorted({b[2] for b in bars})
    colors = dict(zip(peers, plt.get_cmap("tab10").colors))
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.32 * len(bars)))
    ys = range(len(bars))[::-1]
    ax.barh(list(ys), [b[1] for b in bars], color=[colors[b[2]] for b in bars])
    for y, b in zip(ys, bars):
        ax.text(b[1], y, f" {b[1]:.2f}x", va="center", fontsize=8)
    ax.set_yticks(list(ys), [b[0] for b in bars], fontsize=8)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("peer time / kiln time (log scale; right of 1: kiln is faster)")
    ax.set_title(f"kiln against its peers: {device}, {date}")
    lo = min(b[1] for b in bars)
    hi = max(b[1] for b in bars)
    ax.set_xlim(min(0.5, lo / 1.5), max(2.0, hi * 2.0))
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[p]) for p in peers]
    ax.legend(handles, peers, fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_reports(directory, device_filter=None):
    """Writes one report per device; returns [(kind, device, date, stem path, suites)]."""
    written = []
    for dev, suites in latest_by_device(load_results(directory)).items():
        name, kind = suites[0]["device"], suites[0]["kind"]
        if device_filter and device_filter.lower() not in name.lower():
            continue
        date = max(s["date"] for s in suites)
        stem = directory / f"{dev}-{date}"
        png = stem.with_suffix(".png")
        has_chart = chart(png, name, date, suites)
        stem.with_suffix(".md").write_text(
            markdown(name, kind, date, suites, png.name if has_chart else None))
        stem.with_suffix(".json").write_text(json.dumps({
            "benchmark": "kiln report", "device": name, "kind": kind, "date": date,
            "suites": suites}, indent=2) + "\n")
        print(f"report: wrote {stem}.md, .json{', .png' if has_chart else ''}", file=sys.stderr)
        written.append((kind, name, date, stem, len(suites)))
    return written


def update_readme(readme, written):
    """Replaces the README's benchmark section with the latest GPU and CPU reports."""
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        print(f"report: {readme.name} has no {README_BEGIN} ... {README_END} section; "
              "left as is", file=sys.stderr)
        return False
    parts = []
    for kind in ("gpu", "cpu"):
        # The newest; among reports of one date, the one with the most suites.
        mine = sorted((w for w in written if w[0] == kind), key=lambda w: (w[2], w[4]))
        if not mine:
            continue
        _, name, date, stem, _ = mine[-1]
        rel = stem.relative_to(readme.parent)
        body = stem.with_suffix(".md").read_text().split("\n", 1)[1]
        body = body.replace(f"]({stem.name}.png)", f"]({rel}.png)")
        body = re.sub(r"(?m)^## ", "#### ", body)  # below the README's own headings
        parts.append(f"### {name} ({kind.upper()}), {date}\n{body}"
                     f"Source: [`{rel}.md`]({rel}.md)\n")
    section = "\n".join(parts) if parts else "No benchmark results yet: run `make bench`.\n"
    head, rest = text.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    readme.write_text(f"{head}{README_BEGIN}\n{section}{README_END}{tail}")
    print(f"report: updated {readme}", file=sys.stderr)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(RESULTS), help="the results folder")
    parser.add_argument("--device", help="only devices whose name contains this text")
    parser.add_argument("--readme", action="store_true",
                        help="also update the README's benchmark section")
    args = parser.parse_args(argv)
    directory = pathlib.Path(args.results)
    written = write_reports(directory, args.device)
    if not written:
        print(f"report: no benchmark results in {directory}; run `make bench`", file=sys.stderr)
        return 1
    if args.readme:
        # The README shows every device's latest report, not only those just filtered.
        update_readme(ROOT / "README.md", write_reports(directory) if args.device else written)
    for _, name, date, stem, _ in written:
        print(f"{name} ({date}): {stem.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
