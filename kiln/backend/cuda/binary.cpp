// eval_gpu of the binary elementwise primitives. Kernels: device/binary.cuh; functors, named
// as the primitives: device/binary_ops.cuh.
#include <set>
#include <string>

#include "kiln/backend/cuda/dtype_rules.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_binary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// A binary functor: the input dtypes its primitive takes, the dtype its kernel reads for
// each, the dtype the kernel writes, and whether the operands are swapped (a > b runs as
// b < a). The table is also the family's catalog of modules, which the CI test compiles.
//
// Kernel dtypes fold cases with identical bits into one kernel: wrap-around integer
// arithmetic and bit tests run on the unsigned type of the size, and bool, whose elements
// are the bytes 0 and 1, runs as uint8 wherever uint8 arithmetic gives the same bytes.
struct BinaryKernel {
  const char* op;
  bool (*takes)(Dtype);
  Dtype (*kernel_in)(Dtype);
  Dtype (*kernel_out)(Dtype);
  bool swap = false;
};

using gpu::dtype_rules::any_dtype, gpu::dtype_rules::not_bool, gpu::dtype_rules::real,
    gpu::dtype_rules::integer, gpu::dtype_rules::is_bool, gpu::dtype_rules::same,
    gpu::dtype_rules::wrapping, gpu::dtype_rules::bits_if_integral, gpu::dtype_rules::bool_as_uint8,
    gpu::dtype_rules::to_bool;

constexpr BinaryKernel kAdd{"Add", any_dtype, wrapping, same};
constexpr BinaryKernel kSubtract{"Subtract", not_bool, wrapping, same};
constexpr BinaryKernel kMultiply{"Multiply", any_dtype, bits_if_integral, same};  // bool: and
constexpr BinaryKernel kDivide{"Divide", is_inexact, same, same};
constexpr BinaryKernel kFloorDivide{"FloorDivide", real, bool_as_uint8, same};  // bool: and
constexpr BinaryKernel kRemainder{"Remainder", real, bool_as_uint8, same};      // bool: 0
constexpr BinaryKernel kPower{"Power", any_dtype, bool_as_uint8, same};         // bool: a | !b
constexpr BinaryKernel kMaximum{"Maximum", real, bool_as_uint8, same};
constexpr BinaryKernel kMinimum{"Minimum", real, bool_as_uint8, same};
constexpr BinaryKernel kArcTan2{"ArcTan2", is_floating_point, same, same};
constexpr BinaryKernel kLogAddExp{"LogAddExp", is_floating_point, same, same};
constexpr BinaryKernel kEqual{"Equal", any_dtype, bits_if_integral, to_bool};
// Integers and bool have no NaN: equal_nan changes only inexact comparisons.
constexpr BinaryKernel kEqualNaN{"EqualNaN", is_inexact, same, to_bool};
constexpr BinaryKernel kNotEqual{"NotEqual", any_dtype, bits_if_integral, to_bool};
constexpr BinaryKernel kLess{"Less", real, bool_as_uint8, to_bool};
constexpr BinaryKernel kLessEqual{"LessEqual", real, bool_as_uint8, to_bool};
constexpr BinaryKernel kGreater{"Less", real, bool_as_uint8, to_bool, true};
constexpr BinaryKernel kGreaterEqual{"LessEqual", real, bool_as_uint8, to_bool, true};
constexpr BinaryKernel kLogicalAnd{"BitwiseAnd", is_bool, bits_if_integral, same};
constexpr BinaryKernel kLogicalOr{"BitwiseOr", is_bool, bits_if_integral, same};
constexpr BinaryKernel kBitwiseAnd{"BitwiseAnd", is_integral, bits_if_integral, same};
constexpr BinaryKernel kBitwiseOr{"BitwiseOr", is_integral, bits_if_integral, same};
constexpr BinaryKernel kBitwiseXor{"BitwiseXor", is_integral, bits_if_integral, same};
// A shift count outside [0, bits) gives 0 for either signedness: the same bits.
constexpr BinaryKernel kLeftShift{"LeftShift", integer, bits_if_integral, same};
constexpr BinaryKernel kRightShift{"RightShift", integer, same, same};

constexpr const BinaryKernel* kBinaryKernels[] = {
    &kAdd,        &kSubtract,  &kMultiply,     &kDivide,     &kFloorDivide,
    &kRemainder,  &kPower,     &kMaximum,      &kMinimum,    &kArcTan2,
    &kLogAddExp,  &kEqual,     &kEqualNaN,     &kNotEqual,   &kLess,
    &kLessEqual,  &kGreater,   &kGreaterEqual, &kLogicalAnd, &kLogicalOr,
    &kBitwiseAnd, &kBitwiseOr, &kBitwiseXor,   &kLeftShift,  &kRightShift};

void binary_gpu(const BinaryKernel& k, const Primitive& p, const std::vector<array>& inputs,
                array& out) {
  const array &a = inputs[0], &b = inputs[1];
  if (!k.takes(a.dtype())) {
    throw std::invalid_argument(
        msg("[", p.name(), "::eval_gpu] Unsupported dtype ", a.dtype(), "."));
  }
  const Dtype kin = k.kernel_in(a.dtype());
  auto& s = gpu::device_stream(p.stream());
  if (k.swap)
    gpu::binary_op_gpu(k.op, b, a, out, kin, k.kernel_out(kin), s);
  else
    gpu::binary_op_gpu(k.op, a, b, out, kin, k.kernel_out(kin), s);
}

}  // namespace

#define KILN_BINARY_GPU(NAME)                                         \
  void NAME::eval_gpu(const std::vector<array>& inputs, array& out) { \
    binary_gpu(k##NAME, *this, inputs, out);                          \
  }

KILN_BINARY_GPU(Add)
KILN_BINARY_GPU(Subtract)
KILN_BINARY_GPU(Multiply)
KILN_BINARY_GPU(Divide)
KILN_BINARY_GPU(FloorDivide)
KILN_BINARY_GPU(Remainder)
KILN_BINARY_GPU(Power)
KILN_BINARY_GPU(Maximum)
KILN_BINARY_GPU(Minimum)
KILN_BINARY_GPU(ArcTan2)
KILN_BINARY_GPU(LogAddExp)
KILN_BINARY_GPU(NotEqual)
KILN_BINARY_GPU(Less)
KILN_BINARY_GPU(LessEqual)
KILN_BINARY_GPU(Greater)
KILN_BINARY_GPU(GreaterEqual)
KILN_BINARY_GPU(LogicalAnd)
KILN_BINARY_GPU(LogicalOr)
KILN_BINARY_GPU(BitwiseAnd)
KILN_BINARY_GPU(BitwiseOr)
KILN_BINARY_GPU(BitwiseXor)
KILN_BINARY_GPU(LeftShift)
KILN_BINARY_GPU(RightShift)
#undef KILN_BINARY_GPU

void Equal::eval_gpu(const std::vector<array>& inputs, array& out) {
  const bool nan = equal_nan_ && is_inexact(inputs[0].dtype());
  binary_gpu(nan ? kEqualNaN : kEqual, *this, inputs, out);
}

KILN_GPU_MODULE_CATALOG(binary, [](const gpu::ModuleSink& sink) {
  std::set<std::string> seen;  // dtypes (and primitives) sharing a kernel share its modules
  for (const BinaryKernel* k : kBinaryKernels) {
    for (Dtype d : all_dtypes) {
      if (!k->takes(d)) continue;
      const Dtype kin = k->kernel_in(d), kout = k->kernel_out(kin);
      const std::string name = gpu::binary_module_name(k->op, kin, kout);
      if (seen.insert(name).second) sink(name, gpu::binary_module(k->op, kin, kout));
    }
  }
});

}  // namespace kiln
