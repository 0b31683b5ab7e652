// Transformations of the primitives that the transformations themselves build.
#include "kiln/primitives_transforms.h"

#include <algorithm>

#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln {

array detail::zeros_view(const Shape& shape, Dtype dtype, StreamOrDevice s) {
  return broadcast_to(array(0.0, dtype), shape, s);
}

// ---------------------------------------------------------------- TraceInput
std::vector<array> TraceInput::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                   const std::vector<int>&) {
  return {tangents[0]};
}
std::vector<array> TraceInput::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                   const std::vector<int>&, const std::vector<array>&) {
  return {cotangents[0]};
}
std::pair<std::vector<array>, std::vector<int>> TraceInput::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  return {inputs, axes};
}

// ---------------------------------------------------------------- VmapInput
// Device independent: there is nothing to compute, only a user mistake to report.
void VmapInput::eval_cpu(const std::vector<array>&, array& out) {
  throw std::invalid_argument(
      msg("[vmap] Cannot evaluate an array that depends on a mapped input inside a vmapped "
          "function (eval, item or data of an array of shape ",
          shape_str(out.shape()), " without its mapped axis)."));
}
void VmapInput::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

// ---------------------------------------------------------------- StopGradient
std::vector<array> StopGradient::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&) {
  return {detail::zeros_view(primals[0].shape(), primals[0].dtype(), stream())};
}
std::vector<array> StopGradient::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&, const std::vector<array>&) {
  return {detail::zeros_view(primals[0].shape(), primals[0].dtype(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> StopGradient::vmap(const std::vector<array>& inputs,
                                                                   const std::vector<int>& axes) {
  return {{stop_gradient(inputs[0], stream())}, axes};
}

// ---------------------------------------------------------------- Depends
std::vector<Shape> Depends::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  for (int i = 0; i < n_; ++i) shapes.push_back(inputs[i].shape());
  return shapes;
}
std::vector<array> Depends::jvp(const std::vector<array>& primals,
                                const std::vector<array>& tangents,
                                const std::vector<int>& argnums) {
  std::vector<array> out;
  for (int i = 0; i < n_; ++i) {
    auto it = std::find(argnums.begin(), argnums.end(), i);
    out.push_back(it != argnums.end()
                      ? tangents[it - argnums.begin()]
                      : detail::zeros_view(primals[i].shape(), primals[i].dtype(), stream()));
  }
  return out;
}
std::vector<array> Depends::vjp(const std::vector<array>& primals,
                                const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> out;
  for (int a : argnums) {
    out.push_back(a < n_ ? cotangents[a]
                         : detail::zeros_view(primals[a].shape(), primals[a].dtype(), stream()));
  }
  return out;
}
std::pair<std::vector<array>, std::vector<int>> Depends::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  // Keep the ordering in the batched graph: the same node over the batched inputs.
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (int i = 0; i < n_; ++i) {
    shapes.push_back(inputs[i].shape());
    dtypes.push_back(inputs[i].dtype());
  }
  auto outs = array::make_arrays(std::move(shapes), dtypes, std::make_shared<Depends>(stream(), n_),
                                 inputs);
  return {std::move(outs), std::vector<int>(axes.begin(), axes.begin() + n_)};
}

// ---------------------------------------------------------------- CustomTransforms
std::vector<Shape> CustomTransforms::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  for (size_t i = inputs.size() - num_outputs_; i < inputs.size(); ++i)
    shapes.push_back(inputs[i].shape());
  return shapes;
}

std::vector<array> CustomTransforms::vjp(const std::vector<array>& primals,
                                         const std::vector<array>& cotangents,
                                         const std::vector<int>& argnums,
                                         const std::vector<array>& outputs) {
  const size_t m = primals.size() - num_outputs_;
  std::vector<array> args(primals.begin(), primals.begin() + m);
  auto all = vjp_(args, cotangents, outputs);
  if (all.size() != m) {
    throw std::invalid_argument(msg("[custom_function] The vjp of ", name_, " returned ",
                                    all.size(), " cotangents for a function of ", m,
                                    " arguments."));
  }
  std::vector<array> out;
  for (int a : argnums) {
    // The computed outputs enter under stop_gradient: their cotangent is never asked for,
    // but it is the output's own cotangent should a caller do so.
    if (a >= static_cast<int>(m)) {
      out.push_back(cotangents[a - m]);
      continue;
    }
    if (all[a].shape() != primals[a].shape()) {
      throw std::invalid_argument(msg("[custom_function] The vjp of ", name_,
                                      " returned a cotangent of shape ", shape_str(all[a].shape()),
                                      " for argument ", a, " of shape ",
                                      shape_str(primals[a].shape()), "."));
    }
    out.push_back(astype(all[a], primals[a].dtype(), stream()));
  }
  return out;
}

std::vector<array> CustomTransforms::jvp(const std::vector<array>& primals,
                                         const std::vector<array>& tangents,
                                         const std::vector<int>& argnums) {
  const int m = static_cast<int>(primals.size()) - num_outputs_;
  std::vector<array> args(primals.begin(), primals.begin() + m);
  std::vector<array> arg_tangents;
  std::vector<int> arg_nums;
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] < m) {
      arg_tangents.push_back(tangents[i]);
      arg_nums.push_back(argnums[i]);
    }
  }
  auto out = jvp_(args, arg_tangents, arg_nums);
  if (static_cast<int>(out.size()) != num_outputs_) {
    throw std::invalid_argument(msg("[custom_function] The jvp of ", name_, " returned ",
                                    out.size(), " tangents for a function of ", num_outputs_,
                                    " outputs."));
  }
  for (int i = 0; i < num_outputs_; ++i) {
    const array& o = primals[m + i];
    if (out[i].shape() != o.shape()) {
      throw std::invalid_argument(msg("[custom_function] The jvp of ", name_,
                                      " returned a tangent of shape ", shape_str(out[i].shape()),
                                      " for output ", i, " of shape ", shape_str(o.shape()), "."));
    }
    out[i] = astype(out[i], o.dtype(), stream());
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> CustomTransforms::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  const size_t m = inputs.size() - num_outputs_;
  // Only the computed outputs are mapped (the function closes over a mapped array): they
  // are already batched, and the rule has nothing to map.
  if (std::all_of(axes.begin(), axes.begin() + m, [](int a) { return a < 0; })) {
    return {std::vector<array>(inputs.begin() + m, inputs.end()),
            std::vector<int>(axes.begin() + m, axes.end())};
  }
  auto [out, out_axes] = vmap_(std::vector<array>(inputs.begin(), inputs.begin() + m),
                               std::vector<int>(axes.begin(), axes.begin() + m));
  if (static_cast<int>(out.size()) != num_outputs_ || out_axes.size() != out.size()) {
    throw std::invalid_argument(msg("[custom_function] The vmap of ", name_, " returned ",
                                    out.size(), " outputs and ", out_axes.size(),
                                    " axes for a function of ", num_outputs_, " outputs."));
  }
  return {std::move(out), std::move(out_axes)};
}

}  // namespace kiln
