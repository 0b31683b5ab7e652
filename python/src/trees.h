// Pytrees: nested lists, tuples and dicts whose leaves are arrays (or other values), as
// MLX's eval and the function transformations take them.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/array.h"

namespace py = pybind11;

namespace kiln::python {

/** The arrays among the leaves of `tree`, in depth-first order (dicts in insertion order).
 * Other leaves are skipped. */
std::vector<array> tree_arrays(py::handle tree);

/** The leaves of `tree`, which must all be arrays: ValueError "[op] <what> must be an array
 * or a tree (list, tuple, dict) of arrays; found a leaf of type T" otherwise. */
std::vector<array> tree_arrays_strict(py::handle tree, const char* op, const std::string& what);

/** `tree` with each array leaf replaced by `fn(leaf)` and other leaves kept. Lists stay
 * lists, tuples tuples (named tuples keep their type), dicts dicts. */
py::object tree_map_arrays(py::handle tree, const std::function<py::object(const array&)>& fn);

/** `tree` with its array leaves replaced, in order, by `arrays[next++]`. */
py::object tree_replace_arrays(py::handle tree, const std::vector<array>& arrays, size_t& next);

/**
 * Puts `arrays[next++]` in place of each array leaf of `tree`, modifying its lists and dicts
 * in place (tuples are rebuilt); returns the tree (the same object unless it is a tuple or
 * an array). Each new Python array and the one it replaced are appended to `tracers` and
 * `originals`.
 */
py::object tree_fill_inplace(py::handle tree, const std::vector<array>& arrays, size_t& next,
                             std::vector<py::object>& tracers, std::vector<py::object>& originals);

/** Puts `originals[i]` back wherever a list or dict inside `tree` still holds `tracers[i]`. */
void tree_restore(py::handle tree, const std::vector<py::object>& tracers,
                  const std::vector<py::object>& originals);

/**
 * One axis per array leaf of `tree` from `spec`, a prefix of the tree (as JAX's and MLX's
 * in_axes): an int or None applies to every array below it, a list, tuple or dict recurses
 * into the matching container. None gives nullopt. ValueError when the spec does not match.
 */
void tree_expand_axes(py::handle spec, py::handle tree, std::vector<std::optional<int>>& out,
                      const char* op);

}  // namespace kiln::python
