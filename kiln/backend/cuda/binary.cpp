// eval_gpu of the binary elementwise primitives. Kernels: device/binary.cuh; functors, named
// as the primitives: device/binary_ops.cuh.
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_binary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// A binary functor, the input dtypes it takes and its output dtype for an input dtype. The
// table is also the family's catalog of modules, which the CI test compiles.
struct BinaryKernel {
  const char* op;
  bool (*supports)(Dtype);
  Dtype (*out_dtype)(Dtype);
};

bool any_dtype(Dtype) {
  return true;
}
Dtype same_dtype(Dtype d) {
  return d;
}

constexpr BinaryKernel kAdd{"Add", any_dtype, same_dtype};
constexpr BinaryKernel kBinaryKernels[] = {kAdd};

void binary_gpu(const BinaryKernel& k, const Primitive& p, const std::vector<array>& inputs,
                array& out) {
  const array &a = inputs[0], &b = inputs[1];
  if (!k.supports(a.dtype())) {
    throw std::invalid_argument(
        msg("[", p.name(), "::eval_gpu] Unsupported dtype ", a.dtype(), "."));
  }
  gpu::binary_op_gpu(k.op, a, b, out, gpu::device_stream(p.stream()));
}

}  // namespace

void Add::eval_gpu(const std::vector<array>& inputs, array& out) {
  binary_gpu(kAdd, *this, inputs, out);
}

KILN_GPU_MODULE_CATALOG(binary, [](const gpu::ModuleSink& sink) {
  for (const auto& k : kBinaryKernels) {
    for (Dtype d : all_dtypes) {
      if (!k.supports(d)) continue;
      gpu::binary_modules(k.op, d, k.out_dtype(d), sink);
    }
  }
});

}  // namespace kiln
