"""
Fused operations and custom kernels written as source strings.
"""
from __future__ import annotations
import collections.abc
import kiln.core
import typing
__all__: list[str] = ['CustomKernel', 'KernelCompileError', 'cross_entropy', 'cuda_kernel', 'fused_rms_silu', 'global_norm', 'layer_norm', 'metal_kernel', 'precompiled_cuda_kernel', 'rms_norm', 'rope', 'scaled_dot_product_attention']
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
def _sdpa_backend() -> str:
    """
    The attention backend new GPU nodes take: 'kiln', 'cudnn' or 'auto' (internal).
    """
def _sdpa_cudnn_counts() -> dict:
    """
    How often the cuDNN attention path ran, and fell back to kiln's kernels (internal).
    """
def _sdpa_cudnn_status() -> str:
    """
    '' when the cuDNN attention path can run here, else why not (internal).
    """
def _set_sdpa_backend(name: str | None) -> None:
    """
    Overrides KILN_SDPA_BACKEND ('kiln', 'cudnn', 'auto'; None restores it) (internal).
    """
def cross_entropy(logits: kiln.core.array, targets: kiln.core.array, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Cross entropy loss with class indices as targets.

    Computes ``logsumexp(logits, axis=-1) - logits[..., target]`` in a fused kernel with
    accumulation in float32.

    Args:
        logits (array): The unnormalized logits. The loss is computed over the last axis.
        targets (array): Integer class indices with the shape of ``logits`` without its last
          axis, in ``[0, logits.shape[-1])`` (negative ones count from the end).

    Returns:
        array: The per-element loss in float32 (float64 for float64 logits), with the shape of
        ``targets``.
    """
def cuda_kernel(*, name: str, input_names: collections.abc.Sequence[str] | None = None, output_names: collections.abc.Sequence[str] | None = None, source: str, header: str = '', ensure_row_contiguous: bool = True, atomic_outputs: bool = False, shared_memory: typing.SupportsInt | typing.SupportsIndex = 0, compile_options: typing.Any = None) -> CustomKernel:
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
        compile_options (dict, optional): ``{"math_mode": ...}`` as for ``metal_kernel``.

    Returns:
        CustomKernel: A callable; also ``compile(...)``.
    """
def fused_rms_silu(x: kiln.core.array, weight: kiln.core.array | None, eps: typing.SupportsFloat | typing.SupportsIndex, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    RMS normalization followed by SiLU, in one pass: ``h * sigmoid(h)`` with
    ``h = rms_norm(x, weight, eps)``, accumulated in float32 and rounded once.

    Args:
        x (array): Input array (at least 1-d, floating).
        weight (array, optional): One-dimensional scale of ``x.shape[-1]`` elements, or
          ``None`` for no scaling.
        eps (float): A small additive constant for numerical stability.

    Returns:
        array: The activated array, of the promoted dtype of ``x`` and ``weight``.
    """
def global_norm(arrays: collections.abc.Sequence[kiln.core.array], *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    The global L2 norm of several arrays (a kiln addition to MLX's API).

    ``sqrt(sum(sum(square(x)) for x in arrays))``, as if the arrays were flattened and
    concatenated: the norm ``optimizers.clip_grad_norm`` clips by (optax's and TensorFlow's
    ``global_norm``). One pass over the arrays: on the GPU a launch per 160 arrays and one to
    finish, instead of a square and a reduction per array. Accumulated in float64 on both
    devices.

    Args:
        arrays (list[array]): Floating arrays of any shapes (empty ones add nothing).

    Returns:
        array: A 0-d float32 array (float64 when an input is float64). Differentiable: the
        gradient for each array is ``x / norm``.

    Raises:
        ValueError: an array is not floating.
    """
def layer_norm(x: kiln.core.array, weight: kiln.core.array | None, bias: kiln.core.array | None, eps: typing.SupportsFloat | typing.SupportsIndex, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Layer normalization over the last axis of ``x``:
    ``(x - mean) * rsqrt(var + eps) * weight + bias``, accumulated in float32.

    Args:
        x (array): Input array (at least 1-d, floating).
        weight (array, optional): One-dimensional scale of ``x.shape[-1]`` elements, or ``None``.
        bias (array, optional): One-dimensional offset of ``x.shape[-1]`` elements, or ``None``.
        eps (float): A small additive constant for numerical stability.

    Returns:
        array: The normalized array.
    """
def metal_kernel(*, name: str, input_names: collections.abc.Sequence[str] | None = None, output_names: collections.abc.Sequence[str] | None = None, source: str, header: str = '', ensure_row_contiguous: bool = True, atomic_outputs: bool = False, compile_options: typing.Any = None) -> CustomKernel:
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
        compile_options (dict, optional): ``{"math_mode": "safe" | "relaxed" | "fast"}``, as in
            MLX. ``"safe"`` (the default) keeps IEEE special values (``exp(-inf) == 0``) and
            correctly rounded division and square root; ``"relaxed"`` allows approximate
            division and square root and flushes subnormals; ``"fast"`` also uses the GPU's fast
            intrinsics (NVRTC ``--use_fast_math``; ``-ffast-math`` on the CPU, which assumes no
            infinities or NaN).

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
def precompiled_cuda_kernel(*, name: str, compiled_source: bytes, inputs: typing.Any, output_shapes: typing.Any, output_dtypes: typing.Any, scalars: typing.Any, grid: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], threadgroup: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], shared_memory: typing.SupportsInt | typing.SupportsIndex = 0, init_value: typing.SupportsFloat | typing.SupportsIndex | None = None, ensure_row_contiguous: bool = False, stream: None | kiln.core.Stream | kiln.core.Device = None) -> list[kiln.core.array]:
    """
    Runs a precompiled CUDA kernel from PTX, a cubin or a fatbin (from Triton, CuTe DSL, nvcc,
    ...), as MLX's ``precompiled_cuda_kernel``.

    The kernel ``name`` (its symbol in the image) takes a pointer per input, a pointer per
    output, then ``scalars`` in order; trailing pointer parameters it declares beyond those
    (Triton's scratch pointers) are passed as null. ``grid`` counts threads, as for
    ``metal_kernel``: ``ceil(grid / threadgroup)`` blocks of ``threadgroup`` threads run. GPU
    streams only.

    Args:
        name (str): The kernel's symbol.
        compiled_source (bytes): PTX text, a cubin or a fatbin.
        inputs (list[array | bool | int | float]): The inputs.
        output_shapes (list[Sequence[int]]): The shape of each output.
        output_dtypes (list[Dtype]): The dtype of each output.
        scalars (list[bool | int | float]): Scalar arguments (bool, int32, float32).
        grid (tuple[int, int, int]): Threads in the grid (not blocks).
        threadgroup (tuple[int, int, int]): Threads per block.
        shared_memory (int): Bytes of dynamic shared memory. Default 0.
        init_value (float, optional): Fills every output before the kernel runs.
        ensure_row_contiguous (bool): Copy inputs that are not row-contiguous. Default False.
        stream (Stream | Device, optional): A GPU stream.

    Returns:
        list[array]: The outputs.

    Raises:
        ValueError: The bytes are not PTX, a cubin or a fatbin; they hold no kernel ``name``;
            its parameters do not match the inputs, outputs and scalars; the image cannot run on
            the stream's GPU (a cubin for another architecture, PTX for a newer one); a CPU
            stream; bad shapes, grid or threadgroup.
        RuntimeError: The driver cannot load the image (at eval).
    """
def rms_norm(x: kiln.core.array, weight: kiln.core.array | None, eps: typing.SupportsFloat | typing.SupportsIndex, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Root Mean Square normalization (RMS norm) over the last axis of ``x``:
    ``x * rsqrt(mean(x**2, -1) + eps) * weight``, accumulated in float32.

    Args:
        x (array): Input array (at least 1-d, floating).
        weight (array, optional): One-dimensional scale of ``x.shape[-1]`` elements, or
          ``None`` for no scaling.
        eps (float): A small additive constant for numerical stability.

    Returns:
        array: The normalized array, of the promoted dtype of ``x`` and ``weight``.
    """
def rope(a: kiln.core.array, dims: typing.SupportsInt | typing.SupportsIndex, *, traditional: bool, base: typing.SupportsFloat | typing.SupportsIndex | None, scale: typing.SupportsFloat | typing.SupportsIndex, offset: typing.SupportsInt | typing.SupportsIndex | kiln.core.array, freqs: kiln.core.array | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Apply rotary positional encoding to the input.

    The input is expected to be at least 3D with shape ``(B, *, T, D)`` where ``B`` is the
    batch size, ``T`` the sequence length and ``D`` the feature dimension.

    Args:
        a (array): The input array.
        dims (int): The feature dimensions to be rotated. If the input feature is larger than
          dims then the rest is left unchanged.
        traditional (bool): If ``True`` rotate consecutive dimensions (2i, 2i + 1), else the
          halves (i, i + dims / 2).
        base (float, optional): The base of the angular frequencies. Exactly one of ``base``
          and ``freqs`` must be ``None``.
        scale (float): The scale of the positions.
        offset (int or array): The position offset to start at: an int, or an integer array
          holding one offset or one per batch element.
        freqs (array, optional): The frequencies (``dims // 2`` of them) to use instead of
          ``base``. Default: ``None``.

    Returns:
        array: The output array.
    """
def scaled_dot_product_attention(q: kiln.core.array, k: kiln.core.array, v: kiln.core.array, *, scale: typing.SupportsFloat | typing.SupportsIndex, mask: None | str | kiln.core.array = None, sinks: kiln.core.array | None = None, force_fused: bool = False, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Multi-head attention ``O = softmax(scale * Q @ K.T + mask, dim=-1) @ V``, fused
    (FlashAttention-2 on the GPU); the softmax runs in float32.

    Grouped- and multi-query attention take ``k`` and ``v`` with fewer heads, not tiled.

    Args:
        q (array): Queries with shape ``[B, N_q, T_q, D]``.
        k (array): Keys with shape ``[B, N_kv, T_kv, D]``.
        v (array): Values with shape ``[B, N_kv, T_kv, D_v]``.
        scale (float): Scale for queries (typically ``1.0 / sqrt(q.shape(-1))``).
        mask (str or array, optional): ``"causal"`` (lower-right aligned: the last query
          aligns with the last key), or a boolean or additive array of at most 4 dimensions
          broadcast-compatible with ``[B, N_q, T_q, T_kv]``.
        sinks (array, optional): Attention sinks, one logit per query head. Default: ``None``.
        force_fused (bool, optional): Accepted for MLX compatibility; kiln always runs the
          fused kernel.

    Returns:
        array: The output array ``[B, N_q, T_q, D_v]``.

    On the GPU, the environment variable ``KILN_SDPA_BACKEND`` picks the implementation when
    the call is made: ``kiln`` (kiln's kernels), ``cudnn`` (cuDNN's fused
    attention wherever it computes the call exactly: float16 or bfloat16, head dims multiples
    of 8 up to 128, no mask or ``"causal"`` with ``T_q <= T_kv``, no array mask, no sinks; kiln's
    kernels elsewhere and where cuDNN rejects the problem) or ``auto`` (the default, also when
    unset or empty: as ``cudnn``, but calls with at most 16 query rows per key/value head stay on
    kiln's decode kernels). Any other
    value raises ``ValueError``. The gradient follows the forward's implementation.
    """
