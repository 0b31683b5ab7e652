"""
kiln's core: arrays, dtypes, operations, transformations, devices and streams.
"""
from __future__ import annotations
import collections.abc
import enum
import typing
from . import random
from . import fast
__all__: list[str] = ['Device', 'DeviceType', 'Dtype', 'DtypeCategory', 'Stream', 'StreamContext', 'abs', 'add', 'addmm', 'all', 'allclose', 'any', 'arange', 'arccos', 'arccosh', 'arcsin', 'arcsinh', 'arctan', 'arctan2', 'arctanh', 'argmax', 'argmin', 'argsort', 'array', 'array_equal', 'as_strided', 'astype', 'async_eval', 'bfloat16', 'bitwise_and', 'bitwise_invert', 'bitwise_or', 'bitwise_xor', 'bool_', 'broadcast_arrays', 'broadcast_to', 'ceil', 'checkpoint', 'clear_cache', 'clip', 'complex64', 'complexfloating', 'concatenate', 'conj', 'conjugate', 'contiguous', 'copy', 'cos', 'cosh', 'cpu', 'cumprod', 'cumsum', 'custom_function', 'default_device', 'default_stream', 'device_info', 'divide', 'equal', 'erf', 'erfinv', 'eval', 'exp', 'expand_dims', 'expm1', 'eye', 'fast', 'finfo', 'flatten', 'float16', 'float32', 'float64', 'floating', 'floor', 'floor_divide', 'from_dlpack', 'full', 'full_like', 'gather', 'generic', 'get_active_memory', 'get_cache_memory', 'get_memory_limit', 'get_peak_memory', 'gpu', 'grad', 'greater', 'greater_equal', 'identity', 'iinfo', 'imag', 'inexact', 'inner', 'int16', 'int32', 'int64', 'int8', 'integer', 'is_available', 'isclose', 'isfinite', 'isinf', 'isnan', 'isneginf', 'isposinf', 'issubdtype', 'jvp', 'kernel_toolchain', 'left_shift', 'less', 'less_equal', 'linspace', 'log', 'log10', 'log1p', 'log2', 'logaddexp', 'logical_and', 'logical_not', 'logical_or', 'logsumexp', 'matmul', 'max', 'maximum', 'mean', 'min', 'minimum', 'moveaxis', 'multiply', 'negative', 'new_stream', 'not_equal', 'number', 'ones', 'ones_like', 'outer', 'pad', 'power', 'prod', 'promote_types', 'put_along_axis', 'random', 'real', 'reciprocal', 'remainder', 'repeat', 'reset_peak_memory', 'reshape', 'right_shift', 'round', 'rsqrt', 'scatter', 'scatter_add', 'scatter_max', 'scatter_min', 'scatter_prod', 'set_cache_limit', 'set_default_device', 'set_default_stream', 'set_memory_limit', 'sigmoid', 'sign', 'signedinteger', 'sin', 'sinh', 'slice', 'slice_update', 'softmax', 'sort', 'split', 'sqrt', 'square', 'squeeze', 'stack', 'std', 'stop_gradient', 'stream', 'subtract', 'sum', 'swapaxes', 'synchronize', 'take', 'take_along_axis', 'tan', 'tanh', 'tile', 'transpose', 'tril', 'triu', 'uint16', 'uint32', 'uint64', 'uint8', 'unsignedinteger', 'value_and_grad', 'var', 'vjp', 'vmap', 'where', 'zeros', 'zeros_like']
class Dtype:
    """
    An element type: ``bool_``, ``uint8`` ... ``uint64``, ``int8`` ... ``int64``,
    ``float16``, ``bfloat16``, ``float32``, ``float64`` or ``complex64``.

    Use the module attributes (``kiln.core.float32``); dtypes are not constructed directly.
    ``size`` is the number of bytes per element.
    """
    def __eq__(self, arg0: typing.Any) -> bool:
        ...
    def __hash__(self) -> int:
        ...
    def __ne__(self, arg0: typing.Any) -> bool:
        ...
    def __reduce__(self) -> str:
        ...
    def __repr__(self) -> str:
        ...
    def __str__(self) -> str:
        ...
    @property
    def size(self) -> int:
        """
        Bytes per element.
        """
class DtypeCategory(enum.Enum):
    """
    Abstract groups of dtypes for :func:`issubdtype`, as in NumPy:
    ``generic`` > ``number`` > (``integer`` > ``signedinteger``, ``unsignedinteger``),
    (``inexact`` > ``floating``, ``complexfloating``).
    """
    complexfloating: typing.ClassVar[DtypeCategory]
    floating: typing.ClassVar[DtypeCategory]
    generic: typing.ClassVar[DtypeCategory]
    inexact: typing.ClassVar[DtypeCategory]
    integer: typing.ClassVar[DtypeCategory]
    number: typing.ClassVar[DtypeCategory]
    signedinteger: typing.ClassVar[DtypeCategory]
    unsignedinteger: typing.ClassVar[DtypeCategory]
    @classmethod
    def __new__(cls, value):
        ...
class finfo:
    """
    Machine limits of a floating-point (or complex) dtype: ``min``, ``max`` (finite
    extremes), ``eps`` (the gap between 1 and the next value) and ``tiny`` (the smallest
    positive normal value), as Python floats. ValueError for other dtypes.
    """
    def __init__(self, dtype: Dtype) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def dtype(self) -> Dtype:
        ...
    @property
    def eps(self) -> float:
        ...
    @property
    def max(self) -> float:
        ...
    @property
    def min(self) -> float:
        ...
    @property
    def tiny(self) -> float:
        ...
class iinfo:
    """
    Limits of an integer dtype: ``min`` and ``max`` as Python ints. ValueError for other
    dtypes.
    """
    def __init__(self, dtype: Dtype) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def dtype(self) -> Dtype:
        ...
    @property
    def max(self) -> int:
        ...
    @property
    def min(self) -> int:
        ...
class DeviceType(enum.Enum):
    """
    The kind of a device: ``cpu`` or ``gpu``.
    """
    cpu: typing.ClassVar[DeviceType]
    gpu: typing.ClassVar[DeviceType]
    @classmethod
    def __new__(cls, value):
        ...
class Device:
    """
    A device: its type (``kiln.core.cpu`` or ``kiln.core.gpu``) and index. Wherever a
    Device is expected, a DeviceType may be given (``kiln.core.gpu`` means GPU 0).
    """
    def __eq__(self, arg0: typing.Any) -> bool:
        ...
    def __hash__(self) -> int:
        ...
    def __init__(self, type: DeviceType, index: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def index(self) -> int:
        ...
    @property
    def type(self) -> DeviceType:
        ...
class Stream:
    """
    An ordered queue of work on one device. Work on different streams may overlap; kiln
    inserts the waits a graph needs across streams. Create one with :func:`new_stream`.
    """
    def __eq__(self, arg0: typing.Any) -> bool:
        ...
    def __hash__(self) -> int:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def device(self) -> Device:
        ...
    @property
    def index(self) -> int:
        ...
class StreamContext:
    """
    The context manager returned by :func:`stream`.
    """
    def __enter__(self) -> None:
        ...
    def __exit__(self, *args) -> None:
        ...
    def __init__(self, s: None | Stream | Device) -> None:
        ...
class array:
    """
    An N-dimensional array: a lazy handle whose values are computed when needed (printing,
    ``item()``, ``tolist()``, NumPy conversion, :func:`eval`).

    Args:
        val: A Python scalar, a (nested) list or tuple of scalars and arrays, a NumPy array
            or scalar, another kiln array, or an object NumPy can convert (``__array__``,
            the buffer protocol). The data is copied.
        dtype (Dtype, optional): The element type. Without it: ``bool_`` for bools,
            ``int32`` for ints (``int64`` if a value needs it), ``float32`` for floats,
            ``complex64`` for complex numbers; NumPy arrays keep their dtype (complex128
            becomes complex64, and bfloat16 needs ``ml_dtypes``).

    Raises:
        TypeError: An unsupported Python type or NumPy dtype.
        ValueError: A ragged nested list.
        OverflowError: An integer outside the range of the dtype.
    """
    __array_priority__: typing.ClassVar[int] = 100
    def __abs__(self) -> array:
        ...
    def __add__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __and__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __array__(self, dtype: typing.Any = None, copy: typing.Any = None) -> typing.Any:
        """
        A read-only NumPy view of the data (no copy; a GPU array is copied to the host once).
        """
    def __bool__(self) -> bool:
        ...
    def __complex__(self) -> typing.Any:
        ...
    def __copy__(self) -> array:
        ...
    def __deepcopy__(self, memo: typing.Any) -> array:
        ...
    def __divmod__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __dlpack__(self, *, stream: typing.Any = None, max_version: typing.Any = None, dl_device: typing.Any = None, copy: typing.Any = None) -> typing.Any:
        """
        A DLPack capsule sharing the array's memory (read-only), for ``from_dlpack`` of NumPy,
        PyTorch, JAX or CuPy. The array is evaluated first, so the data is complete for any
        consumer stream.
        """
    def __dlpack_device__(self) -> tuple:
        """
        ``(device_type, device_id)`` of the data: ``(2, i)`` (CUDA) for data on GPU ``i``, else
        ``(1, 0)`` (CPU).
        """
    def __eq__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __float__(self) -> float:
        ...
    def __floordiv__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __format__(self, arg0: str) -> typing.Any:
        ...
    def __ge__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __getitem__(self, arg0: typing.Any) -> array:
        ...
    def __getstate__(self) -> tuple[bytes, typing.Any, str]:
        ...
    def __gt__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __hash__(self) -> int:
        ...
    def __iadd__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __iand__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __ifloordiv__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __ilshift__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __imatmul__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __imod__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __imul__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __index__(self) -> typing.Any:
        ...
    def __init__(self, val: typing.Any, dtype: Dtype | None = None) -> None:
        ...
    def __int__(self) -> int:
        ...
    def __invert__(self) -> array:
        ...
    def __ior__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __ipow__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __irshift__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __isub__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __iter__(self) -> _ArrayIterator:
        ...
    def __itruediv__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __ixor__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __le__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __len__(self) -> int:
        ...
    def __lshift__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __lt__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __matmul__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __mod__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __mul__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __ne__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __neg__(self) -> array:
        ...
    def __or__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __pos__(self) -> array:
        ...
    def __pow__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __radd__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rand__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rdivmod__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __repr__(self) -> str:
        ...
    def __rfloordiv__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rlshift__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rmatmul__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rmod__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rmul__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __ror__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __round__(self, ndigits: typing.SupportsInt | typing.SupportsIndex | None = None) -> array:
        ...
    def __rpow__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rrshift__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rshift__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rsub__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rtruediv__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __rxor__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __setitem__(self, arg0: typing.Any, arg1: typing.Any) -> None:
        ...
    def __setstate__(self, arg0: tuple) -> None:
        ...
    def __str__(self) -> str:
        ...
    def __sub__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __truediv__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __xor__(self, arg0: typing.Any) -> typing.Any:
        ...
    def abs(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`abs`.
        """
    def all(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`all`.
        """
    def any(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`any`.
        """
    def argmax(self, axis: typing.SupportsInt | typing.SupportsIndex | None = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`argmax`.
        """
    def argmin(self, axis: typing.SupportsInt | typing.SupportsIndex | None = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`argmin`.
        """
    def astype(self, dtype: Dtype, *, stream: None | Stream | Device = None) -> array:
        """
        The array converted to ``dtype`` (NumPy casting: float to int truncates, x to bool is
        ``x != 0``, complex to real keeps the real part).
        """
    def conj(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`conjugate`.
        """
    def cos(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`cos`.
        """
    def cumprod(self, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
        """
        See :func:`cumprod`.
        """
    def cumsum(self, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
        """
        See :func:`cumsum`.
        """
    def exp(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`exp`.
        """
    def flatten(self, start_axis: typing.SupportsInt | typing.SupportsIndex = 0, end_axis: typing.SupportsInt | typing.SupportsIndex = -1, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`flatten`.
        """
    def item(self) -> typing.Any:
        """
        The single element as a Python scalar (bool, int, float or complex). Evaluates the array.
        ValueError unless the array has exactly one element.
        """
    def log(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`log`.
        """
    def log10(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`log10`.
        """
    def log1p(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`log1p`.
        """
    def log2(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`log2`.
        """
    def logsumexp(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`logsumexp`.
        """
    def max(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`max`.
        """
    def mean(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`mean`.
        """
    def min(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`min`.
        """
    def moveaxis(self, source: typing.SupportsInt | typing.SupportsIndex, destination: typing.SupportsInt | typing.SupportsIndex, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`moveaxis`.
        """
    def prod(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`prod`.
        """
    def reciprocal(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`reciprocal`.
        """
    def reshape(self, *args, stream: None | Stream | Device = None) -> array:
        """
        Same data with a new shape: ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``. See :func:`reshape`.
        """
    def round(self, decimals: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`round`.
        """
    def rsqrt(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`rsqrt`.
        """
    def sin(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`sin`.
        """
    def split(self, indices_or_sections: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], axis: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> list[array]:
        """
        See :func:`split`.
        """
    def sqrt(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`sqrt`.
        """
    def square(self, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`square`.
        """
    def squeeze(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`squeeze`.
        """
    def std(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, ddof: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`std`.
        """
    def sum(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`sum`.
        """
    def swapaxes(self, axis1: typing.SupportsInt | typing.SupportsIndex, axis2: typing.SupportsInt | typing.SupportsIndex, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`swapaxes`.
        """
    def tolist(self) -> typing.Any:
        """
        The elements as nested Python lists of Python scalars (a scalar for a 0-d array).
        Evaluates the array.
        """
    def transpose(self, *args, stream: None | Stream | Device = None) -> array:
        """
        The axes permuted: ``x.transpose(1, 0, 2)``; reversed without arguments. See :func:`transpose`.
        """
    def var(self, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, ddof: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`var`.
        """
    @property
    def T(self) -> array:
        """
        The array with its axes reversed (see :func:`transpose`).
        """
    @property
    def at(self) -> _ArrayAt:
        """
        Functional updates at an index: ``x.at[idx].add(y)`` returns ``x`` with ``y`` added at
        ``idx`` (also ``subtract``, ``multiply``, ``divide``, ``maximum``, ``minimum``). Unlike
        ``x[idx] += y``, an index that repeats applies once per occurrence.

        Example:
            >>> x = kiln.core.zeros(3)
            >>> x.at[kiln.core.array([0, 0, 2])].add(1.0)
            array([2, 0, 1], dtype=float32)
        """
    @property
    def dtype(self) -> Dtype:
        """
        The element type.
        """
    @property
    def imag(self) -> array:
        """
        The imaginary part.
        """
    @property
    def itemsize(self) -> int:
        """
        Bytes per element.
        """
    @property
    def nbytes(self) -> int:
        """
        Bytes of all elements (size * itemsize).
        """
    @property
    def ndim(self) -> int:
        """
        The number of dimensions.
        """
    @property
    def real(self) -> array:
        """
        The real part.
        """
    @property
    def shape(self) -> tuple:
        """
        The size of each dimension, as a tuple.
        """
    @property
    def size(self) -> int:
        """
        The number of elements.
        """
class _ArrayIterator:
    def __iter__(self) -> typing.Any:
        ...
    def __next__(self) -> array:
        ...
class _ArrayAtIndex:
    def add(self, value: typing.Any) -> array:
        """
        ``x`` with ``value`` added at the index (repeated indices add repeatedly).
        """
    def divide(self, value: typing.Any) -> array:
        """
        ``x`` with the elements at the index divided by ``value``.
        """
    def maximum(self, value: typing.Any) -> array:
        """
        ``x`` with the elements at the index replaced by their maximum with ``value``.
        """
    def minimum(self, value: typing.Any) -> array:
        """
        ``x`` with the elements at the index replaced by their minimum with ``value``.
        """
    def multiply(self, value: typing.Any) -> array:
        """
        ``x`` with the elements at the index multiplied by ``value``.
        """
    def subtract(self, value: typing.Any) -> array:
        """
        ``x`` with ``value`` subtracted at the index.
        """
class _ArrayAt:
    def __getitem__(self, arg0: typing.Any) -> _ArrayAtIndex:
        ...
class custom_function:
    """
    A function with user-defined transformations, used as a decorator. The function
    computes as written; :func:`vjp`, :func:`grad`, :func:`jvp` and :func:`vmap` of it call
    the rules attached with ``.vjp``, ``.jvp`` and ``.vmap`` (when given) instead of
    transforming its operations.

    Example:
        >>> @custom_function
        ... def f(x, y):
        ...     return sin(x) * y
        >>> @f.vjp
        ... def f_vjp(primals, cotangent, output):
        ...     x, y = primals
        ...     return cotangent * cos(x) * y, cotangent * sin(x)
        >>> @f.jvp
        ... def f_jvp(primals, tangents):
        ...     x, y = primals
        ...     dx, dy = tangents
        ...     return dx * cos(x) * y + dy * sin(x)
        >>> @f.vmap
        ... def f_vmap(inputs, axes):
        ...     x, y = inputs
        ...     ax, ay = axes
        ...     if ay != ax and ax is not None:
        ...         y = y.swapaxes(ay, ax)
        ...     return sin(x) * y, (ax if ax is not None else ay)

    The vjp rule receives ``(primals, cotangents, outputs)`` with cotangents and outputs in
    the structure of the function's output, and returns one gradient per positional
    argument (a single value for a single argument; None means zeros). The jvp rule
    receives ``(primals, tangents)`` and returns the output tangents. The vmap rule receives
    ``(inputs, axes)`` (None for unmapped inputs) and returns ``(outputs, out_axes)``.
    Keyword arguments are passed through and not differentiated.
    """
    def __call__(self, *args, **kwargs) -> typing.Any:
        ...
    def __init__(self, f: collections.abc.Callable) -> None:
        ...
    def jvp(self, f_jvp: collections.abc.Callable) -> typing.Any:
        """
        Attaches the jvp rule (a decorator); returns this custom_function.
        """
    def vjp(self, f_vjp: collections.abc.Callable) -> typing.Any:
        """
        Attaches the vjp rule (a decorator); returns this custom_function.
        """
    def vmap(self, f_vmap: collections.abc.Callable) -> typing.Any:
        """
        Attaches the vmap rule (a decorator); returns this custom_function.
        """
def abs(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise absolute value.

    The result has the dtype of ``a`` (for complex input, the magnitude).

    Args:
        a (array): Input array.

    Returns:
        array: ``|a|``.
    """
def add(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise addition.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype (see :func:`promote_types`). A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a + b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def addmm(c: array, a: array, b: array, /, alpha: typing.SupportsFloat | typing.SupportsIndex = 1.0, beta: typing.SupportsFloat | typing.SupportsIndex = 1.0, *, stream: None | Stream | Device = None) -> array:
    """
    ``alpha * (a @ b) + beta * c``, with ``c`` broadcast to the product's shape.

    Args:
        c (array): The addend.
        a (array): The left matrix operand (see :func:`matmul`).
        b (array): The right matrix operand.
        alpha (float): Scale of the product.
        beta (float): Scale of ``c``.
    """
def all(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    Whether all elements over the given axes are true (nonzero).

    The result is ``bool_``.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default. Negative axes count from the end.
        keepdims (bool): Keep the reduced axes with size 1.

    Returns:
        array: The reduced array.

    Raises:
        ValueError: An axis is out of bounds or repeated.
    """
def allclose(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, rtol: typing.SupportsFloat | typing.SupportsIndex = 1e-05, atol: typing.SupportsFloat | typing.SupportsIndex = 1e-08, *, equal_nan: bool = False, stream: None | Stream | Device = None) -> array:
    """
    Whether all elements of ``a`` and ``b`` are close (see :func:`isclose`).

    Returns:
        array: A 0-d ``bool_`` array.
    """
def any(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    Whether any element over the given axes is true (nonzero).

    The result is ``bool_``.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default. Negative axes count from the end.
        keepdims (bool): Keep the reduced axes with size 1.

    Returns:
        array: The reduced array.

    Raises:
        ValueError: An axis is out of bounds or repeated.
    """
def arange(start: typing.Any, stop: typing.Any = None, step: typing.Any = None, dtype: Dtype | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    Evenly spaced values in ``[start, stop)``: ``arange(stop)`` or ``arange(start, stop, step)``.

    Args:
        start (int or float): The first value (or, alone, the stop; the start is then 0).
        stop (int or float, optional): The end, excluded.
        step (int or float, optional): The spacing; 1 by default.
        dtype (Dtype, optional): int32 when every bound is an int, else float32.

    Returns:
        array: The 1-d array of ``ceil((stop - start) / step)`` values (none if negative).

    Raises:
        ValueError: ``step`` is zero or not finite, or ``dtype`` is ``bool_``.
    """
def arccos(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise inverse cosine.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the inverse cosine of ``a``.
    """
def arccosh(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise inverse hyperbolic cosine.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the inverse hyperbolic cosine of ``a``.
    """
def arcsin(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise inverse sine.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the inverse sine of ``a``.
    """
def arcsinh(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise inverse hyperbolic sine.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the inverse hyperbolic sine of ``a``.
    """
def arctan(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise inverse tangent.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the inverse tangent of ``a``.
    """
def arctan2(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise arc tangent of ``a / b``, using the signs of both for the quadrant.

    The inputs broadcast (NumPy rules). Floating inputs keep their dtype; integer and bool inputs are computed in float32. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: the angle in radians, in [-pi, pi].

    Raises:
        ValueError: The shapes do not broadcast.
    """
def arctanh(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise inverse hyperbolic tangent.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the inverse hyperbolic tangent of ``a``.
    """
def argmax(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex | None = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    Index of the first maximum along ``axis`` (of the flattened array when ``axis`` is None).

    Args:
        a (array): Input array.
        axis (int, optional): The axis.
        keepdims (bool): Keep the reduced axis with size 1.

    Returns:
        array: ``uint32`` indices.

    Raises:
        ValueError: The axis is out of bounds, or it is empty.
    """
def argmin(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex | None = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    Index of the first minimum along ``axis`` (of the flattened array when ``axis`` is None).

    Args:
        a (array): Input array.
        axis (int, optional): The axis.
        keepdims (bool): Keep the reduced axis with size 1.

    Returns:
        array: ``uint32`` indices.

    Raises:
        ValueError: The axis is out of bounds, or it is empty.
    """
def argsort(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex | None = -1, *, stream: None | Stream | Device = None) -> array:
    """
    The ``uint32`` indices that sort ``a`` along ``axis`` (of the flattened array when None);
    stable.

    Args:
        a (array): Input array (not complex).
        axis (int, optional): The axis; -1 by default.

    Returns:
        array: ``uint32`` indices, of the shape of ``a`` (or ``(a.size,)``).
    """
def array_equal(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, equal_nan: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    Whether ``a`` and ``b`` have the same shape and equal values (dtypes may differ).

    Args:
        a (array or scalar): Input.
        b (array or scalar): Input.
        equal_nan (bool): Whether NaNs compare equal.

    Returns:
        array: A 0-d ``bool_`` array (false for different shapes).
    """
def as_strided(a: array, /, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, strides: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, offset: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
    """
    A view of ``a``'s buffer (in row-major order) with the given shape, strides and offset,
    in elements. Unchecked beyond non-negative shapes: like NumPy's ``as_strided``, the
    caller keeps the view inside the buffer.

    Args:
        a (array): Input array.
        shape (Sequence[int], optional): The view's shape; ``a.shape`` by default.
        strides (Sequence[int], optional): Strides in elements; row-major for ``shape`` by
            default.
        offset (int): Offset of the first element, in elements.
    """
def astype(a: array, /, dtype: Dtype, *, stream: None | Stream | Device = None) -> array:
    """
    ``a`` converted to ``dtype`` with NumPy's casting: float to integer truncates, complex to
    real keeps the real part, anything to bool tests against zero.

    Args:
        a (array): Input array.
        dtype (Dtype): The new element type.

    Returns:
        array: The converted array (``a`` itself when it already has ``dtype``).
    """
def async_eval(*args) -> None:
    """
    async_eval(*args)

    Starts evaluating the arrays in ``args`` (arrays or trees of arrays) and returns at
    once. Reading a value (``item``, ``tolist``, NumPy conversion), :func:`eval` or
    :func:`synchronize` waits for it.
    """
def bitwise_and(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise bitwise and.

    The inputs broadcast (NumPy rules). The inputs must be integer or bool arrays; they are promoted to a common dtype. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a & b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def bitwise_invert(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise bitwise not of integer or bool arrays.

    The result has the dtype of ``a``; ValueError for floating inputs.

    Args:
        a (array): Input array.

    Returns:
        array: ``~a``.
    """
def bitwise_or(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise bitwise or.

    The inputs broadcast (NumPy rules). The inputs must be integer or bool arrays; they are promoted to a common dtype. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a | b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def bitwise_xor(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise bitwise exclusive or.

    The inputs broadcast (NumPy rules). The inputs must be integer or bool arrays; they are promoted to a common dtype. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a ^ b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def broadcast_arrays(*args, stream: None | Stream | Device = None) -> list[array]:
    """
    broadcast_arrays(*arrays, stream=None)

    The arrays broadcast to their common shape (views).

    Returns:
        list[array]: One array per input.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def broadcast_to(a: array | bool | int | float | complex, /, shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    ``a`` broadcast to ``shape`` with NumPy's rules (a view with zero strides).

    Raises:
        ValueError: ``a`` does not broadcast to ``shape``.
    """
def ceil(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise ceiling.

    The result has the dtype of ``a``.

    Args:
        a (array): Input array.

    Returns:
        array: the smallest integers not less than ``a``.
    """
def checkpoint(fun: collections.abc.Callable) -> collections.abc.Callable:
    """
    Returns ``fun`` with gradient checkpointing: its intermediate arrays are not kept for the
    backward pass but recomputed there from the inputs, trading one more forward
    computation for their memory.
    """
def clear_cache(*, device: Device | None = None) -> None:
    """
    Frees the allocator's cached buffers.
    """
def clip(a: array, /, a_min: typing.Any, a_max: typing.Any, *, stream: None | Stream | Device = None) -> array:
    """
    Limits the values of ``a`` to ``[a_min, a_max]``.

    Args:
        a (array): Input array.
        a_min (array, scalar or None): Lower bound (broadcast); None for no lower bound.
        a_max (array, scalar or None): Upper bound (broadcast); None for no upper bound.

    Returns:
        array: The clipped values.

    Raises:
        ValueError: Both bounds are None, or the shapes do not broadcast.
    """
def concatenate(arrays: collections.abc.Sequence[array], axis: typing.SupportsInt | typing.SupportsIndex | None = 0, *, stream: None | Stream | Device = None) -> array:
    """
    Joins arrays along an existing axis; dtypes promote.

    Args:
        arrays (list[array]): The arrays; their shapes must agree except along ``axis``.
        axis (int, optional): The axis; None flattens the arrays first.

    Returns:
        array: The joined array.

    Raises:
        ValueError: No arrays, or the shapes do not agree.
    """
def conjugate(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise complex conjugate.

    The result has the dtype of ``a`` (real inputs are returned unchanged).

    Args:
        a (array): Input array.

    Returns:
        array: the conjugate of ``a``.
    """
def contiguous(a: array, /, allow_col_major: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    ``a`` in row-major (C) order, copied only if it is not already; with
    ``allow_col_major``, column-major arrays are kept as they are too.

    Args:
        a (array): Input array.
        allow_col_major (bool): Accept column-major (Fortran) order too.

    Returns:
        array: ``a``'s values in a contiguous buffer.
    """
def copy(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    A copy of ``a`` with its own buffer.

    Args:
        a (array): Input array.

    Returns:
        array: An array of ``a``'s shape, dtype and values, in row-major order.
    """
def cos(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise cosine.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the cosine of ``a`` (radians).
    """
def cosh(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise hyperbolic cosine.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the hyperbolic cosine of ``a``.
    """
def cumprod(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
    """
    Cumulative product along ``axis`` (of the flattened array when ``axis`` is None).

    Args:
        a (array): Input array.
        axis (int, optional): The axis.
        reverse (bool): Scan from the end.
        inclusive (bool): Include each element in its own result (else the first result is
            the identity).

    Returns:
        array: An array of the scanned shape.
    """
def cumsum(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
    """
    Cumulative sum along ``axis`` (of the flattened array when ``axis`` is None).

    Args:
        a (array): Input array.
        axis (int, optional): The axis.
        reverse (bool): Scan from the end.
        inclusive (bool): Include each element in its own result (else the first result is
            the identity).

    Returns:
        array: An array of the scanned shape.
    """
def default_device() -> Device:
    """
    The device ops run on when none is given: the GPU when one is usable, else the CPU.
    The environment variable ``KILN_DEVICE=cpu|gpu`` overrides the initial choice.
    """
def default_stream(device: Device) -> Stream:
    """
    The default stream of ``device``. ValueError if the device is not available.
    """
def device_info(device: Device | None = None) -> dict:
    """
    A dict describing ``device`` (default: the default device). For a GPU: ``device_name``,
    ``memory_size`` (bytes), ``compute_capability`` ("9.0"), ``architecture`` (what NVRTC
    compiles for, "sm_90") and ``sm_count``; for the CPU: ``device_name`` and ``threads``.
    ValueError for a GPU that is not available.
    """
def divide(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise true division.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype; integer and bool inputs give float32. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a / b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def equal(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise equality.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype; the result is ``bool_``. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a == b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def erf(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise Gauss error function.

    Floating inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: ``erf(a)``.
    """
def erfinv(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise inverse of the Gauss error function.

    Floating inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: ``erfinv(a)``.
    """
def eval(*args) -> None:
    """
    eval(*args)

    Evaluates the arrays in ``args`` and blocks until their values are ready.

    Each argument is an array or a tree of arrays (nested lists, tuples and dicts); leaves
    that are not arrays are ignored. An error raised while computing any of them is raised
    here (other arrays stay usable).
    """
def exp(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise exponential.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the exponential of ``a``.
    """
def expand_dims(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    Inserts size-1 axes at the given positions of the result.

    Args:
        a (array): Input array.
        axis (int or Sequence[int]): Positions of the new axes in the result.

    Returns:
        array: The array with ``a.ndim + len(axis)`` dimensions.
    """
def expm1(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise ``exp(a) - 1``, accurate for small ``a``.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: ``exp(a) - 1``.
    """
def eye(n: typing.SupportsInt | typing.SupportsIndex, m: typing.SupportsInt | typing.SupportsIndex | None = None, k: typing.SupportsInt | typing.SupportsIndex = 0, dtype: Dtype = ..., *, stream: None | Stream | Device = None) -> array:
    """
    An ``n x m`` matrix with ones on the ``k``-th diagonal and zeros elsewhere.

    Args:
        n (int): Rows.
        m (int, optional): Columns; ``n`` by default.
        k (int): The diagonal: 0 is the main one, positive above it, negative below.
        dtype (Dtype): The element type (float32).

    Returns:
        array: The matrix.

    Raises:
        ValueError: A negative size.
    """
def flatten(a: array, /, start_axis: typing.SupportsInt | typing.SupportsIndex = 0, end_axis: typing.SupportsInt | typing.SupportsIndex = -1, *, stream: None | Stream | Device = None) -> array:
    """
    Merges the axes ``start_axis`` to ``end_axis`` (inclusive) into one.

    Args:
        a (array): Input array.
        start_axis (int): The first axis to merge.
        end_axis (int): The last axis to merge.

    Returns:
        array: The flattened array (1-d with the defaults; a 0-d input gives shape (1,)).
    """
def floor(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise floor.

    The result has the dtype of ``a``.

    Args:
        a (array): Input array.

    Returns:
        array: the largest integers not greater than ``a``.
    """
def floor_divide(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise floor division (Python's ``//``).

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype (see :func:`promote_types`). A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``floor(a / b)``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def from_dlpack(x: typing.Any, /, *, copy: bool | None = None) -> array:
    """
    An array sharing the memory of a DLPack tensor (zero-copy).

    ``x`` is any object with ``__dlpack__`` and ``__dlpack_device__`` (NumPy arrays,
    PyTorch, JAX and CuPy tensors, kiln arrays) or a DLPack capsule. The producer's memory
    stays alive as long as the kiln array (or anything computed lazily from it) needs it;
    kiln never writes to it. Views with arbitrary strides are shared; overlapping views
    (e.g. broadcasts) are copied.

    Args:
        x: The tensor to import.
        copy (bool, optional): If ``True``, the result gets its own buffer.

    Returns:
        array: An array with ``x``'s shape, dtype and values.

    Raises:
        TypeError: ``x`` does not support DLPack, or its dtype has no kiln counterpart.
        BufferError: ``x`` lives on a device kiln cannot read.
    """
def full(shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], vals: array | bool | int | float | complex, dtype: Dtype | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    An array of ``shape`` filled with ``vals``.

    Args:
        shape (int or Sequence[int]): The shape.
        vals (array or scalar): The fill value(s), broadcast to ``shape``.
        dtype (Dtype, optional): The element type; that of ``vals`` by default.

    Returns:
        array: The filled array.

    Raises:
        ValueError: A negative dimension, or ``vals`` does not broadcast to ``shape``.
    """
def full_like(a: array, /, vals: array | bool | int | float | complex, *, stream: None | Stream | Device = None) -> array:
    """
    An array of ``a``'s shape and dtype filled with ``vals`` (broadcast).

    Args:
        a (array): The model.
        vals (array or scalar): The fill value(s).

    Returns:
        array: The filled array.
    """
def gather(a: array, /, indices: collections.abc.Sequence[array], axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], slice_sizes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    General gather: ``indices[i]`` indexes axis ``axes[i]`` of ``a`` (the index arrays
    broadcast together); ``slice_sizes`` gives the extent taken along every axis of ``a``.

    Returns:
        array: Shape ``broadcast(indices).shape + slice_sizes``.
    """
def get_active_memory(*, device: Device | None = None) -> int:
    """
    Bytes held by live arrays on the device (the default device unless ``device`` is given).
    """
def get_cache_memory(*, device: Device | None = None) -> int:
    """
    Bytes of freed buffers the allocator keeps for reuse.
    """
def get_memory_limit(*, device: Device | None = None) -> int:
    """
    The memory limit in bytes.
    """
def get_peak_memory(*, device: Device | None = None) -> int:
    """
    The largest active memory, in bytes, since the start or the last :func:`reset_peak_memory`.
    """
def grad(fun: collections.abc.Callable, argnums: typing.Any = None, argnames: typing.Any = None) -> collections.abc.Callable:
    """
    Returns a function computing the gradient of ``fun``: calling it with ``fun``'s arguments
    returns the gradients (see ``argnums``).

    Args:
        fun (Callable): A function of arrays and trees of arrays returning a scalar loss
            (an array of one floating element), or a tuple or list whose first element is
            the loss and the rest auxiliary values (not differentiated).
        argnums (int or Sequence[int], optional): The positional arguments to differentiate
            (negative counts from the end). An int gives one gradient, a sequence a tuple of
            them. Defaults to 0 when ``argnames`` is empty.
        argnames (str or Sequence[str], optional): Keyword arguments to differentiate; their
            gradients come as a dict after the positional ones: ``(positional, keywords)``.

    The gradient of an argument has the argument's structure (a tree of arrays of the same
    shapes and dtypes).

    Raises:
        ValueError: An argnum out of range or repeated, a differentiated argument holding
            something other than arrays, a missing keyword argument, or a loss that is not
            a floating scalar.
    """
def greater(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise greater than.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype; the result is ``bool_``. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a > b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def greater_equal(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise greater than or equal.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype; the result is ``bool_``. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a >= b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def identity(n: typing.SupportsInt | typing.SupportsIndex, dtype: Dtype = ..., *, stream: None | Stream | Device = None) -> array:
    """
    The ``n x n`` identity matrix.

    Args:
        n (int): The size.
        dtype (Dtype): The element type (float32).

    Returns:
        array: The matrix.
    """
def imag(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise imaginary part.

    complex64 gives float32; real inputs give zeros.

    Args:
        a (array): Input array.

    Returns:
        array: the imaginary part of ``a``.
    """
def inner(a: array, b: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Sum of products over the last axes of ``a`` and ``b`` (the dot product of vectors).

    Args:
        a (array): ``(..., K)``.
        b (array): ``(..., K)``.

    Returns:
        array: ``a.shape[:-1] + b.shape[:-1]``.

    Raises:
        ValueError: The last dimensions differ.
    """
def is_available(device: Device) -> bool:
    """
    Whether ops can run on ``device``: always for the CPU, for the GPU when a CUDA driver
    and device are present.
    """
def isclose(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, rtol: typing.SupportsFloat | typing.SupportsIndex = 1e-05, atol: typing.SupportsFloat | typing.SupportsIndex = 1e-08, *, equal_nan: bool = False, stream: None | Stream | Device = None) -> array:
    """
    Element-wise ``|a - b| <= atol + rtol * |b|`` (NumPy's isclose).

    Args:
        a (array or scalar): Input.
        b (array or scalar): Input (the reference: its magnitude scales ``rtol``).
        rtol (float): Relative tolerance.
        atol (float): Absolute tolerance.
        equal_nan (bool): Whether NaNs compare equal.

    Returns:
        array: ``bool_`` array of the broadcast shape.
    """
def isfinite(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise test for finite values (not NaN or infinite).

    The result is ``bool_``.

    Args:
        a (array): Input array.

    Returns:
        array: whether each element is finite.
    """
def isinf(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise test for positive or negative infinity.

    The result is ``bool_``.

    Args:
        a (array): Input array.

    Returns:
        array: whether each element is infinite.
    """
def isnan(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise test for NaN.

    The result is ``bool_``.

    Args:
        a (array): Input array.

    Returns:
        array: whether each element is NaN.
    """
def isneginf(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise test for negative infinity.

    The result is ``bool_``.

    Args:
        a (array): Input array.

    Returns:
        array: whether each element is -inf.
    """
def isposinf(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise test for positive infinity.

    The result is ``bool_``.

    Args:
        a (array): Input array.

    Returns:
        array: whether each element is +inf.
    """
@typing.overload
def issubdtype(arg1: Dtype, arg2: Dtype) -> bool:
    """
    Whether ``arg1`` is a subtype of ``arg2`` in NumPy's dtype hierarchy.

    Each argument is a :class:`Dtype` or a :class:`DtypeCategory`. A dtype is a subtype only
    of itself and of the categories above it (``float16`` is ``floating``, ``inexact``,
    ``number`` and ``generic``); ``bool_`` is only ``generic``.

    Example:
        >>> issubdtype(float16, floating)
        True
        >>> issubdtype(int32, unsignedinteger)
        False
    """
@typing.overload
def issubdtype(arg1: Dtype, arg2: DtypeCategory) -> bool:
    ...
@typing.overload
def issubdtype(arg1: DtypeCategory, arg2: Dtype) -> bool:
    ...
@typing.overload
def issubdtype(arg1: DtypeCategory, arg2: DtypeCategory) -> bool:
    ...
def jvp(fun: collections.abc.Callable, primals: typing.Any, tangents: typing.Any) -> tuple[list, list]:
    """
    The Jacobian-vector product (forward mode).

    Args:
        fun (Callable): A function of the primals returning an array or a tree of arrays.
        primals (list): The arguments of ``fun`` (arrays or trees of arrays).
        tangents (list): One array per primal array, of its shape and dtype.

    Returns:
        tuple(list, list): ``fun``'s outputs, and one Jacobian-vector product per output.

    Raises:
        ValueError: Wrong number, shapes or dtypes of tangents.
    """
def kernel_toolchain() -> dict:
    """
    What compiles custom kernels, as a dict: ``nvrtc_version`` ("12.8"; None in a build
    without CUDA), ``host_compiler`` (the C++ compiler of CPU kernels with its version line;
    None and ``host_compiler_error`` when there is none), and ``cache_dir``, the on-disk
    kernel cache ("" when it is off: KILN_CACHE=0).
    """
def left_shift(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise left shift.

    The inputs broadcast (NumPy rules). The inputs must be integer or bool arrays; they are promoted to a common dtype. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a << b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def less(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise less than.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype; the result is ``bool_``. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a < b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def less_equal(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise less than or equal.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype; the result is ``bool_``. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a <= b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def linspace(start: typing.SupportsFloat | typing.SupportsIndex, stop: typing.SupportsFloat | typing.SupportsIndex, num: typing.SupportsInt | typing.SupportsIndex = 50, dtype: Dtype = ..., *, stream: None | Stream | Device = None) -> array:
    """
    ``num`` evenly spaced values over ``[start, stop]`` (both included).

    Args:
        start (float): The first value.
        stop (float): The last value.
        num (int): How many values.
        dtype (Dtype): The element type (float32).

    Returns:
        array: A 1-d array of ``num`` values.

    Raises:
        ValueError: ``num`` is negative.
    """
def log(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise natural logarithm.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the natural logarithm of ``a``.
    """
def log10(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise base-10 logarithm.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the base-10 logarithm of ``a``.
    """
def log1p(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise ``log(1 + a)``, accurate for small ``a``.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: ``log(1 + a)``.
    """
def log2(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise base-2 logarithm.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the base-2 logarithm of ``a``.
    """
def logaddexp(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise ``log(exp(a) + exp(b))``, computed without overflow.

    The inputs broadcast (NumPy rules). Floating inputs keep their dtype; integer and bool inputs are computed in float32. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``log(exp(a) + exp(b))``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def logical_and(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise logical and.

    The inputs broadcast (NumPy rules). The inputs are tested against zero; the result is ``bool_``. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a and b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def logical_not(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise logical not.

    The result is ``bool_``.

    Args:
        a (array): Input array.

    Returns:
        array: ``not a``.
    """
def logical_or(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise logical or.

    The inputs broadcast (NumPy rules). The inputs are tested against zero; the result is ``bool_``. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a or b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def logsumexp(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    ``log(sum(exp(a)))`` over the given axes, computed stably (the maximum is subtracted first).

    Floating inputs keep their dtype; integer and bool inputs give float32.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default. Negative axes count from the end.
        keepdims (bool): Keep the reduced axes with size 1.

    Returns:
        array: The reduced array.

    Raises:
        ValueError: An axis is out of bounds or repeated.
    """
def matmul(a: array, b: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Matrix product with NumPy's semantics (the ``@`` operator).

    1-d operands are promoted to matrices (a row for ``a``, a column for ``b``) and the added
    axis is removed; leading (batch) axes broadcast. float16 and bfloat16 accumulate in
    float32.

    Args:
        a (array): ``(..., M, K)`` or ``(K,)``.
        b (array): ``(..., K, N)`` or ``(K,)``.

    Returns:
        array: ``(..., M, N)``, in the promoted dtype.

    Raises:
        ValueError: The inner dimensions differ, the batch shapes do not broadcast, an
            operand is 0-d, or the dtype is an integer type.
    """
def max(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    Maximum over the given axes.

    The result has the dtype of ``a``. ValueError for an empty reduction.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default. Negative axes count from the end.
        keepdims (bool): Keep the reduced axes with size 1.

    Returns:
        array: The reduced array.

    Raises:
        ValueError: An axis is out of bounds or repeated.
    """
def maximum(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise maximum (NaN propagates).

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype (see :func:`promote_types`). A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: the larger of ``a`` and ``b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def mean(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    Mean over the given axes.

    Floating inputs keep their dtype; integer and bool inputs give float32.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default. Negative axes count from the end.
        keepdims (bool): Keep the reduced axes with size 1.

    Returns:
        array: The reduced array.

    Raises:
        ValueError: An axis is out of bounds or repeated.
    """
def min(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    Minimum over the given axes.

    The result has the dtype of ``a``. ValueError for an empty reduction.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default. Negative axes count from the end.
        keepdims (bool): Keep the reduced axes with size 1.

    Returns:
        array: The reduced array.

    Raises:
        ValueError: An axis is out of bounds or repeated.
    """
def minimum(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise minimum (NaN propagates).

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype (see :func:`promote_types`). A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: the smaller of ``a`` and ``b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def moveaxis(a: array, /, source: typing.SupportsInt | typing.SupportsIndex, destination: typing.SupportsInt | typing.SupportsIndex, *, stream: None | Stream | Device = None) -> array:
    """
    Moves axis ``source`` to position ``destination``, keeping the order of the others (a view).

    Args:
        a (array): Input array.
        source (int): The axis to move (negative counts from the end).
        destination (int): Its position in the result.

    Returns:
        array: The array with the axis moved.

    Raises:
        ValueError: An axis is out of bounds.
    """
def multiply(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise multiplication.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype (see :func:`promote_types`). A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a * b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def negative(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise negation.

    The result has the dtype of ``a``.

    Args:
        a (array): Input array.

    Returns:
        array: ``-a``.
    """
def new_stream(device: Device) -> Stream:
    """
    A new stream on ``device``. ValueError if the device is not available.
    """
def not_equal(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise inequality.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype; the result is ``bool_``. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a != b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def ones(shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dtype: Dtype = ..., *, stream: None | Stream | Device = None) -> array:
    """
    An array of ``shape`` filled with ones.

    Args:
        shape (int or Sequence[int]): The shape.
        dtype (Dtype): The element type (float32).

    Returns:
        array: The filled array.

    Raises:
        ValueError: A negative dimension.
    """
def ones_like(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    An array of ``a``'s shape and dtype filled with ones.

    Args:
        a (array): The model.

    Returns:
        array: The filled array.
    """
def outer(a: array, b: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Outer product of the flattened ``a`` (length M) and ``b`` (length N).

    Args:
        a (array): Any shape, flattened.
        b (array): Any shape, flattened.

    Returns:
        array: ``(M, N)`` with ``out[i, j] = a[i] * b[j]``, in the promoted dtype.
    """
def pad(a: array, /, pad_width: typing.Any, mode: str = 'constant', constant_values: array | bool | int | float | complex = 0, *, stream: None | Stream | Device = None) -> array:
    """
    ``a`` padded with a constant.

    Args:
        a (array): Input array.
        pad_width (int, tuple or list of tuples): ``n``, ``(before, after)`` for every axis,
            or one ``(before, after)`` per axis.
        mode (str): Only ``"constant"``.
        constant_values (array or scalar): The padding value.

    Raises:
        ValueError: Negative or mismatched widths, or another mode.
    """
def power(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise power.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype (see :func:`promote_types`). A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a ** b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def prod(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    Product over the given axes.

    The result has the dtype of ``a``.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default. Negative axes count from the end.
        keepdims (bool): Keep the reduced axes with size 1.

    Returns:
        array: The reduced array.

    Raises:
        ValueError: An axis is out of bounds or repeated.
    """
def promote_types(type1: Dtype, type2: Dtype) -> Dtype:
    """
    The dtype of the result of a binary operation on arrays of ``type1`` and ``type2``
    (MLX's table: NumPy's rules, except that integers with a half type keep the half type,
    uint64 with a signed integer gives float32, and float16 with bfloat16 gives float32).
    """
def put_along_axis(a: array, /, indices: array, values: array | bool | int | float | complex, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    ``a`` with ``values`` written at ``indices`` along ``axis`` (NumPy's put_along_axis);
    with ``axis=None``, on the flattened array.

    Args:
        a (array): Input array.
        indices (array): Integer indices, with ``a.ndim`` dimensions.
        values (array or scalar): Values broadcast to ``indices``'s shape, cast to ``a``'s dtype.
        axis (int, optional): The axis.

    Returns:
        array: A new array of ``a``'s shape and dtype; ``a`` is unchanged.
    """
def real(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise real part.

    complex64 gives float32; real inputs are returned unchanged.

    Args:
        a (array): Input array.

    Returns:
        array: the real part of ``a``.
    """
def reciprocal(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise reciprocal.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: ``1 / a``.
    """
def remainder(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise remainder of division, with the sign of the divisor (Python's ``%``).

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype (see :func:`promote_types`). A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a % b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def repeat(array: array, /, repeats: typing.SupportsInt | typing.SupportsIndex, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    Each element repeated ``repeats`` times along ``axis`` (of the flattened array when
    ``axis`` is None).

    Args:
        array (array): Input array.
        repeats (int): Repetitions of each element.
        axis (int, optional): The axis.

    Returns:
        array: The repeated array (``axis`` is ``repeats`` times longer).

    Raises:
        ValueError: A negative ``repeats`` or an axis out of bounds.
    """
def reset_peak_memory(*, device: Device | None = None) -> None:
    """
    Resets the peak memory to the current active memory.
    """
def reshape(a: array, /, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    The same elements with a new shape (a view when the layout allows).

    Args:
        a (array): Input array.
        shape (Sequence[int]): The new shape; one dimension may be -1 (inferred).

    Returns:
        array: The reshaped array.

    Raises:
        ValueError: The sizes differ, or more than one dimension is -1.
    """
def right_shift(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise right shift.

    The inputs broadcast (NumPy rules). The inputs must be integer or bool arrays; they are promoted to a common dtype. A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a >> b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def round(a: array, /, decimals: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise rounding to ``decimals`` decimal places, halves to even (NumPy's round).

    Args:
        a (array): Input array.
        decimals (int): Number of decimal places (negative rounds to tens, hundreds, ...).

    Returns:
        array: The rounded values, with the dtype of ``a``.
    """
def rsqrt(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise reciprocal square root.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: ``1 / sqrt(a)``.
    """
def scatter(a: array, /, indices: collections.abc.Sequence[array], updates: array | bool | int | float | complex, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    General scatter, the inverse of :func:`gather`: ``updates`` (shape: the broadcast index shape + one slice shape of ``a.ndim`` dimensions) is written into ``a`` at ``indices`` along ``axes``; with repeated indices, one of the updates is kept (unspecified which).
    """
def scatter_add(a: array, /, indices: collections.abc.Sequence[array], updates: array | bool | int | float | complex, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    General scatter, the inverse of :func:`gather`: ``updates`` (shape: the broadcast index shape + one slice shape of ``a.ndim`` dimensions) is written into ``a`` at ``indices`` along ``axes``; repeated indices add up.
    """
def scatter_max(a: array, /, indices: collections.abc.Sequence[array], updates: array | bool | int | float | complex, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    General scatter, the inverse of :func:`gather`: ``updates`` (shape: the broadcast index shape + one slice shape of ``a.ndim`` dimensions) is written into ``a`` at ``indices`` along ``axes``; repeated indices keep the maximum.
    """
def scatter_min(a: array, /, indices: collections.abc.Sequence[array], updates: array | bool | int | float | complex, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    General scatter, the inverse of :func:`gather`: ``updates`` (shape: the broadcast index shape + one slice shape of ``a.ndim`` dimensions) is written into ``a`` at ``indices`` along ``axes``; repeated indices keep the minimum.
    """
def scatter_prod(a: array, /, indices: collections.abc.Sequence[array], updates: array | bool | int | float | complex, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    General scatter, the inverse of :func:`gather`: ``updates`` (shape: the broadcast index shape + one slice shape of ``a.ndim`` dimensions) is written into ``a`` at ``indices`` along ``axes``; repeated indices multiply.
    """
def set_cache_limit(limit: typing.SupportsInt | typing.SupportsIndex, *, device: Device | None = None) -> int:
    """
    Sets the most bytes the allocator keeps cached (0 disables the cache) and returns the
    previous limit.
    """
def set_default_device(device: Device) -> None:
    """
    Makes ``device`` the default device. ValueError if it is not available.
    """
def set_default_stream(stream: Stream) -> None:
    """
    Makes ``stream`` the default stream of its device.
    """
def set_memory_limit(limit: typing.SupportsInt | typing.SupportsIndex, *, device: Device | None = None) -> int:
    """
    Sets the memory limit in bytes and returns the previous one. An allocation beyond the
    limit first frees the cache, then raises RuntimeError.
    """
def sigmoid(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise logistic sigmoid ``1 / (1 + exp(-a))``.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the sigmoid of ``a``.
    """
def sign(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise sign: -1, 0 or 1 (``a / |a|`` for complex input).

    The result has the dtype of ``a``.

    Args:
        a (array): Input array.

    Returns:
        array: the sign of ``a``.
    """
def sin(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise sine.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the sine of ``a`` (radians).
    """
def sinh(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise hyperbolic sine.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the hyperbolic sine of ``a``.
    """
def slice(a: array, /, start: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], stop: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], strides: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    The slice ``[start:stop:strides]`` along every axis (a view). Unlike MLX's ``slice``,
    which takes dynamic start indices, this is ``a[start[0]:stop[0]:strides[0], ...]``.

    Args:
        a (array): Input array.
        start (Sequence[int]): First index per axis (negative counts from the end).
        stop (Sequence[int]): End index per axis, excluded (clamped as in Python).
        strides (Sequence[int], optional): Step per axis; 1 by default. Negative steps walk
            backwards.

    Returns:
        array: The slice.
    """
def slice_update(a: array, /, update: array | bool | int | float | complex, start: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], stop: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], strides: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    ``a`` with the slice ``[start:stop:strides]`` replaced by ``update`` (broadcast to the
    slice's shape and cast to ``a``'s dtype). See :func:`slice`.

    Args:
        a (array): Input array.
        update (array or scalar): The new values.
        start (Sequence[int]): First index per axis.
        stop (Sequence[int]): End index per axis, excluded.
        strides (Sequence[int], optional): Step per axis; 1 by default.

    Returns:
        array: A new array; ``a`` is unchanged.

    Raises:
        ValueError: ``update`` does not broadcast to the slice.
    """
def softmax(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, *, stream: None | Stream | Device = None) -> array:
    """
    ``exp(a - logsumexp(a))`` over the given axes, computed stably.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to normalize over; all by default
            (as MLX; pass ``axis=-1`` for the last axis).

    Returns:
        array: An array of ``a``'s shape (float32 for integer inputs).
    """
def sort(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex | None = -1, *, stream: None | Stream | Device = None) -> array:
    """
    A sorted copy along ``axis`` (of the flattened array when None); stable.

    Args:
        a (array): Input array (not complex).
        axis (int, optional): The axis; -1 by default.

    Returns:
        array: The sorted values, of ``a``'s dtype.
    """
def split(a: array, /, indices_or_sections: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], axis: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> list[array]:
    """
    Splits ``a`` along ``axis``.

    Args:
        a (array): Input array.
        indices_or_sections (int or Sequence[int]): A number of equal parts, or the indices
            before which to split.
        axis (int): The axis to split.

    Returns:
        list[array]: The parts (views).

    Raises:
        ValueError: The number of parts does not divide the axis.
    """
def sqrt(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise square root.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the square root of ``a``.
    """
def square(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise square.

    The result has the dtype of ``a``.

    Args:
        a (array): Input array.

    Returns:
        array: ``a * a``.
    """
def squeeze(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, *, stream: None | Stream | Device = None) -> array:
    """
    Removes size-1 axes: all of them, or the given ones.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to remove.

    Returns:
        array: The squeezed array.

    Raises:
        ValueError: A given axis is out of bounds or does not have size 1.
    """
def stack(arrays: collections.abc.Sequence[array], axis: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
    """
    Joins arrays of equal shapes along a new axis at position ``axis``; dtypes promote.

    Args:
        arrays (list[array]): The arrays, all of one shape.
        axis (int): Position of the new axis in the result.

    Returns:
        array: Shape ``shape[:axis] + (len(arrays),) + shape[axis:]``.

    Raises:
        ValueError: No arrays, or different shapes.
    """
def std(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, ddof: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
    """
    Standard deviation over the given axes with ``ddof`` delta degrees of freedom: the divisor is
    ``N - ddof`` for ``N`` reduced elements.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default.
        keepdims (bool): Keep the reduced axes with size 1.
        ddof (int): Delta degrees of freedom.

    Returns:
        array: The reduced array (float32 for integer inputs).
    """
def stop_gradient(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    The same values, with no gradient flowing through them.

    The result has the dtype of ``a``.

    Args:
        a (array): Input array.

    Returns:
        array: ``a``, as a constant for the function transformations.
    """
def stream(s: None | Stream | Device) -> StreamContext:
    """
    A context manager that makes ``s`` the default stream (and its device the default
    device) inside a ``with`` block.

    Args:
        s (Stream or Device): The stream, or a device whose default stream to use.

    Example:
        >>> with kiln.core.stream(kiln.core.cpu):
        ...     y = x + 1   # runs on the CPU
    """
def subtract(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise subtraction.

    The inputs broadcast (NumPy rules). The inputs are promoted to a common dtype (see :func:`promote_types`). A Python scalar is weakly typed: it takes the dtype of the array operand when it fits its kind (``x_f16 + 1.0`` is float16; a float with an integer array gives float32).

    Args:
        a (array or scalar): Input array or scalar.
        b (array or scalar): Input array or scalar.

    Returns:
        array: ``a - b``.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def sum(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    Sum over the given axes.

    bool and integers narrower than 32 bits accumulate in int32/uint32 (as MLX); other dtypes keep theirs.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default. Negative axes count from the end.
        keepdims (bool): Keep the reduced axes with size 1.

    Returns:
        array: The reduced array.

    Raises:
        ValueError: An axis is out of bounds or repeated.
    """
def swapaxes(a: array, /, axis1: typing.SupportsInt | typing.SupportsIndex, axis2: typing.SupportsInt | typing.SupportsIndex, *, stream: None | Stream | Device = None) -> array:
    """
    Swaps two axes (a view).

    Args:
        a (array): Input array.
        axis1 (int): First axis (negative counts from the end).
        axis2 (int): Second axis.

    Returns:
        array: The array with the two axes exchanged.

    Raises:
        ValueError: An axis is out of bounds.
    """
def synchronize(stream: Stream | None = None) -> None:
    """
    Blocks until the work submitted to ``stream`` (or, without a stream, to every stream)
    has finished.
    """
def take(a: array, /, indices: typing.SupportsInt | typing.SupportsIndex | array, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    Elements (or slices along ``axis``) at ``indices``; negative indices count from the end.

    Args:
        a (array): Input array.
        indices (int or array): Integer indices.
        axis (int, optional): The axis to index; the flattened array when None.

    Returns:
        array: Shape ``indices.shape`` without an axis, else
        ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``.
    """
def take_along_axis(a: array, /, indices: array, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    NumPy's take_along_axis: ``out[..., i, ...] = a[..., indices[..., i, ...], ...]`` along
    ``axis``; ``indices`` broadcasts against ``a`` on the other axes. With ``axis=None``,
    both are flattened.

    Args:
        a (array): Input array.
        indices (array): Integer indices, with ``a.ndim`` dimensions.
        axis (int, optional): The axis.

    Returns:
        array: The broadcast shape, with ``indices``'s extent along ``axis``.

    Raises:
        ValueError: ``indices`` is not integral, has the wrong number of dimensions, or
            does not broadcast.
    """
def tan(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise tangent.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the tangent of ``a`` (radians).
    """
def tanh(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise hyperbolic tangent.

    Floating and complex inputs keep their dtype; integer and bool inputs are computed in float32.

    Args:
        a (array): Input array.

    Returns:
        array: the hyperbolic tangent of ``a``.
    """
def tile(a: array, /, reps: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    ``a`` repeated ``reps`` times along each axis (NumPy's tile).

    Args:
        a (array): Input array.
        reps (int or Sequence[int]): Repetitions per axis (aligned to the last axes).

    Returns:
        array: An array of ``a``'s dtype, each dimension multiplied by its repetitions.

    Raises:
        ValueError: A negative repetition.
    """
def transpose(a: array, /, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    Permutes the axes (a view).

    Args:
        a (array): Input array.
        axes (Sequence[int], optional): The new order of the axes; reversed by default.

    Returns:
        array: The transposed array.

    Raises:
        ValueError: ``axes`` is not a permutation of ``range(a.ndim)``.
    """
def tril(x: array, k: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
    """
    The lower triangle of the last two axes of ``x``: elements above the ``k``-th diagonal
    become zero.

    Args:
        x (array): Input with at least 2 dimensions.
        k (int): The diagonal (0 main, positive above, negative below).

    Returns:
        array: An array of ``x``'s shape and dtype.

    Raises:
        ValueError: ``x`` has fewer than 2 dimensions.
    """
def triu(x: array, k: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
    """
    The upper triangle of the last two axes of ``x``: elements below the ``k``-th diagonal
    become zero.

    Args:
        x (array): Input with at least 2 dimensions.
        k (int): The diagonal (0 main, positive above, negative below).

    Returns:
        array: An array of ``x``'s shape and dtype.

    Raises:
        ValueError: ``x`` has fewer than 2 dimensions.
    """
def value_and_grad(fun: collections.abc.Callable, argnums: typing.Any = None, argnames: typing.Any = None) -> collections.abc.Callable:
    """
    Returns a function computing ``fun``'s value and its gradient: calling it with ``fun``'s
    arguments returns ``(value, grads)``, where ``value`` is what ``fun`` returns.

    Args:
        fun (Callable): A function of arrays and trees of arrays returning a scalar loss
            (an array of one floating element), or a tuple or list whose first element is
            the loss and the rest auxiliary values (not differentiated).
        argnums (int or Sequence[int], optional): The positional arguments to differentiate
            (negative counts from the end). An int gives one gradient, a sequence a tuple of
            them. Defaults to 0 when ``argnames`` is empty.
        argnames (str or Sequence[str], optional): Keyword arguments to differentiate; their
            gradients come as a dict after the positional ones: ``(positional, keywords)``.

    The gradient of an argument has the argument's structure (a tree of arrays of the same
    shapes and dtypes).

    Raises:
        ValueError: An argnum out of range or repeated, a differentiated argument holding
            something other than arrays, a missing keyword argument, or a loss that is not
            a floating scalar.

    Example:
        >>> loss_and_grad = value_and_grad(lambda w, x: ((x @ w) ** 2).sum())
        >>> loss, dw = loss_and_grad(w, x)
    """
def var(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, ddof: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
    """
    Variance over the given axes with ``ddof`` delta degrees of freedom: the divisor is
    ``N - ddof`` for ``N`` reduced elements.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to reduce; all by default.
        keepdims (bool): Keep the reduced axes with size 1.
        ddof (int): Delta degrees of freedom.

    Returns:
        array: The reduced array (float32 for integer inputs).
    """
def vjp(fun: collections.abc.Callable, primals: typing.Any, cotangents: typing.Any) -> tuple[list, list]:
    """
    The vector-Jacobian product (reverse mode).

    Args:
        fun (Callable): A function of the primals returning an array or a tree of arrays.
        primals (list): The arguments of ``fun`` (arrays or trees of arrays).
        cotangents (list): One array per output array of ``fun``, of its shape and dtype.

    Returns:
        tuple(list, list): ``fun``'s outputs, and one vector-Jacobian product per primal
        (of the primal's structure; zeros where the outputs do not depend on it).

    Raises:
        ValueError: Wrong number, shapes or dtypes of cotangents.
    """
def vmap(fun: collections.abc.Callable, in_axes: typing.Any = 0, out_axes: typing.Any = 0) -> collections.abc.Callable:
    """
    Returns a vectorized version of ``fun``: the result equals stacking ``fun`` applied to
    slices of its inputs, computed by each operation's batched rule instead of a loop.

    Args:
        fun (Callable): A function of arrays and trees of arrays.
        in_axes (int, None or tree): The mapped axis of each input: an int or None (not
            mapped) for all, or a tuple with one entry per positional argument (itself a
            prefix of that argument's tree).
        out_axes (int or tree): Where the mapped axis goes in each output.

    Raises:
        ValueError: No input is mapped, mapped sizes differ, or an axis is out of range.
    """
def where(condition: array | bool | int | float | complex, x: array | bool | int | float | complex, y: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise choice: ``x`` where ``condition`` is true, else ``y``.

    The three inputs broadcast together. ``x`` and ``y`` are promoted to a common dtype
    (Python scalars are weakly typed against the other one); ``condition`` is tested against
    zero.

    Args:
        condition (array or scalar): The selector.
        x (array or scalar): Values where ``condition`` is true.
        y (array or scalar): Values where ``condition`` is false.

    Returns:
        array: The chosen values.

    Raises:
        ValueError: The shapes do not broadcast.
    """
def zeros(shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dtype: Dtype = ..., *, stream: None | Stream | Device = None) -> array:
    """
    An array of ``shape`` filled with zeros.

    Args:
        shape (int or Sequence[int]): The shape.
        dtype (Dtype): The element type (float32).

    Returns:
        array: The filled array.

    Raises:
        ValueError: A negative dimension.
    """
def zeros_like(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    An array of ``a``'s shape and dtype filled with zeros.

    Args:
        a (array): The model.

    Returns:
        array: The filled array.
    """
__version__: str = '0.1.0'
_build_dir: str
bfloat16: Dtype
bool_: Dtype
complex64: Dtype
complexfloating: DtypeCategory
cpu: DeviceType
float16: Dtype
float32: Dtype
float64: Dtype
floating: DtypeCategory
generic: DtypeCategory
gpu: DeviceType
inexact: DtypeCategory
int16: Dtype
int32: Dtype
int64: Dtype
int8: Dtype
integer: DtypeCategory
number: DtypeCategory
signedinteger: DtypeCategory
uint16: Dtype
uint32: Dtype
uint64: Dtype
uint8: Dtype
unsignedinteger: DtypeCategory
conj = conjugate
