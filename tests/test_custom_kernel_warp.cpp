// The GPU-specific Metal headers (simdgroup functions, simdgroup matrices, 16-bit atomics)
// compiled for the host against an emulated warp: one std::thread per active lane, each
// CUDA warp intrinsic an exchange through a barrier, PTX's m16n8k8 from its fragment
// tables. CI checks their lane bookkeeping (partial warps, scans, the matrix layout and
// tensor-core fragments) this way; test_custom_kernel.cpp checks them on hardware.
#include <gtest/gtest.h>

#include <barrier>
#include <thread>

#include "test_utils.h"

namespace warp_emulation {

// One warp: the active lanes, the lane of the calling thread, a barrier among them.
struct Warp {
  unsigned mask = 0;
  std::barrier<>* barrier = nullptr;
  uint32_t slots[32] = {};
  uint32_t a01[32], a23[32], b01[32];
  float c[32][4];
};
Warp warp;
thread_local unsigned this_lane;

// Every active lane publishes `v`; returns the value of lane `src` (its own when `src`
// is outside the warp, as CUDA's shuffles do).
uint32_t exchange(uint32_t v, int src) {
  warp.slots[this_lane] = v;
  warp.barrier->arrive_and_wait();
  uint32_t r = src >= 0 && src < 32 ? warp.slots[src] : v;
  warp.barrier->arrive_and_wait();
  return r;
}

// Runs `body(lane)` on every lane of `mask`, each on its own thread.
void run_warp(unsigned mask, const std::function<void(unsigned)>& body) {
  warp.mask = mask;
  std::barrier<> b(__builtin_popcount(mask));
  warp.barrier = &b;
  std::vector<std::thread> lanes;
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l) & 1)
      lanes.emplace_back([&, l] {
        this_lane = l;
        body(l);
      });
  for (auto& t : lanes) t.join();
}

}  // namespace warp_emulation

namespace {
// The CUDA intrinsics the headers use, on the emulated warp (file-local).
using warp_emulation::exchange;
[[maybe_unused]] unsigned __activemask() {
  return warp_emulation::warp.mask;
}
[[maybe_unused]] uint32_t __shfl_sync(unsigned, uint32_t v, unsigned src) {
  return exchange(v, int(src & 31));
}
[[maybe_unused]] uint32_t __shfl_up_sync(unsigned, uint32_t v, unsigned d) {
  int s = int(warp_emulation::this_lane) - int(d);
  return exchange(v, s < 0 ? int(warp_emulation::this_lane) : s);
}
[[maybe_unused]] uint32_t __shfl_down_sync(unsigned, uint32_t v, unsigned d) {
  int s = int(warp_emulation::this_lane + d);
  return exchange(v, s > 31 ? int(warp_emulation::this_lane) : s);
}
[[maybe_unused]] uint32_t __shfl_xor_sync(unsigned, uint32_t v, unsigned m) {
  return exchange(v, int(warp_emulation::this_lane ^ m));
}
[[maybe_unused]] unsigned __ballot_sync(unsigned mask, int p) {
  unsigned bits = 0;
  for (int l = 0; l < 32; ++l)
    if (exchange(p != 0, l) && ((mask >> l) & 1)) bits |= 1u << l;
  return bits;
}
[[maybe_unused]] int __any_sync(unsigned mask, int p) {
  return __ballot_sync(mask, p) != 0;
}
[[maybe_unused]] int __all_sync(unsigned mask, int p) {
  return __ballot_sync(mask, p) == mask;
}
[[maybe_unused]] void __syncwarp(unsigned) {}
[[maybe_unused]] int __ffs(unsigned x) {
  return __builtin_ffs(x);
}
[[maybe_unused]] int __clz(unsigned x) {
  return x ? __builtin_clz(x) : 32;
}
// CUDA's atomics, as host atomics on the same addresses.
template <typename T>
T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
template <typename T, typename F>
T rmw(T* p, F f) {
  T old = *p;
  while (!__atomic_compare_exchange_n(p, &old, f(old), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
template <typename T, typename U>
T atomicAdd(T* p, U v) {
  return rmw(p, [&](T x) { return T(x + v); });
}
template <typename T, typename U>
T atomicMax(T* p, U v) {
  return rmw(p, [&](T x) { return x < T(v) ? T(v) : x; });
}
template <typename T, typename U>
T atomicMin(T* p, U v) {
  return rmw(p, [&](T x) { return T(v) < x ? T(v) : x; });
}
template <typename T, typename U>
T atomicAnd(T* p, U v) {
  return rmw(p, [&](T x) { return T(x & v); });
}
template <typename T, typename U>
T atomicOr(T* p, U v) {
  return rmw(p, [&](T x) { return T(x | v); });
}
template <typename T, typename U>
T atomicXor(T* p, U v) {
  return rmw(p, [&](T x) { return T(x ^ v); });
}
template <typename T, typename U>
T atomicExch(T* p, U v) {
  return rmw(p, [&](T) { return T(v); });
}
}  // namespace

// Standard headers first, so that the kernel headers' own includes are no-ops inside the
// namespace below; the namespace keeps these host instantiations apart from any other
// copy of the layer in this binary. The only inline assembly (the lane id) reads the
// emulated lane.
#include <cmath>
#include <cstddef>
#include <cstdint>
namespace warp_emulation {
#define asm(...) (l = this_lane)
#include "kiln/backend/kernels/metal/common.h"
#include "kiln/backend/kernels/metal/gpu_simd.h"
#undef asm
namespace metal::detail {
// PTX's mma.sync.m16n8k8 (16-bit inputs, float accumulators), from its fragment tables:
// lane g*4+t holds A[g][2t..2t+1] (a01), A[g+8][..] (a23), B[2t..2t+1][g] (b01), and
// C/D rows g and g+8 at columns 2t, 2t+1.
template <typename TI>
void mma_m16n8k8(float (&d)[4], uint32_t a01, uint32_t a23, uint32_t b01, const float (&c)[4]) {
  const unsigned me = this_lane;
  warp.a01[me] = a01, warp.a23[me] = a23, warp.b01[me] = b01;
  for (int i = 0; i < 4; ++i) warp.c[me][i] = c[i];
  warp.barrier->arrive_and_wait();
  auto h = [](uint32_t w, int hi) { return float(TI::from_bits(uint16_t(hi ? w >> 16 : w))); };
  float A[16][8], B[8][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    int g = l >> 2, t = l & 3;
    for (int j = 0; j < 2; ++j) {
      A[g][2 * t + j] = h(warp.a01[l], j);
      A[g + 8][2 * t + j] = h(warp.a23[l], j);
      B[2 * t + j][g] = h(warp.b01[l], j);
      C[g][2 * t + j] = warp.c[l][j];
      C[g + 8][2 * t + j] = warp.c[l][2 + j];
    }
  }
  warp.barrier->arrive_and_wait();
  const int g = me >> 2, t = me & 3;
  for (int i = 0; i < 4; ++i) {
    int r = g + (i / 2) * 8, col = 2 * t + (i & 1);
    float acc = C[r][col];
    for (int k = 0; k < 8; ++k) acc += A[r][k] * B[k][col];
    d[i] = acc;
  }
}
}  // namespace metal::detail
#define KILN_SIMDGROUP_MMA 1
#define asm(...) (l = this_lane)
#include "kiln/backend/kernels/metal/gpu_atomic.h"
#include "kiln/backend/kernels/metal/gpu_matrix.h"
#undef asm
#undef KILN_SIMDGROUP_MMA
}  // namespace warp_emulation

namespace {
namespace wm = warp_emulation::metal;
using warp_emulation::run_warp;

const unsigned kMasks[] = {0xffffffffu, 0x0000ffffu, 0x0000000fu,
                           0x80000001u, 0x5a5a1234u, 0x00000001u};
}  // namespace

TEST(CustomKernelWarpEmulated, ReductionsScansAndVotesOnPartialWarps) {
  for (unsigned mask : kMasks) {
    float x[32];
    int xi[32];
    for (int l = 0; l < 32; ++l) {
      x[l] = float(int(kiln::test::rng()() % 9) - 4);  // small integers: exact sums in any order
      xi[l] = int(kiln::test::rng()() % 1000) - 500;
    }
    float sum[32], mx[32], inc[32], exc[32], first[32];
    int isum[32], iand[32];
    wm::float4 vsum[32];
    bool any[32], all[32];
    uint64_t ballot[32];
    run_warp(mask, [&](unsigned l) {
      sum[l] = wm::simd_sum(x[l]);
      mx[l] = wm::simd_max(x[l]);
      isum[l] = wm::simd_sum(xi[l]);
      iand[l] = wm::simd_and(xi[l]);
      inc[l] = wm::simd_prefix_inclusive_sum(x[l]);
      exc[l] = wm::simd_prefix_exclusive_sum(x[l]);
      vsum[l] = wm::simd_sum(wm::float4(x[l], 1.0f, 2.0f * x[l], -x[l]));
      first[l] = wm::simd_broadcast_first(x[l]);
      any[l] = wm::simd_any(x[l] > 3.0f);
      all[l] = wm::simd_all(x[l] > -4.0f);
      ballot[l] = static_cast<uint64_t>(wm::simd_ballot(x[l] > 0.0f));
    });
    float s = 0, m = -1e30f, running = 0;
    int is = 0, ia = -1;
    bool an = false, al = true;
    uint64_t bits = 0;
    for (int l = 0; l < 32; ++l) {
      if (!((mask >> l) & 1)) continue;
      s += x[l], m = std::max(m, x[l]), is += xi[l], ia &= xi[l];
      an = an || x[l] > 3, al = al && x[l] > -4;
      if (x[l] > 0) bits |= uint64_t(1) << l;
    }
    const int lowest = __builtin_ffs(mask) - 1;
    for (int l = 0; l < 32; ++l) {
      if (!((mask >> l) & 1)) continue;
      SCOPED_TRACE(testing::Message() << "mask " << std::hex << mask << std::dec << " lane " << l);
      EXPECT_EQ(sum[l], s);
      EXPECT_EQ(mx[l], m);
      EXPECT_EQ(isum[l], is);
      EXPECT_EQ(iand[l], ia);
      EXPECT_EQ(exc[l], running);
      running += x[l];
      EXPECT_EQ(inc[l], running);
      EXPECT_EQ(vsum[l].x, s);
      EXPECT_EQ(vsum[l].y, float(__builtin_popcount(mask)));
      EXPECT_EQ(vsum[l].z, 2 * s);
      EXPECT_EQ(vsum[l].w, -s);
      EXPECT_EQ(first[l], x[lowest]);
      EXPECT_EQ(any[l], an);
      EXPECT_EQ(all[l], al);
      EXPECT_EQ(ballot[l], bits);
    }
  }
}

TEST(CustomKernelWarpEmulated, Shuffles) {
  float x[32], idx[32], up[32], down[32], bfly[32], rot[32];
  double wide[32];
  for (int l = 0; l < 32; ++l) x[l] = float(kiln::test::rng()() % 1000);
  run_warp(0xffffffffu, [&](unsigned l) {
    idx[l] = wm::simd_shuffle(x[l], (l + 3) % 32);
    up[l] = wm::simd_shuffle_up(x[l], 2);
    down[l] = wm::simd_shuffle_down(x[l], 1);
    bfly[l] = wm::simd_shuffle_xor(x[l], 5);
    rot[l] = wm::simd_shuffle_rotate_up(x[l], 4);
    wide[l] = wm::simd_broadcast(double(x[l]) * 3, 7);
  });
  for (int l = 0; l < 32; ++l) {
    EXPECT_EQ(idx[l], x[(l + 3) % 32]);
    EXPECT_EQ(up[l], l >= 2 ? x[l - 2] : x[l]);
    EXPECT_EQ(down[l], l < 31 ? x[l + 1] : x[l]);
    EXPECT_EQ(bfly[l], x[l ^ 5]);
    EXPECT_EQ(rot[l], x[(l + 28) % 32]);
    EXPECT_EQ(wide[l], double(x[7]) * 3);
  }
}

// simdgroup_matrix through both paths: shuffles (float) and the tensor-core fragments
// (half, bfloat), transposed loads, the diagonal constructor and thread_elements().
TEST(CustomKernelWarpEmulated, SimdgroupMatrix) {
  auto small = [] { return float(int(kiln::test::rng()() % 7) - 3); };
  float A[64], B[128], C0[64], D[64], T[64], E[64], HD[64], BD[64], elems[64];
  wm::half H[64];
  for (int i = 0; i < 64; ++i) A[i] = small(), C0[i] = small(), H[i] = wm::half(small());
  for (int i = 0; i < 128; ++i) B[i] = small();
  run_warp(0xffffffffu, [&](unsigned l) {
    wm::simdgroup_float8x8 a, b, c, d, t, e, id(2.0f);
    wm::simdgroup_load(a, A, 8);
    wm::simdgroup_load(b, B, 16, wm::ulong2(8, 0));  // columns 8..15 of an 8x16 matrix
    wm::simdgroup_load(c, C0, 8);
    wm::simdgroup_multiply_accumulate(d, a, b, c);
    wm::simdgroup_store(d, D, 8);
    wm::simdgroup_load(t, A, 8, wm::ulong2(0, 0), true);
    wm::simdgroup_store(t, T, 8);
    wm::simdgroup_multiply(e, id, a);
    wm::simdgroup_store(e, E, 8);
    elems[2 * l] = a.thread_elements()[0];
    elems[2 * l + 1] = a.thread_elements()[1];
    wm::simdgroup_half8x8 h;
    wm::simdgroup_bfloat8x8 hb;
    wm::simdgroup_float8x8 acc;
    wm::simdgroup_load(h, H, 8);
    wm::simdgroup_load(hb, H, 8);
    wm::simdgroup_load(acc, C0, 8);
    wm::simdgroup_multiply_accumulate(acc, h, h, acc);  // tensor-core path
    wm::simdgroup_store(acc, HD, 8);
    acc = wm::make_filled_simdgroup_matrix<float, 8, 8>(0.5f);
    wm::simdgroup_multiply_accumulate(acc, hb, hb, acc);
    wm::simdgroup_store(acc, BD, 8);
  });
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 8; ++c) {
      float d = C0[r * 8 + c], hh = 0;
      for (int k = 0; k < 8; ++k) {
        d += A[r * 8 + k] * B[k * 16 + 8 + c];
        hh += float(H[r * 8 + k]) * float(H[k * 8 + c]);
      }
      EXPECT_EQ(D[r * 8 + c], d) << r << "," << c;
      EXPECT_EQ(T[r * 8 + c], A[c * 8 + r]);
      EXPECT_EQ(E[r * 8 + c], 2 * A[r * 8 + c]);
      EXPECT_EQ(HD[r * 8 + c], hh + C0[r * 8 + c]);
      EXPECT_EQ(BD[r * 8 + c], hh + 0.5f);
    }
  }
  // Metal's layout: lane l holds row 4*l4 + 2*l2 + l1, columns 4*l3 + 2*l0 and the next.
  for (int l = 0; l < 32; ++l) {
    int row = ((l >> 4) & 1) * 4 + ((l >> 2) & 1) * 2 + ((l >> 1) & 1);
    int col = ((l >> 3) & 1) * 4 + (l & 1) * 2;
    EXPECT_EQ(elems[2 * l], A[row * 8 + col]);
    EXPECT_EQ(elems[2 * l + 1], A[row * 8 + col + 1]);
  }
}

// Atomics on 16- and 8-bit values replace their part of the enclosing word only.
TEST(CustomKernelWarpEmulated, SubwordAtomics) {
  alignas(8) wm::half hs[4] = {wm::half(1.0f), wm::half(2.0f), wm::half(3.0f), wm::half(4.0f)};
  auto* ah = reinterpret_cast<wm::atomic<wm::half>*>(hs);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        wm::atomic_fetch_add_explicit(&ah[1], wm::half(1.0f), wm::memory_order_relaxed);
        wm::atomic_fetch_add_explicit(&ah[2], wm::half(0.5f), wm::memory_order_relaxed);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(float(hs[0]), 1.0f);
  EXPECT_EQ(float(hs[1]), 802.0f);
  EXPECT_EQ(float(hs[2]), 403.0f);
  EXPECT_EQ(float(hs[3]), 4.0f);
  alignas(4) bool flags[4] = {false, false, false, false};
  auto* af = reinterpret_cast<wm::atomic<bool>*>(flags);
  bool expected = false;
  EXPECT_FALSE(wm::atomic_exchange_explicit(&af[3], true, wm::memory_order_relaxed));
  EXPECT_TRUE(wm::atomic_compare_exchange_weak_explicit(
      &af[1], &expected, true, wm::memory_order_relaxed, wm::memory_order_relaxed));
  expected = false;
  EXPECT_FALSE(wm::atomic_compare_exchange_weak_explicit(
      &af[1], &expected, false, wm::memory_order_relaxed, wm::memory_order_relaxed));
  EXPECT_TRUE(expected);
  EXPECT_EQ((std::vector<bool>{flags[0], flags[1], flags[2], flags[3]}),
            (std::vector<bool>{false, true, false, true}));
}
