// eval_gpu of Sort and ArgSort: a stable sort of every line along the axis, NaN last, as the
// CPU. Kernels: device/sort.cuh. Lines of up to kSortTile elements sort in shared memory, one
// block per line; longer lines sort in tiles that merge passes join into one run.
#include <algorithm>
#include <string>
#include <utility>

#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_reduce.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

constexpr int64_t kTile = 2048;     // device/sort.cuh's kSortTile
constexpr int64_t kMergeItems = 8;  // device/sort.cuh's kMergeItems
constexpr uint32_t kBlock = 256;

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
  for (const char* k : {"sort_block", "sort_tiles", "merge_pass", "sort_write"})
    m.kernels.push_back(kernel(k, key));
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

  const gpu::Module& mod =
      gpu::get_module(s.context().index(), module_name(key), [key] { return sort_module(key); });
  const CUdeviceptr src = gpu::device_address(in);
  auto smem = [&](int64_t size) {
    return static_cast<size_t>((size * key.size + 15) / 16 * 16 + size * 4);
  };
  if (a.n <= kTile) {
    int64_t size = 1;
    while (size < a.n) size *= 2;
    const uint32_t threads = static_cast<uint32_t>(std::clamp<int64_t>(size / 2, 32, 1024));
    gpu::launch_kernel(mod.function(kernel("sort_block", key)),
                       {static_cast<uint32_t>(a.lines), 1, 1}, {threads}, smem(size), s, src,
                       values, indices, static_cast<int32_t>(size), a);
    return;
  }

  // Tiles sorted in shared memory, then merge passes ping-ponging between two scratch pairs.
  const int64_t total = a.lines * a.n;
  CUdeviceptr keys[2] = {gpu::scratch(total * key.size, s), gpu::scratch(total * key.size, s)};
  CUdeviceptr pos[2] = {gpu::scratch(total * 4, s), gpu::scratch(total * 4, s)};
  const int64_t tiles = (a.n + kTile - 1) / kTile;
  if (a.lines * tiles > 0x7fffffff) {
    throw std::runtime_error(msg("[sort] ", a.lines * tiles, " tiles exceed the grid limit."));
  }
  gpu::launch_kernel(mod.function(kernel("sort_tiles", key)),
                     {static_cast<uint32_t>(a.lines * tiles), 1, 1}, {1024}, smem(kTile), s, src,
                     keys[0], pos[0], tiles, a);
  int cur = 0;
  CUfunction merge = mod.function(kernel("merge_pass", key));
  for (int64_t width = kTile; width < a.n; width *= 2, cur ^= 1) {
    const int64_t pairs = (a.n + 2 * width - 1) / (2 * width);
    const int64_t chunks = (2 * width + kMergeItems - 1) / kMergeItems;
    gpu::launch_kernel(merge, gpu::grid_1d(a.lines * pairs * chunks, kBlock), {kBlock}, 0, s,
                       keys[cur], pos[cur], keys[cur ^ 1], pos[cur ^ 1], a.lines, a.n, width, pairs,
                       chunks);
  }
  gpu::launch_kernel(mod.function(kernel("sort_write", key)), gpu::grid_1d(total, kBlock), {kBlock},
                     0, s, keys[cur], pos[cur], values, indices, a);
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
