// Custom kernels on the CPU: the runtime's GPU semantics (every thread of a block, barriers
// with many threads, warp operations on partial warps and after early returns, atomics
// under contention, Metal and CUDA grid edges, half-precision rounding, dynamic shared
// memory, printf), errors (compile errors at the user's lines, no compiler, a deadlocked
// block), the disk cache (a second process loads, a tampered entry is recompiled), and the
// same kernels on the GPU when there is one (identical integer results).
//
// Each kernel is compiled once per process (and cached on disk across processes), so the
// cases share a few kernels that compute several things at once.
#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "kiln/backend/cpu/kernel_runtime/compiled_kernel.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/backend/gpu.h"
#include "kiln/fast.h"
#include "scoped_env.h"
#include "test_utils.h"

extern char** environ;

namespace kiln {
namespace {

namespace fs = std::filesystem;
using fast::KernelCompileError;

const Device kCpu = Device::cpu;

array ints(const std::vector<int>& v) {
  return array(v.begin(), Shape{static_cast<int>(v.size())}, int32);
}

std::vector<int> random_ints(size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<int> v(n);
  for (auto& x : v) x = u(test::rng());
  return v;
}

std::vector<int> to_ints(const array& a) {
  std::vector<int> out;
  for (double d : test::to_double(a)) out.push_back(static_cast<int>(d));
  return out;
}

std::string random_tag() {
  static std::mt19937_64 g(std::random_device{}());
  return std::to_string(g());
}

using test::ScopedEnv;

// ---------------------------------------------------------------- the kernels

// The seed document's example (Metal flavour, float16 input, T = float).
fast::KernelFunction seed_exp() {
  return fast::metal_kernel("cpu_seed_exp", {"inp"}, {"out"}, R"(
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
  )");
}

// Block sums with a shared-memory tree: 1024 threads per block, a barrier per level, and
// __syncthreads_count of the odd values.
fast::KernelFunction block_sum() {
  return fast::cuda_kernel("cpu_block_sum", {"x"}, {"sums", "odd"}, R"(
    __shared__ int buf[1024];
    const int t = threadIdx.x;
    const int v = x[blockIdx.x * blockDim.x + t];
    buf[t] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (t < s) buf[t] += buf[t + s];
      __syncthreads();
    }
    const int n_odd = __syncthreads_count(v & 1);
    if (t == 0) {
      sums[blockIdx.x] = buf[0];
      odd[blockIdx.x] = n_odd;
    }
  )");
}

// Metal simdgroup functions on threadgroups of 40 (a full simdgroup and one of 8 lanes),
// with the lanes whose index is 3 mod 7 returning first. Every result is defined on the
// GPU too (no reads from lanes that left).
fast::KernelFunction simd_ops() {
  return fast::metal_kernel("cpu_simd_ops", {"x"},
                            {"sum", "mx", "pre", "ballot", "first", "all_pos", "count"}, R"(
    uint i = thread_position_in_grid.x;
    if (thread_index_in_threadgroup % 7 == 3) return;
    int v = x[i];
    sum[i] = simd_sum(v);
    mx[i] = simd_max(v);
    pre[i] = simd_prefix_exclusive_sum(v);
    ballot[i] = uint(uint64_t(simd_ballot(v > 0)));
    first[i] = simd_broadcast_first(v);
    all_pos[i] = simd_all(v > -1000) ? 1 : 0;
    count[i] = simd_sum(1);
  )");
}

// Reductions of two types and four operations, several on one line, the same one twice in a
// row: each completion computes its own (the lanes of a completion share one result), on
// threadgroups of 48 (a full simdgroup and one of 16) with the lanes 2 mod 5 returning first.
fast::KernelFunction simd_reductions() {
  return fast::metal_kernel("cpu_simd_reductions", {"x"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    if (thread_index_in_threadgroup % 5 == 2) return;
    float f = x[i];
    int k = int(x[i]);
    out[3 * i] = simd_sum(f) - simd_sum(f * 2.0f);
    out[3 * i + 1] = float(simd_sum(k) * 1000 + simd_max(k));
    out[3 * i + 2] = simd_max(f) + simd_min(f) * 1000.0f;
  )");
}

// CUDA warp functions on full warps: shuffles (with widths), votes, reductions, matches.
fast::KernelFunction warp_ops() {
  return fast::cuda_kernel("cpu_warp_ops", {"x"}, {"out"}, R"(
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % 32;
    int v = x[i];
    int tree = v;
    for (int o = 16; o > 0; o /= 2) tree += __shfl_xor_sync(0xffffffff, tree, o);
    int down = __shfl_down_sync(0xffffffff, v, 3);
    int up = __shfl_up_sync(0xffffffff, v, 2, 8);
    int idx = __shfl_sync(0xffffffff, v, 5, 16);
    unsigned b = __ballot_sync(0xffffffff, v > 0);
    int any = __any_sync(0xffffffff, v > 90);
    int all = __all_sync(0xffffffff, v > -101);
    int red = __reduce_add_sync(0xffffffff, v);
    unsigned same = __match_any_sync(0xffffffff, v % 4);
    int* o = out + i * 9;
    o[0] = tree; o[1] = down; o[2] = up; o[3] = idx; o[4] = (int)b;
    o[5] = any; o[6] = all; o[7] = red; o[8] = (int)same;
    (void)lane;
  )");
}

// CUDA warp functions after early returns: what __activemask() reports, and reductions
// over it.
fast::KernelFunction warp_active() {
  return fast::cuda_kernel("cpu_warp_active", {"x"}, {"out"}, R"(
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (x[i] % 3 == 0) return;
    unsigned m = __activemask();
    out[2 * i] = (int)m;
    out[2 * i + 1] = __reduce_max_sync(m, x[i]);
  )");
}

// Atomics under contention: a global counter, float and integer sums, a maximum, and a
// per-block spin lock guarding a plain increment (the barrier makes threads fibers, so
// the lock is contended inside a block too).
fast::KernelFunction atomics() {
  return fast::cuda_kernel("cpu_atomics", {"x"}, {"count", "fsum", "mx", "guarded"}, R"(
    __shared__ int lock;
    if (threadIdx.x == 0) lock = 0;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&count[0], 1);
    atomicAdd(&fsum[0], 1.0f);
    atomicMax(&mx[0], x[i]);
    while (atomicCAS(&lock, 0, 1) != 0) {
    }
    guarded[blockIdx.x] += 1;
    atomicExch(&lock, 0);
    __syncthreads();
  )",
                           "", true, false);
}

// Metal atomics on atomic outputs: a histogram.
fast::KernelFunction histogram() {
  return fast::metal_kernel("cpu_histogram", {"x"}, {"hist"}, R"(
    uint i = thread_position_in_grid.x;
    atomic_fetch_add_explicit(&hist[x[i] & 7], 1, memory_order_relaxed);
  )",
                            "", true, true);
}

// Metal dispatch on a ragged 2-D grid: what each thread sees, and how many threads ran.
fast::KernelFunction metal_edges() {
  return fast::metal_kernel("cpu_metal_edges", {"x"}, {"info", "ran"}, R"(
    uint2 g = thread_position_in_grid.xy;
    uint idx = g.y * threads_per_grid.x + g.x;
    // atomic_outputs makes every output atomic, as in MLX: plain stores go through
    // atomic_store_explicit.
    int v[4] = {int(threads_per_threadgroup.x * 100 + threads_per_threadgroup.y),
                int(thread_index_in_threadgroup),
                int(simdgroup_index_in_threadgroup * 100 + thread_index_in_simdgroup),
                int(threadgroup_position_in_grid.x * 100 + threadgroups_per_grid.x)};
    for (int k = 0; k < 4; ++k)
      atomic_store_explicit(&info[4 * idx + k], v[k], memory_order_relaxed);
    atomic_fetch_add_explicit(&ran[0], x[0], memory_order_relaxed);
  )",
                            "", true, true);
}

// CUDA dispatch on the same kind of grid: ceil(grid / block) blocks, every thread runs; a
// header helper reads threadIdx; template int and bool arguments; two output dtypes.
fast::KernelFunction cuda_edges() {
  return fast::cuda_kernel("cpu_cuda_edges", {"x"}, {"info", "scaled"}, R"(
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    info[i] = lane_of_block() * 1000 + blockDim.x * 10 + gridDim.x;
    if (i < 37) scaled[i] = FLIP ? -x[i] * SCALE : x[i] * SCALE;
  )",
                           R"(
    __device__ int lane_of_block() { return threadIdx.x; }
  )");
}

// Half-precision arithmetic rounds after every operation, as on the GPU.
fast::KernelFunction half_math() {
  return fast::metal_kernel("cpu_half_math", {"a", "b", "c"}, {"out", "bf"}, R"(
    uint i = thread_position_in_grid.x;
    half p = a[i] * b[i];
    out[i] = p + c[i];
    bfloat q = bfloat(a[i]) * bfloat(b[i]);
    bf[i] = q - bfloat(c[i]);
  )");
}

// Dynamic shared memory above 48 KB: a reversal through it.
fast::KernelFunction dynamic_shared() {
  return fast::cuda_kernel("cpu_dynamic_shared", {"x"}, {"out"}, R"(
    extern __shared__ float sm[];
    const int t = threadIdx.x, n = blockDim.x;
    for (int k = t; k < 16384; k += n) sm[k] = x[blockIdx.x * 16384 + k];
    __syncthreads();
    for (int k = t; k < 16384; k += n) out[blockIdx.x * 16384 + k] = sm[16383 - k];
  )",
                           "", true, false, 16384 * 4);
}

std::tuple<int, int, int> d1(int n) {
  return {n, 1, 1};
}

// ---------------------------------------------------------------- semantics

TEST(CustomKernelCpu, SeedExampleRunsOnTheCpu) {
  array a = test::random_array({4, 16}, float16);
  auto out = seed_exp()({a}, {a.shape()}, {a.dtype()}, d1(a.size()), d1(256), {{"T", float32}},
                        std::nullopt, false, kCpu)[0];
  EXPECT_EQ(out.dtype(), float16);
  test::expect_allclose(out, a.shape(),
                        test::map_ref(test::to_double(a), [](double v) { return std::exp(v); }));
}

TEST(CustomKernelCpu, BarriersWithManyThreads) {
  const int blocks = 37, n = blocks * 1024;
  auto xs = random_ints(n, -1000, 1000);
  auto outs = block_sum()({ints(xs)}, {{blocks}, {blocks}}, {int32, int32}, d1(n), d1(1024), {},
                          std::nullopt, false, kCpu);
  auto sums = to_ints(outs[0]), odd = to_ints(outs[1]);
  for (int b = 0; b < blocks; ++b) {
    int s = 0, o = 0;
    for (int t = 0; t < 1024; ++t) s += xs[b * 1024 + t], o += xs[b * 1024 + t] & 1;
    EXPECT_EQ(sums[b], s) << "block " << b;
    EXPECT_EQ(odd[b], o) << "block " << b;
  }
}

TEST(CustomKernelCpu, SimdgroupFunctionsOnPartialSimdgroupsAndEarlyReturns) {
  const int tg = 40, groups = 5, n = tg * groups;
  auto xs = random_ints(n, -50, 50);
  std::vector<Shape> shapes(7, Shape{n});
  std::vector<Dtype> dtypes(7, int32);
  dtypes[3] = uint32;
  auto outs = simd_ops()({ints(xs)}, shapes, dtypes, d1(n), d1(tg), {}, -7.0f, false, kCpu);
  std::vector<std::vector<double>> got;
  for (auto& o : outs) got.push_back(test::to_double(o));
  for (int g = 0; g < groups; ++g) {
    for (int w = 0; w * 32 < tg; ++w) {
      std::vector<int> lanes;  // indices of the lanes that stay
      for (int l = 0; l < 32 && w * 32 + l < tg; ++l)
        if ((w * 32 + l) % 7 != 3) lanes.push_back(g * tg + w * 32 + l);
      int sum = 0, mx = -1000000, pre = 0;
      uint32_t ballot = 0;
      for (int i : lanes) {
        sum += xs[i];
        mx = std::max(mx, xs[i]);
        if (xs[i] > 0) ballot |= 1u << ((i - g * tg) % 32);
      }
      for (int i : lanes) {
        EXPECT_EQ(got[0][i], sum) << i;
        EXPECT_EQ(got[1][i], mx) << i;
        EXPECT_EQ(got[2][i], pre) << i;
        pre += xs[i];
        EXPECT_EQ(static_cast<uint32_t>(got[3][i]), ballot) << i;
        EXPECT_EQ(got[4][i], xs[lanes[0]]) << i;
        EXPECT_EQ(got[5][i], 1) << i;
        EXPECT_EQ(got[6][i], static_cast<int>(lanes.size())) << i;
      }
    }
    for (int t = 0; t < tg; ++t) {
      if (t % 7 == 3) {
        EXPECT_EQ(got[0][g * tg + t], -7) << "a returned lane wrote";
      }
    }
  }
}

TEST(CustomKernelCpu, EachReductionComputedForItsOwnLanes) {
  const int tg = 48, groups = 3, n = tg * groups;
  auto xs = random_ints(n, -50, 50);
  array x = astype(ints(xs), float32);
  auto got = test::to_double(
      simd_reductions()({x}, {{3 * n}}, {float32}, d1(n), d1(tg), {}, -7.0f, false, kCpu)[0]);
  for (int g = 0; g < groups; ++g) {
    for (int w = 0; w * 32 < tg; ++w) {
      std::vector<int> lanes;  // the threads of this simdgroup that stay
      for (int l = 0; l < 32 && w * 32 + l < tg; ++l)
        if ((w * 32 + l) % 5 != 2) lanes.push_back(g * tg + w * 32 + l);
      int sum = 0, mx = -1000, mn = 1000;
      for (int i : lanes) sum += xs[i], mx = std::max(mx, xs[i]), mn = std::min(mn, xs[i]);
      for (int i : lanes) {
        EXPECT_EQ(got[3 * i], -sum) << i;
        EXPECT_EQ(got[3 * i + 1], sum * 1000 + mx) << i;
        EXPECT_EQ(got[3 * i + 2], mx + mn * 1000) << i;
      }
    }
    for (int t = 2; t < tg; t += 5) EXPECT_EQ(got[3 * (g * tg + t)], -7) << "a returned lane wrote";
  }
}

TEST(CustomKernelCpu, WarpShufflesVotesAndReductions) {
  const int n = 128;
  auto xs = random_ints(n, -100, 100);
  auto out = to_ints(
      warp_ops()({ints(xs)}, {{n * 9}}, {int32}, d1(n), d1(64), {}, std::nullopt, false, kCpu)[0]);
  for (int i = 0; i < n; ++i) {
    const int w = i / 32 * 32, lane = i % 32;
    int tree = 0, red = 0;
    bool any = false, all = true;
    uint32_t ballot = 0, same = 0;
    for (int l = 0; l < 32; ++l) {
      tree += xs[w + l];
      if (xs[w + l] > 0) ballot |= 1u << l;
      any = any || xs[w + l] > 90;
      all = all && xs[w + l] > -101;
      if (xs[w + l] % 4 == xs[i] % 4) same |= 1u << l;
    }
    red = tree;
    const int* o = &out[i * 9];
    EXPECT_EQ(o[0], tree) << i;
    EXPECT_EQ(o[1], lane + 3 < 32 ? xs[i + 3] : xs[i]) << i;
    EXPECT_EQ(o[2], lane % 8 >= 2 ? xs[i - 2] : xs[i]) << i;
    EXPECT_EQ(o[3], xs[w + lane / 16 * 16 + 5]) << i;
    EXPECT_EQ(static_cast<uint32_t>(o[4]), ballot) << i;
    EXPECT_EQ(o[5], any ? 1 : 0) << i;
    EXPECT_EQ(o[6], all ? 1 : 0) << i;
    EXPECT_EQ(o[7], red) << i;
    EXPECT_EQ(static_cast<uint32_t>(o[8]), same) << i;
  }
}

TEST(CustomKernelCpu, ActiveMaskAfterEarlyReturns) {
  const int n = 96;  // the last warp is partial: blocks of 48
  auto xs = random_ints(n, -100, 100);
  auto out = to_ints(
      warp_active()({ints(xs)}, {{2 * n}}, {int32}, d1(n), d1(48), {}, -5.0f, false, kCpu)[0]);
  for (int i = 0; i < n; ++i) {
    const int block = i / 48, t = i % 48, w = block * 48 + t / 32 * 32;
    const int end = std::min(w + 32, block * 48 + 48);
    if (xs[i] % 3 == 0) {
      EXPECT_EQ(out[2 * i], -5) << i;
      continue;
    }
    uint32_t mask = 0;
    int mx = -1000;
    for (int j = w; j < end; ++j) {
      if (xs[j] % 3 == 0) continue;
      mask |= 1u << (j - w);
      mx = std::max(mx, xs[j]);
    }
    EXPECT_EQ(static_cast<uint32_t>(out[2 * i]), mask) << i;
    EXPECT_EQ(out[2 * i + 1], mx) << i;
  }
}

TEST(CustomKernelCpu, AtomicsUnderContention) {
  const int blocks = 24, tg = 256, n = blocks * tg;
  auto xs = random_ints(n, -100000, 100000);
  auto outs = atomics()({ints(xs)}, {{1}, {1}, {1}, {blocks}}, {int32, float32, int32, int32},
                        d1(n), d1(tg), {}, 0.0f, false, kCpu);
  EXPECT_EQ(to_ints(outs[0])[0], n);
  EXPECT_EQ(test::to_double(outs[1])[0], static_cast<double>(n));
  EXPECT_EQ(to_ints(outs[2])[0], std::max(0, *std::max_element(xs.begin(), xs.end())));
  for (int g : to_ints(outs[3])) EXPECT_EQ(g, tg);

  auto hs = random_ints(5000, 0, 1 << 20);
  auto hist =
      to_ints(histogram()({ints(hs)}, {{8}}, {int32}, d1(5000), d1(128), {}, 0.0f, false, kCpu)[0]);
  std::vector<int> ref(8, 0);
  for (int h : hs) ++ref[h & 7];
  EXPECT_EQ(hist, ref);
}

TEST(CustomKernelCpu, MetalDispatchHasNoThreadOutsideTheGrid) {
  const int gx = 37, gy = 5;
  auto outs = metal_edges()({ints({1})}, {{gx * gy * 4}, {1}}, {int32, int32}, {gx, gy, 1},
                            {16, 4, 1}, {}, 0.0f, false, kCpu);
  auto info = to_ints(outs[0]);
  EXPECT_EQ(to_ints(outs[1])[0], gx * gy) << "threads that ran";
  for (int y = 0; y < gy; ++y) {
    for (int x = 0; x < gx; ++x) {
      const int* o = &info[4 * (y * gx + x)];
      const int w = x / 16 < 2 ? 16 : gx % 16, h = y / 4 < 1 ? 4 : gy % 4;
      const int linear = (y % 4) * w + x % 16;
      EXPECT_EQ(o[0], w * 100 + h) << x << "," << y;
      EXPECT_EQ(o[1], linear) << x << "," << y;
      EXPECT_EQ(o[2], linear / 32 * 100 + linear % 32) << x << "," << y;
      EXPECT_EQ(o[3], x / 16 * 100 + 3) << x << "," << y;
    }
  }
}

TEST(CustomKernelCpu, CudaDispatchRunsEveryThreadOfEveryBlock) {
  auto xs = random_ints(37, -9, 9);
  auto outs = cuda_edges()({ints(xs)}, {{48}, {37}}, {int32, float32}, d1(37), d1(16),
                           {{"SCALE", 3}, {"FLIP", true}}, std::nullopt, false, kCpu);
  auto info = to_ints(outs[0]);
  for (int i = 0; i < 48; ++i) EXPECT_EQ(info[i], (i % 16) * 1000 + 16 * 10 + 3) << i;
  std::vector<double> ref;
  for (int v : xs) ref.push_back(-3.0 * v);
  test::expect_allclose(outs[1], {37}, ref);
}

TEST(CustomKernelCpu, HalfArithmeticRoundsEachOperation) {
  const int n = 500;
  array a = test::random_array({n}, float16, -8, 8), b = test::random_array({n}, float16, -8, 8),
        c = test::random_array({n}, float16, -8, 8);
  auto outs = half_math()({a, b, c}, {{n}, {n}}, {float16, bfloat16}, d1(n), d1(64), {},
                          std::nullopt, false, kCpu);
  auto av = test::to_double(a), bv = test::to_double(b), cv = test::to_double(c);
  auto got = test::to_double(outs[0]), gotb = test::to_double(outs[1]);
  for (int i = 0; i < n; ++i) {
    float16_t p = float16_t(float(av[i])) * float16_t(float(bv[i]));
    EXPECT_EQ(got[i], double(float(p + float16_t(float(cv[i]))))) << i;
    bfloat16_t q = bfloat16_t(float(av[i])) * bfloat16_t(float(bv[i]));
    EXPECT_EQ(gotb[i], double(float(q - bfloat16_t(float(cv[i]))))) << i;
  }
}

TEST(CustomKernelCpu, DynamicSharedMemoryAbove48KB) {
  array x = test::random_array({3 * 16384}, float32);
  auto out = dynamic_shared()({x}, {x.shape()}, {float32}, d1(3 * 256), d1(256), {}, std::nullopt,
                              false, kCpu)[0];
  auto xv = test::to_double(x);
  std::vector<double> ref(xv.size());
  for (int b = 0; b < 3; ++b)
    for (int k = 0; k < 16384; ++k) ref[b * 16384 + k] = xv[b * 16384 + 16383 - k];
  test::expect_allclose(out, x.shape(), ref, 0.0);
}

TEST(CustomKernelCpu, PrintfWritesFromKernels) {
  auto k = fast::cuda_kernel("cpu_printf", {"x"}, {"out"}, R"(
    printf("kernel thread %d of block %d sees %d\n", (int)threadIdx.x, (int)blockIdx.x,
           x[threadIdx.x]);
    out[threadIdx.x] = 0;
  )");
  testing::internal::CaptureStdout();
  auto out = k({ints({7, 8, 9})}, {{3}}, {int32}, d1(3), d1(3), {}, std::nullopt, false, kCpu)[0];
  out.eval();
  std::string text = testing::internal::GetCapturedStdout();
  for (int t = 0; t < 3; ++t) {
    std::string line =
        "kernel thread " + std::to_string(t) + " of block 0 sees " + std::to_string(7 + t) + "\n";
    EXPECT_NE(text.find(line), std::string::npos) << text;
  }
}

TEST(CustomKernelCpu, UsesEveryCoreForBlocks) {
  // Many small blocks: a correct result from the pool's parallel schedule (the sums of
  // block_sum with 1024-thread blocks exercise fibers; this exercises the block loop).
  const int n = 1 << 20;
  array a = test::random_array({n}, float32);
  auto k = fast::metal_kernel("cpu_axpy", {"x"}, {"y"}, R"(
    uint i = thread_position_in_grid.x;
    y[i] = 2.0f * x[i] + 1.0f;
  )");
  auto y = k({a}, {{n}}, {float32}, d1(n), d1(256), {}, std::nullopt, false, kCpu)[0];
  test::expect_allclose(y, {n},
                        test::map_ref(test::to_double(a), [](double v) { return 2 * v + 1; }));
}

// ---------------------------------------------------------------- errors

TEST(CustomKernelCpuErrors, CompileErrorsPointAtTheUsersLine) {
  auto k = fast::metal_kernel("cpu_bad_source", {"x"}, {"out"},
                              "uint i = thread_position_in_grid.x;\n"
                              "out[i] = x[i] + undefined_name_here;\n");
  array x = test::random_array({8}, float32);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the failure is remembered, not retried
    try {
      k({x}, {{8}}, {float32}, d1(8), d1(8), {}, std::nullopt, false, kCpu)[0].eval();
      FAIL() << "expected KernelCompileError";
    } catch (const KernelCompileError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("cpu_bad_source"), std::string::npos) << m;
      EXPECT_NE(m.find("source:2"), std::string::npos) << m;
      EXPECT_NE(m.find("undefined_name_here"), std::string::npos) << m;
      EXPECT_NE(m.find("Generated signature"), std::string::npos) << m;
    }
  }
  // The process and other kernels are fine.
  auto y = seed_exp()({x}, {{8}}, {float32}, d1(8), d1(8), {{"T", float32}}, std::nullopt, false,
                      kCpu)[0];
  test::expect_allclose(y, {8},
                        test::map_ref(test::to_double(x), [](double v) { return std::exp(v); }));
}

TEST(CustomKernelCpuErrors, MissingCompilerSaysWhatToInstall) {
  ScopedEnv cxx("KILN_CXX", "/nonexistent/bin/c++");
  auto k = fast::metal_kernel("cpu_no_compiler", {"x"}, {"out"},
                              "// " + random_tag() + "\nout[0] = x[0];");
  try {
    k({ints({1})}, {{1}}, {int32}, d1(1), d1(1), {}, std::nullopt, false, kCpu)[0].eval();
    FAIL() << "expected KernelCompileError";
  } catch (const KernelCompileError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("KILN_CXX"), std::string::npos) << m;
    EXPECT_NE(m.find("apt-get install g++"), std::string::npos) << m;
  }
}

TEST(CustomKernelCpuErrors, DeadlockAtABarrierTimesOut) {
  ScopedEnv timeout("KILN_KERNEL_TIMEOUT", "1");
  auto k = fast::cuda_kernel("cpu_deadlock", {"x"}, {"out"}, R"(
    __shared__ volatile int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
      while (flag == 0) {
      }
    } else {
      __syncthreads();
      flag = 1;
    }
    out[threadIdx.x] = x[0];
  )");
  testing::internal::CaptureStderr();
  try {
    k({ints({1})}, {{64}}, {int32}, d1(64), d1(64), {}, std::nullopt, false, kCpu)[0].eval();
    testing::internal::GetCapturedStderr();
    FAIL() << "expected a timeout error";
  } catch (const std::runtime_error& e) {
    testing::internal::GetCapturedStderr();
    std::string m = e.what();
    EXPECT_NE(m.find("cpu_deadlock"), std::string::npos) << m;
    EXPECT_NE(m.find("no progress"), std::string::npos) << m;
    EXPECT_NE(m.find("thread (0, 0, 0)"), std::string::npos) << m;
    EXPECT_NE(m.find("KILN_KERNEL_TIMEOUT"), std::string::npos) << m;
  }
  // Other kernels still run, with fibers too.
  auto xs = random_ints(2048, -5, 5);
  auto sums = to_ints(block_sum()({ints(xs)}, {{2}, {2}}, {int32, int32}, d1(2048), d1(1024), {},
                                  std::nullopt, false, kCpu)[0]);
  EXPECT_EQ(sums[0], std::accumulate(xs.begin(), xs.begin() + 1024, 0));
}

// Under ThreadSanitizer the kernels are instrumented and each GPU thread's fiber is a TSan
// fiber: blocks that write one element without atomics race, in the block loop and in fiber
// mode (blocks on different OS threads), and TSan must say so. A fresh process (threadsafe
// death test) with halt_on_error: TSan exits with 66 after its report.
bool thread_sanitizer() {
#if defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return true;
#endif
#endif
  return false;
}

TEST(CustomKernelCpuErrors, ThreadSanitizerSeesARaceBetweenBlocks) {
  if (!thread_sanitizer()) GTEST_SKIP() << "a ThreadSanitizer build's test";
  if (cpu::num_threads() < 2) GTEST_SKIP() << "one CPU thread: blocks never overlap";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv tsan("TSAN_OPTIONS", "halt_on_error=1");
  for (const bool fibers : {false, true}) {
    auto k =
        fast::cuda_kernel(fibers ? "cpu_race_fibers" : "cpu_race_plain", {"x"}, {"out"},
                          std::string(fibers ? "__syncthreads();\n" : "") +
                              // Enough work per block that both OS threads take blocks.
                              "int acc = 0;\n"
                              "for (int i = 0; i < 1000; ++i) acc += ((volatile const int*)x)[0];\n"
                              "out[0] = acc + int(blockIdx.x);");
    EXPECT_EXIT(
        {
          k({ints({1})}, {{1}}, {int32}, d1(64 * 1024), d1(64), {}, std::nullopt, false, kCpu)[0]
              .eval();
          std::exit(0);
        },
        testing::ExitedWithCode(66), "ThreadSanitizer: data race")
        << (fibers ? "fiber mode" : "block loop");
  }
}

// ---------------------------------------------------------------- disk cache

// Points the disk cache at a fresh private directory (a child process started by a test
// uses its parent's, named by KILN_TEST_CPU_CACHE_DIR).
class CustomKernelCpuCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* parent = std::getenv("KILN_TEST_CPU_CACHE_DIR")) {
      dir_ = parent;
    } else {
      root_ = fs::temp_directory_path() / ("kiln-cpu-cache-" + random_tag());
      dir_ = (root_ / "cache").string();
    }
    env_.emplace("KILN_CACHE_DIR", dir_);
    cpu_rt::clear_kernel_memory_cache();
    cpu_rt::reset_kernel_cache_stats();
  }
  void TearDown() override {
    env_.reset();
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  fs::path root_;
  std::string dir_;
  std::optional<ScopedEnv> env_;
};

fast::KernelFunction tagged_kernel(const std::string& tag) {
  return fast::metal_kernel("cpu_cached", {"x"}, {"out"},
                            "// " + tag +
                                "\nuint i = thread_position_in_grid.x;\n"
                                "out[i] = x[i] * 3;\n");
}

std::vector<int> run_tagged(const std::string& tag) {
  return to_ints(tagged_kernel(tag)({ints({1, 2, 3})}, {{3}}, {int32}, d1(3), d1(3), {},
                                    std::nullopt, false, kCpu)[0]);
}

TEST_F(CustomKernelCpuCache, SecondProcessLoadsFromDisk) {
  const std::string tag = random_tag();
  EXPECT_EQ(run_tagged(tag), (std::vector<int>{3, 6, 9}));
  EXPECT_EQ(cpu_rt::kernel_cache_stats().compiles, 1u);
  struct stat st;
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "the cache directory is private";

  pid_t pid =
      test::spawn_self("CustomKernelCpuCache.ChildLoadsFromDisk",
                       {"KILN_TEST_CPU_CACHE_TAG=" + tag, "KILN_TEST_CPU_CACHE_DIR=" + dir_});
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed";
}

TEST_F(CustomKernelCpuCache, ChildLoadsFromDisk) {
  const char* tag = std::getenv("KILN_TEST_CPU_CACHE_TAG");
  if (!tag) GTEST_SKIP() << "run by SecondProcessLoadsFromDisk";
  EXPECT_EQ(run_tagged(tag), (std::vector<int>{3, 6, 9}));
  auto s = cpu_rt::kernel_cache_stats();
  EXPECT_EQ(s.compiles, 0u);
  EXPECT_EQ(s.disk_hits, 1u);
}

TEST_F(CustomKernelCpuCache, TamperedEntryIsRecompiled) {
  const std::string tag = random_tag();
  run_tagged(tag);
  std::string entry;
  for (const auto& f : fs::directory_iterator(dir_))
    if (f.path().extension() == ".kso") entry = f.path().string();
  ASSERT_FALSE(entry.empty());
  {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-100, std::ios::end);
    char c = static_cast<char>(f.get() ^ 0x5a);
    f.seekp(-100, std::ios::end);
    f.put(c);
  }
  cpu_rt::clear_kernel_memory_cache();
  cpu_rt::reset_kernel_cache_stats();
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_tagged(tag), (std::vector<int>{3, 6, 9}));
  std::string err = testing::internal::GetCapturedStderr();
  auto s = cpu_rt::kernel_cache_stats();
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_NE(err.find("corrupt"), std::string::npos) << err;
  cpu_rt::clear_kernel_memory_cache();
  cpu_rt::reset_kernel_cache_stats();
  run_tagged(tag);
  EXPECT_EQ(cpu_rt::kernel_cache_stats().disk_hits, 1u) << "the entry was rewritten";
}

TEST_F(CustomKernelCpuCache, CompileOnlyForTheCpu) {
  auto k = tagged_kernel(random_tag());
  std::string src = k.compile({int32}, {1}, {int32}, {}, "cpu");
  EXPECT_NE(src.find("KILN_CPU_ENTRY"), std::string::npos);
  EXPECT_EQ(cpu_rt::kernel_cache_stats().compiles, 1u);
}

// ---------------------------------------------------------------- CPU against GPU

// Runs `f` on the CPU and on the GPU and expects identical results (integer kernels).
void expect_same_on_both(const std::function<std::vector<array>(Device)>& f) {
  auto cpu = f(Device::cpu), gpu = f(Device::gpu);
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(to_ints(cpu[i]), to_ints(gpu[i])) << "output " << i;
  }
}

TEST(CustomKernelCpuVsGpu, IntegerKernelsGiveIdenticalResults) {
  if (!gpu::is_available()) GTEST_SKIP() << "no GPU";
  auto xs = ints(random_ints(37 * 1024, -1000, 1000));
  expect_same_on_both([&](Device d) {
    return block_sum()({xs}, {{37}, {37}}, {int32, int32}, d1(37 * 1024), d1(1024), {},
                       std::nullopt, false, d);
  });
  auto ys = ints(random_ints(200, -50, 50));
  std::vector<Shape> shapes(7, Shape{200});
  std::vector<Dtype> dtypes(7, int32);
  dtypes[3] = uint32;
  expect_same_on_both([&](Device d) {
    return simd_ops()({ys}, shapes, dtypes, d1(200), d1(40), {}, -7.0f, false, d);
  });
  auto zs = ints(random_ints(128, -100, 100));
  expect_same_on_both([&](Device d) {
    return warp_ops()({zs}, {{128 * 9}}, {int32}, d1(128), d1(64), {}, std::nullopt, false, d);
  });
  expect_same_on_both([&](Device d) {
    return warp_active()({zs}, {{256}}, {int32}, d1(96), d1(48), {}, -5.0f, false, d);
  });
  expect_same_on_both([&](Device d) {
    return metal_edges()({ints({1})}, {{37 * 5 * 4}, {1}}, {int32, int32}, {37, 5, 1}, {16, 4, 1},
                         {}, 0.0f, false, d);
  });
  auto hs = ints(random_ints(5000, 0, 1 << 20));
  expect_same_on_both([&](Device d) {
    return histogram()({hs}, {{8}}, {int32}, d1(5000), d1(128), {}, 0.0f, false, d);
  });
}

TEST(CustomKernelCpuVsGpu, FloatKernelsAgreeWithinRounding) {
  if (!gpu::is_available()) GTEST_SKIP() << "no GPU";
  array a = test::random_array({500}, float16, -8, 8), b = test::random_array({500}, float16),
        c = test::random_array({500}, float16);
  auto run = [&](Device d) {
    return half_math()({a, b, c}, {{500}, {500}}, {float16, bfloat16}, d1(500), d1(64), {},
                       std::nullopt, false, d);
  };
  auto cpu = run(Device::cpu), gpu = run(Device::gpu);
  test::expect_allclose(cpu[0], {500}, test::to_double(gpu[0]), 0.0);  // exact: one rounding
  test::expect_allclose(cpu[1], {500}, test::to_double(gpu[1]), 0.0);
  array x = test::random_array({4, 16}, float16);
  auto e = [&](Device d) {
    return seed_exp()({x}, {x.shape()}, {float16}, d1(64), d1(256), {{"T", float32}}, std::nullopt,
                      false, d)[0];
  };
  test::expect_allclose(e(Device::cpu), x.shape(), test::to_double(e(Device::gpu)));
}

}  // namespace
}  // namespace kiln
