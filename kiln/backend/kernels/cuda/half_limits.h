// The limits of the half types for CUDA bodies (cuda::std::numeric_limits and MLX's
// Limits<T>). Included on demand on the GPU (the CPU prelude always has it).
// kiln-on-demand: Limits numeric_limits
#pragma once

#include "kiln/backend/kernels/cuda/mlx.h"
#include "kiln/backend/kernels/metal/half.h"

// Limits of the half types, as floats holding their values (they convert on assignment).
namespace cuda {
namespace std {
template <>
struct numeric_limits<metal::half> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr int digits = 11;
  static KILN_HD metal::half max() { return metal::half::from_bits(0x7bffu); }
  static KILN_HD metal::half min() { return metal::half::from_bits(0x0400u); }
  static KILN_HD metal::half lowest() { return metal::half::from_bits(0xfbffu); }
  static KILN_HD metal::half epsilon() { return metal::half::from_bits(0x1400u); }
  static KILN_HD metal::half infinity() { return metal::half::from_bits(0x7c00u); }
  static KILN_HD metal::half quiet_NaN() { return metal::half::from_bits(0x7e00u); }
};
template <>
struct numeric_limits<metal::bfloat> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr int digits = 8;
  static KILN_HD metal::bfloat max() { return metal::bfloat::from_bits(0x7f7fu); }
  static KILN_HD metal::bfloat min() { return metal::bfloat::from_bits(0x0080u); }
  static KILN_HD metal::bfloat lowest() { return metal::bfloat::from_bits(0xff7fu); }
  static KILN_HD metal::bfloat epsilon() { return metal::bfloat::from_bits(0x3c00u); }
  static KILN_HD metal::bfloat infinity() { return metal::bfloat::from_bits(0x7f80u); }
  static KILN_HD metal::bfloat quiet_NaN() { return metal::bfloat::from_bits(0x7fc0u); }
};
}  // namespace std
}  // namespace cuda

namespace kiln_cuda {
template <>
struct Limits<metal::half> {
  static constexpr limit<float> max{__builtin_bit_cast(float, 0x7f800000u)};
  static constexpr limit<float> min{-__builtin_bit_cast(float, 0x7f800000u)};
  static constexpr limit<float> finite_max{65504.0f};
  static constexpr limit<float> finite_min{-65504.0f};
};
template <>
struct Limits<metal::bfloat> {
  static constexpr limit<float> max{__builtin_bit_cast(float, 0x7f800000u)};
  static constexpr limit<float> min{-__builtin_bit_cast(float, 0x7f800000u)};
  static constexpr limit<float> finite_max{3.38953139e+38f};
  static constexpr limit<float> finite_min{-3.38953139e+38f};
};
}  // namespace kiln_cuda
