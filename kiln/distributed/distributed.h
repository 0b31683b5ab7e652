// kiln::distributed: communication groups and collectives, with the names of MLX's
// mlx.core.distributed (0.32).
//
// Collectives run on existing engines, loaded at run time so one build runs anywhere: NCCL
// for arrays on a GPU stream (libnccl.so.2, e.g. from PyTorch's nvidia-nccl wheel) and
// MPI (Open MPI's libmpi.so.40) for arrays on a CPU stream. Each collective is a primitive
// of the lazy graph, evaluated on the stream it is given, with vjp/jvp/vmap.
//
// Start-up (see docs/distributed.md): under `mpirun` the group is MPI's world (and NCCL's
// unique id travels through MPI); otherwise the environment variables KILN_RANK,
// KILN_WORLD_SIZE and KILN_COORDINATOR (host:port of rank 0), as `python -m kiln.launch`
// sets them, describe a TCP rendezvous that shares NCCL's unique id. With neither, `init`
// returns a group of one process, as MLX does.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln::distributed {

namespace detail {
class GroupImpl;
}

/** A set of processes that communicate; ranks are 0..size()-1. Cheap to copy. */
class Group {
 public:
  explicit Group(std::shared_ptr<detail::GroupImpl> impl) : impl_(std::move(impl)) {}

  /** This process's rank in the group. */
  int rank() const;
  /** The number of processes in the group. */
  int size() const;
  /**
   * Splits the group (collectively: every member must call it) into groups of the processes
   * passing the same `color`, ranked by `key` (by the current rank when key < 0), as
   * MPI_Comm_split. Throws std::invalid_argument ([split]) for a negative color.
   */
  Group split(int color, int key = -1) const;
  /** The backends this group holds, e.g. "mpi", "nccl", "mpi+nccl" or "singleton". */
  std::string backend() const;

  const std::shared_ptr<detail::GroupImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::GroupImpl> impl_;
};

/**
 * Whether kiln can load `backend` here: "mpi" (libmpi found), "nccl" (libnccl found and a
 * GPU usable), or "any" (either). Says nothing about whether processes were launched.
 * Throws std::invalid_argument ([distributed.is_available]) for an unknown name.
 */
bool is_available(const std::string& backend = "any");

/**
 * Initializes the global group once per process and returns it (later calls return the
 * same group). `backend`: "any" (MPI when launched by mpirun, NCCL when a GPU and libnccl
 * exist; both when possible), "mpi" or "nccl". Without a launch (no mpirun, no KILN_RANK)
 * the group has one process. When the backend cannot start: with `strict`, throws
 * std::runtime_error naming what is missing; otherwise returns a group of one process.
 */
Group init(bool strict = false, const std::string& backend = "any");

/** Sum of `x` over every process of `group` (default: the global group); same shape and
 * dtype on every rank. bool sums are logical or. Identity for a group of one. */
array all_sum(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/** all_sum of each array of `xs` (any shapes and dtypes) in one call of the backend: with
 * NCCL one group of all-reduces, which NCCL runs as a single kernel launch; with MPI one
 * reduction per array. Sums a bucket of gradients without concatenating them (kiln's
 * addition to MLX's API; nn.average_gradients uses it). Identity for a group of one. */
std::vector<array> grouped_all_sum(const std::vector<array>& xs,
                                   std::optional<Group> group = std::nullopt,
                                   StreamOrDevice s = {});
/** The mean of each array of `xs` over the group, in one call of the backend (two when
 * floating arrays and others mix): equal to
 * `grouped_all_sum(xs)[i] / size` (the same result dtypes: integers and bools give
 * float32). Floating arrays are divided inside the collective (NCCL's ncclAvg, which
 * scales before summing for floating types, so half-precision results can differ from
 * sum-then-divide in the last bit); others sum, then divide. Identity for a group of one
 * (up to that dtype promotion). kiln's addition, for nn.average_gradients. */
std::vector<array> grouped_all_mean(const std::vector<array>& xs,
                                    std::optional<Group> group = std::nullopt,
                                    StreamOrDevice s = {});
/** Elementwise maximum over the group (not for complex64). */
array all_max(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/** Elementwise minimum over the group (not for complex64). */
array all_min(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/** Concatenation of every rank's `x` along axis 0, in rank order (scalars are stacked):
 * shape (size * n0, ...) for x of shape (n0, ...). */
array all_gather(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/** Sum over the group, scattered along axis 0: rank r gets rows [r*n0/size, (r+1)*n0/size)
 * of the sum. Throws std::invalid_argument ([sum_scatter]) unless size divides n0. */
array sum_scatter(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/** Sends `x` to rank `dst` when evaluated; returns an array equal to `x`. Throws
 * std::invalid_argument ([send]) for dst outside [0, size) or equal to this rank, and for a
 * group of one. */
array send(const array& x, int dst, std::optional<Group> group = std::nullopt,
           StreamOrDevice s = {});
/** Receives an array of `shape` and `dtype` from rank `src` (the matching send). Errors
 * as send's ([recv]); a message of another size raises std::runtime_error. */
array recv(Shape shape, Dtype dtype, int src, std::optional<Group> group = std::nullopt,
           StreamOrDevice s = {});
/** recv with the shape and dtype of `x`. */
array recv_like(const array& x, int src, std::optional<Group> group = std::nullopt,
                StreamOrDevice s = {});

}  // namespace kiln::distributed
