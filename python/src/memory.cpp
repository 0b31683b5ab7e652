// Memory statistics and limits (MLX names): get_active_memory, get_peak_memory,
// reset_peak_memory, get_cache_memory, set_memory_limit, get_memory_limit,
// set_cache_limit, clear_cache. Each applies to the default device unless `device` is given.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "bindings.h"
#include "kiln/allocator.h"
#include "kiln/device.h"

namespace kiln::python {

namespace {
Device or_default(const std::optional<Device>& d) {
  return d ? *d : default_device();
}
}  // namespace

void init_memory(py::module_& m) {
  auto dev = py::arg("device") = py::none();
  m.def(
      "get_active_memory", [](std::optional<Device> d) { return get_active_memory(or_default(d)); },
      py::kw_only(), dev, R"doc(
    Bytes held by live arrays on the device (the default device unless ``device`` is given).
  )doc");
  m.def(
      "get_peak_memory", [](std::optional<Device> d) { return get_peak_memory(or_default(d)); },
      py::kw_only(), dev, R"doc(
    The largest active memory, in bytes, since the start or the last :func:`reset_peak_memory`.
  )doc");
  m.def(
      "reset_peak_memory", [](std::optional<Device> d) { reset_peak_memory(or_default(d)); },
      py::kw_only(), dev, "Resets the peak memory to the current active memory.");
  m.def(
      "get_cache_memory", [](std::optional<Device> d) { return get_cache_memory(or_default(d)); },
      py::kw_only(), dev, R"doc(
    Bytes of freed buffers the allocator keeps for reuse.
  )doc");
  m.def(
      "set_memory_limit",
      [](size_t limit, std::optional<Device> d) { return set_memory_limit(or_default(d), limit); },
      py::arg("limit"), py::kw_only(), dev, R"doc(
    Sets the memory limit in bytes and returns the previous one. An allocation beyond the
    limit first frees the cache, then raises RuntimeError.
  )doc");
  m.def(
      "get_memory_limit", [](std::optional<Device> d) { return get_memory_limit(or_default(d)); },
      py::kw_only(), dev, "The memory limit in bytes.");
  m.def(
      "set_cache_limit",
      [](size_t limit, std::optional<Device> d) { return set_cache_limit(or_default(d), limit); },
      py::arg("limit"), py::kw_only(), dev, R"doc(
    Sets the most bytes the allocator keeps cached (0 disables the cache) and returns the
    previous limit.
  )doc");
  m.def(
      "clear_cache", [](std::optional<Device> d) { clear_cache(or_default(d)); }, py::kw_only(),
      dev, "Frees the allocator's cached buffers.");
}

}  // namespace kiln::python
