"""
Fused operations and custom kernels written as source strings.
"""
from __future__ import annotations
import collections.abc
import kiln.core
import typing
__all__: list[str] = ['CustomKernel', 'KernelCompileError', 'cuda_kernel', 'metal_kernel']
class KernelCompileError(RuntimeError):
    pass
class CustomKernel:
    """
    A custom kernel from metal_kernel or cuda_kernel.
    """
    def __call__(self, *, inputs: list | dict, output_shapes: list | dict, output_dtypes: list | dict, grid: tuple[int, int, int], threadgroup: tuple[int, int, int], template: list | dict | None = None, init_value: float | None = None, verbose: bool = False, ensure_row_contiguous: bool | None = None, stream: kiln.core.Stream | kiln.core.Device | None = None) -> list[kiln.core.array] | dict[str, kiln.core.array]:
        """
        __call__(*, inputs, output_shapes, output_dtypes, grid, threadgroup, template=None, init_value=None, verbose=False, ensure_row_contiguous=None, stream=None)

        Runs the kernel (lazily: the outputs are computed at eval). Keyword arguments only.

        Args:
            inputs (list[array | bool | int | float] | dict): The inputs, in the order of
                ``input_names``; Python scalars become 0-d bool, int32 or float32 arrays. A dict
                (the older form) names them, and the outputs are then returned as a dict.
            output_shapes (list[Sequence[int]] | dict): The shape of each output.
            output_dtypes (list[Dtype] | dict): The dtype of each output.
            grid (tuple[int, int, int]): Threads in the grid (not threadgroups), as in MLX.
            threadgroup (tuple[int, int, int]): Threads per threadgroup (block); at most 1024. A
                threadgroup larger than the grid shrinks to it.
            template (list[tuple[str, Dtype | int | bool]] | dict, optional): Template arguments.
            init_value (float, optional): Fills every output before the kernel runs; without it
                outputs start uninitialized.
            verbose (bool): Print the generated source.
            ensure_row_contiguous (bool, optional): Overrides the definition's setting (older form).
            stream (Stream | Device, optional): Where the kernel runs.

        Returns:
            list[array] | dict[str, array]: The outputs.

        Raises:
            ValueError: A wrong number of inputs, outputs, shapes or dtypes, a zero-sized grid, a
                threadgroup above 1024 threads, a template value that is not a dtype, int or bool.
            TypeError: A positional argument, an unknown or missing keyword, a value of the wrong
                type.
            KernelCompileError: The source does not compile (raised at eval).
        """
    def __repr__(self) -> str:
        ...
    def compile(self, input_dtypes: collections.abc.Sequence[kiln.core.Dtype], input_ndims: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], output_dtypes: collections.abc.Sequence[kiln.core.Dtype], *, template: typing.Any = None, target: str = 'sm_90') -> str:
        """
        Generates and compiles the kernel without running it, and returns the generated source.
        Needs no GPU: CI and users without one check kernels this way.

        Args:
            input_dtypes (list[Dtype]): The dtype of each input.
            input_ndims (list[int]): The number of dimensions of each input (0 for scalars).
            output_dtypes (list[Dtype]): The dtype of each output.
            template (list[tuple[str, Dtype | int | bool]] | dict, optional): Template arguments.
            target (str): A GPU architecture (``"sm_90"``, the default) or ``"cpu"``.

        Raises:
            KernelCompileError: The source does not compile.
        """
    @property
    def name(self) -> str:
        ...
def cuda_kernel(*, name: str, input_names: collections.abc.Sequence[str] | None = None, output_names: collections.abc.Sequence[str] | None = None, source: str, header: str = '', ensure_row_contiguous: bool = True, atomic_outputs: bool = False, shared_memory: typing.SupportsInt | typing.SupportsIndex = 0) -> CustomKernel:
    """
    A custom kernel from the body of a CUDA C++ kernel.

    The signature is generated as for ``metal_kernel`` (inputs ``const T*``, outputs ``T*``,
    ``<input>_shape``/``_strides``/``_ndim`` when mentioned, template parameters). The grid
    runs ``ceil(grid / threadgroup)`` blocks, every thread of which runs: the body checks its
    bounds. Element types are ``float16_t``, ``bfloat16_t``, ``float``, ``int32_t``, ...

    Args:
        name (str): The kernel's name.
        input_names (list[str], optional): Parameter names of the inputs.
        output_names (list[str], optional): Parameter names of the outputs.
        source (str): The body of the kernel.
        header (str): Code placed before the kernel.
        ensure_row_contiguous (bool): Copy inputs that are not row-contiguous. Default True.
        atomic_outputs (bool): Outputs are used with ``atomicAdd`` and friends. Default False.
        shared_memory (int): Bytes of dynamic shared memory (``extern __shared__``); above
            48 KB the kernel's limit is raised.

    Returns:
        CustomKernel: A callable; also ``compile(...)``.
    """
def metal_kernel(*, name: str, input_names: collections.abc.Sequence[str] | None = None, output_names: collections.abc.Sequence[str] | None = None, source: str, header: str = '', ensure_row_contiguous: bool = True, atomic_outputs: bool = False) -> CustomKernel:
    """
    A custom kernel from the body of a Metal Shading Language kernel, compiled for NVIDIA GPUs
    (and the CPU) through kiln's Metal compatibility layer.

    kiln generates the signature: the inputs (``const device T*``; 0-d inputs as ``const T&``),
    the outputs (``device T*``, or ``device atomic<T>*`` with ``atomic_outputs``), the
    ``<input>_shape``, ``<input>_strides`` and ``<input>_ndim`` the source mentions, the Metal
    attributes it uses (``thread_position_in_grid``, ...) and the template parameters of the
    call. MLX's utilities (``elem_to_loc``, ...) are available.

    Args:
        name (str): The kernel's name.
        input_names (list[str], optional): Parameter names of the inputs.
        output_names (list[str], optional): Parameter names of the outputs. Without names, the
            call passes inputs, output_shapes and output_dtypes as dicts (the older form).
        source (str): The body of the kernel.
        header (str): Code placed before the kernel (helpers, includes).
        ensure_row_contiguous (bool): Copy inputs that are not row-contiguous. Default True.
        atomic_outputs (bool): Outputs are ``device atomic<T>*``. Default False.

    Returns:
        CustomKernel: A callable; also ``compile(...)`` to check it without running it.

    Example:
        >>> source = '''
        ...     uint elem = thread_position_in_grid.x;
        ...     T tmp = inp[elem];
        ...     out[elem] = metal::exp(tmp);
        ... '''
        >>> kernel = mx.fast.metal_kernel(name="myexp", input_names=["inp"],
        ...                               output_names=["out"], source=source)
        >>> a = mx.random.normal(shape=(4, 16)).astype(mx.float16)
        >>> out = kernel(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1),
        ...              threadgroup=(256, 1, 1), output_shapes=[a.shape],
        ...              output_dtypes=[a.dtype])[0]
    """
