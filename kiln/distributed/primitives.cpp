// Transforms of the collective primitives (primitives.h).
#include "kiln/distributed/primitives.h"

#include <algorithm>

#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln::distributed {

using detail::ReduceOp;

namespace {

array reduce_like(const array& x, const Group& g, ReduceOp op, const Stream& s) {
  return op == ReduceOp::sum   ? all_sum(x, g, s)
         : op == ReduceOp::max ? all_max(x, g, s)
                               : all_min(x, g, s);
}

// One tangent per primal: zero for the inputs outside argnums.
std::vector<array> every_tangent(const std::vector<array>& primals,
                                 const std::vector<array>& tangents,
                                 const std::vector<int>& argnums, const Stream& s) {
  std::vector<array> full;
  for (size_t i = 0; i < primals.size(); ++i) {
    auto at = std::find(argnums.begin(), argnums.end(), static_cast<int>(i));
    full.push_back(at == argnums.end() ? zeros_like(primals[i], s)
                                       : tangents[at - argnums.begin()]);
  }
  return full;
}

}  // namespace

// ---------------------------------------------------------------- AllReduce

void AllReduce::print(std::ostream& os) {
  os << "AllReduce(" << detail::reduce_op_name(op_) << ")";
}

bool AllReduce::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const AllReduce*>(&other);
  return o && o->op_ == op_ && o->group().impl() == group().impl();
}

std::vector<array> AllReduce::jvp(const std::vector<array>& primals,
                                  const std::vector<array>& tangents, const std::vector<int>&) {
  if (op_ == ReduceOp::sum) return {all_sum(tangents[0], group(), stream())};
  // The tangent of the rank(s) holding the extremum, averaged over ties.
  const array& x = primals[0];
  array mask = equal(x, reduce_like(x, group(), op_, stream()), stream());
  array t = where(mask, tangents[0], zeros_like(tangents[0], stream()), stream());
  array n = all_sum(astype(mask, tangents[0].dtype(), stream()), group(), stream());
  return {divide(all_sum(t, group(), stream()), n, stream())};
}

std::vector<array> AllReduce::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
                                  const std::vector<array>& outputs) {
  if (op_ == ReduceOp::sum) return {cotangents[0]};
  // Ranks tied at the extremum share the cotangent equally, as a local max's ties do and as
  // the jvp above averages their tangents (so that vjp and jvp are transposes).
  const array& c = cotangents[0];
  array mask = equal(primals[0], outputs[0], stream());
  array ties = all_sum(astype(mask, c.dtype(), stream()), group(), stream());
  return {where(mask, divide(c, ties, stream()), zeros_like(c, stream()), stream())};
}

std::pair<std::vector<array>, std::vector<int>> AllReduce::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  return {{reduce_like(inputs[0], group(), op_, stream())}, axes};
}

// ---------------------------------------------------------------- GroupedAllSum

std::vector<Shape> GroupedAllSum::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  for (const auto& in : inputs) shapes.push_back(in.shape());
  return shapes;
}

bool GroupedAllSum::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const GroupedAllSum*>(&other);  // a GroupedAllMean is one too
  return o && o->mean() == mean() && o->group().impl() == group().impl();
}

std::vector<array> GroupedAllSum::jvp(const std::vector<array>& primals,
                                      const std::vector<array>& tangents,
                                      const std::vector<int>& argnums) {
  // Output i's tangent is the sum of input i's.
  return grouped_all_sum(every_tangent(primals, tangents, argnums, stream()), group(), stream());
}

std::vector<array> GroupedAllSum::vjp(const std::vector<array>&,
                                      const std::vector<array>& cotangents,
                                      const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> grads;
  for (int a : argnums) grads.push_back(cotangents[a]);
  return grads;
}

std::pair<std::vector<array>, std::vector<int>> GroupedAllSum::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  return {grouped_all_sum(inputs, group(), stream()), axes};  // elementwise: axes stay
}

// ---------------------------------------------------------------- GroupedAllMean

std::vector<array> GroupedAllMean::jvp(const std::vector<array>& primals,
                                       const std::vector<array>& tangents,
                                       const std::vector<int>& argnums) {
  return grouped_all_mean(every_tangent(primals, tangents, argnums, stream()), group(), stream());
}

std::vector<array> GroupedAllMean::vjp(const std::vector<array>&,
                                       const std::vector<array>& cotangents,
                                       const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> grads;
  const double n = group().size();
  for (int a : argnums) {
    const array& c = cotangents[a];
    grads.push_back(divide(c, array(n, c.dtype()), stream()));
  }
  return grads;
}

std::pair<std::vector<array>, std::vector<int>> GroupedAllMean::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  return {grouped_all_mean(inputs, group(), stream()), axes};
}

// ---------------------------------------------------------------- AllGather

std::vector<Shape> AllGather::output_shapes(const std::vector<array>& inputs) {
  Shape s = inputs[0].shape();
  if (s.empty()) return {{static_cast<int32_t>(group().size())}};
  s[0] *= group().size();
  return {s};
}

std::vector<array> AllGather::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {all_gather(tangents[0], group(), stream())};
}

std::vector<array> AllGather::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
                                  const std::vector<array>&) {
  const array& x = primals[0];
  const array& c = cotangents[0];
  const int r = group().rank();
  if (x.ndim() == 0) return {reshape(slice(c, {r}, {r + 1}, stream()), {}, stream())};
  Shape start(c.ndim(), 0), stop = c.shape();
  start[0] = r * x.shape(0);
  stop[0] = start[0] + x.shape(0);
  return {slice(c, start, stop, stream())};
}

std::pair<std::vector<array>, std::vector<int>> AllGather::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  if (axes[0] < 0) return {{all_gather(inputs[0], group(), stream())}, {-1}};
  // Gather along the unbatched axis 0: move the batch axis last.
  array x = moveaxis(inputs[0], axes[0], -1, stream());
  if (x.ndim() == 1) x = expand_dims(x, 0, stream());
  array out = all_gather(x, group(), stream());
  return {{out}, {static_cast<int>(out.ndim()) - 1}};
}

// ---------------------------------------------------------------- ReduceScatter

std::vector<Shape> ReduceScatter::output_shapes(const std::vector<array>& inputs) {
  Shape s = inputs[0].shape();
  s[0] /= group().size();
  return {s};
}

std::vector<array> ReduceScatter::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                      const std::vector<int>&) {
  return {sum_scatter(tangents[0], group(), stream())};
}

std::vector<array> ReduceScatter::vjp(const std::vector<array>&,
                                      const std::vector<array>& cotangents, const std::vector<int>&,
                                      const std::vector<array>&) {
  return {all_gather(cotangents[0], group(), stream())};
}

std::pair<std::vector<array>, std::vector<int>> ReduceScatter::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes[0] < 0) return {{sum_scatter(inputs[0], group(), stream())}, {-1}};
  // Scatter along the unbatched axis 0: move the batch axis last.
  array x = moveaxis(inputs[0], axes[0], -1, stream());
  array out = sum_scatter(x, group(), stream());
  return {{out}, {static_cast<int>(out.ndim()) - 1}};
}

// ---------------------------------------------------------------- Send, Recv

void Send::print(std::ostream& os) {
  os << "Send(dst=" << dst_ << ")";
}

std::pair<std::vector<array>, std::vector<int>> Send::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  return {{send(inputs[0], dst_, group(), stream())}, axes};
}

void Recv::print(std::ostream& os) {
  os << "Recv(src=" << src_ << ")";
}

}  // namespace kiln::distributed
