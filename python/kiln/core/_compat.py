"""The parts of ``mlx.core`` that are plain Python over kiln's compiled core: MLX's alias
names, constants, dtype queries of NumPy's array API, and print options."""

import contextlib as _contextlib
import math as _math

from kiln import _core

# ---------------------------------------------------------------- constants
pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None
euler_gamma = 0.5772156649015329

# ---------------------------------------------------------------- alias names (array API)
acos = _core.arccos
acosh = _core.arccosh
asin = _core.arcsin
asinh = _core.arcsinh
atan = _core.arctan
atanh = _core.arctanh
atan2 = _core.arctan2
bitwise_left_shift = _core.left_shift
bitwise_right_shift = _core.right_shift
concat = _core.concatenate
cumulative_sum = _core.cumsum
cumulative_prod = _core.cumprod
permute_dims = _core.transpose
pow = _core.power
empty = _core.zeros
empty_like = _core.zeros_like


def positive(a, /, *, stream=None):
    """``+a``: the array itself (as an array; scalars and lists are converted)."""
    return a if isinstance(a, _core.array) else _core.array(a)


def _is_numpy_float64(a):
    return type(a).__module__ == "numpy" and str(getattr(a, "dtype", "")) == "float64"


def asarray(a, dtype=None, *, copy=None):
    """``a`` as an array: arrays are returned as they are unless ``dtype`` differs or
    ``copy=True``; anything the :class:`array` constructor takes is converted.

    Unless ``copy=True``, a DLPack producer (a NumPy array, a PyTorch tensor) of the asked
    dtype is shared without a copy, as MLX shares host buffers on unified memory: writes to
    it show in the array. A NumPy float64 array without ``dtype`` becomes float32 (a copy),
    as the constructor does.

    Raises:
        ValueError: ``copy=False`` and a copy or conversion is needed; as MLX, also for a
            kiln array (whose import path copies).
    """
    if isinstance(a, _core.array):
        if copy is False:
            raise ValueError("[asarray] Unable to avoid a copy of an array with copy=False.")
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return _core.copy(a) if copy else a
    if _is_numpy_float64(a) and dtype is None:
        # As the constructor (and MLX): NumPy's default float64 becomes float32, a copy.
        if copy is False:
            raise ValueError(
                "[asarray] A NumPy float64 array becomes float32, which needs a copy; "
                "pass dtype=float64 to share it."
            )
        return _core.array(a)
    if hasattr(a, "__dlpack__") and copy is not True:
        try:
            shared = _core.from_dlpack(a)
        except Exception:  # a producer kiln cannot share with: convert as the constructor does
            shared = None
        if shared is not None and (dtype is None or shared.dtype == dtype):
            return shared
    if copy is False:
        what = f" to {dtype}" if dtype is not None else ""
        raise ValueError(
            f"[asarray] Converting a {type(a).__name__}{what} needs a copy (copy=False)."
        )
    return _core.array(a, dtype=dtype)


# ---------------------------------------------------------------- dtype queries
_KINDS = {
    "bool": lambda d: d == _core.bool_,
    "signed integer": lambda d: _core.issubdtype(d, _core.signedinteger),
    "unsigned integer": lambda d: _core.issubdtype(d, _core.unsignedinteger),
    "integral": lambda d: _core.issubdtype(d, _core.integer),
    "real floating": lambda d: _core.issubdtype(d, _core.floating),
    "complex floating": lambda d: _core.issubdtype(d, _core.complexfloating),
    "numeric": lambda d: _core.issubdtype(d, _core.number),
}


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind``: a dtype, one of the array API's kind names ("bool",
    "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
    "numeric"), or a tuple of those.

    Raises:
        ValueError: An unknown kind name.
    """
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, _core.Dtype):
        return dtype == kind
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"[isdtype] Unknown kind '{kind}'; expected one of {sorted(_KINDS)}.")
        return _KINDS[kind](dtype)
    raise TypeError(f"[isdtype] kind must be a dtype, a kind name or a tuple; got {type(kind)}.")


def _dtype_of(x, op):
    if isinstance(x, _core.Dtype):
        return x
    if isinstance(x, _core.array):
        return x.dtype
    raise ValueError(f"[{op}] Inputs must be arrays or dtypes.")


def result_type(*arrays_and_dtypes):
    """The dtype of the result of combining the given arrays and dtypes by the promotion
    rules of :func:`promote_types`."""
    if not arrays_and_dtypes:
        raise ValueError("[result_type] Needs at least one array or dtype.")
    out = _dtype_of(arrays_and_dtypes[0], "result_type")
    for x in arrays_and_dtypes[1:]:
        out = _core.promote_types(out, _dtype_of(x, "result_type"))
    return out


def can_cast(from_, to):
    """Whether ``from_`` (an array or a dtype) converts to ``to`` without loss of kind:
    promoting it with ``to`` gives ``to``."""
    return _core.promote_types(_dtype_of(from_, "can_cast"), to) == to


def broadcast_shapes(*shapes):
    """The shape NumPy's broadcasting gives the given shapes.

    Raises:
        ValueError: The shapes do not broadcast.
    """
    if not shapes:
        raise ValueError("[broadcast_shapes] Needs at least one shape.")
    out = list(shapes[0])
    for s in shapes[1:]:
        s = list(s)
        n = max(len(out), len(s))
        a = [1] * (n - len(out)) + out
        b = [1] * (n - len(s)) + s
        r = []
        for x, y in zip(a, b):
            if x != y and x != 1 and y != 1:
                fa = ",".join(str(v) for v in out)
                fb = ",".join(str(v) for v in s)
                raise ValueError(f"[broadcast_shapes] Shapes ({fa}) and ({fb}) cannot be broadcast.")
            r.append(y if x == 1 else x)
        out = r
    return tuple(out)


# ---------------------------------------------------------------- print options
class PrintOptions:
    """How arrays print: ``precision`` is the number of digits after the point of floats
    (-1: six significant digits)."""

    def __init__(self, precision=-1):
        self.precision = precision

    def __repr__(self):
        return f"PrintOptions(precision={self.precision})"


def set_printoptions(precision=-1):
    """Sets how arrays print (see :class:`PrintOptions`)."""
    _core._set_print_precision(int(precision))


def get_printoptions():
    """The current :class:`PrintOptions`."""
    return PrintOptions(_core._get_print_precision())


@_contextlib.contextmanager
def printoptions(precision=-1):
    """A context manager setting print options inside a ``with`` block."""
    old = _core._get_print_precision()
    _core._set_print_precision(int(precision))
    try:
        yield get_printoptions()
    finally:
        _core._set_print_precision(old)


def set_wired_limit(limit):
    """MLX's wired-memory limit for Apple silicon: it has no meaning on kiln's devices, so
    this only checks the argument and returns the previous limit (0)."""
    if int(limit) < 0:
        raise ValueError(f"[set_wired_limit] The limit must be non-negative; got {limit}.")
    return 0
