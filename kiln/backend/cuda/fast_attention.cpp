// eval_gpu of scaled_dot_product_attention and its gradient. Kernels:
// device/attention/flash_fwd.cuh (tensor cores: bfloat16 and float16, head dims 64, 80,
// 96, 128 and 256), device/attention/decode_tc.cuh and decode.cuh (few rows per key/value
// head against long contexts: tensor cores for 16-bit inputs, FMAs for float32),
// device/attention/simple.cuh (everything else and the backward's fallbacks),
// device/attention/common.cuh. Nodes built with the cuDNN backend (KILN_SDPA_BACKEND,
// kiln/fast_sdpa_backend.h) try cuDNN's fused attention first (fast_attention_cudnn.cpp) and
// come here where cuDNN does not serve them.
//
// The forward picks: more than 16 query rows per key/value group, flash_fwd where it
// applies; at most 16 rows (8 for float32) against at least 256 keys (no mask or causal), a
// decode kernel, which reads k and v once for the whole group and splits long contexts
// across blocks; otherwise simple_fwd (split as well).
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/fast_attention_cudnn.h"
#include "kiln/backend/cuda/fast_common.h"
#include "kiln/fast_primitives.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

// Mirrors device/attention/common.cuh's attn::Args.
struct AttnArgs {
  int64_t q_b, q_h, q_l;
  int64_t k_b, k_h, k_l;
  int64_t v_b, v_h, v_l;
  int64_t m_b = 0, m_h = 0, m_i = 0, m_j = 0;
  int32_t B, Hq, Hk, R, Lq, Lk, D, Dv;
  float scale;
  int32_t mask;
  bool has_sinks;
  int32_t splits = 1;
  int64_t split_keys = 0;
  bool kv_vec = false;
};
static_assert(sizeof(AttnArgs) == 168);

constexpr int kRows = 16;     // device attn::kRows
constexpr int kKeyTile = 32;  // device attn::kKeyTile
constexpr int kMaxHeadDim = 256;
constexpr int kFlashDims[] = {64, 80, 96, 128, 256};
constexpr int kFlashBwdDims[] = {64, 80, 96, 128};

// Mirrors of device/attention/flash_fwd.cuh's and flash_bwd.cuh's tiles.
int flash_bn(int D) {
  return D == 256 ? 32 : 64;
}
int flash_warps(int D) {
  return D <= 128 ? 8 : 4;
}
int flash_smem(int D) {
  return (16 * flash_warps(D) + 4 * flash_bn(D)) * (D + 8) * 2;
}
constexpr int kBwdWarps = 8;  // flash_bwd: 128 keys (dkv) or queries (dq) per block

std::string tname(Dtype d) {
  return gpu::device_type(d);
}
std::string acc_name(Dtype d) {
  return d == float64 ? "double" : "float";
}

/** Features per lane of the simple kernels for a head dim: 1, 2, 4 or 8 (the kernels skip
 * the lanes past the dim), so four instantiations cover every dim up to 256. */
int lane_features(int dim) {
  return static_cast<int>(gpu::fast::next_pow2(std::max((dim + 31) / 32, 1)));
}

std::string simple_fwd_name(Dtype d, int dpl) {
  return "kiln::attn::simple_fwd<" + tname(d) + ", " + std::to_string(dpl) + ">";
}
std::string simple_dq_name(Dtype d, int dpl) {
  return "kiln::attn::simple_bwd_dq<" + tname(d) + ", " + std::to_string(dpl) + ">";
}
std::string simple_dkv_name(Dtype d) {
  return "kiln::attn::simple_bwd_dkv<" + tname(d) + ">";
}
std::string rowdot_name(Dtype d) {
  return "kiln::attn::simple_bwd_rowdot<" + tname(d) + ">";
}
std::string sinks_name(Dtype d) {
  return "kiln::attn::simple_bwd_sinks<" + tname(d) + ">";
}
std::string combine_name(Dtype d) {
  return "kiln::attn::combine_splits<" + tname(d) + ", " + acc_name(d) + ">";
}
std::string decode_name(Dtype d, int D, int G) {
  return msg("kiln::attn::decode_fwd<", tname(d), ", ", D, ", ", G, ">");
}
constexpr int kDecodeRows[] = {1, 2, 4, 8};  // G instantiations
std::string decode_tc_name(Dtype d, int D, int NT) {
  return msg("kiln::attn::decode_tc_fwd<", tname(d), ", ", D, ", ", NT, ">");
}

// combine_splits runs one block of kCombineThreads per row (attn::kCombineThreads).
constexpr uint32_t kCombineThreads = 256;
gpu::Dim3 combine_grid(int64_t rows) {
  return {static_cast<uint32_t>(rows), 1, 1};  // rows = B * Hq * Lq < 2^31 (int dims)
}
// Mirrors device/attention/decode_tc.cuh's decode_tc_smem (4 warps, 16-key tiles, padded rows).
int decode_tc_smem(int D, int NT) {
  const int stages = D <= 128 ? 3 : 2;
  return std::max(4 * stages * 2 * 16 * (D + 8) * 2, 4 * 8 * NT * (D + 2) * 4);
}
// Mirrors device/attention/decode.cuh's decode_smem.
int decode_smem(Dtype d, int D, int G) {
  const int lanes_per_key = D / (16 / static_cast<int>(d.size));
  return 4 * (32 / lanes_per_key) * G * (D + 2) * 4;
}
std::string flash_fwd_name(Dtype d, int D) {
  return "kiln::attn::flash_fwd<" + tname(d) + ", " + std::to_string(D) + ", " +
         std::to_string(flash_bn(D)) + ">";
}

std::string flash_dkv_name(Dtype d, int D) {
  return "kiln::attn::flash_bwd_dkv<" + tname(d) + ", " + std::to_string(D) + ">";
}
std::string flash_dq_name(Dtype d, int D) {
  return "kiln::attn::flash_bwd_dq<" + tname(d) + ", " + std::to_string(D) + ">";
}
int flash_dkv_smem(int D) {
  return (2 * 16 * kBwdWarps + 4 * 32) * (D + 8) * 2 + 4 * 32 * 4;
}
int flash_dq_smem(int D) {
  const int stages = D <= 96 ? 2 : 1;
  return (2 * 16 * kBwdWarps + 2 * stages * 64) * (D + 8) * 2;
}

// Modules: one per kernel family, dtype and head dim, so a first call compiles only what it
// runs (the forward alone for inference).
enum class Part { flash_fwd, flash_bwd, simple_fwd, simple_bwd_dq, simple_bwd, decode, decode_tc };

std::string part_name(Part p) {
  switch (p) {
    case Part::flash_fwd:
      return "flash_fwd";
    case Part::flash_bwd:
      return "flash_bwd";
    case Part::simple_fwd:
      return "simple_fwd";
    case Part::simple_bwd_dq:
      return "simple_bwd_dq";
    case Part::simple_bwd:
      return "simple_bwd";
    case Part::decode:
      return "decode";
    case Part::decode_tc:
      return "decode_tc";
  }
  return "";
}

/** The device header of a part's kernels (under device/attention/). */
std::string part_header(Part p) {
  switch (p) {
    case Part::flash_fwd:
      return "flash_fwd.cuh";
    case Part::flash_bwd:
      return "flash_bwd.cuh";
    case Part::decode:
      return "decode.cuh";
    case Part::decode_tc:
      return "decode_tc.cuh";
    default:
      return "simple.cuh";
  }
}

/** `size`: the head dim (flash), output features per lane (simple), or 0. */
std::string module_name(Part p, Dtype d, int size) {
  std::string name = "fast_attention_" + part_name(p) + "_" + std::string(type_to_name(d));
  if (size) name += msg("_", size);
  return name;
}

gpu::ModuleSource attention_module(Part p, Dtype d, int size) {
  gpu::ModuleSource m{module_name(p, d, size),
                      "#include \"kiln/backend/cuda/device/attention/" + part_header(p) + "\"\n",
                      {}};
  switch (p) {
    case Part::flash_fwd:
      m.kernels = {flash_fwd_name(d, size)};
      break;
    case Part::flash_bwd:
      m.kernels = {flash_dkv_name(d, size), flash_dq_name(d, size)};
      break;
    case Part::simple_fwd:
      m.kernels = {simple_fwd_name(d, size), combine_name(d)};
      break;
    case Part::simple_bwd_dq:
      m.kernels = {simple_dq_name(d, size)};
      break;
    case Part::simple_bwd:
      m.kernels = {simple_dkv_name(d), rowdot_name(d), sinks_name(d)};
      break;
    case Part::decode:
      for (int G : kDecodeRows) m.kernels.push_back(decode_name(d, size, G));
      m.kernels.push_back(combine_name(d));
      break;
    case Part::decode_tc:
      m.kernels = {decode_tc_name(d, size, 1), decode_tc_name(d, size, 2), combine_name(d)};
      break;
  }
  return m;
}

const gpu::Module& kernels(Part p, Dtype d, int size, gpu::DeviceStream& s) {
  return gpu::get_module(s.context().index(), module_name(p, d, size),
                         [p, d, size] { return attention_module(p, d, size); });
}

/** q, k or v as the kernels read it: feature stride 1 (else a row-contiguous copy); with
 * `aligned`, every row 16-byte aligned too (flash_fwd's cp.async). */
struct Operand {
  CUdeviceptr ptr;
  int64_t sb, sh, sl;
  bool aligned;
};

Operand operand(const array& x, gpu::DeviceStream& s) {
  const Strides& st = x.strides();
  const CUdeviceptr p = gpu::device_address(x);
  const int n = gpu::fast::vec_elems(x.dtype());
  auto ok16 = [&](int64_t v) { return v % n == 0; };
  if (st[3] == 1 || x.shape(3) == 1) {
    const bool aligned =
        p % 16 == 0 && ok16(st[0]) && ok16(st[1]) && ok16(st[2]) && x.shape(3) % n == 0;
    return {p, st[0], st[1], st[2], aligned};
  }
  const CUdeviceptr c = gpu::scratch(x.nbytes(), s);
  gpu::copy_to_row_contiguous(x, c, s);
  const int64_t L = x.shape(2), D = x.shape(3), H = x.shape(1);
  return {c, H * L * D, L * D, D, x.shape(3) % n == 0};
}

void check_supported(Dtype d, int D, int Dv) {
  if (std::find(std::begin(gpu::fast::kFloatDtypes), std::end(gpu::fast::kFloatDtypes), d) ==
      std::end(gpu::fast::kFloatDtypes)) {
    throw std::invalid_argument(
        msg("[scaled_dot_product_attention] Unsupported dtype ", d, " on the GPU."));
  }
  if (D > kMaxHeadDim || Dv > kMaxHeadDim) {
    throw std::invalid_argument(msg("[scaled_dot_product_attention] Head dims up to ", kMaxHeadDim,
                                    " run on the GPU; got ", D, " and ", Dv, "."));
  }
}

/** The problem's arguments from the inputs (q, k, v, [mask], [sinks]). */
AttnArgs make_args(const std::vector<array>& in, const Operand& q, const Operand& k,
                   const Operand& v, float scale, MaskKind mask, bool has_sinks) {
  AttnArgs a;
  a.q_b = q.sb, a.q_h = q.sh, a.q_l = q.sl;
  a.k_b = k.sb, a.k_h = k.sh, a.k_l = k.sl;
  a.v_b = v.sb, a.v_h = v.sh, a.v_l = v.sl;
  a.B = in[0].shape(0);
  a.Hq = in[0].shape(1);
  a.Lq = in[0].shape(2);
  a.D = in[0].shape(3);
  a.Hk = in[1].shape(1);
  a.Lk = in[1].shape(2);
  a.Dv = in[2].shape(3);
  a.R = a.Hq / a.Hk;
  a.scale = scale;
  a.mask = static_cast<int32_t>(mask);
  a.has_sinks = has_sinks;
  a.kv_vec = k.aligned && v.aligned;
  if (mask == MaskKind::boolean || mask == MaskKind::additive) {
    const Strides& ms = in[3].strides();
    a.m_b = ms[0], a.m_h = ms[1], a.m_i = ms[2], a.m_j = ms[3];
  }
  return a;
}

CUdeviceptr mask_ptr(const std::vector<array>& in, MaskKind mask) {
  return mask == MaskKind::boolean || mask == MaskKind::additive ? gpu::device_address(in[3]) : 0;
}

/** The backward without tensor cores (simple.cuh): dQ by query rows, dK and dV by key
 * tiles. */
void simple_backward(const gpu::Module& mod, Dtype d, const AttnArgs& a, const Operand& q,
                     const Operand& k, const Operand& v, CUdeviceptr mask, CUdeviceptr dout,
                     CUdeviceptr lse, CUdeviceptr drow, std::vector<array>& outputs,
                     gpu::DeviceStream& s) {
  const int D = a.D, Dv = a.Dv;
  const size_t acc = d == float64 ? 8 : 4;
  const int group_rows = a.R * a.Lq;
  if (outputs[0].size() > 0) {
    const int dpl = lane_features(D);
    const size_t smem =
        (static_cast<size_t>(kRows) * (D + Dv) + kKeyTile * (D + 1) + kKeyTile * (Dv + 1)) * acc;
    const int64_t row_blocks = (group_rows + kRows - 1) / kRows;
    const int dq_dpl = dpl;
    gpu::launch_kernel(
        kernels(Part::simple_bwd_dq, d, dq_dpl, s).function(simple_dq_name(d, dq_dpl)),
        {static_cast<uint32_t>(static_cast<int64_t>(a.B) * a.Hk * row_blocks), 1, 1}, {128}, smem,
        s, q.ptr, k.ptr, v.ptr, mask, dout, lse, drow, gpu::device_address(outputs[0]), a);
  }
  if (outputs[1].size() > 0 || outputs[2].size() > 0) {
    const size_t smem = (static_cast<size_t>(kKeyTile) * (D + 1) + kKeyTile * (Dv + 1) +
                         kKeyTile * D + kKeyTile * Dv + 4 * D + 4 * Dv + 2 * 4 * kKeyTile) *
                        acc;
    const int64_t tiles = (a.Lk + kKeyTile - 1) / kKeyTile;
    gpu::launch_kernel(mod.function(simple_dkv_name(d)),
                       {static_cast<uint32_t>(static_cast<int64_t>(a.B) * a.Hk * tiles), 1, 1},
                       {128}, smem, s, q.ptr, k.ptr, v.ptr, mask, dout, lse, drow,
                       gpu::device_address(outputs[1]), gpu::device_address(outputs[2]), a);
  }
}

/** kiln's forward kernels: the attention of `inputs` (q, k, v, [mask], [sinks]) into `out`
 * and each row's logsumexp into `lse` (dense buffers). */
void kiln_forward(const std::vector<array>& inputs, CUdeviceptr out, CUdeviceptr lse, float scale_,
                  MaskKind mask_, bool has_sinks_, gpu::DeviceStream& s) {
  const Dtype d = inputs[0].dtype();
  const int D = inputs[0].shape(3), Dv = inputs[2].shape(3);
  check_supported(d, D, Dv);
  const Operand q = operand(inputs[0], s), k = operand(inputs[1], s), v = operand(inputs[2], s);
  AttnArgs a = make_args(inputs, q, k, v, scale_, mask_, has_sinks_);
  const CUdeviceptr mask = mask_ptr(inputs, mask_);
  const CUdeviceptr sinks = has_sinks_ ? gpu::fast::dense_address(inputs.back(), s) : 0;
  const int group_rows = a.R * a.Lq;

  const bool flash =
      (d == bfloat16 || d == float16) && D == Dv &&
      std::find(std::begin(kFlashDims), std::end(kFlashDims), D) != std::end(kFlashDims) &&
      q.aligned && k.aligned && v.aligned && group_rows > kRows &&
      s.context().compute_capability() >= 80;
  if (flash) {
    const gpu::Module& mod = kernels(Part::flash_fwd, d, D, s);
    const int rows = 16 * flash_warps(D);
    const gpu::Dim3 grid{static_cast<uint32_t>((a.Lq + rows - 1) / rows),
                         static_cast<uint32_t>(a.B * a.Hq), 1};
    gpu::launch_kernel(
        mod.function(flash_fwd_name(d, D)), grid, {static_cast<uint32_t>(32 * flash_warps(D))},
        static_cast<size_t>(flash_smem(D)), s, q.ptr, k.ptr, v.ptr, mask, sinks, out, lse, a);
    return;
  }

  // The decode kernels: few rows per key/value head, long contexts, bandwidth-bound.
  // decode_tc_fwd (tensor cores) for 16-bit inputs on sm_80 and later, else decode_fwd.
  const bool decode_shape =
      D == Dv && a.Lk >= 256 && q.aligned && k.aligned && v.aligned &&
      (mask_ == MaskKind::none || (mask_ == MaskKind::causal && a.Lk >= a.Lq));
  const bool decode_tc =
      decode_shape && (d == bfloat16 || d == float16) && group_rows <= 16 &&
      std::find(std::begin(kFlashDims), std::end(kFlashDims), D) != std::end(kFlashDims) &&
      s.context().compute_capability() >= 80;
  const bool decode = decode_tc || (decode_shape && group_rows <= 8 && (D == 64 || D == 128) &&
                                    (d == bfloat16 || d == float16 || d == float32));
  if (decode) {
    const gpu::Module& mod =
        decode_tc ? kernels(Part::decode_tc, d, D, s) : kernels(Part::decode, d, D, s);
    int G = 0;
    if (!decode_tc)
      G = *std::find_if(std::begin(kDecodeRows), std::end(kDecodeRows),
                        [&](int g) { return g >= group_rows; });
    const int NT = group_rows <= 8 ? 1 : 2;
    CUfunction f = mod.function(decode_tc ? decode_tc_name(d, D, NT) : decode_name(d, D, G));
    const size_t smem =
        static_cast<size_t>(decode_tc ? decode_tc_smem(D, NT) : decode_smem(d, D, G));
    // Split keys over blocks, keeping >= 256 keys each (a multiple of the 64 keys a block's
    // warps read at once). decode_tc_fwd: one block per multiprocessor, the fastest of 1 to 8
    // per multiprocessor on an H200 for D 64 and 128 and 8 or 16 rows
    // (benchmarks/gpu/decode_rope_kernels.cu): every split adds a block's start and end and a
    // partial row to combine. decode_fwd: four waves of resident blocks.
    const int64_t blocks = static_cast<int64_t>(a.B) * a.Hk;
    const int64_t target =
        decode_tc ? int64_t{s.context().sm_count()} : 4 * gpu::resident_blocks(s, f, 128, smem);
    int64_t splits =
        std::clamp<int64_t>(decode_tc ? target / blocks : (target + blocks - 1) / blocks, 1,
                            std::max<int64_t>(1, a.Lk / 256));
    splits = std::min<int64_t>(splits, 65535);
    a.split_keys = (a.Lk + splits - 1) / splits;
    a.split_keys = (a.split_keys + 63) / 64 * 64;
    splits = std::max<int64_t>(1, (a.Lk + a.split_keys - 1) / a.split_keys);
    a.splits = static_cast<int32_t>(splits);
    const int64_t rows = static_cast<int64_t>(a.B) * a.Hq * a.Lq;
    CUdeviceptr po = 0, pml = 0;
    if (splits > 1) {
      po = gpu::scratch(splits * rows * Dv * 4, s);
      pml = gpu::scratch(splits * rows * 2 * 4, s);
    }
    gpu::launch_kernel(f, {static_cast<uint32_t>(blocks), static_cast<uint32_t>(splits), 1}, {128},
                       smem, s, q.ptr, k.ptr, v.ptr, sinks, out, lse, po, pml, a);
    if (splits > 1) {
      const int32_t sp = a.splits, dv = a.Dv, lk = a.Lk;
      gpu::launch_kernel(mod.function(combine_name(d)), combine_grid(rows), {kCombineThreads}, 0, s,
                         po, pml, out, lse, rows, sp, dv, lk);
    }
    return;
  }

  // simple_fwd, splitting long key ranges so that the blocks fill the GPU twice over.
  const int dpl = lane_features(Dv);
  const gpu::Module& mod = kernels(Part::simple_fwd, d, dpl, s);
  CUfunction f = mod.function(simple_fwd_name(d, dpl));
  const size_t acc = d == float64 ? 8 : 4;
  const size_t smem =
      (static_cast<size_t>(kRows) * D + kKeyTile * (D + 1) + kKeyTile * (Dv + 1)) * acc;
  const int64_t row_blocks = (group_rows + kRows - 1) / kRows;
  const int64_t blocks = static_cast<int64_t>(a.B) * a.Hk * row_blocks;
  const int64_t target = 2 * gpu::resident_blocks(s, f, 128, smem);
  int64_t splits = 1;
  if (blocks < target && a.Lk > 8 * kKeyTile) {
    splits = std::min<int64_t>((target + blocks - 1) / blocks,
                               (a.Lk + 8 * kKeyTile - 1) / (8 * kKeyTile));
    splits = std::clamp<int64_t>(splits, 1, 65535);
  }
  a.split_keys = (a.Lk + splits - 1) / splits;
  a.split_keys = std::max<int64_t>(kKeyTile, (a.split_keys + kKeyTile - 1) / kKeyTile * kKeyTile);
  splits = std::max<int64_t>(1, (a.Lk + a.split_keys - 1) / a.split_keys);
  a.splits = static_cast<int32_t>(splits);
  const int64_t rows = static_cast<int64_t>(a.B) * a.Hq * a.Lq;
  CUdeviceptr po = 0, pml = 0;
  if (splits > 1) {
    po = gpu::scratch(splits * rows * Dv * acc, s);
    pml = gpu::scratch(splits * rows * 2 * acc, s);
  }
  gpu::launch_kernel(f, {static_cast<uint32_t>(blocks), static_cast<uint32_t>(splits), 1}, {128},
                     smem, s, q.ptr, k.ptr, v.ptr, mask, sinks, out, lse, po, pml, a);
  if (splits > 1) {
    const int32_t sp = a.splits, dv = a.Dv, lk = a.Lk;
    gpu::launch_kernel(mod.function(combine_name(d)), combine_grid(rows), {kCombineThreads}, 0, s,
                       po, pml, out, lse, rows, sp, dv, lk);
  }
}

/** kiln's backward kernels. `inputs`: the VJP node's (primals, out, lse, dout); `o` and `lse`:
 * dense buffers of kiln's forward for those primals. */
void kiln_backward(const std::vector<array>& inputs, CUdeviceptr o, CUdeviceptr lse,
                   std::vector<array>& outputs, float scale_, MaskKind mask_, bool has_sinks_,
                   gpu::DeviceStream& s) {
  const size_t np = inputs.size() - 3;  // the primals; then out, lse, dout
  const std::vector<array> primals(inputs.begin(), inputs.begin() + np);
  const Dtype d = inputs[0].dtype();
  const int D = inputs[0].shape(3), Dv = inputs[2].shape(3);
  check_supported(d, D, Dv);
  const gpu::Module& mod = kernels(Part::simple_bwd, d, 0, s);
  const Operand q = operand(inputs[0], s), k = operand(inputs[1], s), v = operand(inputs[2], s);
  AttnArgs a = make_args(primals, q, k, v, scale_, mask_, has_sinks_);
  const CUdeviceptr mask = mask_ptr(primals, mask_);
  const CUdeviceptr dout = gpu::fast::dense_address(inputs[np + 2], s);
  const size_t acc = d == float64 ? 8 : 4;
  const int64_t rows = static_cast<int64_t>(a.B) * a.Hq * a.Lq;
  const CUdeviceptr drow = gpu::scratch(std::max<int64_t>(rows, 1) * acc, s);
  const int32_t dv = Dv;
  if (rows > 0) {
    gpu::launch_kernel(mod.function(rowdot_name(d)), gpu::grid_1d(rows * 32, 128), {128}, 0, s, o,
                       dout, drow, rows, dv);
  }
  const bool flash =
      (d == bfloat16 || d == float16) && D == Dv &&
      std::find(std::begin(kFlashBwdDims), std::end(kFlashBwdDims), D) != std::end(kFlashBwdDims) &&
      q.aligned && k.aligned && v.aligned && dout % 16 == 0 &&
      s.context().compute_capability() >= 80;
  if (flash) {
    // Tensor cores: dK and dV by key tiles, dQ by query tiles.
    const gpu::Module& fm = kernels(Part::flash_bwd, d, D, s);
    if (a.Lk > 0) {
      const int64_t tiles = (a.Lk + 16 * kBwdWarps - 1) / (16 * kBwdWarps);
      gpu::launch_kernel(fm.function(flash_dkv_name(d, D)),
                         {static_cast<uint32_t>(static_cast<int64_t>(a.B) * a.Hk * tiles), 1, 1},
                         {32 * kBwdWarps}, static_cast<size_t>(flash_dkv_smem(D)), s, q.ptr, k.ptr,
                         v.ptr, mask, dout, lse, drow, gpu::device_address(outputs[1]),
                         gpu::device_address(outputs[2]), a);
    }
    if (a.Lq > 0) {
      const gpu::Dim3 grid{static_cast<uint32_t>((a.Lq + 16 * kBwdWarps - 1) / (16 * kBwdWarps)),
                           static_cast<uint32_t>(a.B * a.Hq), 1};
      gpu::launch_kernel(fm.function(flash_dq_name(d, D)), grid, {32 * kBwdWarps},
                         static_cast<size_t>(flash_dq_smem(D)), s, q.ptr, k.ptr, v.ptr, mask, dout,
                         lse, drow, gpu::device_address(outputs[0]), a);
    }
  } else {
    simple_backward(mod, d, a, q, k, v, mask, dout, lse, drow, outputs, s);
  }
  if (has_sinks_) {
    const CUdeviceptr sinks = gpu::fast::dense_address(primals.back(), s);
    const int32_t B = a.B, Hq = a.Hq, Lq = a.Lq;
    gpu::launch_kernel(mod.function(sinks_name(d)), {static_cast<uint32_t>(a.Hq), 1, 1}, {32}, 0, s,
                       sinks, lse, drow, gpu::device_address(outputs[3]), B, Hq, Lq);
  }
}

}  // namespace

void ScaledDotProductAttention::eval_gpu(const std::vector<array>& inputs,
                                         std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  if (cudnn_ && outputs[0].size() > 0) {
    // cuDNN writes out in q's layout: a (B, L, H, D) projection's transposes stay views.
    gpu::fast::set_output_like(inputs[0], outputs[0], s);
    outputs[1].set_data(gpu::new_device_storage(outputs[1].nbytes(), s));
    if (cudnn_sdpa::forward(inputs, outputs, scale_, mask_ == MaskKind::causal, s)) return;
  }
  for (auto& o : outputs) o.set_data(gpu::new_device_storage(o.nbytes(), s));
  if (outputs[0].size() == 0) return;
  kiln_forward(inputs, gpu::device_address(outputs[0]), gpu::device_address(outputs[1]), scale_,
               mask_, has_sinks_, s);
}

void ScaledDotProductAttentionVJP::eval_gpu(const std::vector<array>& inputs,
                                            std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  const size_t np = inputs.size() - 3;  // the primals; then out, lse, dout
  auto set_dense = [&] {
    for (auto& o : outputs) o.set_data(gpu::new_device_storage(o.nbytes(), s));
  };
  if (cudnn_) {
    // cuDNN writes dq, dk and dv in the layouts of q, k and v; kiln's kernels write dense ones.
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (i < 3)
        gpu::fast::set_output_like(inputs[i], outputs[i], s);
      else
        outputs[i].set_data(gpu::new_device_storage(outputs[i].nbytes(), s));
    }
    switch (cudnn_sdpa::backward(inputs, outputs, scale_, mask_ == MaskKind::causal, s)) {
      case cudnn_sdpa::Backward::served:
        return;
      case cudnn_sdpa::Backward::forward_was_kiln:
        set_dense();
        break;
      case cudnn_sdpa::Backward::rejected: {
        // The saved out and stats are cuDNN's: recompute kiln's own for kiln's backward.
        set_dense();
        const std::vector<array> primals(inputs.begin(), inputs.begin() + np);
        const CUdeviceptr o = gpu::scratch(std::max<size_t>(inputs[np].nbytes(), 1), s);
        const CUdeviceptr lse = gpu::scratch(std::max<size_t>(inputs[np + 1].nbytes(), 1), s);
        kiln_forward(primals, o, lse, scale_, mask_, has_sinks_, s);
        kiln_backward(inputs, o, lse, outputs, scale_, mask_, has_sinks_, s);
        return;
      }
    }
  } else {
    set_dense();
  }
  kiln_backward(inputs, gpu::fast::dense_address(inputs[np], s),
                gpu::fast::dense_address(inputs[np + 1], s), outputs, scale_, mask_, has_sinks_, s);
}

KILN_GPU_MODULE_CATALOG(fast_attention, [](const gpu::ModuleSink& sink) {
  auto add = [&](Part p, Dtype d, int size) {
    sink(module_name(p, d, size), attention_module(p, d, size));
  };
  for (Dtype d : gpu::fast::kFloatDtypes) {
    for (int dpl = 1; dpl <= kMaxHeadDim / 32; dpl *= 2) {
      add(Part::simple_fwd, d, dpl);
      add(Part::simple_bwd_dq, d, dpl);
    }
    add(Part::simple_bwd, d, 0);
  }
  for (Dtype d : {bfloat16, float16, float32})
    for (int D : {64, 128}) add(Part::decode, d, D);
  for (Dtype d : {bfloat16, float16}) {
    for (int D : kFlashDims) add(Part::flash_fwd, d, D);
    for (int D : kFlashDims) add(Part::decode_tc, d, D);
    for (int D : kFlashBwdDims) add(Part::flash_bwd, d, D);
  }
});

}  // namespace kiln::fast
