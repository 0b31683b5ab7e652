// Convolution::eval_gpu: the general path, im2col / col2im kernels (device/linalg.cuh) and
// cuBLASLt GEMMs (backend/cuda/blas.h), for every mode, layout and parameter the primitive
// takes (asymmetric and negative padding, input dilation, groups, flip), as on the CPU.
// Half types multiply on tensor cores with float32 accumulation.
#include <algorithm>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/blas.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_conv.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// Mirrors device/linalg.cuh's ConvGeom (passed by value to the kernels).
struct ConvGeom {
  int d, C, Cg;
  int in[3], out[3], k[3], stride[3], lo[3], kdil[3], idil[3];
  int flip;
  long long in_sp, out_sp, k_sp;
};

std::string bits_name(Dtype d) {
  return d.size == 2 ? "unsigned short" : d.size == 4 ? "unsigned int" : "unsigned long long";
}
std::string acc_name(Dtype d) {
  return d == float64 ? "double" : "float";
}

std::string im2col_name(Dtype d) {
  return "kiln::im2col<" + bits_name(d) + ">";
}
std::string col2im_name(Dtype d) {
  return "kiln::col2im<" + gpu::device_type(d) + ", " + acc_name(d) + ">";
}

gpu::ModuleSource conv_module() {
  std::vector<std::string> k;
  for (Dtype d : {float16, bfloat16, float32, float64}) {
    k.push_back(im2col_name(d));
    k.push_back(col2im_name(d));
  }
  return {"conv", "#include \"kiln/backend/cuda/device/linalg.cuh\"\n", k};
}

CUfunction kernel(gpu::DeviceStream& s, const std::string& name) {
  return gpu::get_kernel(s.context().index(), "conv", conv_module, name);
}

// A row-contiguous device copy of x (or x itself when it already is one).
CUdeviceptr contiguous(const array& x, gpu::DeviceStream& s) {
  if (x.flags().row_contiguous) return gpu::device_address(x);
  const CUdeviceptr p = gpu::scratch(std::max<size_t>(x.nbytes(), 1), s);
  gpu::copy_to_row_contiguous(x, p, s);
  return p;
}

}  // namespace

void Convolution::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  const Dtype dt = out.dtype();
  if (dt != float32 && dt != float64 && dt != float16 && dt != bfloat16) {
    throw std::invalid_argument(msg("[Convolution::eval_gpu] Unsupported dtype ", dt, "."));
  }
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const array &a = inputs[0], &b = inputs[1];
  const Shape& xs = mode_ == Mode::input_grad ? out.shape() : a.shape();
  const Shape& ws = mode_ == Mode::weight_grad ? out.shape() : b.shape();
  const Shape& ys = mode_ == Mode::forward ? out.shape() : mode_ == Mode::input_grad ? a.shape() : b.shape();
  ConvGeom g{};
  g.d = static_cast<int>(xs.size()) - 2;
  g.C = xs.back();
  g.Cg = ws.back();
  g.flip = params_.flip ? 1 : 0;
  g.in_sp = g.out_sp = g.k_sp = 1;
  for (int i = 0; i < g.d; ++i) {
    g.in[i] = xs[i + 1];
    g.out[i] = ys[i + 1];
    g.k[i] = ws[i + 1];
    g.stride[i] = params_.stride[i];
    g.lo[i] = params_.pad_lo[i];
    g.kdil[i] = params_.kernel_dilation[i];
    g.idil[i] = params_.input_dilation[i];
    g.in_sp *= g.in[i];
    g.out_sp *= g.out[i];
    g.k_sp *= g.k[i];
  }
  const int64_t N = xs[0], O = ws[0], G = params_.groups, Og = O / G;
  const int64_t kc = g.k_sp * g.Cg, es = dt.size;
  const CUdeviceptr dst = gpu::device_address(out);
  if (N == 0 || g.out_sp == 0 || kc == 0) {
    KILN_CU(cuMemsetD8Async, dst, 0, out.nbytes(), s.handle());
    return;
  }
  const CUdeviceptr pa = contiguous(a, s), pb = contiguous(b, s);
  // Rows of the im2col matrix per block: whole samples, about 2^26 bytes of scratch.
  const int64_t per_sample = g.out_sp * kc * es;
  const int64_t samples = std::max<int64_t>(1, std::min<int64_t>(N, (int64_t{1} << 26) / std::max<int64_t>(per_sample, 1)));
  const CUdeviceptr cols = gpu::scratch(samples * per_sample, s);
  gpu::GemmArgs gm;
  gm.dtype = dt;
  bool first = true;
  for (int64_t n0 = 0; n0 < N; n0 += samples) {
    const int64_t ns = std::min(samples, N - n0), rows = ns * g.out_sp;
    for (int64_t grp = 0; grp < G; ++grp) {
      const int grp32 = static_cast<int>(grp);
      if (mode_ != Mode::input_grad) {
        const CUdeviceptr x = pa;  // x is the first input of forward and weight_grad
        gpu::launch_kernel(kernel(s, im2col_name(dt)), gpu::grid_1d(rows * kc, gpu::kElementwiseBlock),
                           {gpu::kElementwiseBlock}, 0, s, x, cols, g, grp32,
                           static_cast<long long>(n0 * g.out_sp), static_cast<long long>(rows));
      }
      if (mode_ == Mode::forward) {
        // y[rows, grp] = cols @ W_g^T
        gm.transpose_a = false;
        gm.transpose_b = true;
        gm.m = rows, gm.n = Og, gm.k = kc;
        gm.a = cols, gm.lda = kc;
        gm.b = pb + grp * Og * kc * es, gm.ldb = kc;
        gm.c = dst + (n0 * g.out_sp * O + grp * Og) * es, gm.ldc = O;
        gm.beta = 0.0;
        gpu::gemm(gm, s);
      } else if (mode_ == Mode::input_grad) {
        // cols = dy[rows, grp] @ W_g, then gathered back onto the inputs they came from.
        gm.transpose_a = false;
        gm.transpose_b = false;
        gm.m = rows, gm.n = kc, gm.k = Og;
        gm.a = pa + (n0 * g.out_sp * O + grp * Og) * es, gm.lda = O;
        gm.b = pb + grp * Og * kc * es, gm.ldb = kc;
        gm.c = cols, gm.ldc = kc;
        gm.beta = 0.0;
        gpu::gemm(gm, s);
        gpu::launch_kernel(kernel(s, col2im_name(dt)),
                           gpu::grid_1d(ns * g.in_sp * g.Cg, gpu::kElementwiseBlock), {gpu::kElementwiseBlock}, 0,
                           s, cols, dst, g, grp32, static_cast<long long>(n0), static_cast<long long>(ns));
      } else {
        // dW_g (+)= dy[rows, grp]^T @ cols
        gm.transpose_a = true;
        gm.transpose_b = false;
        gm.m = Og, gm.n = kc, gm.k = rows;
        gm.a = pb + (n0 * g.out_sp * O + grp * Og) * es, gm.lda = O;
        gm.b = cols, gm.ldb = kc;
        gm.c = dst + grp * Og * kc * es, gm.ldc = kc;
        gm.beta = first ? 0.0 : 1.0;
        gpu::gemm(gm, s);
      }
    }
    first = false;
  }
}

KILN_GPU_MODULE_CATALOG(conv, [](const gpu::ModuleSink& sink) { sink("conv", conv_module()); });

}  // namespace kiln
