// eval_gpu of global_norm. Kernels: device/norm/global_norm.cuh. One `partials` launch per
// table of up to kSegments arrays (a block per 16 KB chunk), then one `finish`: two launches
// for a model's gradients instead of a square and a two-pass reduction per array.
#include <algorithm>
#include <limits>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/fast_common.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/fast_primitives.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

// Mirrors of device/norm/global_norm.cuh.
constexpr uint32_t kBlock = 256;
constexpr int64_t kChunkBytes = 16384;
constexpr int kSegments = 160;
struct Segment {
  uint64_t ptr;
  int64_t n;
  int32_t first_block;
  int32_t dtype;
};
struct Segments {
  Segment s[kSegments];
  int32_t count;
};

int dtype_code(Dtype d) {
  if (d == float32) return 0;
  if (d == float16) return 1;
  if (d == bfloat16) return 2;
  if (d == float64) return 3;
  throw std::invalid_argument(msg("[global_norm] Unsupported dtype ", d, "."));
}

// The blocks of one array: one per 16 KB chunk.
int64_t chunks(const array& a) {
  return (static_cast<int64_t>(a.nbytes()) + kChunkBytes - 1) / kChunkBytes;
}

gpu::ModuleSource norm_module() {
  return {"fast_global_norm",
          "#include \"kiln/backend/cuda/device/norm/global_norm.cuh\"\n",
          {"kiln::gnorm::partials", "kiln::gnorm::finish<float>", "kiln::gnorm::finish<double>"}};
}

}  // namespace

void GlobalNorm::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  array& out = outputs[0];
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  const gpu::Module& mod =
      gpu::get_module(s.context().index(), "fast_global_norm", [] { return norm_module(); });

  // Each array's chunks; a dense span (any axis order) is read as it lies.
  int64_t blocks = 0;
  std::vector<Segment> segs;
  std::vector<int64_t> ends;  // each segment's first block after it
  for (const array& in : inputs) {
    if (in.size() == 0) continue;
    const bool dense = in.flags().contiguous && in.data_size() == in.size();
    const CUdeviceptr p = dense ? gpu::device_address(in) : gpu::fast::dense_address(in, s);
    segs.push_back(
        {p, static_cast<int64_t>(in.size()), static_cast<int32_t>(blocks), dtype_code(in.dtype())});
    blocks += chunks(in);
    ends.push_back(blocks);
    if (blocks > std::numeric_limits<int32_t>::max()) {
      throw std::invalid_argument(
          msg("[global_norm] The arrays hold ", blocks, " chunks of 16 KB, over 2^31."));
    }
  }
  const CUdeviceptr partial = gpu::scratch(std::max<int64_t>(blocks, 1) * sizeof(double), s);
  for (size_t first = 0; first < segs.size(); first += kSegments) {
    Segments table{};
    table.count = static_cast<int32_t>(std::min<size_t>(kSegments, segs.size() - first));
    const int32_t offset = segs[first].first_block;
    for (int k = 0; k < table.count; ++k) {
      table.s[k] = segs[first + k];
      table.s[k].first_block -= offset;
    }
    const auto grid = static_cast<uint32_t>(ends[first + table.count - 1] - offset);
    gpu::launch_kernel(mod.function("kiln::gnorm::partials"), {grid}, {kBlock}, 0, s, table,
                       partial, offset);
  }
  gpu::launch_kernel(mod.function(out.dtype() == float64 ? "kiln::gnorm::finish<double>"
                                                         : "kiln::gnorm::finish<float>"),
                     {1}, {kBlock}, 0, s, partial, static_cast<int32_t>(blocks),
                     gpu::device_address(out));
}

KILN_GPU_MODULE_CATALOG(fast_global_norm, [](const gpu::ModuleSink& sink) {
  sink("fast_global_norm", norm_module());
});

}  // namespace kiln::fast
