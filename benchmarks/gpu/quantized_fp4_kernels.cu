// The mxfp4 / nvfp4 matvec kernels alone (kiln's device headers through nvcc, no kiln build):
// quant_qmv_tc_fp4 (tensor cores, warp/depth variants) against quant_qmv_vec (float decode),
// bfloat16 x; correctness on sampled rows against a double reference, CUDA-event medians
// (9 rounds of 100 launches) and the device copy bandwidth in the same run.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. benchmarks/gpu/quantized_fp4_kernels.cu -o qf && ./qf
// (`./qf prof` runs one launch of each kernel on 28672 x 8192, for ncu.)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "benchmarks/gpu/harness.cuh"
#include "kiln/backend/cuda/device/quant/qmv_tc_fp4.cuh"

using namespace kiln;

static const double kFP4[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};

static double e4m3(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7);
  return (b & 0x80) ? -v : v;
}

struct Bufs {
  int N, K, mode, gs;
  unsigned int* w;
  unsigned char* s;
  bfloat16 *x, *out;
  float *part, *global;
  std::vector<uint32_t> hw;
  std::vector<uint8_t> hs;
  std::vector<uint16_t> hx;
  float hg;
};

static void check(const Bufs& B, int M, const char* name) {
  std::vector<uint16_t> ho(size_t(M) * B.N);
  CK(cudaMemcpy(ho.data(), B.out, ho.size() * 2, cudaMemcpyDeviceToHost));
  std::mt19937 rng(5);
  double worst = 0;
  const int K = B.K, gpr = K / B.gs, wpr = K / 8;
  for (int trial = 0; trial < 64; ++trial) {
    const int n = rng() % B.N;
    for (int m = 0; m < M; ++m) {
      double acc = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        const uint32_t code = (B.hw[size_t(n) * wpr + k / 8] >> ((k % 8) * 4)) & 15u;
        const uint8_t sb = B.hs[size_t(n) * gpr + k / B.gs];
        const double sc =
            B.mode == kQNvfp4 ? e4m3(sb) * B.hg / (448.0 * 6.0) : std::ldexp(1.0, int(sb) - 127);
        const double p = kFP4[code] * sc * bf2f(B.hx[size_t(m) * K + k]);
        acc += p;
        mag += std::fabs(p);
      }
      const double err = std::fabs(acc - bf2f(ho[size_t(m) * B.N + n]));
      worst = std::max(worst, err / (4e-3 * std::fabs(acc) + 1e-5 * mag));
    }
  }
  printf("    check %-26s M=%-2d worst err / bound %.3f %s\n", name, M, worst,
         worst <= 1.0 ? "ok" : "FAIL");
}

template <int MODE, int WARPS, int DEPTH, int NT>
static void run_tc(const Bufs& B, int M, int splits) {
  QmvArgs a{M, B.N, B.K, B.K / 8, B.K / B.gs, 0, 0, 0, 0, splits, 1.0f, 1, 0};
  dim3 grid((B.N + 15) / 16, splits, 1);
  const float* g = MODE == kQNvfp4 ? B.global : nullptr;
  if (splits == 1) {
    a.out_batch = M * B.N;
    quant_qmv_tc_fp4<bfloat16, MODE, NT, WARPS, DEPTH>
        <<<grid, WARPS * 32>>>(B.x, B.w, B.s, g, B.out, a);
  } else {
    a.out_batch = splits * M * B.N;
    quant_qmv_tc_fp4<float, MODE, NT, WARPS, DEPTH>
        <<<grid, WARPS * 32>>>(B.x, B.w, B.s, g, B.part, a);
    const long long tot = (long long)M * B.N;
    quant_splitk_sum<bfloat16><<<(tot + 255) / 256, 256>>>(B.part, B.out, tot, splits, tot);
  }
}

template <int MODE, int MMAX>
static void run_vec(const Bufs& B, int M) {
  using V = QmvVec<4, MMAX>;
  constexpr int GS = MODE == kQNvfp4 ? 16 : 32;
  QmvArgs a{M, B.N, B.K, B.K / 8, B.K / GS, 0, 0, 0, (long long)M * B.N, 1, 1.0f, 1, 0};
  const int rows = V::kWarps * V::kRows;
  quant_qmv_vec<bfloat16, bfloat16, MODE, 4, GS, MMAX><<<(B.N + rows - 1) / rows, 128>>>(
      B.x, B.w, nullptr, nullptr, B.s, MODE == kQNvfp4 ? B.global : nullptr, B.out, a);
}

template <int MODE>
static void run_vec_m(const Bufs& B, int M) {
  if (M == 1)
    run_vec<MODE, 1>(B, M);
  else if (M == 2)
    run_vec<MODE, 2>(B, M);
  else if (M <= 4)
    run_vec<MODE, 4>(B, M);
  else if (M <= 8)
    run_vec<MODE, 8>(B, M);
  else
    run_vec<MODE, 16>(B, M);
}

template <int MODE, int WARPS, int DEPTH, int NT>
static void bench_tc(const Bufs& B, int M, double bytes, double copy_bw, int splits, bool chk) {
  CK(cudaMemset(B.out, 0xFF, size_t(M) * B.N * 2));
  run_tc<MODE, WARPS, DEPTH, NT>(B, M, splits);
  CK(cudaDeviceSynchronize());
  char name[64];
  snprintf(name, sizeof name, "tc W%d D%d NT%d S%d", WARPS, DEPTH, NT, splits);
  if (chk) check(B, M, name);
  const double us = time_us([&] { run_tc<MODE, WARPS, DEPTH, NT>(B, M, splits); });
  printf("  %-26s M=%-2d %8.2f us %7.0f GB/s %5.1f%% copy\n", name, M, us, bytes / us * 1e-3,
         100.0 * bytes / us * 1e-3 / copy_bw);
}

template <int MODE>
static void shape_run(Bufs& B, double copy_bw, bool prof) {
  const int N = B.N, K = B.K;
  const size_t nw = size_t(N) * K / 8, ng = size_t(N) * K / B.gs;
  if (prof) {
    for (int r = 0; r < 3; ++r) {
      run_tc<MODE, 4, 2, 1>(B, 1, 1);
      run_vec<MODE, 1>(B, 1);
    }
    CK(cudaDeviceSynchronize());
    return;
  }
  for (int M : {1, 2, 4, 8, 16}) {
    const double bytes = nw * 4.0 + ng + double(M) * K * 2 + double(M) * N * 2;
    CK(cudaMemset(B.out, 0xFF, size_t(M) * N * 2));
    run_vec_m<MODE>(B, M);
    CK(cudaDeviceSynchronize());
    check(B, M, "vec (float decode)");
    const double tv = time_us([&] { run_vec_m<MODE>(B, M); });
    printf("  %-26s M=%-2d %8.2f us %7.0f GB/s %5.1f%% copy\n", "vec (float decode)", M, tv,
           bytes / tv * 1e-3, 100.0 * bytes / tv * 1e-3 / copy_bw);
    const int rb = (N + 15) / 16;
    int sp = 1;
    while (rb * sp < 256 && sp < 32 && K / 128 / 4 / (sp * 2) >= 8) sp *= 2;
    if (M <= 8) {
      bench_tc<MODE, 4, 2, 1>(B, M, bytes, copy_bw, sp, true);
      bench_tc<MODE, 4, 3, 1>(B, M, bytes, copy_bw, sp, false);
      bench_tc<MODE, 4, 4, 1>(B, M, bytes, copy_bw, sp, false);
      bench_tc<MODE, 8, 2, 1>(B, M, bytes, copy_bw, sp, true);
      bench_tc<MODE, 8, 3, 1>(B, M, bytes, copy_bw, sp, false);
    } else {
      bench_tc<MODE, 4, 2, 2>(B, M, bytes, copy_bw, sp, true);
      bench_tc<MODE, 4, 3, 2>(B, M, bytes, copy_bw, sp, false);
    }
  }
}

int main(int argc, char** argv) {
  const bool prof = argc > 1;
  print_device();
  const double copy_bw = copy_bandwidth();
  struct Shape {
    int N, K;
  };
  std::vector<Shape> shapes = {Shape{14336, 4096}, Shape{28672, 8192}};
  if (prof) shapes = {Shape{28672, 8192}};
  for (int mode : {kQMxfp4, kQNvfp4}) {
    for (Shape sh : shapes) {
      Bufs B;
      B.N = sh.N;
      B.K = sh.K;
      B.mode = mode;
      B.gs = mode == kQNvfp4 ? 16 : 32;
      const size_t nw = size_t(sh.N) * sh.K / 8, ng = size_t(sh.N) * sh.K / B.gs;
      std::mt19937 rng(1);
      B.hw.resize(nw);
      for (auto& v : B.hw) v = rng();
      B.hs.resize(ng);
      // e8m0 scales 2^-12 to 2^-3 (weights of order 0.01 to 0.5); e4m3 scales 1 to 416.
      for (auto& v : B.hs)
        v = mode == kQNvfp4 ? uint8_t(0x38 + rng() % 0x46) : uint8_t(115 + rng() % 10);
      B.hg = 2.5f;
      std::normal_distribution<float> nd;
      B.hx.resize(size_t(16) * sh.K);
      for (auto& v : B.hx) v = f2bf(nd(rng));
      CK(cudaMalloc(&B.w, nw * 4));
      CK(cudaMalloc(&B.s, ng));
      CK(cudaMalloc(&B.x, B.hx.size() * 2));
      CK(cudaMalloc(&B.out, size_t(16) * sh.N * 2));
      CK(cudaMalloc(&B.part, size_t(32) * 16 * sh.N * 4));
      CK(cudaMalloc(&B.global, 4));
      CK(cudaMemcpy(B.w, B.hw.data(), nw * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(B.s, B.hs.data(), ng, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(B.x, B.hx.data(), B.hx.size() * 2, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(B.global, &B.hg, 4, cudaMemcpyHostToDevice));
      printf("\n%s N=%d K=%d (bf16 x)\n", mode == kQNvfp4 ? "nvfp4" : "mxfp4", sh.N, sh.K);
      if (mode == kQNvfp4)
        shape_run<kQNvfp4>(B, copy_bw, prof);
      else
        shape_run<kQMxfp4>(B, copy_bw, prof);
      cudaFree(B.w);
      cudaFree(B.s);
      cudaFree(B.x);
      cudaFree(B.out);
      cudaFree(B.part);
      cudaFree(B.global);
    }
  }
  return 0;
}
