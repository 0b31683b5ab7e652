"""kiln.utils tree functions: MLX's key formats, container types, is_leaf, errors."""

from collections import namedtuple

import numpy as np
import pytest

import kiln.core as mx
from kiln.utils import (
    tree_flatten,
    tree_map,
    tree_map_with_path,
    tree_merge,
    tree_reduce,
    tree_unflatten,
)

Point = namedtuple("Point", ["x", "y"])


def test_flatten_keys_and_order():
    tree = {"a": [1, {"b": 2, "c": (3, 4)}], "d": 5}
    assert tree_flatten(tree) == [
        ("a.0", 1),
        ("a.1.b", 2),
        ("a.1.c.0", 3),
        ("a.1.c.1", 4),
        ("d", 5),
    ]
    assert tree_flatten([[[0]]]) == [("0.0.0", 0)]
    assert tree_flatten(7) == [("", 7)]
    assert tree_flatten({}) == []
    assert tree_flatten([]) == []


def test_flatten_prefix_drops_first_character():
    assert tree_flatten([[[0]]], prefix=".hello") == [("hello.0.0.0", 0)]
    assert tree_flatten({"w": 1}, prefix="_model") == [("model.w", 1)]


def test_flatten_destination_dict_and_list():
    d = tree_flatten({"a": {"b": 1}, "c": [2]}, destination={})
    assert d == {"a.b": 1, "c.0": 2}
    existing = [("z", 0)]
    out = tree_flatten({"a": 1}, destination=existing)
    assert out is existing and out == [("z", 0), ("a", 1)]
    with pytest.raises(ValueError, match="(?i)destination"):
        tree_flatten({"a": 1}, destination=set())


def test_flatten_is_leaf():
    tree = {"a": [1, 2], "b": [3]}
    assert tree_flatten(tree, is_leaf=lambda x: isinstance(x, list)) == [("a", [1, 2]), ("b", [3])]
    assert tree_flatten(tree, is_leaf=lambda x: x is tree) == [("", tree)]


def test_flatten_deep_tree_has_no_recursion_limit():
    tree = 1
    for _ in range(5000):
        tree = [tree]
    ((key, value),) = tree_flatten(tree)
    assert value == 1 and key == ".".join(["0"] * 5000)


def test_unflatten_round_trip():
    tree = {"layers": [{"w": 1, "b": 2}, {"w": 3}], "head": {"x": 4}}
    assert tree_unflatten(tree_flatten(tree)) == tree
    assert tree_unflatten(tree_flatten(tree, destination={})) == tree
    assert tree_unflatten([("hello.world", 42)]) == {"hello": {"world": 42}}
    assert tree_unflatten([("", 5)]) == 5


def test_unflatten_lists_fill_gaps_and_sort():
    assert tree_unflatten([("2", "c"), ("0", "a")]) == ["a", {}, "c"]
    # "1" and "01" parse to the same integer: that level stays a dict.
    assert tree_unflatten([("1", "a"), ("01", "b")]) == {"1": "a", "01": "b"}
    assert tree_unflatten([("a.0", 1), ("a.1", 2)]) == {"a": [1, 2]}


def test_map_keeps_types_and_takes_rest():
    tree = {"a": [1, 2], "b": (3, Point(4, 5))}
    out = tree_map(lambda x: x * 10, tree)
    assert out == {"a": [10, 20], "b": (30, Point(40, 50))}
    assert isinstance(out["b"][1], Point)
    other = {"a": [100, 200], "b": (300, Point(400, 500))}
    assert tree_map(lambda x, y: x + y, tree, other) == {
        "a": [101, 202],
        "b": (303, Point(404, 505)),
    }
    # rest may hold subtrees where `tree` has leaves
    assert tree_map(lambda x, y: (x, y), {"a": 1}, {"a": [1, 2]}) == {"a": (1, [1, 2])}
    assert tree_map(len, {"a": [1, 2]}, is_leaf=lambda x: isinstance(x, list)) == {"a": 2}


def test_map_with_path():
    tree = {"model": [{"w": 0, "b": 1}, {"w": 2}]}
    paths = []
    out = tree_map_with_path(lambda p, v: paths.append(p) or p, tree)
    assert paths == ["model.0.w", "model.0.b", "model.1.w"]
    assert out == {"model": [{"w": "model.0.w", "b": "model.0.b"}, {"w": "model.1.w"}]}
    assert tree_map_with_path(lambda p, v: p, [5], path="root") == ["root.0"]
    assert tree_map_with_path(lambda p, v, w: v + w, {"a": 1}, {"a": 2}) == {"a": 3}


def test_reduce():
    tree = {"a": [1, 2, 3], "b": [4, 5]}
    assert tree_reduce(lambda acc, x: acc + x, tree, 0) == 15
    assert tree_reduce(lambda acc, x: acc * x, tree) == 120
    assert tree_reduce(lambda acc, x: acc + x, {}, 7) == 7
    assert tree_reduce(lambda acc, x: acc + x, {}) is None
    assert (
        tree_reduce(
            lambda acc, x: acc + len(x), {"a": [1, 2]}, 0, is_leaf=lambda x: isinstance(x, list)
        )
        == 2
    )


def test_reduce_arrays(rng):
    values = [rng.standard_normal(s) for s in [(3,), (2, 2)]]
    tree = {"a": mx.array(values[0]), "b": [mx.array(values[1])]}
    total = tree_reduce(lambda acc, x: acc + x.sum(), tree, 0.0)
    # float32 sums: the error is bounded by the magnitudes summed, not the (possibly ~0) total.
    exact = sum(v.astype(np.float32).astype(np.float64).sum() for v in values)
    bound = 1e-6 * sum(np.abs(v).sum() for v in values)
    assert abs(total.item() - exact) <= bound


def test_merge():
    a = {"x": [1, {}], "y": {"z": 2}}
    b = {"x": [{}, 3], "w": 4}
    assert tree_merge(a, b) == {"x": [1, 3], "y": {"z": 2}, "w": 4}
    assert tree_merge({}, {}) == {}
    assert tree_merge([], {"a": 1}) == {"a": 1}
    assert tree_merge(Point(1, None), Point(None, 2)) == Point(1, 2)
    assert tree_merge({"a": 1}, {"a": 2}, merge_fn=lambda x, y: x + y) == {"a": 3}
    with pytest.raises(ValueError, match="merge"):
        tree_merge({"a": 1}, {"a": 2})
    with pytest.raises(ValueError, match="dict with list"):
        tree_merge({}, [])


def test_arrays_are_leaves():
    a = mx.ones((2, 3))
    flat = tree_flatten({"w": a, "l": [a]})
    assert [k for k, _ in flat] == ["w", "l.0"]
    assert all(v is a for _, v in flat)
