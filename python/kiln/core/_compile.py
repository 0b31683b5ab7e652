"""``compile`` (MLX's ``mx.compile``): the Python face of kiln's C++ compile, which keeps the
compiled function's name, docstring and signature (``functools.wraps``) and binds as a
method like the function it wraps."""

import functools as _functools

from kiln import _core

disable_compile = _core.disable_compile
enable_compile = _core.enable_compile


def compile(fun=None, inputs=None, outputs=None, shapeless=False):
    """Returns a compiled version of ``fun``: it is traced once per structure, shapes and
    dtypes of its arguments (per structure and ranks with ``shapeless=True``); later calls
    replay the recorded graph, simplified and with its elementwise operations fused into
    generated kernels, without running ``fun``'s Python code.

    Args:
        fun (Callable): A function of arrays, trees (lists, tuples, dicts) of arrays and
            constants (None, bool, int, float, str), returning the same kinds of values.
            Constant arguments are part of the cache key: a new value traces again. Arrays
            the function reads from elsewhere (closures, globals) are frozen at trace time.
        inputs (list or dict, optional): State the function reads: a tree of arrays read at
            each call, e.g. a model's parameters or ``mx.random.state``.
        outputs (list or dict, optional): State the function updates: a tree of arrays whose
            leaves are replaced in place by their new values after each call.
        shapeless (bool): Trace once per ranks rather than shapes. Replays must suit the
            recorded operations (a reshape to a fixed size raises ValueError otherwise).

    Without ``fun``, returns a decorator taking it. ``disable_compile()`` or the environment
    variable ``KILN_DISABLE_COMPILE`` make compiled functions run uncompiled.

    Raises:
        ValueError: An argument or output that is not an array, a tree or a constant; a
            function that evaluates its inputs (``item``, ``eval``) or reads an argument
            through a closure while it is traced; captured outputs whose structure changed.

    Example:
        >>> @mx.compile
        ... def gelu(x):
        ...     return 0.5 * x * (1 + mx.tanh(0.7978845608 * (x + 0.044715 * x**3)))
    """
    if fun is None:
        return lambda f: compile(f, inputs=inputs, outputs=outputs, shapeless=shapeless)
    impl = _core._compile(fun, inputs, outputs, shapeless)

    @_functools.wraps(fun)
    def compiled(*args, **kwargs):
        return impl(*args, **kwargs)

    compiled._kiln_compiled = impl
    return compiled
