// eval_gpu of the scans (cumsum, cumprod). Kernels: device/scan.cuh.
//
// The input, made row-contiguous if needed, is viewed as (outer, n, inner) with the scan over
// n: lines (inner == 1) are scanned by a warp or a block each, long lines on few blocks in
// chunks (a first launch writes each chunk's total, the second scans each chunk starting from
// the totals before it); otherwise a thread per column walks the rows.
#include <algorithm>
#include <string>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_reduce.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

constexpr uint32_t kBlock = 256;  // device/reduce.cuh's kReduceBlock
constexpr int64_t kItems = 8;     // device/scan.cuh's kScanItems
// Lines up to this many elements take a warp; longer ones a block.
constexpr int64_t kWarpLine = 32 * kItems * 4;
// Chunks of a split line hold at least this many elements.
constexpr int64_t kMinChunk = 1 << 15;

// Mirrors of device/scan.cuh's argument structs.
struct LineArgs {
  int64_t lines = 0;
  int64_t n = 0;
  int64_t chunk = 0;
  int32_t group = 32;
  bool reverse = false;
  bool inclusive = true;
  bool totals = false;
};
static_assert(sizeof(LineArgs) == 32);

struct ColumnArgs {
  int64_t outer = 0;
  int64_t n = 0;
  int64_t inner = 0;
  bool reverse = false;
  bool inclusive = true;
};
static_assert(sizeof(ColumnArgs) == 32);

const char* op_name(Scan::ReduceType t) {
  switch (t) {
    case Scan::Sum:
      return "Sum";
    case Scan::Prod:
      return "Prod";
    case Scan::Max:
      return "Max";
    case Scan::Min:
      return "Min";
    case Scan::LogAddExp:
      return "LogAddExp";
  }
  return "?";
}

/** The accumulator of a scan of `in` (as the CPU's): half types in float32; sums and products
 * of integers in the unsigned type of the output's width, max and min in the input type. */
Dtype acc_dtype(Scan::ReduceType t, Dtype in) {
  if (in == float16 || in == bfloat16) return float32;
  if (is_floating_point(in) || is_complex(in)) return in;
  if (t != Scan::Sum && t != Scan::Prod) return in;
  return in.size == 8 ? uint64 : uint32;
}

/** Whether a scan of `t` over `in` exists (max/min: ordered types; log-sum-exp: floats). */
bool scan_supported(Scan::ReduceType t, Dtype in) {
  if (t == Scan::Max || t == Scan::Min) return true;  // complex64 lexicographically
  if (t == Scan::LogAddExp) return is_inexact(in);
  return true;
}

std::string policy(Scan::ReduceType t, Dtype in) {
  return "kiln::ReducePolicy<kiln::" + std::string(op_name(t)) + "Op, " + gpu::device_type(in) +
         ", " + gpu::device_type(acc_dtype(t, in)) + ", " +
         gpu::device_type(Scan::out_dtype(t, in)) + ">";
}

std::string lines_kernel(Scan::ReduceType t, Dtype in) {
  return "kiln::scan_lines<" + policy(t, in) + ">";
}
std::string columns_kernel(Scan::ReduceType t, Dtype in) {
  return "kiln::scan_columns<" + policy(t, in) + ">";
}

std::string module_name(Scan::ReduceType t, Dtype in) {
  return std::string("scan_") + op_name(t) + "_" + std::string(type_to_name(in));
}

gpu::ModuleSource scan_module(Scan::ReduceType t, Dtype in) {
  return {module_name(t, in),
          "#include \"kiln/backend/cuda/device/scan.cuh\"\n",
          {lines_kernel(t, in), columns_kernel(t, in)}};
}

}  // namespace

void Scan::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  const Dtype d = in.dtype();
  if (!scan_supported(type_, d)) {
    throw std::invalid_argument(msg("[", name(), "] Unsupported dtype ", d, "."));
  }
  if (out.dtype() != Scan::out_dtype(type_, d)) {
    throw std::runtime_error(
        msg("[Scan::eval_gpu] Unexpected output dtype ", out.dtype(), " for input ", d, "."));
  }
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  // Scans read each line in order: a strided input is made row-contiguous once.
  CUdeviceptr src = gpu::device_address(in);
  if (!in.flags().row_contiguous) {
    src = gpu::scratch(in.nbytes(), s);
    gpu::copy_to_row_contiguous(in, src, s);
  }
  const Shape& shape = in.shape();
  int64_t outer = 1, inner = 1;
  const int64_t n = shape[axis_];
  for (int i = 0; i < axis_; ++i) outer *= shape[i];
  for (size_t i = axis_ + 1; i < shape.size(); ++i) inner *= shape[i];

  const Scan::ReduceType t = type_;
  const gpu::Module& mod =
      gpu::get_module(s.context().index(), module_name(t, d), [t, d] { return scan_module(t, d); });
  const CUdeviceptr dst = gpu::device_address(out);
  if (inner > 1) {
    ColumnArgs a{outer, n, inner, reverse_, inclusive_};
    gpu::launch_kernel(mod.function(columns_kernel(t, d)), gpu::grid_1d(outer * inner, kBlock),
                       {kBlock}, 0, s, src, dst, a);
    return;
  }
  LineArgs a;
  a.lines = outer;
  a.n = n;
  a.reverse = reverse_;
  a.inclusive = inclusive_;
  a.group = n <= kWarpLine ? 32 : static_cast<int32_t>(kBlock);
  int64_t splits = 1;
  const int64_t target = gpu::resident_blocks(s);
  if (a.group > 32 && outer < target) {
    splits = std::clamp<int64_t>(std::min((target + outer - 1) / outer, n / kMinChunk), 1, 65535);
  }
  // Chunks are whole tiles, so every chunk but the last is full.
  const int64_t tile = a.group * kItems;
  a.chunk = ((n + splits - 1) / splits + tile - 1) / tile * tile;
  splits = (n + a.chunk - 1) / a.chunk;
  const int64_t per_block = kBlock / a.group;
  const gpu::Dim3 grid{static_cast<uint32_t>((outer + per_block - 1) / per_block),
                       static_cast<uint32_t>(splits), 1};
  CUfunction f = mod.function(lines_kernel(t, d));
  CUdeviceptr partial = 0;
  if (splits > 1) {
    partial = gpu::scratch(outer * splits * acc_dtype(t, d).size, s);
    LineArgs totals = a;
    totals.totals = true;
    gpu::launch_kernel(f, grid, {kBlock}, 0, s, src, dst, partial, totals);
  }
  gpu::launch_kernel(f, grid, {kBlock}, 0, s, src, dst, partial, a);
}

KILN_GPU_MODULE_CATALOG(scan, [](const gpu::ModuleSink& sink) {
  for (auto t : {Scan::Sum, Scan::Prod, Scan::Max, Scan::Min, Scan::LogAddExp}) {
    for (Dtype d : all_dtypes)
      if (scan_supported(t, d)) sink(module_name(t, d), scan_module(t, d));
  }
});

}  // namespace kiln
