// Groups and start-up of kiln::distributed: which engines a launch can use, and the global
// group (MPI's world under mpirun, NCCL over the TCP rendezvous otherwise, or one process).
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "kiln/distributed/backend.h"
#include "kiln/utils.h"

namespace kiln::distributed {

using detail::GroupImpl;

int Group::rank() const {
  return impl_->rank;
}
int Group::size() const {
  return impl_->size;
}

std::string Group::backend() const {
  std::string s;
  if (impl_->mpi) s = "mpi";
  if (impl_->nccl) s += s.empty() ? "nccl" : "+nccl";
  return s.empty() ? "singleton" : s;
}

Group Group::split(int color, int key) const {
  if (color < 0) {
    throw std::invalid_argument(msg("[split] The color must be non-negative, got ", color, "."));
  }
  if (!impl_->mpi && !impl_->nccl) {
    if (impl_->size == 1) {
      auto g = std::make_shared<GroupImpl>();
      return Group(g);
    }
    throw std::runtime_error("[split] The group has no backend.");
  }
  auto g = std::make_shared<GroupImpl>();
  const int k = key < 0 ? impl_->rank : key;
  if (impl_->mpi) {
    g->mpi = impl_->mpi->split(color, k);
    g->rank = g->mpi->rank();
    g->size = g->mpi->size();
  }
  if (impl_->nccl) {
    g->nccl = impl_->nccl->split(color, k);
    g->rank = g->nccl->rank();
    g->size = g->nccl->size();
  }
  return Group(g);
}

namespace {

void check_backend_name(const std::string& b, const char* op) {
  if (b != "any" && b != "mpi" && b != "nccl") {
    throw std::invalid_argument(
        msg("[", op, "] Unknown backend '", b,
            "': kiln has 'mpi' (CPU arrays), 'nccl' (GPU arrays) and 'any'."));
  }
}

std::shared_ptr<GroupImpl> singleton() {
  return std::make_shared<GroupImpl>();
}

// Starts the requested engines; throws std::runtime_error naming what is missing.
std::shared_ptr<GroupImpl> start(const std::string& backend, bool strict) {
  const bool want_nccl = backend != "mpi";
  std::string mpi_why, nccl_why;
  const bool have_mpi = detail::mpi_available(&mpi_why);
  const bool have_nccl = want_nccl && detail::nccl_available(&nccl_why);
  auto g = singleton();

  if (detail::launched_by_mpirun()) {
    if (!have_mpi) {
      throw std::runtime_error(msg("[distributed.init] Launched by mpirun but ", mpi_why, "."));
    }
    auto world = detail::mpi_world();
    g->rank = world->rank();
    g->size = world->size();
    g->mpi = world;  // kept for CPU arrays whatever the backend asked for
    if (want_nccl) {
      if (have_nccl) {
        try {
          g->nccl = detail::nccl_create(g->rank, g->size, [&](const std::string& id) {
            std::string bytes = id;
            world->broadcast(bytes);
            return bytes;
          });
        } catch (const std::runtime_error&) {
          // backend='any' still has MPI for CPU arrays (e.g. several ranks sharing one GPU,
          // which NCCL refuses); GPU collectives then raise when called.
          if (backend == "nccl") throw;
        }
      } else if (backend == "nccl") {
        throw std::runtime_error(msg("[distributed.init] backend='nccl': ", nccl_why, "."));
      }
    }
    return g;
  }

  auto env = detail::launch_env();
  if (env && env->size > 1) {
    if (have_nccl) {
      g->rank = env->rank;
      g->size = env->size;
      try {
        g->nccl = detail::nccl_create(g->rank, g->size, [&](const std::string& id) {
          return detail::tcp_all_gather(*env, id)[0];
        });
      } catch (const std::runtime_error& e) {
        // Name the launch the failure belongs to (the rendezvous' own message does not).
        throw std::runtime_error(msg("[distributed.init] KILN_WORLD_SIZE=", env->size, " (rank ", env->rank,
                                     ", backend NCCL): ", e.what()));
      }
      return g;
    }
    // Processes started without mpirun cannot form an MPI world.
    throw std::runtime_error(
        msg("[distributed.init] KILN_WORLD_SIZE=", env->size, " (rank ", env->rank,
            ") but no backend can connect these processes: ",
            want_nccl ? (nccl_why.empty() ? std::string("NCCL was not requested") : nccl_why)
                      : std::string("backend='mpi' needs mpirun"),
            ". CPU arrays communicate through MPI: launch with mpirun, or python -m kiln.launch "
            "--backend mpi."));
  }

  // Nothing launched: one process.
  if (strict) {
    if (backend == "mpi" && !have_mpi)
      throw std::runtime_error("[distributed.init] " + mpi_why + ".");
    if (backend == "nccl" && !have_nccl)
      throw std::runtime_error("[distributed.init] " + nccl_why + ".");
    if (backend == "any" && !have_mpi && !detail::nccl_available(&nccl_why)) {
      throw std::runtime_error(
          msg("[distributed.init] No backend is available: ", mpi_why, "; ", nccl_why, "."));
    }
  }
  return g;
}

}  // namespace

bool is_available(const std::string& backend) {
  check_backend_name(backend, "distributed.is_available");
  if (backend == "mpi") return detail::mpi_available();
  if (backend == "nccl") return detail::nccl_available();
  return detail::mpi_available() || detail::nccl_available();
}

Group init(bool strict, const std::string& backend) {
  check_backend_name(backend, "distributed.init");
  static std::mutex mu;
  static std::shared_ptr<GroupImpl> global;
  std::lock_guard lk(mu);
  if (global) return Group(global);
  try {
    auto g = start(backend, strict);
    // A group of one is not cached, so a later strict or other-backend call can still fail
    // or start an engine.
    if (g->size > 1 || g->mpi || g->nccl) global = g;
    return Group(g);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception&) {
    if (strict || detail::launched_by_mpirun() ||
        (detail::launch_env() && detail::launch_env()->size > 1)) {
      throw;
    }
    return Group(singleton());
  }
}

}  // namespace kiln::distributed
