// eval_gpu of the unary elementwise primitives. Kernels: device/unary.cuh; functors, named
// as the primitives: device/unary_ops.cuh.
#include <set>
#include <string>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/dtype_rules.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_unary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// A unary functor: the input dtypes its primitive takes on the GPU, the dtype its kernel
// reads for each, and the dtype the kernel writes. The table is also the family's catalog
// of modules, which the CI test compiles.
struct UnaryKernel {
  const char* op;
  bool (*takes)(Dtype);
  Dtype (*kernel_in)(Dtype);
  Dtype (*kernel_out)(Dtype);
};

using gpu::dtype_rules::any_dtype, gpu::dtype_rules::not_bool, gpu::dtype_rules::same,
    gpu::dtype_rules::wrapping, gpu::dtype_rules::bits_if_integral, gpu::dtype_rules::to_bool;

bool signed_or_inexact(Dtype d) {
  return is_signed_integer(d) || is_inexact(d);
}
Dtype real_part(Dtype d) {
  return d == complex64 ? float32 : d;
}
Dtype to_float32(Dtype) {
  return float32;
}

constexpr UnaryKernel kAbs{"Abs", signed_or_inexact, same, real_part};
constexpr UnaryKernel kNegative{"Negative", not_bool, wrapping, same};
constexpr UnaryKernel kSign{"Sign", not_bool, same, same};
constexpr UnaryKernel kSquare{"Square", not_bool, wrapping, same};
#define KILN_INEXACT(NAME) constexpr UnaryKernel k##NAME{#NAME, is_inexact, same, same};
KILN_INEXACT(Sqrt)
KILN_INEXACT(Rsqrt)
KILN_INEXACT(Exp)
KILN_INEXACT(Expm1)
KILN_INEXACT(Log)
KILN_INEXACT(Log1p)
KILN_INEXACT(Log2)
KILN_INEXACT(Log10)
KILN_INEXACT(Sin)
KILN_INEXACT(Cos)
KILN_INEXACT(Tan)
KILN_INEXACT(ArcSin)
KILN_INEXACT(ArcCos)
KILN_INEXACT(ArcTan)
KILN_INEXACT(Sinh)
KILN_INEXACT(Cosh)
KILN_INEXACT(Tanh)
KILN_INEXACT(ArcSinh)
KILN_INEXACT(ArcCosh)
KILN_INEXACT(ArcTanh)
KILN_INEXACT(Sigmoid)
#undef KILN_INEXACT
constexpr UnaryKernel kErf{"Erf", is_floating_point, same, same};
constexpr UnaryKernel kErfInv{"ErfInv", is_floating_point, same, same};
constexpr UnaryKernel kFloor{"Floor", is_floating_point, same, same};
constexpr UnaryKernel kCeil{"Ceil", is_floating_point, same, same};
constexpr UnaryKernel kTrunc{"Trunc", is_floating_point, same, same};
bool is_uint8(Dtype d) {
  return d == uint8;
}
Dtype to_uint8(Dtype) {
  return uint8;
}
constexpr UnaryKernel kToFP8{"ToFP8", is_floating_point, same, to_uint8};
constexpr UnaryKernel kFromFP8{"FromFP8", is_uint8, same, to_float32};
constexpr UnaryKernel kRound{"Round", is_floating_point, same, same};
constexpr UnaryKernel kLogicalNot{"LogicalNot", any_dtype, bits_if_integral, to_bool};
constexpr UnaryKernel kBitwiseInvert{"BitwiseInvert", is_integral, wrapping, same};
// The classifications of integers and bool are constants (see classify).
constexpr UnaryKernel kIsNaN{"IsNaN", is_inexact, same, to_bool};
constexpr UnaryKernel kIsInf{"IsInf", is_inexact, same, to_bool};
constexpr UnaryKernel kIsFinite{"IsFinite", is_inexact, same, to_bool};
constexpr UnaryKernel kIsPosInf{"IsPosInf", is_floating_point, same, to_bool};
constexpr UnaryKernel kIsNegInf{"IsNegInf", is_floating_point, same, to_bool};
constexpr UnaryKernel kReal{"Real", is_complex, same, to_float32};
constexpr UnaryKernel kImag{"Imag", is_complex, same, to_float32};
constexpr UnaryKernel kConjugate{"Conjugate", is_complex, same, same};

constexpr const UnaryKernel* kUnaryKernels[] = {
    &kAbs,      &kNegative, &kSign,       &kSquare,        &kSqrt,      &kRsqrt,  &kExp,
    &kExpm1,    &kLog,      &kLog1p,      &kLog2,          &kLog10,     &kSin,    &kCos,
    &kTan,      &kArcSin,   &kArcCos,     &kArcTan,        &kSinh,      &kCosh,   &kTanh,
    &kArcSinh,  &kArcCosh,  &kArcTanh,    &kSigmoid,       &kErf,       &kErfInv, &kFloor,
    &kCeil,     &kRound,    &kLogicalNot, &kBitwiseInvert, &kIsNaN,     &kIsInf,  &kIsFinite,
    &kIsPosInf, &kIsNegInf, &kReal,       &kImag,          &kConjugate, &kTrunc,  &kToFP8,
    &kFromFP8};

void unary_gpu(const UnaryKernel& k, const Primitive& p, const array& in, array& out) {
  if (!k.takes(in.dtype())) {
    throw std::invalid_argument(
        msg("[", p.name(), "::eval_gpu] Unsupported dtype ", in.dtype(), "."));
  }
  const Dtype kin = k.kernel_in(in.dtype());
  gpu::unary_op_gpu(k.op, in, out, kin, k.kernel_out(kin), gpu::device_stream(p.stream()));
}

// A classification of integers or bool (a constant), else the kernel: the constant is one
// byte broadcast over the output's shape.
void classify(const UnaryKernel& k, bool constant, const Primitive& p, const array& in,
              array& out) {
  if (is_inexact(in.dtype())) return unary_gpu(k, p, in, out);
  auto& s = gpu::device_stream(p.stream());
  if (out.size() == 0) {
    out.set_data(gpu::new_device_storage(0, s));
    return;
  }
  const Strides strides(out.ndim(), 0);
  auto [flags, data_size] = array::layout(out.shape(), strides);
  out.set_data(gpu::new_device_storage(1, s), data_size, strides, flags);
  KILN_CU(cuMemsetD8Async, gpu::device_address(out), constant ? 1 : 0, 1, s.handle());
}

}  // namespace

#define KILN_UNARY_GPU(NAME)                                          \
  void NAME::eval_gpu(const std::vector<array>& inputs, array& out) { \
    unary_gpu(k##NAME, *this, inputs[0], out);                        \
  }

// |x| of an unsigned integer is x: a copy (the op never asks, a transform might).
void Abs::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (is_unsigned(inputs[0].dtype()))
    gpu::copy_gpu(inputs[0], out, gpu::device_stream(stream()));
  else
    unary_gpu(kAbs, *this, inputs[0], out);
}
KILN_UNARY_GPU(Negative)
KILN_UNARY_GPU(Sign)
KILN_UNARY_GPU(Square)
KILN_UNARY_GPU(Sqrt)
KILN_UNARY_GPU(Rsqrt)
KILN_UNARY_GPU(Exp)
KILN_UNARY_GPU(Expm1)
KILN_UNARY_GPU(Log)
KILN_UNARY_GPU(Log1p)
KILN_UNARY_GPU(Log2)
KILN_UNARY_GPU(Log10)
KILN_UNARY_GPU(Sin)
KILN_UNARY_GPU(Cos)
KILN_UNARY_GPU(Tan)
KILN_UNARY_GPU(ArcSin)
KILN_UNARY_GPU(ArcCos)
KILN_UNARY_GPU(ArcTan)
KILN_UNARY_GPU(Sinh)
KILN_UNARY_GPU(Cosh)
KILN_UNARY_GPU(Tanh)
KILN_UNARY_GPU(ArcSinh)
KILN_UNARY_GPU(ArcCosh)
KILN_UNARY_GPU(ArcTanh)
KILN_UNARY_GPU(Erf)
KILN_UNARY_GPU(ErfInv)
KILN_UNARY_GPU(Sigmoid)
KILN_UNARY_GPU(Floor)
KILN_UNARY_GPU(Ceil)
KILN_UNARY_GPU(Trunc)
KILN_UNARY_GPU(ToFP8)
KILN_UNARY_GPU(FromFP8)
KILN_UNARY_GPU(Round)
KILN_UNARY_GPU(LogicalNot)
KILN_UNARY_GPU(BitwiseInvert)
KILN_UNARY_GPU(Real)
KILN_UNARY_GPU(Imag)
KILN_UNARY_GPU(Conjugate)
#undef KILN_UNARY_GPU

void IsNaN::eval_gpu(const std::vector<array>& inputs, array& out) {
  classify(kIsNaN, false, *this, inputs[0], out);
}
void IsInf::eval_gpu(const std::vector<array>& inputs, array& out) {
  classify(kIsInf, false, *this, inputs[0], out);
}
void IsFinite::eval_gpu(const std::vector<array>& inputs, array& out) {
  classify(kIsFinite, true, *this, inputs[0], out);
}
void IsPosInf::eval_gpu(const std::vector<array>& inputs, array& out) {
  classify(kIsPosInf, false, *this, inputs[0], out);
}
void IsNegInf::eval_gpu(const std::vector<array>& inputs, array& out) {
  classify(kIsNegInf, false, *this, inputs[0], out);
}

KILN_GPU_MODULE_CATALOG(unary, [](const gpu::ModuleSink& sink) {
  std::set<std::string> seen;  // dtypes sharing a kernel dtype share its modules
  for (const UnaryKernel* k : kUnaryKernels) {
    for (Dtype d : all_dtypes) {
      if (!k->takes(d)) continue;
      const Dtype kin = k->kernel_in(d), kout = k->kernel_out(kin);
      const std::string name = gpu::unary_module_name(k->op, kin, kout);
      if (seen.insert(name).second) sink(name, gpu::unary_module(k->op, kin, kout));
    }
  }
});

}  // namespace kiln
