// kiln.core.distributed: groups and collectives (kiln/distributed/distributed.h), with the
// names and arguments of MLX's mlx.core.distributed.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings.h"
#include "helpers.h"
#include "kiln/distributed/backend.h"
#include "kiln/distributed/distributed.h"

namespace kiln::python {

namespace dist = kiln::distributed;

void init_distributed(py::module_& parent) {
  auto m = parent.def_submodule("distributed", R"doc(
    Communication between processes: a global group of the launched processes and
    collectives over it, as MLX's ``mlx.core.distributed``. GPU arrays communicate through
    NCCL, CPU arrays through MPI (Open MPI); both libraries are loaded at run time. Launch
    with ``python -m kiln.launch -n N script.py`` or ``mpirun``; see docs/distributed.md.
  )doc");

  py::class_<dist::Group>(m, "Group", R"doc(
    A group of processes that communicate. Obtained from :func:`init` or :meth:`split`.
  )doc")
      .def("rank", &dist::Group::rank, "The rank of this process in the group.")
      .def("size", &dist::Group::size, "The number of processes in the group.")
      .def("split", &dist::Group::split, py::arg("color"), py::arg("key") = -1,
           py::call_guard<py::gil_scoped_release>(), R"doc(
    Split the group into subgroups based on the provided color.

    Processes that use the same color go to the same group. The ``key`` argument defines
    the rank in the new group: the smaller the key the smaller the rank. If the key is
    negative, the rank in the current group is used. Every process of the group must call
    it.

    Args:
      color (int): A value to group processes into subgroups.
      key (int, optional): A key to optionally change the rank ordering of the processes.
  )doc")
      .def_property_readonly(
          "backend", &dist::Group::backend,
          "The engines the group holds: 'mpi', 'nccl', 'mpi+nccl' or 'singleton'.")
      .def("__repr__", [](const dist::Group& g) {
        return "Group(rank=" + std::to_string(g.rank()) + ", size=" + std::to_string(g.size()) +
               ", backend=" + g.backend() + ")";
      });

  m.def("is_available", &dist::is_available, py::arg("backend") = "any", R"doc(
    Check if a communication backend is available.

    Returns whether kiln can load the backend's library here (``"mpi"``: Open MPI's
    libmpi; ``"nccl"``: libnccl and a usable GPU; ``"any"``: either), not whether processes
    were launched. Use ``init(strict=True)`` for that.

    Args:
      backend (str, optional): ``"any"``, ``"mpi"`` or ``"nccl"``. Default: ``"any"``.
  )doc");

  m.def(
      "init",
      [](bool strict, const std::string& backend) {
        dist::Group g = [&] {
          py::gil_scoped_release release;
          return dist::init(strict, backend);
        }();
        // An uncaught exception must end a rank without waiting for the others (MPI_Finalize).
        if (g.size() > 1)
          py::module_::import("kiln.core._distributed").attr("install_abort_hook")();
        return g;
      },
      py::arg("strict") = false, py::arg("backend") = "any", R"doc(
    Initialize the communication backend and create the global communication group.

    Under ``mpirun`` the group is MPI's world (with an NCCL communicator too when a GPU and
    NCCL exist); under ``python -m kiln.launch`` (or with ``KILN_RANK``,
    ``KILN_WORLD_SIZE`` and ``KILN_COORDINATOR`` set) NCCL's unique id is shared through a
    TCP rendezvous at the coordinator. Without a launch the group has one process.

    Args:
      strict (bool, optional): If ``False``, return a group of one process when the
        backend cannot start; otherwise raise a RuntimeError. Default: ``False``.
      backend (str, optional): ``"any"``, ``"mpi"`` or ``"nccl"``. Default: ``"any"``.

    Returns:
      Group: The group of all the launched processes.
  )doc");

  auto group = py::arg("group") = py::none();
  auto stream = py::arg("stream") = py::none();

  m.def("all_sum", &dist::all_sum, py::arg("x"), py::pos_only(), py::kw_only(), group, stream,
        R"doc(
    All reduce sum: the sum of ``x`` over every process of the group, on every process.

    Args:
      x (array): Input array (any dtype; bool sums are logical or).
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device: a GPU stream uses NCCL, a CPU stream MPI.

    Returns:
      array: The sum of all ``x`` arrays.
  )doc");
  m.def("grouped_all_sum", &dist::grouped_all_sum, py::arg("arrays"), py::pos_only(), py::kw_only(),
        group, stream,
        R"doc(
    The ``all_sum`` of each array in one call of the backend: with NCCL, one group of
    all-reduces that NCCL runs as a single kernel launch; with MPI, one reduction per array.
    A kiln addition to MLX's API, for buckets of gradients (``nn.average_gradients``): no
    concatenation into one buffer and no split afterwards.

    Args:
      arrays (list[array]): The arrays (any shapes and dtypes; bool sums are logical or).
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device: a GPU stream uses NCCL, a CPU stream MPI.

    Returns:
      list[array]: The sums, in the order of ``arrays``.
  )doc");
  m.def("grouped_all_mean", &dist::grouped_all_mean, py::arg("arrays"), py::pos_only(),
        py::kw_only(), group, stream,
        R"doc(
    The mean of each array over the group, in one call of the backend: equal to
    ``[s / group.size() for s in grouped_all_sum(arrays)]``, with the same result dtypes
    (integer and bool arrays give float32). Floating arrays are divided inside the
    collective (NCCL's ``ncclAvg``: one launch and no separate divide per array); NCCL
    scales before it sums, so half-precision results can differ from sum-then-divide in
    the last bit. A kiln addition to MLX's API, used by ``nn.average_gradients``.

    Args:
      arrays (list[array]): The arrays (any shapes and dtypes).
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device: a GPU stream uses NCCL, a CPU stream MPI.

    Returns:
      list[array]: The means, in the order of ``arrays``.
  )doc");
  m.def("all_max", &dist::all_max, py::arg("x"), py::pos_only(), py::kw_only(), group, stream,
        R"doc(
    All reduce max: the elementwise maximum of ``x`` over the group (not for complex64).

    Args:
      x (array): Input array.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: The maximum of all ``x`` arrays.
  )doc");
  m.def("all_min", &dist::all_min, py::arg("x"), py::pos_only(), py::kw_only(), group, stream,
        R"doc(
    All reduce min: the elementwise minimum of ``x`` over the group (not for complex64).

    Args:
      x (array): Input array.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: The minimum of all ``x`` arrays.
  )doc");
  m.def("all_gather", &dist::all_gather, py::arg("x"), py::pos_only(), py::kw_only(), group, stream,
        R"doc(
    Gather arrays from all processes: every rank's ``x`` (same shape on every rank)
    concatenated along axis 0 in rank order; scalars are stacked.

    Args:
      x (array): Input array.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: The concatenation of all ``x`` arrays.
  )doc");
  m.def("sum_scatter", &dist::sum_scatter, py::arg("x"), py::pos_only(), py::kw_only(), group,
        stream,
        R"doc(
    Sum ``x`` over the group and scatter the result along axis 0: rank ``r`` gets the
    ``r``-th of ``size`` equal blocks. The size of axis 0 must be divisible by the group size.

    Args:
      x (array): Input array.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: This rank's block of the sum.
  )doc");
  m.def("send", &dist::send, py::arg("x"), py::arg("dst"), py::kw_only(), group, stream, R"doc(
    Send an array from the current process to the process that has rank ``dst`` in the group.

    Args:
      x (array): Input array.
      dst (int): Rank of the destination process in the group.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: An array identical to ``x`` which when evaluated the send is performed.
  )doc");
  m.def(
      "recv",
      [](const ShapeArg& shape, Dtype dtype, int src, std::optional<dist::Group> g,
         StreamOrDevice s) { return dist::recv(to_shape(shape), dtype, src, std::move(g), s); },
      py::arg("shape"), py::arg("dtype"), py::arg("src"), py::kw_only(), group, stream, R"doc(
    Recv an array with shape ``shape`` and dtype ``dtype`` from process with rank ``src``.

    Args:
      shape (Tuple[int]): The shape of the array we are receiving.
      dtype (Dtype): The data type of the array we are receiving.
      src (int): Rank of the source process in the group.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: The array that was received from ``src``.
  )doc");
  // For the tests of the launcher: the TCP rendezvous that shares NCCL's id, on bytes.
  m.def(
      "_tcp_all_gather",
      [](const py::bytes& payload) {
        auto env = dist::detail::launch_env();
        if (!env) throw std::runtime_error("[distributed] No launch: KILN_RANK is not set.");
        std::string mine = payload;
        std::vector<std::string> all;
        {
          py::gil_scoped_release release;
          all = dist::detail::tcp_all_gather(*env, mine);
        }
        py::list out;
        for (auto& s : all) out.append(py::bytes(s));
        return out;
      },
      py::arg("payload"));
  m.def("recv_like", &dist::recv_like, py::arg("x"), py::arg("src"), py::kw_only(), group, stream,
        R"doc(
    Recv an array with shape and type like ``x`` from process with rank ``src``.

    Args:
      x (array): An array defining the shape and dtype of the array we are receiving.
      src (int): Rank of the source process in the group.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: The array that was received from ``src``.
  )doc");
}

}  // namespace kiln::python
