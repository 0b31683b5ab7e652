// eval_gpu of Sort and ArgSort: a stable sort of every line along the axis, NaN last, as the
// CPU. Lines of up to kSortTile elements sort in shared memory, one block per line
// (device/sort.cuh); longer lines by LSD radix sort (device/radix_sort.cuh, launched by
// sort_plan.h), one pass per 8 key bits, each pass bandwidth-bound.
#include <algorithm>
#include <string>
#include <utility>

#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/sort_launcher.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_reduce.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

constexpr int64_t kTile = 2048;  // device/sort.cuh's kSortTile

// Mirror of device/sort.cuh's SortArgs.
struct SortArgs {
  gpu::DimsArg<int32_t> rest_shape;
  gpu::DimsArg<int64_t> rest_strides;
  int32_t rest_ndim = 0;
  int64_t lines = 0;
  int64_t n = 0;
  int64_t stride = 0;
  int64_t inner = 0;
};
static_assert(sizeof(SortArgs) == 232);

/** The dtype lines sort in: bool as its byte (false < true either way). */
Dtype key_dtype(Dtype d) {
  return d == bool_ ? uint8 : d;
}

std::string kernel(const char* name, Dtype key) {
  return std::string("kiln::") + name + "<" + gpu::device_type(key) + ">";
}

std::string module_name(Dtype key) {
  return "sort_" + std::string(type_to_name(key));
}

gpu::ModuleSource sort_module(Dtype key) {
  gpu::ModuleSource m{module_name(key), "#include \"kiln/backend/cuda/device/sort.cuh\"\n", {}};
  m.kernels.push_back(kernel("sort_block", key));
  return m;
}

/** Sorts every line of `in` along `axis`, writing the values to `values` and/or the
 * positions to `indices` (row-contiguous buffers of in's shape; either may be 0). */
void sort_gpu(const array& in, int axis, CUdeviceptr values, CUdeviceptr indices,
              gpu::DeviceStream& s) {
  const Dtype key = key_dtype(in.dtype());
  const Shape& shape = in.shape();
  SortArgs a;
  a.n = shape[axis];
  a.stride = in.strides()[axis];
  a.inner = array::row_major_strides(shape)[axis];
  Shape rest;
  Strides rest_strides;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (i == axis) continue;
    rest.push_back(shape[i]);
    rest_strides.push_back(in.strides()[i]);
  }
  a.lines = static_cast<int64_t>(shape_size(rest));
  auto [cshape, cstrides] = collapse_contiguous_dims<1>(rest, {rest_strides});
  a.rest_shape = gpu::dims_arg(cshape, "sort");
  a.rest_strides = gpu::dims_arg(cstrides[0], "sort");
  a.rest_ndim = static_cast<int32_t>(cshape.size());

  if (a.n > kTile) {
    // Radix sort over affine rows (a copy with the axis last when the view is not).
    const gpu::AffineRows rows = gpu::affine_rows(in, axis, s);
    sortplan::RadixSortJob job;
    job.key = gpu::sort_key_type(in.dtype());
    job.pairs = indices != 0;
    job.rows = a.lines;
    job.n = a.n;
    job.in = rows.ptr;
    job.in_row_stride = rows.row_stride;
    job.out_values = values;
    job.out_indices = indices;
    job.out_inner = a.inner;
    gpu::SortLauncher launcher(s, job.key);
    sortplan::radix_sort(launcher, job);
    return;
  }
  const gpu::Module& mod =
      gpu::get_module(s.context().index(), module_name(key), [key] { return sort_module(key); });
  const CUdeviceptr src = gpu::device_address(in);
  auto smem = [&](int64_t size) {
    return static_cast<size_t>((size * key.size + 15) / 16 * 16 + size * 4);
  };
  int64_t size = 1;
  while (size < a.n) size *= 2;
  const uint32_t threads = static_cast<uint32_t>(std::clamp<int64_t>(size / 2, 32, 1024));
  gpu::launch_kernel(mod.function(kernel("sort_block", key)),
                     {static_cast<uint32_t>(a.lines), 1, 1}, {threads}, smem(size), s, src, values,
                     indices, static_cast<int32_t>(size), a);
}

void check_dtype(const char* name, Dtype d) {
  if (d == complex64) {
    throw std::invalid_argument(msg("[", name, "::eval_gpu] complex64 is not supported."));
  }
}

}  // namespace

void Sort::eval_gpu(const std::vector<array>& inputs, array& out) {
  check_dtype("Sort", inputs[0].dtype());
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  sort_gpu(inputs[0], axis_, gpu::device_address(out), 0, s);
}

void ArgSort::eval_gpu(const std::vector<array>& inputs, array& out) {
  check_dtype("ArgSort", inputs[0].dtype());
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  sort_gpu(inputs[0], axis_, 0, gpu::device_address(out), s);
}

KILN_GPU_MODULE_CATALOG(sort, [](const gpu::ModuleSink& sink) {
  for (Dtype d : all_dtypes) {
    if (d != complex64 && d != bool_) sink(module_name(d), sort_module(d));
  }
});

}  // namespace kiln
