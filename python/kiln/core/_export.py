"""Function export and import with MLX's API: ``export_function``, ``import_function``,
``exporter`` (and its ``FunctionExporter``). The graph work and the file format are in C++
(kiln/export.h); this module handles the argument forms MLX accepts."""

import os as _os

from kiln import _core

_FORMS = (
    "Inputs can be either a variable number of positional and keyword arrays or a single "
    "tuple and/or dictionary of arrays."
)


def _is_array(x):
    return isinstance(x, _core.array)


def _inputs(args, kwargs, tag):
    """Positional arrays and keyword arrays from any of MLX's accepted forms: ``*args,
    **kwargs`` of arrays, or a list/tuple of arrays and/or a dict of arrays."""

    def bad(what):
        raise ValueError(f"{tag} {_FORMS} Got {what}.")

    if len(args) == 0:
        pos, kw = [], kwargs
    elif _is_array(args[0]):
        pos, kw = list(args), kwargs
    elif len(args) <= 2 and not kwargs:
        if len(args) == 1 and isinstance(args[0], dict):
            pos, kw = [], args[0]
        else:
            if not isinstance(args[0], (list, tuple)):
                bad(f"a positional argument of type {type(args[0]).__name__}")
            pos, kw = list(args[0]), {}
            if len(args) == 2:
                if not isinstance(args[1], dict):
                    bad(f"a second argument of type {type(args[1]).__name__}")
                kw = args[1]
    else:
        bad(
            f"{len(args)} positional arguments starting with a {type(args[0]).__name__}"
        )
    for a in pos:
        if not _is_array(a):
            bad(f"a positional input of type {type(a).__name__}")
    for k, v in kw.items():
        if not isinstance(k, str) or not _is_array(v):
            bad(f"keyword input {k!r} of type {type(v).__name__}")
    return pos, dict(kw)


def _outputs(out):
    if _is_array(out):
        return [out]
    if isinstance(out, (list, tuple)) and all(_is_array(o) for o in out):
        return list(out)
    raise ValueError(
        "[export_function] The function must return an array or a flat list or tuple of "
        f"arrays; it returned {type(out).__name__}"
        + (
            f" holding {', '.join(sorted({type(o).__name__ for o in out}))}."
            if isinstance(out, (list, tuple))
            else "."
        )
    )


def _check_metadata(metadata):
    if metadata is not None and not isinstance(metadata, str):
        raise TypeError(
            f"[export_function] metadata must be a str or None, not {type(metadata).__name__}."
        )


class FunctionExporter:
    """A context managing class for exporting multiple traces of the same function to a
    file. Make an instance of this class by calling :func:`kiln.core.exporter`."""

    def __init__(self, file, fun, shapeless=False, metadata=None):
        _check_metadata(metadata)
        self._file = _core._ExportFile(
            _os.fspath(file), bool(shapeless), metadata or ""
        )
        self._fun = fun

    def _trace(self, args, kwargs):
        return _outputs(self._fun(*args, **kwargs))

    def __call__(self, *args, **kwargs):
        """Traces the function on these example inputs and appends the trace to the file."""
        if self._file is None:
            raise RuntimeError(
                "[export_function] The exporter is closed; it takes no more traces."
            )
        pos, kw = _inputs(args, kwargs, "[export_function]")
        self._file.add_trace(self._trace, pos, kw)

    def close(self):
        """Closes the file; later calls raise RuntimeError."""
        if self._file is not None:
            self._file.close()
        self._file = None
        self._fun = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def exporter(file, fun, *, shapeless=False, metadata=None):
    """Make a callable object to export multiple traces of a function to a file.

    Args:
        file (str): File path to export the function to.
        fun (Callable): A function of arrays returning an array or a list/tuple of arrays.
        shapeless (bool, optional): Whether or not the function allows inputs with variable
          shapes. Default: ``False``.
        metadata (str, optional): A string saved alongside the function (e.g. a JSON model
          configuration), read back with :func:`import_function`. Default: ``None``.

    Example:
        >>> with mx.exporter("fun.kilnfn", fun) as e:
        ...     e(mx.array(1))
        ...     e(mx.array(1), mx.array(2))
    """
    return FunctionExporter(file, fun, shapeless=shapeless, metadata=metadata)


def export_function(
    file_or_callback, fun, *args, shapeless=False, metadata=None, **kwargs
):
    """Export a kiln function.

    Example input arrays must be provided: variable ``*args`` and ``**kwargs``, or a tuple of
    arrays and/or a dictionary of string keys with array values. The function is traced on
    them and its graph written to the file (kiln's own versioned format), or shown to a
    callback.

    Args:
        file_or_callback (str or Callable): A file path, or a callback receiving one dict per
          part of the graph (``type``: ``inputs``, ``keyword_inputs``, ``constants``,
          ``primitive`` with ``name`` and ``arguments``, ``outputs``).
        fun (Callable): A function of arrays returning one or more arrays.
        *args (array): Example positional inputs.
        shapeless (bool, optional): Whether the function allows inputs with variable shapes.
        metadata (str, optional): A string saved with the function (files only).
        **kwargs (array): Example keyword inputs.

    Raises:
        ValueError: for inputs or outputs that are not arrays, a primitive that cannot be
          exported, or ``metadata`` with a callback.
        TypeError: if ``metadata`` is not a string.
    """
    _check_metadata(metadata)
    pos, kw = _inputs(args, kwargs, "[export_function]")
    if callable(file_or_callback) and not isinstance(file_or_callback, (str, bytes)):
        if metadata is not None:
            raise ValueError(
                "[export_function] metadata can only be saved to a file, not given to a callback."
            )

        def trace(a, k):
            return _outputs(fun(*a, **k))

        _core._export_callback(file_or_callback, trace, pos, kw, bool(shapeless))
        return
    path = _os.fspath(file_or_callback)
    e = FunctionExporter(path, fun, shapeless=shapeless, metadata=metadata)
    try:
        e._file.add_trace(e._trace, pos, kw)
    except BaseException:
        e.close()
        try:
            _os.remove(path)  # no half-written file
        except OSError:
            pass
        raise
    e.close()


def import_function(file, return_metadata=False):
    """Import a function from a file written by :func:`export_function` or
    :func:`exporter`.

    The imported function is called with ``*args`` and ``**kwargs`` or with a tuple of arrays
    and/or a dictionary of arrays, and always returns a tuple of arrays. It can be
    differentiated, vectorized and compiled like any kiln function.

    Args:
        file (str): The file path to import the function from.
        return_metadata (bool, optional): Also return the metadata string saved with the
          function. Default: ``False``.

    Returns:
        The function, or ``(function, metadata)`` with ``return_metadata``.

    Raises:
        RuntimeError: for a missing, truncated, corrupt or foreign file.
    """
    impl = _core._ImportedFunction(_os.fspath(file))

    def imported(*args, **kwargs):
        pos, kw = _inputs(args, kwargs, "[import_function]")
        return impl(pos, kw)

    imported.__doc__ = f"The function imported from {_os.fspath(file)}."
    if return_metadata:
        return imported, impl.metadata
    return imported
