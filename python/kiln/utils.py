"""Functions over Python trees: nested lists, tuples and dicts whose leaves are arrays (or
anything else), as ``mlx.utils`` has them.

A tree's leaves are addressed by dotted paths: ``{"layers": [{"w": a}]}`` holds ``a`` at
``"layers.0.w"``. Lists and tuples are indexed by position, dicts by key; everything that is
not a list, tuple or dict is a leaf (unless an ``is_leaf`` predicate says otherwise).
"""

from collections import defaultdict
from itertools import zip_longest
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__all__ = [
    "tree_flatten",
    "tree_map",
    "tree_map_with_path",
    "tree_merge",
    "tree_reduce",
    "tree_unflatten",
]


def _rebuild(like, children):
    """A container of `like`'s type holding `children` (namedtuples take them as fields)."""
    if hasattr(like, "_fields"):
        return type(like)(*children)
    return type(like)(children)


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf: Optional[Callable] = None) -> Any:
    """A tree of the same structure as `tree` whose leaves are ``fn(leaf, *others)``.

    Args:
        fn: Called once per leaf of `tree`.
        tree: The tree that sets the structure.
        *rest: Trees with (at least) `tree`'s structure; their nodes at each leaf position of
            `tree` are passed to `fn` after the leaf (they may be subtrees there).
        is_leaf: Optional predicate marking extra nodes as leaves.

    Returns:
        The mapped tree; lists, tuples (namedtuples included) and dicts keep their types.
    """
    if is_leaf is not None and is_leaf(tree):
        return fn(tree, *rest)
    if isinstance(tree, (list, tuple)):
        return _rebuild(
            tree,
            [
                tree_map(fn, child, *(other[i] for other in rest), is_leaf=is_leaf)
                for i, child in enumerate(tree)
            ],
        )
    if isinstance(tree, dict):
        return {
            key: tree_map(fn, child, *(other[key] for other in rest), is_leaf=is_leaf)
            for key, child in tree.items()
        }
    return fn(tree, *rest)


def tree_map_with_path(
    fn: Callable,
    tree: Any,
    *rest: Any,
    is_leaf: Optional[Callable] = None,
    path: Optional[Any] = None,
) -> Any:
    """As :func:`tree_map`, with each leaf's dotted path passed to `fn` first:
    ``fn(path, leaf, *others)``.

    Args:
        path: A prefix for the paths (the root's path; ``None`` for none).
    """
    if is_leaf is not None and is_leaf(tree):
        return fn(path, tree, *rest)

    def child_path(key):
        return f"{path}.{key}" if path else f"{key}"

    if isinstance(tree, (list, tuple)):
        return _rebuild(
            tree,
            [
                tree_map_with_path(
                    fn, child, *(other[i] for other in rest), is_leaf=is_leaf, path=child_path(i)
                )
                for i, child in enumerate(tree)
            ],
        )
    if isinstance(tree, dict):
        return {
            key: tree_map_with_path(
                fn, child, *(other[key] for other in rest), is_leaf=is_leaf, path=child_path(key)
            )
            for key, child in tree.items()
        }
    return fn(path, tree, *rest)


def tree_flatten(
    tree: Any,
    prefix: str = "",
    is_leaf: Optional[Callable] = None,
    destination: Optional[Union[List[Tuple[str, Any]], Dict[str, Any]]] = None,
) -> Union[List[Tuple[str, Any]], Dict[str, Any]]:
    """The leaves of `tree` as ``(dotted path, leaf)`` pairs, in depth-first order.

    ``tree_flatten([[1], {"a": 2}])`` is ``[("0.0", 1), ("1.a", 2)]``; a lone leaf flattens to
    ``[("", leaf)]``.

    Args:
        tree: The tree.
        prefix: Prepended to every path; its first character is dropped (so ``".model"``
            gives paths ``"model.…"``).
        is_leaf: Optional predicate marking extra nodes as leaves.
        destination: A list to extend or a dict to update with the pairs (a new list when
            None).

    Returns:
        `destination`.

    Raises:
        ValueError: `destination` is neither a list, a dict nor None.
    """
    if destination is None:
        destination = []
    if isinstance(destination, list):
        add = destination.append
    elif isinstance(destination, dict):

        def add(pair):
            destination[pair[0]] = pair[1]

    else:
        raise ValueError(
            f"[tree_flatten] destination must be a list, a dict or None, not "
            f"{type(destination).__name__}"
        )

    # An explicit stack (children pushed in reverse) keeps depth-first order without
    # recursion, so very deep trees do not hit Python's recursion limit.
    stack = [(prefix, tree)]
    while stack:
        path, node = stack.pop()
        if is_leaf is not None and is_leaf(node):
            add((path[1:], node))
        elif isinstance(node, (list, tuple)):
            stack.extend((f"{path}.{i}", child) for i, child in reversed(list(enumerate(node))))
        elif isinstance(node, dict):
            stack.extend((f"{path}.{k}", child) for k, child in reversed(list(node.items())))
        else:
            add((path[1:], node))
    return destination


def tree_unflatten(tree: Union[List[Tuple[str, Any]], Dict[str, Any]]) -> Any:
    """The tree whose :func:`tree_flatten` is `tree` (a list of pairs or a dict).

    A level whose keys are all distinct integers becomes a list (positions without a value
    hold empty dicts); any other level becomes a dict. ``[("", leaf)]`` gives ``leaf``.
    """
    items = list(tree.items()) if isinstance(tree, dict) else list(tree)
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]

    groups = defaultdict(list)
    for path, value in items:
        head, _, tail = path.partition(".")
        groups[head].append((tail, value))

    try:
        positions = {int(head): head for head in groups}
    except ValueError:
        positions = None
    # "1" and "01" parse to one integer: such a level is a dict, not a list.
    if positions is not None and len(positions) == len(groups):
        result = []
        for index in sorted(positions):
            while len(result) < index:
                result.append({})
            result.append(tree_unflatten(groups[positions[index]]))
        return result
    return {head: tree_unflatten(children) for head, children in groups.items()}


def tree_reduce(
    fn: Callable, tree: Any, initializer: Any = None, is_leaf: Optional[Callable] = None
):
    """Folds the leaves of `tree` in depth-first order: ``acc = fn(acc, leaf)``.

    Args:
        fn: The reducer ``(accumulator, leaf) -> accumulator``.
        tree: The tree.
        initializer: The starting accumulator; the first leaf when None.
        is_leaf: Optional predicate marking extra nodes as leaves.

    Returns:
        The accumulator (`initializer` for a tree without leaves).
    """
    accumulator = initializer
    for _, leaf in tree_flatten(tree, is_leaf=is_leaf):
        accumulator = leaf if accumulator is None else fn(accumulator, leaf)
    return accumulator


def tree_merge(tree_a: Any, tree_b: Any, merge_fn: Optional[Callable] = None) -> Any:
    """The union of two trees, like a recursive ``dict.update``.

    Empty containers and None count as absent subtrees. Lists and tuples merge position by
    position, dicts key by key; where both trees hold a leaf, ``merge_fn(a, b)`` decides.

    Raises:
        ValueError: Both trees hold a leaf at one place and `merge_fn` is None, or two empty
            containers of different types meet.
    """

    def is_empty(node):
        return isinstance(node, (dict, list, tuple)) and len(node) == 0

    if is_empty(tree_a) and is_empty(tree_b):
        if type(tree_a) is not type(tree_b):
            raise ValueError(
                f"[tree_merge] Cannot merge {type(tree_a).__name__} with {type(tree_b).__name__}"
            )
        return type(tree_a)()
    if is_empty(tree_a):
        tree_a = None
    if is_empty(tree_b):
        tree_b = None
    if tree_a is None:
        return tree_b
    if tree_b is None:
        return tree_a

    if isinstance(tree_a, (list, tuple)) and isinstance(tree_b, (list, tuple)):
        return _rebuild(
            tree_a, [tree_merge(a, b, merge_fn) for a, b in zip_longest(tree_a, tree_b)]
        )
    if isinstance(tree_a, dict) and isinstance(tree_b, dict):
        merged = {}
        for key in list(tree_a) + [k for k in tree_b if k not in tree_a]:
            merged[key] = tree_merge(tree_a.get(key), tree_b.get(key), merge_fn)
        return merged
    if merge_fn is None:
        raise ValueError(
            "[tree_merge] Both trees hold a value at the same place and no merge_fn was given"
        )
    return merge_fn(tree_a, tree_b)
