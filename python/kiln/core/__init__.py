"""kiln's array API, with the names of MLX's ``mlx.core`` (``import kiln.core as mx``):
arrays, dtypes, operations, function transformations, devices and streams, memory, random
and fast."""

import sys as _sys

from kiln import _core
from kiln._core import *  # noqa: F401,F403
from kiln._core import __version__  # noqa: F401

# The compiled submodules, importable as kiln.core.<name> (import kiln.core.fast).
for _name in ("fast", "random", "linalg", "fft"):
    if hasattr(_core, _name):
        globals()[_name] = getattr(_core, _name)
        _sys.modules[f"{__name__}.{_name}"] = getattr(_core, _name)
del _name

from kiln.core._compat import *  # noqa: E402,F401,F403
from kiln.core import cuda, metal  # noqa: E402,F401
from kiln.core._compile import compile, disable_compile, enable_compile  # noqa: E402,F401
from kiln.core._array_api import __array_namespace_info__  # noqa: E402,F401
from kiln.core._transforms import checkpoint, custom_function  # noqa: E402,F401
from kiln.core._transforms import grad, value_and_grad  # noqa: E402,F401

# kiln.core.distributed (import kiln.core.distributed as dist).
if hasattr(_core, "distributed"):
    distributed = _core.distributed
    _sys.modules[f"{__name__}.distributed"] = _core.distributed

# Function export and import (kiln/export.h).
from kiln.core._export import FunctionExporter, export_function, exporter  # noqa: E402,F401
from kiln.core._export import import_function  # noqa: E402,F401

# MLX 0.32 exposes linalg.norm at the top level too, as `matrix_norm` (the same function).
matrix_norm = linalg.norm  # noqa: F821
