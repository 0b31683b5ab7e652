// eval_gpu for builds without CUDA: every primitive gets one that throws, so "where does
// X run on the GPU" stays one grep (X::eval_gpu) in either build.
#pragma once

#include <stdexcept>
#include <string>

#include "kiln/primitives.h"

#define KILN_NO_GPU(PRIMITIVE)                                                           \
  void PRIMITIVE::eval_gpu(const std::vector<array>&, array&) {                          \
    throw std::runtime_error("[" #PRIMITIVE "::eval_gpu] kiln was built without CUDA."); \
  }

#define KILN_NO_GPU_MULTI(PRIMITIVE)                                                     \
  void PRIMITIVE::eval_gpu(const std::vector<array>&, std::vector<array>&) {             \
    throw std::runtime_error("[" #PRIMITIVE "::eval_gpu] kiln was built without CUDA."); \
  }
