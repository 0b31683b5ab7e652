// eval_gpu of the unary elementwise primitives. Kernels: device/unary.cuh; functors, named
// as the primitives: device/unary_ops.cuh.
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_unary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// A unary functor, the input dtypes it takes and its output dtype for an input dtype. The
// table is also the family's catalog of modules, which the CI test compiles.
struct UnaryKernel {
  const char* op;
  bool (*supports)(Dtype);
  Dtype (*out_dtype)(Dtype);
};

Dtype same_dtype(Dtype d) {
  return d;
}

constexpr UnaryKernel kExp{"Exp", is_inexact, same_dtype};
constexpr UnaryKernel kUnaryKernels[] = {kExp};

void unary_gpu(const UnaryKernel& k, const Primitive& p, const array& in, array& out) {
  if (!k.supports(in.dtype())) {
    throw std::invalid_argument(
        msg("[", p.name(), "::eval_gpu] Unsupported dtype ", in.dtype(), "."));
  }
  gpu::unary_op_gpu(k.op, in, out, gpu::device_stream(p.stream()));
}

}  // namespace

void Exp::eval_gpu(const std::vector<array>& inputs, array& out) {
  unary_gpu(kExp, *this, inputs[0], out);
}

KILN_GPU_MODULE_CATALOG(unary, [](const gpu::ModuleSink& sink) {
  for (const auto& k : kUnaryKernels) {
    for (Dtype d : all_dtypes) {
      if (k.supports(d)) gpu::unary_modules(k.op, d, k.out_dtype(d), sink);
    }
  }
});

}  // namespace kiln
