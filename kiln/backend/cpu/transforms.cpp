// eval_cpu of the transformation primitives: none computes anything, each output is a view
// of the input that carries its values.
#include "kiln/primitives_transforms.h"

namespace kiln {

void TraceInput::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.copy_shared_buffer(inputs[0]);
}

void StopGradient::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.copy_shared_buffer(inputs[0]);
}

void Depends::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_shared_buffer(inputs[i]);
}

void CustomTransforms::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  // The function's outputs are the last inputs.
  size_t first = inputs.size() - outputs.size();
  for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_shared_buffer(inputs[first + i]);
}

}  // namespace kiln
