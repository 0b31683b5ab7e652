// eval_cpu of the collectives (kiln/distributed/primitives.h) through MPI. Reductions and
// gathers first compare every rank's shape and dtype (one small MPI_Allgather), so a
// mismatch raises the same error on every rank instead of corrupting memory or hanging;
// KILN_DISTRIBUTED_CHECK=0 skips it.
#include <complex>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "kiln/distributed/primitives.h"
#include "kiln/utils.h"

namespace kiln::distributed {

namespace {

detail::MpiComm& mpi(const Group& g, const char* op) {
  if (!g.impl()->mpi)
    throw std::runtime_error(msg("[", op, "] The group has no MPI communicator."));
  return *g.impl()->mpi;
}

bool check_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("KILN_DISTRIBUTED_CHECK");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

void alloc(array& out) {
  out.set_data(Storage::host(out.nbytes()));
}

// One array's reduction over the group (all_sum/max/min and each of grouped_all_sum's).
void reduce_one(detail::MpiComm& c, const char* name, const array& in, array& out,
                detail::ReduceOp op) {
  if (check_enabled()) c.check_consistent(name, in.shape(), in.dtype(), true);
  alloc(out);
  if (out.size() == 0) return;
  c.all_reduce(in.data<void>(), out.data<void>(), in.size(), in.dtype(), op);
}

// Divides a floating array in place by n, as the divide op would (half types through float).
void divide_in_place(array& out, int n) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
      T* p = out.data<T>();
      for (size_t i = 0; i < out.size(); ++i) p[i] = T(static_cast<float>(p[i]) / n);
    } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, complex64_t>) {
      T* p = out.data<T>();
      for (size_t i = 0; i < out.size(); ++i)
        p[i] = p[i] / static_cast<decltype(std::real(T{}))>(n);
    }
  });
}

}  // namespace

void AllReduce::eval_cpu(const std::vector<array>& inputs, array& out) {
  const char* name = op() == detail::ReduceOp::sum   ? "all_sum"
                     : op() == detail::ReduceOp::max ? "all_max"
                                                     : "all_min";
  reduce_one(mpi(group(), name), name, inputs[0], out, op());
}

void GroupedAllSum::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const char* name = mean() ? "grouped_all_mean" : "grouped_all_sum";
  auto& c = mpi(group(), name);
  for (size_t i = 0; i < inputs.size(); ++i) {
    reduce_one(c, name, inputs[i], outputs[i], detail::ReduceOp::sum);
    if (mean()) divide_in_place(outputs[i], group().size());
  }
}

void AllGather::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& c = mpi(group(), "all_gather");
  const array& in = inputs[0];
  // Only axis 0 may differ in MLX's contract; kiln requires equal shapes (fixed-size blocks).
  if (check_enabled()) c.check_consistent("all_gather", in.shape(), in.dtype(), true);
  alloc(out);
  if (out.size() == 0) return;
  c.all_gather(in.data<void>(), out.data<void>(), in.nbytes());
}

void ReduceScatter::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& c = mpi(group(), "sum_scatter");
  const array& in = inputs[0];
  if (check_enabled()) c.check_consistent("sum_scatter", in.shape(), in.dtype(), true);
  alloc(out);
  if (out.size() == 0) return;
  c.reduce_scatter(in.data<void>(), out.data<void>(), out.size(), in.dtype());
}

void Send::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& c = mpi(group(), "send");
  const array& in = inputs[0];
  c.send(in.data<void>(), in.nbytes(), dst());
  out.copy_shared_buffer(in);
}

void Recv::eval_cpu(const std::vector<array>&, array& out) {
  auto& c = mpi(group(), "recv");
  alloc(out);
  c.recv(out.data<void>(), out.nbytes(), src());
}

}  // namespace kiln::distributed
