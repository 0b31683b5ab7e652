"""MLX's ``mlx.core.cuda`` namespace."""

from kiln import _core


def is_available():
    """Whether a CUDA GPU can run kiln's ops (a driver, a device and a CUDA build)."""
    return bool(_core.is_available(_core.gpu))
