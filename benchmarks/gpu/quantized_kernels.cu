// The quantized matvec and dequantize kernels alone (kiln's device headers through nvcc, no
// kiln build): 4-bit affine, group 64, bfloat16; correctness on sampled rows against a double
// reference, CUDA-event medians (9 rounds of 100 launches), the device copy bandwidth and
// bfloat16 cuBLAS in the same run; tile/warp/depth variants of quant_qmv_tc.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. benchmarks/gpu/quantized_kernels.cu -lcublas -o qk && ./qk
// (`./qk prof` runs one launch of each kernel on 28672 x 8192, for ncu.)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "benchmarks/gpu/harness.cuh"
#include "kiln/backend/cuda/device/quant/qmv_tc.cuh"

using namespace kiln;

constexpr int GS = 64, BITS = 4;

struct Bufs {
  int N, K;
  unsigned int* w;
  bfloat16 *s, *b, *x, *out, *deq, *wbf;
  float* part;
  std::vector<uint32_t> hw;
  std::vector<uint16_t> hs, hb, hx;
};

static void check(const Bufs& B, int M, const char* name) {
  std::vector<uint16_t> ho(size_t(M) * B.N);
  CK(cudaMemcpy(ho.data(), B.out, ho.size() * 2, cudaMemcpyDeviceToHost));
  std::mt19937 rng(5);
  double worst = 0, scale = 1e-30;
  const int K = B.K, gpr = K / GS, wpr = K / 8;
  for (int trial = 0; trial < 64; ++trial) {
    const int n = rng() % B.N;
    for (int m = 0; m < M; ++m) {
      double acc = 0;
      for (int k = 0; k < K; ++k) {
        const uint32_t code = (B.hw[size_t(n) * wpr + k / 8] >> ((k % 8) * 4)) & 15u;
        const double wv = double(bf2f(B.hs[size_t(n) * gpr + k / GS])) * code +
                          bf2f(B.hb[size_t(n) * gpr + k / GS]);
        acc += wv * bf2f(B.hx[size_t(m) * K + k]);
      }
      worst = std::max(worst, std::fabs(acc - bf2f(ho[size_t(m) * B.N + n])));
      scale = std::max(scale, std::fabs(acc));
    }
  }
  printf("    check %-28s M=%d max|err| %.3g (max|ref| %.3g) %s\n", name, M, worst, scale,
         worst <= 1e-2 * scale ? "ok" : "FAIL");
}

template <int WARPS, int DEPTH, int NT>
static void run_tc(const Bufs& B, int M, int splits) {
  QmvArgs a{M, B.N, B.K, B.K / 8, B.K / GS, 0, 0, 0, 0, splits, 1.0f, 1};
  dim3 grid((B.N + 15) / 16, splits, 1);
  if (splits == 1) {
    a.out_batch = M * B.N;
    quant_qmv_tc<bfloat16, bfloat16, BITS, GS, NT, WARPS, DEPTH>
        <<<grid, WARPS * 32>>>(B.x, B.w, B.s, B.b, B.out, a);
  } else {
    a.out_batch = splits * M * B.N;
    quant_qmv_tc<bfloat16, float, BITS, GS, NT, WARPS, DEPTH>
        <<<grid, WARPS * 32>>>(B.x, B.w, B.s, B.b, B.part, a);
    const long long tot = (long long)M * B.N;
    quant_splitk_sum<bfloat16><<<(tot + 255) / 256, 256>>>(B.part, B.out, tot, splits, tot);
  }
}

template <int MMAX>
static void run_vec(const Bufs& B, int M) {
  // Old kernel: QmvVec rows per warp, 4 warps a block, no split (large N).
  using V = QmvVec<BITS, MMAX>;
  QmvArgs a{M, B.N, B.K, B.K / 8, B.K / GS, 0, 0, 0, (long long)M * B.N, 1, 1.0f, 1};
  const int rows = V::kWarps * V::kRows;
  quant_qmv_vec<bfloat16, bfloat16, kQAffine, BITS, GS, MMAX>
      <<<(B.N + rows - 1) / rows, 128>>>(B.x, B.w, B.s, B.b, nullptr, nullptr, B.out, a);
}

template <int WARPS, int DEPTH, int NT>
static void bench_tc(const Bufs& B, int M, double bytes, double copy_bw, int splits, bool chk) {
  CK(cudaMemset(B.out, 0xFF, size_t(M) * B.N * 2));
  run_tc<WARPS, DEPTH, NT>(B, M, splits);
  CK(cudaDeviceSynchronize());
  char name[64];
  snprintf(name, sizeof name, "tc W%d D%d NT%d S%d", WARPS, DEPTH, NT, splits);
  if (chk) check(B, M, name);
  const double us = time_us([&] { run_tc<WARPS, DEPTH, NT>(B, M, splits); });
  printf("  %-24s M=%d %8.2f us %7.0f GB/s %5.1f%% copy\n", name, M, us, bytes / us * 1e-3,
         100.0 * bytes / us * 1e-3 / copy_bw);
}

int main(int argc, char** argv) {
  const bool prof = argc > 1;
  print_device();
  const double copy_bw = copy_bandwidth();
  cublasHandle_t h;
  cublasCreate(&h);
  struct Shape {
    int N, K;
  };
  std::vector<Shape> shapes = {Shape{4096, 4096}, Shape{14336, 4096}, Shape{28672, 8192}};
  if (prof) shapes = {Shape{28672, 8192}};
  for (Shape sh : shapes) {
    Bufs B;
    B.N = sh.N;
    B.K = sh.K;
    const size_t nw = size_t(sh.N) * sh.K / 8, ng = size_t(sh.N) * sh.K / GS;
    std::mt19937 rng(1);
    B.hw.resize(nw);
    for (auto& v : B.hw) v = rng();
    std::uniform_real_distribution<float> us(0.002f, 0.02f), ub(-0.1f, 0.1f);
    std::normal_distribution<float> nd;
    B.hs.resize(ng);
    B.hb.resize(ng);
    for (auto& v : B.hs) v = f2bf(us(rng));
    for (auto& v : B.hb) v = f2bf(ub(rng));
    B.hx.resize(size_t(16) * sh.K);
    for (auto& v : B.hx) v = f2bf(nd(rng));
    CK(cudaMalloc(&B.w, nw * 4));
    CK(cudaMalloc(&B.s, ng * 2));
    CK(cudaMalloc(&B.b, ng * 2));
    CK(cudaMalloc(&B.x, B.hx.size() * 2));
    CK(cudaMalloc(&B.out, size_t(16) * sh.N * 2));
    CK(cudaMalloc(&B.part, size_t(32) * 16 * sh.N * 4));
    CK(cudaMalloc(&B.deq, size_t(sh.N) * sh.K * 2));
    CK(cudaMemcpy(B.w, B.hw.data(), nw * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(B.s, B.hs.data(), ng * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(B.b, B.hb.data(), ng * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(B.x, B.hx.data(), B.hx.size() * 2, cudaMemcpyHostToDevice));
    printf("\nN=%d K=%d (4-bit affine, gs 64, bf16)\n", sh.N, sh.K);
    if (prof) {
      for (int r = 0; r < 3; ++r) {
        run_tc<4, 2, 1>(B, 1, 1);
        run_vec<1>(B, 1);
        run_tc<4, 2, 2>(B, 8, 1);
        quant_dequantize_vec<bfloat16, BITS, GS>
            <<<(nw + 1023) / 1024, 256>>>(B.w, B.s, B.b, B.deq, nw, sh.K / 8, sh.K / GS);
      }
      CK(cudaDeviceSynchronize());
      return 0;
    }
    // Dequantize: old (thread per group) vs vec.
    {
      const long long groups = ng;
      const double bytes = nw * 4.0 + ng * 4.0 + double(sh.N) * sh.K * 2;
      const double t_old = time_us(
          [&] {
            quant_dequantize<bfloat16, bfloat16, kQAffine, BITS, GS><<<(groups + 127) / 128, 128>>>(
                B.w, B.s, B.b, nullptr, nullptr, B.deq, groups, sh.K / GS, sh.K / 8);
          },
          20);
      std::vector<uint16_t> d1(size_t(sh.N) * sh.K), d2(d1.size());
      CK(cudaMemcpy(d1.data(), B.deq, d1.size() * 2, cudaMemcpyDeviceToHost));
      CK(cudaMemset(B.deq, 0xFF, d1.size() * 2));
      auto vec = [&] {
        const long long blocks = (nw + 1023) / 1024;  // 8 warps x 128 words
        quant_dequantize_vec<bfloat16, BITS, GS>
            <<<blocks, 256>>>(B.w, B.s, B.b, B.deq, nw, sh.K / 8, sh.K / GS);
      };
      vec();
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(d2.data(), B.deq, d2.size() * 2, cudaMemcpyDeviceToHost));
      const bool same = d1 == d2;
      const double t_vec = time_us(vec, 20);
      printf("  dequantize old %8.1f us, vec %8.1f us (%.0f GB/s, %.1f%% copy) bitwise %s\n", t_old,
             t_vec, bytes / t_vec * 1e-3, 100 * bytes / t_vec * 1e-3 / copy_bw,
             same ? "equal" : "DIFFERENT");
      // cuBLAS bf16 on the dequantized weight (the large-batch path) and the peer matvec.
      for (int M : {1, 8, 512, 4096}) {
        bfloat16 *xb, *ob;
        CK(cudaMalloc(&xb, size_t(M) * sh.K * 2));
        CK(cudaMalloc(&ob, size_t(M) * sh.N * 2));
        CK(cudaMemset(xb, 0, size_t(M) * sh.K * 2));
        const float one = 1, zero = 0;
        auto gemm = [&] {
          cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, sh.N, M, sh.K, &one, B.deq, CUDA_R_16BF, sh.K,
                       xb, CUDA_R_16BF, sh.K, &zero, ob, CUDA_R_16BF, sh.N, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT);
        };
        const double tg = time_us(gemm, 20);
        printf("  cuBLAS bf16 M=%-5d %8.2f us (dequant+gemm %8.2f us, ratio %.2f)\n", M, tg,
               tg + t_vec, (tg + t_vec) / tg);
        cudaFree(xb);
        cudaFree(ob);
      }
    }
    for (int M : {1, 2, 4, 8}) {
      const double bytes = nw * 4.0 + ng * 4.0 + double(M) * sh.K * 2 + double(M) * sh.N * 2;
      // Old kernels.
      auto old = [&] {
        if (M == 1)
          run_vec<1>(B, M);
        else if (M == 2)
          run_vec<2>(B, M);
        else if (M == 4)
          run_vec<4>(B, M);
        else
          run_vec<8>(B, M);
      };
      CK(cudaMemset(B.out, 0xFF, size_t(M) * B.N * 2));
      old();
      CK(cudaDeviceSynchronize());
      check(B, M, "old vec");
      const double tu = time_us(old);
      printf("  %-24s M=%d %8.2f us %7.0f GB/s %5.1f%% copy\n", "old vec", M, tu, bytes / tu * 1e-3,
             100.0 * bytes / tu * 1e-3 / copy_bw);
      const int rb = (sh.N + 15) / 16;
      int sp4 = 1;
      while (rb * sp4 * 4 < 132 * 32 && sp4 < 16 && sh.K / 128 / (sp4 * 2) >= 8) sp4 *= 2;
      int sp8 = 1;
      while (rb * sp8 * 8 < 132 * 32 && sp8 < 16 && sh.K / 128 / (sp8 * 2) >= 8) sp8 *= 2;
      if (M <= 4) {
        bench_tc<4, 2, 1>(B, M, bytes, copy_bw, sp4, true);
        bench_tc<8, 2, 1>(B, M, bytes, copy_bw, sp4, true);
        bench_tc<4, 3, 1>(B, M, bytes, copy_bw, sp4, false);
        bench_tc<4, 4, 1>(B, M, bytes, copy_bw, sp4, false);
        bench_tc<2, 3, 1>(B, M, bytes, copy_bw, sp4, false);
        bench_tc<2, 4, 1>(B, M, bytes, copy_bw, sp4, false);
        bench_tc<4, 2, 1>(B, M, bytes, copy_bw, 1, false);
        bench_tc<4, 3, 1>(B, M, bytes, copy_bw, 1, false);
      } else {
        bench_tc<4, 2, 2>(B, M, bytes, copy_bw, sp4, true);
        bench_tc<4, 3, 2>(B, M, bytes, copy_bw, sp4, false);
        bench_tc<2, 3, 2>(B, M, bytes, copy_bw, sp4, false);
      }
      // cuBLAS bf16 dense peer (the weight as bf16: 4x the bytes).
      {
        bfloat16* ob;
        CK(cudaMalloc(&ob, size_t(M) * sh.N * 2));
        const float one = 1, zero = 0;
        const double tg = time_us([&] {
          cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, sh.N, M, sh.K, &one, B.deq, CUDA_R_16BF, sh.K,
                       B.x, CUDA_R_16BF, sh.K, &zero, ob, CUDA_R_16BF, sh.N, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT);
        });
        printf("  %-24s M=%d %8.2f us\n", "cuBLAS bf16 dense", M, tg);
        cudaFree(ob);
      }
    }
    cudaFree(B.w);
    cudaFree(B.s);
    cudaFree(B.b);
    cudaFree(B.x);
    cudaFree(B.out);
    cudaFree(B.part);
    cudaFree(B.deq);
  }
  return 0;
}
