// eval_cpu of the quantization family: Quantize, Dequantize, QuantizedMatmul.
//
// Quantize follows MLX's CPU kernel step for step in float32 (round half to even), so the
// packed words, scales and biases are MLX's bit for bit. QuantizedMatmul dequantizes tiles of
// weight rows into float32 once and reuses them for every row of x: small batches take dot
// products (several partial sums so they vectorize), larger ones hand the tile to sgemm.
// Work is spread over the weight's rows (or columns when not transposed).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kiln/backend/cpu/fast_common.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/backend/cpu/unary_ops.h"
#include "kiln/primitives_quantized.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

constexpr float kFP4[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                            -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// The code of element k of a packed row (a little-endian bit stream of `bits`-wide codes).
inline uint32_t code_at(const uint32_t* row, int64_t k, int bits) {
  const int64_t bit = k * bits;
  const uint32_t* p = row + (bit >> 5);
  const int off = static_cast<int>(bit & 31);
  uint64_t v = p[0] >> off;
  if (off + bits > 32) v |= static_cast<uint64_t>(p[1]) << (32 - off);
  return static_cast<uint32_t>(v) & ((1u << bits) - 1u);
}

// Codes [k0, k0 + n) of a row as floats; constant bits so the shifts are known.
template <int B>
void codes_t(const uint32_t* row, int64_t k0, int n, float* out) {
  if constexpr (32 % B == 0) {
    constexpr int per = 32 / B;
    const uint32_t* p = row + k0 / per;  // k0 is a multiple of the group size
    for (int i = 0; i < n / per; ++i) {
      const uint32_t word = p[i];
      for (int j = 0; j < per; ++j)
        out[i * per + j] = static_cast<float>((word >> (j * B)) & ((1u << B) - 1u));
    }
  } else {
    for (int i = 0; i < n; ++i) out[i] = static_cast<float>(code_at(row, k0 + i, B));
  }
}

void codes(const uint32_t* row, int64_t k0, int n, int bits, float* out) {
  switch (bits) {
    case 1:
      return codes_t<1>(row, k0, n, out);
    case 2:
      return codes_t<2>(row, k0, n, out);
    case 3:
      return codes_t<3>(row, k0, n, out);
    case 4:
      return codes_t<4>(row, k0, n, out);
    case 5:
      return codes_t<5>(row, k0, n, out);
    case 6:
      return codes_t<6>(row, k0, n, out);
    default:
      return codes_t<8>(row, k0, n, out);
  }
}

// The scale of an fp group as a float: e8m0 2^(s - 127) (0 reads as 2^-127, as MLX), or e4m3.
inline float fp_scale(uint8_t s, QuantMode m) {
  if (m == QuantMode::nvfp4) return cpu::fn::FromFP8{}(s);
  return s == 0 ? std::ldexp(1.0f, -127) : std::ldexp(1.0f, static_cast<int>(s) - 127);
}

// Values of an fp row's codes (before the group scale).
inline void fp_values(const uint32_t* row, int64_t k0, int n, QuantMode m, float* out) {
  if (m == QuantMode::mxfp8) {
    const uint8_t* b = reinterpret_cast<const uint8_t*>(row) + k0;
    for (int i = 0; i < n; ++i) out[i] = cpu::fn::FromFP8{}(b[i]);
  } else {
    const uint8_t* b = reinterpret_cast<const uint8_t*>(row) + k0 / 2;
    for (int i = 0; i < n / 2; ++i) {
      out[2 * i] = kFP4[b[i] & 0xf];
      out[2 * i + 1] = kFP4[b[i] >> 4];
    }
  }
}

// Offsets (elements) of the matrices of `a` (..., R, C), whose last two axes are dense.
std::vector<int64_t> matrix_offsets(const array& a) {
  const int nd = static_cast<int>(a.ndim());
  const Shape bs(a.shape().begin(), a.shape().end() - 2);
  const Strides bst(a.strides().begin(), a.strides().end() - 2);
  int64_t n = 1;
  for (int v : bs) n *= v;
  std::vector<int64_t> off(n);
  for (int64_t i = 0; i < n; ++i) off[i] = nd > 2 ? elem_to_loc(i, bs, bst) : 0;
  return off;
}

// `a` when its last two axes are dense (rows of C elements one after another), else a copy.
array dense_matrices(const array& a) {
  const int nd = static_cast<int>(a.ndim());
  const bool ok = a.ndim() < 2 ? a.flags().row_contiguous
                               : ((a.strides()[nd - 1] == 1 || a.shape(-1) == 1) &&
                                  (a.strides()[nd - 2] == a.shape(-1) || a.shape(-2) == 1));
  return ok ? a : cpu::fast::dense(a);
}

// ---------------------------------------------------------------- quantize

// The e8m0 scale 2^ceil(log2(x)): the smallest power of two that keeps the block's largest
// element within the element format (MLX).
uint8_t e8m0_of(float x) {
  if (!std::isfinite(x)) return 0xff;
  if (x <= 0.0f) return 0;
  int e;
  const float m = std::frexp(x, &e);  // x = m 2^e, m in [0.5, 1)
  int n = m == 0.5f ? e - 1 : e;
  n = std::clamp(n, -127, 127);
  return static_cast<uint8_t>(n + 127);
}

// The e2m1 code nearest to x: the first of kFP4 at the least distance, as MLX's argmin
// (ties toward the smaller magnitude, zero as +0).
uint8_t fp4_of(float x) {
  uint8_t best = 0;
  float d = std::fabs(x - kFP4[0]);
  for (uint8_t i = 1; i < 16; ++i) {
    const float di = std::fabs(x - kFP4[i]);
    if (di < d) {
      d = di;
      best = i;
    }
  }
  return best;
}

template <typename T>
void quantize_rows(const array& w_in, const array* global, std::vector<array>& outs,
                   const QuantParams& p) {
  const array w = cpu::fast::dense(w_in);
  const T* wp = w.data<T>();
  const int gs = p.group_size, bits = p.bits;
  const int64_t groups = static_cast<int64_t>(w.size()) / gs;
  const int words_per_group = gs * bits / 32;
  uint32_t* q = outs[0].data<uint32_t>();
  const float gscale = global ? global->data<float>()[0] : 0.0f;
  cpu::parallel_for(groups, 256, [&](size_t b, size_t e) {
    std::vector<uint32_t> codes_buf(gs);
    for (size_t g = b; g < e; ++g) {
      const T* x = wp + g * gs;
      if (p.mode == QuantMode::affine) {
        const float n_bins = static_cast<float>((1 << bits) - 1);
        float lo = std::numeric_limits<float>::infinity(), hi = -lo;
        for (int j = 0; j < gs; ++j) {
          const float v = static_cast<float>(x[j]);
          hi = std::max(hi, v);
          lo = std::min(lo, v);
        }
        float scale = std::max((hi - lo) / n_bins, 1e-7f), bias = lo;
        if (bits > 1) {
          // Move the grid so that the larger edge is exact (MLX); 1 bit keeps min and max.
          const bool mask = std::fabs(lo) > std::fabs(hi);
          scale = mask ? scale : -scale;
          const float edge = mask ? lo : hi;
          const float q0 = std::nearbyint(edge / scale);
          bias = 0.0f;
          if (q0 != 0.0f) {
            scale = edge / q0;
            bias = edge;
          }
        }
        for (int j = 0; j < gs; ++j) {
          float c = std::nearbyint((static_cast<float>(x[j]) - bias) / scale);
          c = std::min(std::max(c, 0.0f), n_bins);
          codes_buf[j] = static_cast<uint32_t>(c);
        }
        outs[1].data<T>()[g] = static_cast<T>(scale);
        outs[2].data<T>()[g] = static_cast<T>(bias);
      } else {
        float amax = 0.0f;
        for (int j = 0; j < gs; ++j) amax = std::max(amax, std::fabs(static_cast<float>(x[j])));
        float scale = amax / (bits == 4 ? 6.0f : 448.0f);
        float dec;
        uint8_t s8;
        if (p.mode == QuantMode::nvfp4) {
          if (global) scale = scale * (448.0f * 6.0f) / gscale;
          s8 = cpu::fn::ToFP8{}(scale);
          dec = cpu::fn::FromFP8{}(s8);
          if (global) dec = dec * gscale / (448.0f * 6.0f);
        } else {
          s8 = e8m0_of(scale);
          dec = fp_scale(s8, p.mode);
        }
        outs[1].data<uint8_t>()[g] = s8;
        for (int j = 0; j < gs; ++j) {
          const float v = dec == 0.0f ? 0.0f : static_cast<float>(x[j]) / dec;
          codes_buf[j] = bits == 8 ? cpu::fn::ToFP8{}(v) : fp4_of(v);
        }
      }
      uint32_t* out = q + g * words_per_group;
      std::fill(out, out + words_per_group, 0u);
      for (int j = 0; j < gs; ++j) {
        const int64_t bit = static_cast<int64_t>(j) * bits;
        const int off = static_cast<int>(bit & 31);
        const uint64_t c = codes_buf[j];
        out[bit >> 5] |= static_cast<uint32_t>(c << off);
        if (off + bits > 32) out[(bit >> 5) + 1] |= static_cast<uint32_t>(c >> (32 - off));
      }
    }
  });
}

// ---------------------------------------------------------------- dequantize

// Row r's group g as floats into out (gs values), with the dtype's rounding for affine
// (scale * q rounded, then + bias rounded, as MLX's two ops do).
template <typename T>
void dequantize_rows(const array& w_in, const array& s_in, const array* b_in, const array* global,
                     array& out, const QuantParams& p) {
  const array w = cpu::fast::dense(w_in), sc = cpu::fast::dense(s_in);
  const array bi = b_in ? cpu::fast::dense(*b_in) : array(0.0f);
  const int gs = p.group_size;
  const int64_t K = out.shape(-1);
  const int64_t rows = K ? static_cast<int64_t>(out.size()) / K : 0;
  const int64_t gpr = K / gs, wpr = w.shape(-1);
  const float gscale = global ? global->data<float>()[0] / (448.0f * 6.0f) : 1.0f;
  T* o = out.data<T>();
  const uint32_t* wp = w.data<uint32_t>();
  cpu::parallel_for(rows * gpr, 256, [&](size_t b, size_t e) {
    std::vector<float> buf(gs);
    for (size_t i = b; i < e; ++i) {
      const int64_t r = i / gpr, g = i % gpr;
      const uint32_t* row = wp + r * wpr;
      T* dst = o + r * K + g * gs;
      if (p.mode == QuantMode::affine) {
        codes(row, g * gs, gs, p.bits, buf.data());
        const T s = sc.data<T>()[i], bb = bi.data<T>()[i];
        for (int j = 0; j < gs; ++j)
          dst[j] = static_cast<T>(static_cast<T>(s * static_cast<T>(buf[j])) + bb);
      } else {
        fp_values(row, g * gs, gs, p.mode, buf.data());
        float s = fp_scale(sc.data<uint8_t>()[i], p.mode);
        if (global) s *= gscale;
        for (int j = 0; j < gs; ++j) dst[j] = static_cast<T>(buf[j] * s);
      }
    }
  });
}

// ---------------------------------------------------------------- quantized matmul

// One weight matrix with its scales (biases), dequantized into float rows on demand.
struct QMatrix {
  const uint32_t* w;
  int64_t words;  // per row
  const void* scales;
  const void* biases;
  int64_t groups;  // per row
  float gscale;
  QuantParams p;

  // Row r's elements [k0, k0 + n) (n a multiple of the group size) as floats.
  template <typename T>
  void row(int64_t r, int64_t k0, int64_t n, float* out) const {
    const uint32_t* rw = w + r * words;
    const int gs = p.group_size;
    for (int64_t k = k0; k < k0 + n; k += gs) {
      float* o = out + (k - k0);
      const int64_t gi = r * groups + k / gs;
      if (p.mode == QuantMode::affine) {
        codes(rw, k, gs, p.bits, o);
        const float s = static_cast<float>(static_cast<const T*>(scales)[gi]);
        const float b = static_cast<float>(static_cast<const T*>(biases)[gi]);
        for (int j = 0; j < gs; ++j) o[j] = o[j] * s + b;
      } else {
        fp_values(rw, k, gs, p.mode, o);
        const float s = fp_scale(static_cast<const uint8_t*>(scales)[gi], p.mode) * gscale;
        for (int j = 0; j < gs; ++j) o[j] *= s;
      }
    }
  }
};

inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0.0f;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int j = 0; j < 8; ++j) s += acc[j];
  return s;
}

constexpr int64_t kSmallM = 16;

// out (M, N) = x (M, K) @ W^T, W (N, K) given as q; x already float.
template <typename T>
void qmm_t(const float* x, int64_t M, int64_t N, int64_t K, const QMatrix& q, float* out) {
  const int64_t tile = M <= kSmallM ? 8 : 64;
  cpu::parallel_for((N + tile - 1) / tile, 1, [&](size_t b, size_t e) {
    std::vector<float> wt(tile * K);
    for (size_t t = b; t < e; ++t) {
      const int64_t n0 = t * tile, nn = std::min<int64_t>(tile, N - n0);
      for (int64_t i = 0; i < nn; ++i) q.row<T>(n0 + i, 0, K, wt.data() + i * K);
      if (M <= kSmallM) {
        for (int64_t m = 0; m < M; ++m)
          for (int64_t i = 0; i < nn; ++i)
            out[m * N + n0 + i] = dot(x + m * K, wt.data() + i * K, K);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(M),
                    static_cast<int>(nn), static_cast<int>(K), 1.0f, x, static_cast<int>(K),
                    wt.data(), static_cast<int>(K), 0.0f, out + n0, static_cast<int>(N));
      }
    }
  });
}

// out (M, N) = x (M, K) @ W, W (K, N) given as q (rows of N); columns split over threads.
template <typename T>
void qmm_n(const float* x, int64_t M, int64_t N, int64_t K, const QMatrix& q, float* out) {
  const int gs = q.p.group_size;
  const int64_t cols = std::max<int64_t>(gs, (256 / gs) * gs);
  cpu::parallel_for((N + cols - 1) / cols, 1, [&](size_t b, size_t e) {
    std::vector<float> wr(cols);
    std::vector<float> acc;
    for (size_t t = b; t < e; ++t) {
      const int64_t c0 = t * cols, nc = std::min<int64_t>(cols, N - c0);
      acc.assign(M * nc, 0.0f);
      for (int64_t k = 0; k < K; ++k) {
        q.row<T>(k, c0, nc, wr.data());
        for (int64_t m = 0; m < M; ++m) {
          const float xv = x[m * K + k];
          float* a = acc.data() + m * nc;
          for (int64_t j = 0; j < nc; ++j) a[j] += xv * wr[j];
        }
      }
      for (int64_t m = 0; m < M; ++m)
        std::copy(acc.begin() + m * nc, acc.begin() + (m + 1) * nc, out + m * N + c0);
    }
  });
}

template <typename T>
void quantized_matmul(const std::vector<array>& inputs, array& out, const QuantParams& p,
                      bool transpose, bool has_global) {
  const bool affine = p.mode == QuantMode::affine;
  const array x = dense_matrices(inputs[0]), w = dense_matrices(inputs[1]),
              sc = dense_matrices(inputs[2]);
  const array bi = affine ? dense_matrices(inputs[3]) : sc;
  // nvfp4's global scale: a scalar, or one per matrix as (..., 1, 1) matrices.
  const array gl = has_global ? dense_matrices(inputs[affine ? 4 : 3]) : sc;
  const bool per_matrix = has_global && gl.ndim() > 0;
  const int64_t M = x.shape(-2), K = x.shape(-1), N = out.shape(-1);
  const auto xo = matrix_offsets(x), wo = matrix_offsets(w), so = matrix_offsets(sc),
             bo = matrix_offsets(bi);
  const auto go = per_matrix ? matrix_offsets(gl) : std::vector<int64_t>{};
  std::vector<float> xf(M * K), of(M * N);
  T* o = out.data<T>();
  for (size_t bidx = 0; bidx < xo.size(); ++bidx) {
    const T* xp = x.data<T>() + xo[bidx];
    const float gscale =
        has_global ? gl.data<float>()[per_matrix ? go[bidx] : 0] / (448.0f * 6.0f) : 1.0f;
    for (int64_t i = 0; i < M * K; ++i) xf[i] = static_cast<float>(xp[i]);
    QMatrix q{w.data<uint32_t>() + wo[bidx],
              w.shape(-1),
              affine ? static_cast<const void*>(sc.data<T>() + so[bidx])
                     : static_cast<const void*>(sc.data<uint8_t>() + so[bidx]),
              affine ? static_cast<const void*>(bi.data<T>() + bo[bidx]) : nullptr,
              sc.shape(-1),
              gscale,
              p};
    if (transpose)
      qmm_t<T>(xf.data(), M, N, K, q, of.data());
    else
      qmm_n<T>(xf.data(), M, N, K, q, of.data());
    T* op = o + bidx * M * N;
    for (int64_t i = 0; i < M * N; ++i) op[i] = static_cast<T>(of[i]);
  }
}

}  // namespace

void Quantize::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (auto& o : outputs) o.set_data(Storage::host(o.nbytes()));
  if (inputs[0].size() == 0) return;
  const array* g = inputs.size() > 1 ? &inputs[1] : nullptr;
  cpu::fast::dispatch_float(inputs[0].dtype(), "quantize", [&](auto tag) {
    using T = decltype(tag);
    quantize_rows<T>(inputs[0], g, outputs, p_);
  });
}

void Dequantize::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  const bool affine = p_.mode == QuantMode::affine;
  const array* b = affine ? &inputs[2] : nullptr;
  const array* g = global_ ? &inputs[affine ? 3 : 2] : nullptr;
  cpu::fast::dispatch_float(out.dtype(), "dequantize", [&](auto tag) {
    using T = decltype(tag);
    dequantize_rows<T>(inputs[0], inputs[1], b, g, out, p_);
  });
}

void QuantizedMatmul::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  if (inputs[0].shape(-1) == 0) {
    cpu::fast::dispatch_float(out.dtype(), "quantized_matmul", [&](auto tag) {
      using T = decltype(tag);
      std::fill(out.data<T>(), out.data<T>() + out.size(), T(0));
    });
    return;
  }
  cpu::fast::dispatch_float(out.dtype(), "quantized_matmul", [&](auto tag) {
    using T = decltype(tag);
    quantized_matmul<T>(inputs, out, p_, transpose_, global_);
  });
}

}  // namespace kiln
