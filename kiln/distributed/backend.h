// The engines behind kiln::distributed (internal): MPI for CPU streams (mpi.cpp), NCCL for
// GPU streams (backend/cuda/distributed.cpp), the TCP rendezvous that shares NCCL's unique
// id when there is no mpirun (rendezvous.cpp), and the group that holds them.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/distributed/distributed.h"

namespace kiln::distributed::detail {

enum class ReduceOp { sum, max, min };
const char* reduce_op_name(ReduceOp op);

/** An MPI communicator (Open MPI's libmpi, dlopen'ed). Calls block the calling thread. */
class MpiComm {
 public:
  virtual ~MpiComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::shared_ptr<MpiComm> split(int color, int key) = 0;

  /** Throws std::invalid_argument tagged `[op]` naming every rank's shape and dtype when
   * they differ across the ranks (`same_shape`), or when only the dtype differs. */
  virtual void check_consistent(const char* op, const Shape& shape, Dtype dtype,
                                bool same_shape) = 0;
  virtual void all_reduce(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) = 0;
  virtual void all_gather(const void* in, void* out, size_t nbytes) = 0;
  virtual void reduce_scatter(const void* in, void* out, size_t count_per_rank, Dtype dtype) = 0;
  virtual void send(const void* data, size_t nbytes, int dst) = 0;
  virtual void recv(void* data, size_t nbytes, int src) = 0;
  /** Broadcasts `bytes` from rank 0 (resized on the others). */
  virtual void broadcast(std::string& bytes) = 0;
};

/** Whether libmpi can be loaded; else `why` says what was tried. */
bool mpi_available(std::string* why = nullptr);
/** Whether this process was started by mpirun (Open MPI's environment). */
bool launched_by_mpirun();
/** MPI_COMM_WORLD, initializing MPI (once; finalized at exit). Throws std::runtime_error
 * naming the library when it is missing. */
std::shared_ptr<MpiComm> mpi_world();

/** An NCCL communicator bound to one GPU. */
class GpuComm {
 public:
  virtual ~GpuComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::shared_ptr<GpuComm> split(int color, int key) = 0;
};

/** Whether NCCL can be loaded and a GPU is usable; else `why` says what is missing. */
bool nccl_available(std::string* why = nullptr);
/**
 * Creates the NCCL communicator of `rank` among `size` on the default GPU. `share_id` is
 * called on every rank with rank 0's unique id (128 bytes; empty elsewhere) and must return
 * rank 0's id (through MPI or the TCP rendezvous).
 */
std::shared_ptr<GpuComm> nccl_create(
    int rank, int size, const std::function<std::string(const std::string&)>& share_id);

/** Where the processes of a launch without mpirun meet (KILN_* or torchrun's variables). */
struct LaunchEnv {
  int rank = 0;
  int size = 1;
  std::string host;  // of rank 0's listener
  int port = 0;
  double timeout_s = 300;
};
/** The launch described by the environment, if any: KILN_RANK, KILN_WORLD_SIZE,
 * KILN_COORDINATOR=host:port (else RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), and
 * KILN_RENDEZVOUS_TIMEOUT (seconds). Throws std::invalid_argument for malformed values. */
std::optional<LaunchEnv> launch_env();
/**
 * Every rank's `payload` in rank order, exchanged over TCP through rank 0, which listens on
 * env.port. Bounded by env.timeout_s; throws std::runtime_error naming the ranks missing.
 */
std::vector<std::string> tcp_all_gather(const LaunchEnv& env, const std::string& payload);

class GroupImpl {
 public:
  int rank = 0;
  int size = 1;
  std::shared_ptr<MpiComm> mpi;   // CPU streams
  std::shared_ptr<GpuComm> nccl;  // GPU streams
};

}  // namespace kiln::distributed::detail
