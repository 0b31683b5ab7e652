// GGML's GGUF format: type codes shared by the reader, the writer and the quantized-tensor
// unpacking (gguf_quants.cpp). https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
#pragma once

#include <string>

#include "kiln/io/common.h"

namespace kiln::io::gguf {

// Metadata value types.
enum ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// Tensor (GGML) types kiln reads or names in messages.
enum TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 8,
  Q4_K = 12,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

/** GGML's name of tensor type `t` ("Q6_K"), or "unknown". */
std::string tensor_type_name(uint32_t t);

/** Elements per block and bytes per block of a quantized type kiln unpacks (0 if none). */
struct QuantInfo {
  int block = 0;
  int block_bytes = 0;
  int bits = 0;
};
QuantInfo quant_info(uint32_t t);

/**
 * Unpacks `data` (the tensor's blocks) of quantized type `t` and kiln `shape` (the last
 * dimension a multiple of 32) into MLX's affine quantized layout: `weights` uint32 with the
 * last dimension * bits / 32, `scales` and `biases` float16 with the last dimension / 32,
 * so that value = scale * q + bias for each group of 32. Allocates the three arrays.
 */
void unpack_quantized(uint32_t t, const char* data, const Shape& shape, array& weights,
                      array& scales, array& biases);

}  // namespace kiln::io::gguf
