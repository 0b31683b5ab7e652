"""kiln: lazy arrays, function transformations and custom kernels for NVIDIA GPUs and CPUs.

The array API lives in :mod:`kiln.core` and follows MLX's ``mlx.core``::

    import kiln.core as mx
"""

from kiln._core import __version__

__all__ = ["__version__"]
