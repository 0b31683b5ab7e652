// The dtype rules of the GPU's elementwise kernels, shared by the eager kernels' tables
// (unary.cpp, binary.cpp) and compile's fused kernels (compiled_codegen.cpp), which must run
// each op as the eager kernel does: which dtypes an op takes, and the dtype its kernel reads.
#pragma once

#include "kiln/backend/cuda/elementwise.h"
#include "kiln/dtype.h"

namespace kiln::gpu::dtype_rules {

// ---------------------------------------------------------------- dtypes an op takes

inline bool any_dtype(Dtype) {
  return true;
}
inline bool not_bool(Dtype d) {
  return d != bool_;
}
inline bool real(Dtype d) {
  return d != complex64;
}
inline bool integer(Dtype d) {
  return is_integral(d) && d != bool_;
}
inline bool is_bool(Dtype d) {
  return d == bool_;
}
inline bool floating(Dtype d) {
  return is_floating_point(d);
}
inline bool inexact(Dtype d) {
  return is_inexact(d);
}
inline bool integral(Dtype d) {
  return is_integral(d);
}
inline bool complex(Dtype d) {
  return d == complex64;
}

// ---------------------------------------------------------------- dtypes a kernel computes in

inline Dtype same(Dtype d) {
  return d;
}
// Wrap-around integer arithmetic gives the same bits on the signed and the unsigned type of a
// size: one kernel serves both. Bool stays (its + is or).
inline Dtype wrapping(Dtype d) {
  return integer(d) ? bits_dtype(d) : d;
}
// Tests and products of integers or bools only look at their bits.
inline Dtype bits_if_integral(Dtype d) {
  return is_integral(d) ? bits_dtype(d) : d;
}
// Bool's elements are the bytes 0 and 1: uint8 arithmetic gives the same bytes.
inline Dtype bool_as_uint8(Dtype d) {
  return d == bool_ ? uint8 : d;
}
inline Dtype to_bool(Dtype) {
  return bool_;
}

}  // namespace kiln::gpu::dtype_rules
