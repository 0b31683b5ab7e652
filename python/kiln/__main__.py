"""Command-line helpers.

    python -m kiln info           kiln's version, the devices (GPU name, memory, compute
                                  capability), the kernel compilers (NVRTC, the host C++
                                  compiler) and the kernel cache (directory, size)
    python -m kiln cache clear    empties the on-disk kernel cache
    python -m kiln --cmake-dir    the directory holding kiln's CMake package, for
                                  `cmake -DKiln_DIR=$(python -m kiln --cmake-dir)` in
                                  extensions (find_package(Kiln CONFIG))
"""

import argparse
import os
import pathlib
import platform
import re
import sys

# What kiln writes in its cache directory: entries (<sha256>.kjit GPU images, .kso CPU
# shared objects), the sources they were compiled from (.cu, .cpp), and temporary files of
# interrupted writes. Nothing else there is touched.
CACHE_FILE = re.compile(r"^([0-9a-f]{64}\.(kjit|kso|cu|cpp)|\.tmp-\d+-.*)$")


def cmake_dir():
    """The directory with KilnConfig.cmake: KILN_CMAKE_DIR if set, else the installed
    package's lib/cmake/Kiln (pip install puts it there, with include/ and lib/libkiln.so),
    else the build tree the extension module came from (its top holds a package that uses
    the source tree's headers)."""
    candidates = []
    if os.environ.get("KILN_CMAKE_DIR"):
        candidates.append(pathlib.Path(os.environ["KILN_CMAKE_DIR"]))
    # Not resolving links: a development package may be a folder of links to python/kiln.
    package = pathlib.Path(os.path.abspath(__file__)).parent
    candidates += [package / "lib" / "cmake" / "Kiln", package / "share" / "cmake" / "Kiln"]
    try:
        from kiln import _core

        build = pathlib.Path(_core._build_dir)
        candidates += [build, build / "cmake", build / "share" / "cmake" / "Kiln"]
    except ImportError:
        pass
    for c in candidates:
        if (c / "KilnConfig.cmake").is_file() or (c / "kiln-config.cmake").is_file():
            return c
    return None


def cache_dir(core=None):
    """kiln's kernel cache directory ("" when the disk cache is off). Asks the library when
    this build can (it also checks the directory); else applies the same rule:
    KILN_CACHE=0 turns it off, else $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln, ~/.cache/kiln."""
    if core is not None and hasattr(core, "kernel_toolchain"):
        return core.kernel_toolchain()["cache_dir"]
    if os.environ.get("KILN_CACHE") == "0":
        return ""
    if os.environ.get("KILN_CACHE_DIR"):
        return os.environ["KILN_CACHE_DIR"]
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "kiln")
    return os.path.join(os.path.expanduser("~"), ".cache", "kiln")


def cache_files(directory):
    """kiln's files in `directory` (see CACHE_FILE), as paths."""
    if not directory or not os.path.isdir(directory):
        return []
    return [
        os.path.join(directory, name)
        for name in sorted(os.listdir(directory))
        if CACHE_FILE.match(name) and os.path.isfile(os.path.join(directory, name))
    ]


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def cpu_name():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def info():
    """Prints the diagnostics of `python -m kiln info`."""
    import kiln.core as mx
    from kiln import _core

    print(f"kiln {mx.__version__}")
    print(f"  module: {_core.__file__}")
    print(f"  built in: {_core._build_dir}")
    print(f"  Python {platform.python_version()} ({sys.executable})")
    print(f"  default device: {mx.default_device()}")

    print("devices:")
    cpu = mx.device_info(mx.cpu) if hasattr(mx, "device_info") else {}
    threads = cpu.get("threads", os.cpu_count())
    print(f"  cpu: {cpu_name()}, {threads} threads")
    if not mx.is_available(mx.gpu):
        try:
            mx.default_stream(mx.gpu)
            reason = "not available"
        except Exception as e:  # noqa: BLE001 - the message is the reason
            reason = str(e).split("] ", 1)[-1]
        print(f"  gpu: none ({reason})")
    elif hasattr(mx, "device_info"):
        g = mx.device_info(mx.gpu)
        print(f"  gpu 0: {g['device_name']}, {g['memory_size'] / 2**30:.1f} GiB, compute "
              f"capability {g['compute_capability']} ({g['architecture']}), {g['sm_count']} SMs")
    else:
        print("  gpu 0: available (this build cannot describe it)")

    print("kernel compilers:")
    tools = mx.kernel_toolchain() if hasattr(mx, "kernel_toolchain") else None
    if tools is None:
        print("  unknown (this build lacks kiln.core.kernel_toolchain)")
    else:
        nvrtc = tools["nvrtc_version"]
        print(f"  NVRTC {nvrtc} (GPU kernels)" if nvrtc else
              "  NVRTC: none (built without the CUDA toolkit: no GPU kernels)")
        if tools["host_compiler"]:
            print(f"  host C++ compiler: {tools['host_compiler']} (CPU kernels)")
        else:
            print(f"  host C++ compiler: none ({tools.get('host_compiler_error', '')})")

    directory = cache_dir(mx)
    if not directory:
        print("kernel cache: off (KILN_CACHE=0)")
    else:
        files = cache_files(directory)
        entries = sum(1 for f in files if f.endswith((".kjit", ".kso")))
        size = sum(os.path.getsize(f) for f in files)
        print(f"kernel cache: {directory}, {entries} compiled kernels, {human_bytes(size)} "
              "(python -m kiln cache clear empties it)")
    return 0


def cache_clear():
    """Removes kiln's files from the kernel cache directory; prints what it freed."""
    try:
        import kiln.core as core
    except ImportError:  # the rule alone still finds the directory
        core = None
    directory = cache_dir(core)
    if not directory:
        print("kiln: the kernel cache is off (KILN_CACHE=0); nothing to clear")
        return 0
    files = cache_files(directory)
    freed, failed = 0, []
    for f in files:
        try:
            size = os.path.getsize(f)
            os.unlink(f)
            freed += size
        except OSError as e:
            failed.append(f"{f}: {e.strerror}")
    print(f"kiln: removed {len(files) - len(failed)} files ({human_bytes(freed)}) from {directory}")
    for line in failed:
        print(f"kiln: could not remove {line}", file=sys.stderr)
    return 1 if failed else 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m kiln",
        description=__doc__.splitlines()[0],
        epilog="commands: info; cache clear",
    )
    parser.add_argument("--cmake-dir", action="store_true",
                        help="print the directory of kiln's CMake package")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("info", help="version, devices, kernel compilers and cache")
    cache = commands.add_parser("cache", help="the on-disk kernel cache")
    cache.add_argument("action", choices=["clear"], help="clear: remove every cached kernel")
    args = parser.parse_args(argv)
    if args.cmake_dir:
        found = cmake_dir()
        if found is None:
            print(
                "kiln: KilnConfig.cmake was not found (looked in KILN_CMAKE_DIR, the installed "
                "package and the build tree of the extension module).",
                file=sys.stderr,
            )
            return 1
        print(found)
        return 0
    if args.command == "info":
        return info()
    if args.command == "cache":
        return cache_clear()
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
