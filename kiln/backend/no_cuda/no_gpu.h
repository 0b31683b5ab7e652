// eval_gpu stubs. Without CUDA every primitive gets one that throws, so "where does X run
// on the GPU" stays one grep (X::eval_gpu) in either build. In a CUDA build the same files
// are compiled with weak definitions, which the real ones in backend/cuda/ replace; the
// test GpuKernels.EveryPrimitiveHasEvalGpu (CUDA builds) fails while any stub remains.
#pragma once

#include <stdexcept>
#include <string>

#include "kiln/primitives.h"

#ifdef KILN_WITH_CUDA
#define KILN_NO_GPU_LINKAGE __attribute__((weak))
#define KILN_NO_GPU_REASON "has no GPU implementation yet."
#else
#define KILN_NO_GPU_LINKAGE
#define KILN_NO_GPU_REASON "kiln was built without CUDA."
#endif

#define KILN_NO_GPU(PRIMITIVE)                                                          \
  KILN_NO_GPU_LINKAGE void PRIMITIVE::eval_gpu(const std::vector<array>&, array&) {     \
    throw std::runtime_error("[" #PRIMITIVE "::eval_gpu] " KILN_NO_GPU_REASON);         \
  }

#define KILN_NO_GPU_MULTI(PRIMITIVE)                                                    \
  KILN_NO_GPU_LINKAGE void PRIMITIVE::eval_gpu(                                         \
      const std::vector<array>&, std::vector<array>&) {                                 \
    throw std::runtime_error("[" #PRIMITIVE "::eval_gpu] " KILN_NO_GPU_REASON);         \
  }
