// rms_norm (and fused_rms_silu) and layer_norm on the GPU, forward and backward
// (backend/cuda/fast_norm.cpp).
//
// Bandwidth-bound: each element is read once and written once. A group of threads owns a
// row (see rows.cuh), so the statistics (a sum of squares, or the mean and then the centred
// sum of squares) and the output need one read from global memory. norm_fwd and norm_vjp
// keep the row in registers (VPT 16-byte vectors per thread). rms_norm_fwd_staged (rows
// that need a whole 1024-thread block, three of which fit in shared memory) copies the
// next rows into shared memory while it computes on the current one, and reads each pass
// from there. Rows too long for these use the _looped kernels, which read the row again for
// each pass (mostly from L2).
//
// fused_rms_silu runs the same forward kernels with SILU set: h * sigmoid(h) before the
// output is rounded.
//
// The backward groups are persistent: group i handles rows i, i + G, ..., loading its next
// row while it reduces the current one, and since a thread owns the same columns in every
// row, it sums the parameter gradients (g * xhat for the weight, g for the bias) in
// registers; each group then writes one row of partial sums, and sum_partials adds the G
// rows. Long rows take norm_vjp_looped for dx (saving each row's
// mean and 1/std) and norm_param_grad, which sums g * xhat down column strips.
//
// The row helpers take accessors: X(v) returns vector v of the thread's share of the row
// (zeros past n), from registers or from shared memory.
#pragma once

#include "kiln/backend/cuda/device/norm/rows.cuh"

namespace kiln {

/** Largest block of the row kernels. */
constexpr int kRowBlock = 1024;
/** Largest block of norm_vjp, whose threads hold x, g and two gradient sums per element:
 * up to 128 registers each. */
constexpr int kRowBlockBwd = 512;

struct NormArgs {
  long long rows;
  long long n;
  int group;  // threads per row
  bool vec;   // x, y, w, b (and g, dx) 16-byte aligned rows, n a multiple of the vector
  bool has_w;
  bool has_b;  // forward: a bias; backward: its gradient is wanted
  float eps;
};

namespace norm_detail {

template <typename T, int N>
__device__ inline Vec<T, N> fill(T v) {
  Vec<T, N> x;
#pragma unroll
  for (int k = 0; k < N; ++k) x.v[k] = v;
  return x;
}

/** The thread's VPT vectors of a parameter row p (w or b; `fallback` when absent or past n). */
template <int VPT, int N, typename T>
__device__ inline void load_param(Vec<T, N> (&out)[VPT], const T* p, bool has, T fallback,
                                  const NormArgs& a, int lane) {
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const long long e = rows::vec_elem(v, a.group, lane, N);
    out[v] = has && e < a.n ? load_vec<N>(p + e) : fill<T, N>(fallback);
  }
}

/** The statistics of one row, (mean, 1/std), mean 0 for RMS. All threads of the block call
 * it. */
template <bool LAYER, int VPT, int N, typename T, typename A, typename X>
__device__ inline void row_stats(X x, const NormArgs& a, int lane, A& mean, A& inv) {
  const A n = static_cast<A>(a.n);
  A s[1] = {A(0)};
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const Vec<T, N> xv = x(v);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const A f = rows::to_acc<A>(xv.v[k]);
      s[0] += LAYER ? f : f * f;  // padding elements are zero
    }
  }
  rows::group_reduce<false>(s, a.group);
  if constexpr (LAYER) {
    mean = s[0] / n;
    A q[1] = {A(0)};
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
      const bool valid = rows::vec_elem(v, a.group, lane, N) < a.n;  // rows of whole vectors
      const Vec<T, N> xv = x(v);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const A d = rows::to_acc<A>(xv.v[k]) - mean;
        if (valid) q[0] += d * d;
      }
    }
    rows::group_reduce<false>(q, a.group);
    inv = rows::rsqrt_acc(q[0] / n + A(a.eps));
  } else {
    mean = A(0);
    inv = rows::rsqrt_acc(s[0] / n + A(a.eps));
  }
}

/** h * sigmoid(h) (fused_rms_silu's activation) when SILU, else h. For 16-bit T the
 * reciprocal is rcp.approx (one instruction, about 1 ulp of float, far below the result's
 * rounding) instead of a division. */
template <bool SILU, typename T, typename A>
__device__ inline A activate(A h) {
  if constexpr (!SILU) {
    return h;
  } else if constexpr (is_half_v<T>) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + rows::exp_diff<T>(0.0f, h)));
    return h * r;
  } else {
    return h / (A(1) + rows::exp_diff<T>(A(0), h));
  }
}

/** Writes y = (x - mean) * inv * w + b for the thread's vectors of a row (through SiLU when
 * SILU). */
template <bool LAYER, bool SILU, int VPT, typename T, typename A, typename X, typename W,
          typename B>
__device__ inline void row_out(X x, W w, B b, A mean, A inv, T* y, const NormArgs& a, int lane) {
  constexpr int N = rows::kVec<T>;
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const long long e = rows::vec_elem(v, a.group, lane, N);
    if (e >= a.n) break;
    const Vec<T, N> xv = x(v), wv = w(v);
    Vec<T, N> out;
    if constexpr (LAYER) {
      const Vec<T, N> bv = b(v);
#pragma unroll
      for (int k = 0; k < N; ++k)
        out.v[k] =
            rows::from_acc<T>((rows::to_acc<A>(xv.v[k]) - mean) * inv * rows::to_acc<A>(wv.v[k]) +
                              rows::to_acc<A>(bv.v[k]));
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k)
        out.v[k] = rows::from_acc<T>(
            activate<SILU, T>(rows::to_acc<A>(xv.v[k]) * inv * rows::to_acc<A>(wv.v[k])));
    }
    store_vec<N>(y + e, out);
  }
}

}  // namespace norm_detail

/** y = (x - mean) / std * w + b (LAYER), or x / rms * w (then through SiLU with SILU): one
 * group per row, the row in registers (VPT vectors per thread, VPT * group * N >= n). */
template <typename T, int VPT, bool LAYER, bool SILU = false>
__global__ void __launch_bounds__(kRowBlock)
    norm_fwd(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
             T* __restrict__ y, const __grid_constant__ NormArgs a) {
  using A = rows::Acc<T>;
  constexpr int N = rows::kVec<T>;
  const rows::RowPos p = rows::row_pos(a.rows, a.group);
  const T* xr = x + (p.active ? p.row : 0) * a.n;
  Vec<T, N> xv[VPT];
#pragma unroll
  for (int v = 0; v < VPT; ++v)
    xv[v] = rows::load_full<N>(xr, p.active ? a.n : 0, rows::vec_elem(v, a.group, p.lane, N));
  auto xs = [&](int v) { return xv[v]; };
  A mean, inv;
  norm_detail::row_stats<LAYER, VPT, N, T>(xs, a, p.lane, mean, inv);
  if (!p.active) return;
  auto param = [&](const T* q, bool has, T fallback) {
    return [=, &a](int v) {
      const long long e = rows::vec_elem(v, a.group, p.lane, N);
      return has ? load_vec<N>(q + e) : norm_detail::fill<T, N>(fallback);
    };
  };
  norm_detail::row_out<LAYER, SILU, VPT>(xs, param(w, a.has_w, rows::one<T>()),
                                         param(b, a.has_b, rows::zero<T>()), mean, inv,
                                         y + p.row * a.n, a, p.lane);
}

/**
 * rms_norm's norm_fwd through shared memory (rows.cuh's staged tiles): a persistent block of
 * R groups computes on tiles of R rows while the next tiles are copied in, reading each pass
 * from shared memory. The thread's weight vectors stay in registers across rows (layer_norm's
 * weight and bias together would spill at VPT 4).
 */
template <typename T, int VPT, bool SILU = false>
__global__ void __launch_bounds__(kRowBlock)
    rms_norm_fwd_staged(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                        const __grid_constant__ NormArgs a) {
  using A = rows::Acc<T>;
  constexpr int N = rows::kVec<T>;
  const int lane = threadIdx.x % a.group, gi = threadIdx.x / a.group;
  Vec<T, N> wv[VPT];
  norm_detail::load_param(wv, w, a.has_w, rows::one<T>(), a, lane);
  auto weight = [&](int v) { return wv[v]; };
  const rows::RowRing<T> ring{rows::dynamic_smem<T>(), x, a.rows, a.n,
                              static_cast<int>(blockDim.x) / a.group};
  rows::staged_tiles(ring, [&](int stage, long long t) {
    const long long row = t * ring.R + gi;
    const T* xr = ring.slot(stage) + gi * a.n;
    auto xs = [&](int v) {
      return rows::load_full<N>(xr, a.n, rows::vec_elem(v, a.group, lane, N));
    };
    A mean, inv;
    norm_detail::row_stats<false, VPT, N, T>(xs, a, lane, mean, inv);
    if (row >= a.rows) return;
    rows::opaque(wv);  // converted to float per row, not once into twice the registers
    norm_detail::row_out<false, SILU, VPT>(xs, weight, weight, mean, inv, y + row * a.n, a, lane);
  });
}

/** norm_fwd for rows longer than the registers hold: the row is read once per pass. */
template <typename T, bool LAYER, bool SILU = false>
__global__ void __launch_bounds__(kRowBlock)
    norm_fwd_looped(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                    T* __restrict__ y, const __grid_constant__ NormArgs a) {
  using A = rows::Acc<T>;
  constexpr int N = rows::kVec<T>;
  const rows::RowPos p = rows::row_pos(a.rows, a.group);
  const T* xr = x + (p.active ? p.row : 0) * a.n;
  const long long step = static_cast<long long>(a.group) * N;
  const long long end = p.active ? a.n : 0;
  const A n = static_cast<A>(a.n);
  A s[1] = {A(0)};
  for (long long e = p.lane * N; e < end; e += step) {
    const Vec<T, N> xv = rows::load_part<N>(xr, a.n, e, a.vec, rows::zero<T>());
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const A f = rows::to_acc<A>(xv.v[k]);
      s[0] += LAYER ? f : f * f;
    }
  }
  rows::group_reduce<false>(s, a.group);
  A mean = 0, inv;
  if constexpr (LAYER) {
    mean = s[0] / n;
    A q[1] = {A(0)};
    for (long long e = p.lane * N; e < end; e += step) {
      const Vec<T, N> xv = rows::load_part<N>(xr, a.n, e, a.vec, rows::zero<T>());
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const A d = rows::to_acc<A>(xv.v[k]) - mean;
        if (e + k < a.n) q[0] += d * d;
      }
    }
    rows::group_reduce<false>(q, a.group);
    inv = rows::rsqrt_acc(q[0] / n + A(a.eps));
  } else {
    inv = rows::rsqrt_acc(s[0] / n + A(a.eps));
  }
  T* yr = y + (p.active ? p.row : 0) * a.n;
  for (long long e = p.lane * N; e < end; e += step) {
    const Vec<T, N> xv = rows::load_part<N>(xr, a.n, e, a.vec, rows::zero<T>());
    const Vec<T, N> wv = a.has_w ? rows::load_part<N>(w, a.n, e, a.vec, rows::one<T>())
                                 : norm_detail::fill<T, N>(rows::one<T>());
    const Vec<T, N> bv = a.has_b ? rows::load_part<N>(b, a.n, e, a.vec, rows::zero<T>())
                                 : norm_detail::fill<T, N>(rows::zero<T>());
    Vec<T, N> out;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const A f = (rows::to_acc<A>(xv.v[k]) - mean) * inv * rows::to_acc<A>(wv.v[k]) +
                  rows::to_acc<A>(bv.v[k]);
      out.v[k] = rows::from_acc<T>(norm_detail::activate<SILU, T>(f));
    }
    rows::store_part<N>(yr, a.n, e, a.vec, out);
  }
}

namespace norm_detail {

/**
 * The gradient of one row: given accessors to x, g and w, writes dx and adds the row's
 * parameter-gradient terms to dw (g * xhat) and db (g). Statistics per rows.cuh's
 * reductions: RMS: dx = inv (w g) - x inv^3 mean(w g x); LAYER: dx = inv (w g - mean(w g) -
 * xhat mean(w g xhat)). All threads of the block call it.
 */
template <bool LAYER, int VPT, int N, typename T, typename A, typename X, typename G, typename W>
__device__ inline void row_vjp(X x, G g, W w, T* __restrict__ dxr, bool active, int lane,
                               const NormArgs& a, A (&dw)[VPT][N], A (&db)[VPT][N]) {
  const A n = static_cast<A>(a.n);
  A mean = 0, inv, c1 = 0, c2;
  if constexpr (LAYER) {
    A s[1] = {A(0)};
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
      const Vec<T, N> xv = x(v);
#pragma unroll
      for (int k = 0; k < N; ++k) s[0] += rows::to_acc<A>(xv.v[k]);
    }
    rows::group_reduce<false>(s, a.group);
    mean = s[0] / n;
    // Centred sums: the variance, sum(w g) and sum(w g (x - mean)).
    A t[3] = {A(0), A(0), A(0)};
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
      const bool valid = rows::vec_elem(v, a.group, lane, N) < a.n;  // rows of whole vectors
      const Vec<T, N> xv = x(v), gv = g(v), wv = w(v);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        if (!valid) continue;
        const A d = rows::to_acc<A>(xv.v[k]) - mean;
        const A wg = rows::to_acc<A>(wv.v[k]) * rows::to_acc<A>(gv.v[k]);
        t[0] += d * d;
        t[1] += wg;
        t[2] += wg * d;
      }
    }
    rows::group_reduce<false>(t, a.group);
    inv = rows::rsqrt_acc(t[0] / n + A(a.eps));
    c1 = t[1] / n;        // mean(w g)
    c2 = t[2] * inv / n;  // mean(w g xhat)
  } else {
    A t[2] = {A(0), A(0)};
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
      const Vec<T, N> xv = x(v), gv = g(v), wv = w(v);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const A xf = rows::to_acc<A>(xv.v[k]);
        t[0] += xf * xf;
        t[1] += rows::to_acc<A>(wv.v[k]) * rows::to_acc<A>(gv.v[k]) * xf;
      }
    }
    rows::group_reduce<false>(t, a.group);
    inv = rows::rsqrt_acc(t[0] / n + A(a.eps));
    c2 = t[1] / n * inv * inv;  // mean(w g x) inv^2: dx = inv (w g - x c2)
  }
  if (!active) return;
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const long long e = rows::vec_elem(v, a.group, lane, N);
    if (e >= a.n) break;
    const Vec<T, N> xv = x(v), gv = g(v), wv = w(v);
    Vec<T, N> out;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const A xhat = (rows::to_acc<A>(xv.v[k]) - mean) * inv;
      const A gf = rows::to_acc<A>(gv.v[k]);
      const A wg = rows::to_acc<A>(wv.v[k]) * gf;
      const A d = LAYER ? inv * (wg - c1 - xhat * c2) : inv * (wg - rows::to_acc<A>(xv.v[k]) * c2);
      out.v[k] = rows::from_acc<T>(d);
      dw[v][k] += gf * xhat;
      if (LAYER) db[v][k] += gf;
    }
    store_vec<N>(dxr + e, out);
  }
}

/** Writes a group's parameter-gradient sums as row `gid` of pw and pb. */
template <bool LAYER, int VPT, int N, typename A>
__device__ inline void write_partials(const A (&dw)[VPT][N], const A (&db)[VPT][N], A* pw, A* pb,
                                      long long gid, const NormArgs& a, int lane) {
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const long long e = rows::vec_elem(v, a.group, lane, N);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (e + k >= a.n) continue;
      if (a.has_w) pw[gid * a.n + e + k] = dw[v][k];
      if (LAYER && a.has_b) pb[gid * a.n + e + k] = db[v][k];
    }
  }
}

}  // namespace norm_detail

/**
 * The backward of rms_norm (LAYER false) and layer_norm with the row in registers: dx, and
 * each group's partial sums of the weight and bias gradients (pw, pb: G rows of n,
 * accumulation type; G = gridDim.x * groups per block). Rows aligned as norm_fwd's.
 */
template <typename T, int VPT, bool LAYER>
__global__ void __launch_bounds__(kRowBlockBwd)
    norm_vjp(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ g,
             T* __restrict__ dx, rows::Acc<T>* __restrict__ pw, rows::Acc<T>* __restrict__ pb,
             const __grid_constant__ NormArgs a) {
  using A = rows::Acc<T>;
  constexpr int N = rows::kVec<T>;
  const int per_block = blockDim.x / a.group;
  const int lane = threadIdx.x % a.group;
  const long long gid = static_cast<long long>(blockIdx.x) * per_block + threadIdx.x / a.group;
  const long long G = static_cast<long long>(gridDim.x) * per_block;
  A dw[VPT][N], db[VPT][N];
#pragma unroll
  for (int v = 0; v < VPT; ++v)
#pragma unroll
    for (int k = 0; k < N; ++k) dw[v][k] = db[v][k] = A(0);
  // Row `base + group index`, zeros past the last row.
  auto load = [&](long long base, Vec<T, N>(&xv)[VPT], Vec<T, N>(&gv)[VPT]) {
    const long long row = base + threadIdx.x / a.group;
    const long long off = (row < a.rows ? row : 0) * a.n, len = row < a.rows ? a.n : 0;
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
      const long long e = rows::vec_elem(v, a.group, lane, N);
      xv[v] = rows::load_full<N>(x + off, len, e);
      gv[v] = rows::load_full<N>(g + off, len, e);
    }
  };
  Vec<T, N> xv[VPT], gv[VPT];
  load(static_cast<long long>(blockIdx.x) * per_block, xv, gv);
  // Every group of a block runs the same number of iterations (their reductions sync). The
  // next rows' x and g are loaded before this row's reductions: in flight while they run.
  for (long long base = static_cast<long long>(blockIdx.x) * per_block; base < a.rows; base += G) {
    Vec<T, N> xn[VPT], gn[VPT];
    load(base + G, xn, gn);
    const long long row = base + threadIdx.x / a.group;
    const bool active = row < a.rows;
    norm_detail::row_vjp<LAYER, VPT, N, T>(
        [&](int v) { return xv[v]; }, [&](int v) { return gv[v]; },
        [&](int v) {
          const long long e = rows::vec_elem(v, a.group, lane, N);
          return a.has_w && e < a.n ? load_vec<N>(w + e) : norm_detail::fill<T, N>(rows::one<T>());
        },
        dx + (active ? row : 0) * a.n, active, lane, a, dw, db);
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
      xv[v] = xn[v];
      gv[v] = gn[v];
    }
  }
  norm_detail::write_partials<LAYER>(dw, db, pw, pb, gid, a, lane);
}

/**
 * dx of the backward for long rows, one group per row, reading x and g once per pass; saves
 * each row's mean (LAYER) and 1/std in `stats` (2 per row) for norm_param_grad.
 */
template <typename T, bool LAYER>
__global__ void __launch_bounds__(kRowBlock)
    norm_vjp_looped(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ g,
                    T* __restrict__ dx, rows::Acc<T>* __restrict__ stats,
                    const __grid_constant__ NormArgs a) {
  using A = rows::Acc<T>;
  constexpr int N = rows::kVec<T>;
  const rows::RowPos p = rows::row_pos(a.rows, a.group);
  const long long off = (p.active ? p.row : 0) * a.n;
  const long long step = static_cast<long long>(a.group) * N;
  const long long end = p.active ? a.n : 0;
  const A n = static_cast<A>(a.n);
  auto wvec = [&](long long e) {
    return a.has_w ? rows::load_part<N>(w, a.n, e, a.vec, rows::one<T>())
                   : norm_detail::fill<T, N>(rows::one<T>());
  };
  A mean = 0, inv, c1 = 0, c2;
  if constexpr (LAYER) {
    A s[1] = {A(0)};
    for (long long e = p.lane * N; e < end; e += step) {
      const Vec<T, N> xv = rows::load_part<N>(x + off, a.n, e, a.vec, rows::zero<T>());
#pragma unroll
      for (int k = 0; k < N; ++k) s[0] += rows::to_acc<A>(xv.v[k]);
    }
    rows::group_reduce<false>(s, a.group);
    mean = s[0] / n;
    A t[3] = {A(0), A(0), A(0)};
    for (long long e = p.lane * N; e < end; e += step) {
      const Vec<T, N> xv = rows::load_part<N>(x + off, a.n, e, a.vec, rows::zero<T>());
      const Vec<T, N> gv = rows::load_part<N>(g + off, a.n, e, a.vec, rows::zero<T>());
      const Vec<T, N> wv = wvec(e);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        if (e + k >= a.n) continue;
        const A d = rows::to_acc<A>(xv.v[k]) - mean;
        const A wg = rows::to_acc<A>(wv.v[k]) * rows::to_acc<A>(gv.v[k]);
        t[0] += d * d;
        t[1] += wg;
        t[2] += wg * d;
      }
    }
    rows::group_reduce<false>(t, a.group);
    inv = rows::rsqrt_acc(t[0] / n + A(a.eps));
    c1 = t[1] / n;
    c2 = t[2] * inv / n;
  } else {
    A t[2] = {A(0), A(0)};
    for (long long e = p.lane * N; e < end; e += step) {
      const Vec<T, N> xv = rows::load_part<N>(x + off, a.n, e, a.vec, rows::zero<T>());
      const Vec<T, N> gv = rows::load_part<N>(g + off, a.n, e, a.vec, rows::zero<T>());
      const Vec<T, N> wv = wvec(e);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const A xf = rows::to_acc<A>(xv.v[k]);
        t[0] += xf * xf;
        t[1] += rows::to_acc<A>(wv.v[k]) * rows::to_acc<A>(gv.v[k]) * xf;
      }
    }
    rows::group_reduce<false>(t, a.group);
    inv = rows::rsqrt_acc(t[0] / n + A(a.eps));
    c2 = t[1] / n * inv * inv;
  }
  if (!p.active) return;
  if (p.lane == 0) {
    stats[2 * p.row] = mean;
    stats[2 * p.row + 1] = inv;
  }
  for (long long e = p.lane * N; e < end; e += step) {
    const Vec<T, N> xv = rows::load_part<N>(x + off, a.n, e, a.vec, rows::zero<T>());
    const Vec<T, N> gv = rows::load_part<N>(g + off, a.n, e, a.vec, rows::zero<T>());
    const Vec<T, N> wv = wvec(e);
    Vec<T, N> out;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const A xf = rows::to_acc<A>(xv.v[k]);
      const A wg = rows::to_acc<A>(wv.v[k]) * rows::to_acc<A>(gv.v[k]);
      const A d = LAYER ? inv * (wg - c1 - (xf - mean) * inv * c2) : inv * (wg - xf * c2);
      out.v[k] = rows::from_acc<T>(d);
    }
    rows::store_part<N>(dx + off, a.n, e, a.vec, out);
  }
}

/** Threads of norm_param_grad and sum_partials blocks: 32 columns by 8 row slices. */
constexpr int kColTile = 32;
constexpr int kColSlices = 8;

/**
 * Partial weight (g * xhat) and bias (g) gradients of long rows down column strips: block
 * (x, y) sums columns [32 x, 32 x + 32) over rows [y * chunk, (y + 1) * chunk) into row y of
 * pw and pb (gridDim.y rows of n).
 */
template <typename T, bool LAYER>
__global__ void __launch_bounds__(kColTile* kColSlices)
    norm_param_grad(const T* __restrict__ x, const T* __restrict__ g,
                    const rows::Acc<T>* __restrict__ stats, rows::Acc<T>* __restrict__ pw,
                    rows::Acc<T>* __restrict__ pb, long long rows, long long n, long long chunk,
                    bool want_w, bool want_b) {
  using A = rows::Acc<T>;
  __shared__ A sw[kColSlices][kColTile + 1], sb[kColSlices][kColTile + 1];
  const long long col = static_cast<long long>(blockIdx.x) * kColTile + threadIdx.x;
  const long long r0 = static_cast<long long>(blockIdx.y) * chunk;
  const long long r1 = r0 + chunk < rows ? r0 + chunk : rows;
  A dw = 0, db = 0;
  if (col < n) {
    for (long long r = r0 + threadIdx.y; r < r1; r += kColSlices) {
      const A gf = rows::to_acc<A>(g[r * n + col]);
      const A xhat = (rows::to_acc<A>(x[r * n + col]) - stats[2 * r]) * stats[2 * r + 1];
      dw += gf * xhat;
      db += gf;
    }
  }
  sw[threadIdx.y][threadIdx.x] = dw;
  sb[threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && col < n) {
    for (int i = 1; i < kColSlices; ++i) {
      dw += sw[i][threadIdx.x];
      db += sb[i][threadIdx.x];
    }
    if (want_w) pw[blockIdx.y * n + col] = dw;
    if (LAYER && want_b) pb[blockIdx.y * n + col] = db;
  }
}

/** out[c] = sum over i < parts of partial[i * n + c], rounded once to T. */
template <typename T>
__global__ void __launch_bounds__(kColTile* kColSlices)
    sum_partials(const rows::Acc<T>* __restrict__ partial, T* __restrict__ out, long long parts,
                 long long n) {
  using A = rows::Acc<T>;
  __shared__ A s[kColSlices][kColTile + 1];
  const long long col = static_cast<long long>(blockIdx.x) * kColTile + threadIdx.x;
  A acc = 0;
  if (col < n)
    for (long long i = threadIdx.y; i < parts; i += kColSlices) acc += partial[i * n + col];
  s[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < n) {
    for (int i = 1; i < kColSlices; ++i) acc += s[i][threadIdx.x];
    out[col] = rows::from_acc<T>(acc);
  }
}

}  // namespace kiln
