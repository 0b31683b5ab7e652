"""Launch a kiln program on several processes: ``python -m kiln.launch -n N script.py args``.

Two ways to start the processes, chosen by ``--backend`` (default ``any``: ``nccl`` when a
GPU is present, else ``mpi``):

- ``nccl``: the launcher starts N local processes itself, one per GPU
  (``CUDA_VISIBLE_DEVICES`` set per rank), with the environment variables that
  ``kiln.core.distributed.init`` reads: ``KILN_RANK``, ``KILN_LOCAL_RANK``,
  ``KILN_WORLD_SIZE`` and ``KILN_COORDINATOR`` (``host:port`` where rank 0 listens to share
  NCCL's unique id).
- ``mpi``: CPU arrays communicate through MPI, whose processes only ``mpirun`` can start:
  the launcher runs ``mpirun -np N`` and supervises it.

Either way every output line is prefixed with its rank (``[0] ...``), and when one process
fails the others are stopped and the launcher exits with its status. ``--timeout S`` bounds
the whole run. With ``--hosts a,b`` the processes are spread over machines through
``mpirun --host`` (NCCL's id then travels through MPI); ``--print-command`` prints the
``mpirun`` command line instead of running it, for clusters with their own launchers.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time


def _gpu_count() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        out = subprocess.run(
            [smi, "-L"], capture_output=True, timeout=30, text=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def _nccl_path() -> str | None:
    """libnccl.so.2 from pip's nvidia-nccl wheel (PyTorch's) on this interpreter's path."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        lib = os.path.join(root, "nccl", "lib", "libnccl.so.2")
        if os.path.exists(lib):
            return lib
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _parse_hosts(spec: str, n: int | None) -> list[tuple[str, int]]:
    """'a,b' or 'a:2,b:2' -> [(host, slots)]."""
    hosts = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, slots = item.partition(":")
        hosts.append((name, int(slots) if slots else 0))
    if not hosts:
        raise SystemExit("kiln.launch: --hosts is empty")
    if any(s == 0 for _, s in hosts):
        per = max(1, (n or len(hosts)) // len(hosts))
        hosts = [(h, s or per) for h, s in hosts]
    return hosts


def mpirun_command(args, command: list[str]) -> list[str]:
    """The mpirun command line that starts `command` on args.n processes (args.hosts)."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise SystemExit(
            "kiln.launch: mpirun was not found (Debian/Ubuntu: apt-get install openmpi-bin "
            "libopenmpi-dev); CPU arrays communicate through MPI, whose processes mpirun starts"
        )
    cmd = [mpirun]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if args.hosts:
        hosts = _parse_hosts(args.hosts, args.n)
        n = args.n or sum(s for _, s in hosts)
        cmd += ["--host", ",".join(f"{h}:{s}" for h, s in hosts), "-np", str(n)]
        if all(h in ("localhost", "127.0.0.1", socket.gethostname()) for h, _ in hosts):
            cmd.append("--oversubscribe")
    else:
        cmd += ["-np", str(args.n or 1), "--oversubscribe"]
    # Forward what kiln and Python read (local children inherit it anyway).
    for var in (
        "PYTHONPATH",
        "KILN_DEVICE",
        "KILN_CACHE_DIR",
        "LD_LIBRARY_PATH",
        "NCCL_NVLS_ENABLE",
    ):
        if var in os.environ:
            cmd += ["-x", var]
    for var in args.env or []:
        cmd += ["-x", var]
    # Each rank runs under this module's wrapper, which prefixes its lines with the rank.
    wrap = (
        [command[0], "-m", "kiln.launch", "--rank-wrapper"]
        if not args.no_prefix
        else []
    )
    return cmd + wrap + command


def _wrap(command: list[str]) -> int:
    """Runs `command`, copying its output with each line prefixed by the MPI rank."""
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMIX_RANK", "?"))
    env = os.environ.copy()
    # One GPU per process on each machine (NCCL refuses two ranks on one GPU). With more
    # local ranks than GPUs (the MPI backend's CPU ranks), every rank keeps the default
    # visibility, as under a bare mpirun: pinning two of them to one GPU hung their MPI
    # collectives on a 2-GPU host.
    local = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK")
    local_size = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    if local is not None and "CUDA_VISIBLE_DEVICES" not in env:
        gpus = _gpu_count()
        if 1 < gpus and local_size <= gpus:
            env["CUDA_VISIBLE_DEVICES"] = str(int(local))
    lock = threading.Lock()
    p, threads = _spawn(command, env, lock, rank, True, new_session=False)
    signal.signal(signal.SIGTERM, lambda *_: p.terminate())
    rc = p.wait()
    for t in threads:
        t.join(timeout=2)
    return rc if rc >= 0 else 128 - rc


class _Prefixer(threading.Thread):
    """Copies a child's output to ours line by line, prefixed with its rank."""

    def __init__(
        self, stream, rank: int | None, out, lock: threading.Lock, prefix: bool
    ):
        super().__init__(daemon=True)
        self.stream, self.rank, self.out, self.lock, self.prefix = (
            stream,
            rank,
            out,
            lock,
            prefix,
        )

    def run(self):
        for line in iter(self.stream.readline, b""):
            rank = self.rank
            head = f"[{rank}] ".encode() if self.prefix and rank is not None else b""
            if not line.endswith(b"\n"):
                line += b"\n"
            with self.lock:  # one write per line, so lines of different ranks never mix
                self.out.buffer.write(head + line)
                self.out.flush()


def _stop(procs: list[subprocess.Popen], grace: float = 3.0) -> None:
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()


def _supervise(
    procs: list[subprocess.Popen], timeout: float | None, names: list[str]
) -> int:
    """Waits for every process; stops the rest at the first failure or at the timeout."""
    start = time.monotonic()
    remaining = set(range(len(procs)))
    while remaining:
        for i in sorted(remaining):
            rc = procs[i].poll()
            if rc is None:
                continue
            remaining.discard(i)
            if rc != 0:
                others = [j for j in remaining]
                print(
                    f"kiln.launch: {names[i]} exited with status {rc}"
                    + (f"; stopping {len(others)} other process(es)" if others else ""),
                    file=sys.stderr,
                    flush=True,
                )
                _stop(procs)
                return rc if rc > 0 else 128 - rc
        if timeout is not None and time.monotonic() - start > timeout:
            print(
                f"kiln.launch: timed out after {timeout:g} s; stopping "
                + ", ".join(names[i] for i in sorted(remaining)),
                file=sys.stderr,
                flush=True,
            )
            _stop(procs)
            return 124
        time.sleep(0.05)
    return 0


def _spawn(cmd, env, lock, rank, prefix, new_session=True):
    p = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=new_session,  # its own process group, so _stop reaches its children
    )
    threads = [
        _Prefixer(p.stdout, rank, sys.stdout, lock, prefix),
        _Prefixer(p.stderr, rank, sys.stderr, lock, prefix),
    ]
    for t in threads:
        t.start()
    return p, threads


def _resolve_backend(backend: str) -> str:
    if backend != "any":
        return backend
    return "nccl" if _gpu_count() > 0 else "mpi"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--rank-wrapper"]:
        return _wrap(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m kiln.launch",
        description="Run a kiln program on several processes (see docs/distributed.md).",
    )
    parser.add_argument(
        "-n", "--nproc", dest="n", type=int, default=None, help="number of processes"
    )
    parser.add_argument(
        "--hosts", default=None, help="machines, e.g. host1,host2 or host1:4,host2:4"
    )
    parser.add_argument(
        "--backend",
        choices=("any", "nccl", "mpi"),
        default="any",
        help="nccl: one process per GPU, TCP rendezvous; mpi: through mpirun (default: nccl "
        "when GPUs exist, else mpi)",
    )
    parser.add_argument(
        "--timeout", type=float, default=None, help="stop everything after S seconds"
    )
    parser.add_argument(
        "--print-command", action="store_true", help="print the mpirun command and exit"
    )
    parser.add_argument(
        "--no-prefix", action="store_true", help="do not prefix output lines with ranks"
    )
    parser.add_argument(
        "-x", "--env", action="append", help="extra environment variable for mpirun -x"
    )
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter for the script"
    )
    parser.add_argument("script", help="the Python script (or -m module)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    args = parser.parse_args(argv)

    if args.n is not None and args.n < 1:
        parser.error(f"-n must be at least 1, got {args.n}")
    command = [args.python]
    if args.script == "-m":
        if not args.args:
            parser.error("-m needs a module name")
        command += ["-m"] + args.args
    else:
        command += [args.script] + args.args

    backend = _resolve_backend(args.backend)
    if "KILN_NCCL_PATH" not in os.environ and (path := _nccl_path()):
        os.environ["KILN_NCCL_PATH"] = (
            path  # inherited by every process (and mpirun -x)
        )
    lock = threading.Lock()
    prefix = not args.no_prefix

    if args.hosts or backend == "mpi" or args.print_command:
        cmd = mpirun_command(args, command)
        if args.print_command:
            print(shlex.join(cmd))
            return 0
        p, threads = _spawn(cmd, os.environ.copy(), lock, None, prefix)
        try:
            rc = _supervise([p], args.timeout, ["mpirun"])
        except KeyboardInterrupt:
            _stop([p])
            rc = 130
        for t in threads:
            t.join(timeout=2)
        return rc

    # nccl: local processes, one per GPU.
    n = args.n or max(1, _gpu_count())
    gpus = _gpu_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    devices = (
        [d.strip() for d in visible.split(",")]
        if visible
        else [str(i) for i in range(gpus)]
    )
    if gpus and n > gpus:
        print(
            f"kiln.launch: {n} processes share {gpus} GPU(s)",
            file=sys.stderr,
            flush=True,
        )
    coordinator = f"127.0.0.1:{_free_port()}"
    procs, threads = [], []
    for rank in range(n):
        env = os.environ.copy()
        env.update(
            KILN_RANK=str(rank),
            KILN_LOCAL_RANK=str(rank),
            KILN_WORLD_SIZE=str(n),
            KILN_COORDINATOR=coordinator,
        )
        if devices:
            env["CUDA_VISIBLE_DEVICES"] = devices[rank % len(devices)]
        p, ts = _spawn(command, env, lock, rank, prefix)
        procs.append(p)
        threads += ts
    try:
        rc = _supervise(procs, args.timeout, [f"rank {r}" for r in range(n)])
    except KeyboardInterrupt:
        _stop(procs)
        rc = 130
    for t in threads:
        t.join(timeout=2)
    return rc


if __name__ == "__main__":
    sys.exit(main())
