// Convolution::eval_gpu.
//
// Fast path: cuDNN (libcudnn.so.9, loaded at run time: KILN_CUDNN_PATH, the system, or pip's
// nvidia/cudnn/lib; compiled in when the build finds cudnn.h) for the forward convolution
// and both gradients with channels-last tensors (NHWC / KRSC filters), symmetric non-negative
// padding and no input dilation; the algorithm comes from cuDNN's heuristics once per shape
// and its workspace from kiln's allocator.
// General path (everything else: asymmetric or negative padding, input dilation as in
// conv_transpose, float64, or no cuDNN): im2col / col2im kernels (device/linalg.cuh) and
// cuBLASLt GEMMs (backend/cuda/blas.h), as on the CPU. Half types accumulate in float32.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#if __has_include(<cudnn.h>)
#include <cudnn.h>
#include <dlfcn.h>
#define KILN_HAVE_CUDNN_HEADERS 1
#endif

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/blas.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/dynlib.h"
#include "kiln/backend/cuda/matmul.h"
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

#ifdef KILN_HAVE_CUDNN_HEADERS

#define KILN_CUDNN_FUNCTIONS(X)                                                                    \
  X(cudnnCreate) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor)          \
  X(cudnnSetTensorNdDescriptor) X(cudnnCreateFilterDescriptor) X(cudnnSetFilterNdDescriptor)      \
  X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolutionNdDescriptor)                          \
  X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)                                 \
  X(cudnnGetConvolutionForwardAlgorithm_v7) X(cudnnGetConvolutionForwardWorkspaceSize)            \
  X(cudnnConvolutionForward) X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                       \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize) X(cudnnConvolutionBackwardData)                 \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) X(cudnnGetConvolutionBackwardFilterWorkspaceSize) \
  X(cudnnConvolutionBackwardFilter)

struct Cudnn {
#define KILN_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUDNN_FUNCTIONS(KILN_MEMBER)
#undef KILN_MEMBER
  std::string error;
};

// cuDNN, or null (with the reason kept) where it cannot be loaded: convolutions then take
// the general path, so a missing cuDNN costs speed, not function.
const Cudnn* cudnn() {
  static const Cudnn* l = [] {
    auto* c = new Cudnn;
    if (const char* off = std::getenv("KILN_CUDNN"); off && std::string(off) == "0") {
      c->error = "disabled by KILN_CUDNN=0";
      return c;
    }
    std::string why;
    void* h = gpu::open_library({"libcudnn.so.9", "libcudnn.so"}, "KILN_CUDNN_PATH",
                                gpu::nvidia_wheel_lib_dirs("cudnn"), why);
    if (!h) {
      c->error = "cuDNN (libcudnn.so.9) is not available: " + why;
      return c;
    }
#define KILN_RESOLVE(name)                                                  \
  c->name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));           \
  if (!c->name && c->error.empty()) c->error = "libcudnn.so lacks " #name;
    KILN_CUDNN_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE
    return c;
  }();
  return l->error.empty() ? l : nullptr;
}

void check_cudnn(const char* call, cudnnStatus_t st) {
  if (st != CUDNN_STATUS_SUCCESS) {
    throw std::runtime_error(msg("[", call, "] failed: ", cudnn()->cudnnGetErrorString(st), " (",
                                 static_cast<int>(st), ")."));
  }
}
#define KILN_CUDNN(fn, ...) check_cudnn(#fn, cudnn()->fn(__VA_ARGS__))

// Descriptors and algorithm of one convolution problem, built once.
struct CudnnPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algo = 0;
  size_t workspace = 0;
};

cudnnDataType_t cudnn_type(Dtype d) {
  return d == float16 ? CUDNN_DATA_HALF : d == bfloat16 ? CUDNN_DATA_BFLOAT16
                                         : d == float64 ? CUDNN_DATA_DOUBLE
                                                        : CUDNN_DATA_FLOAT;
}

// NHWC tensor descriptor dims {N, C, spatial...} with channels-last strides.
void set_nhwc(cudnnTensorDescriptor_t t, cudnnDataType_t type, int n, int c, const std::vector<int>& sp) {
  std::vector<int> dims{n, c}, strides(2 + sp.size());
  dims.insert(dims.end(), sp.begin(), sp.end());
  int64_t st = c;
  for (int i = static_cast<int>(sp.size()) - 1; i >= 0; --i) {
    strides[2 + i] = static_cast<int>(st);
    st *= sp[i];
  }
  strides[1] = 1;
  strides[0] = static_cast<int>(st);
  KILN_CUDNN(cudnnSetTensorNdDescriptor, t, type, static_cast<int>(dims.size()), dims.data(), strides.data());
}

// Whether cuDNN computes this convolution: symmetric non-negative padding, no input dilation.
bool cudnn_applies(const ConvParams& p, Dtype d) {
  if (d == float64) return false;  // cuDNN's double kernels are no faster than the GEMM path
  for (size_t i = 0; i < p.stride.size(); ++i) {
    if (p.pad_lo[i] != p.pad_hi[i] || p.pad_lo[i] < 0 || p.input_dilation[i] != 1) return false;
  }
  return cudnn() != nullptr;
}

// Runs mode `mode` through cuDNN: x (N, in..., C), w (O, k..., Cg), y (N, out..., O).
void cudnn_conv(Convolution::Mode mode, const ConvParams& p, Dtype dt, const Shape& xs, const Shape& ws,
                const Shape& ys, CUdeviceptr a, CUdeviceptr b, CUdeviceptr dst, gpu::DeviceStream& s) {
  using Mode = Convolution::Mode;
  const int d = static_cast<int>(xs.size()) - 2;
  // cuDNN needs at least 2 spatial dims: a 1-d convolution is a 2-d one of height 1.
  auto spatial = [&](const Shape& sh) {
    std::vector<int> v(sh.begin() + 1, sh.end() - 1);
    if (d == 1) v.insert(v.begin(), 1);
    return v;
  };
  auto param = [&](const std::vector<int>& v, int fill) {
    std::vector<int> out(v.begin(), v.end());
    if (d == 1) out.insert(out.begin(), fill);
    return out;
  };
  const bool tf32 = dt == float32 && gpu::matmul_allow_tf32();
  using Key = std::tuple<int, int, int, Shape, Shape, std::vector<int>, std::vector<int>, std::vector<int>, int, bool, bool>;
  Key key{s.context().index(), static_cast<int>(mode), static_cast<int>(dt.val), xs, ws, p.stride, p.pad_lo,
          p.kernel_dilation, p.groups, p.flip, tf32};
  static std::mutex mu;
  static auto* plans = new std::map<Key, CudnnPlan>();
  static auto* handles = new std::array<cudnnHandle_t, 64>{};
  std::lock_guard lk(mu);
  s.context().make_current();
  cudnnHandle_t& h = (*handles)[s.context().index()];
  if (!h) KILN_CUDNN(cudnnCreate, &h);
  KILN_CUDNN(cudnnSetStream, h, reinterpret_cast<cudaStream_t>(s.handle()));
  auto it = plans->find(key);
  if (it == plans->end()) {
    CudnnPlan pl;
    const cudnnDataType_t type = cudnn_type(dt);
    KILN_CUDNN(cudnnCreateTensorDescriptor, &pl.x);
    KILN_CUDNN(cudnnCreateTensorDescriptor, &pl.y);
    KILN_CUDNN(cudnnCreateFilterDescriptor, &pl.w);
    KILN_CUDNN(cudnnCreateConvolutionDescriptor, &pl.conv);
    set_nhwc(pl.x, type, xs[0], xs.back(), spatial(xs));
    set_nhwc(pl.y, type, ys[0], ys.back(), spatial(ys));
    std::vector<int> fdims{ws[0], ws.back()};
    auto fs = spatial(ws);
    fdims.insert(fdims.end(), fs.begin(), fs.end());
    KILN_CUDNN(cudnnSetFilterNdDescriptor, pl.w, type, CUDNN_TENSOR_NHWC, static_cast<int>(fdims.size()), fdims.data());
    auto pad = param(p.pad_lo, 0), stride = param(p.stride, 1), dil = param(p.kernel_dilation, 1);
    KILN_CUDNN(cudnnSetConvolutionNdDescriptor, pl.conv, static_cast<int>(pad.size()), pad.data(), stride.data(),
               dil.data(), p.flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION,
               dt == float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT);
    KILN_CUDNN(cudnnSetConvolutionGroupCount, pl.conv, p.groups);
    KILN_CUDNN(cudnnSetConvolutionMathType, pl.conv,
               dt == float32 && !tf32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
    int found = 0;
    constexpr int kMax = 8;
    if (mode == Mode::forward) {
      cudnnConvolutionFwdAlgoPerf_t perf[kMax];
      KILN_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7, h, pl.x, pl.w, pl.conv, pl.y, kMax, &found, perf);
      int i = 0;
      while (i + 1 < found && perf[i].status != CUDNN_STATUS_SUCCESS) ++i;
      pl.algo = perf[i].algo;
      KILN_CUDNN(cudnnGetConvolutionForwardWorkspaceSize, h, pl.x, pl.w, pl.conv, pl.y,
                 static_cast<cudnnConvolutionFwdAlgo_t>(pl.algo), &pl.workspace);
    } else if (mode == Mode::input_grad) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
      KILN_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7, h, pl.w, pl.y, pl.conv, pl.x, kMax, &found, perf);
      int i = 0;
      while (i + 1 < found && perf[i].status != CUDNN_STATUS_SUCCESS) ++i;
      pl.algo = perf[i].algo;
      KILN_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize, h, pl.w, pl.y, pl.conv, pl.x,
                 static_cast<cudnnConvolutionBwdDataAlgo_t>(pl.algo), &pl.workspace);
    } else {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
      KILN_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7, h, pl.x, pl.y, pl.conv, pl.w, kMax, &found, perf);
      int i = 0;
      while (i + 1 < found && perf[i].status != CUDNN_STATUS_SUCCESS) ++i;
      pl.algo = perf[i].algo;
      KILN_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize, h, pl.x, pl.y, pl.conv, pl.w,
                 static_cast<cudnnConvolutionBwdFilterAlgo_t>(pl.algo), &pl.workspace);
    }
    it = plans->emplace(key, pl).first;
  }
  const CudnnPlan& pl = it->second;
  void* ws_ptr = pl.workspace ? reinterpret_cast<void*>(gpu::scratch(pl.workspace, s)) : nullptr;
  const float one = 1.0f, zero = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* alpha = dt == float64 ? static_cast<const void*>(&one_d) : &one;
  const void* beta = dt == float64 ? static_cast<const void*>(&zero_d) : &zero;
  auto vp = [](CUdeviceptr q) { return reinterpret_cast<void*>(q); };
  if (mode == Mode::forward) {
    KILN_CUDNN(cudnnConvolutionForward, h, alpha, pl.x, vp(a), pl.w, vp(b), pl.conv,
               static_cast<cudnnConvolutionFwdAlgo_t>(pl.algo), ws_ptr, pl.workspace, beta, pl.y, vp(dst));
  } else if (mode == Mode::input_grad) {
    KILN_CUDNN(cudnnConvolutionBackwardData, h, alpha, pl.w, vp(b), pl.y, vp(a), pl.conv,
               static_cast<cudnnConvolutionBwdDataAlgo_t>(pl.algo), ws_ptr, pl.workspace, beta, pl.x, vp(dst));
  } else {
    KILN_CUDNN(cudnnConvolutionBackwardFilter, h, alpha, pl.x, vp(a), pl.y, vp(b), pl.conv,
               static_cast<cudnnConvolutionBwdFilterAlgo_t>(pl.algo), ws_ptr, pl.workspace, beta, pl.w, vp(dst));
  }
}

#endif  // KILN_HAVE_CUDNN_HEADERS

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
#ifdef KILN_HAVE_CUDNN_HEADERS
  if (cudnn_applies(params_, dt)) {
    cudnn_conv(mode_, params_, dt, xs, ws, ys, pa, pb, dst, s);
    return;
  }
#endif
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
