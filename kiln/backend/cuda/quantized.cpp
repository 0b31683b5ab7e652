// eval_gpu of the quantization family. Kernels: device/quant/quantized.cuh, one module per
// (dtype, mode, bits, group size, kernel kind).
//
// QuantizedMatmul: up to 16 rows of x take the matvec kernels, split over K when the weight
// has few rows (float partials summed and rounded by quant_splitk_sum): quant_qmv_tc on
// tensor cores (affine 2/4-bit, half types; device/quant/qmv_tc.cuh), quant_qmv_tc_fp4
// (mxfp4/nvfp4, bfloat16; qmv_tc_fp4.cuh), quant_qmv_vec (2/4/8 bits, aligned rows), the
// general quant_qmv otherwise, or quant_qvm when not transposed. More
// rows dequantize each weight matrix into scratch (quant_dequantize_vec: ~93% of the copy
// bandwidth on an H200) and multiply with cuBLASLt; a tensor-core kernel dequantizing into
// shared memory would skip that round trip.
#include <algorithm>
#include <string>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/blas.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/fast_common.h"
#include "kiln/primitives_quantized.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// Mirrors device/quant/quantized.cuh's QmvArgs.
struct QmvArgs {
  int64_t M, N, K;
  int64_t wpr;
  int64_t gpr;
  int64_t x_batch;
  int64_t w_batch;
  int64_t s_batch;
  int64_t out_batch;
  int32_t splits;
  float global;
  int32_t vec16;
  int64_t g_batch;
};

constexpr Dtype kQuantDtypes[] = {float16, bfloat16, float32};
constexpr int kMmax[] = {1, 4, 16};
constexpr int kVecMmax[] = {1, 2, 4, 8, 16};

// Mirrors device/quant/quantized.cuh's QmvVec: elements per lane step and rows per warp.
struct QmvVecShape {
  int elems, rows;
};
QmvVecShape qmv_vec_shape(int bits, int mmax) {
  const int target = mmax <= 2 ? 32 : (mmax <= 4 ? 16 : 8);
  const int words = std::clamp(target * bits / 32, 1, 4);
  return {words * 32 / bits, mmax <= 8 ? 4 : 2};
}
constexpr int kVecWarps = 4;

bool has_vec_qmv(int bits) {
  return bits == 2 || bits == 4 || bits == 8;
}

// The tensor-core matvec (quant_qmv_tc): affine 2- and 4-bit weights, half or bfloat16, a
// lane's 16-byte load within one group (GS >= 128 / bits).
bool has_tc_qmv(Dtype d, const QuantParams& p) {
  return p.mode == QuantMode::affine && (p.bits == 2 || p.bits == 4) &&
         (d == bfloat16 || d == float16) && p.group_size >= 128 / p.bits;
}
int qmv_tc_tile(int bits) {
  return 16 * 32 / bits;  // K per tile: 4 lanes x 16 bytes
}
// Column tiles of 8 (x row, group of a tile) pairs that M rows of x need; 0 when over 2.
int qmv_tc_nt(int64_t M, const QuantParams& p) {
  const int64_t cols = M * (qmv_tc_tile(p.bits) / p.group_size);
  return cols <= 8 ? 1 : (cols <= 16 ? 2 : 0);
}
constexpr int kTcWarps = 4, kTcDepth = 2;

// The fp4 tensor-core matvec (quant_qmv_tc_fp4): mxfp4 and nvfp4 weights, bfloat16 x, up to
// 16 rows (one B column each).
bool has_tc_fp4(Dtype d, const QuantParams& p) {
  return (p.mode == QuantMode::mxfp4 || p.mode == QuantMode::nvfp4) && d == bfloat16;
}

// The vectorized dequantize: affine, 2, 4 or 8 bits.
bool has_vec_dequantize(const QuantParams& p) {
  return p.mode == QuantMode::affine && (p.bits == 2 || p.bits == 4 || p.bits == 8);
}

std::string t(Dtype d) {
  return gpu::device_type(d);
}

int mode_int(QuantMode m) {
  return static_cast<int>(m);
}

std::string params_str(Dtype d, const QuantParams& p) {
  return t(d) + ", " + std::to_string(mode_int(p.mode)) + ", " + std::to_string(p.bits) + ", " +
         std::to_string(p.group_size);
}

bool pow2(int b) {
  return (b & (b - 1)) == 0;
}

int qmv_elems(int bits) {
  return pow2(bits) ? (bits >= 4 ? 128 / bits : 32 / bits) : 8;
}

enum class Kind { quantize, dequantize, qmv, qvm };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::quantize:
      return "quantize";
    case Kind::dequantize:
      return "dequantize";
    case Kind::qmv:
      return "qmv";
    default:
      return "qvm";
  }
}

std::string module_name(Dtype d, const QuantParams& p, Kind k) {
  return std::string("quant_") + kind_name(k) + "_" + std::string(type_to_name(d)) + "_" +
         quant_mode_name(p.mode) + "_b" + std::to_string(p.bits) + "_g" +
         std::to_string(p.group_size);
}

std::string qmv_kernel(Dtype d, const QuantParams& p, int mmax) {
  return "kiln::quant_qmv<" + t(d) + ", float, " + std::to_string(mode_int(p.mode)) + ", " +
         std::to_string(p.bits) + ", " + std::to_string(p.group_size) + ", " +
         std::to_string(mmax) + ">";
}

// P = float for split-K partials, or the output type when one split writes the output.
std::string qmv_vec_kernel(Dtype d, const QuantParams& p, int mmax, bool direct = false) {
  return "kiln::quant_qmv_vec<" + t(d) + ", " + (direct ? t(d) : std::string("float")) + ", " +
         std::to_string(mode_int(p.mode)) + ", " + std::to_string(p.bits) + ", " +
         std::to_string(p.group_size) + ", " + std::to_string(mmax) + ">";
}

std::string qmv_tc_kernel(Dtype d, const QuantParams& p, int nt, bool direct) {
  return "kiln::quant_qmv_tc<" + t(d) + ", " + (direct ? t(d) : std::string("float")) + ", " +
         std::to_string(p.bits) + ", " + std::to_string(p.group_size) + ", " + std::to_string(nt) +
         ", " + std::to_string(kTcWarps) + ", " + std::to_string(kTcDepth) + ">";
}

std::string qmv_tc_fp4_kernel(const QuantParams& p, int nt, bool direct) {
  return "kiln::quant_qmv_tc_fp4<" + (direct ? t(bfloat16) : std::string("float")) + ", " +
         std::to_string(mode_int(p.mode)) + ", " + std::to_string(nt) + ", " +
         std::to_string(kTcWarps) + ", " + std::to_string(kTcDepth) + ">";
}

std::string qvm_kernel(Dtype d, const QuantParams& p, int mmax) {
  return "kiln::quant_qvm<" + t(d) + ", float, " + std::to_string(mode_int(p.mode)) + ", " +
         std::to_string(p.bits) + ", " + std::to_string(p.group_size) + ", " +
         std::to_string(mmax) + ">";
}

std::string sum_kernel(Dtype d) {
  return "kiln::quant_splitk_sum<" + t(d) + ">";
}

std::string quantize_kernel(Dtype d, const QuantParams& p) {
  return "kiln::quant_quantize<" + params_str(d, p) + ">";
}

// Output type T, scale storage S (affine: T; fp: T unused).
std::string dequantize_kernel(Dtype d, const QuantParams& p) {
  if (has_vec_dequantize(p))
    return "kiln::quant_dequantize_vec<" + t(d) + ", " + std::to_string(p.bits) + ", " +
           std::to_string(p.group_size) + ">";
  return "kiln::quant_dequantize<" + t(d) + ", " + t(d) + ", " + std::to_string(mode_int(p.mode)) +
         ", " + std::to_string(p.bits) + ", " + std::to_string(p.group_size) + ">";
}

gpu::ModuleSource quant_module(Dtype d, const QuantParams& p, Kind k) {
  std::vector<std::string> kernels;
  switch (k) {
    case Kind::quantize:
      kernels.push_back(quantize_kernel(d, p));
      break;
    case Kind::dequantize:
      kernels.push_back(dequantize_kernel(d, p));
      break;
    case Kind::qmv:
      for (int m : kMmax) kernels.push_back(qmv_kernel(d, p, m));
      if (has_vec_qmv(p.bits))
        for (int m : kVecMmax) {
          kernels.push_back(qmv_vec_kernel(d, p, m));
          kernels.push_back(qmv_vec_kernel(d, p, m, true));
        }
      if (has_tc_qmv(d, p))
        for (int nt : {1, 2})
          for (bool direct : {false, true}) kernels.push_back(qmv_tc_kernel(d, p, nt, direct));
      if (has_tc_fp4(d, p))
        for (int nt : {1, 2})
          for (bool direct : {false, true}) kernels.push_back(qmv_tc_fp4_kernel(p, nt, direct));
      kernels.push_back(sum_kernel(d));
      break;
    case Kind::qvm:
      for (int m : kMmax) kernels.push_back(qvm_kernel(d, p, m));
      kernels.push_back(sum_kernel(d));
      break;
  }
  return {module_name(d, p, k),
          k == Kind::qmv ? "#include \"kiln/backend/cuda/device/quant/qmv_tc_fp4.cuh\"\n"
                         : "#include \"kiln/backend/cuda/device/quant/quantized.cuh\"\n",
          std::move(kernels)};
}

const gpu::Module& module(gpu::DeviceStream& s, Dtype d, const QuantParams& p, Kind k) {
  return gpu::get_module(s.context().index(), module_name(d, p, k),
                         [d, p, k] { return quant_module(d, p, k); });
}

std::vector<QuantParams> all_params() {
  std::vector<QuantParams> v;
  for (int b : {1, 2, 3, 4, 5, 6, 8})
    for (int g : {32, 64, 128}) v.push_back({QuantMode::affine, g, b});
  v.push_back({QuantMode::mxfp4, 32, 4});
  v.push_back({QuantMode::mxfp8, 32, 8});
  v.push_back({QuantMode::nvfp4, 16, 4});
  return v;
}

void check_dtype(Dtype d, const char* op) {
  if (std::find(std::begin(kQuantDtypes), std::end(kQuantDtypes), d) == std::end(kQuantDtypes)) {
    throw std::invalid_argument(
        msg("[", op, "] The GPU supports float16, bfloat16 and float32; got ", d, "."));
  }
}

// Element offset between consecutive matrices of `a` (..., R, C) when its batch axes
// collapse to one stride (0 for broadcast); -1 otherwise.
int64_t batch_stride(const array& a) {
  const int nd = static_cast<int>(a.ndim());
  int64_t stride = -1;
  int64_t expect = -1;
  for (int i = nd - 3; i >= 0; --i) {
    if (a.shape(i) == 1) continue;
    const int64_t st = a.strides()[i];
    if (stride < 0) {
      stride = st;
      expect = st * a.shape(i);
    } else if (st != expect || stride == 0) {
      if (!(st == 0 && stride == 0)) return -1;
    } else {
      expect = st * a.shape(i);
    }
  }
  return stride < 0 ? 0 : stride;
}

bool dense_last2(const array& a) {
  const int nd = static_cast<int>(a.ndim());
  return (a.strides()[nd - 1] == 1 || a.shape(-1) == 1) &&
         (a.strides()[nd - 2] == a.shape(-1) || a.shape(-2) == 1);
}

// The device address of `a` with dense matrices and one batch stride; copies when needed.
CUdeviceptr matrices_address(const array& a, int64_t& bstride, gpu::DeviceStream& s) {
  if (a.ndim() >= 2 && dense_last2(a)) {
    const int64_t b = batch_stride(a);
    if (b >= 0) {
      bstride = b;
      return gpu::device_address(a);
    }
  }
  bstride = a.ndim() >= 2 ? static_cast<int64_t>(a.shape(-1)) * a.shape(-2) : 0;
  return gpu::fast::dense_address(a, s);
}

// Dequantizes `rows` packed rows (wpr words, K elements) into `out`: whole words per thread
// (quant_dequantize_vec) for affine 2/4/8 bits, a group per thread otherwise.
void launch_dequantize(gpu::DeviceStream& s, Dtype d, const QuantParams& p, CUdeviceptr w,
                       CUdeviceptr scales, CUdeviceptr biases, CUdeviceptr fscales,
                       CUdeviceptr global, CUdeviceptr out, int64_t rows, int64_t K, int64_t gpr,
                       int64_t wpr) {
  const gpu::Module& mod = module(s, d, p, Kind::dequantize);
  const std::string name = dequantize_kernel(d, p);
  if (has_vec_dequantize(p)) {
    const int64_t words = rows * wpr;
    // 8 warps of 32 lanes x 4 words a block (the kernel's kUnroll).
    gpu::launch_kernel(mod.function(name), gpu::grid_1d(words, 1024), {256}, 0, s, w, scales,
                       biases, out, words, wpr, gpr);
    return;
  }
  const int64_t groups = rows * K / p.group_size;
  gpu::launch_kernel(mod.function(name), gpu::grid_1d(groups, 128), {128}, 0, s, w, scales, biases,
                     fscales, global, out, groups, gpr, wpr);
}

}  // namespace

void Quantize::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  for (auto& o : outputs) o.set_data(gpu::new_device_storage(o.nbytes(), s));
  const array& w = inputs[0];
  if (w.size() == 0) return;
  check_dtype(w.dtype(), "quantize");
  const CUdeviceptr wp = gpu::fast::dense_address(w, s);
  const int64_t groups = static_cast<int64_t>(w.size()) / p_.group_size;
  const CUdeviceptr outp = gpu::device_address(outputs[0]);
  const bool affine = p_.mode == QuantMode::affine;
  const CUdeviceptr sp = affine ? gpu::device_address(outputs[1]) : 0;
  const CUdeviceptr bp = affine ? gpu::device_address(outputs[2]) : 0;
  const CUdeviceptr fp = affine ? 0 : gpu::device_address(outputs[1]);
  const CUdeviceptr gp = inputs.size() > 1 ? gpu::device_address(inputs[1]) : 0;
  const gpu::Module& mod = module(s, w.dtype(), p_, Kind::quantize);
  gpu::launch_kernel(mod.function(quantize_kernel(w.dtype(), p_)), gpu::grid_1d(groups, 128), {128},
                     0, s, wp, outp, sp, bp, fp, gp, groups);
}

void Dequantize::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  check_dtype(out.dtype(), "dequantize");
  const bool affine = p_.mode == QuantMode::affine;
  const CUdeviceptr wp = gpu::fast::dense_address(inputs[0], s);
  const CUdeviceptr sp = affine ? gpu::fast::dense_address(inputs[1], s) : 0;
  const CUdeviceptr bp = affine ? gpu::fast::dense_address(inputs[2], s) : 0;
  const CUdeviceptr fp = affine ? 0 : gpu::fast::dense_address(inputs[1], s);
  const CUdeviceptr gp = global_ ? gpu::device_address(inputs[affine ? 3 : 2]) : 0;
  const int64_t K = out.shape(-1), gpr = K / p_.group_size, wpr = inputs[0].shape(-1);
  launch_dequantize(s, out.dtype(), p_, wp, sp, bp, fp, gp, gpu::device_address(out),
                    static_cast<int64_t>(out.size()) / K, K, gpr, wpr);
}

void QuantizedMatmul::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const Dtype d = out.dtype();
  check_dtype(d, "quantized_matmul");
  const bool affine = p_.mode == QuantMode::affine;
  const array& x = inputs[0];
  const array& w = inputs[1];
  const int64_t M = x.shape(-2), K = x.shape(-1), N = out.shape(-1);
  const int64_t batch = static_cast<int64_t>(out.size()) / (M * N);
  if (K == 0) throw std::invalid_argument("[quantized_matmul] K = 0 is not supported on the GPU.");
  int64_t xb, wb, sb, bb = 0;
  const CUdeviceptr xp = matrices_address(x, xb, s);
  const CUdeviceptr wp = matrices_address(w, wb, s);
  CUdeviceptr scp = matrices_address(inputs[2], sb, s);
  CUdeviceptr bip = affine ? matrices_address(inputs[3], bb, s) : 0;
  if (affine && bb != sb) {
    // The kernels read scales and biases with one batch stride.
    scp = gpu::fast::dense_address(inputs[2], s);
    bip = gpu::fast::dense_address(inputs[3], s);
    sb = bb = static_cast<int64_t>(inputs[2].shape(-1)) * inputs[2].shape(-2);
  }
  float global = 1.0f;
  // nvfp4's global scale: a scalar, or one per matrix ((..., 1, 1), batch stride gb).
  CUdeviceptr gp = 0;
  int64_t gb = 0;
  if (global_) {
    const array& g = inputs[affine ? 4 : 3];
    gp = g.ndim() >= 2 ? matrices_address(g, gb, s) : gpu::device_address(g);
  }
  const int64_t wpr = w.shape(-1), gpr = inputs[2].shape(-1);
  // Split K until there are `target` blocks (~132 SMs x 8 for the float kernels), each split
  // keeping at least `min_steps` steps of a lane.
  auto choose_splits = [&](int64_t row_blocks, int64_t steps, int64_t min_steps,
                           int64_t target = 1024) {
    int splits = 1;
    while (row_blocks * batch * splits < target && splits < 32 && steps / (splits * 2) >= min_steps)
      splits *= 2;
    return splits;
  };
  // Launches a matvec kernel, into float partials summed by quant_splitk_sum when split.
  auto launch_qmv = [&](const gpu::Module& mod, const std::string& split_name,
                        const std::string& direct_name, int64_t row_blocks, int splits, QmvArgs a,
                        uint32_t threads, auto... args) {
    const gpu::Dim3 grid{static_cast<uint32_t>(row_blocks), static_cast<uint32_t>(splits),
                         static_cast<uint32_t>(batch)};
    if (splits > 1) {
      const CUdeviceptr partials = gpu::scratch(sizeof(float) * batch * splits * M * N, s);
      a.out_batch = splits * M * N;
      gpu::launch_kernel(mod.function(split_name), grid, {threads}, 0, s, args..., partials, a);
      gpu::launch_kernel(mod.function(sum_kernel(d)), gpu::grid_1d(batch * M * N, 256), {256}, 0, s,
                         partials, gpu::device_address(out), M * N, splits, batch * M * N);
    } else {
      a.out_batch = M * N;
      gpu::launch_kernel(mod.function(direct_name), grid, {threads}, 0, s, args...,
                         gpu::device_address(out), a);
    }
  };
  const bool x_aligned = xp % 16 == 0 && (K * d.size) % 16 == 0 && (xb * d.size) % 16 == 0;
  const bool w_aligned = wp % 16 == 0 && wb % 4 == 0 && wpr % 4 == 0;
  // Tensor cores: 16 weight rows per block, (x row, group) pairs in 8-column tiles. Scales and
  // biases are read two groups at a time (4-byte loads).
  const int nt = transpose_ && has_tc_qmv(d, p_) ? qmv_tc_nt(M, p_) : 0;
  const bool scales_aligned = scp % 4 == 0 && bip % 4 == 0 && sb % 2 == 0 && gpr % 2 == 0;
  if (nt > 0 && x_aligned && w_aligned &&
      (scales_aligned || p_.group_size == qmv_tc_tile(p_.bits)) &&
      s.context().compute_capability() >= 80 && K % qmv_tc_tile(p_.bits) == 0) {
    const int64_t row_blocks = (N + 15) / 16;
    // One split fills an H100/H200 from ~2000 rows (measured: splitting 4096 rows was slower);
    // fewer rows split K to about 256 blocks, each split keeping 8 tiles per warp.
    const int splits = choose_splits(row_blocks, K / qmv_tc_tile(p_.bits) / kTcWarps, 8, 256);
    QmvArgs a{M, N, K, wpr, gpr, xb, wb, sb, 0, splits, 1.0f, 1, gb};
    launch_qmv(module(s, d, p_, Kind::qmv), qmv_tc_kernel(d, p_, nt, false),
               qmv_tc_kernel(d, p_, nt, true), row_blocks, splits, a, 32u * kTcWarps, xp, wp, scp,
               bip);
    return;
  }
  // fp4 on tensor cores: one B column per x row, scale bytes read in pairs for nvfp4.
  const bool fp4_scales_aligned =
      p_.mode != QuantMode::nvfp4 || (scp % 2 == 0 && sb % 2 == 0 && gpr % 2 == 0);
  if (transpose_ && M <= 16 && has_tc_fp4(d, p_) && x_aligned && w_aligned && fp4_scales_aligned &&
      s.context().compute_capability() >= 80 && K % 128 == 0) {
    const int64_t row_blocks = (N + 15) / 16;
    const int nt4 = M <= 8 ? 1 : 2;
    const int splits = choose_splits(row_blocks, K / 128 / kTcWarps, 8, 256);
    QmvArgs a{M, N, K, wpr, gpr, xb, wb, sb, 0, splits, 1.0f, 1, gb};
    launch_qmv(module(s, d, p_, Kind::qmv), qmv_tc_fp4_kernel(p_, nt4, false),
               qmv_tc_fp4_kernel(p_, nt4, true), row_blocks, splits, a, 32u * kTcWarps, xp, wp, scp,
               gp);
    return;
  }
  // The vectorized matvec: 16-byte aligned weight rows, x rows aligned to its x loads.
  if (transpose_ && M <= 16 && has_vec_qmv(p_.bits)) {
    const int mmax =
        *std::find_if(std::begin(kVecMmax), std::end(kVecMmax), [&](int m) { return m >= M; });
    const QmvVecShape v = qmv_vec_shape(p_.bits, mmax);
    const int64_t xalign = std::min<int64_t>(16, v.elems * d.size);
    const bool aligned = w_aligned && K % v.elems == 0 && xp % 16 == 0 &&
                         (K * d.size) % xalign == 0 && (xb * d.size) % xalign == 0;
    if (aligned) {
      const int64_t rows_per_block = int64_t{kVecWarps} * v.rows;
      const int64_t row_blocks = (N + rows_per_block - 1) / rows_per_block;
      const int splits = choose_splits(row_blocks, K / v.elems / 32, 2);
      QmvArgs a{M, N, K, wpr, gpr, xb, wb, sb, 0, splits, 1.0f, 1, gb};
      launch_qmv(module(s, d, p_, Kind::qmv), qmv_vec_kernel(d, p_, mmax),
                 qmv_vec_kernel(d, p_, mmax, true), row_blocks, splits, a, 32u * kVecWarps, xp, wp,
                 affine ? scp : 0, bip, affine ? 0 : scp, gp);
      return;
    }
  }
  const bool small = M <= 16 && (!transpose_ || K % qmv_elems(p_.bits) == 0) && !global_;
  if (small) {
    const int mmax =
        *std::find_if(std::begin(kMmax), std::end(kMmax), [&](int m) { return m >= M; });
    const int64_t row_blocks = transpose_ ? (N + 7) / 8 : (N + 127) / 128;
    const int64_t steps = transpose_ ? K / qmv_elems(p_.bits) / 32 : K;
    const int splits = choose_splits(row_blocks, steps, 4);
    const CUdeviceptr partials = gpu::scratch(sizeof(float) * batch * splits * M * N, s);
    const bool vec16 = wp % 16 == 0 && wb % 4 == 0;
    QmvArgs a{M, N, K, wpr, gpr, xb, wb, sb, splits * M * N, splits, global, vec16 ? 1 : 0, 0};
    if (transpose_) {
      const gpu::Module& mod = module(s, d, p_, Kind::qmv);
      gpu::launch_kernel(mod.function(qmv_kernel(d, p_, mmax)),
                         {static_cast<uint32_t>((N + 7) / 8), static_cast<uint32_t>(splits),
                          static_cast<uint32_t>(batch)},
                         {256}, 0, s, xp, wp, affine ? scp : 0, bip, affine ? 0 : scp, partials, a);
      gpu::launch_kernel(mod.function(sum_kernel(d)), gpu::grid_1d(batch * M * N, 256), {256}, 0, s,
                         partials, gpu::device_address(out), M * N, splits, batch * M * N);
    } else {
      const gpu::Module& mod = module(s, d, p_, Kind::qvm);
      gpu::launch_kernel(mod.function(qvm_kernel(d, p_, mmax)),
                         {static_cast<uint32_t>((N + 127) / 128), static_cast<uint32_t>(splits),
                          static_cast<uint32_t>(batch)},
                         {128}, 0, s, xp, wp, affine ? scp : 0, bip, affine ? 0 : scp, partials, a);
      gpu::launch_kernel(mod.function(sum_kernel(d)), gpu::grid_1d(batch * M * N, 256), {256}, 0, s,
                         partials, gpu::device_address(out), M * N, splits, batch * M * N);
    }
    return;
  }
  // Larger batches: dequantize each weight matrix into scratch, then cuBLASLt.
  const int64_t wrows = w.shape(-2), wk = wpr * 32 / p_.bits;
  const CUdeviceptr deq = gpu::scratch(d.size * wrows * wk, s);
  for (int64_t b = 0; b < batch; ++b) {
    const CUdeviceptr wbp = wp + 4 * b * wb;
    const CUdeviceptr sbp = scp + (affine ? d.size : 1) * b * sb;
    const CUdeviceptr bbp = affine ? bip + d.size * b * bb : 0;
    const CUdeviceptr gbp = gp ? gp + sizeof(float) * b * gb : 0;
    launch_dequantize(s, d, p_, wbp, affine ? sbp : 0, bbp, affine ? 0 : sbp, gbp, deq, wrows, wk,
                      wk / p_.group_size, wpr);
    gpu::GemmArgs g;
    g.dtype = d;
    g.transpose_b = transpose_;
    g.m = M;
    g.n = N;
    g.k = K;
    g.a = xp + d.size * b * xb;
    g.lda = K;
    g.b = deq;
    g.ldb = transpose_ ? K : N;
    g.c = gpu::device_address(out) + d.size * b * M * N;
    g.ldc = N;
    gpu::gemm(g, s);
  }
}

KILN_GPU_MODULE_CATALOG(quantized, [](const gpu::ModuleSink& sink) {
  for (Dtype d : kQuantDtypes)
    for (const QuantParams& p : all_params())
      for (Kind k : {Kind::quantize, Kind::dequantize, Kind::qmv, Kind::qvm})
        sink(module_name(d, p, k), quant_module(d, p, k));
});

}  // namespace kiln
