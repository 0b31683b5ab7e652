// Compiled::eval_gpu: a fused tape (kiln/primitives_compile.h) as one generated CUDA kernel,
// compiled by NVRTC through the JIT's caches (backend/cuda/jit.h) like every kiln kernel.
//
// Each thread computes whole elements: it reads every input element once, applies the ops
// in registers with the eager kernels' functors (device/unary_ops.cuh, binary_ops.cuh) and
// dtype rules (the tables of backend/cuda/unary.cpp and binary.cpp: wrap-around integer
// arithmetic on the unsigned type, bool through uint8, half types computed in float and
// rounded once per op), and writes only the outputs. Float additions, subtractions and
// multiplications go through __fadd_rn & co., which NVCC never contracts into a multiply-add
// with a neighbouring op, so the results round as the unfused ops do.
//
// Two kernels per tape, each for 32- and 64-bit indices: `contig`, where every input is
// row-contiguous in the output's shape or one element (a bit mask says which), and
// `strided`, which reads any strides (broadcasts included) over up to kFusedMaxDims
// collapsed dimensions. A module that fails to compile runs the unfused tape, with a warning.
// The source is generated in compiled_codegen.cpp.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <span>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/compiled.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/backend/kernels/disk_cache.h"
#include "kiln/compile.h"
#include "kiln/primitives.h"
#include "kiln/primitives_compile.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

struct GpuState {
  std::mutex mu;
  bool failed = false;
  std::string module_name;
  gpu::ModuleSource source;
  std::string error;
};

// Dimensions of the output's shape merged where every read input allows (row-major walk).
bool collapse_all(Shape& shape, std::vector<Strides>& strides) {
  Shape s;
  std::vector<Strides> st(strides.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !s.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k)
      merge = st[k].back() == strides[k][d] * shape[d];
    if (merge) {
      s.back() *= shape[d];
      for (size_t k = 0; k < strides.size(); ++k) st[k].back() = strides[k][d];
    } else {
      s.push_back(shape[d]);
      for (size_t k = 0; k < strides.size(); ++k) st[k].push_back(strides[k][d]);
    }
  }
  if (s.empty()) {
    s.push_back(1);
    for (auto& x : st) x.push_back(0);
  }
  shape = std::move(s);
  strides = std::move(st);
  return shape.size() <= static_cast<size_t>(gpu::kFusedMaxDims);
}

// Outputs: row-contiguous, in the buffer of a donated input where one matches (elementwise
// kernels may overwrite what they read).
void allocate_outputs(const FusedTape& t, std::span<const array> inputs, std::span<array> outputs,
                      const Shape& shape, gpu::DeviceStream& s) {
  const int64_t n = static_cast<int64_t>(outputs[0].size());
  std::vector<bool> donated(inputs.size(), false);
  for (auto& out : outputs) {
    bool done = false;
    for (size_t i = 0; i < inputs.size() && !done && n > 0; ++i) {
      const array& in = inputs[i];
      if (!donated[i] && !t.shape_only[i] && in.is_donatable() && in.flags().row_contiguous &&
          in.shape() == shape && in.itemsize() == out.itemsize()) {
        out.move_shared_buffer(in);
        donated[i] = done = true;
      }
    }
    if (!done) out.set_data(gpu::new_device_storage(out.nbytes(), s));
  }
}

// Whether every read input is row-contiguous in `shape` or one element (bit i of `scalar`):
// the contig and vec kernels' condition.
bool contiguous_reads(const FusedTape& t, std::span<const array> inputs, const Shape& shape,
                      unsigned int& scalar) {
  scalar = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (t.shape_only[i]) continue;
    const array& in = inputs[i];
    if (in.data_size() == 1)
      scalar |= 1u << i;
    else if (!(in.flags().row_contiguous && in.shape() == shape))
      return false;
  }
  return true;
}

// Whether the vec kernel may run: every array it touches aligned for 16-byte accesses.
bool vector_aligned(const FusedTape& t, std::span<const array> inputs, std::span<array> outputs,
                    unsigned int scalar) {
  const int vw = gpu::fused_vector_width(t);
  bool aligned = static_cast<int64_t>(outputs[0].size()) >= vw;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!t.shape_only[i] && !((scalar >> i) & 1u))
      aligned = aligned && gpu::is_aligned(gpu::device_address(inputs[i]), inputs[i].dtype(), vw);
  for (auto& out : outputs)
    aligned = aligned && gpu::is_aligned(gpu::device_address(out), out.dtype(), vw);
  return aligned;
}

// A module's state, loaded once per node: the source, then the kernels of this context.
// Returns false (after a one-time warning) when the module cannot be built.
bool load(GpuState& state, const char* node, int context, const std::vector<std::string>& names,
          CUfunction* fns) {
  std::lock_guard lk(state.mu);
  if (!state.failed) {
    try {
      const auto& m = gpu::get_module(context, state.module_name, [&] { return state.source; });
      for (size_t k = 0; k < names.size(); ++k) fns[k] = m.function(names[k]);
    } catch (const std::exception& e) {
      state.failed = true;
      state.error = e.what();
    }
  }
  if (state.failed) {
    kernels::warn_once(msg("compile: the fused GPU kernel ", node,
                           " cannot be built; it runs unfused. ", state.error));
  }
  return !state.failed;
}

// The module of `make()` as a node's state (failed when the source cannot be generated).
template <typename Make>
std::shared_ptr<GpuState> new_state(const char* node, Make make) {
  auto st = std::make_shared<GpuState>();
  try {
    st->source = make();
    st->module_name = st->source.name;
    if (detail::compile_debug())
      std::fprintf(stderr, "[kiln compile] GPU kernel %s (%s):\n%s", node, st->module_name.c_str(),
                   st->source.source.c_str());
  } catch (const std::exception& e) {
    st->failed = true;
    st->error = e.what();
  }
  return st;
}

}  // namespace

void Compiled::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  eval_gpu_on(inputs, outputs);
}

void Compiled::eval_gpu_on(std::span<const array> inputs, std::span<array> outputs) {
  auto& s = gpu::device_stream(stream());
  auto state = backend_state<GpuState>(
      1, [&] { return new_state(name(), [&] { return gpu::fused_module(tape(), name()); }); });
  const Shape shape = outputs[0].shape();
  auto fallback = [&] {
    detail::count_compiled_run(true);
    auto res = run_unfused({inputs.begin(), inputs.end()}, shape, [&](const array& a) {
      if (a.has_storage()) s.keep_alive(a.storage_ptr());
    });
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_shared_buffer(res[i]);
  };
  CUfunction fns[6] = {};
  if (!load(*state, name(), s.context().index(), gpu::fused_kernel_names(tape()), fns))
    return fallback();

  const FusedTape& t = tape();
  const int64_t n = static_cast<int64_t>(outputs[0].size());
  allocate_outputs(t, inputs, outputs, shape, s);
  if (n == 0) return;

  std::vector<int> read;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!t.shape_only[i]) read.push_back(static_cast<int>(i));
  unsigned int scalar = 0;
  const bool contiguous = contiguous_reads(t, inputs, shape, scalar);
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  const bool wide = n + gpu::kFusedBlock * gpu::kFusedWork > kMax32;
  gpu::KernelArgs args;
  for (int i : read) args.append(gpu::device_address(inputs[i]));
  for (auto& out : outputs) args.append(gpu::device_address(out));
  auto append_index = [&](int64_t v) {
    if (wide)
      args.append(static_cast<long long>(v));
    else
      args.append(static_cast<int>(v));
  };
  append_index(n);
  CUfunction f;
  int64_t per_thread = gpu::kFusedWork;
  if (contiguous) {
    if (vector_aligned(t, inputs, outputs, scalar)) {
      f = fns[wide ? 5 : 4];
      per_thread = gpu::fused_vector_width(t);
    } else {
      f = fns[wide ? 1 : 0];
    }
    args.append(scalar);
  } else {
    Shape cs = shape;
    std::vector<Strides> strides;
    for (int i : read) {
      const array& in = inputs[i];
      const size_t added = shape.size() - in.ndim();
      Strides st(shape.size(), 0);
      for (size_t d = 0; d < in.ndim(); ++d)
        if (in.shape()[d] == shape[d + added]) st[d + added] = in.strides()[d];
      strides.push_back(std::move(st));
    }
    if (!collapse_all(cs, strides)) return fallback();
    // Offsets past 32 bits need the wide kernel too.
    bool wide_offsets = false;
    for (const auto& st : strides) {
      int64_t span = 0;
      for (size_t d = 0; d < cs.size(); ++d) span += (cs[d] - 1) * std::abs(st[d]);
      wide_offsets |= span > kMax32;
    }
    if (wide_offsets && !wide) {
      args = gpu::KernelArgs();
      for (int i : read) args.append(gpu::device_address(inputs[i]));
      for (auto& out : outputs) args.append(gpu::device_address(out));
      args.append(static_cast<long long>(n));
    }
    f = fns[wide || wide_offsets ? 3 : 2];
    struct {
      int v[gpu::kFusedMaxDims];
    } dims{};
    for (size_t d = 0; d < cs.size(); ++d) dims.v[d] = cs[d];
    args.append(static_cast<int>(cs.size()));
    args.append(dims);
    for (const auto& st : strides) {
      struct {
        long long v[gpu::kFusedMaxDims];
      } sv{};
      for (size_t d = 0; d < st.size(); ++d) sv.v[d] = st[d];
      args.append(sv);
    }
  }
  const int64_t threads = (n + per_thread - 1) / per_thread;
  gpu::launch(f, gpu::grid_1d(threads, gpu::kFusedBlock), {gpu::kFusedBlock}, 0, s, args.params());
  detail::count_compiled_run(false);
}

// Members whose reads are contiguous become segments of the group kernel, launched once per
// fused_group_capacity segments; the others (strided reads, empty, past 32-bit indices, or a
// kernel that cannot be built) run as they would alone.
void CompiledGroup::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  const FusedTape& t = members()[0]->tape();
  auto state = backend_state<GpuState>(
      [&] { return new_state(name(), [&] { return gpu::fused_group_module(t, name()); }); });
  const std::span<const array> in_all(inputs);
  const std::span<array> out_all(outputs);
  auto inputs_of = [&](size_t m) {
    return in_all.subspan(input_offset(m), input_offset(m + 1) - input_offset(m));
  };
  auto outputs_of = [&](size_t m) {
    return out_all.subspan(output_offset(m), output_offset(m + 1) - output_offset(m));
  };
  CUfunction group = nullptr;
  if (!load(*state, name(), s.context().index(), {gpu::fused_group_kernel_name(t)}, &group)) {
    for (size_t m = 0; m < members().size(); ++m)
      members()[m]->eval_gpu_on(inputs_of(m), outputs_of(m));
    return;
  }

  const int vw = gpu::fused_vector_width(t);
  const int capacity = gpu::fused_group_capacity(t);
  const size_t seg_bytes = gpu::fused_segment_bytes(t);
  // The kernel's parameter, laid out as the generated struct Segments.
  std::vector<char> table(capacity * seg_bytes + 8, 0);
  int count = 0, blocks = 0;
  auto launch = [&] {
    std::memcpy(table.data() + capacity * seg_bytes, &count, sizeof(int32_t));
    gpu::KernelArgs args;
    args.append_bytes(table.data(), table.size(), 8);
    gpu::launch(group, {static_cast<uint32_t>(blocks)}, {gpu::kFusedBlock}, 0, s, args.params());
    std::fill(table.begin(), table.end(), 0);
    count = blocks = 0;
  };
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  for (size_t m = 0; m < members().size(); ++m) {
    auto in = inputs_of(m);
    auto out = outputs_of(m);
    const Shape shape = out[0].shape();
    const int64_t n = static_cast<int64_t>(out[0].size());
    unsigned int scalar = 0;
    const int64_t per_block = gpu::kFusedBlock * std::max(vw, gpu::kFusedWork);
    if (n == 0 || n + per_block > kMax32 || !contiguous_reads(t, in, shape, scalar)) {
      members()[m]->eval_gpu_on(in, out);
      continue;
    }
    allocate_outputs(t, in, out, shape, s);
    const bool vec = vector_aligned(t, in, out, scalar);
    const int64_t block_elems = gpu::kFusedBlock * (vec ? vw : gpu::kFusedWork);
    const int64_t seg_blocks = (n + block_elems - 1) / block_elems;
    if (count == capacity || blocks + seg_blocks > kMax32) launch();
    char* seg = table.data() + count * seg_bytes;
    for (size_t i = 0; i < in.size(); ++i) {
      if (t.shape_only[i]) continue;
      const uint64_t p = gpu::device_address(in[i]);
      std::memcpy(seg, &p, sizeof(p));
      seg += sizeof(p);
    }
    for (auto& o : out) {
      const uint64_t p = gpu::device_address(o);
      std::memcpy(seg, &p, sizeof(p));
      seg += sizeof(p);
    }
    const int32_t fields[4] = {static_cast<int32_t>(n), blocks, static_cast<int32_t>(scalar),
                               vec ? 1 : 0};
    std::memcpy(seg, fields, sizeof(fields));
    ++count;
    blocks += static_cast<int>(seg_blocks);
    detail::count_compiled_run(false);
  }
  if (count > 0) launch();
}

}  // namespace kiln
