"""
Communication between processes: a global group of the launched processes and
collectives over it, as MLX's ``mlx.core.distributed``. GPU arrays communicate through
NCCL, CPU arrays through MPI (Open MPI); both libraries are loaded at run time. Launch
with ``python -m kiln.launch -n N script.py`` or ``mpirun``; see docs/distributed.md.
"""
from __future__ import annotations
import collections.abc
import kiln.core
import typing
__all__: list[str] = ['Group', 'all_gather', 'all_max', 'all_min', 'all_sum', 'grouped_all_mean', 'grouped_all_sum', 'init', 'is_available', 'recv', 'recv_like', 'send', 'sum_scatter']
class Group:
    """
    A group of processes that communicate. Obtained from :func:`init` or :meth:`split`.
    """
    def __repr__(self) -> str:
        ...
    def rank(self) -> int:
        """
        The rank of this process in the group.
        """
    def size(self) -> int:
        """
        The number of processes in the group.
        """
    def split(self, color: typing.SupportsInt | typing.SupportsIndex, key: typing.SupportsInt | typing.SupportsIndex = -1) -> Group:
        """
        Split the group into subgroups based on the provided color.

        Processes that use the same color go to the same group. The ``key`` argument defines
        the rank in the new group: the smaller the key the smaller the rank. If the key is
        negative, the rank in the current group is used. Every process of the group must call
        it.

        Args:
          color (int): A value to group processes into subgroups.
          key (int, optional): A key to optionally change the rank ordering of the processes.
        """
    @property
    def backend(self) -> str:
        """
        The engines the group holds: 'mpi', 'nccl', 'mpi+nccl' or 'singleton'.
        """
def _tcp_all_gather(payload: bytes) -> list:
    ...
def all_gather(x: kiln.core.array, /, *, group: Group | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Gather arrays from all processes: every rank's ``x`` (same shape on every rank)
    concatenated along axis 0 in rank order; scalars are stacked.

    Args:
      x (array): Input array.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: The concatenation of all ``x`` arrays.
    """
def all_max(x: kiln.core.array, /, *, group: Group | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    All reduce max: the elementwise maximum of ``x`` over the group (not for complex64).

    Args:
      x (array): Input array.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: The maximum of all ``x`` arrays.
    """
def all_min(x: kiln.core.array, /, *, group: Group | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    All reduce min: the elementwise minimum of ``x`` over the group (not for complex64).

    Args:
      x (array): Input array.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: The minimum of all ``x`` arrays.
    """
def all_sum(x: kiln.core.array, /, *, group: Group | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    All reduce sum: the sum of ``x`` over every process of the group, on every process.

    Args:
      x (array): Input array (any dtype; bool sums are logical or).
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device: a GPU stream uses NCCL, a CPU stream MPI.

    Returns:
      array: The sum of all ``x`` arrays.
    """
def grouped_all_mean(arrays: collections.abc.Sequence[kiln.core.array], /, *, group: Group | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> list[kiln.core.array]:
    """
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
    """
def grouped_all_sum(arrays: collections.abc.Sequence[kiln.core.array], /, *, group: Group | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> list[kiln.core.array]:
    """
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
    """
def init(strict: bool = False, backend: str = 'any') -> Group:
    """
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
    """
def is_available(backend: str = 'any') -> bool:
    """
    Check if a communication backend is available.

    Returns whether kiln can load the backend's library here (``"mpi"``: Open MPI's
    libmpi; ``"nccl"``: libnccl and a usable GPU; ``"any"``: either), not whether processes
    were launched. Use ``init(strict=True)`` for that.

    Args:
      backend (str, optional): ``"any"``, ``"mpi"`` or ``"nccl"``. Default: ``"any"``.
    """
def recv(shape: int | typing.Sequence[int], dtype: kiln.core.Dtype, src: typing.SupportsInt | typing.SupportsIndex, *, group: Group | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Recv an array with shape ``shape`` and dtype ``dtype`` from process with rank ``src``.

    Args:
      shape (Tuple[int]): The shape of the array we are receiving.
      dtype (Dtype): The data type of the array we are receiving.
      src (int): Rank of the source process in the group.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: The array that was received from ``src``.
    """
def recv_like(x: kiln.core.array, src: typing.SupportsInt | typing.SupportsIndex, *, group: Group | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Recv an array with shape and type like ``x`` from process with rank ``src``.

    Args:
      x (array): An array defining the shape and dtype of the array we are receiving.
      src (int): Rank of the source process in the group.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: The array that was received from ``src``.
    """
def send(x: kiln.core.array, dst: typing.SupportsInt | typing.SupportsIndex, *, group: Group | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Send an array from the current process to the process that has rank ``dst`` in the group.

    Args:
      x (array): Input array.
      dst (int): Rank of the destination process in the group.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: An array identical to ``x`` which when evaluated the send is performed.
    """
def sum_scatter(x: kiln.core.array, /, *, group: Group | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Sum ``x`` over the group and scatter the result along axis 0: rank ``r`` gets the
    ``r``-th of ``size`` equal blocks. The size of axis 0 must be divisible by the group size.

    Args:
      x (array): Input array.
      group (Group): The group of processes. Default: the global group.
      stream (Stream, optional): Stream or device.

    Returns:
      array: This rank's block of the sum.
    """
