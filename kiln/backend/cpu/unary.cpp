// eval_cpu of the unary elementwise primitives: one dtype dispatcher over the functors of
// unary_ops.h.
#include <stdexcept>
#include <type_traits>

#include "kiln/backend/cpu/elementwise.h"
#include "kiln/backend/cpu/simd_loops.h"
#include "kiln/backend/cpu/simd_math.h"
#include "kiln/backend/cpu/unary_ops.h"
#include "kiln/primitives_unary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// The loops of a vectorizable functor, compiled once per ISA level (KILN_SIMD_CLONES).
// Strided runs use the same clones as the flat loop, so that a value's result does not
// depend on the layout it is stored in (the clones may contract a * b + c into an FMA).
template <typename In, typename Out, typename Op>
KILN_SIMD_CLONES void map_simd_strided(const In* src, int64_t in_stride, Out* dst,
                                       int64_t out_stride, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) dst[i * out_stride] = op(src[i * in_stride]);
}

// float16 and bfloat16 through the float clones (cpu::map_simd_half; the scalar path left tanh
// and exp on bfloat16 about 8x slower than on float32).
template <typename T, typename Op>
void run_half_simd(const array& in, array& out, Op op) {
  const T* src = in.data<T>();
  if (cpu::set_unary_output_data(in, out)) {
    T* dst = out.data<T>();
    cpu::parallel_for(in.data_size(), cpu::kElementwiseGrain, [&](size_t b, size_t e) {
      cpu::map_simd_half(src + b, 1, dst + b, 1, static_cast<int64_t>(e - b), op);
    });
  } else {
    T* dst = out.data<T>();
    auto [shape, strides] = collapse_contiguous_dims<2>(in.shape(), {in.strides(), out.strides()});
    const int64_t is = strides[0].back(), os = strides[1].back();
    for_each_elementwise_run(shape, strides, [&](const std::array<int64_t, 2>& off, int64_t n) {
      cpu::map_simd_half(src + off[0], is, dst + off[1], os, n, op);
    });
  }
}

template <typename In, typename Out, typename Op>
void run(const array& in, array& out, Op op) {
  if constexpr (requires { Op::simd; } && std::is_same_v<In, float>) {
    const In* src = in.data<In>();
    if (cpu::set_unary_output_data(in, out)) {
      Out* dst = out.data<Out>();
      cpu::parallel_for(in.data_size(), cpu::kElementwiseGrain,
                        [&](size_t b, size_t e) { cpu::map_simd(src + b, dst + b, e - b, op); });
    } else {
      Out* dst = out.data<Out>();
      auto [shape, strides] =
          collapse_contiguous_dims<2>(in.shape(), {in.strides(), out.strides()});
      const int64_t is = strides[0].back(), os = strides[1].back();
      for_each_elementwise_run(shape, strides, [&](const std::array<int64_t, 2>& off, int64_t n) {
        map_simd_strided(src + off[0], is, dst + off[1], os, n, op);
      });
    }
  } else {
    cpu::unary_op<In, Out>(in, out, op);
  }
}

template <typename R>
void check_output(const char* name, const array& out) {
  if (dtype_v<R> != out.dtype()) {
    throw std::runtime_error(msg("[", name, "::eval_cpu] Computes ", dtype_v<R>,
                                 " but the output is ", out.dtype(), "."));
  }
}

// Runs `op` on the C++ type of in's dtype; float16 and bfloat16 compute in float.
template <typename Op>
void unary(const char* name, const array& in, array& out, Op op) {
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_invocable_v<const Op&, T>) {
      using R = std::invoke_result_t<const Op&, T>;
      check_output<R>(name, out);
      run<T, R>(in, out, op);
    } else if constexpr (is_half_v<T> && std::is_invocable_v<const Op&, float>) {
      using F = std::invoke_result_t<const Op&, float>;
      using R = std::conditional_t<std::is_same_v<F, float>, T, F>;
      check_output<R>(name, out);
      if constexpr (requires { Op::simd; } && std::is_same_v<R, T>) {
        run_half_simd<T>(in, out, op);
      } else if constexpr (requires { Op::one_rounding; }) {
        // The conversions vectorize only in the per-ISA loops, allowed for one rounding.
        cpu::unary_op<T, R, true>(in, out,
                                  [op](T x) { return static_cast<R>(op(static_cast<float>(x))); });
      } else {
        run<T, R>(in, out, [op](T x) { return static_cast<R>(op(static_cast<float>(x))); });
      }
    } else {
      throw std::runtime_error(
          msg("[", name, "::eval_cpu] Unsupported input dtype ", in.dtype(), "."));
    }
  });
}

}  // namespace

#define KILN_UNARY_EVAL(NAME, FN)                                     \
  void NAME::eval_cpu(const std::vector<array>& inputs, array& out) { \
    unary(#NAME, inputs[0], out, cpu::fn::FN{});                      \
  }

KILN_UNARY_EVAL(Abs, Abs)
KILN_UNARY_EVAL(Negative, Negative)
KILN_UNARY_EVAL(Sign, Sign)
KILN_UNARY_EVAL(Square, Square)
KILN_UNARY_EVAL(Sqrt, Sqrt)
KILN_UNARY_EVAL(Rsqrt, Rsqrt)
KILN_UNARY_EVAL(Exp, Exp)
KILN_UNARY_EVAL(Expm1, Expm1)
KILN_UNARY_EVAL(Log, Log)
KILN_UNARY_EVAL(Log1p, Log1p)
KILN_UNARY_EVAL(Log2, Log2)
KILN_UNARY_EVAL(Log10, Log10)
KILN_UNARY_EVAL(Sin, Sin)
KILN_UNARY_EVAL(Cos, Cos)
KILN_UNARY_EVAL(Tan, Tan)
KILN_UNARY_EVAL(ArcSin, ArcSin)
KILN_UNARY_EVAL(ArcCos, ArcCos)
KILN_UNARY_EVAL(ArcTan, ArcTan)
KILN_UNARY_EVAL(Sinh, Sinh)
KILN_UNARY_EVAL(Cosh, Cosh)
KILN_UNARY_EVAL(Tanh, Tanh)
KILN_UNARY_EVAL(ArcSinh, ArcSinh)
KILN_UNARY_EVAL(ArcCosh, ArcCosh)
KILN_UNARY_EVAL(ArcTanh, ArcTanh)
KILN_UNARY_EVAL(Erf, Erf)
KILN_UNARY_EVAL(ErfInv, ErfInv)
KILN_UNARY_EVAL(Sigmoid, Sigmoid)
KILN_UNARY_EVAL(Floor, Floor)
KILN_UNARY_EVAL(Ceil, Ceil)
KILN_UNARY_EVAL(Trunc, Trunc)
KILN_UNARY_EVAL(ToFP8, ToFP8)
KILN_UNARY_EVAL(FromFP8, FromFP8)
KILN_UNARY_EVAL(Round, Round)
KILN_UNARY_EVAL(LogicalNot, LogicalNot)
KILN_UNARY_EVAL(BitwiseInvert, BitwiseInvert)
KILN_UNARY_EVAL(IsNaN, IsNaN)
KILN_UNARY_EVAL(IsInf, IsInf)
KILN_UNARY_EVAL(IsFinite, IsFinite)
KILN_UNARY_EVAL(IsPosInf, IsPosInf)
KILN_UNARY_EVAL(IsNegInf, IsNegInf)
KILN_UNARY_EVAL(Real, RealPart)
KILN_UNARY_EVAL(Imag, ImagPart)
KILN_UNARY_EVAL(Conjugate, Conjugate)

}  // namespace kiln
