// Convolution::eval_cpu: im2col + BLAS gemm (OpenBLAS), for the forward convolution and
// both of its derivatives (see primitives_conv.h).
//
// Rows of the im2col matrix are output positions (n, o...), columns (k..., c) for one
// group, so a row holds Cg contiguous channels per kernel tap. Per dimension, a table maps
// (output index, kernel index) to the input index (or -1 for padding and the zeros of input
// dilation). Blocks of rows bound the scratch memory:
//  - forward:     y[rows, g] = cols @ W_g^T
//  - input_grad:  cols = dy[rows, g] @ W_g, scattered (added) back to the input positions;
//                 blocks never cross a sample n, so samples run in parallel without races.
//  - weight_grad: W_g += dy[rows, g]^T @ cols, per-thread partial sums added at the end.
// Half types are computed in float32 and rounded once.
#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_conv.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
}
void gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda,
          const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Sizes and index tables of one convolution.
struct Geometry {
  int d;                         // spatial dimensions
  int N, C, O, G, Cg, Og;        // batch, channels, output channels, groups
  Shape in, k, out;              // spatial sizes
  int64_t in_sp, k_sp, out_sp;   // their products
  int64_t kc;                    // columns per group: k_sp * Cg
  std::vector<std::vector<int>> map;  // per dim: map[d][o * K + k] = input index or -1
  Strides in_strides;            // spatial strides of x (elements, channel-last contiguous)

  Geometry(const Shape& x, const Shape& w, const Shape& y, const ConvParams& p) {
    d = static_cast<int>(x.size()) - 2;
    N = x[0];
    C = x.back();
    O = w[0];
    G = p.groups;
    Cg = C / G;
    Og = O / G;
    in.assign(x.begin() + 1, x.end() - 1);
    k.assign(w.begin() + 1, w.end() - 1);
    out.assign(y.begin() + 1, y.end() - 1);
    in_sp = static_cast<int64_t>(shape_size(in));
    k_sp = static_cast<int64_t>(shape_size(k));
    out_sp = static_cast<int64_t>(shape_size(out));
    kc = k_sp * Cg;
    map.resize(d);
    for (int i = 0; i < d; ++i) {
      map[i].resize(static_cast<size_t>(out[i]) * k[i]);
      for (int o = 0; o < out[i]; ++o) {
        for (int kk = 0; kk < k[i]; ++kk) {
          const int tap = p.flip ? k[i] - 1 - kk : kk;
          const int64_t pos = static_cast<int64_t>(o) * p.stride[i] +
                              static_cast<int64_t>(tap) * p.kernel_dilation[i] - p.pad_lo[i];
          int idx = -1;
          if (pos >= 0 && pos % p.input_dilation[i] == 0 && pos / p.input_dilation[i] < in[i]) {
            idx = static_cast<int>(pos / p.input_dilation[i]);
          }
          map[i][static_cast<size_t>(o) * k[i] + kk] = idx;
        }
      }
    }
    in_strides.assign(d, C);
    for (int i = d - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * in[i + 1];
  }

  // Calls f(column offset of tap kidx, input offset or -1) for every tap of output position
  // `op` (spatial linear index).
  template <typename F>
  void taps(int64_t op, F f) const {
    int oi[3] = {0, 0, 0};
    for (int i = d - 1; i >= 0; --i) {
      oi[i] = static_cast<int>(op % out[i]);
      op /= out[i];
    }
    int ki[3] = {0, 0, 0};
    for (int64_t t = 0; t < k_sp; ++t) {
      int64_t off = 0;
      bool valid = true;
      for (int i = 0; i < d && valid; ++i) {
        const int idx = map[i][static_cast<size_t>(oi[i]) * k[i] + ki[i]];
        valid = idx >= 0;
        off += static_cast<int64_t>(idx) * in_strides[i];
      }
      f(t * Cg, valid ? off : -1);
      for (int i = d - 1; i >= 0; --i) {
        if (++ki[i] < k[i]) break;
        ki[i] = 0;
      }
    }
  }
};

// A row-contiguous copy of x as T (no copy when it already is one).
template <typename T>
std::pair<const T*, std::shared_ptr<Storage>> as_contiguous(const array& x) {
  if (x.dtype() == dtype_v<T> && x.flags().row_contiguous) return {x.data<T>(), nullptr};
  auto st = Storage::host(x.size() * sizeof(T));
  array c(st, x.shape(), dtype_v<T>);
  if (x.size()) cpu::copy_inplace(x, c, cpu::CopyType::general_general);
  return {c.data<T>(), st};
}

// Fills cols (rows x kc) for output rows [r0, r0 + rows) of sample n and group g.
template <typename T>
void im2col(const Geometry& g, const T* x, int n, int grp, int64_t r0, int64_t rows, T* cols) {
  const T* xn = x + static_cast<int64_t>(n) * g.in_sp * g.C + static_cast<int64_t>(grp) * g.Cg;
  for (int64_t r = 0; r < rows; ++r) {
    T* row = cols + r * g.kc;
    g.taps(r0 + r, [&](int64_t col, int64_t off) {
      if (off < 0) {
        std::fill(row + col, row + col + g.Cg, T(0));
      } else {
        std::copy(xn + off, xn + off + g.Cg, row + col);
      }
    });
  }
}

// Adds cols back into dx (the adjoint of im2col).
template <typename T>
void col2im(const Geometry& g, const T* cols, int n, int grp, int64_t r0, int64_t rows, T* dx) {
  T* xn = dx + static_cast<int64_t>(n) * g.in_sp * g.C + static_cast<int64_t>(grp) * g.Cg;
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = cols + r * g.kc;
    g.taps(r0 + r, [&](int64_t col, int64_t off) {
      if (off < 0) return;
      for (int c = 0; c < g.Cg; ++c) xn[off + c] += row[col + c];
    });
  }
}

// Rows per block: about 2^20 scratch elements.
int64_t block_rows(const Geometry& g) {
  return std::max<int64_t>(1, std::min<int64_t>(g.out_sp, (1 << 20) / std::max<int64_t>(g.kc, 1)));
}

template <typename T>
void conv_forward(const Geometry& g, const T* x, const T* w, T* y) {
  const int64_t R = block_rows(g);
  const int64_t blocks_per_n = (g.out_sp + R - 1) / R;
  const size_t total = static_cast<size_t>(g.N) * blocks_per_n;
  auto run = [&](size_t b, size_t e) {
    std::vector<T> cols(static_cast<size_t>(R) * g.kc);
    for (size_t blk = b; blk < e; ++blk) {
      const int n = static_cast<int>(blk / blocks_per_n);
      const int64_t r0 = static_cast<int64_t>(blk % blocks_per_n) * R;
      const int64_t rows = std::min(R, g.out_sp - r0);
      T* yr = y + (static_cast<int64_t>(n) * g.out_sp + r0) * g.O;
      for (int grp = 0; grp < g.G; ++grp) {
        im2col(g, x, n, grp, r0, rows, cols.data());
        gemm(false, true, static_cast<int>(rows), g.Og, static_cast<int>(g.kc), T(1), cols.data(),
             static_cast<int>(g.kc), w + static_cast<int64_t>(grp) * g.Og * g.kc,
             static_cast<int>(g.kc), T(0), yr + grp * g.Og, g.O);
      }
    }
  };
  const double work = static_cast<double>(R) * g.kc * g.O;
  if (work < (1 << 22)) {
    cpu::parallel_for(total, 1, run);
  } else {
    run(0, total);
  }
}

template <typename T>
void conv_input_grad(const Geometry& g, const T* dy, const T* w, T* dx) {
  std::fill(dx, dx + static_cast<int64_t>(g.N) * g.in_sp * g.C, T(0));
  const int64_t R = block_rows(g);
  auto run = [&](size_t b, size_t e) {
    std::vector<T> cols(static_cast<size_t>(R) * g.kc);
    for (size_t n = b; n < e; ++n) {
      for (int64_t r0 = 0; r0 < g.out_sp; r0 += R) {
        const int64_t rows = std::min(R, g.out_sp - r0);
        const T* dyr = dy + (static_cast<int64_t>(n) * g.out_sp + r0) * g.O;
        for (int grp = 0; grp < g.G; ++grp) {
          gemm(false, false, static_cast<int>(rows), static_cast<int>(g.kc), g.Og, T(1),
               dyr + grp * g.Og, g.O, w + static_cast<int64_t>(grp) * g.Og * g.kc,
               static_cast<int>(g.kc), T(0), cols.data(), static_cast<int>(g.kc));
          col2im(g, cols.data(), static_cast<int>(n), grp, r0, rows, dx);
        }
      }
    }
  };
  cpu::parallel_for(static_cast<size_t>(g.N), 1, run);
}

template <typename T>
void conv_weight_grad(const Geometry& g, const T* x, const T* dy, T* dw) {
  const size_t wsize = static_cast<size_t>(g.O) * g.kc;
  std::fill(dw, dw + wsize, T(0));
  const int64_t R = block_rows(g);
  std::mutex mu;
  auto run = [&](size_t b, size_t e) {
    std::vector<T> cols(static_cast<size_t>(R) * g.kc), part(wsize, T(0));
    for (size_t n = b; n < e; ++n) {
      for (int64_t r0 = 0; r0 < g.out_sp; r0 += R) {
        const int64_t rows = std::min(R, g.out_sp - r0);
        const T* dyr = dy + (static_cast<int64_t>(n) * g.out_sp + r0) * g.O;
        for (int grp = 0; grp < g.G; ++grp) {
          im2col(g, x, static_cast<int>(n), grp, r0, rows, cols.data());
          gemm(true, false, g.Og, static_cast<int>(g.kc), static_cast<int>(rows), T(1),
               dyr + grp * g.Og, g.O, cols.data(), static_cast<int>(g.kc), T(1),
               part.data() + static_cast<size_t>(grp) * g.Og * g.kc, static_cast<int>(g.kc));
        }
      }
    }
    std::lock_guard lk(mu);
    for (size_t i = 0; i < wsize; ++i) dw[i] += part[i];
  };
  cpu::parallel_for(static_cast<size_t>(g.N), 1, run);
}

template <typename T, typename Acc>
void conv_eval(const Convolution& prim, const array& a, const array& b, array& out) {
  using Mode = Convolution::Mode;
  const auto& p = prim.params();
  const Shape& xs = prim.mode() == Mode::input_grad ? out.shape() : a.shape();
  const Shape& ws = prim.mode() == Mode::forward    ? b.shape()
                    : prim.mode() == Mode::input_grad ? b.shape()
                                                      : out.shape();
  const Shape& ys = prim.mode() == Mode::forward      ? out.shape()
                    : prim.mode() == Mode::input_grad ? a.shape()
                                                      : b.shape();
  Geometry g(xs, ws, ys, p);
  auto [pa, sa] = as_contiguous<Acc>(a);
  auto [pb, sb] = as_contiguous<Acc>(b);
  std::shared_ptr<Storage> acc_storage;
  Acc* dst;
  if constexpr (std::is_same_v<T, Acc>) {
    dst = out.data<Acc>();
  } else {
    acc_storage = Storage::host(out.size() * sizeof(Acc));
    dst = static_cast<Acc*>(acc_storage->host_ptr());
  }
  if (g.N > 0 && g.O > 0 && g.C > 0) {
    switch (prim.mode()) {
      case Mode::forward:
        if (g.out_sp > 0) conv_forward<Acc>(g, pa, pb, dst);
        break;
      case Mode::input_grad:
        conv_input_grad<Acc>(g, pa, pb, dst);
        break;
      case Mode::weight_grad:
        conv_weight_grad<Acc>(g, pa, pb, dst);
        break;
    }
  } else {
    std::fill(dst, dst + out.size(), Acc(0));
  }
  if constexpr (!std::is_same_v<T, Acc>) {
    T* o = out.data<T>();
    cpu::parallel_for(out.size(), cpu::kElementwiseGrain, [&](size_t s, size_t e) {
      for (size_t i = s; i < e; ++i) o[i] = T(dst[i]);
    });
  }
}

}  // namespace

void Convolution::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  const array &a = inputs[0], &b = inputs[1];
  switch (out.dtype().val) {
    case Dtype::Val::float32:
      return conv_eval<float, float>(*this, a, b, out);
    case Dtype::Val::float64:
      return conv_eval<double, double>(*this, a, b, out);
    case Dtype::Val::float16:
      return conv_eval<float16_t, float>(*this, a, b, out);
    case Dtype::Val::bfloat16:
      return conv_eval<bfloat16_t, float>(*this, a, b, out);
    default:
      throw std::invalid_argument(msg("[Convolution::eval_cpu] Unsupported dtype ", out.dtype(), "."));
  }
}

}  // namespace kiln
