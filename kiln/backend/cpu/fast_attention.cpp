// eval_cpu of scaled_dot_product_attention and its gradient.
//
// Forward: FlashAttention's tiling (Dao et al. 2022; Dao 2023) on the CPU. Work items are
// (batch, query head, block of kQBlock queries) on the thread pool; each walks the keys in
// blocks (key_block) with an online softmax (running maximum and sum per query), so memory
// stays O(block) for any sequence length. The block products (S = Q K^T, O += P V and the
// backward's) are single-threaded OpenBLAS gemms. q, k and v are first made dense in the
// accumulation type (float32, float64 for float64): half inputs are converted once.
//
// Backward (FlashAttention-2's algorithm with the saved logsumexp): P = exp(S - lse) is
// recomputed block by block. dK and dV are accumulated by work items over (batch, key/value
// head, key block), which visit every query head of the group, so no two threads write the
// same rows; dQ by items over (batch, query head, query block). Each recomputes S and P.
#include <cblas.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/backend/cpu/fast_common.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/fast_primitives.h"

namespace kiln::fast {

namespace {

using cpu::fast::Acc;

constexpr int64_t kQBlock = 32;

/** Keys per block: the block products (32 x keys x head dim) stay at or below OpenBLAS's
 * single-thread size (65536 * 4 multiply-adds), so BLAS never starts its own threads inside
 * kiln's (as backend/cpu/matmul.cpp arranges for small batched products). */
inline int64_t key_block(int64_t D, int64_t Dv) {
  return std::clamp<int64_t>(8192 / std::max<int64_t>({D, Dv, 1}), 16, 128);
}

// C = alpha * op(A) op(B) + beta * C, row-major. Empty products (a head dim of 0) only
// scale C: BLAS rejects their leading dimensions.
inline void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                      float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                      const double* A, int64_t lda, const double* B, int64_t ldb, double beta,
                      double* C, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
}
template <typename A>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, A alpha, const A* a, int64_t lda,
          const A* b, int64_t ldb, A beta, A* c, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) c[i * ldc + j] = beta == A(0) ? A(0) : beta * c[i * ldc + j];
    return;
  }
  blas_gemm(ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

/** x[i] = exp(x[i] - m), vectorized for float through exp_f32 (compiled per ISA level). */
KILN_SIMD_CLONES void exp_shift(float* x, int64_t n, float m) {
  for (int64_t i = 0; i < n; ++i) x[i] = cpu::exp_f32(x[i] - m);
}
void exp_shift(double* x, int64_t n, double m) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i] - m);
}

/** Everything a work item needs, as dense row-major (B, H, L, D) arrays of A. */
template <typename A>
struct Problem {
  const A *q, *k, *v;
  int64_t B, Hq, Hk, Lq, Lk, D, Dv, R;
  A scale;
  MaskKind mask;
  const bool* bmask = nullptr;  // (B, Hq, Lq, Lk) through mstrides
  const A* amask = nullptr;
  int64_t mstrides[4] = {0, 0, 0, 0};
  const A* sinks = nullptr;  // (Hq)

  int64_t offset() const { return Lk - Lq; }  // causal: query i sees keys j <= i + offset
  const A* qrow(int64_t b, int64_t h, int64_t i) const { return q + ((b * Hq + h) * Lq + i) * D; }
  const A* krow(int64_t b, int64_t h, int64_t j) const { return k + ((b * Hk + h) * Lk + j) * D; }
  const A* vrow(int64_t b, int64_t h, int64_t j) const { return v + ((b * Hk + h) * Lk + j) * Dv; }

  /** The exclusive end of the keys query block [i0, i1) must visit: under a causal mask the
   * keys past the last query's diagonal are skipped, unless a row of the block sees no key
   * at all (its softmax is then uniform over every key, as with MLX's composite). */
  int64_t key_end(int64_t i0, int64_t i1) const {
    if (mask != MaskKind::causal || i0 + offset() < 0) return Lk;
    return std::min(Lk, i1 + offset());
  }

  /** S[i][j] for queries i0.. (ni) and keys j0.. (nj) of head h: scaled scores, masked.
   * `hidden[i * nj + j]` tells the bool or causal mask hid the score. */
  void scores(int64_t b, int64_t h, int64_t i0, int64_t ni, int64_t j0, int64_t nj, A* S,
              bool* hidden) const {
    const int64_t hk = h / R;
    const A low = std::numeric_limits<A>::lowest();
    gemm(false, true, ni, nj, D, scale, qrow(b, h, i0), D, krow(b, hk, j0), D, A(0), S, nj);
    for (int64_t i = 0; i < ni; ++i) {
      A* s = S + i * nj;
      bool* hd = hidden + i * nj;
      if (mask == MaskKind::causal) {
        const int64_t last = i0 + i + offset();  // the last visible key
        for (int64_t j = 0; j < nj; ++j) {
          hd[j] = j0 + j > last;
          if (hd[j]) s[j] = low;
        }
      } else if (mask == MaskKind::boolean) {
        const bool* m = bmask + b * mstrides[0] + h * mstrides[1] + (i0 + i) * mstrides[2];
        for (int64_t j = 0; j < nj; ++j) {
          hd[j] = !m[(j0 + j) * mstrides[3]];
          if (hd[j]) s[j] = low;
        }
      } else {
        std::memset(hd, 0, nj);
        if (mask == MaskKind::additive) {
          const A* m = amask + b * mstrides[0] + h * mstrides[1] + (i0 + i) * mstrides[2];
          for (int64_t j = 0; j < nj; ++j) s[j] += m[(j0 + j) * mstrides[3]];
        }
      }
    }
  }
};

template <typename A>
void attention_forward(const Problem<A>& p, A* out, A* lse) {
  const int64_t qblocks = (p.Lq + kQBlock - 1) / kQBlock;
  const int64_t kb = key_block(p.D, p.Dv);
  cpu::parallel_for(p.B * p.Hq * qblocks, 1, [&](size_t wb, size_t we) {
    std::vector<A> S(kQBlock * kb), m(kQBlock), l(kQBlock);
    std::unique_ptr<bool[]> hidden(new bool[kQBlock * kb]);
    for (size_t w = wb; w < we; ++w) {
      const int64_t b = w / (p.Hq * qblocks), h = (w / qblocks) % p.Hq;
      const int64_t i0 = (w % qblocks) * kQBlock, ni = std::min(kQBlock, p.Lq - i0);
      const int64_t hk = h / p.R;
      A* o = out + ((b * p.Hq + h) * p.Lq + i0) * p.Dv;
      std::fill(o, o + ni * p.Dv, A(0));
      // A sink joins each row's normalization as a score with no value.
      const A init_m = p.sinks ? p.sinks[h] : -std::numeric_limits<A>::infinity();
      std::fill(m.begin(), m.end(), init_m);
      std::fill(l.begin(), l.end(), p.sinks ? A(1) : A(0));
      const int64_t kend = p.key_end(i0, i0 + ni);
      for (int64_t j0 = 0; j0 < kend; j0 += kb) {
        const int64_t nj = std::min(kb, kend - j0);
        p.scores(b, h, i0, ni, j0, nj, S.data(), hidden.get());
        // Online softmax: S becomes P = exp(S - running max); O and l rescale to it.
        for (int64_t i = 0; i < ni; ++i) {
          A* s = S.data() + i * nj;
          const A mx = std::max(m[i], cpu::fast::max(s, nj));
          // A maximum of -inf (every score so far -inf): keep the running sums at zero.
          const A shift = mx == -std::numeric_limits<A>::infinity() ? A(0) : mx;
          const A alpha = std::exp(m[i] - shift);
          A* oi = o + i * p.Dv;
          if (alpha != A(1))
            for (int64_t d = 0; d < p.Dv; ++d) oi[d] *= alpha;
          exp_shift(s, nj, shift);
          l[i] = l[i] * alpha + cpu::fast::sum(s, nj);
          m[i] = mx;
        }
        gemm(false, false, ni, p.Dv, nj, A(1), S.data(), nj, p.vrow(b, hk, j0), p.Dv, A(1), o,
             p.Dv);
      }
      for (int64_t i = 0; i < ni; ++i) {
        A* oi = o + i * p.Dv;
        // No keys at all: the weights are empty and the output zero.
        const A inv = p.Lk == 0 ? A(0) : A(1) / l[i];
        for (int64_t d = 0; d < p.Dv; ++d) oi[d] *= inv;
        lse[(b * p.Hq + h) * p.Lq + i0 + i] = m[i] + std::log(l[i]);
      }
    }
  });
}

/** P, dP and dS of one (query block, key block) pair: P = exp(S - lse), dP = dO V^T,
 * dS = P (dP - Drow), zero where a mask hid the score (its score did not depend on q, k). */
template <typename A>
void block_grads(const Problem<A>& p, int64_t b, int64_t h, int64_t i0, int64_t ni, int64_t j0,
                 int64_t nj, const A* dout, const A* lse, const A* drow, A* P, A* dS,
                 bool* hidden) {
  p.scores(b, h, i0, ni, j0, nj, P, hidden);
  const int64_t hk = h / p.R;
  const int64_t row = (b * p.Hq + h) * p.Lq + i0;
  const A low = std::numeric_limits<A>::lowest();
  // dP = dO V^T into dS, then dS = P (dP - Drow).
  gemm(false, true, ni, nj, p.Dv, A(1), dout + row * p.Dv, p.Dv, p.vrow(b, hk, j0), p.Dv, A(0), dS,
       nj);
  for (int64_t i = 0; i < ni; ++i) {
    // A row that sees no key has lse = lowest + log(Lk), which rounds to lowest: its
    // weights are uniform, 1 / Lk.
    const bool none_visible = lse[row + i] <= low / 2;
    for (int64_t j = 0; j < nj; ++j) {
      const int64_t ij = i * nj + j;
      P[ij] = none_visible ? A(1) / A(p.Lk) : std::exp(P[ij] - lse[row + i]);
      dS[ij] = hidden[ij] ? A(0) : P[ij] * (dS[ij] - drow[row + i]);
    }
  }
}

template <typename A>
void attention_backward(const Problem<A>& p, const A* dout, const A* lse, const A* drow, A* dq,
                        A* dk, A* dv) {
  // dK, dV: (batch, kv head, key block) items over every query of the group.
  const int64_t kb = key_block(p.D, p.Dv);
  const int64_t kblocks = (p.Lk + kb - 1) / kb;
  cpu::parallel_for(p.B * p.Hk * kblocks, 1, [&](size_t wb, size_t we) {
    std::vector<A> P(kQBlock * kb), dS(kQBlock * kb);
    std::unique_ptr<bool[]> hidden(new bool[kQBlock * kb]);
    for (size_t w = wb; w < we; ++w) {
      const int64_t b = w / (p.Hk * kblocks), hk = (w / kblocks) % p.Hk;
      const int64_t j0 = (w % kblocks) * kb, nj = std::min(kb, p.Lk - j0);
      A* dkb = dk + ((b * p.Hk + hk) * p.Lk + j0) * p.D;
      A* dvb = dv + ((b * p.Hk + hk) * p.Lk + j0) * p.Dv;
      std::fill(dkb, dkb + nj * p.D, A(0));
      std::fill(dvb, dvb + nj * p.Dv, A(0));
      for (int64_t h = hk * p.R; h < (hk + 1) * p.R; ++h) {
        for (int64_t i0 = 0; i0 < p.Lq; i0 += kQBlock) {
          const int64_t ni = std::min(kQBlock, p.Lq - i0);
          if (p.key_end(i0, i0 + ni) <= j0) continue;  // causal: the block sees none of these
          block_grads(p, b, h, i0, ni, j0, nj, dout, lse, drow, P.data(), dS.data(), hidden.get());
          const int64_t row = (b * p.Hq + h) * p.Lq + i0;
          // dV += P^T dO; dK += scale dS^T Q.
          gemm(true, false, nj, p.Dv, ni, A(1), P.data(), nj, dout + row * p.Dv, p.Dv, A(1), dvb,
               p.Dv);
          gemm(true, false, nj, p.D, ni, p.scale, dS.data(), nj, p.qrow(b, h, i0), p.D, A(1), dkb,
               p.D);
        }
      }
    }
  });
  // dQ: (batch, query head, query block) items over the keys they see.
  const int64_t qblocks = (p.Lq + kQBlock - 1) / kQBlock;
  cpu::parallel_for(p.B * p.Hq * qblocks, 1, [&](size_t wb, size_t we) {
    std::vector<A> P(kQBlock * kb), dS(kQBlock * kb);
    std::unique_ptr<bool[]> hidden(new bool[kQBlock * kb]);
    for (size_t w = wb; w < we; ++w) {
      const int64_t b = w / (p.Hq * qblocks), h = (w / qblocks) % p.Hq;
      const int64_t i0 = (w % qblocks) * kQBlock, ni = std::min(kQBlock, p.Lq - i0);
      const int64_t hk = h / p.R;
      A* dqb = dq + ((b * p.Hq + h) * p.Lq + i0) * p.D;
      std::fill(dqb, dqb + ni * p.D, A(0));
      const int64_t kend = p.key_end(i0, i0 + ni);
      for (int64_t j0 = 0; j0 < kend; j0 += kb) {
        const int64_t nj = std::min(kb, kend - j0);
        block_grads(p, b, h, i0, ni, j0, nj, dout, lse, drow, P.data(), dS.data(), hidden.get());
        // dQ += scale dS K.
        gemm(false, false, ni, p.D, nj, p.scale, dS.data(), nj, p.krow(b, hk, j0), p.D, A(1), dqb,
             p.D);
      }
    }
  });
}

/** The problem's shapes and masks from the primitive's inputs (q, k, v, [mask], [sinks]),
 * converting q, k, v (and an additive mask and the sinks) to dense arrays of A, kept alive in
 * `keep`. */
template <typename A>
Problem<A> make_problem(const std::vector<array>& in, float scale, MaskKind mask, bool has_sinks,
                        std::vector<array>& keep) {
  const Dtype acc = dtype_v<A>;
  for (int i = 0; i < 3; ++i) keep.push_back(cpu::fast::dense_as(in[i], acc));
  Problem<A> p;
  p.q = keep[0].data<A>();
  p.k = keep[1].data<A>();
  p.v = keep[2].data<A>();
  p.B = in[0].shape(0);
  p.Hq = in[0].shape(1);
  p.Lq = in[0].shape(2);
  p.D = in[0].shape(3);
  p.Hk = in[1].shape(1);
  p.Lk = in[1].shape(2);
  p.Dv = in[2].shape(3);
  p.R = p.Hq / p.Hk;
  p.scale = static_cast<A>(scale);
  p.mask = mask;
  if (mask == MaskKind::boolean || mask == MaskKind::additive) {
    // The mask stays a broadcast view (no copy); an additive one is converted per element.
    const array& m = in[3];
    if (mask == MaskKind::additive && m.dtype() != acc) {
      array c(Storage::host(m.data_size() * sizeof(A)), {static_cast<int>(m.data_size())}, acc);
      array flat = m;
      // Convert the underlying elements once, keeping the view's strides.
      cpu::fast::dispatch_float(m.dtype(), "ScaledDotProductAttention", [&](auto tag) {
        using T = decltype(tag);
        cpu::fast::load(m.data<T>(), c.data<A>(), static_cast<int64_t>(m.data_size()));
      });
      keep.push_back(c);
      p.amask = c.data<A>();
    } else if (mask == MaskKind::additive) {
      p.amask = m.data<A>();
    } else {
      p.bmask = m.data<bool>();
    }
    for (int i = 0; i < 4; ++i) p.mstrides[i] = m.strides(i);
  }
  if (has_sinks) {
    keep.push_back(cpu::fast::dense_as(in.back(), acc));
    p.sinks = keep.back().data<A>();
  }
  return p;
}

/** `src` (dense, A) written into `dst` (allocated, of dst's dtype). */
template <typename A>
void store_as(const A* src, array& dst) {
  cpu::fast::dispatch_float(dst.dtype(), "ScaledDotProductAttention", [&](auto tag) {
    using T = decltype(tag);
    cpu::fast::store(src, dst.data<T>(), static_cast<int64_t>(dst.size()));
  });
}

template <typename A>
void sdpa_forward(const std::vector<array>& in, std::vector<array>& outs, float scale,
                  MaskKind mask, bool has_sinks) {
  std::vector<array> keep;
  const Problem<A> p = make_problem<A>(in, scale, mask, has_sinks, keep);
  array& out = outs[0];
  A* lse = outs[1].data<A>();
  if (out.dtype() == dtype_v<A>) {
    attention_forward(p, out.data<A>(), lse);
  } else {
    std::vector<A> tmp(out.size());
    attention_forward(p, tmp.data(), lse);
    store_as(tmp.data(), out);
  }
}

template <typename A>
void sdpa_backward(const std::vector<array>& in, std::vector<array>& outs, float scale,
                   MaskKind mask, bool has_sinks) {
  std::vector<array> keep;
  const size_t np = in.size() - 3;  // primals; then out, lse, dout
  const std::vector<array> primals(in.begin(), in.begin() + np);
  const Problem<A> p = make_problem<A>(primals, scale, mask, has_sinks, keep);
  const Dtype acc = dtype_v<A>;
  const array o = cpu::fast::dense_as(in[np], acc), lse = cpu::fast::dense_as(in[np + 1], acc);
  const array dout = cpu::fast::dense_as(in[np + 2], acc);
  // Drow[i] = dO_i . O_i: the softmax's correction term per query.
  const int64_t rows = p.B * p.Hq * p.Lq;
  std::vector<A> drow(rows);
  cpu::parallel_for(rows, 256, [&](size_t b, size_t e) {
    for (size_t r = b; r < e; ++r)
      drow[r] = cpu::fast::dot(dout.data<A>() + r * p.Dv, o.data<A>() + r * p.Dv, p.Dv);
  });
  std::vector<A> dq(p.B * p.Hq * p.Lq * p.D), dk(p.B * p.Hk * p.Lk * p.D),
      dv(p.B * p.Hk * p.Lk * p.Dv);
  attention_backward(p, dout.data<A>(), lse.data<A>(), drow.data(), dq.data(), dk.data(),
                     dv.data());
  store_as(dq.data(), outs[0]);
  store_as(dk.data(), outs[1]);
  store_as(dv.data(), outs[2]);
  if (has_sinks) {
    // d sink_h = -sum over rows of head h of exp(sink_h - lse) Drow.
    std::vector<A> ds(p.Hq, A(0));
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < p.Hq; ++h)
        for (int64_t i = 0; i < p.Lq; ++i) {
          const int64_t r = (b * p.Hq + h) * p.Lq + i;
          ds[h] -= std::exp(p.sinks[h] - lse.data<A>()[r]) * drow[r];
        }
    store_as(ds.data(), outs[3]);
  }
}

}  // namespace

void ScaledDotProductAttention::eval_cpu(const std::vector<array>& inputs,
                                         std::vector<array>& outputs) {
  for (auto& o : outputs) o.set_data(Storage::host(o.nbytes()));
  if (outputs[0].size() == 0 && outputs[1].size() == 0) return;
  if (inputs[0].dtype() == float64) {
    sdpa_forward<double>(inputs, outputs, scale_, mask_, has_sinks_);
  } else {
    sdpa_forward<float>(inputs, outputs, scale_, mask_, has_sinks_);
  }
}

void ScaledDotProductAttentionVJP::eval_cpu(const std::vector<array>& inputs,
                                            std::vector<array>& outputs) {
  for (auto& o : outputs) o.set_data(Storage::host(o.nbytes()));
  if (inputs[0].dtype() == float64) {
    sdpa_backward<double>(inputs, outputs, scale_, mask_, has_sinks_);
  } else {
    sdpa_backward<float>(inputs, outputs, scale_, mask_, has_sinks_);
  }
}

}  // namespace kiln::fast
