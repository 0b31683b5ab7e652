"""MLX's ``mlx.core.metal`` namespace: Metal is never available in kiln, and the memory
functions MLX keeps here are kiln's own (see :mod:`kiln.core`)."""

from kiln import _core


def is_available():
    """False: kiln runs on NVIDIA GPUs (CUDA) and CPUs, never on Metal."""
    return False


def device_info():
    """The default device's description (see :func:`kiln.core.device_info`)."""
    return _core.device_info()


def start_capture(path):
    """Metal GPU captures do not exist on kiln's devices."""
    raise RuntimeError("[metal.start_capture] Metal is not available in kiln; use Nsight "
                       "Systems (nsys) to capture GPU work.")


def stop_capture():
    """See :func:`start_capture`."""
    raise RuntimeError("[metal.stop_capture] Metal is not available in kiln.")


get_active_memory = _core.get_active_memory
get_peak_memory = _core.get_peak_memory
reset_peak_memory = _core.reset_peak_memory
get_cache_memory = _core.get_cache_memory
set_memory_limit = _core.set_memory_limit
set_cache_limit = _core.set_cache_limit
clear_cache = _core.clear_cache


def set_wired_limit(limit):
    """No effect in kiln (see :func:`kiln.core.set_wired_limit`)."""
    from kiln.core._compat import set_wired_limit as _swl

    return _swl(limit)
