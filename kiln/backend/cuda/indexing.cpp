// eval_gpu of the indexing primitives (Gather, Scatter, GatherAxis, ScatterAxis), and the
// strided-indexing helpers of backend/cuda/indexing.h. Kernels: device/indexing_gather.cuh,
// scatter combiners: device/indexing_atomic.cuh.
//
// As on the CPU, index arrays are first decoded into element offsets of the target, then the
// data moves. Out-of-range indices raise the CPU's std::out_of_range: an index array whose
// host copy exists is checked on the host before anything is enqueued (no synchronization);
// one that lives only on the device is checked by the decoding kernel, which records the
// first bad position, and the host reads that record after the launches (waiting for them).
#include "kiln/backend/cuda/indexing.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/sort_launcher.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_indexing.h"
#include "kiln/utils.h"

namespace kiln::gpu {

template <typename T, typename V>
static DimsArg<T> make_dims(const std::vector<V>& values, const char* op) {
  if (values.size() > static_cast<size_t>(kMaxDims)) {
    throw std::invalid_argument(msg("[", op, "] GPU kernels take at most ", kMaxDims,
                                    " dimensions that cannot be merged; got ", values.size(), "."));
  }
  DimsArg<T> d;
  for (size_t i = 0; i < values.size(); ++i) d.v[i] = static_cast<T>(values[i]);
  return d;
}

DimsArg<int32_t> dims_arg(const Shape& shape, const char* op) {
  return make_dims<int32_t>(shape, op);
}

DimsArg<int64_t> dims_arg(const Strides& strides, const char* op) {
  return make_dims<int64_t>(strides, op);
}

CUdeviceptr scratch(size_t nbytes, DeviceStream& stream) {
  if (nbytes == 0) return 0;
  auto storage = new_device_storage(nbytes, stream);
  const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(storage->device_copy()->ptr());
  stream.keep_alive(std::move(storage));
  return p;
}

int64_t resident_blocks(DeviceStream& stream) {
  return static_cast<int64_t>(stream.context().sm_count()) * 8;
}

int64_t resident_blocks(DeviceStream& stream, CUfunction f, uint32_t block, size_t smem) {
  // Asked once per kernel and launch shape: the answer never changes.
  static std::mutex mu;
  static std::map<std::tuple<CUfunction, uint32_t, size_t>, int> cache;
  int per_sm = 0;
  {
    std::lock_guard lk(mu);
    auto it = cache.find({f, block, smem});
    if (it != cache.end()) per_sm = it->second;
  }
  if (per_sm == 0) {
    opt_in_shared(f, smem);  // as the launch will: the calculator checks the kernel's limit
    KILN_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, f, static_cast<int>(block), smem);
    per_sm = std::max(per_sm, 1);
    std::lock_guard lk(mu);
    cache[{f, block, smem}] = per_sm;
  }
  return static_cast<int64_t>(stream.context().sm_count()) * per_sm;
}

}  // namespace kiln::gpu

namespace kiln {

namespace {

constexpr uint32_t kBlock = 256;
constexpr Dtype kIndexDtypes[] = {uint8, uint16, uint32, uint64, int8, int16, int32, int64};
constexpr Dtype kBitsDtypes[] = {uint8, uint16, uint32, uint64};

// ---------------------------------------------------------------- modules

std::string decode_kernel(Dtype idx) {
  return "kiln::index_decode<" + gpu::device_type(idx) + ">";
}
std::string gather_kernel(Dtype bits) {
  return "kiln::gather<" + gpu::device_type(bits) + ">";
}
std::string gather_axis_kernel(Dtype bits) {
  return "kiln::gather_axis<" + gpu::device_type(bits) + ">";
}

const char* combiner(ScatterReduce r) {
  switch (r) {
    case ScatterReduce::none:
      return "ScatterAssign";
    case ScatterReduce::sum:
      return "ScatterSum";
    case ScatterReduce::prod:
      return "ScatterProd";
    case ScatterReduce::max:
      return "ScatterMax";
    case ScatterReduce::min:
      return "ScatterMin";
  }
  return "";
}

std::string scatter_kernel(ScatterReduce r, Dtype d) {
  return "kiln::scatter<" + gpu::device_type(d) + ", kiln::" + combiner(r) + ">";
}
std::string sorted_kernel(Dtype d) {
  return "kiln::scatter_add_sorted<" + gpu::device_type(d) + ">";
}
std::string scatter_axis_kernel(ScatterReduce r, Dtype d) {
  return "kiln::scatter_axis<" + gpu::device_type(d) + ", kiln::" + combiner(r) + ">";
}
std::string claim_kernel(bool axis, bool last) {
  return std::string(axis ? "kiln::scatter_axis_claim<" : "kiln::scatter_claim<") +
         (last ? "true>" : "false>");
}

const std::string kInclude = "#include \"kiln/backend/cuda/device/indexing_gather.cuh\"\n";

gpu::ModuleSource decode_module() {
  gpu::ModuleSource m{"indexing_decode", kInclude, {}};
  for (Dtype d : kIndexDtypes) m.kernels.push_back(decode_kernel(d));
  for (bool axis : {false, true}) {
    for (bool last : {false, true}) m.kernels.push_back(claim_kernel(axis, last));
  }
  return m;
}

gpu::ModuleSource gather_module() {
  gpu::ModuleSource m{"indexing_gather", kInclude, {}};
  for (Dtype d : kBitsDtypes) {
    m.kernels.push_back(gather_kernel(d));
    m.kernels.push_back(gather_axis_kernel(d));
  }
  return m;
}

/** The dtype a scatter of `r` computes in: assignments only move bits. */
Dtype scatter_dtype(ScatterReduce r, Dtype d) {
  return r == ScatterReduce::none ? gpu::bits_dtype(d) : d;
}

bool scatter_supports(ScatterReduce r, Dtype d) {
  return !((r == ScatterReduce::max || r == ScatterReduce::min) && d == complex64);
}

std::string scatter_module_name(ScatterReduce r, Dtype d) {
  return std::string("indexing_") + combiner(r) + "_" + std::string(type_to_name(d));
}

// One module per (combiner, dtype): the scatter and, for the combiners ScatterAxis takes,
// its one-axis form.
gpu::ModuleSource scatter_module(ScatterReduce r, Dtype d) {
  gpu::ModuleSource m{scatter_module_name(r, d), kInclude, {scatter_kernel(r, d)}};
  if (r == ScatterReduce::none || r == ScatterReduce::sum)
    m.kernels.push_back(scatter_axis_kernel(r, d));
  if (r == ScatterReduce::sum && is_floating_point(d)) m.kernels.push_back(sorted_kernel(d));
  return m;
}

const gpu::Module& module(gpu::DeviceStream& s, const std::string& name,
                          gpu::ModuleSource (*build)()) {
  return gpu::get_module(s.context().index(), name, build);
}

const gpu::Module& scatter_mod(gpu::DeviceStream& s, ScatterReduce r, Dtype d) {
  return gpu::get_module(s.context().index(), scatter_module_name(r, d),
                         [r, d] { return scatter_module(r, d); });
}

// ---------------------------------------------------------------- index decoding

/** What an index array selects along its axis (backend/cpu/indexing.cpp's AxisInfo). */
struct AxisInfo {
  const char* op;  // user-facing op tag
  int axis;        // the axis as the op's caller numbered it
  int64_t size;    // extent of the axis
  int64_t slice;   // elements taken from the start; a start must leave room for them
  int64_t stride;  // elements between neighbours along the axis in the target
};

[[noreturn]] void throw_out_of_range(const std::string& value, const AxisInfo& info) {
  if (info.slice > 1) {
    throw std::out_of_range(msg("[", info.op, "] Index ", value, " with slice size ", info.slice,
                                " is out of bounds for axis ", info.axis, " with size ", info.size,
                                "."));
  }
  throw std::out_of_range(msg("[", info.op, "] Index ", value, " is out of bounds for axis ",
                              info.axis, " with size ", info.size, "."));
}

/** The index value stored at `p` (an element of integer dtype `d`), as text. */
std::string index_text(const void* p, Dtype d) {
  return dispatch_dtype(d, [&](auto tag) -> std::string {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      I v;
      std::memcpy(&v, p, sizeof(I));
      return std::is_signed_v<I> ? std::to_string(static_cast<int64_t>(v))
                                 : std::to_string(static_cast<uint64_t>(v));
    } else {
      return "?";
    }
  });
}

/** Whether the integer at `p` of dtype `d` is a valid start for `info`. */
bool index_ok(const void* p, Dtype d, const AxisInfo& info) {
  const int64_t last = info.size - std::max<int64_t>(info.slice, 1);
  return dispatch_dtype(d, [&](auto tag) -> bool {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      I v;
      std::memcpy(&v, p, sizeof(I));
      uint64_t i;
      if constexpr (std::is_signed_v<I>) {
        const int64_t s = static_cast<int64_t>(v);
        i = static_cast<uint64_t>(s < 0 ? s + info.size : s);
      } else {
        i = static_cast<uint64_t>(v);
      }
      return last >= 0 && i <= static_cast<uint64_t>(last);
    } else {
      return false;
    }
  });
}

/**
 * Decodes index arrays into offsets on the device (index_decode) and raises the CPU's
 * std::out_of_range for the first operand (in order) holding a bad index. Call check() after
 * the launches that consume the offsets.
 */
class IndexDecoder {
 public:
  IndexDecoder(gpu::DeviceStream& s, size_t operands) : s_(s), count_(operands) {
    if (operands == 0) return;
    bad_ = gpu::scratch(operands * sizeof(uint64_t), s);
  }

  /** offsets[n] (+)= wrap(idx[n]) * info.stride for each position n (row-major over idx);
   * `k` numbers the operand. */
  void decode(size_t k, const array& idx, const AxisInfo& info, CUdeviceptr offsets,
              bool accumulate) {
    const int64_t count = static_cast<int64_t>(idx.size());
    if (count == 0) return;
    if (!is_integral(idx.dtype()) || idx.dtype() == bool_) {
      throw std::invalid_argument("[indexing] Index arrays must have an integer dtype.");
    }
    Operand op{k, idx, info, idx.storage().has_host(), {}};
    if (op.on_host) {
      op.host_error = check_on_host(idx, info);
    } else if (!flags_set_) {
      // Only indices without a host copy are checked on the device: arm the flags once
      // (most indices, such as token ids, come from the host and need no memset).
      KILN_CU(cuMemsetD8Async, bad_, 0xFF, count_ * sizeof(uint64_t), s_.handle());
      flags_set_ = true;
    }
    auto [shape, strides] = collapse_contiguous_dims<1>(idx.shape(), {idx.strides()});
    const int64_t last = info.size - std::max<int64_t>(info.slice, 1);
    CUfunction f =
        module(s_, "indexing_decode", decode_module).function(decode_kernel(idx.dtype()));
    gpu::launch_kernel(f, gpu::grid_1d(count, kBlock), {kBlock}, 0, s_, gpu::device_address(idx),
                       offsets, bad_ + k * sizeof(uint64_t), gpu::dims_arg(shape, info.op),
                       gpu::dims_arg(strides[0], info.op), static_cast<int32_t>(shape.size()),
                       count, info.size, last, info.stride, accumulate);
    operands_.push_back(std::move(op));
  }

  /** Throws for the first operand with a bad index. Waits for the stream only to read what
   * the device found, i.e. when an operand has no host copy. */
  void check() {
    std::vector<uint64_t> bad;
    for (const Operand& op : operands_) {
      if (op.on_host) {
        if (!op.host_error.empty()) throw_out_of_range(op.host_error, op.info);
        continue;
      }
      if (bad.empty()) {
        bad.resize(count_);
        KILN_CU(cuMemcpyDtoHAsync, bad.data(), bad_, count_ * sizeof(uint64_t), s_.handle());
        KILN_CU(cuStreamSynchronize, s_.handle());
      }
      if (bad[op.k] == ~uint64_t{0}) continue;
      const int64_t off =
          elem_to_loc(static_cast<int64_t>(bad[op.k]), op.idx.shape(), op.idx.strides());
      uint64_t value = 0;
      KILN_CU(cuMemcpyDtoH, &value, gpu::device_address(op.idx) + off * op.idx.itemsize(),
              op.idx.itemsize());
      throw_out_of_range(index_text(&value, op.idx.dtype()), op.info);
    }
  }

 private:
  struct Operand {
    size_t k;
    array idx;
    AxisInfo info;
    bool on_host;            // checked on the host
    std::string host_error;  // the first bad value found there, or ""
  };

  // The first bad index of `idx` read from its host copy, as text, or "".
  static std::string check_on_host(const array& idx, const AxisInfo& info) {
    const char* base = static_cast<const char*>(idx.storage().host_ptr()) + idx.offset();
    const size_t isz = idx.itemsize();
    const bool dense = idx.flags().row_contiguous;
    for (size_t n = 0; n < idx.size(); ++n) {
      const int64_t loc = dense ? static_cast<int64_t>(n)
                                : elem_to_loc(static_cast<int64_t>(n), idx.shape(), idx.strides());
      const char* p = base + loc * static_cast<int64_t>(isz);
      if (!index_ok(p, idx.dtype(), info)) return index_text(p, idx.dtype());
    }
    return {};
  }

  gpu::DeviceStream& s_;
  size_t count_;
  CUdeviceptr bad_ = 0;
  bool flags_set_ = false;  // bad_ holds ~0 per operand once an operand needs the device check
  std::vector<Operand> operands_;
};

// ---------------------------------------------------------------- shared helpers

template <typename V>
V take_range(const V& v, size_t begin, size_t end) {
  return V(v.begin() + begin, v.begin() + end);
}

int split_axis(const std::vector<int>& axes) {
  return axes.empty() ? 0 : *std::min_element(axes.begin(), axes.end());
}

/** The scatter's output starts as a copy of `a`, keeping a contiguous layout (a dense copy of
 * a broadcast or strided one). Never `a`'s buffer: its host copy would go stale. */
void init_from(const array& a, array& out, gpu::DeviceStream& s) {
  gpu::copy_gpu(a, out, s);
}

// Mirrors of device/indexing_gather.cuh's argument structs.
struct GatherArgs {
  gpu::DimsArg<int32_t> oshape;
  gpu::DimsArg<int64_t> osrc;
  gpu::DimsArg<int32_t> ishape;
  gpu::DimsArg<int64_t> isrc;
  int32_t ondim = 0, indim = 0;
  int64_t O = 0, P = 0, I = 0;
};
static_assert(sizeof(GatherArgs) == 416);

struct ScatterArgs {
  gpu::DimsArg<int32_t> oshape;
  gpu::DimsArg<int64_t> oupd, oout;
  gpu::DimsArg<int32_t> ishape;
  gpu::DimsArg<int64_t> iupd, iout;
  gpu::DimsArg<int32_t> pshape;
  gpu::DimsArg<int64_t> pupd;
  int32_t ondim = 0, indim = 0, pndim = 0;
  int64_t O = 0, P = 0, I = 0;
};
static_assert(sizeof(ScatterArgs) == 872);

}  // namespace

// ---------------------------------------------------------------- Gather

void Gather::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  auto& s = gpu::device_stream(stream());
  const Shape pshape = inputs.size() > 1 ? inputs[1].shape() : Shape{};
  const int nd = static_cast<int>(src.ndim());
  const int pd = static_cast<int>(pshape.size());
  const int m = split_axis(axes_);
  // The output's trailing axes: slice_sizes_, or what a shapeless replay made of them.
  const Shape slice_sizes(out.shape().begin() + pd, out.shape().end());

  // The CPU's layout: outer slice axes, index axes, inner slice axes (see Gather).
  Strides strides(out.ndim());
  int64_t acc = 1;
  for (int d = nd - 1; d >= m; --d) {
    strides[pd + d] = acc;
    acc *= std::max(slice_sizes[d], 1);
  }
  for (int d = pd - 1; d >= 0; --d) {
    strides[d] = acc;
    acc *= std::max(pshape[d], 1);
  }
  for (int d = m - 1; d >= 0; --d) {
    strides[pd + d] = acc;
    acc *= std::max(slice_sizes[d], 1);
  }
  auto [flags, data_size] = array::layout(out.shape(), strides);
  out.set_data(gpu::new_device_storage(out.nbytes(), s), out.size(), strides, flags);

  GatherArgs g;
  {
    auto [sh, st] = collapse_contiguous_dims<1>(take_range(slice_sizes, 0, m),
                                                {take_range(src.strides(), 0, m)});
    g.O = static_cast<int64_t>(shape_size(take_range(slice_sizes, 0, m)));
    g.oshape = gpu::dims_arg(sh, op_);
    g.osrc = gpu::dims_arg(st[0], op_);
    g.ondim = static_cast<int32_t>(sh.size());
  }
  {
    auto [sh, st] = collapse_contiguous_dims<1>(take_range(slice_sizes, m, nd),
                                                {take_range(src.strides(), m, nd)});
    g.I = static_cast<int64_t>(shape_size(take_range(slice_sizes, m, nd)));
    g.ishape = gpu::dims_arg(sh, op_);
    g.isrc = gpu::dims_arg(st[0], op_);
    g.indim = static_cast<int32_t>(sh.size());
  }
  g.P = static_cast<int64_t>(shape_size(pshape));

  const CUdeviceptr starts = gpu::scratch(std::max<int64_t>(g.P, 1) * sizeof(int64_t), s);
  IndexDecoder dec(s, axes_.size());
  if (axes_.empty()) KILN_CU(cuMemsetD8Async, starts, 0, sizeof(int64_t), s.handle());
  for (size_t k = 0; k < axes_.size(); ++k) {
    const int ax = axes_[k];
    dec.decode(k, inputs[1 + k], {op_, ax, src.shape(ax), slice_sizes[ax], src.strides()[ax]},
               starts, k > 0);
  }
  const int64_t e = g.O * g.P * g.I;
  if (e > 0) {
    const Dtype bits = gpu::bits_dtype(src.dtype());
    CUfunction f = module(s, "indexing_gather", gather_module).function(gather_kernel(bits));
    gpu::launch_kernel(f, gpu::grid_1d(e, kBlock), {kBlock}, 0, s, gpu::device_address(src),
                       gpu::device_address(out), starts, g);
  }
  dec.check();
}

// ---------------------------------------------------------------- Scatter

namespace {

// A sum of many whole rows into a float array (an embedding's gradient): positions sorted by
// target, each run of equal targets summed before one atomic (scatter_add_sorted). The
// per-element scatter's atomics serialize on frequent rows: on an H200, the gradient of a
// (8192, 768) bfloat16 embedding over 16384 tokens of text took 5 ms that way.
constexpr int64_t kSortedMinRows = 1024;
constexpr int64_t kSortedMinRow = 64;
constexpr int kSortedChunk = 32;

bool sorted_rows(ScatterReduce r, Dtype d, const ScatterArgs& p) {
  return r == ScatterReduce::sum && is_floating_point(d) && p.O == 1 && p.indim == 1 &&
         p.iupd.v[0] == 1 && p.iout.v[0] == 1 && p.pndim == 1 && p.P >= kSortedMinRows &&
         p.P <= INT32_MAX && p.I >= kSortedMinRow;
}

void scatter_add_sorted(const array& upd, array& out, CUdeviceptr starts, const ScatterArgs& p,
                        Dtype d, gpu::DeviceStream& s) {
  sortplan::RadixSortJob job;
  job.key = gpu::sort_key_type(int64);
  job.pairs = true;
  job.rows = 1;
  job.n = p.P;
  job.in = starts;
  job.in_row_stride = p.P;
  gpu::SortLauncher launcher(s, job.key);
  const CUdeviceptr order = sortplan::radix_sort(launcher, job).positions;
  // Chunks of kSortedChunk positions, longer past 65535 of them (the grid's y limit).
  const int chunk = static_cast<int>(std::max<int64_t>(kSortedChunk, (p.P + 65534) / 65535));
  const gpu::Dim3 grid{static_cast<uint32_t>((p.I + kBlock - 1) / kBlock),
                       static_cast<uint32_t>((p.P + chunk - 1) / chunk), 1};
  gpu::launch_kernel(scatter_mod(s, ScatterReduce::sum, d).function(sorted_kernel(d)), grid,
                     {kBlock}, 0, s, gpu::device_address(upd), gpu::device_address(out), starts,
                     order, p.P, p.I, p.pupd.v[0], chunk);
}

}  // namespace

void Scatter::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& upd = inputs.back();
  if (!scatter_supports(reduce_, a.dtype())) {
    throw std::invalid_argument("[scatter] max/min are not defined for complex values.");
  }
  auto& s = gpu::device_stream(stream());
  init_from(a, out, s);

  const int nd = static_cast<int>(a.ndim());
  const int pd = static_cast<int>(upd.ndim()) - nd;
  const int m = split_axis(axes_);
  const Shape slice = take_range(upd.shape(), pd, pd + nd);
  const Strides uslice = take_range(upd.strides(), pd, pd + nd);
  const Shape pshape = take_range(upd.shape(), 0, pd);

  ScatterArgs p;
  {
    auto [sh, st] = collapse_contiguous_dims<2>(
        take_range(slice, 0, m), {take_range(uslice, 0, m), take_range(out.strides(), 0, m)});
    p.O = static_cast<int64_t>(shape_size(take_range(slice, 0, m)));
    p.oshape = gpu::dims_arg(sh, op_);
    p.oupd = gpu::dims_arg(st[0], op_);
    p.oout = gpu::dims_arg(st[1], op_);
    p.ondim = static_cast<int32_t>(sh.size());
  }
  {
    auto [sh, st] = collapse_contiguous_dims<2>(
        take_range(slice, m, nd), {take_range(uslice, m, nd), take_range(out.strides(), m, nd)});
    p.I = static_cast<int64_t>(shape_size(take_range(slice, m, nd)));
    p.ishape = gpu::dims_arg(sh, op_);
    p.iupd = gpu::dims_arg(st[0], op_);
    p.iout = gpu::dims_arg(st[1], op_);
    p.indim = static_cast<int32_t>(sh.size());
  }
  {
    auto [sh, st] = collapse_contiguous_dims<1>(pshape, {take_range(upd.strides(), 0, pd)});
    p.P = static_cast<int64_t>(shape_size(pshape));
    p.pshape = gpu::dims_arg(sh, op_);
    p.pupd = gpu::dims_arg(st[0], op_);
    p.pndim = static_cast<int32_t>(sh.size());
  }

  const CUdeviceptr starts = gpu::scratch(std::max<int64_t>(p.P, 1) * sizeof(int64_t), s);
  IndexDecoder dec(s, axes_.size());
  if (axes_.empty()) KILN_CU(cuMemsetD8Async, starts, 0, sizeof(int64_t), s.handle());
  for (size_t k = 0; k < axes_.size(); ++k) {
    const int ax = axes_[k];
    dec.decode(k, inputs[1 + k], {op_, ax, out.shape(ax), slice[ax], out.strides()[ax]}, starts,
               k > 0);
  }
  const int64_t e = p.O * p.P * p.I;
  const Dtype d = scatter_dtype(reduce_, a.dtype());
  CUdeviceptr owner = 0;  // with repeated positions, the last one's claims (see scatter_claim)
  int64_t key_div = 0;
  if (e > 0 && reduce_ == ScatterReduce::none && p.P > 1 && p.P <= INT32_MAX) {
    // Positions may repeat: the last one wins, as on the CPU. When every indexed axis takes
    // one element, positions are keyed by their start over the indexed strides' greatest
    // common divisor; else by target element. (Past 2^31 positions, beyond int32 owners, the
    // plain scatter runs: any writer wins.)
    bool single = true;
    for (int ax : axes_) {
      single = single && slice[ax] == 1;
      key_div = std::gcd(key_div, out.strides()[ax]);
    }
    if (!single) key_div = 0;
    const int64_t keys = key_div > 0 ? static_cast<int64_t>(out.size()) / key_div + 1
                                     : static_cast<int64_t>(out.size());
    owner = gpu::scratch(keys * sizeof(int32_t), s);
    const auto& decode = module(s, "indexing_decode", decode_module);
    const int64_t claims = key_div > 0 ? p.P : e;
    for (bool last : {false, true}) {
      gpu::launch_kernel(decode.function(claim_kernel(false, last)), gpu::grid_1d(claims, kBlock),
                         {kBlock}, 0, s, starts, owner, key_div, p);
    }
  }
  if (e > 0 && sorted_rows(reduce_, d, p)) {
    scatter_add_sorted(upd, out, starts, p, d, s);
  } else if (e > 0) {
    CUfunction f = scatter_mod(s, reduce_, d).function(scatter_kernel(reduce_, d));
    gpu::launch_kernel(f, gpu::grid_1d(e, kBlock), {kBlock}, 0, s, gpu::device_address(upd),
                       gpu::device_address(out), starts, owner, key_div, p);
  }
  dec.check();
}

// ---------------------------------------------------------------- GatherAxis

void GatherAxis::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& idx = inputs[1];
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const int64_t size = static_cast<int64_t>(out.size());
  const CUdeviceptr offsets = gpu::scratch(size * sizeof(int64_t), s);
  IndexDecoder dec(s, 1);
  dec.decode(0, idx, {op_, axis_, a.shape(axis_), 1, a.strides()[axis_]}, offsets, false);
  // a's offset along the axis comes from the index, not from the position.
  Strides as = a.strides();
  as[axis_] = 0;
  auto [shape, st] = collapse_contiguous_dims<1>(idx.shape(), {as});
  const Dtype bits = gpu::bits_dtype(a.dtype());
  CUfunction f = module(s, "indexing_gather", gather_module).function(gather_axis_kernel(bits));
  gpu::launch_kernel(f, gpu::grid_1d(size, kBlock), {kBlock}, 0, s, gpu::device_address(a),
                     gpu::device_address(out), offsets, gpu::dims_arg(shape, op_),
                     gpu::dims_arg(st[0], op_), static_cast<int32_t>(shape.size()), size);
  dec.check();
}

// ---------------------------------------------------------------- ScatterAxis

void ScatterAxis::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& idx = inputs[1];
  const array& vals = inputs[2];
  if (reduce_ != ScatterReduce::none && reduce_ != ScatterReduce::sum) {
    throw std::invalid_argument("[ScatterAxis::eval_gpu] Only assignment and sum are supported.");
  }
  auto& s = gpu::device_stream(stream());
  init_from(a, out, s);
  if (idx.size() == 0) return;
  const int64_t size = static_cast<int64_t>(idx.size());
  const CUdeviceptr offsets = gpu::scratch(size * sizeof(int64_t), s);
  IndexDecoder dec(s, 1);
  dec.decode(0, idx, {op_, axis_, a.shape(axis_), 1, out.strides()[axis_]}, offsets, false);
  Strides os = out.strides();
  os[axis_] = 0;
  auto [shape, st] = collapse_contiguous_dims<2>(idx.shape(), {vals.strides(), os});
  const Dtype d = scatter_dtype(reduce_, a.dtype());
  const auto sh = gpu::dims_arg(shape, op_);
  const auto vs = gpu::dims_arg(st[0], op_);
  const auto ost = gpu::dims_arg(st[1], op_);
  const auto nd = static_cast<int32_t>(shape.size());
  CUdeviceptr owner = 0;
  if (reduce_ == ScatterReduce::none && idx.shape(axis_) > 1 && size <= INT32_MAX) {
    // Indices may repeat along the axis: the last (row-major) wins, as on the CPU.
    owner = gpu::scratch(out.size() * sizeof(int32_t), s);
    const auto& decode = module(s, "indexing_decode", decode_module);
    for (bool last : {false, true}) {
      gpu::launch_kernel(decode.function(claim_kernel(true, last)), gpu::grid_1d(size, kBlock),
                         {kBlock}, 0, s, offsets, owner, sh, ost, nd, size);
    }
  }
  CUfunction f = scatter_mod(s, reduce_, d).function(scatter_axis_kernel(reduce_, d));
  gpu::launch_kernel(f, gpu::grid_1d(size, kBlock), {kBlock}, 0, s, gpu::device_address(vals),
                     gpu::device_address(out), offsets, owner, sh, vs, ost, nd, size);
  dec.check();
}

KILN_GPU_MODULE_CATALOG(indexing, [](const gpu::ModuleSink& sink) {
  sink("indexing_decode", decode_module());
  sink("indexing_gather", gather_module());
  for (Dtype d : kBitsDtypes)
    sink(scatter_module_name(ScatterReduce::none, d), scatter_module(ScatterReduce::none, d));
  for (auto r : {ScatterReduce::sum, ScatterReduce::prod, ScatterReduce::max, ScatterReduce::min}) {
    for (Dtype d : all_dtypes) {
      if (scatter_supports(r, d)) sink(scatter_module_name(r, d), scatter_module(r, d));
    }
  }
});

}  // namespace kiln
