// SortLauncher, affine_rows and the catalog of the sort family's radix modules.
#include "kiln/backend/cuda/sort_launcher.h"

#include <set>
#include <string>

#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/utils.h"

namespace kiln::gpu {

namespace {

std::string module_name(sortplan::Family f, const sortplan::KeyType& k) {
  return std::string("sort_") + sortplan::family_name(f) + "_" + k.tag();
}

ModuleSource module_source(sortplan::Family f, const sortplan::KeyType& k) {
  return ModuleSource{module_name(f, k),
                      std::string("#include \"") + sortplan::family_header(f) + "\"\n",
                      sortplan::family_kernels(f, k)};
}

}  // namespace

sortplan::KeyType sort_key_type(Dtype d) {
  sortplan::KeyType k;
  k.bytes = static_cast<int>(d.size);
  if (d == complex64)
    k.kind = 5;
  else if (d == float16)
    k.kind = 3;
  else if (d == bfloat16)
    k.kind = 4;
  else if (is_floating_point(d))
    k.kind = 2;
  else if (is_signed_integer(d))
    k.kind = 1;
  else
    k.kind = 0;  // bool and unsigned integers
  return k;
}

AffineRows affine_rows(const array& in, int axis, DeviceStream& s) {
  const int ndim = static_cast<int>(in.ndim());
  const int64_t n = in.shape()[axis];
  if (axis == ndim - 1 && (in.strides()[axis] == 1 || n <= 1)) {
    Shape outer(in.shape().begin(), in.shape().end() - 1);
    Strides outer_strides(in.strides().begin(), in.strides().end() - 1);
    auto [shape, strides] = collapse_contiguous_dims<1>(outer, {outer_strides});
    if (shape.size() == 1) return {device_address(in), shape[0] == 1 ? n : strides[0][0]};
  }
  // A row-contiguous copy of the view with `axis` moved last.
  Shape shape;
  Strides src;
  for (int i = 0; i < ndim; ++i) {
    if (i == axis) continue;
    shape.push_back(in.shape()[i]);
    src.push_back(in.strides()[i]);
  }
  shape.push_back(in.shape()[axis]);
  src.push_back(in.strides()[axis]);
  const CUdeviceptr dst = scratch(in.nbytes(), s);
  copy_general(device_address(in), dst, in.dtype(), shape, src, array::row_major_strides(shape), s);
  return {dst, n};
}

void SortLauncher::launch(sortplan::Family f, const std::string& kernel, int64_t blocks,
                          uint32_t threads, void** params) {
  const sortplan::KeyType key = key_;
  const Module& m = get_module(s_.context().index(), module_name(f, key),
                               [f, key] { return module_source(f, key); });
  gpu::launch(m.function(kernel), {static_cast<uint32_t>(blocks), 1, 1}, {threads, 1, 1}, 0, s_,
              params);
}

uint64_t SortLauncher::scratch(size_t bytes) {
  return gpu::scratch(bytes, s_);
}

void SortLauncher::zero(uint64_t ptr, size_t bytes) {
  if (bytes) KILN_CU(cuMemsetD8Async, ptr, 0, bytes, s_.handle());
}

int SortLauncher::multiprocessors() const {
  return s_.context().sm_count();
}

// Every family for every key type a real dtype maps to.
KILN_GPU_MODULE_CATALOG(sort_radix, [](const ModuleSink& sink) {
  std::set<std::string> seen;
  for (Dtype d : all_dtypes) {
    const sortplan::KeyType k = sort_key_type(d);
    if (!seen.insert(k.tag()).second) continue;
    for (auto f : {sortplan::Family::radix, sortplan::Family::select, sortplan::Family::search,
                   sortplan::Family::unique}) {
      sink(module_name(f, k), module_source(f, k));
    }
  }
});

}  // namespace kiln::gpu
