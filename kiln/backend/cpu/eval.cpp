#include "kiln/backend/cpu/eval.h"

#include "kiln/primitive.h"

namespace kiln::cpu {

void eval(array& arr) {
  auto outputs = arr.outputs();
  arr.primitive().eval_cpu(arr.inputs(), outputs);
}

}  // namespace kiln::cpu
