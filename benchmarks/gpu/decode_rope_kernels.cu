// The rope and tensor-core decode kernels alone (kiln's device headers through nvcc, no kiln
// build), bfloat16, CUDA-event medians (9 rounds of 100 launches) against the device copy
// bandwidth in the same run:
// - rope on (4, 32, 4096, 128), default layout, over the heads each thread rotates with one
//   set of angles (RopeArgs::head_chunk);
// - decode_tc_fwd plus combine_splits on decode shapes (GQA 32/8 and MHA, D 128 and 64, one
//   and two tiles of 8 query rows), over the blocks per multiprocessor the split count aims
//   at. Bytes: k and v once.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. benchmarks/gpu/decode_rope_kernels.cu -o drk && ./drk
#include <cmath>

#include "benchmarks/gpu/harness.cuh"
#include "kiln/backend/cuda/device/attention/decode_tc.cuh"
#include "kiln/backend/cuda/device/rope/rope.cuh"

using kiln::bfloat16;

static void rope_sweep(double copy_bw) {
  const int B = 4, H = 32, L = 4096, D = 128, units = D / 2 / 8;
  const size_t n = size_t(B) * H * L * D;
  bfloat16 *x, *y;
  int* off;
  CK(cudaMalloc(&x, n * 2));
  CK(cudaMalloc(&y, n * 2));
  CK(cudaMalloc(&off, 4));
  CK(cudaMemset(off, 0, 4));
  CK(cudaMemset(x, 0x3c, n * 2));
  for (int chunk : {1, 2, 4, 8, 16, 32}) {
    kiln::RopeArgs a{};
    a.mid_shape.v[0] = H;
    a.mid_strides.v[0] = (long long)L * D;
    a.mid_ndim = 1;
    a.dims = D, a.half = D / 2, a.n_offsets = 1, a.heads = H;
    a.head_chunk = chunk, a.chunks = (H + chunk - 1) / chunk, a.units = units;
    a.B = B, a.L = L, a.D = D, a.sb = (long long)H * L * D, a.sl = D, a.sd = 1;
    a.log_base = std::log(10000.0), a.scale = 1.0f, a.forward = true, a.vec = true;
    const unsigned grid = unsigned((size_t(B) * L * units * a.chunks + 255) / 256);
    const double us = time_us(
        [&] { kiln::rope<bfloat16, false><<<grid, 256, (D / 2) * 4>>>(x, y, off, nullptr, a); });
    printf("  rope (4, 32, 4096, 128)  heads per thread %2d  %8.2f us  %5.1f%% copy\n", chunk, us,
           100.0 * 4.0 * n / us * 1e-3 / copy_bw);
  }
  cudaFree(x), cudaFree(y), cudaFree(off);
}

struct DecodeCase {
  int B, Hq, Hk, Lq, Lk;
};

/** decode_tc_fwd<bf16, D, NT> plus combine_splits on each shape, over the blocks per SM the
 * split count aims at (the host's choice: 1, 2 for D = 64). */
template <int D, int NT>
static void decode_sweep(double copy_bw, std::initializer_list<DecodeCase> shapes) {
  using namespace kiln::attn;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  auto kern = decode_tc_fwd<bfloat16, D, NT>;
  const int smem = decode_tc_smem<D, NT>();
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, 128, smem));
  const int sms = prop.multiProcessorCount;
  printf("  decode_tc_fwd D%d NT%d: %d B of shared memory, %d resident blocks per SM\n", D, NT,
         smem, per_sm);
  for (const DecodeCase& sh : shapes) {
    const size_t nq = size_t(sh.B) * sh.Hq * sh.Lq * D, nk = size_t(sh.B) * sh.Hk * sh.Lk * D;
    const long long rows = (long long)sh.B * sh.Hq * sh.Lq;
    bfloat16 *q, *k, *v, *out;
    float *lse, *po, *pml;
    CK(cudaMalloc(&q, nq * 2));
    CK(cudaMalloc(&k, nk * 2));
    CK(cudaMalloc(&v, nk * 2));
    CK(cudaMalloc(&out, nq * 2));
    CK(cudaMalloc(&lse, rows * 4));
    CK(cudaMalloc(&po, 1024 * rows * D * 4));
    CK(cudaMalloc(&pml, 1024 * rows * 2 * 4));
    CK(cudaMemset(q, 0x3c, nq * 2));
    CK(cudaMemset(k, 0x3c, nk * 2));
    CK(cudaMemset(v, 0x3c, nk * 2));
    Args a{};
    a.q_l = D, a.q_h = (long long)sh.Lq * D, a.q_b = a.q_h * sh.Hq;
    a.k_l = a.v_l = D, a.k_h = a.v_h = (long long)sh.Lk * D, a.k_b = a.v_b = a.k_h * sh.Hk;
    a.B = sh.B, a.Hq = sh.Hq, a.Hk = sh.Hk, a.R = sh.Hq / sh.Hk, a.Lq = sh.Lq, a.Lk = sh.Lk;
    a.D = a.Dv = D, a.scale = 1.0f / std::sqrt(float(D)), a.mask = kNone, a.kv_vec = true;
    const int blocks = sh.B * sh.Hk;
    for (int per : {1, 2, 4, 8}) {
      if (per > 2 * per_sm) break;
      long long splits = std::max(1, std::min(per * sms / blocks, sh.Lk / 256));
      a.split_keys = ((sh.Lk + splits - 1) / splits + 63) / 64 * 64;
      splits = (sh.Lk + a.split_keys - 1) / a.split_keys;
      a.splits = int(splits);
      const double us = time_us([&] {
        kern<<<dim3(blocks, unsigned(splits)), 128, smem>>>(q, k, v, nullptr, out, lse, po, pml, a);
        if (splits > 1)
          combine_splits<bfloat16, float>
              <<<unsigned(rows), kCombineThreads>>>(po, pml, out, lse, rows, a.splits, D, a.Lk);
      });
      printf(
          "  decode D%d B%d H%d/%d Lq%d Lk%-6d aim %d/SM: splits %3lld (%4lld blocks)  %8.2f us  "
          "%5.1f%% copy\n",
          D, sh.B, sh.Hq, sh.Hk, sh.Lq, sh.Lk, per, splits, blocks * splits, us,
          100.0 * 2.0 * nk * 2 / us * 1e-3 / copy_bw);
    }
    cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(out), cudaFree(lse), cudaFree(po),
        cudaFree(pml);
  }
}

int main() {
  print_device();
  const double copy_bw = copy_bandwidth();
  rope_sweep(copy_bw);
  decode_sweep<128, 1>(copy_bw, {{1, 32, 8, 1, 4096},
                                 {1, 32, 8, 1, 32768},
                                 {4, 32, 8, 1, 32768},
                                 {8, 32, 8, 1, 4096},
                                 {1, 32, 32, 1, 8192}});
  decode_sweep<64, 1>(copy_bw, {{1, 32, 8, 1, 32768}, {4, 32, 8, 1, 32768}});
  decode_sweep<128, 2>(copy_bw, {{4, 32, 8, 4, 32768}});
}
