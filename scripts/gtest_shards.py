#!/usr/bin/env python3
"""Runs a GoogleTest binary in parallel shards, one process per shard, for scripts/gpu-check.

ctest runs each discovered test in its own process: on a GPU machine every one of ~4,000
processes then creates a CUDA context and compiles or loads its kernels again, which costs
seconds per test. A shard keeps one context and one in-memory kernel cache for hundreds of
tests. What sharing a process could hide or cause is checked afterwards: every test that
failed in its shard is run again alone, and tests a crashed or stopped shard never finished
are run one process each.

    python scripts/gtest_shards.py BINARY [--shards N] [--seconds S] [--log FILE]

Prints a summary (passed, skipped, failed alone, failed only in a shard, not run) and exits
non-zero when a test fails alone, crashes, or was not run before the deadline.
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def run_shards(binary, shards, deadline, work):
    procs = []
    for i in range(shards):
        env = dict(os.environ, GTEST_TOTAL_SHARDS=str(shards), GTEST_SHARD_INDEX=str(i))
        log = open(work / f"shard{i}.log", "w")
        cmd = [binary, f"--gtest_output=json:{work}/shard{i}.json"]
        procs.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True), log))
    status = []
    for p, log in procs:
        try:
            p.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        log.close()
        status.append(p.returncode)
    return status


def results_of(json_path):
    """{full test name: 'passed' | 'skipped' | 'failed'} from a gtest JSON report."""
    out = {}
    d = json.loads(json_path.read_text())
    for suite in d.get("testsuites", []):
        for t in suite.get("testsuite", []):
            if t.get("status") == "NOTRUN":
                continue
            name = f"{suite['name']}.{t['name']}"
            if t.get("failures"):
                out[name] = "failed"
            elif t.get("result") == "SKIPPED":
                out[name] = "skipped"
            else:
                out[name] = "passed"
    return out


def listed(binary, env_extra):
    """Test names the binary would run (with the shard variables in env_extra)."""
    env = dict(os.environ, **env_extra)
    text = subprocess.run([binary, "--gtest_list_tests"], env=env, stdout=subprocess.PIPE,
                          text=True, check=True).stdout
    names, suite = [], ""
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            names.append(suite + line.split("#")[0].strip())
    return names


def run_alone(binary, name, work, deadline):
    """'passed' | 'skipped' | 'failed' | 'crashed' | 'not run' for one test in its own process."""
    left = deadline - time.monotonic()
    if left < 2:
        return name, "not run", ""
    safe = "".join(c if c.isalnum() else "_" for c in name)[:150]
    report = work / f"alone_{safe}.json"
    try:
        p = subprocess.run([binary, f"--gtest_filter={name}", f"--gtest_output=json:{report}"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=left)
    except subprocess.TimeoutExpired:
        return name, "not run", "stopped at the deadline"
    output = p.stdout if len(p.stdout) < 12000 else p.stdout[:4000] + "\n[...]\n" + p.stdout[-8000:]
    if report.exists():
        got = results_of(report).get(name)
        if got:
            return name, got, output
    return name, "crashed", output


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--shards", type=int, default=os.cpu_count())
    ap.add_argument("--seconds", type=float, default=3600, help="deadline for everything")
    ap.add_argument("--log", help="write the shards' output and the reruns here")
    args = ap.parse_args()
    deadline = time.monotonic() + args.seconds
    work = pathlib.Path(tempfile.mkdtemp(prefix="gtest-shards-"))

    start = time.monotonic()
    status = run_shards(args.binary, args.shards, deadline, work)
    results, unfinished = {}, []
    for i, code in enumerate(status):
        report = work / f"shard{i}.json"
        if code in (0, 1) and report.exists():
            results.update(results_of(report))
        else:  # crashed or stopped: rerun what it did not finish
            env = {"GTEST_TOTAL_SHARDS": str(args.shards), "GTEST_SHARD_INDEX": str(i)}
            unfinished += listed(args.binary, env)
    shard_seconds = time.monotonic() - start

    # Unfinished tests one process each; failures again alone to tell real ones from
    # interference between tests sharing a process.
    failed_in_shard = sorted(n for n, r in results.items() if r == "failed")
    todo = unfinished + failed_in_shard
    alone = {}
    with concurrent.futures.ThreadPoolExecutor(args.shards) as pool:
        for name, got, output in pool.map(lambda n: run_alone(args.binary, n, work, deadline), todo):
            alone[name] = (got, output)
    for n in unfinished:
        results[n] = alone[n][0]

    count = lambda r: sum(1 for v in results.values() if v == r)
    real = [n for n in failed_in_shard if alone[n][0] != "passed"]
    only_shard = [n for n in failed_in_shard if alone[n][0] == "passed"]
    crashed = [n for n in results if results[n] == "crashed"]
    not_run = [n for n in results if results[n] == "not run"]
    lines = [
        f"gtest: {len(results)} tests in {args.shards} shards ({shard_seconds:.0f} s), "
        f"{count('passed')} passed, {count('skipped')} skipped, {len(real)} failed, "
        f"{len(crashed)} crashed, {len(not_run)} not run (deadline); "
        f"{len(only_shard)} failed only alongside other tests in their shard (passed alone)",
    ]
    for title, names in (("failed", real), ("crashed", crashed),
                         ("failed only in a shard (passed alone)", only_shard), ("not run", not_run)):
        if names:
            lines.append(f"{title}:")
            lines += [f"  {n}" for n in names[:200]]
    print("\n".join(lines))

    if args.log:
        with open(args.log, "w") as log:
            log.write("\n".join(lines) + "\n")
            for i in range(args.shards):
                log.write(f"\n==== shard {i} (exit {status[i]})\n")
                log.write((work / f"shard{i}.log").read_text(errors="replace"))
            for name, (got, output) in alone.items():
                log.write(f"\n==== alone: {name}: {got}\n{output}")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if real or crashed or not_run else 0


if __name__ == "__main__":
    sys.exit(main())
