"""Tests of kiln.core.distributed and python -m kiln.launch.

Single-process behaviour runs in this process (a group of one, as MLX). Multi-process
tests start 2 to 4 processes through mpirun and through the launcher (CPU arrays, MPI),
each running distributed_worker.py, which checks every collective against NumPy; they are
time-bounded, so a hang fails instead of blocking. GPU tests (NCCL) run when
KILN_DEVICE=gpu and two GPUs exist.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import kiln.core as mx
from conftest import current_rng

dist = mx.distributed

HERE = Path(__file__).resolve().parent
PYDIR = HERE.parent
WORKER = HERE / "distributed_worker.py"
MPIRUN = shutil.which("mpirun")
need_mpi = pytest.mark.skipif(
    MPIRUN is None or not dist.is_available("mpi"),
    reason="Open MPI (mpirun, libmpi) is not installed",
)


def _env(device="cpu", **extra):
    env = os.environ.copy()
    env["PYTHONPATH"] = str(PYDIR) + os.pathsep + env.get("PYTHONPATH", "")
    env["KILN_DEVICE"] = device
    for k in ("KILN_RANK", "KILN_WORLD_SIZE", "KILN_COORDINATOR", "RANK", "WORLD_SIZE"):
        env.pop(k, None)
    env.update(extra)
    return env


def _run(cmd, timeout=240, **env):
    return subprocess.run(
        cmd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(PYDIR),
    )


def _launch(*args, timeout=240, **env):
    return _run(
        [sys.executable, "-m", "kiln.launch", *map(str, args)], timeout=timeout, **env
    )


def _seed():
    """The workers' seed (they print it on failure), drawn from KILN_TEST_SEED's stream."""
    return int(current_rng().integers(0, 2**31))


def _assert_passed(res, n):
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    for r in range(n):
        assert f"PASS rank {r} of {n}" in out, out[-4000:]


# ---------------------------------------------------------------- one process


def test_single_process_group():
    g = dist.init()
    assert g.rank() == 0 and g.size() == 1
    assert "size=1" in repr(g)
    assert isinstance(dist.is_available(), bool)
    assert dist.is_available("mpi") in (True, False)
    assert dist.is_available("nccl") in (True, False)
    sub = g.split(0)
    assert sub.size() == 1 and sub.rank() == 0


def test_single_process_collectives_are_identities():
    x = mx.array(current_rng().standard_normal((3, 4)).astype(np.float32))
    for f in (
        dist.all_sum,
        dist.all_max,
        dist.all_min,
        dist.all_gather,
        dist.sum_scatter,
    ):
        np.testing.assert_array_equal(np.array(f(x)), np.array(x))
    np.testing.assert_array_equal(np.array(dist.all_gather(mx.array(2.0))), 2.0)
    g = mx.grad(lambda a: dist.all_sum(a).sum())(x)
    np.testing.assert_array_equal(np.array(g), np.ones((3, 4), np.float32))
    # The mean of one: floating arrays unchanged, integers as `x / 1` (float32).
    i = mx.array(current_rng().integers(-9, 9, (5,)).astype(np.int32))
    m, mi = dist.grouped_all_mean([x, i])
    np.testing.assert_array_equal(np.array(m), np.array(x))
    assert mi.dtype == mx.float32
    np.testing.assert_array_equal(np.array(mi), np.array(i).astype(np.float32))
    assert dist.grouped_all_mean([]) == []


def test_single_process_errors():
    x = mx.array([1.0, 2.0])
    with pytest.raises(ValueError, match=r"\[send\]"):
        dist.send(x, 1)
    with pytest.raises(ValueError, match=r"\[recv\]"):
        dist.recv((2,), mx.float32, 0)
    with pytest.raises(ValueError, match=r"\[recv\]"):
        dist.recv_like(x, 1)
    with pytest.raises(ValueError, match=r"\[distributed.init\].*backend 'ring'"):
        dist.init(backend="ring")
    with pytest.raises(ValueError, match=r"\[distributed.is_available\]"):
        dist.is_available("gloo")
    with pytest.raises(ValueError, match=r"\[sum_scatter\]"):
        dist.sum_scatter(mx.array(1.0))
    with pytest.raises(ValueError, match=r"\[all_max\]"):
        dist.all_max(mx.array([1j]))
    with pytest.raises(ValueError, match=r"\[split\]"):
        dist.init().split(-1)


def test_strict_init_names_the_missing_library(tmp_path):
    # A path that cannot load stands for a machine without Open MPI.
    script = "import kiln.core as mx\nmx.distributed.init(strict=True, backend='mpi')\n"
    res = _run([sys.executable, "-c", script], KILN_MPI_PATH=str(tmp_path / "none.so"))
    if dist.is_available("mpi"):
        assert res.returncode == 0, res.stderr  # the system libmpi is found after it
    res = _run(
        [
            sys.executable,
            "-c",
            "import kiln.core as mx; print(mx.distributed.init().size())",
        ],
        KILN_WORLD_SIZE="2",
        KILN_RANK="1",
        KILN_COORDINATOR="127.0.0.1:1",
        KILN_RENDEZVOUS_TIMEOUT="2",
    )
    assert res.returncode != 0
    assert (
        "[distributed.init]" in res.stderr and "KILN_WORLD_SIZE=2" in res.stderr
    ), res.stderr


def test_launch_env_is_validated():
    for env, msg in [
        (
            dict(KILN_RANK="3", KILN_WORLD_SIZE="2", KILN_COORDINATOR="127.0.0.1:9"),
            "out of range",
        ),
        (
            dict(KILN_RANK="x", KILN_WORLD_SIZE="2", KILN_COORDINATOR="127.0.0.1:9"),
            "non-negative",
        ),
        (dict(KILN_RANK="0", KILN_WORLD_SIZE="2"), "KILN_COORDINATOR"),
        (
            dict(KILN_RANK="0", KILN_WORLD_SIZE="2", KILN_COORDINATOR="nohost"),
            "host:port",
        ),
    ]:
        res = _run(
            [sys.executable, "-c", "import kiln.core as mx; mx.distributed.init()"],
            **env,
        )
        assert (
            res.returncode != 0 and "ValueError" in res.stderr and msg in res.stderr
        ), res.stderr


# ---------------------------------------------------------------- several processes, MPI


@need_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_collectives_under_mpirun(n):
    cmd = [MPIRUN, "--oversubscribe", "-np", str(n)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    res = _run(cmd + [sys.executable, str(WORKER), str(_seed())])
    _assert_passed(res, n)


@need_mpi
def test_collectives_through_the_launcher():
    res = _launch("-n", 3, "--backend", "mpi", "--timeout", 200, WORKER, _seed())
    _assert_passed(res, 3)
    lines = [l for l in res.stdout.splitlines() if "PASS" in l]
    assert sorted(l.split()[0] for l in lines) == ["[0]", "[1]", "[2]"], res.stdout


@need_mpi
def test_launcher_hosts_localhost():
    res = _launch(
        "--hosts",
        "localhost:2",
        "--timeout",
        200,
        WORKER,
        _seed(),
        "reductions",
        "split",
    )
    _assert_passed(res, 2)


def test_launcher_prints_the_mpirun_command():
    if MPIRUN is None:
        pytest.skip("mpirun is not installed")
    res = _launch(
        "-n",
        4,
        "--hosts",
        "nodeA:2,nodeB:2",
        "--print-command",
        "train.py",
        "--lr",
        "0.1",
    )
    assert res.returncode == 0, res.stderr
    cmd = res.stdout.strip()
    assert "mpirun" in cmd and "--host nodeA:2,nodeB:2" in cmd and "-np 4" in cmd, cmd
    assert cmd.endswith("train.py --lr 0.1"), cmd


@need_mpi
def test_a_failing_rank_ends_the_mpi_launch(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent("""
            import sys
            import kiln.core as mx
            g = mx.distributed.init(strict=True)
            if g.rank() == 1:
                raise RuntimeError("rank one gives up")
            # The others block in a collective that rank 1 never joins.
            mx.eval(mx.distributed.all_sum(mx.ones((4,))))
            """))
    start = time.monotonic()
    res = _launch("-n", 3, "--backend", "mpi", "--timeout", 120, script)
    assert time.monotonic() - start < 110
    assert res.returncode not in (0, 124), res.stdout + res.stderr
    assert "[1] RuntimeError: rank one gives up" in res.stderr, res.stderr


# ---------------------------------------------------------------- the launcher's own processes


def test_launcher_prefixes_and_stops_the_others(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
            import os, sys, time
            rank = int(os.environ["KILN_RANK"])
            print("hello from", rank, "of", os.environ["KILN_WORLD_SIZE"], flush=True)
            if rank == 1:
                time.sleep(5)  # lets the others print first, even on a loaded machine
                sys.exit(3)
            time.sleep(60)
            """))
    start = time.monotonic()
    res = _launch("-n", 3, "--backend", "nccl", "--timeout", 50, script)
    assert time.monotonic() - start < 30, "the others were not stopped"
    assert res.returncode == 3, res.stdout + res.stderr
    for r in range(3):
        assert f"[{r}] hello from {r} of 3" in res.stdout, res.stdout
    assert "rank 1 exited with status 3" in res.stderr, res.stderr


def test_launcher_timeout(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text("import time\ntime.sleep(120)\n")
    res = _launch("-n", 2, "--backend", "nccl", "--timeout", 3, script, timeout=60)
    assert res.returncode == 124 and "timed out" in res.stderr, res.stderr


def test_tcp_rendezvous_through_the_launcher(tmp_path):
    script = tmp_path / "rdv.py"
    script.write_text(textwrap.dedent("""
            import os
            import kiln.core as mx
            r = int(os.environ["KILN_RANK"])
            got = mx.distributed._tcp_all_gather(f"payload-{r}".encode() * (r + 1))
            n = int(os.environ["KILN_WORLD_SIZE"])
            assert got == [f"payload-{q}".encode() * (q + 1) for q in range(n)], got
            print("rendezvous ok", r, flush=True)
            """))
    res = _launch("-n", 4, "--backend", "nccl", "--timeout", 100, script)
    assert res.returncode == 0, res.stdout + res.stderr
    for r in range(4):
        assert f"[{r}] rendezvous ok {r}" in res.stdout


def test_tcp_rendezvous_times_out_naming_the_missing_ranks(tmp_path):
    script = "import kiln.core as mx; mx.distributed._tcp_all_gather(b'x')"
    res = _run(
        [sys.executable, "-c", script],
        KILN_RANK="0",
        KILN_WORLD_SIZE="3",
        KILN_COORDINATOR="127.0.0.1:0",
        KILN_RENDEZVOUS_TIMEOUT="1",
    )
    assert res.returncode != 0
    assert (
        "[distributed.init] Timed out" in res.stderr and "rank(s) 1, 2" in res.stderr
    ), res.stderr


# ---------------------------------------------------------------- GPUs (NCCL)


def _gpu_count():
    try:
        out = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


need_2_gpus = pytest.mark.skipif(
    os.environ.get("KILN_DEVICE") != "gpu"
    or _gpu_count() < 2
    or not dist.is_available("nccl"),
    reason="needs KILN_DEVICE=gpu, 2 GPUs and NCCL",
)


@need_2_gpus
def test_nccl_collectives_through_the_launcher():
    res = _launch(
        "-n",
        2,
        "--backend",
        "nccl",
        "--timeout",
        400,
        WORKER,
        _seed(),
        timeout=500,
        device="gpu",
    )
    _assert_passed(res, 2)


@need_2_gpus
@need_mpi
def test_nccl_collectives_under_mpirun():
    # NCCL's unique id travels through MPI; each rank takes its own GPU.
    res = _launch(
        "-n",
        2,
        "--hosts",
        "localhost:2",
        "--timeout",
        400,
        WORKER,
        _seed(),
        "reductions",
        timeout=500,
        device="gpu",
    )
    _assert_passed(res, 2)
