"""The Python array API standard's entry points for kiln: ``array.__array_namespace__()``
(this module, ``kiln.core``) and ``kiln.core.__array_namespace_info__()`` (what the
namespace supports: devices, default and available dtypes), so libraries written against
the standard (``xp = x.__array_namespace__()``) run on kiln arrays as on MLX's."""

from kiln import _core

# The standard's dtype kinds, by the names of the dtypes in each (kiln's float16 and
# bfloat16 are outside the standard and not listed).
_SIGNED = ("int8", "int16", "int32", "int64")
_UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
_REAL = ("float32", "float64")
_COMPLEX = ("complex64",)
_KIND_NAMES = {
    "bool": ("bool",),
    "signed integer": _SIGNED,
    "unsigned integer": _UNSIGNED,
    "integral": _SIGNED + _UNSIGNED,
    "real floating": _REAL,
    "complex floating": _COMPLEX,
    "numeric": _SIGNED + _UNSIGNED + _REAL + _COMPLEX,
}


def _check_device(device):
    if device is not None and not isinstance(device, _core.Device):
        raise TypeError(
            f"[__array_namespace_info__] device must be a kiln Device; got {type(device).__name__}."
        )


class ArrayNamespaceInfo:
    """What kiln's array API namespace supports (the standard's inspection object)."""

    def capabilities(self):
        """Boolean-mask indexing and data-dependent output shapes are not supported (kiln's
        shapes are known before evaluation)."""
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 10}

    def default_device(self):
        return _core.default_device()

    def devices(self):
        """Every usable device: the CPU and each GPU."""
        out = []
        for kind in (_core.cpu, _core.gpu):
            out += [_core.Device(kind, i) for i in range(_core.device_count(kind))]
        return tuple(out)

    def default_dtypes(self, *, device=None):
        _check_device(device)
        return {
            "real floating": _core.float32,
            "complex floating": _core.complex64,
            "integral": _core.int32,
            "indexing": _core.int32,
        }

    def dtypes(self, *, device=None, kind=None):
        """The standard's dtypes kiln has (on every device; kiln's GPU computes float64
        too), optionally those of ``kind``: a kind name or a tuple of them. ValueError for
        an unknown kind."""
        _check_device(device)
        names = ("bool",) + _KIND_NAMES["numeric"]
        if kind is not None:
            kinds = (kind,) if isinstance(kind, str) else kind
            if not isinstance(kinds, tuple) or any(k not in _KIND_NAMES for k in kinds):
                raise ValueError(f"[__array_namespace_info__] Unknown dtype kind {kind!r}.")
            wanted = {n for k in kinds for n in _KIND_NAMES[k]}
            names = tuple(n for n in names if n in wanted)
        return {n: getattr(_core, "bool_" if n == "bool" else n) for n in names}


def __array_namespace_info__():
    """The array API standard's inspection object for kiln.core."""
    return ArrayNamespaceInfo()


def _array_namespace(self, /, *, api_version=None):
    """The array API namespace of kiln arrays: the ``kiln.core`` module."""
    import kiln.core

    return kiln.core


_core.array.__array_namespace__ = _array_namespace
