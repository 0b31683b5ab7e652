// The collective ops of kiln::distributed: argument checks and graph nodes. A group of one
// makes the reductions and all_gather identities (as MLX).
#include <stdexcept>

#include "kiln/distributed/primitives.h"
#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln::distributed {

using detail::ReduceOp;

namespace {

Group to_group(const std::optional<Group>& g) {
  return g ? *g : init();
}

// The stream of the op, checked against the engines the group holds.
Stream comm_stream(const Group& g, StreamOrDevice s, const char* op) {
  Stream st = to_stream(s);
  if (st.device.type == Device::gpu && !g.impl()->nccl) {
    throw std::invalid_argument(msg("[", op, "] The array is on a GPU stream but the group (",
                                    g.backend(),
                                    ") has no NCCL communicator: init with "
                                    "backend='nccl' or 'any' on a machine with NCCL, or pass "
                                    "stream=kiln.cpu."));
  }
  if (st.device.type == Device::cpu && !g.impl()->mpi) {
    throw std::invalid_argument(
        msg("[", op, "] The array is on a CPU stream but the group (", g.backend(),
            ") has no MPI communicator: launch with mpirun "
            "(or python -m kiln.launch --backend mpi), or use GPU arrays."));
  }
  return st;
}

// NCCL has no 16-bit integers: reduce them as int32 (sums wrap to the same 16 bits).
bool widen_for_nccl(const Stream& st, Dtype d) {
  return st.device.type == Device::gpu && (d == int16 || d == uint16);
}

array all_reduce(const array& x, const std::optional<Group>& group_, StreamOrDevice s, ReduceOp op,
                 const char* name) {
  auto group = to_group(group_);
  if (op != ReduceOp::sum && x.dtype() == complex64) {
    throw std::invalid_argument(
        msg("[", name, "] complex64 arrays have no ", reduce_op_name(op), "."));
  }
  if (group.size() == 1) return x;
  Stream st = comm_stream(group, s, name);
  if (widen_for_nccl(st, x.dtype())) {
    return astype(all_reduce(astype(x, int32, st), group, st, op, name), x.dtype(), st);
  }
  array in = contiguous(x, false, st);
  return array(x.shape(), x.dtype(), std::make_shared<AllReduce>(st, group, op), {in});
}

void check_peer(const Group& group, int peer, const char* op, const char* what) {
  if (group.size() == 1) {
    throw std::invalid_argument(msg("[", op, "] Cannot ", op, " within a group of one process."));
  }
  if (peer < 0 || peer >= group.size()) {
    throw std::invalid_argument(msg("[", op, "] Invalid ", what, " rank ", peer,
                                    " for a group of size ", group.size(), "."));
  }
  if (peer == group.rank()) {
    throw std::invalid_argument(
        msg("[", op, "] The ", what, " rank ", peer, " is this process's own rank."));
  }
}

}  // namespace

array all_sum(const array& x, std::optional<Group> group, StreamOrDevice s) {
  return all_reduce(x, group, s, ReduceOp::sum, "all_sum");
}

namespace {

// The GroupedAllSum (or, with `mean`, GroupedAllMean) node over `xs`, all on stream `st`.
std::vector<array> grouped_node(const std::vector<array>& xs, const Group& group, const Stream& st,
                                bool mean) {
  std::vector<array> ins;
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& x : xs) {
    // NCCL's missing 16-bit integers go as int32, as all_sum's do.
    array in = widen_for_nccl(st, x.dtype()) ? astype(x, int32, st) : x;
    ins.push_back(contiguous(in, false, st));
    shapes.push_back(in.shape());
    dtypes.push_back(in.dtype());
  }
  auto prim = mean ? std::make_shared<GroupedAllMean>(st, group)
                   : std::make_shared<GroupedAllSum>(st, group);
  auto outs = array::make_arrays(std::move(shapes), dtypes, std::move(prim), std::move(ins));
  for (size_t i = 0; i < xs.size(); ++i) {
    if (outs[i].dtype() != xs[i].dtype()) outs[i] = astype(outs[i], xs[i].dtype(), st);
  }
  return outs;
}

}  // namespace

std::vector<array> grouped_all_sum(const std::vector<array>& xs, std::optional<Group> group_,
                                   StreamOrDevice s) {
  auto group = to_group(group_);
  if (group.size() == 1 || xs.empty()) return xs;
  return grouped_node(xs, group, comm_stream(group, s, "grouped_all_sum"), false);
}

std::vector<array> grouped_all_mean(const std::vector<array>& xs, std::optional<Group> group_,
                                    StreamOrDevice s) {
  auto group = to_group(group_);
  if (xs.empty()) return xs;
  Stream st = group.size() == 1 ? to_stream(s) : comm_stream(group, s, "grouped_all_mean");
  // Floating arrays average inside the collective; the others sum, then divide (as `s / n`).
  std::vector<array> inexact, other;
  for (const auto& x : xs) (is_inexact(x.dtype()) ? inexact : other).push_back(x);
  if (group.size() > 1 && !inexact.empty()) inexact = grouped_node(inexact, group, st, true);
  if (!other.empty()) {
    if (group.size() > 1) other = grouped_node(other, group, st, false);
    for (auto& o : other) o = divide(o, array(static_cast<float>(group.size())), st);
  }
  std::vector<array> outs;
  size_t a = 0, b = 0;
  for (const auto& x : xs) outs.push_back(is_inexact(x.dtype()) ? inexact[a++] : other[b++]);
  return outs;
}

array all_max(const array& x, std::optional<Group> group, StreamOrDevice s) {
  return all_reduce(x, group, s, ReduceOp::max, "all_max");
}
array all_min(const array& x, std::optional<Group> group, StreamOrDevice s) {
  return all_reduce(x, group, s, ReduceOp::min, "all_min");
}

array all_gather(const array& x, std::optional<Group> group_, StreamOrDevice s) {
  auto group = to_group(group_);
  if (group.size() == 1) return x;
  Stream st = comm_stream(group, s, "all_gather");
  Shape shape = x.shape();
  if (shape.empty()) {
    shape.push_back(group.size());
  } else {
    shape[0] = static_cast<int32_t>(int64_t{shape[0]} * group.size());
  }
  return array(std::move(shape), x.dtype(), std::make_shared<AllGather>(st, group),
               {contiguous(x, false, st)});
}

array sum_scatter(const array& x, std::optional<Group> group_, StreamOrDevice s) {
  auto group = to_group(group_);
  if (x.ndim() == 0) {
    throw std::invalid_argument(
        "[sum_scatter] Cannot scatter a scalar: the input needs an axis 0.");
  }
  if (group.size() == 1) return x;
  if (x.shape(0) % group.size() != 0) {
    throw std::invalid_argument(msg("[sum_scatter] Invalid shape ", shape_str(x.shape()),
                                    " for a group of size ", group.size(),
                                    ": the size of axis 0 must be divisible by the group size."));
  }
  Stream st = comm_stream(group, s, "sum_scatter");
  if (widen_for_nccl(st, x.dtype())) {
    return astype(sum_scatter(astype(x, int32, st), group, st), x.dtype(), st);
  }
  Shape shape = x.shape();
  shape[0] /= group.size();
  return array(std::move(shape), x.dtype(), std::make_shared<ReduceScatter>(st, group),
               {contiguous(x, false, st)});
}

array send(const array& x, int dst, std::optional<Group> group_, StreamOrDevice s) {
  auto group = to_group(group_);
  check_peer(group, dst, "send", "destination");
  Stream st = comm_stream(group, s, "send");
  return array(x.shape(), x.dtype(), std::make_shared<Send>(st, group, dst),
               {contiguous(x, false, st)});
}

array recv(Shape shape, Dtype dtype, int src, std::optional<Group> group_, StreamOrDevice s) {
  auto group = to_group(group_);
  check_peer(group, src, "recv", "source");
  for (auto d : shape) {
    if (d < 0)
      throw std::invalid_argument(
          msg("[recv] Negative dimension in shape ", shape_str(shape), "."));
  }
  Stream st = comm_stream(group, s, "recv");
  return array(std::move(shape), dtype, std::make_shared<Recv>(st, group, src), {});
}

array recv_like(const array& x, int src, std::optional<Group> group, StreamOrDevice s) {
  return recv(x.shape(), x.dtype(), src, std::move(group), s);
}

}  // namespace kiln::distributed
