// eval_cpu of rms_norm (and fused_rms_silu), layer_norm and their gradients. Rows of the last axis
// are spread over the thread pool; each row is widened once into a buffer of the accumulation type
// (float32, float64 for float64) and normalized there. The parameter gradients are summed
// per chunk of rows, then the chunks' partial sums are added.
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kiln/backend/cpu/fast_common.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/fast_primitives.h"

namespace kiln::fast {

namespace {

using cpu::fast::Acc;

/** The parameter `p` (1-d, n elements) as a dense vector of A, or `fill` when absent. */
template <typename T, typename A>
std::vector<A> param(const array* p, int64_t n, A fill) {
  std::vector<A> v(n, fill);
  if (p) {
    array d = cpu::fast::dense(*p);
    cpu::fast::load(d.data<T>(), v.data(), n);
  }
  return v;
}

/** Rows in chunks, each chunk on one thread with its own index (for partial sums). */
template <typename F>
void chunked_rows(int64_t rows, int64_t n, int64_t chunks, F&& f) {
  const int64_t per = (rows + chunks - 1) / chunks;
  cpu::parallel_for(chunks, 1, [&](size_t cb, size_t ce) {
    for (size_t c = cb; c < ce; ++c) {
      const int64_t b = c * per, e = std::min<int64_t>(rows, b + per);
      if (b < e) f(static_cast<int64_t>(c), b, e);
    }
  });
}

int64_t chunk_count(int64_t rows, int64_t n) {
  const int64_t work = rows * std::max<int64_t>(n, 1);
  return std::clamp<int64_t>(work >> 15, 1, std::min<int64_t>(rows, 4 * cpu::num_threads()));
}

// The rows of the norms and their gradients in the accumulation type A (float, double), as
// vector code for the machine's widest vectors (KILN_SIMD_CLONES). Outputs may alias inputs.

/** One row of rms_norm, through SiLU when `silu`. */
template <typename A>
KILN_SIMD_CLONES void rms_row(const A* x, A* y, const A* w, int64_t n, float eps, bool silu) {
  const A inv = A(1) / std::sqrt(cpu::fast::dot(x, x, n) / A(n) + A(eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * w[i];
  if (silu)
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] / (A(1) + cpu::fast::exp_acc(-y[i]));
}

/** rms_norm, followed by SiLU (h * sigmoid(h)) when `silu`. Rows of the accumulation type
 * go from x to y directly; 16-bit rows are widened into a buffer and rounded once. */
template <typename T>
void rms_norm(const array& x_in, const array* w, array& out, float eps, bool silu) {
  using A = Acc<T>;
  const array x = cpu::fast::dense(x_in);
  const int64_t n = x.shape(-1), rows = x.size() / n;
  const std::vector<A> wv = param<T, A>(w, n, A(1));
  const T* xp = x.data<T>();
  T* yp = out.data<T>();
  cpu::parallel_for(rows, cpu::fast::row_grain(rows, n), [&](size_t b, size_t e) {
    std::vector<A> buf(std::is_same_v<T, A> ? 0 : n);
    for (size_t r = b; r < e; ++r) {
      if constexpr (std::is_same_v<T, A>) {
        rms_row(xp + r * n, yp + r * n, wv.data(), n, eps, silu);
      } else {
        cpu::fast::load(xp + r * n, buf.data(), n);
        rms_row(buf.data(), buf.data(), wv.data(), n, eps, silu);
        cpu::fast::store(buf.data(), yp + r * n, n);
      }
    }
  });
}

/** Mean and 1 / sqrt(variance + eps) of the row in `buf` (two passes: exact for large means). */
template <typename A>
std::pair<A, A> moments(const A* buf, int64_t n, float eps) {
  const A mu = cpu::fast::sum(buf, n) / A(n);
  A p[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) p[j] += (buf[i + j] - mu) * (buf[i + j] - mu);
  A v = 0;
  for (; i < n; ++i) v += (buf[i] - mu) * (buf[i] - mu);
  for (int j = 0; j < 16; ++j) v += p[j];
  return {mu, A(1) / std::sqrt(v / A(n) + A(eps))};
}

/** One row of layer_norm. */
template <typename A>
KILN_SIMD_CLONES void layer_row(const A* x, A* y, const A* w, const A* b, int64_t n, float eps) {
  const auto [mu, inv] = moments(x, n, eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mu) * inv * w[i] + b[i];
}

template <typename T>
void layer_norm(const array& x_in, const array* w, const array* bias, array& out, float eps) {
  using A = Acc<T>;
  const array x = cpu::fast::dense(x_in);
  const int64_t n = x.shape(-1), rows = x.size() / n;
  const std::vector<A> wv = param<T, A>(w, n, A(1)), bv = param<T, A>(bias, n, A(0));
  const T* xp = x.data<T>();
  T* yp = out.data<T>();
  cpu::parallel_for(rows, cpu::fast::row_grain(rows, n), [&](size_t b, size_t e) {
    std::vector<A> buf(std::is_same_v<T, A> ? 0 : n);
    for (size_t r = b; r < e; ++r) {
      if constexpr (std::is_same_v<T, A>) {
        layer_row(xp + r * n, yp + r * n, wv.data(), bv.data(), n, eps);
      } else {
        cpu::fast::load(xp + r * n, buf.data(), n);
        layer_row(buf.data(), buf.data(), wv.data(), bv.data(), n, eps);
        cpu::fast::store(buf.data(), yp + r * n, n);
      }
    }
  });
}

/** Adds the chunks' partial sums (chunks x n) into `out` (n elements of T). */
template <typename T, typename A>
void finish_param_grad(const std::vector<A>& partial, int64_t chunks, int64_t n, array& out) {
  T* o = out.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    A s = 0;
    for (int64_t c = 0; c < chunks; ++c) s += partial[c * n + i];
    o[i] = static_cast<T>(s);
  }
}

// One row of a norm's gradient: dx from x and the cotangent g, and the row's weight (and
// bias) gradient terms added to dw (db) when they are not null.

template <typename A>
KILN_SIMD_CLONES void rms_vjp_row(const A* x, const A* g, const A* w, A* dx, A* dw, int64_t n,
                                  float eps) {
  const A inv = A(1) / std::sqrt(cpu::fast::dot(x, x, n) / A(n) + A(eps));
  if (dw)
    for (int64_t i = 0; i < n; ++i) dw[i] += g[i] * x[i] * inv;
  A p[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) p[j] += g[i + j] * w[i + j] * x[i + j];
  A s = 0;
  for (; i < n; ++i) s += g[i] * w[i] * x[i];
  for (int j = 0; j < 16; ++j) s += p[j];
  const A t = s / A(n) * inv * inv * inv;
  for (i = 0; i < n; ++i) dx[i] = g[i] * w[i] * inv - x[i] * t;
}

template <typename A>
KILN_SIMD_CLONES void layer_vjp_row(const A* x, const A* g, const A* w, A* dx, A* dw, A* db,
                                    int64_t n, float eps) {
  const auto [mu, inv] = moments(x, n, eps);
  A pg[16] = {}, px[16] = {};  // sum(w g) and sum(w g xhat)
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) {
      const A wg = w[i + j] * g[i + j];
      pg[j] += wg;
      px[j] += wg * (x[i + j] - mu) * inv;
    }
  A sg = 0, sx = 0;
  for (; i < n; ++i) {
    const A wg = w[i] * g[i];
    sg += wg;
    sx += wg * (x[i] - mu) * inv;
  }
  for (int j = 0; j < 16; ++j) {
    sg += pg[j];
    sx += px[j];
  }
  const A mean_wg = sg / A(n), mean_wgx = sx / A(n);
  // Separate loops: a test inside one would keep it scalar.
  if (dw)
    for (i = 0; i < n; ++i) dw[i] += g[i] * ((x[i] - mu) * inv);
  if (db)
    for (i = 0; i < n; ++i) db[i] += g[i];
  for (i = 0; i < n; ++i) dx[i] = inv * (w[i] * g[i] - mean_wg - (x[i] - mu) * inv * mean_wgx);
}

/**
 * The rows of a norm's gradient in chunks (each with its own parameter-gradient sums):
 * row(x, g, dx, c) gets rows of the accumulation type, read and written in place for float
 * and double, widened into buffers (and dx rounded once) for 16-bit types.
 */
template <typename T, typename A, typename F>
void vjp_rows(const T* xp, const T* gp, T* dxp, int64_t rows, int64_t n, int64_t chunks, F&& row) {
  chunked_rows(rows, n, chunks, [&](int64_t c, int64_t b, int64_t e) {
    std::vector<A> xb(std::is_same_v<T, A> ? 0 : n), gb(xb.size());
    for (int64_t r = b; r < e; ++r) {
      if constexpr (std::is_same_v<T, A>) {
        row(xp + r * n, gp + r * n, dxp + r * n, c);
      } else {
        cpu::fast::load(xp + r * n, xb.data(), n);
        cpu::fast::load(gp + r * n, gb.data(), n);
        row(xb.data(), gb.data(), xb.data(), c);
        cpu::fast::store(xb.data(), dxp + r * n, n);
      }
    }
  });
}

template <typename T>
void rms_norm_vjp(const array& x_in, const array* w, const array& g_in, std::vector<array>& outs,
                  float eps) {
  using A = Acc<T>;
  const array x = cpu::fast::dense(x_in), g = cpu::fast::dense(g_in);
  const int64_t n = x.shape(-1), rows = x.size() / n;
  const std::vector<A> wv = param<T, A>(w, n, A(1));
  const int64_t chunks = chunk_count(rows, n);
  std::vector<A> dw(w ? chunks * n : 0, A(0));
  vjp_rows<T, A>(x.data<T>(), g.data<T>(), outs[0].data<T>(), rows, n, chunks,
                 [&](const A* xr, const A* gr, A* dxr, int64_t c) {
                   rms_vjp_row(xr, gr, wv.data(), dxr, w ? dw.data() + c * n : nullptr, n, eps);
                 });
  if (w) finish_param_grad<T>(dw, chunks, n, outs[1]);
}

template <typename T>
void layer_norm_vjp(const array& x_in, const array* w, const array& g_in, bool has_bias,
                    std::vector<array>& outs, float eps) {
  using A = Acc<T>;
  const array x = cpu::fast::dense(x_in), g = cpu::fast::dense(g_in);
  const int64_t n = x.shape(-1), rows = x.size() / n;
  const std::vector<A> wv = param<T, A>(w, n, A(1));
  const int64_t chunks = chunk_count(rows, n);
  std::vector<A> dw(w ? chunks * n : 0, A(0)), db(has_bias ? chunks * n : 0, A(0));
  vjp_rows<T, A>(x.data<T>(), g.data<T>(), outs[0].data<T>(), rows, n, chunks,
                 [&](const A* xr, const A* gr, A* dxr, int64_t c) {
                   layer_vjp_row(xr, gr, wv.data(), dxr, w ? dw.data() + c * n : nullptr,
                                 has_bias ? db.data() + c * n : nullptr, n, eps);
                 });
  int k = 1;
  if (w) finish_param_grad<T>(dw, chunks, n, outs[k++]);
  if (has_bias) finish_param_grad<T>(db, chunks, n, outs[k++]);
}

/** Allocates every output; true when there is nothing to compute (empty x). */
bool allocate(std::vector<array>& outputs) {
  for (auto& o : outputs) o.set_data(Storage::host(o.nbytes()));
  return outputs[0].size() == 0;
}

/** Fills the parameter gradients of an empty x with zeros. */
void zero_params(std::vector<array>& outputs) {
  for (size_t i = 1; i < outputs.size(); ++i)
    std::memset(outputs[i].data<char>(), 0, outputs[i].nbytes());
}

}  // namespace

void RMSNorm::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (allocate(outputs)) return;
  cpu::fast::dispatch_float(inputs[0].dtype(), "RMSNorm::eval_cpu", [&](auto tag) {
    using T = decltype(tag);
    rms_norm<T>(inputs[0], has_weight_ ? &inputs[1] : nullptr, outputs[0], eps_, false);
  });
}

void RMSNormSiLU::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (allocate(outputs)) return;
  cpu::fast::dispatch_float(inputs[0].dtype(), "RMSNormSiLU::eval_cpu", [&](auto tag) {
    using T = decltype(tag);
    rms_norm<T>(inputs[0], has_weight_ ? &inputs[1] : nullptr, outputs[0], eps_, true);
  });
}

void LayerNorm::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (allocate(outputs)) return;
  cpu::fast::dispatch_float(inputs[0].dtype(), "LayerNorm::eval_cpu", [&](auto tag) {
    using T = decltype(tag);
    const array* w = has_weight_ ? &inputs[1] : nullptr;
    const array* b = has_bias_ ? &inputs[has_weight_ ? 2 : 1] : nullptr;
    layer_norm<T>(inputs[0], w, b, outputs[0], eps_);
  });
}

void RMSNormVJP::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (allocate(outputs)) return zero_params(outputs);
  cpu::fast::dispatch_float(inputs[0].dtype(), "RMSNormVJP::eval_cpu", [&](auto tag) {
    using T = decltype(tag);
    rms_norm_vjp<T>(inputs[0], has_weight_ ? &inputs[1] : nullptr, inputs.back(), outputs, eps_);
  });
}

void LayerNormVJP::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (allocate(outputs)) return zero_params(outputs);
  cpu::fast::dispatch_float(inputs[0].dtype(), "LayerNormVJP::eval_cpu", [&](auto tag) {
    using T = decltype(tag);
    layer_norm_vjp<T>(inputs[0], has_weight_ ? &inputs[1] : nullptr, inputs.back(), has_bias_,
                      outputs, eps_);
  });
}

}  // namespace kiln::fast
