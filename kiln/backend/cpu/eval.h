#pragma once

#include "kiln/array.h"

namespace kiln::cpu {

/** Runs `arr`'s primitive (`eval_cpu`) with its inputs and all its outputs. */
void eval(array& arr);

}  // namespace kiln::cpu
