"""
kiln's core: arrays, dtypes, operations, transformations, devices and streams.
"""
from __future__ import annotations
import collections.abc
import enum
import typing
import typing_extensions
from . import random
from . import fast
from . import linalg
from . import fft
from . import distributed
__all__: list[str] = ['ArrayAt', 'ArrayIterator', 'Device', 'DeviceType', 'Dtype', 'DtypeCategory', 'Stream', 'StreamContext', 'ThreadLocalStream', 'abs', 'add', 'addmm', 'all', 'allclose', 'any', 'arange', 'arccos', 'arccosh', 'arcsin', 'arcsinh', 'arctan', 'arctan2', 'arctanh', 'argmax', 'argmin', 'argpartition', 'argsort', 'array', 'array_equal', 'as_strided', 'astype', 'async_eval', 'atleast_1d', 'atleast_2d', 'atleast_3d', 'bartlett', 'bfloat16', 'bitwise_and', 'bitwise_invert', 'bitwise_or', 'bitwise_xor', 'blackman', 'block_masked_mm', 'bool_', 'broadcast_arrays', 'broadcast_to', 'ceil', 'checkpoint', 'clear_cache', 'clear_streams', 'clip', 'complex64', 'complexfloating', 'concatenate', 'conj', 'conjugate', 'contiguous', 'conv1d', 'conv2d', 'conv3d', 'conv_general', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d', 'convolve', 'copy', 'cos', 'cosh', 'count_nonzero', 'cpu', 'cummax', 'cummin', 'cumprod', 'cumsum', 'custom_function', 'default_device', 'default_stream', 'degrees', 'depends', 'dequantize', 'device_count', 'device_info', 'diag', 'diagonal', 'diff', 'disable_compile', 'distributed', 'divide', 'divmod', 'einsum', 'einsum_path', 'enable_compile', 'equal', 'erf', 'erfinv', 'eval', 'exp', 'expand_dims', 'expm1', 'export_to_dot', 'eye', 'fast', 'fft', 'finfo', 'flatten', 'flip', 'float16', 'float32', 'float64', 'floating', 'floor', 'floor_divide', 'from_dlpack', 'from_fp8', 'full', 'full_like', 'gather', 'gather_mm', 'gather_qmm', 'gather_qqmm', 'generic', 'get_active_memory', 'get_array_buffer_size', 'get_cache_memory', 'get_memory_limit', 'get_peak_memory', 'gpu', 'grad', 'greater', 'greater_equal', 'hadamard_transform', 'hamming', 'hanning', 'identity', 'iinfo', 'imag', 'inexact', 'inner', 'int16', 'int32', 'int64', 'int8', 'integer', 'is_available', 'isclose', 'isfinite', 'isinf', 'isnan', 'isneginf', 'isposinf', 'issubdtype', 'jvp', 'kernel_toolchain', 'kron', 'left_shift', 'less', 'less_equal', 'linalg', 'linspace', 'load', 'log', 'log10', 'log1p', 'log2', 'logaddexp', 'logcumsumexp', 'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'logsumexp', 'matmul', 'matrix_transpose', 'max', 'maximum', 'mean', 'median', 'meshgrid', 'min', 'minimum', 'minmax', 'moveaxis', 'multiply', 'nan_to_num', 'negative', 'new_stream', 'new_thread_local_stream', 'new_thread_unsafe_stream', 'not_equal', 'number', 'ones', 'ones_like', 'outer', 'pad', 'partition', 'power', 'prod', 'promote_types', 'put_along_axis', 'qqmm', 'quantize', 'quantized_matmul', 'radians', 'random', 'real', 'reciprocal', 'remainder', 'repeat', 'reset_peak_memory', 'reshape', 'right_shift', 'roll', 'round', 'rsqrt', 'save', 'save_gguf', 'save_safetensors', 'savez', 'savez_compressed', 'scatter', 'scatter_add', 'scatter_max', 'scatter_min', 'scatter_prod', 'searchsorted', 'segmented_mm', 'set_cache_limit', 'set_default_device', 'set_default_stream', 'set_memory_limit', 'sigmoid', 'sign', 'signedinteger', 'sin', 'sinh', 'slice', 'slice_update', 'softmax', 'sort', 'split', 'sqrt', 'square', 'squeeze', 'stack', 'std', 'stop_gradient', 'stream', 'subtract', 'sum', 'swapaxes', 'synchronize', 'take', 'take_along_axis', 'tan', 'tanh', 'tensordot', 'tile', 'to_fp8', 'topk', 'trace', 'transpose', 'tri', 'tril', 'triu', 'trunc', 'uint16', 'uint32', 'uint64', 'uint8', 'unflatten', 'unique', 'unsignedinteger', 'unstack', 'value_and_grad', 'var', 'vecdot', 'view', 'vjp', 'vmap', 'where', 'zeros', 'zeros_like']
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
    extremes), ``eps`` (the gap between 1 and the next value), ``smallest_normal`` (also
    ``tiny``, the smallest positive normal value) as Python floats, and ``bits``. For
    complex64, the limits of its float32 parts. ValueError for other dtypes.
    """
    def __init__(self, dtype: Dtype) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def bits(self) -> int:
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
    def smallest_normal(self) -> float:
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
    def __init__(self, arg0: ThreadLocalStream) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def device(self) -> Device:
        ...
    @property
    def index(self) -> int:
        ...
class ThreadLocalStream:
    """
    A stream that stands for a separate stream on each thread that uses it, created on the
    thread's first use. Pass it wherever a stream is accepted. See
    :func:`new_thread_local_stream`.
    """
    def __repr__(self) -> str:
        ...
    @property
    def device(self) -> Device:
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
    def __abs__(self) -> array:
        ...
    def __add__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __and__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __array__(self, dtype: typing.Any = None, copy: typing.Any = None) -> typing.Any:
        """
        A NumPy view of the data (no copy; a GPU array is copied to the host once). As in MLX,
        the view is writable and writes show in the array (``copy=True`` gives a copy).
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
    def __iter__(self) -> ArrayIterator:
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
    def astype(self, dtype: Dtype, stream: None | Stream | Device = None) -> array:
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
    def cummax(self, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
        """
        See :func:`cummax`.
        """
    def cummin(self, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
        """
        See :func:`cummin`.
        """
    def cumprod(self, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
        """
        See :func:`cumprod`.
        """
    def cumsum(self, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
        """
        See :func:`cumsum`.
        """
    def diag(self, k: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`diag`.
        """
    def diagonal(self, offset: typing.SupportsInt | typing.SupportsIndex = 0, axis1: typing.SupportsInt | typing.SupportsIndex = 0, axis2: typing.SupportsInt | typing.SupportsIndex = 1, stream: None | Stream | Device = None) -> array:
        """
        See :func:`diagonal`.
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
    def logcumsumexp(self, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
        """
        See :func:`logcumsumexp`.
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
    def view(self, dtype: Dtype, *, stream: None | Stream | Device = None) -> array:
        """
        See :func:`view`.
        """
    @property
    def T(self) -> array:
        """
        The array with its axes reversed (see :func:`transpose`).
        """
    @property
    def at(self) -> ArrayAt:
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
    def mT(self) -> array:
        """
        The array with its last two axes swapped (:func:`matrix_transpose`).
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
class ArrayIterator:
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
class ArrayAt:
    def __getitem__(self, arg0: typing.Any) -> _ArrayAtIndex:
        ...
    def add(self, value: typing.Any) -> array:
        ...
    def divide(self, value: typing.Any) -> array:
        ...
    def maximum(self, value: typing.Any) -> array:
        ...
    def minimum(self, value: typing.Any) -> array:
        ...
    def multiply(self, value: typing.Any) -> array:
        ...
    def subtract(self, value: typing.Any) -> array:
        ...
class _GradSpec:
    pass
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

    ``primals`` (and ``tangents``, ``axes``) below are the positional argument itself when
    the function takes one, else a tuple of them. The vjp rule receives ``(primals,
    cotangents, outputs)`` with cotangents and outputs in the structure of the function's
    output, and returns one gradient per positional
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
class _CompiledFunction:
    """
    The callable behind :func:`compile` (use :func:`compile`).
    """
    def __call__(self, *args, **kwargs) -> typing.Any:
        ...
class _ExportFile:
    """
    The open file of an exporter (see kiln.core.exporter).
    """
    def __init__(self, path: str, shapeless: bool, metadata: str) -> None:
        ...
    def add_trace(self, fn: collections.abc.Callable, args: collections.abc.Sequence[array], kwargs: collections.abc.Mapping[str, array]) -> None:
        """
        Traces fn(args, kwargs) -> list of arrays and appends the trace to the file.
        """
    def close(self) -> None:
        ...
class _ImportedFunction:
    """
    A function read by kiln.core.import_function.
    """
    def __call__(self, args: collections.abc.Sequence[array], kwargs: collections.abc.Mapping[str, array]) -> tuple:
        ...
    def __init__(self, path: str) -> None:
        ...
    @property
    def metadata(self) -> str:
        ...
    @property
    def num_traces(self) -> int:
        ...
    @property
    def shapeless(self) -> bool:
        ...
def _checkpoint_call(fun: collections.abc.Callable, args: tuple, kwargs: dict) -> typing.Any:
    ...
def _compile(fun: typing.Any, inputs: typing.Any = None, outputs: typing.Any = None, shapeless: bool = False) -> _CompiledFunction:
    ...
def _compile_clear_cache() -> None:
    """
    Drops every cached trace of every compiled function.
    """
def _compile_stats() -> dict:
    """
    Counters of compile since start: traces run, replays of cached traces, and fused nodes run by their generated kernel or unfused (a kernel that did not compile).
    """
def _custom_function_call(fun: collections.abc.Callable, vjp: typing.Any, jvp: typing.Any, vmap: typing.Any, args: tuple, kwargs: dict) -> typing.Any:
    ...
def _export_callback(callback: collections.abc.Callable, fn: collections.abc.Callable, args: collections.abc.Sequence[array], kwargs: collections.abc.Mapping[str, array], shapeless: bool) -> None:
    ...
def _get_print_precision() -> int:
    ...
def _grad_call(fun: collections.abc.Callable, spec: _GradSpec, with_value: bool, args: tuple, kwargs: dict) -> typing.Any:
    ...
def _grad_spec(argnums: typing.Any, argnames: typing.Any, with_value: bool) -> _GradSpec:
    ...
def _set_print_precision(precision: typing.SupportsInt | typing.SupportsIndex) -> None:
    ...
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
def arange(*args, **kwargs) -> array:
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
def argpartition(a: array, /, kth: typing.SupportsInt | typing.SupportsIndex, axis: typing.SupportsInt | typing.SupportsIndex | None = -1, *, stream: None | Stream | Device = None) -> array:
    """
    The ``uint32`` indices along ``axis`` that partition the array as ``partition`` does.

    Args:
        a (array): Input array (not complex).
        kth (int): The sorted rank, in ``[-n, n)``; negative counts from the end.
        axis (int or None, optional): The axis; the flattened array when None. Default: -1.

    Returns:
        array: The ``uint32`` indices.

    Raises:
        ValueError: ``kth`` is out of range.
        IndexError: ``axis`` is out of bounds.
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
def atleast_1d(*args, stream: None | Stream | Device = None) -> typing.Any:
    """
    Views of the arguments with at least 1, 2 or 3 dimensions (NumPy's rules); one array for one argument, else a list.
    """
def atleast_2d(*args, stream: None | Stream | Device = None) -> typing.Any:
    """
    Views of the arguments with at least 1, 2 or 3 dimensions (NumPy's rules); one array for one argument, else a list.
    """
def atleast_3d(*args, stream: None | Stream | Device = None) -> typing.Any:
    """
    Views of the arguments with at least 1, 2 or 3 dimensions (NumPy's rules); one array for one argument, else a list.
    """
def bartlett(M: typing.SupportsInt | typing.SupportsIndex, *, stream: None | Stream | Device = None) -> array:
    """
    A window of length M (NumPy's definition), float32.
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
def blackman(M: typing.SupportsInt | typing.SupportsIndex, *, stream: None | Stream | Device = None) -> array:
    """
    A window of length M (NumPy's definition), float32.
    """
def block_masked_mm(a: array, b: array, /, block_size: typing.SupportsInt | typing.SupportsIndex = 64, mask_out: array | None = None, mask_lhs: array | None = None, mask_rhs: array | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    Matrix product with block masks of block size 32 or 64 on the output and the inputs:
    bool masks select blocks, floating masks also scale them.
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
def broadcast_to(a: array | bool | int | float | complex, /, shape: int | typing.Sequence[int], *, stream: None | Stream | Device = None) -> array:
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
def checkpoint(fun: collections.abc.Callable) -> typing.Any:
    """
    Returns ``fun`` with gradient checkpointing: its intermediate arrays are not kept for the
    backward pass but recomputed there from the inputs, trading one more forward
    computation for their memory.
    """
def clear_cache(*, device: Device | None = None) -> None:
    """
    Frees the allocator's cached buffers.
    """
def clear_streams() -> None:
    """
    Waits for all submitted work and forgets the calling thread's thread-local streams (a
    later use creates new ones).
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
def conv1d(input: array, weight: array, /, stride: typing.SupportsInt | typing.SupportsIndex = 1, padding: typing.SupportsInt | typing.SupportsIndex = 0, dilation: typing.SupportsInt | typing.SupportsIndex = 1, groups: typing.SupportsInt | typing.SupportsIndex = 1, *, stream: None | Stream | Device = None) -> array:
    """
    1-d convolution (cross-correlation) over ``(N, L, C_in)``.

        Args:
            input (array): ``(N, ..., C_in)`` (channels last).
            weight (array): ``(C_out, ..., C_in / groups)``.
            stride (int or tuple(int)): Step between output positions (per spatial axis).
            padding (int or tuple(int)): Zeros added on both sides (per spatial axis).
            dilation (int or tuple(int)): Spacing of the kernel taps (per spatial axis).
            groups (int): Channel groups: ``C_in`` and ``C_out`` are divided into ``groups``
                parts convolved separately.

        Returns:
            array: ``(N, ..., C_out)`` in the promoted floating dtype.

        Raises:
            ValueError: Mismatched ranks or channels, non-positive strides or dilations, a padded
                input smaller than the dilated kernel, or a non-floating dtype.
    """
def conv2d(input: array, weight: array, /, stride: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, padding: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 0, dilation: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, groups: typing.SupportsInt | typing.SupportsIndex = 1, *, stream: None | Stream | Device = None) -> array:
    """
    2-d convolution (cross-correlation) over ``(N, H, W, C_in)``.

        Args:
            input (array): ``(N, ..., C_in)`` (channels last).
            weight (array): ``(C_out, ..., C_in / groups)``.
            stride (int or tuple(int)): Step between output positions (per spatial axis).
            padding (int or tuple(int)): Zeros added on both sides (per spatial axis).
            dilation (int or tuple(int)): Spacing of the kernel taps (per spatial axis).
            groups (int): Channel groups: ``C_in`` and ``C_out`` are divided into ``groups``
                parts convolved separately.

        Returns:
            array: ``(N, ..., C_out)`` in the promoted floating dtype.

        Raises:
            ValueError: Mismatched ranks or channels, non-positive strides or dilations, a padded
                input smaller than the dilated kernel, or a non-floating dtype.
    """
def conv3d(input: array, weight: array, /, stride: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, padding: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 0, dilation: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, groups: typing.SupportsInt | typing.SupportsIndex = 1, *, stream: None | Stream | Device = None) -> array:
    """
    3-d convolution (cross-correlation) over ``(N, D, H, W, C_in)``.

        Args:
            input (array): ``(N, ..., C_in)`` (channels last).
            weight (array): ``(C_out, ..., C_in / groups)``.
            stride (int or tuple(int)): Step between output positions (per spatial axis).
            padding (int or tuple(int)): Zeros added on both sides (per spatial axis).
            dilation (int or tuple(int)): Spacing of the kernel taps (per spatial axis).
            groups (int): Channel groups: ``C_in`` and ``C_out`` are divided into ``groups``
                parts convolved separately.

        Returns:
            array: ``(N, ..., C_out)`` in the promoted floating dtype.

        Raises:
            ValueError: Mismatched ranks or channels, non-positive strides or dilations, a padded
                input smaller than the dilated kernel, or a non-floating dtype.
    """
def conv_general(input: array, weight: array, /, stride: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, padding: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | tuple[collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]] = 0, kernel_dilation: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, input_dilation: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, groups: typing.SupportsInt | typing.SupportsIndex = 1, flip: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    General convolution over 1 to 3 spatial axes (channels last).

    Args:
        input (array): ``(N, ..., C_in)``.
        weight (array): ``(C_out, ..., C_in / groups)``.
        stride (int or list(int)): Step between output positions.
        padding (int, list(int) or tuple(list(int), list(int))): Zeros added on both sides,
            or ``(low, high)`` per axis (may be negative).
        kernel_dilation (int or list(int)): Spacing of the kernel taps.
        input_dilation (int or list(int)): Spacing of the input elements (zeros between).
        groups (int): Channel groups.
        flip (bool): Flip the kernel (a convolution rather than a cross-correlation).

    Returns:
        array: ``(N, ..., C_out)``.
    """
def conv_transpose1d(input: array, weight: array, /, stride: typing.SupportsInt | typing.SupportsIndex = 1, padding: typing.SupportsInt | typing.SupportsIndex = 0, dilation: typing.SupportsInt | typing.SupportsIndex = 1, output_padding: typing.SupportsInt | typing.SupportsIndex = 0, groups: typing.SupportsInt | typing.SupportsIndex = 1, *, stream: None | Stream | Device = None) -> array:
    """
    1-d transposed convolution over ``(N, L, C_in)``.

        Output size per axis: ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

        Args:
            input (array): ``(N, ..., C_in)`` (channels last).
            weight (array): ``(C_out, ..., C_in / groups)``.
            stride (int or tuple(int)): Step between output positions (per spatial axis).
            padding (int or tuple(int)): Zeros added on both sides (per spatial axis).
            dilation (int or tuple(int)): Spacing of the kernel taps (per spatial axis).
            groups (int): Channel groups: ``C_in`` and ``C_out`` are divided into ``groups``
                parts convolved separately.

        Returns:
            array: ``(N, ..., C_out)`` in the promoted floating dtype.

        Raises:
            ValueError: Mismatched ranks or channels, non-positive strides or dilations, a padded
                input smaller than the dilated kernel, or a non-floating dtype.
    """
def conv_transpose2d(input: array, weight: array, /, stride: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, padding: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 0, dilation: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, output_padding: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 0, groups: typing.SupportsInt | typing.SupportsIndex = 1, *, stream: None | Stream | Device = None) -> array:
    """
    2-d transposed convolution over ``(N, H, W, C_in)``.

        Output size per axis: ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

        Args:
            input (array): ``(N, ..., C_in)`` (channels last).
            weight (array): ``(C_out, ..., C_in / groups)``.
            stride (int or tuple(int)): Step between output positions (per spatial axis).
            padding (int or tuple(int)): Zeros added on both sides (per spatial axis).
            dilation (int or tuple(int)): Spacing of the kernel taps (per spatial axis).
            groups (int): Channel groups: ``C_in`` and ``C_out`` are divided into ``groups``
                parts convolved separately.

        Returns:
            array: ``(N, ..., C_out)`` in the promoted floating dtype.

        Raises:
            ValueError: Mismatched ranks or channels, non-positive strides or dilations, a padded
                input smaller than the dilated kernel, or a non-floating dtype.
    """
def conv_transpose3d(input: array, weight: array, /, stride: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, padding: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 0, dilation: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 1, output_padding: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = 0, groups: typing.SupportsInt | typing.SupportsIndex = 1, *, stream: None | Stream | Device = None) -> array:
    """
    3-d transposed convolution over ``(N, D, H, W, C_in)``.

        Output size per axis: ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

        Args:
            input (array): ``(N, ..., C_in)`` (channels last).
            weight (array): ``(C_out, ..., C_in / groups)``.
            stride (int or tuple(int)): Step between output positions (per spatial axis).
            padding (int or tuple(int)): Zeros added on both sides (per spatial axis).
            dilation (int or tuple(int)): Spacing of the kernel taps (per spatial axis).
            groups (int): Channel groups: ``C_in`` and ``C_out`` are divided into ``groups``
                parts convolved separately.

        Returns:
            array: ``(N, ..., C_out)`` in the promoted floating dtype.

        Raises:
            ValueError: Mismatched ranks or channels, non-positive strides or dilations, a padded
                input smaller than the dilated kernel, or a non-floating dtype.
    """
def convolve(a: array, v: array, /, mode: str = 'full', *, stream: None | Stream | Device = None) -> array:
    """
    Discrete 1-d convolution of ``a`` and ``v`` (NumPy's ``convolve``).

    Args:
        a (array): 1-d.
        v (array): 1-d.
        mode (str): ``'full'`` (length ``n + m - 1``), ``'same'`` (``max(n, m)``) or
            ``'valid'`` (``max(n, m) - min(n, m) + 1``).

    Returns:
        array: The convolution (floating inputs only).
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
def count_nonzero(a: array, /, *, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, stream: None | Stream | Device = None) -> array:
    """
    Number of non-zero elements over the given axes.
    """
def cummax(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
    """
    Cumulative maximum along ``axis`` (of the flattened array when None); ``reverse`` scans from the end, ``inclusive=False`` starts from the identity.
    """
def cummin(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
    """
    Cumulative minimum along ``axis`` (of the flattened array when None); ``reverse`` scans from the end, ``inclusive=False`` starts from the identity.
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
def degrees(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Radians to degrees, element-wise (integer inputs give float32).
    """
def depends(inputs: typing.Any, dependencies: typing.Any) -> typing.Any:
    """
    ``inputs`` as new arrays whose evaluation also waits for ``dependencies``.
    """
def dequantize(w: array, /, scales: array, biases: array | None = None, group_size: typing.SupportsInt | typing.SupportsIndex | None = None, bits: typing.SupportsInt | typing.SupportsIndex | None = None, mode: str = 'affine', global_scale: array | None = None, dtype: Dtype | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    Dequantize ``w`` packed by :func:`quantize`: ``scale * q + bias`` for ``"affine"``, the
    e2m1/e4m3 value times its group's scale otherwise. ``dtype`` defaults to the scales'
    dtype for ``"affine"`` and to bfloat16 for the other modes.
    """
def device_count(device_type: DeviceType) -> int:
    """
    The number of devices of ``device_type``: 1 for the CPU, the number of CUDA GPUs (0
    without a driver or a CUDA build) for the GPU.
    """
def device_info(device: Device | None = None) -> dict:
    """
    A dict describing ``device`` (default: the default device). For a GPU: ``device_name``,
    ``memory_size`` (bytes), ``compute_capability`` ("9.0"), ``architecture`` (what NVRTC
    compiles for, "sm_90") and ``sm_count``; for the CPU: ``device_name`` (the processor's model name), ``architecture`` (as
    ``uname -m``: "x86_64", "aarch64") and ``threads``.
    ValueError for a GPU that is not available.
    """
def diag(a: array, /, k: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> array:
    """
    For a 1-D array, the square matrix with ``a`` on its k-th diagonal; for a 2-D array, its
    k-th diagonal.
    """
def diagonal(a: array, offset: typing.SupportsInt | typing.SupportsIndex = 0, axis1: typing.SupportsInt | typing.SupportsIndex = 0, axis2: typing.SupportsInt | typing.SupportsIndex = 1, stream: None | Stream | Device = None) -> array:
    """
    The ``offset``-th diagonal of the (axis1, axis2) planes, as the last axis of the result.
    """
def diff(a: array, /, n: typing.SupportsInt | typing.SupportsIndex = 1, axis: typing.SupportsInt | typing.SupportsIndex = -1, *, stream: None | Stream | Device = None) -> array:
    """
    The n-th discrete difference along ``axis``: ``a[1:] - a[:-1]``, n times.
    """
def disable_compile() -> None:
    """
    Makes :func:`compile` return functions that run uncompiled (also those compiled before).
    The environment variable ``KILN_DISABLE_COMPILE`` (any value but ``0``) does the same at
    start.
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
def divmod(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> list[array]:
    """
    Element-wise quotient and remainder: ``[floor_divide(a, b), remainder(a, b)]``.

    Returns:
        list[array]: The quotient and the remainder.
    """
def einsum(subscripts: str, *args, stream: None | Stream | Device = None) -> array:
    """
    Einstein summation with NumPy's subscripts (``"ij,jk->ik"``, ``"...ij->...ji"``, implicit
    outputs), contracted pairwise along NumPy's greedy path.

    Raises:
        ValueError: Malformed subscripts, or index sizes that disagree.
    """
def einsum_path(subscripts: str, *args) -> tuple[list, str]:
    """
    The pairwise contraction path of :func:`einsum` (NumPy's ``(path, report)`` format).
    """
def enable_compile() -> None:
    """
    Undoes :func:`disable_compile` (and ``KILN_DISABLE_COMPILE``).
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
@typing.overload
def export_to_dot(file: typing.Any, *args, **kwargs) -> None:
    """
    export_to_dot(file, *args, **kwargs)

    Writes the graph computing the arrays in ``args`` and ``kwargs`` (arrays or trees of
    arrays) as Graphviz DOT text to ``file``: a path, or an object with ``write`` (such as
    ``io.StringIO``). Arrays are boxes (shape and dtype; the outputs filled), primitives
    ellipses (name and parameters). Nothing is evaluated. Render with ``dot -Tsvg``.
    """
@typing.overload
def export_to_dot(file: typing.Any, *args, **kwargs) -> None:
    """
    Writes the graph of unevaluated arrays in Graphviz DOT: arrays as ellipses, primitives
    (e.g. the Compiled nodes of a compiled function) as boxes.

    Args:
        file (str or file): A path, or an object with a ``write`` method.
        *args: Arrays or trees of arrays whose graph to write.
        **kwargs: Arrays or trees of arrays, labelled with their names.
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
def flip(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, *, stream: None | Stream | Device = None) -> array:
    """
    Reverses the order of elements along ``axis`` (every axis when None); a strided view.
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
    kiln never writes to it. Views with non-negative strides are shared as they are,
    overlapping ones (broadcasts) included; as in MLX, a view with a negative stride raises
    ``ValueError`` unless ``copy=True``.

    Args:
        x: The tensor to import.
        copy (bool, optional): If ``True``, the result gets its own buffer, copied at
            the call (later changes of ``x`` do not show; any strides). If ``False`` or
            ``None`` (default), the memory is shared.

    Returns:
        array: An array with ``x``'s shape, dtype and values.

    Raises:
        TypeError: ``x`` does not support DLPack, or its dtype has no kiln counterpart.
        BufferError: ``x`` lives on a device kiln cannot read.
    """
def from_fp8(x: array, dtype: Dtype = ..., *, stream: None | Stream | Device = None) -> array:
    """
    8-bit e4m3 bits (uint8) to ``dtype``.
    """
def full(shape: int | typing.Sequence[int], vals: array | bool | int | float | complex, dtype: Dtype | None = None, *, stream: None | Stream | Device = None) -> array:
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
def full_like(a: array, /, vals: array | bool | int | float | complex, dtype: Dtype | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    An array of ``a``'s shape and dtype filled with ``vals`` (broadcast).

    Args:
        a (array): The model.
        vals (array or scalar): The fill value(s).
        dtype (Dtype, optional): The element type; ``a``'s by default.

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
def gather_mm(a: array, b: array, /, lhs_indices: array | None = None, rhs_indices: array | None = None, *, sorted_indices: bool = False, stream: None | Stream | Device = None) -> array:
    """
    Matrix products of the matrices of ``a`` and ``b`` picked by flat indices into their
    batch axes (all of them, in order, when not given); the index arrays broadcast.
    """
def gather_qmm(x: array, w: array, /, scales: array, biases: array | None = None, lhs_indices: array | None = None, rhs_indices: array | None = None, transpose: bool = True, group_size: typing.SupportsInt | typing.SupportsIndex | None = None, bits: typing.SupportsInt | typing.SupportsIndex | None = None, mode: str = 'affine', global_scale: array | None = None, *, sorted_indices: bool = False, stream: None | Stream | Device = None) -> array:
    """
    :func:`quantized_matmul` of the matrices of ``x`` and ``w`` picked by flat indices into
    their batch axes (``lhs_indices``, ``rhs_indices``), as :func:`gather_mm`. With
    ``"nvfp4"``, ``global_scale`` is a scalar or one scale per matrix of ``w``
    (shape ``w.shape[:-2]``).
    """
def gather_qqmm(x: array, w: array, /, scales: array | None = None, lhs_indices: array | None = None, rhs_indices: array | None = None, group_size: typing.SupportsInt | typing.SupportsIndex | None = None, bits: typing.SupportsInt | typing.SupportsIndex | None = None, mode: str = 'nvfp4', global_scale_x: array | None = None, global_scale_w: array | None = None, *, sorted_indices: bool = False, stream: None | Stream | Device = None) -> array:
    """
    :func:`qqmm` of the matrices of ``x`` and ``w`` picked by flat indices into their batch
    axes (``lhs_indices``, ``rhs_indices``), as :func:`gather_mm`. ``global_scale_w``
    (``"nvfp4"``) is a scalar or one scale per matrix of ``w``.
    """
def get_active_memory(*, device: Device | None = None) -> int:
    """
    Bytes held by live arrays on the device (the default device unless ``device`` is given).
    """
def get_array_buffer_size(*args) -> int:
    """
    get_array_buffer_size(*args)

    The bytes of the buffers behind the evaluated arrays in ``args`` (arrays or trees of
    arrays; other leaves are ignored). Each buffer counts once and whole: a view counts its
    base's buffer, and arrays sharing a buffer count it one time.

    Raises:
        ValueError: An array has not been evaluated.
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
def grad(fun: collections.abc.Callable, argnums: typing.Any = None, argnames: typing.Any = None) -> typing.Any:
    """
    Returns a function computing the gradient of ``fun``: calling it with ``fun``'s arguments
    returns the gradients (see ``argnums``).

    Args:
        fun (Callable): A function of arrays and trees of arrays returning a scalar loss
            (an array of shape ``()``); for ``value_and_grad`` also a tuple whose first
            element is the loss and the rest auxiliary values (returned, not
            differentiated).
        argnums (int or Sequence[int], optional): The positional arguments to differentiate
            (negative counts from the end). One argnum (an int or a sequence of one) gives
            its gradient, several a tuple of them. Defaults to 0 when ``argnames`` is empty.
        argnames (str or Sequence[str], optional): Keyword arguments to differentiate; their
            gradients come as a dict after the positional ones: ``(positional, keywords)``
            (``positional`` is None when only ``argnames`` is given).

    The function sees the caller's own lists and dicts with traced arrays in place of the
    differentiated ones; those are put back afterwards, so only the function's own
    updates to the containers remain.

    The gradient of an argument has the argument's structure (a tree of arrays of the same
    shapes and dtypes).

    Raises:
        ValueError: An argnum out of range or repeated, nothing to differentiate, a
            differentiated argument holding something other than arrays, a missing keyword
            argument, or a loss that is not a scalar array.
        TypeError: argnums that are not ints.
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
def hadamard_transform(a: array, scale: typing.SupportsFloat | typing.SupportsIndex | None = None, stream: None | Stream | Device = None) -> array:
    """
    The Walsh-Hadamard transform along the last axis, times ``scale`` (``1/sqrt(n)`` by
    default). The last axis must have length ``m * 2^k`` with ``m`` in (1, 12, 20, 28).
    """
def hamming(M: typing.SupportsInt | typing.SupportsIndex, *, stream: None | Stream | Device = None) -> array:
    """
    A window of length M (NumPy's definition), float32.
    """
def hanning(M: typing.SupportsInt | typing.SupportsIndex, *, stream: None | Stream | Device = None) -> array:
    """
    A window of length M (NumPy's definition), float32.
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
def kron(a: array, b: array, *, stream: None | Stream | Device = None) -> array:
    """
    The Kronecker product of a and b.
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
def linspace(start: typing.SupportsFloat | typing.SupportsIndex, stop: typing.SupportsFloat | typing.SupportsIndex, num: typing.SupportsInt | typing.SupportsIndex = 50, endpoint: bool = True, dtype: Dtype = ..., stream: None | Stream | Device = None) -> array:
    """
    ``num`` evenly spaced values over ``[start, stop]`` (``[start, stop)`` with
    ``endpoint=False``).

    Args:
        start (float): The first value.
        stop (float): The last value.
        num (int): How many values.
        endpoint (bool): Include ``stop`` (the default).
        dtype (Dtype): The element type (float32).

    Returns:
        array: A 1-d array of ``num`` values.

    Raises:
        ValueError: ``num`` is negative.
    """
def load(file: typing.Any, /, format: str | None = None, return_metadata: bool = False, *, stream: None | Stream | Device = None) -> typing.Any:
    """
    Load array(s) from a binary file.

    The supported formats are ``.npy``, ``.npz``, ``.safetensors``, and ``.gguf``.

    Data stored raw (``.npy``, ``.safetensors``, unquantized ``.gguf`` tensors) is read
    lazily: the header is checked now and each array reads its bytes straight into its own
    buffer when it is evaluated (from a file object: at once). ``.npz`` members are read and
    checked against their CRC-32 now.

    Args:
        file (file, str, pathlib.Path): File in which the array is saved.
        format (str, optional): Format of the file. If ``None``, the format is inferred
          from the file extension. Supported formats: ``npy``, ``npz``, ``safetensors``
          and ``gguf``. Default: ``None``.
        return_metadata (bool, optional): Load the metadata for formats which support
          metadata (``safetensors``: a dict of str; ``gguf``: arrays, str or lists of
          str). The metadata will be returned as an additional dictionary. Default:
          ``False``.
        stream (Stream, optional): Where the data is read; default: the CPU.

    Returns:
        array, dict, or tuple: A single array if loading from a ``.npy`` file or a dict
        mapping names to arrays if loading from a ``.npz``, ``.safetensors`` or ``.gguf``
        file. If ``return_metadata`` is ``True`` a tuple ``(arrays, metadata)`` is
        returned.

    Raises:
        ValueError: an unknown format, metadata asked of npy/npz, a dtype kiln cannot hold.
        RuntimeError: a missing, truncated or corrupt file (the message says what is wrong).

    GGUF tensors of type Q4_0, Q4_1, Q4_K and Q8_0 load as MLX loads them: ``name`` holds
    the packed values (uint32) and ``name[:-7] + ".scales"`` / ``".biases"`` the float16
    scale and bias of each group of 32 (see :func:`dequantize`).
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
def logcumsumexp(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, reverse: bool = False, inclusive: bool = True, stream: None | Stream | Device = None) -> array:
    """
    Cumulative log-sum-exp (computed stably) along ``axis`` (of the flattened array when None); ``reverse`` scans from the end, ``inclusive=False`` starts from the identity.
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
def logical_xor(a: array | bool | int | float | complex, b: array | bool | int | float | complex, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise exclusive or of the truth values of ``a`` and ``b`` (bool result).
    """
def logsumexp(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    ``log(sum(exp(a)))`` over the given axes, computed stably (the maximum is subtracted first).

    Floating inputs keep their dtype; integer and bool inputs give float32. complex64 (as MLX) subtracts the lexicographic maximum ``m`` and adds it back, so the imaginary part is ``m.imag`` plus the angle of the shifted sum, not always NumPy's principal value.

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
def matrix_transpose(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Swaps the last two axes (ValueError for fewer than 2 dimensions).
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
def median(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> array:
    """
    The median over the given axes: the middle element of the sorted values, or the mean of
    the two middle ones; NaN where the values hold a NaN.

    Floating inputs keep their dtype; integer and bool inputs give float32.

    Args:
        a (array): Input array (not complex).
        axis (int or Sequence[int], optional): The axes to reduce; all by default.
        keepdims (bool, optional): Keep the reduced axes with size 1. Default: False.

    Returns:
        array: The medians.

    Raises:
        ValueError: The reduction is empty, or an axis is repeated.
        IndexError: An axis is out of bounds.
    """
def meshgrid(*args, sparse: bool = False, indexing: str = 'xy', stream: None | Stream | Device = None) -> tuple:
    """
    Coordinate grids from 1-D coordinate arrays: ``indexing="xy"`` (Cartesian, the default)
    or ``"ij"`` (matrix); ``sparse`` returns broadcastable arrays instead of full grids.
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
def minmax(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | Stream | Device = None) -> tuple[array, array]:
    """
    The minimum and the maximum over the given axes, as a tuple.
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
def nan_to_num(a: array | bool | int | float | complex, /, nan: typing.SupportsFloat | typing.SupportsIndex = 0.0, posinf: typing.SupportsFloat | typing.SupportsIndex | None = None, neginf: typing.SupportsFloat | typing.SupportsIndex | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    NaN and infinities replaced by finite numbers.

    Args:
        a (array): Input array (non-floating arrays are returned unchanged).
        nan (float): The value for NaN.
        posinf (float, optional): The value for +inf; the dtype's largest finite value by
            default.
        neginf (float, optional): The value for -inf; the dtype's lowest finite value by
            default.
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
    A new stream on ``device``, owned by the calling thread: entering ``stream(s)`` on
    another thread raises RuntimeError (as MLX). ValueError if the device is not available.
    """
def new_thread_local_stream(device: Device) -> ThreadLocalStream:
    """
    A :class:`ThreadLocalStream` on ``device``: each thread using it gets its own stream, so
    threads evaluating independent graphs do not serialize on one queue.
    """
def new_thread_unsafe_stream(device: Device) -> Stream:
    """
    A new stream on ``device`` that any thread may use (the caller orders the work of the
    threads sharing it).
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
def ones(shape: int | typing.Sequence[int], dtype: Dtype = ..., *, stream: None | Stream | Device = None) -> array:
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
def ones_like(a: array, /, dtype: Dtype | None = None, *, stream: None | Stream | Device = None) -> array:
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
    ``a`` padded along each axis: with a constant, the border value (``"edge"``), or the
    mirrored array without (``"reflect"``) or with (``"symmetric"``) its border, as NumPy.

    Args:
        a (array): Input array.
        pad_width (int, tuple or list of tuples): ``n``, ``(before, after)`` for every axis,
            or one ``(before, after)`` per axis.
        mode (str): ``"constant"``, ``"edge"``, ``"reflect"`` or ``"symmetric"``.
        constant_values (array or scalar): The padding value.

    Raises:
        ValueError: Negative or mismatched widths, an unknown mode, or a non-constant pad of
            an empty axis.
    """
def partition(a: array, /, kth: typing.SupportsInt | typing.SupportsIndex, axis: typing.SupportsInt | typing.SupportsIndex | None = -1, *, stream: None | Stream | Device = None) -> array:
    """
    A partitioned copy of the array: the element of sorted rank ``kth`` lands at position
    ``kth`` along ``axis``, smaller elements before it and larger ones after it (NaN orders
    last, as in ``sort``).

    Within each side the elements keep their order (a stable three-way partition), the same
    on every device.

    Args:
        a (array): Input array (not complex).
        kth (int): The sorted rank, in ``[-n, n)``; negative counts from the end.
        axis (int or None, optional): The axis; the flattened array when None. Default: -1.

    Returns:
        array: The partitioned array, of ``a``'s dtype.

    Raises:
        ValueError: ``kth`` is out of range.
        IndexError: ``axis`` is out of bounds.
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
def qqmm(x: array, w: array, scales: array | None = None, group_size: typing.SupportsInt | typing.SupportsIndex | None = None, bits: typing.SupportsInt | typing.SupportsIndex | None = None, mode: str = 'nvfp4', global_scale_x: array | None = None, global_scale_w: array | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    ``x @ w.T`` with ``x`` quantized on the fly in ``mode`` (``"nvfp4"``, ``"mxfp8"`` or
    ``"mxfp4"``); ``w`` is used as is when packed (uint32, with ``scales``) and quantized on
    the fly otherwise. Gradients pass straight through the rounding.
    """
def quantize(w: array, /, group_size: typing.SupportsInt | typing.SupportsIndex | None = None, bits: typing.SupportsInt | typing.SupportsIndex | None = None, mode: str = 'affine', *, global_scale: array | None = None, stream: None | Stream | Device = None) -> list:
    """
    Quantize the array ``w``: every ``group_size`` elements of its last axis share a scale
    (and, for ``"affine"``, a bias); each element takes ``bits`` bits, packed into uint32
    words from the lowest bits up, in MLX's layout.

    Modes: ``"affine"`` (group size 32, 64 (default) or 128; bits 1, 2, 3, 4 (default), 5, 6
    or 8), ``"mxfp4"`` (32, 4: e2m1 values, e8m0 scales), ``"mxfp8"`` (32, 8: e4m3 values,
    e8m0 scales), ``"nvfp4"`` (16, 4: e2m1 values, e4m3 scales, optional float32
    ``global_scale``).

    Returns:
        list: ``[w_q, scales, biases]`` for ``"affine"``, ``[w_q, scales]`` otherwise.
    """
def quantized_matmul(x: array, w: array, /, scales: array, biases: array | None = None, transpose: bool = True, group_size: typing.SupportsInt | typing.SupportsIndex | None = None, bits: typing.SupportsInt | typing.SupportsIndex | None = None, mode: str = 'affine', *, stream: None | Stream | Device = None) -> array:
    """
    ``x @ dequantize(w).T`` (``transpose=True``) or ``x @ dequantize(w)`` without forming the
    dequantized matrix. Batch axes broadcast.
    """
def radians(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Degrees to radians, element-wise (integer inputs give float32).
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
def reshape(a: array, /, shape: int | typing.Sequence[int], *, stream: None | Stream | Device = None) -> array:
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
def roll(a: array, /, shift: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, *, stream: None | Stream | Device = None) -> array:
    """
    Rolls the elements by ``shift`` along ``axis`` (the flattened array when None): elements
    pushed off one end come back at the other.
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
def save(file: typing.Any, arr: typing.Any) -> None:
    """
    Save the array to a binary file in ``.npy`` format (``.npy`` is appended to a path
    without it). Every dtype; bfloat16 is written with descr ``'<V2'`` as MLX does.

    Args:
        file (str, pathlib.Path, file): File to which the array is saved
        arr (array): Array to be saved.
    """
def save_gguf(file: typing.Any, arrays: dict, metadata: dict | None = None) -> None:
    """
    Save array(s) to a binary file in ``.gguf`` format (``.gguf`` is appended to a path
    without it). Tensor dtypes: float32, float16, bfloat16, float64, int8, int16, int32
    and int64.

    See the `GGUF documentation
    <https://github.com/ggerganov/ggml/blob/master/docs/gguf.md>`_ for more information on
    the format.

    Args:
        file (file, str, pathlib.Path): File in which the array is saved.
        arrays (dict(str, array)): The dictionary of names to arrays to be saved.
        metadata (dict(str, Union[array, str, list(str)]), optional): The dictionary of
          metadata to be saved. The values can be a scalar or 1D :obj:`array` (integer,
          bool, float32 or float64), a :obj:`str`, or a :obj:`list` of :obj:`str`.
    """
def save_safetensors(file: typing.Any, arrays: dict, metadata: dict | None = None) -> None:
    """
    Save array(s) to a binary file in ``.safetensors`` format (``.safetensors`` is appended
    to a path without it). Every dtype (float64 as F64, complex64 as C64).

    See the `Safetensors documentation <https://huggingface.co/docs/safetensors/index>`_
    for more information on the format.

    Args:
        file (file, str, pathlib.Path): File in which the array is saved.
        arrays (dict(str, array)): The dictionary of names to arrays to be saved.
        metadata (dict(str, str), optional): The dictionary of metadata to be saved.
    """
def savez(file: typing.Any, *args, **kwargs) -> None:
    """
    Save several arrays to a binary file in uncompressed ``.npz`` format (``.npz`` is
    appended to a path without it).

    .. code-block:: python

        import kiln.core as mx

        x = mx.ones((10, 10))
        mx.savez("my_path.npz", x=x)

    Args:
        file (file, str, pathlib.Path): Path to file to which the arrays are saved.
        *args (arrays): Arrays to be saved, named ``arr_0``, ``arr_1``, ...
        **kwargs (arrays): Arrays to be saved. Each array will be saved with the associated
          keyword as the output file name.
    """
def savez_compressed(file: typing.Any, *args, **kwargs) -> None:
    """
    Save several arrays to a binary file in compressed (deflated) ``.npz`` format.

    Args:
        file (file, str, pathlib.Path): Path to file to which the arrays are saved.
        *args (arrays): Arrays to be saved, named ``arr_0``, ``arr_1``, ...
        **kwargs (arrays): Arrays to be saved. Each array will be saved with the associated
          keyword as the output file name.
    """
def scatter(a: array, /, indices: collections.abc.Sequence[array], updates: array | bool | int | float | complex, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    General scatter, the inverse of :func:`gather`: ``updates`` (shape: the broadcast index shape + one slice shape of ``a.ndim`` dimensions) is written into ``a`` at ``indices`` along ``axes``; with repeated indices, the last index position wins (as NumPy).
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
def searchsorted(sorted_sequence: array, values: array, /, side: str = 'left', *, stream: None | Stream | Device = None) -> array:
    """
    The indices where ``values`` would be inserted into ``sorted_sequence`` to keep it sorted.

    Args:
        sorted_sequence (array): A 1-D array sorted in ascending order (NaN last).
        values (array): The values to insert, of any shape.
        side (str, optional): ``'left'``: the number of elements strictly before the value;
          ``'right'``: the number of elements not after it. Default: ``'left'``.

    Returns:
        array: ``uint32`` indices in ``[0, sorted_sequence.size]``, of ``values``' shape.

    Raises:
        ValueError: ``sorted_sequence`` is not 1-D, or ``side`` is neither 'left' nor 'right'.
    """
def segmented_mm(a: array, b: array, /, segments: array, *, stream: None | Stream | Device = None) -> array:
    """
    ``a[:, s:e] @ b[s:e, :]`` for each ``[s, e)`` pair in ``segments`` (shape (..., 2)).
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
def slice(a: array, start_indices: array | bool | int | float | complex, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], slice_size: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    The block of shape ``slice_size`` starting at ``start_indices`` along ``axes`` (and at 0
    along the other axes); the start indices are an array, so they may be computed in the
    graph. Starts are clamped so the block fits.

    Args:
        a (array): Input array.
        start_indices (array): One start per entry of ``axes``.
        axes (Sequence[int]): The axes the starts apply to.
        slice_size (Sequence[int]): The size of the block along every axis of ``a``.

    Returns:
        array: The block.
    """
def slice_update(a: array, update: array | bool | int | float | complex, start_indices: array | bool | int | float | complex, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    ``a`` with the block of ``update``'s shape starting at ``start_indices`` along ``axes``
    replaced by ``update`` (cast to ``a``'s dtype). See :func:`slice`.

    Args:
        a (array): Input array.
        update (array): The new block.
        start_indices (array): One start per entry of ``axes``.
        axes (Sequence[int]): The axes the starts apply to.

    Returns:
        array: A new array; ``a`` is unchanged.
    """
def softmax(a: array, /, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, *, precise: bool = False, stream: None | Stream | Device = None) -> array:
    """
    ``exp(a - logsumexp(a))`` over the given axes, computed stably.

    Args:
        a (array): Input array.
        axis (int or Sequence[int], optional): The axes to normalize over; all by default
            (as MLX; pass ``axis=-1`` for the last axis).
        precise (bool, optional): Accepted for MLX compatibility: kiln always computes half
            types in float32.

    Returns:
        array: An array of ``a``'s shape (float32 for integer inputs; complex64 stays
        complex64, shifted by the lexicographic maximum as MLX).
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
def synchronize(stream: None | Stream | Device = None) -> None:
    """
    Blocks until the work submitted to ``stream`` (a stream, or a device for its default
    stream; without one, every stream) has finished. As in MLX, an error raised by work that
    :func:`async_eval` submitted, and that no array has raised yet, is raised here (once).
    """
def take(a: array, /, indices: typing.Any, axis: typing.SupportsInt | typing.SupportsIndex | None = None, *, stream: None | Stream | Device = None) -> array:
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
def tensordot(a: array, b: array, /, axes: typing.Any = 2, *, stream: None | Stream | Device = None) -> array:
    """
    Contraction over axes: the last ``axes`` axes of ``a`` with the first ``axes`` of ``b``,
    or the axis lists ``axes = (axes_a, axes_b)`` in pairs.
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
def to_fp8(x: array, *, stream: None | Stream | Device = None) -> array:
    """
    Float to 8-bit e4m3 bits (uint8): round to nearest even, saturating at +-448.
    """
def topk(a: array, /, k: typing.SupportsInt | typing.SupportsIndex, axis: typing.SupportsInt | typing.SupportsIndex | None = -1, *, stream: None | Stream | Device = None) -> array:
    """
    The ``k`` largest elements along ``axis`` (NaN counts as the largest).

    They are not sorted: they come in the order of the last ``k`` positions of
    ``partition(a, n - k, axis)``.

    Args:
        a (array): Input array (not complex).
        k (int): How many, in ``[0, n]``.
        axis (int or None, optional): The axis; the flattened array when None. Default: -1.

    Returns:
        array: The ``k`` largest elements, of ``a``'s dtype.

    Raises:
        ValueError: ``k`` is out of range.
        IndexError: ``axis`` is out of bounds.
    """
def trace(a: array, /, offset: typing.SupportsInt | typing.SupportsIndex = 0, axis1: typing.SupportsInt | typing.SupportsIndex = 0, axis2: typing.SupportsInt | typing.SupportsIndex = 1, dtype: Dtype | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    Sum along the ``offset``-th diagonal of the (axis1, axis2) planes.
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
def tri(n: typing.SupportsInt | typing.SupportsIndex, m: typing.SupportsInt | typing.SupportsIndex | None = None, k: typing.SupportsInt | typing.SupportsIndex = 0, dtype: Dtype | None = None, *, stream: None | Stream | Device = None) -> array:
    """
    An n x m array with ones at and below the k-th diagonal.
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
def trunc(a: array, /, *, stream: None | Stream | Device = None) -> array:
    """
    Element-wise truncation toward zero.

    Args:
        a (array): Input array; integer and bool arrays are returned unchanged.

    Returns:
        array: ``a`` with its fractional part removed, in ``a``'s dtype.
    """
def unflatten(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], *, stream: None | Stream | Device = None) -> array:
    """
    Splits ``axis`` into ``shape`` (one entry may be -1).
    """
def unique(a: array, /, size: typing.SupportsInt | typing.SupportsIndex, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False, fill_value: typing.Any = None, *, stream: None | Stream | Device = None) -> typing.Any:
    """
    The sorted unique elements of the flattened array, in exactly ``size`` entries.

    The output's shape does not depend on the values: past the last unique element the
    entries hold ``fill_value`` and count 0, and when there are more unique elements than
    ``size``, the smallest ``size`` are kept (``inverse`` then clamps to the last entry and the
    dropped elements' counts are gone). Equal values (``-0.0`` and ``0.0`` alike) form one
    entry; every NaN is its own.

    Args:
        a (array): Input array (not complex).
        size (int): The number of entries.
        return_index (bool, optional): Also return the ``uint32`` index in the flattened ``a``
          of each entry's first occurrence (the first entry's for the padding).
        return_inverse (bool, optional): Also return the ``uint32`` entry of each element of
          ``a`` (``a``'s shape).
        return_counts (bool, optional): Also return the ``int32`` number of occurrences.
        fill_value (scalar or array, optional): The padding, cast to ``a``'s dtype; the first
          entry when None.

    Returns:
        array or tuple(array, ...): The values, followed by the requested index, inverse and
        counts, in that order.

    Raises:
        ValueError: ``size`` is negative, ``fill_value`` has more than one element, or ``a`` is
          empty with a non-zero ``size`` and no ``fill_value``.
    """
def unstack(a: array, /, axis: typing.SupportsInt | typing.SupportsIndex = 0, *, stream: None | Stream | Device = None) -> list[array]:
    """
    The slices of ``a`` along ``axis``, with that axis removed.
    """
def value_and_grad(fun: collections.abc.Callable, argnums: typing.Any = None, argnames: typing.Any = None) -> typing.Any:
    """
    Returns a function computing ``fun``'s value and its gradient: calling it with ``fun``'s
    arguments returns ``(value, grads)``, where ``value`` is what ``fun`` returns.

    Args:
        fun (Callable): A function of arrays and trees of arrays returning a scalar loss
            (an array of shape ``()``); for ``value_and_grad`` also a tuple whose first
            element is the loss and the rest auxiliary values (returned, not
            differentiated).
        argnums (int or Sequence[int], optional): The positional arguments to differentiate
            (negative counts from the end). One argnum (an int or a sequence of one) gives
            its gradient, several a tuple of them. Defaults to 0 when ``argnames`` is empty.
        argnames (str or Sequence[str], optional): Keyword arguments to differentiate; their
            gradients come as a dict after the positional ones: ``(positional, keywords)``
            (``positional`` is None when only ``argnames`` is given).

    The function sees the caller's own lists and dicts with traced arrays in place of the
    differentiated ones; those are put back afterwards, so only the function's own
    updates to the containers remain.

    The gradient of an argument has the argument's structure (a tree of arrays of the same
    shapes and dtypes).

    Raises:
        ValueError: An argnum out of range or repeated, nothing to differentiate, a
            differentiated argument holding something other than arrays, a missing keyword
            argument, or a loss that is not a scalar array.
        TypeError: argnums that are not ints.

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
def vecdot(a: array, b: array, /, *, axis: typing.SupportsInt | typing.SupportsIndex = -1, stream: None | Stream | Device = None) -> array:
    """
    ``sum(conj(a) * b, axis)`` with broadcasting.
    """
def view(a: array | bool | int | float | complex, dtype: Dtype, stream: None | Stream | Device = None) -> array:
    """
    The bytes of ``a`` read as ``dtype``; the last axis scales by the ratio of the item
    sizes.

    Raises:
        ValueError: The last axis cannot be split or merged evenly, or ``a`` is a scalar and
            the sizes differ.
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
def vmap(fun: collections.abc.Callable, in_axes: typing.Any = 0, out_axes: typing.Any = 0) -> typing.Any:
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
def zeros(shape: int | typing.Sequence[int], dtype: Dtype = ..., *, stream: None | Stream | Device = None) -> array:
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
def zeros_like(a: array, /, dtype: Dtype | None = None, *, stream: None | Stream | Device = None) -> array:
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
