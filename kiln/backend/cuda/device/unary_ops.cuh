// Unary elementwise functors: one struct per primitive, named as the primitive, so the host
// names the kernel "kiln::unary_v<kiln::<Primitive>, ...>". Each computes in the input type;
// the kernel converts the result to the output type.
#pragma once

#include "kiln/backend/cuda/device/types.cuh"

namespace kiln {

/** The value itself; with the kernel's conversion, the functor of AsType and Copy. */
struct Identity {
  template <typename T>
  __device__ T operator()(T x) const {
    return x;
  }
};

/** e^x for floating and complex types (half types compute in float). */
struct Exp {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (is_same_v<T, float>) {
      return expf(x);
    } else if constexpr (is_same_v<T, double>) {
      return exp(x);
    } else if constexpr (is_half_v<T>) {
      return T(expf(float(x)));
    } else if constexpr (is_complex_v<T>) {
      float m = expf(x.re);
      float s, c;
      sincosf(x.im, &s, &c);
      return {m * c, m * s};
    } else {
      static_assert(always_false_v<T>, "Exp takes floating or complex types");
    }
  }
};

}  // namespace kiln
