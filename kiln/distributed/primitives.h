// The collective primitives of kiln::distributed. Each holds its group; eval_cpu runs MPI
// (backend/cpu/distributed.cpp), eval_gpu runs NCCL on the primitive's CUDA stream
// (backend/cuda/distributed.cpp). Inputs are row-contiguous (the ops make them so).
#pragma once

#include <vector>

#include "kiln/distributed/backend.h"
#include "kiln/distributed/distributed.h"
#include "kiln/primitive.h"

namespace kiln::distributed {

/** Base of the collectives: the group they run in. */
class DistPrimitive : public UnaryPrimitive {
 public:
  DistPrimitive(Stream stream, Group group) : UnaryPrimitive(stream), group_(std::move(group)) {}
  const Group& group() const { return group_; }

 private:
  Group group_;
};

/** all_sum / all_max / all_min: same shape and dtype as the input. vjp of the sum is the
 * cotangent (as MLX: each rank differentiates its own copy); of max/min, the cotangent
 * where this rank's input equals the result, divided by the number of ranks tied there. */
class AllReduce : public DistPrimitive {
 public:
  AllReduce(Stream stream, Group group, detail::ReduceOp op)
      : DistPrimitive(stream, std::move(group)), op_(op) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_SAME_SHAPE()
  KILN_PRIMITIVE_NAME(AllReduce)
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  detail::ReduceOp op() const { return op_; }

 private:
  detail::ReduceOp op_;
};

/** grouped_all_sum: the sum of each input over the group, all in one backend call (an
 * NCCL group). Outputs have the inputs' shapes and dtypes; vjp passes the cotangents on,
 * as all_sum's does. */
class GroupedAllSum : public Primitive {
 public:
  GroupedAllSum(Stream stream, Group group) : Primitive(stream), group_(std::move(group)) {}
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(GroupedAllSum)
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  bool is_equivalent(const Primitive& other) const override;
  const Group& group() const { return group_; }
  /** Whether the sums are divided by the group's size (GroupedAllMean). */
  virtual bool mean() const { return false; }

 private:
  Group group_;
};

/** grouped_all_mean of floating inputs: each sum divided by the group's size inside the
 * collective (NCCL's ncclAvg; after MPI's sum on the CPU). vjp: the cotangents divided by
 * the size (each rank differentiates its own copy, as all_sum's vjp). */
class GroupedAllMean : public GroupedAllSum {
 public:
  using GroupedAllSum::GroupedAllSum;
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(GroupedAllMean)
  bool mean() const override { return true; }
};

/** all_gather along axis 0; vjp: this rank's slice of the cotangent. */
class AllGather : public DistPrimitive {
 public:
  using DistPrimitive::DistPrimitive;
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(AllGather)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

/** sum_scatter along axis 0; vjp: all_gather of the cotangent. */
class ReduceScatter : public DistPrimitive {
 public:
  using DistPrimitive::DistPrimitive;
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(ReduceScatter)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

/** Sends its input to rank `dst`; the output shares the input's buffer. No derivative (a
 * side effect); vmap sends the batched array. */
class Send : public DistPrimitive {
 public:
  Send(Stream stream, Group group, int dst) : DistPrimitive(stream, std::move(group)), dst_(dst) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_SAME_SHAPE()
  KILN_PRIMITIVE_NAME(Send)
  void print(std::ostream& os) override;
  int dst() const { return dst_; }

 private:
  int dst_;
};

/** Receives an array of the output's shape and dtype from rank `src`. No inputs, so no
 * derivative or vmap. */
class Recv : public DistPrimitive {
 public:
  Recv(Stream stream, Group group, int src) : DistPrimitive(stream, std::move(group)), src_(src) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_NAME(Recv)
  void print(std::ostream& os) override;
  int src() const { return src_; }

 private:
  int src_;
};

}  // namespace kiln::distributed
