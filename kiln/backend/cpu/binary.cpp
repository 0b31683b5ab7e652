// eval_cpu of the binary elementwise primitives: one dtype dispatcher over the functors of
// binary_ops.h, run by cpu::binary_op (flat loops for contiguous and scalar operands).
#include <stdexcept>
#include <type_traits>

#include "kiln/backend/cpu/binary_ops.h"
#include "kiln/backend/cpu/elementwise.h"
#include "kiln/primitives_binary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

template <typename R>
void check_output(const char* name, const array& out) {
  if (dtype_v<R> != out.dtype()) {
    throw std::runtime_error(msg("[", name, "::eval_cpu] Computes ", dtype_v<R>,
                                 " but the output is ", out.dtype(), "."));
  }
}

// Runs `op` on the C++ type of the inputs' dtype; float16 and bfloat16 compute in float.
template <typename Op>
void binary(const char* name, const std::vector<array>& inputs, array& out, Op op) {
  const array &a = inputs[0], &b = inputs[1];
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_invocable_v<const Op&, T, T>) {
      using R = std::invoke_result_t<const Op&, T, T>;
      check_output<R>(name, out);
      cpu::binary_op<T, T, R>(a, b, out, op);
    } else if constexpr (is_half_v<T> && std::is_invocable_v<const Op&, float, float>) {
      using F = std::invoke_result_t<const Op&, float, float>;
      using R = std::conditional_t<std::is_same_v<F, float>, T, F>;
      check_output<R>(name, out);
      // The conversions vectorize only in the per-ISA loops, allowed for one rounding.
      constexpr bool kClones = requires {
        Op::one_rounding;
      };
      cpu::binary_op<T, T, R, kClones>(a, b, out, [op](T x, T y) {
        return static_cast<R>(op(static_cast<float>(x), static_cast<float>(y)));
      });
    } else {
      throw std::runtime_error(
          msg("[", name, "::eval_cpu] Unsupported input dtype ", a.dtype(), "."));
    }
  });
}

}  // namespace

#define KILN_BINARY_EVAL(NAME)                                        \
  void NAME::eval_cpu(const std::vector<array>& inputs, array& out) { \
    binary(#NAME, inputs, out, cpu::fn::NAME{});                      \
  }

KILN_BINARY_EVAL(Add)
KILN_BINARY_EVAL(Subtract)
KILN_BINARY_EVAL(Multiply)
KILN_BINARY_EVAL(Divide)
KILN_BINARY_EVAL(FloorDivide)
KILN_BINARY_EVAL(Remainder)
KILN_BINARY_EVAL(Power)
KILN_BINARY_EVAL(Maximum)
KILN_BINARY_EVAL(Minimum)
KILN_BINARY_EVAL(ArcTan2)
KILN_BINARY_EVAL(LogAddExp)
KILN_BINARY_EVAL(NotEqual)
KILN_BINARY_EVAL(Less)
KILN_BINARY_EVAL(LessEqual)
KILN_BINARY_EVAL(Greater)
KILN_BINARY_EVAL(GreaterEqual)
KILN_BINARY_EVAL(LogicalAnd)
KILN_BINARY_EVAL(LogicalOr)
KILN_BINARY_EVAL(BitwiseAnd)
KILN_BINARY_EVAL(BitwiseOr)
KILN_BINARY_EVAL(BitwiseXor)
KILN_BINARY_EVAL(LeftShift)
KILN_BINARY_EVAL(RightShift)

void Equal::eval_cpu(const std::vector<array>& inputs, array& out) {
  if (equal_nan_)
    binary("Equal", inputs, out, cpu::fn::EqualNaN{});
  else
    binary("Equal", inputs, out, cpu::fn::Equal{});
}

}  // namespace kiln
