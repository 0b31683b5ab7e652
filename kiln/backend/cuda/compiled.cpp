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
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

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

}  // namespace

void Compiled::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  auto state = backend_state<GpuState>(1, [&] {
    auto st = std::make_shared<GpuState>();
    try {
      st->source = gpu::fused_module(tape(), name());
      st->module_name = st->source.name;
      if (detail::compile_debug())
        std::fprintf(stderr, "[kiln compile] GPU kernel %s (%s):\n%s", name(),
                     st->module_name.c_str(), st->source.source.c_str());
    } catch (const std::exception& e) {
      st->failed = true;
      st->error = e.what();
    }
    return st;
  });
  const Shape shape = outputs[0].shape();
  auto fallback = [&] {
    detail::count_compiled_run(true);
    auto res = run_unfused(inputs, shape, [&](const array& a) {
      if (a.has_storage()) s.keep_alive(a.storage_ptr());
    });
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_shared_buffer(res[i]);
  };
  CUfunction fns[6] = {};
  {
    std::lock_guard lk(state->mu);
    if (!state->failed) {
      try {
        const auto& m =
            gpu::get_module(s.context().index(), state->module_name, [&] { return state->source; });
        const auto names = gpu::fused_kernel_names(tape());
        for (int k = 0; k < 6; ++k) fns[k] = m.function(names[k]);
      } catch (const std::exception& e) {
        state->failed = true;
        state->error = e.what();
      }
    }
    if (state->failed) {
      kernels::warn_once(msg("compile: the fused GPU kernel ", name(),
                             " cannot be built; it runs unfused. ", state->error));
    }
  }
  if (state->failed) return fallback();

  const FusedTape& t = tape();
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
  if (n == 0) return;

  std::vector<int> read;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!t.shape_only[i]) read.push_back(static_cast<int>(i));
  bool contiguous = true;
  unsigned int scalar = 0;
  for (int i : read) {
    const array& in = inputs[i];
    if (in.data_size() == 1)
      scalar |= 1u << i;
    else if (!(in.flags().row_contiguous && in.shape() == shape))
      contiguous = false;
  }
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
    // 16-byte accesses when every array the kernel touches is aligned for them.
    const int vw = gpu::fused_vector_width(t);
    bool aligned = n >= vw;
    for (int i : read)
      if (!((scalar >> i) & 1u))
        aligned = aligned && gpu::is_aligned(gpu::device_address(inputs[i]), inputs[i].dtype(), vw);
    for (auto& out : outputs)
      aligned = aligned && gpu::is_aligned(gpu::device_address(out), out.dtype(), vw);
    if (aligned) {
      f = fns[wide ? 5 : 4];
      per_thread = vw;
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

}  // namespace kiln
