"""grad, value_and_grad, checkpoint and custom_function as Python objects over kiln's
compiled transformations. Made in Python, the transformed function is tracked by Python's
garbage collector: a function that refers back to its own transformed version (a
reference cycle, common in models that store their loss-and-grad function) is freed when
unreachable, as in MLX."""

import functools as _functools

from kiln import _core


def _wraps(fun, wrapper):
    try:
        _functools.update_wrapper(wrapper, fun)
    except (AttributeError, TypeError):  # callables without __name__ etc.
        pass
    return wrapper


def value_and_grad(fun, argnums=None, argnames=None):
    spec = _core._grad_spec(argnums, argnames, True)

    def value_and_grad_fn(*args, **kwargs):
        return _core._grad_call(fun, spec, True, args, kwargs)

    return _wraps(fun, value_and_grad_fn)


def grad(fun, argnums=None, argnames=None):
    spec = _core._grad_spec(argnums, argnames, False)

    def grad_fn(*args, **kwargs):
        return _core._grad_call(fun, spec, False, args, kwargs)

    return _wraps(fun, grad_fn)


def checkpoint(fun):
    def checkpointed(*args, **kwargs):
        return _core._checkpoint_call(fun, args, kwargs)

    return _wraps(fun, checkpointed)


class custom_function:
    def __init__(self, f):
        self._fun = f
        self._vjp = self._jvp = self._vmap = None
        _functools.update_wrapper(self, f, updated=())

    def __call__(self, *args, **kwargs):
        if self._vjp is None and self._jvp is None and self._vmap is None:
            return self._fun(*args, **kwargs)
        return _core._custom_function_call(
            self._fun, self._vjp, self._jvp, self._vmap, args, kwargs
        )

    def vjp(self, f_vjp):
        """Attaches the vjp rule (a decorator); returns this custom_function."""
        self._vjp = f_vjp
        return self

    def jvp(self, f_jvp):
        """Attaches the jvp rule (a decorator); returns this custom_function."""
        self._jvp = f_jvp
        return self

    def vmap(self, f_vmap):
        """Attaches the vmap rule (a decorator); returns this custom_function."""
        self._vmap = f_vmap
        return self


value_and_grad.__doc__ = _core.value_and_grad.__doc__
grad.__doc__ = _core.grad.__doc__
checkpoint.__doc__ = _core.checkpoint.__doc__
custom_function.__doc__ = _core.custom_function.__doc__
