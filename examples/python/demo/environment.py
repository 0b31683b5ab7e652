"""What this machine offers the demo, and what to install for what it lacks."""

import os
import shlex
import shutil

import kiln.core as mx


def as_root():
    return hasattr(os, "geteuid") and os.geteuid() == 0


def apt_install(package):
    """The command that installs a Debian/Ubuntu package, with sudo unless root."""
    return f"{'' if as_root() else 'sudo '}apt-get install -y {package}"


def host_compiler():
    """The C++ compiler CPU custom kernels are built with, as kiln looks for it: $KILN_CXX,
    else c++, g++ or clang++ on PATH. None when there is none."""
    if os.environ.get("KILN_CXX"):
        words = shlex.split(os.environ["KILN_CXX"])
        return shutil.which(words[0]) if words else None
    for name in ("c++", "g++", "clang++"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def gpu_status():
    """(available, description): the GPU's name and memory, or why there is none."""
    if mx.is_available(mx.gpu):
        info = device_info(mx.gpu)
        if info.get("device_name"):
            gib = info.get("memory_size", 0) / 2**30
            cc = info.get("compute_capability")
            text = f"{info['device_name']}, {gib:.0f} GiB"
            return True, text + (f", compute capability {cc}" if cc else "")
        return True, "GPU 0"
    try:
        mx.default_stream(mx.gpu)  # raises with the reason
        reason = "not available"
    except Exception as e:  # noqa: BLE001 - the message is the reason
        reason = str(e).split("] ", 1)[-1]
    return False, reason


def gpu_install_hint():
    """(what is missing, how to get it) for running on a GPU: the CUDA toolkit at build time
    when this build lacks NVRTC, else an NVIDIA GPU and driver (found at run time)."""
    tools = getattr(mx, "kernel_toolchain", None)
    if tools and tools()["nvrtc_version"] is None:
        return ("the CUDA toolkit in this build (optional: everything runs on the CPU)",
                "install CUDA 12 or later (NVRTC, cuBLASLt), then rebuild:  make demo")
    return ("a GPU (optional: everything ran on the CPU)",
            "kiln uses an NVIDIA GPU when one and its driver (libcuda.so.1) are present, "
            "without a rebuild")


def device_info(device):
    """kiln.core.device_info(device) where this build has it, else {}."""
    fn = getattr(mx, "device_info", None)
    try:
        return dict(fn(device)) if fn else {}
    except Exception:  # noqa: BLE001 - informational only
        return {}


def kernels_built():
    """Whether this build's kiln.core.fast has custom kernels."""
    return hasattr(mx.fast, "metal_kernel") and hasattr(mx.fast, "cuda_kernel")
