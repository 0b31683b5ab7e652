// The row kernels alone (kiln's device headers through nvcc, no kiln build), bfloat16:
// rms_norm (and fused_rms_silu's kernels, checked against rms_norm's output through SiLU)
// and layer_norm forward and backward, softmax forward and backward, cross_entropy forward
// and backward, as the register kernels (blocks of groups, the row in registers)
// and, for rms_norm and softmax forward, as the staged ones (persistent blocks, tiles of rows
// copied into shared memory ahead of the computation; kiln uses them for rows that need a
// whole 1024-thread block) at several tile sizes. Staged outputs are compared with the
// register kernels' (max |difference|); CUDA-event medians (9 rounds of 100 launches) and
// the device copy bandwidth in the same run.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. benchmarks/gpu/rows_kernels.cu -o rk && ./rk [tile KB]
// (`./rk prof` runs each kernel once on the first two shapes, for ncu.)
#include <cuda_runtime.h>

#include <cmath>
#include <random>

#include "benchmarks/gpu/harness.cuh"
#include "kiln/backend/cuda/device/loss/cross_entropy.cuh"
#include "kiln/backend/cuda/device/norm/norm.cuh"
#include "kiln/backend/cuda/device/reduce_softmax.cuh"

using namespace kiln;
using T = bfloat16;
constexpr int N = 8;  // bfloat16 elements per 16-byte vector

static int next_pow2(long long v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}
static int clampi(long long v, int lo, int hi) {
  return static_cast<int>(v < lo ? lo : v > hi ? hi : v);
}

// Mirrors fast_common.h: plan_rows (register kernels) and plan_staged.
struct Plan {
  int group, vpt, block;
  size_t smem;
};
static Plan plan_rows(long long n, int max_vpt) {
  const long long nv = (n + N - 1) / N;
  Plan p;
  p.group = clampi(next_pow2((nv + max_vpt - 1) / max_vpt), 32, 1024);
  p.vpt = next_pow2((nv + p.group - 1) / p.group);
  p.block = p.group > 256 ? p.group : 256;
  p.smem = 0;
  return p;
}
static Plan plan_looped(long long n) {  // plan_rows with max_vpt 0
  const long long nv = (n + N - 1) / N;
  Plan p;
  p.group = clampi(next_pow2((nv + 7) / 8), 32, 1024);
  p.vpt = 0;
  p.block = p.group > 256 ? p.group : 256;
  p.smem = 0;
  return p;
}
static Plan plan_staged(long long n, int arrays, int target_vpt, long long tile_bytes) {
  const long long nv = (n + N - 1) / N;
  Plan p;
  p.group = clampi(next_pow2((nv + target_vpt - 1) / target_vpt), 32, 1024);
  p.vpt = next_pow2((nv + p.group - 1) / p.group);
  const long long row_bytes = n * 2 * arrays;
  int R = 1;
  while (R * row_bytes < tile_bytes && p.group * R * 2 <= 1024) R *= 2;
  p.block = p.group * R;
  p.smem = size_t(rows::kStages) * R * row_bytes;
  return p;
}

// `./rk prof`: each kernel once (for ncu), no timing.
static bool g_prof = false;

template <class F>
static double timed(F f) {
  if (!g_prof) return time_us(f);
  f();
  CK(cudaDeviceSynchronize());
  return 1;
}

static int sms() {
  int s;
  CK(cudaDeviceGetAttribute(&s, cudaDevAttrMultiProcessorCount, 0));
  return s;
}

template <typename K>
static int staged_grid(K kernel, const Plan& p, long long rows) {
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(p.smem)));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, p.block, p.smem));
  const long long tiles = (rows + p.block / p.group - 1) / (p.block / p.group);
  const long long g = (long long)(per_sm < 1 ? 1 : per_sm) * sms();
  return int(tiles < g ? tiles : g);
}
static int row_grid(const Plan& p, long long rows) {
  return int((rows + p.block / p.group - 1) / (p.block / p.group));
}

static double max_diff(const T* a, const T* b, size_t n) {
  std::vector<uint16_t> ha(n), hb(n);
  CK(cudaMemcpy(ha.data(), a, n * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hb.data(), b, n * 2, cudaMemcpyDeviceToHost));
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(bf2f(ha[i]) - bf2f(hb[i])));
  return m;
}
// fused_rms_silu's kernels against rms_norm's output y through SiLU on the host: the
// largest |difference| over 2^-8 (1 + |silu(y)|), below 2 when they agree to bfloat16's
// rounding of both.
static double silu_diff(const T* y, const T* ys, size_t n) {
  std::vector<uint16_t> hy(n), hs(n);
  CK(cudaMemcpy(hy.data(), y, n * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hs.data(), ys, n * 2, cudaMemcpyDeviceToHost));
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    const double h = bf2f(hy[i]), want = h / (1 + std::exp(-h));
    m = std::fmax(m, std::fabs(bf2f(hs[i]) - want) / (std::ldexp(1.0, -8) * (1 + std::fabs(want))));
  }
  return m;
}

static void report(const char* name, const char* impl, double us, double bytes, double copy_bw,
                   const Plan& p, double diff) {
  printf("  %-14s %-9s %9.2f us %6.0f GB/s %5.1f%% copy  group %4d vpt %d block %4d smem %6zu",
         name, impl, us, bytes / us * 1e-3, 100.0 * bytes / us * 1e-3 / copy_bw, p.group, p.vpt,
         p.block, p.smem);
  if (diff >= 0) printf("  max|diff| %.3g", diff);
  printf("\n");
}

template <int VPT>
struct Vpt {
  static constexpr int value = VPT;
};

// Calls f(Vpt<v>{}) for the run-time v in {1, 2, 4}.
template <typename F>
static void with_vpt(int v, F f) {
  if (v == 1)
    f(Vpt<1>{});
  else if (v == 2)
    f(Vpt<2>{});
  else
    f(Vpt<4>{});
}

struct Bufs {
  long long rows, n;
  T *x, *w, *b, *g, *y, *y2;
  float *loss, *lse, *pw, *pb;
  int* t;
};

static void run_shape(long long rows, long long n, double copy_bw, int tile_kb) {
  Bufs B{rows, n};
  const size_t elems = size_t(rows) * n;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<uint16_t> hx(elems), hg(elems), hw(n), hb(n);
  for (auto& v : hx) v = f2bf(nd(rng));
  for (auto& v : hg) v = f2bf(nd(rng));
  for (auto& v : hw) v = f2bf(1 + 0.1f * nd(rng));
  for (auto& v : hb) v = f2bf(nd(rng));
  std::vector<int> ht(rows);
  for (auto& v : ht) v = int(rng() % n);
  for (T** p : {&B.x, &B.g, &B.y, &B.y2}) CK(cudaMalloc(p, elems * 2));
  CK(cudaMalloc(&B.w, n * 2));
  CK(cudaMalloc(&B.b, n * 2));
  for (float** p : {&B.loss, &B.lse}) CK(cudaMalloc(p, rows * 4));
  const size_t parts = size_t(4096) * n * 4;
  CK(cudaMalloc(&B.pw, parts));
  CK(cudaMalloc(&B.pb, parts));
  CK(cudaMalloc(&B.t, rows * 4));
  CK(cudaMemcpy(B.x, hx.data(), elems * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B.g, hg.data(), elems * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B.w, hw.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B.b, hb.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B.t, ht.data(), rows * 4, cudaMemcpyHostToDevice));
  printf("(%lld, %lld) bfloat16, staged tiles of >= %d KB\n", rows, n, tile_kb);
  const double fwd_bytes = 4.0 * elems, bwd_bytes = 6.0 * elems, ce_bytes = 2.0 * elems;
  const long long tile = tile_kb * 1024LL;

  // rms_norm / layer_norm forward.
  for (bool layer : {false, true}) {
    const char* name = layer ? "layer_norm fwd" : "rms_norm fwd";
    NormArgs a{rows, n, 0, true, true, layer, 1e-5f};
    const Plan pr = plan_rows(n, 4);
    a.group = pr.group;
    auto reg = [&] {
      with_vpt(pr.vpt, [&](auto v) {
        constexpr int V = decltype(v)::value;
        auto k = layer ? norm_fwd<T, V, true> : norm_fwd<T, V, false>;
        k<<<row_grid(pr, rows), pr.block>>>(B.x, B.w, B.b, B.y, a);
      });
    };
    reg();
    report(name, "register", timed(reg), fwd_bytes, copy_bw, pr, -1);
    if (!layer) {  // fused_rms_silu: the same kernel through SiLU
      auto silu = [&] {
        with_vpt(pr.vpt, [&](auto v) {
          constexpr int V = decltype(v)::value;
          norm_fwd<T, V, false, true><<<row_grid(pr, rows), pr.block>>>(B.x, B.w, B.b, B.y2, a);
        });
      };
      CK(cudaMemset(B.y2, 0xFF, elems * 2));
      silu();
      CK(cudaDeviceSynchronize());
      report("rms+silu fwd", "register", timed(silu), fwd_bytes, copy_bw, pr,
             silu_diff(B.y, B.y2, elems));
    }
    for (int tv : {2, 4}) {
      const Plan ps = plan_staged(n, 1, tv, tile);
      if (layer || ps.vpt > 4 || ps.smem > 227 * 1024) continue;
      NormArgs as = a;
      as.group = ps.group;
      int grid = 0;
      auto st = [&] {
        with_vpt(ps.vpt, [&](auto v) {
          constexpr int V = decltype(v)::value;
          auto k = rms_norm_fwd_staged<T, V>;
          if (!grid) grid = staged_grid(k, ps, rows);
          k<<<grid, ps.block, ps.smem>>>(B.x, B.w, B.y2, as);
        });
      };
      CK(cudaMemset(B.y2, 0xFF, elems * 2));
      st();
      CK(cudaDeviceSynchronize());
      report(name, "staged", timed(st), fwd_bytes, copy_bw, ps, max_diff(B.y, B.y2, elems));
      auto sts = [&] {
        with_vpt(ps.vpt, [&](auto v) {
          constexpr int V = decltype(v)::value;
          auto k = rms_norm_fwd_staged<T, V, true>;
          if (!grid) grid = staged_grid(k, ps, rows);
          k<<<grid, ps.block, ps.smem>>>(B.x, B.w, B.y2, as);
        });
      };
      grid = 0;
      CK(cudaMemset(B.y2, 0xFF, elems * 2));
      sts();
      CK(cudaDeviceSynchronize());
      report("rms+silu fwd", "staged", timed(sts), fwd_bytes, copy_bw, ps,
             silu_diff(B.y, B.y2, elems));
    }
  }

  // softmax forward.
  {
    const Plan pr = plan_rows(n, 4);
    auto reg = [&] {
      with_vpt(pr.vpt, [&](auto v) {
        constexpr int V = decltype(v)::value;
        softmax_fwd<T, V><<<row_grid(pr, rows), pr.block>>>(B.x, B.y, rows, n, pr.group);
      });
    };
    reg();
    report("softmax fwd", "register", timed(reg), fwd_bytes, copy_bw, pr, -1);
    for (int tv : {2, 4}) {
      const Plan ps = plan_staged(n, 1, tv, tile);
      if (ps.vpt > 4 || ps.smem > 227 * 1024) continue;
      int grid = 0;
      auto st = [&] {
        with_vpt(ps.vpt, [&](auto v) {
          constexpr int V = decltype(v)::value;
          auto k = softmax_fwd_staged<T, V>;
          if (!grid) grid = staged_grid(k, ps, rows);
          k<<<grid, ps.block, ps.smem>>>(B.x, B.y2, rows, n, ps.group);
        });
      };
      CK(cudaMemset(B.y2, 0xFF, elems * 2));
      st();
      CK(cudaDeviceSynchronize());
      report("softmax fwd", "staged", timed(st), fwd_bytes, copy_bw, ps,
             max_diff(B.y, B.y2, elems));
    }
  }

  // cross_entropy forward.
  {
    const Plan pr = plan_rows(n, 4);
    auto reg = [&] {
      with_vpt(pr.vpt, [&](auto v) {
        constexpr int V = decltype(v)::value;
        ce_fwd<T, V><<<row_grid(pr, rows), pr.block>>>(B.x, B.t, B.loss, B.lse, rows, n, pr.group);
      });
    };
    reg();
    report("ce fwd", "register", timed(reg), ce_bytes, copy_bw, pr, -1);
  }

  // cross_entropy backward (elementwise given lse).
  {
    const Plan pl = plan_looped(n);
    auto run = [&] {
      ce_bwd<T>
          <<<row_grid(pl, rows), pl.block>>>(B.x, B.t, B.lse, B.lse, B.y, rows, n, pl.group, true);
    };
    run();
    report("ce bwd", "looped", timed(run), 4.0 * elems, copy_bw, pl, -1);
  }

  // softmax backward.
  {
    const Plan pr = plan_rows(n, 2);
    if (pr.vpt <= 2 && (n + N - 1) / N <= 2048) {
      auto reg = [&] {
        with_vpt(pr.vpt, [&](auto v) {
          constexpr int V = decltype(v)::value;
          if constexpr (V <= 2)
            softmax_bwd<T, V><<<row_grid(pr, rows), pr.block>>>(B.x, B.g, B.y, rows, n, pr.group);
        });
      };
      reg();
      report("softmax bwd", "register", timed(reg), bwd_bytes, copy_bw, pr, -1);
    } else {
      const Plan pl = plan_looped(n);
      auto run = [&] {
        softmax_bwd_looped<T>
            <<<row_grid(pl, rows), pl.block>>>(B.x, B.g, B.y, rows, n, pl.group, true);
      };
      run();
      report("softmax bwd", "looped", timed(run), bwd_bytes, copy_bw, pl, -1);
    }
  }

  // rms_norm / layer_norm backward (dx and the partial parameter gradients), with 1 and 2
  // vectors per thread (groups of at most kRowBlockBwd threads).
  for (bool layer : {false, true}) {
    const char* name = layer ? "layer_norm bwd" : "rms_norm bwd";
    for (int mv : {1, 2}) {
      Plan pr = plan_rows(n, mv);
      if (pr.group > kRowBlockBwd || pr.vpt > mv) continue;
      NormArgs a{rows, n, pr.group, true, true, layer, 1e-5f};
      int grid = 0;
      auto reg = [&] {
        with_vpt(pr.vpt, [&](auto v) {
          constexpr int V = decltype(v)::value;
          if constexpr (V <= 2) {
            auto k = layer ? norm_vjp<T, V, true> : norm_vjp<T, V, false>;
            if (!grid) {
              int per_sm = 0;
              CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, pr.block, 0));
              grid = per_sm * sms();
            }
            k<<<grid, pr.block>>>(B.x, B.w, B.g, mv == 1 ? B.y : B.y2, B.pw, B.pb, a);
          }
        });
      };
      if (mv == 2) CK(cudaMemset(B.y2, 0xFF, elems * 2));
      reg();
      CK(cudaDeviceSynchronize());
      report(name, mv == 1 ? "register" : "reg vpt2", timed(reg), bwd_bytes, copy_bw, pr,
             mv == 1 ? -1 : max_diff(B.y, B.y2, elems));
    }
  }

  for (T* p : {B.x, B.g, B.y, B.y2, B.w, B.b}) cudaFree(p);
  for (float* p : {B.loss, B.lse, B.pw, B.pb}) cudaFree(p);
  cudaFree(B.t);
}

int main(int argc, char** argv) {
  print_device();
  const double copy_bw = copy_bandwidth();
  g_prof = argc > 1 && !strcmp(argv[1], "prof");
  const int tile_kb = argc > 1 && !g_prof ? atoi(argv[1]) : 16;
  run_shape(32768, 4096, copy_bw, tile_kb);
  run_shape(4096, 32768, copy_bw, tile_kb);
  if (!g_prof) run_shape(65536, 1024, copy_bw, tile_kb);
  return 0;
}
