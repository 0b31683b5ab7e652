// Binary elementwise functors: one struct per primitive, named as the primitive. Each
// computes in the (common) input type; the kernel converts the result to the output type.
#pragma once

#include "kiln/backend/cuda/device/types.cuh"

namespace kiln {

/** a + b; logical or for bool. Integers wrap around. */
struct Add {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (is_same_v<T, bool>)
      return a || b;
    else
      return static_cast<T>(a + b);
  }
};

}  // namespace kiln
