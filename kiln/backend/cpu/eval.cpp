#include "kiln/backend/cpu/eval.h"

#include "kiln/primitive.h"

namespace kiln::cpu {

void eval(array& arr) {
  if (arr.is_multi_output()) {
    auto outputs = arr.outputs();
    arr.primitive().eval_cpu(arr.inputs(), outputs);
    return;
  }
  // Single output: reuse one vector per thread instead of allocating per op.
  static thread_local std::vector<array> outputs;
  outputs.push_back(arr);
  try {
    arr.primitive().eval_cpu(arr.inputs(), outputs);
  } catch (...) {
    outputs.clear();
    throw;
  }
  outputs.clear();
}

}  // namespace kiln::cpu
