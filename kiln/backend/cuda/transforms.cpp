// eval_gpu of the transformation primitives: each output is a view of an input (no data is
// touched), exactly as on the CPU.
#include "kiln/primitives_transforms.h"

namespace kiln {

void TraceInput::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

void StopGradient::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

void Depends::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  eval_cpu(inputs, outputs);
}

void CustomTransforms::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  eval_cpu(inputs, outputs);
}

}  // namespace kiln
