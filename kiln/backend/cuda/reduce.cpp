// eval_gpu of the reductions (Reduce, ArgReduce) and the fused Softmax. Kernels:
// device/reduce.cuh and device/reduce_softmax.cuh (row launch plans from fast_common.h, as
// the norms'); combine operations and policies: device/reduce_ops.cuh.
//
// The CPU's plan (cpu::make_reduce_plan) orders the input's dimensions by memory layout and
// merges what it can; then either the innermost dimension in memory is reduced (rows: a
// warp, or a block for long runs, per output) or it is kept (columns: threads across adjacent
// outputs, coalesced). Too few rows or columns for the GPU are split along the reduction into
// partial results that a second launch combines: no atomics, so results are deterministic.
#include <algorithm>
#include <functional>
#include <string>
#include <utility>

#include "kiln/backend/cpu/reduce_utils.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/fast_common.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/fast_primitives.h"
#include "kiln/primitives_reduce.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

using gpu::DimsArg;

constexpr uint32_t kBlock = 256;     // device/reduce.cuh's kReduceBlock
constexpr uint32_t kColumnRows = 8;  // device/reduce.cuh's kColumnRows
// Runs up to this many bytes take a warp per output; longer ones a block.
constexpr int64_t kWarpRowBytes = 32 << 10;
// Splits keep at least this many elements (rows for columns) each.
constexpr int64_t kMinSplitElements = 8192;
constexpr int64_t kMinSplitRows = 64;

// Mirrors of device/reduce.cuh's argument structs.
struct RowArgs {
  DimsArg<int32_t> kept_shape;
  DimsArg<int64_t> kept_in;
  DimsArg<int64_t> kept_out;
  DimsArg<int32_t> outer_shape;
  DimsArg<int64_t> outer_in;
  int32_t kept_ndim = 0;
  int32_t outer_ndim = 0;
  int64_t rows = 0;
  int64_t n = 0;
  int64_t run = 0;
  int64_t run_stride = 0;
  int64_t chunk = 0;
  int32_t group = 32;
  bool vec = false;
};
static_assert(sizeof(RowArgs) == 568);

struct ColArgs {
  DimsArg<int32_t> outer_shape;
  DimsArg<int64_t> outer_in;
  DimsArg<int64_t> outer_out;
  DimsArg<int32_t> red_shape;
  DimsArg<int64_t> red_in;
  int32_t outer_ndim = 0;
  int32_t red_ndim = 0;
  int64_t outer_size = 1;
  int64_t cols = 0;
  int64_t col_in = 0;
  int64_t col_out = 0;
  int64_t rows = 0;
  int64_t chunk = 0;
  int64_t tiles = 0;
  bool vec = false;
};
static_assert(sizeof(ColArgs) == 584);

struct PartialArgs {
  DimsArg<int32_t> shape;
  DimsArg<int64_t> out_strides;
  int32_t ndim = 0;
  int64_t outputs = 0;
  int64_t splits = 0;
  int64_t kstride = 0;
  int64_t sstride = 0;
  int32_t group = 32;
};
static_assert(sizeof(PartialArgs) == 240);

// ---------------------------------------------------------------- policies and modules

/** What a reduction kernel folds: its policy (a type of device/reduce_ops.cuh), input,
 * accumulator and output dtypes, and the accumulator's size in bytes (for partials). */
struct Policy {
  std::string type;
  Dtype in, out;
  size_t acc_bytes;
};

const char* op_name(Reduce::ReduceType t) {
  switch (t) {
    case Reduce::And:
      return "And";
    case Reduce::Or:
      return "Or";
    case Reduce::Sum:
      return "Sum";
    case Reduce::Prod:
      return "Prod";
    case Reduce::Max:
      return "Max";
    case Reduce::Min:
      return "Min";
  }
  return "";
}

// And/Or read bool elements: other dtypes are converted first (a cheap elementwise pass),
// which spares a kernel set per dtype.
bool reduce_supports(Reduce::ReduceType t, Dtype in) {
  switch (t) {
    case Reduce::And:
    case Reduce::Or:
      return in == bool_;
    case Reduce::Max:
    case Reduce::Min:
      return in != complex64;
    default:
      return true;
  }
}

/** The output dtypes a Reduce of `t` on `in` may have: cpu::SumTypes for sums and products
 * (and float32 for a sum that serves mean), the input's for max/min, bool for and/or. */
std::vector<Dtype> reduce_out_dtypes(Reduce::ReduceType t, Dtype in) {
  switch (t) {
    case Reduce::And:
    case Reduce::Or:
      return {bool_};
    case Reduce::Max:
    case Reduce::Min:
      return {in};
    case Reduce::Sum:
    case Reduce::Prod:
      break;
  }
  std::vector<Dtype> out = {detail::sum_dtype(in)};
  if (t == Reduce::Sum && in != float32 && in != float64 && in != complex64) out.push_back(float32);
  return out;
}

/** The accumulator dtype of a Reduce (the CPU's choices in backend/cpu/reduce.cpp). */
Dtype reduce_acc_dtype(Reduce::ReduceType t, Dtype in, Dtype out) {
  const bool half = in == float16 || in == bfloat16;
  switch (t) {
    case Reduce::And:
    case Reduce::Or:
      return bool_;
    case Reduce::Max:
    case Reduce::Min:
      return half ? float32 : in;
    case Reduce::Sum:
    case Reduce::Prod:
      break;
  }
  if (half) return float32;
  if (is_floating_point(in) || is_complex(in)) return in;
  if (t == Reduce::Sum && out == float32) return uint64;  // a sum for mean
  return in.size == 8 ? uint64 : uint32;
}

Policy reduce_policy(Reduce::ReduceType t, Dtype in, Dtype out) {
  const Dtype acc = reduce_acc_dtype(t, in, out);
  return {"kiln::ReducePolicy<kiln::" + std::string(op_name(t)) + "Op, " + gpu::device_type(in) +
              ", " + gpu::device_type(acc) + ", " + gpu::device_type(out) + ">",
          in, out, acc.size};
}

Policy arg_policy(ArgReduce::ReduceType t, Dtype in) {
  // ArgAcc<V>: V (half types widen to float) and a uint32 position, padded to V's alignment.
  const size_t v = in == float16 || in == bfloat16 ? 4 : in.size;
  return {std::string("kiln::ArgReducePolicy<") + (t == ArgReduce::ArgMax ? "true" : "false") +
              ", " + gpu::device_type(in) + ">",
          in, uint32, v == 8 ? 16u : 8u};
}

/** Elements per vector load of `d`: 16 bytes, at most 8 elements (wider unrolls of 1-byte
 * types cost compile time and gain little). */
int vec_width(Dtype d) {
  return std::clamp(16 / static_cast<int>(d.size), 1, 8);
}

// Kernel names (name expressions) of a policy, as listed in its module and looked up.
std::string rows_name(const Policy& p) {
  return "kiln::reduce_rows<" + p.type + ", " + std::to_string(vec_width(p.in)) + ">";
}
std::string columns_name(const Policy& p) {
  return "kiln::reduce_columns<" + p.type + ", " + std::to_string(vec_width(p.in)) + ">";
}
std::string partials_name(const Policy& p) {
  return "kiln::reduce_partials<" + p.type + ">";
}

void add_policy_kernels(gpu::ModuleSource& m, const Policy& p) {
  m.kernels.push_back(rows_name(p));
  m.kernels.push_back(columns_name(p));
  m.kernels.push_back(partials_name(p));
}

// One module per (operation, input dtype), holding every output dtype it can produce.
std::string reduce_module_name(const char* op, Dtype in) {
  return std::string("reduce_") + op + "_" + std::string(type_to_name(in));
}

gpu::ModuleSource reduce_module(Reduce::ReduceType t, Dtype in) {
  gpu::ModuleSource m{
      reduce_module_name(op_name(t), in), "#include \"kiln/backend/cuda/device/reduce.cuh\"\n", {}};
  for (Dtype out : reduce_out_dtypes(t, in)) add_policy_kernels(m, reduce_policy(t, in, out));
  return m;
}

const char* arg_name(ArgReduce::ReduceType t) {
  return t == ArgReduce::ArgMax ? "ArgMax" : "ArgMin";
}

gpu::ModuleSource arg_module(ArgReduce::ReduceType t, Dtype in) {
  gpu::ModuleSource m{reduce_module_name(arg_name(t), in),
                      "#include \"kiln/backend/cuda/device/reduce.cuh\"\n",
                      {}};
  add_policy_kernels(m, arg_policy(t, in));
  return m;
}

constexpr Dtype kSoftmaxDtypes[] = {float16, bfloat16, float32, float64};

// Vectors per thread softmax_fwd keeps in registers: up to 32 elements (no spills at 1024
// threads).
int softmax_max_vpt(Dtype d) {
  return d.size == 4 ? 8 : 4;
}

std::string softmax_kernel_name(Dtype d, int vpt) {
  return "kiln::softmax_fwd<" + gpu::device_type(d) + ", " + std::to_string(vpt) + ">";
}
std::string softmax_staged_name(Dtype d, int vpt) {
  return "kiln::softmax_fwd_staged<" + gpu::device_type(d) + ", " + std::to_string(vpt) + ">";
}
std::string softmax_looped_name(Dtype d) {
  return "kiln::softmax_looped<" + gpu::device_type(d) + ">";
}

// The gradient keeps two rows (y and g) in registers: 2 vectors of each per thread (4 spilled
// under the 64 registers of 1024-thread blocks, ncu on an H100); longer rows loop.
constexpr int kSoftmaxBwdMaxVpt = 2;

std::string softmax_bwd_name(Dtype d, int vpt) {
  return "kiln::softmax_bwd<" + gpu::device_type(d) + ", " + std::to_string(vpt) + ">";
}
std::string softmax_bwd_looped_name(Dtype d) {
  return "kiln::softmax_bwd_looped<" + gpu::device_type(d) + ">";
}

gpu::ModuleSource softmax_module() {
  gpu::ModuleSource m{
      "reduce_softmax", "#include \"kiln/backend/cuda/device/reduce_softmax.cuh\"\n", {}};
  for (Dtype d : kSoftmaxDtypes) {
    for (int v = 1; v <= softmax_max_vpt(d); v *= 2) m.kernels.push_back(softmax_kernel_name(d, v));
    for (int v = 1; v <= gpu::fast::kStagedMaxVpt; v *= 2)
      m.kernels.push_back(softmax_staged_name(d, v));
    m.kernels.push_back(softmax_looped_name(d));
    for (int v = 1; v <= kSoftmaxBwdMaxVpt; v *= 2) m.kernels.push_back(softmax_bwd_name(d, v));
    m.kernels.push_back(softmax_bwd_looped_name(d));
  }
  return m;
}

// ---------------------------------------------------------------- launches

constexpr const char* kOp = "reduce";

uint32_t grid_x(int64_t blocks) {
  if (blocks > 0x7fffffff) {
    throw std::runtime_error(msg("[reduce] ", blocks, " blocks exceed the grid limit."));
  }
  return static_cast<uint32_t>(std::max<int64_t>(blocks, 1));
}

bool all_multiples(const Strides& strides, int64_t n) {
  return std::all_of(strides.begin(), strides.end(), [n](int64_t s) { return s % n == 0; });
}

/** Launches the reduction planned by `plan` from `src` (elements laid out as `in`) into the
 * row-contiguous `out`. */
class ReduceLaunch {
 public:
  ReduceLaunch(const gpu::Module& mod, const Policy& p, gpu::DeviceStream& s)
      : mod_(mod), p_(p), s_(s) {}

  void run(CUdeviceptr src, CUdeviceptr dst, const cpu::ReducePlan& plan) {
    if (plan.rows)
      rows(src, dst, plan);
    else
      columns(src, dst, plan);
  }

 private:
  void rows(CUdeviceptr src, CUdeviceptr dst, const cpu::ReducePlan& plan) {
    RowArgs a;
    a.kept_ndim = static_cast<int32_t>(plan.kept_shape.size());
    a.kept_shape = gpu::dims_arg(plan.kept_shape, kOp);
    a.kept_in = gpu::dims_arg(plan.kept_in, kOp);
    a.kept_out = gpu::dims_arg(plan.kept_out, kOp);
    const Shape outer(plan.red_shape.begin(), plan.red_shape.end() - 1);
    const Strides outer_in(plan.red_in.begin(), plan.red_in.end() - 1);
    a.outer_ndim = static_cast<int32_t>(outer.size());
    a.outer_shape = gpu::dims_arg(outer, kOp);
    a.outer_in = gpu::dims_arg(outer_in, kOp);
    a.rows = plan.kept_size;
    a.n = plan.red_size;
    a.run = plan.red_shape.back();
    a.run_stride = plan.red_in.back();
    // Vector loads need unit-stride runs of whole vectors, each starting 16-byte aligned.
    const int n = vec_width(p_.in);
    a.vec = n > 1 && a.run_stride == 1 && a.run % n == 0 && src % 16 == 0 &&
            all_multiples(plan.kept_in, n) && all_multiples(outer_in, n);

    // A warp per output for short rows when they fill the GPU, else a block; a block per
    // output still leaves SMs idle when outputs are few, so their rows split (two waves of
    // blocks, which evens out their finishing times).
    CUfunction f = mod_.function(rows_name(p_));
    const int64_t target = gpu::resident_blocks(s_, f, kBlock, 0);
    const int64_t bytes = a.n * static_cast<int64_t>(p_.in.size);
    const bool warp = bytes <= kWarpRowBytes && a.rows >= target * (kBlock / 32);
    a.group = warp ? 32 : static_cast<int32_t>(kBlock);
    int64_t splits = 1;
    if (!warp && a.rows < target) {
      splits = std::min<int64_t>((2 * target + a.rows - 1) / a.rows,
                                 (a.n + kMinSplitElements - 1) / kMinSplitElements);
      splits = std::clamp<int64_t>(splits, 1, 65535);
    }
    a.chunk = (a.n + splits - 1) / splits;
    a.chunk = (a.chunk + n - 1) / n * n;  // whole vectors
    splits = a.n == 0 ? 1 : (a.n + a.chunk - 1) / a.chunk;
    const int64_t per_block = kBlock / a.group;
    const gpu::Dim3 grid{grid_x((a.rows + per_block - 1) / per_block),
                         static_cast<uint32_t>(splits), 1};
    const CUdeviceptr partial = splits > 1 ? gpu::scratch(a.rows * splits * p_.acc_bytes, s_) : 0;
    gpu::launch_kernel(f, grid, {kBlock}, 0, s_, src, dst, partial, a);
    if (splits > 1)
      combine(partial, dst, plan.kept_shape, plan.kept_out, a.rows, splits, splits, 1);
  }

  void columns(CUdeviceptr src, CUdeviceptr dst, const cpu::ReducePlan& plan) {
    ColArgs a;
    const Shape outer(plan.kept_shape.begin(), plan.kept_shape.end() - 1);
    const Strides outer_in(plan.kept_in.begin(), plan.kept_in.end() - 1);
    const Strides outer_out(plan.kept_out.begin(), plan.kept_out.end() - 1);
    a.outer_ndim = static_cast<int32_t>(outer.size());
    a.outer_shape = gpu::dims_arg(outer, kOp);
    a.outer_in = gpu::dims_arg(outer_in, kOp);
    a.outer_out = gpu::dims_arg(outer_out, kOp);
    a.red_ndim = static_cast<int32_t>(plan.red_shape.size());
    a.red_shape = gpu::dims_arg(plan.red_shape, kOp);
    a.red_in = gpu::dims_arg(plan.red_in, kOp);
    a.outer_size = static_cast<int64_t>(shape_size(outer));
    a.cols = plan.kept_shape.back();
    a.col_in = plan.kept_in.back();
    a.col_out = plan.kept_out.back();
    a.rows = plan.red_size;
    // Vector loads need unit column stride and every row's first column 16-byte aligned.
    const int n = vec_width(p_.in);
    a.vec = n > 1 && a.col_in == 1 && src % 16 == 0 && all_multiples(outer_in, n) &&
            all_multiples(plan.red_in, n);
    a.tiles = (a.cols + 32 * n - 1) / (32 * n);

    const size_t smem = kColumnRows * 32 * n * p_.acc_bytes;
    CUfunction f = mod_.function(columns_name(p_));
    const int64_t target = gpu::resident_blocks(s_, f, 32 * kColumnRows, smem);
    const int64_t blocks = a.outer_size * a.tiles;
    int64_t splits = 1;
    if (blocks < target) {
      splits = std::min<int64_t>((2 * target + blocks - 1) / blocks,
                                 (a.rows + kMinSplitRows - 1) / kMinSplitRows);
      splits = std::clamp<int64_t>(splits, 1, 65535);
    }
    a.chunk = (a.rows + splits - 1) / splits;
    splits = (a.rows + a.chunk - 1) / a.chunk;
    const int64_t outputs = a.outer_size * a.cols;
    const CUdeviceptr partial = splits > 1 ? gpu::scratch(splits * outputs * p_.acc_bytes, s_) : 0;
    gpu::launch_kernel(f, {grid_x(blocks), static_cast<uint32_t>(splits), 1}, {32, kColumnRows},
                       smem, s_, src, dst, partial, a);
    if (splits > 1)
      combine(partial, dst, plan.kept_shape, plan.kept_out, outputs, splits, 1, outputs);
  }

  // The second pass: output k combines partial[k * kstride + s * sstride] for each split s.
  void combine(CUdeviceptr partial, CUdeviceptr dst, const Shape& shape, const Strides& out_strides,
               int64_t outputs, int64_t splits, int64_t kstride, int64_t sstride) {
    PartialArgs b;
    b.shape = gpu::dims_arg(shape, kOp);
    b.out_strides = gpu::dims_arg(out_strides, kOp);
    b.ndim = static_cast<int32_t>(shape.size());
    b.outputs = outputs;
    b.splits = splits;
    b.kstride = kstride;
    b.sstride = sstride;
    // Many partials of few outputs (a reduction of everything) take a block each.
    b.group = splits >= 256 && outputs < 1024 ? static_cast<int32_t>(kBlock) : 32;
    const int64_t per_block = kBlock / b.group;
    gpu::launch_kernel(mod_.function(partials_name(p_)),
                       {grid_x((outputs + per_block - 1) / per_block), 1, 1}, {kBlock}, 0, s_,
                       partial, dst, b);
  }

  const gpu::Module& mod_;
  const Policy& p_;
  gpu::DeviceStream& s_;
};

/** Allocates `out` (row-contiguous, keepdims) and reduces `in` over `axes` into it. */
void reduce_gpu(const array& in, array& out, const std::vector<int>& axes, const Policy& p,
                const std::string& module, const std::function<gpu::ModuleSource()>& build,
                gpu::DeviceStream& s) {
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const gpu::Module& mod = gpu::get_module(s.context().index(), module, build);
  cpu::ReducePlan plan = cpu::make_reduce_plan(in, axes);
  if (plan.red_size == 0) {
    // Nothing to fold: every output is the identity (rows of no elements).
    plan.rows = true;
    plan.red_shape = {0};
    plan.red_in = {1};
  }
  if (plan.kept_shape.empty()) {
    plan.kept_shape = {1};
    plan.kept_in = plan.kept_out = {0};
    plan.rows = true;
  }
  ReduceLaunch(mod, p, s).run(gpu::device_address(in), gpu::device_address(out), plan);
}

}  // namespace

void Reduce::eval_gpu(const std::vector<array>& inputs, array& out) {
  const Reduce::ReduceType t = type_;
  auto& s = gpu::device_stream(stream());
  array in = inputs[0];
  if ((t == And || t == Or) && in.dtype() != bool_) {
    // Nonzero tests through AsType's bool conversion (integers test their bits), into a
    // dense scratch.
    auto storage = gpu::new_device_storage(in.size(), s);
    s.keep_alive(storage);
    array b(storage, in.shape(), bool_);
    const Dtype kin = is_integral(in.dtype()) ? gpu::bits_dtype(in.dtype()) : in.dtype();
    if (in.size()) gpu::unary_op_strided("Identity", in, gpu::device_address(b), kin, bool_, s);
    in = b;
  }
  const Dtype d = in.dtype();
  if (!reduce_supports(t, d)) {
    throw std::invalid_argument(msg("[Reduce::eval_gpu] max/min of ", d, " are not supported."));
  }
  const auto outs = reduce_out_dtypes(t, d);
  if (std::find(outs.begin(), outs.end(), out.dtype()) == outs.end()) {
    throw std::runtime_error(
        msg("[Reduce::eval_gpu] Unexpected output dtype ", out.dtype(), " for input ", d, "."));
  }
  reduce_gpu(
      in, out, axes_, reduce_policy(t, d, out.dtype()), reduce_module_name(op_name(t), d),
      [t, d] { return reduce_module(t, d); }, s);
}

void ArgReduce::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.dtype() == complex64) {
    throw std::invalid_argument("[ArgReduce::eval_gpu] complex64 is not supported.");
  }
  const ArgReduce::ReduceType t = type_;
  const Dtype d = in.dtype();
  reduce_gpu(
      in, out, {axis_}, arg_policy(t, d), reduce_module_name(arg_name(t), d),
      [t, d] { return arg_module(t, d); }, gpu::device_stream(stream()));
}

void Softmax::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  const Dtype d = in.dtype();
  if (std::find(std::begin(kSoftmaxDtypes), std::end(kSoftmaxDtypes), d) ==
      std::end(kSoftmaxDtypes)) {
    throw std::invalid_argument(msg("[Softmax::eval_gpu] Unsupported dtype ", d, "."));
  }
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  CUdeviceptr src = gpu::device_address(in);
  if (!in.flags().row_contiguous) {
    src = gpu::scratch(in.nbytes(), s);
    gpu::copy_to_row_contiguous(in, src, s);
  }
  const CUdeviceptr dst = gpu::device_address(out);
  const int64_t n = in.shape().back();
  const int64_t rows = static_cast<int64_t>(in.size()) / n;
  // Rows of whole 16-byte vectors that fit in registers (or, long, in shared memory) are
  // read once; others twice.
  const bool vec = n % gpu::fast::vec_elems(d) == 0 && src % 16 == 0 && dst % 16 == 0;
  const gpu::fast::RowPlan p = gpu::fast::plan_rows(n, d, vec ? softmax_max_vpt(d) : 0);
  const gpu::Module& mod = gpu::get_module(s.context().index(), "reduce_softmax", softmax_module);
  const int32_t group = p.group;
  if (const size_t smem = gpu::fast::staged_smem(p, n, d, s)) {
    CUfunction f = mod.function(softmax_staged_name(d, p.vpt));
    gpu::launch_kernel(f, gpu::fast::staged_grid(f, smem, rows, s), {1024}, smem, s, src, dst, rows,
                       n, group);
  } else if (p.looped) {
    gpu::launch_kernel(mod.function(softmax_looped_name(d)), gpu::fast::row_grid(rows, p),
                       {static_cast<uint32_t>(p.block)}, 0, s, src, dst, rows, n, group, vec);
  } else {
    gpu::launch_kernel(mod.function(softmax_kernel_name(d, p.vpt)), gpu::fast::row_grid(rows, p),
                       {static_cast<uint32_t>(p.block)}, 0, s, src, dst, rows, n, group);
  }
}

void fast::SoftmaxVJP::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const Dtype d = inputs[0].dtype();
  if (std::find(std::begin(kSoftmaxDtypes), std::end(kSoftmaxDtypes), d) ==
      std::end(kSoftmaxDtypes)) {
    throw std::invalid_argument(msg("[SoftmaxVJP::eval_gpu] Unsupported dtype ", d, "."));
  }
  array& out = outputs[0];
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const CUdeviceptr src[2] = {gpu::fast::dense_address(inputs[0], s),
                              gpu::fast::dense_address(inputs[1], s)};
  const CUdeviceptr dst = gpu::device_address(out);
  const int64_t n = out.shape().back();
  const int64_t rows = static_cast<int64_t>(out.size()) / n;
  const bool vec =
      n % gpu::fast::vec_elems(d) == 0 && src[0] % 16 == 0 && src[1] % 16 == 0 && dst % 16 == 0;
  const gpu::fast::RowPlan p = gpu::fast::plan_rows(n, d, vec ? kSoftmaxBwdMaxVpt : 0);
  const gpu::Module& mod = gpu::get_module(s.context().index(), "reduce_softmax", softmax_module);
  const int32_t group = p.group;
  if (p.looped) {
    gpu::launch_kernel(mod.function(softmax_bwd_looped_name(d)), gpu::fast::row_grid(rows, p),
                       {static_cast<uint32_t>(p.block)}, 0, s, src[0], src[1], dst, rows, n, group,
                       vec);
  } else {
    gpu::launch_kernel(mod.function(softmax_bwd_name(d, p.vpt)), gpu::fast::row_grid(rows, p),
                       {static_cast<uint32_t>(p.block)}, 0, s, src[0], src[1], dst, rows, n, group);
  }
}

KILN_GPU_MODULE_CATALOG(reduce, [](const gpu::ModuleSink& sink) {
  for (auto t : {Reduce::Sum, Reduce::Prod, Reduce::Max, Reduce::Min, Reduce::And, Reduce::Or}) {
    for (Dtype d : all_dtypes) {
      if (reduce_supports(t, d)) sink(reduce_module_name(op_name(t), d), reduce_module(t, d));
    }
  }
  for (auto t : {ArgReduce::ArgMax, ArgReduce::ArgMin}) {
    for (Dtype d : all_dtypes) {
      if (d != complex64) sink(reduce_module_name(arg_name(t), d), arg_module(t, d));
    }
  }
  sink("reduce_softmax", softmax_module());
});

}  // namespace kiln
