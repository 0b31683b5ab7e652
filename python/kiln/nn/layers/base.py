"""``Module``: the base class of layers and models, as ``mlx.nn.Module``.

A module is a ``dict``: attributes holding arrays, dicts, lists or tuples are stored as its
items (so the module *is* its state tree), every other attribute is an ordinary Python
attribute. Parameters are the arrays reachable through items whose keys do not start with an
underscore; submodules are modules reachable the same way.
"""

from __future__ import annotations

import textwrap
from typing import Any, Callable, List, Optional, Tuple, Union

import kiln.core as mx
from kiln.utils import tree_flatten, tree_unflatten


def _is_container(value):
    return isinstance(value, (Module, dict, list))


class Module(dict):
    """Base class of neural network layers and models.

    Subclasses call ``super().__init__()`` first, then assign arrays and submodules as
    attributes (directly or inside lists and dicts); :meth:`parameters` collects the arrays,
    :meth:`update` replaces them, :meth:`freeze` excludes them from
    :meth:`trainable_parameters` (and so from :func:`kiln.nn.value_and_grad`).
    """

    __call__: Callable

    def __init__(self):
        self._no_grad = set()
        self._training = True

    # -- attribute storage -------------------------------------------------------------

    def __getattr__(self, key: str):
        # Reached only when ordinary lookup fails: the value is one of the dict's items.
        value = self.get(key, None)
        if value is not None:
            return value
        # Repeats the ordinary lookup so that its own AttributeError (for example one raised
        # inside a property) reaches the caller.
        return super().__getattribute__(key)

    def __setattr__(self, key: str, value: Any):
        if isinstance(value, (mx.array, dict, list, tuple)):
            # A plain attribute of that name would shadow the item: drop it.
            if key in self.__dict__:
                object.__delattr__(self, key)
            self[key] = value
        else:
            super().__setattr__(key, value)
            self.pop(key, None)

    def __delattr__(self, key: str):
        if self.get(key, None) is not None:
            del self[key]
        else:
            super().__delattr__(key)

    # -- state and mode -----------------------------------------------------------------

    @property
    def training(self) -> bool:
        """Whether the module is in training mode (see :meth:`train`)."""
        return self._training

    @property
    def state(self) -> Module:
        """The module itself, as the dict of everything stored in it (changes to it change
        the module)."""
        return self

    def _set_training_mode(self, mode: bool) -> None:
        self._training = mode

    def train(self, mode: bool = True) -> Module:
        """Sets training mode (`mode` True) or evaluation mode on this module and every
        submodule; layers such as ``Dropout`` and ``BatchNorm`` behave differently in each.

        Returns:
            The module.
        """
        self.apply_to_modules(lambda _, module: module._set_training_mode(mode))
        return self

    def eval(self) -> Module:
        """Sets evaluation mode (``train(False)``)."""
        return self.train(False)

    # -- printing -------------------------------------------------------------------------

    def _extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = tree_flatten(self.children(), is_leaf=self.is_module)
        lines = [f"{type(self).__name__}({self._extra_repr()}"]
        for name, child in children:
            lines.append(textwrap.indent(f"({name}): {child!r}", "  "))
        return "\n".join(lines) + ("\n)" if children else ")")

    # -- filters --------------------------------------------------------------------------

    @staticmethod
    def is_module(value) -> bool:
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module, key, value) -> bool:
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module, key, value) -> bool:
        return isinstance(value, (dict, list, mx.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module, key, value) -> bool:
        return Module.valid_parameter_filter(module, key, value) and key not in module._no_grad

    def filter_and_map(
        self,
        filter_fn: Callable[[Module, str, Any], bool],
        map_fn: Optional[Callable] = None,
        is_leaf_fn: Optional[Callable[[Module, str, Any], bool]] = None,
    ) -> dict:
        """The tree of this module's contents that `filter_fn` keeps, with leaves mapped.

        Args:
            filter_fn: ``(module, key, value) -> bool``; called for each item of every module
                and, for lists and dicts inside a module, with the dotted key of each element
                (``"layers.0"``). A dropped module item disappears; a dropped list or dict
                element becomes ``{}`` so positions are kept.
            map_fn: Applied to each leaf (identity by default).
            is_leaf_fn: ``(module, key, value) -> bool``; by default anything that is not a
                module, dict or list is a leaf.

        Returns:
            A dict of dicts and lists.
        """
        map_fn = map_fn or (lambda value: value)
        is_leaf_fn = is_leaf_fn or (lambda module, key, value: not _is_container(value))

        def visit(owner, key, value):
            if is_leaf_fn(owner, key, value):
                return map_fn(value)
            if isinstance(value, Module):
                return {k: visit(value, k, v) for k, v in value.items() if filter_fn(value, k, v)}
            if isinstance(value, dict):
                return {
                    k: visit(owner, f"{key}.{k}", v) if filter_fn(owner, f"{key}.{k}", v) else {}
                    for k, v in value.items()
                }
            if isinstance(value, list):
                return [
                    visit(owner, f"{key}.{i}", v) if filter_fn(owner, f"{key}.{i}", v) else {}
                    for i, v in enumerate(value)
                ]
            raise RuntimeError(
                f"[Module.filter_and_map] Unexpected {type(value).__name__} at '{key}': not a "
                "leaf and not a container"
            )

        try:
            return {k: visit(self, k, v) for k, v in self.items() if filter_fn(self, k, v)}
        finally:
            del visit  # self-recursive closure: free it (and self) without the cycle collector

    # -- trees of parameters and modules ----------------------------------------------------

    def parameters(self) -> dict:
        """All arrays of this module and its submodules, as a dict of dicts and lists."""
        return self.filter_and_map(self.valid_parameter_filter)

    def trainable_parameters(self) -> dict:
        """The arrays of :meth:`parameters` that are not frozen."""
        return self.filter_and_map(self.trainable_parameter_filter)

    def children(self) -> dict:
        """The direct submodules (inside lists and dicts too), as a dict of dicts and lists."""
        return self.filter_and_map(
            self.valid_child_filter, is_leaf_fn=lambda module, key, value: self.is_module(value)
        )

    def leaf_modules(self) -> dict:
        """The submodules that have no submodules of their own, as a tree."""

        def is_leaf_module(module, key, value):
            return self.is_module(value) and not tree_flatten(value.children())

        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=is_leaf_module)

    def update(self, parameters: dict, strict: bool = True) -> Module:
        """Replaces arrays of this module by those at the same places in `parameters` (a full
        or partial tree such as :meth:`parameters` returns).

        Args:
            parameters: A dict of dicts and lists of arrays.
            strict: When True, every key and list position of `parameters` must exist in the
                module and arrays may only be replaced by arrays.

        Returns:
            The module.

        Raises:
            ValueError: (strict) `parameters` names something the module does not have or
                puts a non-array where the module has an array.
        """

        def check_array(new_value):
            if strict and not isinstance(new_value, mx.array):
                raise ValueError(f"Received invalid type: {type(new_value).__name__}.")

        def assign(destination, source):
            if isinstance(source, dict):
                for key, new_value in source.items():
                    if key not in destination:
                        if strict:
                            raise ValueError(f'Module does not have parameter named "{key}".')
                        continue
                    if isinstance(destination[key], mx.array):
                        check_array(new_value)
                        destination[key] = new_value
                    else:
                        assign(destination[key], new_value)
            elif isinstance(source, list):
                for i, new_value in enumerate(source):
                    if i >= len(destination):
                        if strict:
                            raise ValueError(
                                f"List index {i} is out of bounds for destination of length "
                                f"{len(destination)}."
                            )
                        continue
                    if isinstance(destination[i], mx.array):
                        check_array(new_value)
                        destination[i] = new_value
                    else:
                        assign(destination[i], new_value)
            elif strict:
                raise ValueError(f"Received invalid type: {type(source).__name__}.")

        assign(self, parameters)
        return self

    def apply(
        self,
        map_fn: Callable[[mx.array], mx.array],
        filter_fn: Optional[Callable[[Module, str, Any], bool]] = None,
    ) -> Module:
        """Replaces every parameter (those `filter_fn` selects; all by default) by
        ``map_fn(parameter)``, e.g. ``model.apply(lambda p: p.astype(mx.float16))``.

        Returns:
            The module.
        """
        self.update(self.filter_and_map(filter_fn or Module.valid_parameter_filter, map_fn))
        return self

    def update_modules(self, modules: dict, strict: bool = True) -> Module:
        """Replaces submodules by those at the same places in `modules` (a full or partial
        tree such as :meth:`children` returns), e.g. to swap layers.

        Args:
            modules: A dict of dicts and lists of modules.
            strict: When True, every key and position of `modules` must exist and a module
                may only replace a module.

        Returns:
            The module.

        Raises:
            ValueError: (strict) `modules` names something this module does not have, or
                holds a non-module where this module has a module.
        """

        def place(destination, key, new_value):
            current = destination[key]
            if self.is_module(current) and self.is_module(new_value):
                destination[key] = new_value
            elif isinstance(current, (dict, list)):
                assign(current, new_value)
            elif strict and new_value != {}:
                raise ValueError(f"Received invalid type: {type(new_value).__name__}.")

        def assign(destination, source):
            if isinstance(source, dict):
                for key, new_value in source.items():
                    if key in destination:
                        place(destination, key, new_value)
                    elif strict:
                        raise ValueError(f'Module does not have sub-module named "{key}".')
            elif isinstance(source, list):
                for i, new_value in enumerate(source):
                    if i < len(destination):
                        place(destination, i, new_value)
                    elif strict:
                        raise ValueError(
                            f"List index {i} is out of bounds for destination of length "
                            f"{len(destination)}."
                        )
            elif strict:
                raise ValueError(f"Received invalid type: {type(source).__name__}.")

        try:
            assign(self, modules)
        finally:
            # place and assign refer to each other (and to self): clear them so the module is
            # freed by reference counting, without waiting for the cycle collector (MLX does).
            del place, assign
        return self

    def apply_to_modules(self, apply_fn: Callable[[str, Module], Any]) -> Module:
        """Calls ``apply_fn(path, module)`` for this module (path ``""``) and every
        submodule (dotted paths such as ``"layers.0.attention"``), parents before children.

        Returns:
            The module.
        """
        pending = [("", self)]
        while pending:
            path, module = pending.pop()
            apply_fn(path, module)
            pending.extend(
                tree_flatten(
                    module.children(), prefix=f".{path}" if path else "", is_leaf=self.is_module
                )
            )
        return self

    def modules(self) -> List[Module]:
        """This module and all its submodules."""
        found = []
        self.apply_to_modules(lambda _, module: found.append(module))
        return found

    def named_modules(self) -> List[Tuple[str, Module]]:
        """``(dotted path, module)`` for this module (path ``""``) and all its submodules."""
        found = []
        self.apply_to_modules(lambda path, module: found.append((path, module)))
        return found

    # -- freezing -------------------------------------------------------------------------

    def _validate_keys(self, keys, strict):
        keys = keys if isinstance(keys, list) else [keys]
        if strict:
            for key in keys:
                if key not in self:
                    raise KeyError(f"Module doesn't contain member {key}.")
        return keys

    def _validate_keys_recursive(self, keys):
        # A key such as "bias" need only exist somewhere in the model, not in every module.
        keys = keys if isinstance(keys, list) else [keys]
        modules = self.modules()
        for key in keys:
            if not any(key in module for module in modules):
                raise KeyError(f"Module doesn't contain member {key}.")

    def _set_frozen(self, frozen, recurse, keys, strict):
        def local(_, module):
            if frozen:
                names = keys
                if names is None:
                    own = module.filter_and_map(
                        lambda m, k, v: not self.is_module(v) and m.valid_parameter_filter(m, k, v)
                    )
                    names = [name for name, _ in tree_flatten(own)]
                module._no_grad.update(module._validate_keys(names, strict_here))
            elif keys is None:
                module._no_grad.clear()
            else:
                module._no_grad.difference_update(module._validate_keys(keys, strict_here))

        strict_here = strict
        if recurse:
            if strict and keys is not None:
                self._validate_keys_recursive(keys)
                strict_here = False
            self.apply_to_modules(local)
        else:
            local("", self)
        return self

    def freeze(
        self,
        *,
        recurse: bool = True,
        keys: Optional[Union[str, List[str]]] = None,
        strict: bool = False,
    ) -> Module:
        """Freezes parameters: they stay in :meth:`parameters` but leave
        :meth:`trainable_parameters`, so no gradients are computed for them. Idempotent.

        Args:
            recurse: Freeze submodules' parameters too.
            keys: Only these parameter names (e.g. ``"bias"``); all when None.
            strict: Raise if a key of `keys` does not exist (anywhere in the model when
                `recurse`).

        Returns:
            The module.

        Raises:
            KeyError: (strict) a key does not exist.
        """
        return self._set_frozen(True, recurse, keys, strict)

    def unfreeze(
        self,
        *,
        recurse: bool = True,
        keys: Optional[Union[str, List[str]]] = None,
        strict: bool = False,
    ) -> Module:
        """Undoes :meth:`freeze` (same arguments). Idempotent.

        Returns:
            The module.
        """
        return self._set_frozen(False, recurse, keys, strict)

    # -- weights files and dtypes -----------------------------------------------------------

    def load_weights(
        self,
        file_or_weights: Union[str, List[Tuple[str, mx.array]]],
        strict: bool = True,
    ) -> Module:
        """Loads parameters from a ``.npz`` or ``.safetensors`` file (read with ``mx.load``)
        or from a list of ``(dotted name, array)`` pairs.

        Args:
            file_or_weights: A path or a list of pairs.
            strict: When True the weights must match the model's parameters exactly: the
                same names, each an array of the same shape. When False, only the names the
                model has are loaded and shapes are not checked.

        Returns:
            The module.

        Raises:
            ValueError: (strict) names the model lacks, parameters without a weight, values
                that are not arrays or shapes that differ, each listed by name.
        """
        weights = file_or_weights
        if isinstance(weights, str):
            weights = list(mx.load(weights).items())

        if strict:
            given = dict(weights)
            expected = tree_flatten(self.parameters(), destination={})
            problems = []
            extra = sorted(given.keys() - expected.keys())
            if extra:
                problems.append(
                    f"Received {len(extra)} parameters not in model: \n" + ",\n".join(extra) + "."
                )
            missing = sorted(expected.keys() - given.keys())
            if missing:
                problems.append(
                    f"Missing {len(missing)} parameters: \n" + ",\n".join(missing) + "."
                )
            for name in sorted(expected.keys() & given.keys()):
                value = given[name]
                if not isinstance(value, mx.array):
                    problems.append(
                        f"Expected mx.array but received {type(value)} for parameter {name}"
                    )
                elif value.shape != expected[name].shape:
                    problems.append(
                        f"Expected shape {expected[name].shape} but received shape "
                        f"{value.shape} for parameter {name}"
                    )
            if problems:
                raise ValueError("[load_weights] " + "\n".join(problems))

        if len(weights) != 0:
            self.update(tree_unflatten(weights), strict=False)
        return self

    def save_weights(self, file: str):
        """Saves the parameters under their dotted names: ``.npz`` files with ``mx.savez``,
        ``.safetensors`` files with ``mx.save_safetensors``.

        Raises:
            ValueError: Another file extension.
        """
        flat = tree_flatten(self.parameters(), destination={})
        if file.endswith(".npz"):
            mx.savez(file, **flat)
        elif file.endswith(".safetensors"):
            mx.save_safetensors(file, flat)
        else:
            raise ValueError(
                f"[save_weights] Unsupported file extension for {file}. Use '.npz' or "
                "'.safetensors'."
            )

    def set_dtype(
        self,
        dtype: mx.Dtype,
        predicate: Optional[Callable[[mx.Dtype], bool]] = lambda dtype: mx.issubdtype(
            dtype, mx.floating
        ),
    ):
        """Casts the parameters whose dtype satisfies `predicate` (floating ones by default;
        all when None) to `dtype`."""
        predicate = predicate or (lambda _: True)
        self.apply(lambda p: p.astype(dtype) if predicate(p.dtype) else p)
