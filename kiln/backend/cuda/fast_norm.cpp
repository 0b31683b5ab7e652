// eval_gpu of rms_norm (and fused_rms_silu), layer_norm and their gradients. Kernels:
// device/norm/norm.cuh, three modules per dtype.
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/fast_common.h"
#include "kiln/fast_primitives.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

using gpu::fast::RowPlan;

// Mirrors device/norm/norm.cuh's NormArgs.
struct NormArgs {
  int64_t rows;
  int64_t n;
  int32_t group;
  bool vec;
  bool has_w;
  bool has_b;
  float eps;
};
static_assert(sizeof(NormArgs) == 32);

// Vectors per thread kept in registers: at most 32 elements in the forward (more spill at
// 1024 threads, 64 registers each); in the backward (x and g, the next row's x and g, two
// gradient sums per element; blocks of at most 512 threads, 128 registers each) 16 elements
// of 16-bit types and float32, 4 of float64 (no spills).
int fwd_max_vpt(Dtype d) {
  return d.size == 4 ? 8 : 4;
}
int bwd_max_vpt(Dtype d) {
  return d.size == 4 ? 4 : 2;
}
constexpr int kBwdMaxGroup = 512;  // device/norm/norm.cuh's kRowBlockBwd

std::string tname(Dtype d) {
  return gpu::device_type(d);
}
const char* layer(bool l) {
  return l ? "true" : "false";
}

// Forward kernels through SiLU (fused_rms_silu) carry a last template argument `true`.
std::string act(bool silu) {
  return silu ? ", true>" : ">";
}

std::string fwd_name(Dtype d, int vpt, bool l, bool silu = false) {
  return "kiln::norm_fwd<" + tname(d) + ", " + std::to_string(vpt) + ", " + layer(l) + act(silu);
}
std::string rms_staged_name(Dtype d, int vpt, bool silu = false) {
  return "kiln::rms_norm_fwd_staged<" + tname(d) + ", " + std::to_string(vpt) + act(silu);
}
std::string fwd_looped_name(Dtype d, bool l, bool silu = false) {
  return "kiln::norm_fwd_looped<" + tname(d) + ", " + layer(l) + act(silu);
}
std::string vjp_name(Dtype d, int vpt, bool l) {
  return "kiln::norm_vjp<" + tname(d) + ", " + std::to_string(vpt) + ", " + layer(l) + ">";
}
std::string vjp_looped_name(Dtype d, bool l) {
  return "kiln::norm_vjp_looped<" + tname(d) + ", " + layer(l) + ">";
}
std::string param_grad_name(Dtype d, bool l) {
  return "kiln::norm_param_grad<" + tname(d) + ", " + layer(l) + ">";
}
std::string sum_partials_name(Dtype d) {
  return "kiln::sum_partials<" + tname(d) + ">";
}

// Three modules per dtype, each compiled on first use: the forward kernels, fused_rms_silu's,
// and the backward's.
enum class Kernels { Forward, SiluForward, Backward };
constexpr Kernels kAllKernels[] = {Kernels::Forward, Kernels::SiluForward, Kernels::Backward};

std::string module_name(Dtype d, Kernels k) {
  const char* prefix = k == Kernels::Forward       ? "fast_norm_fwd_"
                       : k == Kernels::SiluForward ? "fast_norm_silu_"
                                                   : "fast_norm_bwd_";
  return prefix + std::string(type_to_name(d));
}

gpu::ModuleSource norm_module(Dtype d, Kernels k) {
  gpu::ModuleSource m{
      module_name(d, k), "#include \"kiln/backend/cuda/device/norm/norm.cuh\"\n", {}};
  if (k == Kernels::Backward) {
    for (bool l : {false, true}) {
      for (int v = 1; v <= bwd_max_vpt(d); v *= 2) m.kernels.push_back(vjp_name(d, v, l));
      m.kernels.push_back(vjp_looped_name(d, l));
      m.kernels.push_back(param_grad_name(d, l));
    }
    m.kernels.push_back(sum_partials_name(d));
    return m;
  }
  const bool silu = k == Kernels::SiluForward;
  for (int v = 1; v <= gpu::fast::kStagedMaxVpt; v *= 2)
    m.kernels.push_back(rms_staged_name(d, v, silu));
  for (bool l : {false, true}) {
    if (silu && l) continue;  // SiLU follows rms_norm only
    for (int v = 1; v <= fwd_max_vpt(d); v *= 2) m.kernels.push_back(fwd_name(d, v, l, silu));
    m.kernels.push_back(fwd_looped_name(d, l, silu));
  }
  return m;
}

const gpu::Module& norm_kernels(Dtype d, Kernels k, gpu::DeviceStream& s) {
  if (std::find(std::begin(gpu::fast::kFloatDtypes), std::end(gpu::fast::kFloatDtypes), d) ==
      std::end(gpu::fast::kFloatDtypes)) {
    throw std::invalid_argument(msg("[fast::norm] Unsupported dtype ", d, "."));
  }
  return gpu::get_module(s.context().index(), module_name(d, k),
                         [d, k] { return norm_module(d, k); });
}

void norm_forward(const Stream& st, bool layer_norm, const std::vector<array>& inputs, array& out,
                  float eps, bool has_w, bool has_b, bool silu = false) {
  auto& s = gpu::device_stream(st);
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const Dtype d = out.dtype();
  const gpu::Module& mod = norm_kernels(d, silu ? Kernels::SiluForward : Kernels::Forward, s);
  const array& x = inputs[0];
  NormArgs a;
  a.n = x.shape(-1);
  a.rows = static_cast<int64_t>(x.size()) / a.n;
  a.has_w = has_w;
  a.has_b = has_b;
  a.eps = eps;
  const CUdeviceptr xp = gpu::fast::dense_address(x, s);
  const CUdeviceptr wp = has_w ? gpu::fast::dense_address(inputs[1], s) : 0;
  const CUdeviceptr bp = has_b ? gpu::fast::dense_address(inputs[has_w ? 2 : 1], s) : 0;
  const CUdeviceptr yp = gpu::device_address(out);
  a.vec = a.n % gpu::fast::vec_elems(d) == 0 && gpu::fast::aligned16(xp) &&
          gpu::fast::aligned16(yp) && gpu::fast::aligned16(wp) && gpu::fast::aligned16(bp);
  // The register kernels read aligned rows of whole vectors; others loop.
  RowPlan p = gpu::fast::plan_rows(a.n, d, fwd_max_vpt(d));
  if (!a.vec) p = gpu::fast::plan_rows(a.n, d, 0);
  a.group = p.group;
  // Long rms_norm rows: through shared memory (layer_norm's weight and bias would spill there).
  if (const size_t smem = layer_norm ? 0 : gpu::fast::staged_smem(p, a.n, d, s)) {
    CUfunction f = mod.function(rms_staged_name(d, p.vpt, silu));
    gpu::launch_kernel(f, gpu::fast::staged_grid(f, smem, a.rows, s), {1024}, smem, s, xp, wp, yp,
                       a);
    return;
  }
  CUfunction f = mod.function(p.looped ? fwd_looped_name(d, layer_norm, silu)
                                       : fwd_name(d, p.vpt, layer_norm, silu));
  gpu::launch_kernel(f, gpu::fast::row_grid(a.rows, p), {static_cast<uint32_t>(p.block)}, 0, s, xp,
                     wp, bp, yp, a);
}

// Inputs x, [w], g; outputs dx, [dw], [db].
void norm_backward(const Stream& st, bool layer_norm, const std::vector<array>& inputs,
                   std::vector<array>& outputs, float eps, bool has_w, bool want_b) {
  auto& s = gpu::device_stream(st);
  for (auto& o : outputs) o.set_data(gpu::new_device_storage(o.nbytes(), s));
  const array& x = inputs[0];
  const Dtype d = x.dtype();
  const gpu::Module& mod = norm_kernels(d, Kernels::Backward, s);
  NormArgs a;
  a.n = x.shape(-1);
  if (a.n == 0) return;  // every output is empty
  a.rows = static_cast<int64_t>(x.size()) / a.n;
  a.has_w = has_w;
  a.has_b = want_b;
  a.eps = eps;
  const size_t acc = d == float64 ? 8 : 4;
  array* dw = has_w ? &outputs[1] : nullptr;
  array* db = want_b ? &outputs[has_w ? 2 : 1] : nullptr;
  const gpu::Dim3 col_grid{static_cast<uint32_t>((a.n + 31) / 32), 1, 1};
  auto finish = [&](CUdeviceptr pw, CUdeviceptr pb, int64_t parts) {
    CUfunction sum = mod.function(sum_partials_name(d));
    if (dw)
      gpu::launch_kernel(sum, col_grid, {32, 8}, 0, s, pw, gpu::device_address(*dw), parts, a.n);
    if (db)
      gpu::launch_kernel(sum, col_grid, {32, 8}, 0, s, pb, gpu::device_address(*db), parts, a.n);
  };
  if (a.rows == 0) return finish(0, 0, 0);  // zero gradients
  const CUdeviceptr xp = gpu::fast::dense_address(x, s);
  const CUdeviceptr wp = has_w ? gpu::fast::dense_address(inputs[1], s) : 0;
  const CUdeviceptr gp = gpu::fast::dense_address(inputs.back(), s);
  const CUdeviceptr dxp = gpu::device_address(outputs[0]);
  a.vec = a.n % gpu::fast::vec_elems(d) == 0 && gpu::fast::aligned16(xp) &&
          gpu::fast::aligned16(wp) && gpu::fast::aligned16(gp) && gpu::fast::aligned16(dxp);
  RowPlan p = gpu::fast::plan_rows(a.n, d, bwd_max_vpt(d), kBwdMaxGroup);
  if (!a.vec) p = gpu::fast::plan_rows(a.n, d, 0);
  a.group = p.group;
  if (!p.looped) {
    // Persistent groups: one wave, each summing its rows' parameter gradients.
    CUfunction f = mod.function(vjp_name(d, p.vpt, layer_norm));
    const int64_t resident = gpu::resident_blocks(s, f, p.block, 0);
    const int64_t needed = (a.rows + p.rows_per_block() - 1) / p.rows_per_block();
    const int64_t blocks = std::clamp<int64_t>(std::min(resident, needed), 1, 0x7fffffff);
    const int64_t parts = blocks * p.rows_per_block();
    const CUdeviceptr pw = dw ? gpu::scratch(parts * a.n * acc, s) : 0;
    const CUdeviceptr pb = db ? gpu::scratch(parts * a.n * acc, s) : 0;
    gpu::launch_kernel(f, {static_cast<uint32_t>(blocks), 1, 1}, {static_cast<uint32_t>(p.block)},
                       0, s, xp, wp, gp, dxp, pw, pb, a);
    return finish(pw, pb, parts);
  }
  const CUdeviceptr stats = gpu::scratch(a.rows * 2 * acc, s);
  gpu::launch_kernel(mod.function(vjp_looped_name(d, layer_norm)), gpu::fast::row_grid(a.rows, p),
                     {static_cast<uint32_t>(p.block)}, 0, s, xp, wp, gp, dxp, stats, a);
  if (!dw && !db) return;
  // Column strips over chunks of rows: enough blocks for two waves.
  const int64_t target = 2 * gpu::resident_blocks(s);
  const int64_t splits =
      std::clamp<int64_t>(target / col_grid.x, 1, std::max<int64_t>(1, a.rows / 8));
  const int64_t chunk = (a.rows + splits - 1) / splits;
  const int64_t parts = (a.rows + chunk - 1) / chunk;
  const CUdeviceptr pw = dw ? gpu::scratch(parts * a.n * acc, s) : 0;
  const CUdeviceptr pb = db ? gpu::scratch(parts * a.n * acc, s) : 0;
  gpu::launch_kernel(mod.function(param_grad_name(d, layer_norm)),
                     {col_grid.x, static_cast<uint32_t>(parts), 1}, {32, 8}, 0, s, xp, gp, stats,
                     pw, pb, a.rows, a.n, chunk, dw != nullptr, db != nullptr);
  finish(pw, pb, parts);
}

}  // namespace

void RMSNorm::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  norm_forward(stream(), false, inputs, outputs[0], eps_, has_weight_, false);
}

void LayerNorm::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  norm_forward(stream(), true, inputs, outputs[0], eps_, has_weight_, has_bias_);
}

void RMSNormSiLU::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  norm_forward(stream(), false, inputs, outputs[0], eps_, has_weight_, false, true);
}

void RMSNormVJP::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  norm_backward(stream(), false, inputs, outputs, eps_, has_weight_, false);
}

void LayerNormVJP::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  norm_backward(stream(), true, inputs, outputs, eps_, has_weight_, has_bias_);
}

KILN_GPU_MODULE_CATALOG(fast_norm, [](const gpu::ModuleSink& sink) {
  for (Dtype d : gpu::fast::kFloatDtypes) {
    for (Kernels k : kAllKernels) sink(module_name(d, k), norm_module(d, k));
  }
});

}  // namespace kiln::fast
