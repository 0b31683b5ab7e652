#include "trees.h"

#include "convert.h"
#include "random_state.h"
#include "kiln/utils.h"

namespace kiln::python {

namespace {

constexpr int kMaxDepth = 256;

void check_depth(int depth, const char* op) {
  if (depth > kMaxDepth) {
    throw std::invalid_argument(
        msg("[", op, "] Containers nested deeper than ", kMaxDepth, " levels (a cycle?)."));
  }
}

bool is_list_or_tuple(py::handle h) {
  return PyList_Check(h.ptr()) || PyTuple_Check(h.ptr());
}

template <typename Leaf>
void walk(py::handle h, const Leaf& leaf, int depth, const char* op) {
  check_depth(depth, op);
  if (is_list_or_tuple(h)) {
    for (auto item : py::reinterpret_borrow<py::sequence>(h)) walk(item, leaf, depth + 1, op);
  } else if (PyDict_Check(h.ptr())) {
    for (auto item : py::reinterpret_borrow<py::dict>(h)) walk(item.second, leaf, depth + 1, op);
  } else if (is_random_state(h)) {
    leaf(py::cast(thread_random_key()));  // holds the calling thread's key
  } else {
    leaf(h);
  }
}

// A tuple of the type of `like` holding `items`: named tuples are rebuilt through their
// constructor's fields, other tuple subclasses from one iterable, as tuple itself.
py::object rebuild_tuple(py::handle like, const py::list& items) {
  if (PyTuple_CheckExact(like.ptr())) return py::tuple(items);
  if (py::hasattr(like, "_fields")) return py::type::of(like)(*items);
  return py::type::of(like)(items);
}

py::object fill(py::handle h, const std::vector<array>& arrays, size_t& next,
                std::vector<py::object>& tracers, std::vector<py::object>& originals, int depth) {
  check_depth(depth, "tree");
  if (is_array(h)) {
    if (next >= arrays.size())
      throw std::invalid_argument("[tree] Too few arrays to fill the tree.");
    py::object t = py::cast(arrays[next++]);
    tracers.push_back(t);
    originals.push_back(py::reinterpret_borrow<py::object>(h));
    return t;
  }
  if (PyList_Check(h.ptr())) {
    auto l = py::reinterpret_borrow<py::list>(h);
    for (size_t i = 0; i < l.size(); ++i) {
      py::object item = l[i];
      py::object r = fill(item, arrays, next, tracers, originals, depth + 1);
      if (!r.is(item)) l[i] = r;
    }
    return l;
  }
  if (PyTuple_Check(h.ptr())) {
    py::list items;
    for (auto item : py::reinterpret_borrow<py::tuple>(h))
      items.append(fill(item, arrays, next, tracers, originals, depth + 1));
    return rebuild_tuple(h, items);
  }
  if (PyDict_Check(h.ptr())) {
    auto d = py::reinterpret_borrow<py::dict>(h);
    py::list keys(d.attr("keys")());
    for (auto k : keys) {
      py::object item = d[k];
      py::object r = fill(item, arrays, next, tracers, originals, depth + 1);
      if (!r.is(item)) d[k] = r;
    }
    return d;
  }
  return py::reinterpret_borrow<py::object>(h);
}

void restore(py::handle h, const std::vector<py::object>& tracers,
             const std::vector<py::object>& originals, int depth) {
  if (depth > kMaxDepth) return;
  auto original_of = [&](py::handle item) -> py::object {
    for (size_t i = 0; i < tracers.size(); ++i)
      if (tracers[i].is(item)) return originals[i];
    return py::object();
  };
  if (PyList_Check(h.ptr())) {
    auto l = py::reinterpret_borrow<py::list>(h);
    for (size_t i = 0; i < l.size(); ++i) {
      py::object item = l[i];
      if (py::object o = original_of(item)) {
        l[i] = o;
      } else {
        restore(item, tracers, originals, depth + 1);
      }
    }
  } else if (PyTuple_Check(h.ptr())) {
    for (auto item : py::reinterpret_borrow<py::tuple>(h))
      restore(item, tracers, originals, depth + 1);
  } else if (PyDict_Check(h.ptr())) {
    auto d = py::reinterpret_borrow<py::dict>(h);
    py::list keys(d.attr("keys")());
    for (auto k : keys) {
      py::object item = d[k];
      if (py::object o = original_of(item)) {
        d[k] = o;
      } else {
        restore(item, tracers, originals, depth + 1);
      }
    }
  }
}

py::object map(py::handle h, const std::function<py::object(const array&)>& fn, int depth) {
  check_depth(depth, "tree");
  if (is_array(h)) return fn(array_ref(h));
  if (PyList_Check(h.ptr())) {
    py::list out;
    for (auto item : py::reinterpret_borrow<py::list>(h)) out.append(map(item, fn, depth + 1));
    return out;
  }
  if (PyTuple_Check(h.ptr())) {
    py::list items;
    for (auto item : py::reinterpret_borrow<py::tuple>(h)) items.append(map(item, fn, depth + 1));
    return rebuild_tuple(h, items);
  }
  if (PyDict_Check(h.ptr())) {
    py::dict out;
    for (auto item : py::reinterpret_borrow<py::dict>(h))
      out[item.first] = map(item.second, fn, depth + 1);
    return out;
  }
  return py::reinterpret_borrow<py::object>(h);
}

void expand(py::handle spec, py::handle tree, std::vector<std::optional<int>>& out, const char* op,
            int depth) {
  check_depth(depth, op);
  if (spec.is_none() || PyLong_Check(spec.ptr())) {
    std::optional<int> ax;
    if (!spec.is_none()) ax = spec.cast<int>();
    walk(
        tree,
        [&](py::handle leaf) {
          if (is_array(leaf)) out.push_back(ax);
        },
        depth, op);
    return;
  }
  if (is_list_or_tuple(spec)) {
    auto s = py::reinterpret_borrow<py::sequence>(spec);
    if (!is_list_or_tuple(tree) || py::len(tree) != s.size()) {
      // The tree's type and length only: its arrays may be traced (no repr).
      throw std::invalid_argument(
          msg("[", op, "] The axes spec ", py::repr(spec).cast<std::string>(),
              " does not match the structure of the arguments (a ", Py_TYPE(tree.ptr())->tp_name,
              is_list_or_tuple(tree) ? msg(" of length ", py::len(tree)) : std::string(), ")."));
    }
    auto t = py::reinterpret_borrow<py::sequence>(tree);
    for (size_t i = 0; i < s.size(); ++i) expand(s[i], t[i], out, op, depth + 1);
    return;
  }
  if (PyDict_Check(spec.ptr())) {
    if (!PyDict_Check(tree.ptr())) {
      throw std::invalid_argument(msg("[", op, "] A dict axes spec needs a dict argument; got ",
                                      Py_TYPE(tree.ptr())->tp_name, "."));
    }
    auto s = py::reinterpret_borrow<py::dict>(spec);
    for (auto item : py::reinterpret_borrow<py::dict>(tree)) {
      if (!s.contains(item.first)) {
        throw std::invalid_argument(msg("[", op, "] The axes spec has no entry for key ",
                                        py::repr(item.first).cast<std::string>(), "."));
      }
      expand(s[item.first], item.second, out, op, depth + 1);
    }
    return;
  }
  throw std::invalid_argument(msg("[", op,
                                  "] Axes must be ints, None, or lists, tuples and dicts of "
                                  "them; got ",
                                  Py_TYPE(spec.ptr())->tp_name, "."));
}

}  // namespace

std::vector<array> tree_arrays(py::handle tree) {
  std::vector<array> out;
  walk(
      tree,
      [&](py::handle leaf) {
        if (is_array(leaf)) out.push_back(array_ref(leaf));
      },
      0, "tree");
  return out;
}

std::vector<array> tree_arrays_strict(py::handle tree, const char* op, const std::string& what) {
  std::vector<array> out;
  walk(
      tree,
      [&](py::handle leaf) {
        if (!is_array(leaf)) {
          throw std::invalid_argument(msg("[", op, "] ", what,
                                          " must be an array or a tree (list, tuple, "
                                          "dict) of arrays; found a leaf of type ",
                                          Py_TYPE(leaf.ptr())->tp_name, "."));
        }
        out.push_back(array_ref(leaf));
      },
      0, op);
  return out;
}

py::object tree_map_arrays(py::handle tree, const std::function<py::object(const array&)>& fn) {
  return map(tree, fn, 0);
}

py::object tree_replace_arrays(py::handle tree, const std::vector<array>& arrays, size_t& next) {
  return map(
      tree,
      [&](const array&) -> py::object {
        if (next >= arrays.size())
          throw std::invalid_argument("[tree] Too few arrays to rebuild the tree.");
        return py::cast(arrays[next++]);
      },
      0);
}

py::object tree_fill_inplace(py::handle tree, const std::vector<array>& arrays, size_t& next,
                             std::vector<py::object>& tracers, std::vector<py::object>& originals) {
  return fill(tree, arrays, next, tracers, originals, 0);
}

void tree_restore(py::handle tree, const std::vector<py::object>& tracers,
                  const std::vector<py::object>& originals) {
  restore(tree, tracers, originals, 0);
}

void tree_expand_axes(py::handle spec, py::handle tree, std::vector<std::optional<int>>& out,
                      const char* op) {
  expand(spec, tree, out, op, 0);
}

}  // namespace kiln::python
