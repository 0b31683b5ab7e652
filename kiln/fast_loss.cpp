// cross_entropy: argument checks, the node it builds and its transforms. Kernels:
// backend/cpu/fast_loss.cpp, backend/cuda/fast_loss.cpp.
#include <limits>

#include "kiln/fast.h"
#include "kiln/fast_primitives.h"
#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

Dtype loss_dtype(Dtype logits) {
  return logits == float64 ? float64 : float32;
}

// The loss written with core ops. Inputs: logits, targets (int32); outputs: loss, logsumexp.
ArrayFn cross_entropy_fallback(Stream s) {
  return [s](const std::vector<array>& in) {
    const Dtype acc = loss_dtype(in[0].dtype());
    array x = astype(in[0], acc, s);
    const int C = x.shape(-1);
    array t = in[1];
    t = where(less(t, array(0, int32), s), add(t, array(C, int32), s), t, s);
    array valid = logical_and(greater_equal(t, array(0, int32), s), less(t, array(C, int32), s), s);
    array tc = minimum(maximum(t, array(0, int32), s), array(C - 1, int32), s);
    array lse = logsumexp(x, -1, false, s);
    array picked = squeeze(take_along_axis(x, expand_dims(tc, -1, s), -1, s), -1, s);
    array loss = where(valid, subtract(lse, picked, s),
                       array(std::numeric_limits<double>::quiet_NaN(), acc), s);
    return std::vector<array>{loss, lse};
  };
}

}  // namespace

std::shared_ptr<CrossEntropy> make_cross_entropy(Stream s) {
  return std::make_shared<CrossEntropy>(s, cross_entropy_fallback(s));
}

// The gradient's fallback differentiates the loss's: from the primals only.
std::shared_ptr<CrossEntropyVJP> make_cross_entropy_vjp(Stream s) {
  ArrayFn grad_fallback = [forward = cross_entropy_fallback(s)](const std::vector<array>& in) {
    return std::vector<array>{
        kiln::vjp(forward, {in[0], in[1]}, {in[3], zeros_like(in[2])}).second[0]};
  };
  return std::make_shared<CrossEntropyVJP>(s, std::move(grad_fallback));
}

namespace {

array cross_entropy_node(const array& logits, const array& targets, Stream s) {
  const Dtype out = loss_dtype(logits.dtype());
  return array::make_arrays({targets.shape(), targets.shape()}, {out, out}, make_cross_entropy(s),
                            {logits, targets})[0];
}

}  // namespace

array cross_entropy(const array& logits, const array& targets, StreamOrDevice s_) {
  if (logits.ndim() == 0) {
    throw std::invalid_argument(
        "[cross_entropy] logits must have at least 1 dimension but got input with 0 "
        "dimensions.");
  }
  if (!is_floating_point(logits.dtype())) {
    throw std::invalid_argument(
        msg("[cross_entropy] Received unsupported logits type ", logits.dtype(), "."));
  }
  if (!issubdtype(targets.dtype(), Dtype::Category::integer)) {
    throw std::invalid_argument(msg(
        "[cross_entropy] targets must be integer class indices but got ", targets.dtype(), "."));
  }
  const Shape rows(logits.shape().begin(), logits.shape().end() - 1);
  if (targets.shape() != rows) {
    throw std::invalid_argument(msg("[cross_entropy] targets shape ", shape_str(targets.shape()),
                                    " does not match logits shape ", shape_str(logits.shape()),
                                    " with the last axis removed."));
  }
  if (logits.shape(-1) == 0 && shape_size(rows) > 0) {
    throw std::invalid_argument(
        msg("[cross_entropy] logits of shape ", shape_str(logits.shape()), " have no classes."));
  }
  const Stream s = to_stream(s_);
  return cross_entropy_node(logits, targets.dtype() == int32 ? targets : astype(targets, int32, s),
                            s);
}

bool CrossEntropy::is_equivalent(const Primitive& other) const {
  return dynamic_cast<const CrossEntropy*>(&other) != nullptr;
}

std::vector<Shape> CrossEntropy::output_shapes(const std::vector<array>& inputs) {
  return {inputs[1].shape(), inputs[1].shape()};
}

std::vector<array> CrossEntropy::vjp(const std::vector<array>& primals,
                                     const std::vector<array>& cotangents,
                                     const std::vector<int>& argnums,
                                     const std::vector<array>& outputs) {
  // Targets are integers: only the logits have a gradient.
  array g(primals[0].shape(), primals[0].dtype(), make_cross_entropy_vjp(stream()),
          {primals[0], primals[1], outputs[1], cotangents[0]});
  std::vector<array> r;
  for (int a : argnums) r.push_back(a == 0 ? g : zeros_like(primals[a], stream()));
  return r;
}

std::pair<std::vector<array>, std::vector<int>> CrossEntropy::vmap(const std::vector<array>& inputs,
                                                                   const std::vector<int>& axes) {
  // Rows are independent: the mapped axis becomes the first row axis of both inputs.
  const int n = axes[0] >= 0 ? inputs[0].shape(axes[0]) : inputs[1].shape(axes[1]);
  std::vector<array> in;
  for (int i = 0; i < 2; ++i) {
    if (axes[i] >= 0) {
      in.push_back(moveaxis(inputs[i], axes[i], 0, stream()));
    } else {
      Shape shape = inputs[i].shape();
      shape.insert(shape.begin(), n);
      in.push_back(broadcast_to(inputs[i], shape, stream()));
    }
  }
  auto out = cross_entropy_node(in[0], in[1], stream());
  return {out.outputs(), {0, 0}};
}

bool CrossEntropyVJP::is_equivalent(const Primitive& other) const {
  return dynamic_cast<const CrossEntropyVJP*>(&other) != nullptr;
}

std::vector<Shape> CrossEntropyVJP::output_shapes(const std::vector<array>& inputs) {
  return {inputs[0].shape()};
}

}  // namespace kiln::fast
