// The custom-kernel test table: every kernel of the suite with float64 (or exact)
// references, run on a given device. tests/test_custom_kernel.cpp runs it on the GPU and
// compiles every kernel for sm_90 without one (CI); the CPU suite runs the same table on
// the CPU. A case holds its kernels, the instantiations to compile, and a `run` that
// builds fresh random inputs (on the host), calls the kernels on `dev` and checks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/fast.h"
#include "test_utils.h"

namespace kiln::test::custom_kernels {

using fast::KernelFunction;
using fast::TemplateArg;
using TemplateArgs = std::vector<std::pair<std::string, TemplateArg>>;

/** One instantiation of a kernel, for compiling without running it. */
struct Instance {
  std::vector<Dtype> inputs;
  std::vector<int> ndims;
  std::vector<Dtype> outputs;
  TemplateArgs targs = {};
};

struct Kernel {
  KernelFunction fn;
  std::vector<Instance> instances;
};

struct Case {
  std::string name;
  std::vector<Kernel> kernels;
  /** Runs kernels[i].fn on `dev` with fresh inputs and checks the outputs. */
  std::function<void(const std::vector<Kernel>& k, Device dev)> run;
};

// ---------------------------------------------------------------- helpers

/** Values of `a` in row-major order. */
inline std::vector<double> values(const array& a) {
  return to_double(a);
}

/** The float16 (bfloat16) rounding of x. */
inline double f16(double x) {
  return static_cast<float>(float16_t(static_cast<float>(x)));
}
inline double bf16(double x) {
  return static_cast<float>(bfloat16_t(static_cast<float>(x)));
}

/** Checks `got` against `want` elementwise within rtol (|g - w| <= rtol (1 + |w|)). */
inline void expect_near(const std::vector<double>& got, const std::vector<double>& want,
                        double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::isnan(want[i]) ? std::isnan(got[i])
                                  : std::abs(got[i] - want[i]) <= rtol * (1 + std::abs(want[i]));
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", expected " << want[i]
                    << " (seed " << seed() << ")";
    }
  }
}

/** A metal-flavour grid: block of `tg` threads holding index i, with the real size of the
 * last (ragged) block. */
struct Groups1d {
  int grid, tg;
  int block(int i) const { return i / tg; }
  int local(int i) const { return i % tg; }
  int block_size(int i) const { return std::min(tg, grid - block(i) * tg); }
};

// ---------------------------------------------------------------- sources

inline const char* kMyExp = R"(
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
)";

inline const char* kMyExpStrided = R"(
    uint elem = thread_position_in_grid.x;
    // Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
    uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
    T tmp = inp[loc];
    // Output arrays are always row contiguous
    out[elem] = metal::exp(tmp);
)";

// ---------------------------------------------------------------- the table

inline std::vector<Case> make_cases() {
  std::vector<Case> cs;
  using fast::cuda_kernel;
  using fast::metal_kernel;

  // The seed document's kernel, as written.
  cs.push_back({"seed_myexp",
                {{metal_kernel("myexp", {"inp"}, {"out"}, kMyExp),
                  {{{float16}, {2}, {float16}, {{"T", float32}}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  array a = random_array({4, 16}, float16);
                  auto out = k[0].fn({a}, {a.shape()}, {a.dtype()}, {int(a.size()), 1, 1},
                                     {256, 1, 1}, {{"T", float32}}, std::nullopt, false, dev);
                  auto want = map_ref(values(a), [](double x) { return f16(std::exp(x)); });
                  expect_allclose(out[0], {4, 16}, want);
                }});

  // The strided variant on a[::2] and on a transposed view: real strides, no copy.
  cs.push_back({"seed_myexp_strided",
                {{metal_kernel("myexp_strided", {"inp"}, {"out"}, kMyExpStrided, "", false),
                  {{{float16}, {2}, {float16}, {{"T", float32}}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  array a = random_array({4, 16}, float16);
                  array views[] = {slice(a, {0, 0}, {4, 16}, {2, 1}, Device::cpu),
                                   transpose(a, Device::cpu)};
                  for (array& v : views) {
                    auto out = k[0].fn({v}, {v.shape()}, {v.dtype()}, {int(v.size()), 1, 1},
                                       {256, 1, 1}, {{"T", float32}}, std::nullopt, false, dev);
                    auto want = map_ref(values(v), [](double x) { return f16(std::exp(x)); });
                    expect_allclose(out[0], v.shape(), want);
                  }
                }});

  // ensure_row_contiguous (the default): strided, transposed and broadcast inputs arrive as
  // row-major copies.
  cs.push_back({"ensure_row_contiguous",
                {{metal_kernel("twice", {"inp"}, {"out"},
                               "uint i = thread_position_in_grid.x;\nout[i] = inp[i] * 2.0f;\n"),
                  {{{float32}, {2}, {float32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  array a = random_array({6, 5}, float32);
                  array b = random_array({5}, float32);
                  array views[] = {transpose(a, Device::cpu),
                                   slice(a, {1, 0}, {6, 5}, {2, 2}, Device::cpu),
                                   broadcast_to(b, {3, 5}, Device::cpu), a};
                  for (array& v : views) {
                    auto out = k[0].fn({v}, {v.shape()}, {float32}, {int(v.size()), 1, 1},
                                       {64, 1, 1}, {}, std::nullopt, false, dev);
                    auto want = map_ref(values(v), [](double x) { return 2 * x; });
                    expect_allclose(out[0], v.shape(), want);
                  }
                }});

  // 0-d inputs are bound as references to their value, in both flavours.
  cs.push_back(
      {"scalar_inputs",
       {{metal_kernel("axpb", {"x", "scale", "shift"}, {"out"},
                      "uint i = thread_position_in_grid.x;\nout[i] = x[i] * scale + shift;\n"),
         {{{float32, float32, int32}, {1, 0, 0}, {float32}}}},
        {cuda_kernel("axpb_cuda", {"x", "scale", "shift"}, {"out"}, R"(
           int i = blockIdx.x * blockDim.x + threadIdx.x;
           if (i < x_shape[0]) out[i] = x[i] * scale + shift;
         )"),
         {{{float32, float32, int32}, {1, 0, 0}, {float32}}}}},
       [](const std::vector<Kernel>& k, Device dev) {
         array x = random_array({300}, float32);
         array scale(1.75f), shift(-3, int32);
         for (const Kernel& kern : k) {
           auto out = kern.fn({x, scale, shift}, {{300}}, {float32}, {300, 1, 1}, {128, 1, 1}, {},
                              std::nullopt, false, dev);
           expect_allclose(out[0], {300},
                           map_ref(values(x), [](double v) { return v * 1.75 - 3; }));
         }
       }});

  // Several inputs and outputs of different dtypes (CUDA flavour).
  cs.push_back({"multiple_dtypes",
                {{cuda_kernel("mixed", {"a", "b", "c"}, {"s", "p", "f"}, R"(
                    int i = blockIdx.x * blockDim.x + threadIdx.x;
                    if (i >= a_shape[0]) return;
                    s[i] = float16_t(float(a[i]) + float(c[i]));
                    p[i] = (int64_t)b[i] * 3;
                    f[i] = a[i] > 0.0f;
                  )"),
                  {{{float32, int32, bfloat16}, {1, 1, 1}, {float16, int64, bool_}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 777;
                  array a = random_array({n}, float32), b = random_array({n}, int32, -1e6, 1e6),
                        c = random_array({n}, bfloat16);
                  auto out = k[0].fn({a, b, c}, {{n}, {n}, {n}}, {float16, int64, bool_}, {n, 1, 1},
                                     {256, 1, 1}, {}, std::nullopt, false, dev);
                  auto va = values(a), vb = values(b), vc = values(c);
                  std::vector<double> s(n), p(n), f(n);
                  for (int i = 0; i < n; ++i) {
                    s[i] = f16(float(va[i]) + float(vc[i]));
                    p[i] = vb[i] * 3;
                    f[i] = va[i] > 0;
                  }
                  expect_allclose(out[0], {n}, s);
                  expect_allclose(out[1], {n}, p);
                  expect_allclose(out[2], {n}, f);
                }});

  // Template arguments of each kind, two instantiations of one kernel.
  cs.push_back(
      {"template_args",
       {{metal_kernel("scaled", {"x"}, {"out"}, R"(
           uint i = thread_position_in_grid.x;
           out[i] = FLAG ? T(float(x[i]) * N) : T(-float(x[i]));
         )"),
         {{{float32}, {1}, {float32}, {{"T", float32}, {"N", 3}, {"FLAG", true}}},
          {{float32}, {1}, {float16}, {{"T", float16}, {"N", -2}, {"FLAG", false}}}}}},
       [](const std::vector<Kernel>& k, Device dev) {
         array x = random_array({100}, float32);
         auto o1 = k[0].fn({x}, {{100}}, {float32}, {100, 1, 1}, {32, 1, 1},
                           {{"T", float32}, {"N", 3}, {"FLAG", true}}, std::nullopt, false, dev);
         auto o2 = k[0].fn({x}, {{100}}, {float16}, {100, 1, 1}, {32, 1, 1},
                           {{"T", float16}, {"N", -2}, {"FLAG", false}}, std::nullopt, false, dev);
         expect_allclose(o1[0], {100}, map_ref(values(x), [](double v) { return 3 * v; }));
         expect_allclose(o2[0], {100}, map_ref(values(x), [](double v) { return f16(-v); }));
       }});

  // A header with a templated helper (both flavours).
  cs.push_back(
      {"header_template_helper",
       {{metal_kernel("sqplus", {"a", "b"}, {"out"},
                      "uint i = thread_position_in_grid.x;\nout[i] = square_plus(a[i], b[i]);\n",
                      "template <typename T>\nMETAL_FUNC T square_plus(T x, T y) {\n  return x * x "
                      "+ y;\n}\n"),
         {{{float32, float32}, {1, 1}, {float32}}}},
        {cuda_kernel("cube", {"a"}, {"out"},
                     "int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "if (i < a_shape[0]) out[i] = cube(a[i]);\n",
                     "template <typename T>\n__device__ T cube(T x) { return x * x * x; }\n"),
         {{{float32}, {1}, {float32}}}}},
       [](const std::vector<Kernel>& k, Device dev) {
         array a = random_array({64}, float32), b = random_array({64}, float32);
         auto o1 = k[0].fn({a, b}, {{64}}, {float32}, {64, 1, 1}, {64, 1, 1}, {}, std::nullopt,
                           false, dev);
         auto o2 =
             k[1].fn({a}, {{64}}, {float32}, {64, 1, 1}, {32, 1, 1}, {}, std::nullopt, false, dev);
         auto va = values(a), vb = values(b);
         std::vector<double> w1(64), w2(64);
         for (int i = 0; i < 64; ++i) {
           w1[i] = va[i] * va[i] + vb[i];
           w2[i] = va[i] * va[i] * va[i];
         }
         expect_allclose(o1[0], {64}, w1);
         expect_allclose(o2[0], {64}, w2);
       }});

  // A threadgroup larger than the grid shrinks to it.
  cs.push_back({"threadgroup_larger_than_grid",
                {{metal_kernel("small", {}, {"out"}, R"(
                    uint i = thread_position_in_grid.x;
                    out[i] = threads_per_threadgroup.x * 100 + threads_per_grid.x;
                  )"),
                  {{{}, {}, {uint32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  auto out = k[0].fn({}, {{5}}, {uint32}, {5, 1, 1}, {256, 1, 1}, {}, std::nullopt,
                                     false, dev);
                  expect_allclose(out[0], {5}, std::vector<double>(5, 505));
                }});

  // init_value and atomic outputs: a histogram (Metal atomics, then CUDA's atomicAdd).
  cs.push_back({"atomic_histogram",
                {{metal_kernel("hist", {"idx", "vals"}, {"hist", "counts"}, R"(
           uint i = thread_position_in_grid.x;
           int b = idx[i];
           atomic_fetch_add_explicit(&hist[b], vals[i], memory_order_relaxed);
           atomic_fetch_add_explicit(&counts[b], 1, memory_order_relaxed);
         )",
                               "", true, true),
                  {{{int32, float32}, {1, 1}, {float32, int32}}}},
                 {cuda_kernel("hist_cuda", {"idx", "vals"}, {"hist", "counts"}, R"(
           int i = blockIdx.x * blockDim.x + threadIdx.x;
           if (i >= idx_shape[0]) return;
           atomicAdd(&hist[idx[i]], vals[i]);
           atomicAdd(&counts[idx[i]], float16_t(1.0f));
         )",
                              "", true, true),
                  {{{int32, float32}, {1, 1}, {float32, float16}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 1000, bins = 16;
                  array idx = random_array({n}, int32, 0, bins), vals = random_array({n}, float32);
                  auto vi = values(idx), vv = values(vals);
                  std::vector<double> hist(bins, 0), counts(bins, 0);
                  for (int i = 0; i < n; ++i) {
                    hist[int(vi[i])] += vv[i];
                    counts[int(vi[i])] += 1;
                  }
                  auto o1 = k[0].fn({idx, vals}, {{bins}, {bins}}, {float32, int32}, {n, 1, 1},
                                    {128, 1, 1}, {}, 0.0f, false, dev);
                  expect_allclose(o1[0], {bins}, hist, 1e-4);
                  expect_allclose(o1[1], {bins}, counts);
                  auto o2 = k[1].fn({idx, vals}, {{bins}, {bins}}, {float32, float16}, {n, 1, 1},
                                    {128, 1, 1}, {}, 0.0f, false, dev);
                  expect_allclose(o2[0], {bins}, hist, 1e-4);
                  expect_allclose(o2[1], {bins}, counts, 0.0);  // small integers are exact in half
                }});

  // init_value fills what the kernel leaves: patterns that need the fill kernel (2.5 in
  // float16, 2 in int64) and a byte pattern (-1 in uint8).
  cs.push_back({"init_value_partial_write",
                {{metal_kernel("evens", {}, {"h", "l", "u"}, R"(
                    uint i = thread_position_in_grid.x;
                    if (i % 2 == 0) {
                      h[i] = half(i);
                      l[i] = int64_t(i) * 1000000000000LL;
                      u[i] = uchar(i);
                    }
                  )"),
                  {{{}, {}, {float16, int64, uint8}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 101;
                  auto out = k[0].fn({}, {{n}, {n}, {n}}, {float16, int64, uint8}, {n, 1, 1},
                                     {32, 1, 1}, {}, 2.5f, false, dev);
                  std::vector<double> h(n), l(n), u(n);
                  for (int i = 0; i < n; ++i) {
                    bool even = i % 2 == 0;
                    h[i] = even ? i : 2.5;
                    l[i] = even ? i * 1e12 : 2;
                    u[i] = even ? i : 2;
                  }
                  expect_allclose(out[0], {n}, h);
                  expect_allclose(out[1], {n}, l);
                  expect_allclose(out[2], {n}, u);
                }});

  // Dynamic shared memory above 48 KB (CUDA flavour): each block reverses 64 KB.
  cs.push_back({"shared_memory_64k",
                {{cuda_kernel("reverse64k", {"x"}, {"out"}, R"(
                    extern __shared__ float smem[];
                    const int per_block = 16384;
                    const float* src = x + blockIdx.x * per_block;
                    for (int j = threadIdx.x; j < per_block; j += blockDim.x) smem[j] = src[j];
                    __syncthreads();
                    float* dst = out + blockIdx.x * per_block;
                    for (int j = threadIdx.x; j < per_block; j += blockDim.x)
                      dst[j] = smem[per_block - 1 - j];
                  )",
                              "", true, false, 65536),
                  {{{float32}, {1}, {float32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int per = 16384, blocks = 3;
                  array x = random_array({per * blocks}, float32);
                  auto out = k[0].fn({x}, {{per * blocks}}, {float32}, {256 * blocks, 1, 1},
                                     {256, 1, 1}, {}, std::nullopt, false, dev);
                  auto vx = values(x);
                  std::vector<double> want(vx.size());
                  for (int b = 0; b < blocks; ++b)
                    for (int j = 0; j < per; ++j) want[b * per + j] = vx[b * per + per - 1 - j];
                  expect_allclose(out[0], {per * blocks}, want);
                }});

  // Threadgroup memory and barriers, with a ragged last threadgroup of its real size.
  cs.push_back({"threadgroup_memory_barrier",
                {{metal_kernel("tg_reverse", {"x"}, {"out"}, R"(
                    threadgroup float buf[64];
                    uint lid = thread_position_in_threadgroup.x;
                    uint gid = thread_position_in_grid.x;
                    buf[lid] = x[gid];
                    threadgroup_barrier(mem_flags::mem_threadgroup);
                    out[gid] = buf[threads_per_threadgroup.x - 1 - lid];
                  )"),
                  {{{float32}, {1}, {float32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 100;
                  Groups1d g{n, 64};
                  array x = random_array({n}, float32);
                  auto out = k[0].fn({x}, {{n}}, {float32}, {n, 1, 1}, {64, 1, 1}, {}, std::nullopt,
                                     false, dev);
                  auto vx = values(x);
                  std::vector<double> want(n);
                  for (int i = 0; i < n; ++i)
                    want[i] = vx[g.block(i) * 64 + g.block_size(i) - 1 - g.local(i)];
                  expect_allclose(out[0], {n}, want);
                }});

  // simd reductions over partial simdgroups and lanes that returned early.
  cs.push_back({"simd_reductions",
                {{metal_kernel("simd_red", {"x", "y", "u"},
                               {"sum", "mx", "mn", "prod", "bor", "band", "bxor"},
                               R"(
           uint i = thread_position_in_grid.x;
           if (x[i] > 1.2f) return;
           sum[i] = simd_sum(x[i]);
           mx[i] = simd_max(x[i]);
           mn[i] = simd_min(x[i]);
           prod[i] = simd_product(y[i]);
           bor[i] = simd_or(u[i]);
           band[i] = simd_and(u[i]);
           bxor[i] = simd_xor(u[i]);
         )"),
                  {{{float32, float32, uint32},
                    {1, 1, 1},
                    {float32, float32, float32, float32, uint32, uint32, uint32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 100;
                  Groups1d g{n, 48};
                  array x = random_array({n}, float32), y = random_array({n}, float32, 0.9, 1.1),
                        u = random_array({n}, uint32, 0, 4294967295.0);
                  auto out = k[0].fn({x, y, u}, std::vector<Shape>(7, {n}),
                                     {float32, float32, float32, float32, uint32, uint32, uint32},
                                     {n, 1, 1}, {48, 1, 1}, {}, 0.0f, false, dev);
                  auto vx = values(x), vy = values(y), vu = values(u);
                  std::vector<std::vector<double>> want(7, std::vector<double>(n, 0.0));
                  for (int i = 0; i < n; ++i) {
                    if (vx[i] > 1.2f) continue;
                    double s = 0, mx = -1e300, mn = 1e300, p = 1;
                    uint32_t bo = 0, ba = ~0u, bx = 0;
                    for (int j = 0; j < n; ++j) {
                      bool same = g.block(j) == g.block(i) && g.local(j) / 32 == g.local(i) / 32;
                      if (!same || vx[j] > 1.2f) continue;
                      s += vx[j];
                      mx = std::max(mx, vx[j]);
                      mn = std::min(mn, vx[j]);
                      p *= vy[j];
                      bo |= uint32_t(vu[j]);
                      ba &= uint32_t(vu[j]);
                      bx ^= uint32_t(vu[j]);
                    }
                    want[0][i] = s, want[1][i] = mx, want[2][i] = mn, want[3][i] = p;
                    want[4][i] = bo, want[5][i] = ba, want[6][i] = bx;
                  }
                  for (int o = 0; o < 7; ++o)
                    expect_allclose(out[o], {n}, want[o], o < 4 ? 1e-5 : 0.0);
                }});

  // Prefix sums over partial simdgroups and early-returned lanes (exact integer values).
  cs.push_back({"simd_prefix",
                {{metal_kernel("simd_scan", {"x", "v"}, {"inc", "exc", "iinc"}, R"(
                    uint i = thread_position_in_grid.x;
                    if (x[i] > 2.0f) return;
                    inc[i] = simd_prefix_inclusive_sum(x[i]);
                    exc[i] = simd_prefix_exclusive_sum(x[i]);
                    iinc[i] = simd_prefix_inclusive_sum(v[i]);
                  )"),
                  {{{float32, int32}, {1, 1}, {float32, float32, int32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 150;
                  Groups1d g{n, 40};
                  array xi = random_array({n}, int32, -4, 4);
                  array x = astype(xi, float32, Device::cpu);
                  array v = random_array({n}, int32, -1000, 1000);
                  auto out = k[0].fn({x, v}, {{n}, {n}, {n}}, {float32, float32, int32}, {n, 1, 1},
                                     {40, 1, 1}, {}, 0.0f, false, dev);
                  auto vx = values(x), vv = values(v);
                  std::vector<double> inc(n, 0), exc(n, 0), iinc(n, 0);
                  for (int i = 0; i < n; ++i) {
                    if (vx[i] > 2) continue;
                    for (int j = 0; j <= i; ++j) {
                      bool same = g.block(j) == g.block(i) && g.local(j) / 32 == g.local(i) / 32;
                      if (!same || vx[j] > 2) continue;
                      inc[i] += vx[j];
                      iinc[i] += vv[j];
                      if (j < i) exc[i] += vx[j];
                    }
                  }
                  expect_allclose(out[0], {n}, inc, 0.0);
                  expect_allclose(out[1], {n}, exc, 0.0);
                  expect_allclose(out[2], {n}, iinc, 0.0);
                }});

  // Shuffles and broadcasts on full simdgroups, of floats, vectors and halves.
  cs.push_back({"simd_shuffles",
                {{metal_kernel("shuffles", {"x"}, {"out"}, R"(
                    uint i = thread_position_in_grid.x;
                    uint lane = thread_index_in_simdgroup;
                    float v = x[i];
                    device float* o = out + i * 8;
                    o[0] = simd_shuffle(v, (lane + 3) % 32);
                    o[1] = simd_shuffle_down(v, 1);
                    o[2] = simd_shuffle_up(v, 2);
                    o[3] = simd_shuffle_xor(v, 5);
                    o[4] = simd_broadcast(v, 7);
                    o[5] = simd_shuffle_rotate_down(v, 4);
                    o[6] = simd_shuffle(float4(v, 2 * v, 3 * v, 4 * v), lane ^ 1).w;
                    o[7] = float(simd_shuffle(half(v), 31 - lane));
                  )"),
                  {{{float32}, {1}, {float32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 128;
                  array x = random_array({n}, float32);
                  auto out = k[0].fn({x}, {{n, 8}}, {float32}, {n, 1, 1}, {64, 1, 1}, {},
                                     std::nullopt, false, dev);
                  auto vx = values(x);
                  std::vector<double> want(n * 8);
                  for (int i = 0; i < n; ++i) {
                    int lane = i % 32, base = i - lane;
                    auto at = [&](int l) { return vx[base + l]; };
                    want[i * 8 + 0] = at((lane + 3) % 32);
                    want[i * 8 + 1] = lane + 1 < 32 ? at(lane + 1) : at(lane);
                    want[i * 8 + 2] = lane >= 2 ? at(lane - 2) : at(lane);
                    want[i * 8 + 3] = at(lane ^ 5);
                    want[i * 8 + 4] = at(7);
                    want[i * 8 + 5] = at((lane + 4) % 32);
                    want[i * 8 + 6] = double(4 * float(at(lane ^ 1)));
                    want[i * 8 + 7] = f16(at(31 - lane));
                  }
                  expect_allclose(out[0], {n, 8}, want, 0.0);
                }});

  // Broadcast from the first active lane, votes and ballots on partial simdgroups.
  cs.push_back(
      {"simd_votes",
       {{metal_kernel("votes", {"x"}, {"first", "isfirst", "anyv", "allv", "ballot"}, R"(
           uint i = thread_position_in_grid.x;
           if (x[i] < -1.5f) return;
           first[i] = simd_broadcast_first(x[i]);
           isfirst[i] = simd_is_first() ? 1 : 0;
           anyv[i] = simd_any(x[i] > 1.5f) ? 1 : 0;
           allv[i] = simd_all(x[i] > -1.0f) ? 1 : 0;
           ballot[i] = static_cast<ulong>(simd_ballot(x[i] > 0.0f));
         )"),
         {{{float32}, {1}, {float32, int32, int32, int32, uint64}}}}},
       [](const std::vector<Kernel>& k, Device dev) {
         const int n = 100;
         Groups1d g{n, 48};
         array x = random_array({n}, float32);
         auto out = k[0].fn({x}, std::vector<Shape>(5, {n}), {float32, int32, int32, int32, uint64},
                            {n, 1, 1}, {48, 1, 1}, {}, 0.0f, false, dev);
         auto vx = values(x);
         std::vector<std::vector<double>> want(5, std::vector<double>(n, 0.0));
         for (int i = 0; i < n; ++i) {
           if (vx[i] < -1.5f) continue;
           int first = -1;
           bool any = false, all = true;
           uint64_t ballot = 0;
           for (int j = 0; j < n; ++j) {
             bool same = g.block(j) == g.block(i) && g.local(j) / 32 == g.local(i) / 32;
             if (!same || vx[j] < -1.5f) continue;
             if (first < 0) first = j;
             any = any || vx[j] > 1.5f;
             all = all && vx[j] > -1.0f;
             if (vx[j] > 0) ballot |= uint64_t(1) << (g.local(j) % 32);
           }
           want[0][i] = vx[first], want[1][i] = first == i, want[2][i] = any, want[3][i] = all;
           want[4][i] = double(ballot);
         }
         for (int o = 0; o < 5; ++o) expect_allclose(out[o], {n}, want[o], 0.0);
       }});

  // Vector types: arithmetic, constructors, swizzles, conversions, comparisons, select,
  // indexing, as_type, and a cast of a device pointer to a vector pointer.
  cs.push_back({"vector_types",
                {{metal_kernel("vectors", {"x"}, {"out"}, R"(
           uint i = thread_position_in_grid.x;
           const device float4* v = (const device float4*)x;
           float4 a = v[i];
           float4 b = a * 2.0f + float4(1.0f, 2.0f, 3.0f, 4.0f);
           float3 c = b.xyz;
           float2 d = b.zw;
           half4 h = half4(b);
           float4 e = float4(h);
           bool4 m = a > b.wzyx;
           float4 s = select(a, b, m);
           int4 iv = int4(a * 10.0f);
           device float* o = out + i * 12;
           o[0] = dot(a, b);
           o[1] = length(c);
           o[2] = d.x * d.y;
           o[3] = e.w;
           o[4] = s.x + s.y + s.z + s.w;
           o[5] = any(m) ? 1.0f : 0.0f;
           o[6] = all(m) ? 1.0f : 0.0f;
           o[7] = float(as_type<uint>(a.x) >> 16);
           o[8] = float(iv.x + iv.y * 2);
           o[9] = (a + b)[2];
           o[10] = metal::max(a, b).y + clamp(a, -0.5f, 0.5f).z;
           o[11] = float((uint2(7, 9) + 1u).y) + float3(c.zyx).x - c.z;
         )"),
                  {{{float32}, {2}, {float32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 50;
                  array x = random_array({n, 4}, float32);
                  auto out = k[0].fn({x}, {{n, 12}}, {float32}, {n, 1, 1}, {32, 1, 1}, {},
                                     std::nullopt, false, dev);
                  auto vx = values(x);
                  std::vector<double> want(n * 12);
                  for (int i = 0; i < n; ++i) {
                    float a[4], b[4];
                    for (int c = 0; c < 4; ++c) {
                      a[c] = float(vx[i * 4 + c]);
                      b[c] = a[c] * 2.0f + float(c + 1);
                    }
                    bool m[4];
                    double dot = 0, s = 0;
                    bool any = false, all = true;
                    for (int c = 0; c < 4; ++c) {
                      dot += double(a[c]) * b[c];
                      m[c] = a[c] > b[3 - c];
                      s += m[c] ? b[c] : a[c];
                      any = any || m[c];
                      all = all && m[c];
                    }
                    uint32_t bits;
                    std::memcpy(&bits, &a[0], 4);
                    double* w = &want[i * 12];
                    w[0] = dot;
                    w[1] =
                        std::sqrt(double(b[0]) * b[0] + double(b[1]) * b[1] + double(b[2]) * b[2]);
                    w[2] = double(b[2]) * b[3];
                    w[3] = f16(b[3]);
                    w[4] = s;
                    w[5] = any;
                    w[6] = all;
                    w[7] = bits >> 16;
                    w[8] = int(a[0] * 10.0f) + 2 * int(a[1] * 10.0f);
                    w[9] = double(a[2] + b[2]);
                    w[10] = double(std::max(a[1], b[1])) + std::clamp(a[2], -0.5f, 0.5f);
                    w[11] = 10;
                  }
                  expect_allclose(out[0], {n, 12}, want, 1e-5);
                }});

  // half and bfloat with Metal's promotion rules (half op half and half op int stay half,
  // half op float is float), checked against per-operation rounding.
  cs.push_back({"half_promotion",
                {{metal_kernel("halves", {"h", "b"}, {"oh", "of", "ob", "om", "ot"}, R"(
                    uint i = thread_position_in_grid.x;
                    half x = h[i];
                    half y = x * x + 1;
                    float z = x * 2.5f;
                    bfloat w = b[i] * b[i];
                    oh[i] = y;
                    of[i] = z;
                    ob[i] = w;
                    om[i] = x + b[i];
                    ot[i] = float(sizeof(x * 2.5f)) * 10 + float(sizeof(x * 2));
                  )"),
                  {{{float16, bfloat16}, {1, 1}, {float16, float32, bfloat16, float32, float32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 64;
                  array h = random_array({n}, float16, -30, 30), b = random_array({n}, bfloat16);
                  auto out = k[0].fn({h, b}, std::vector<Shape>(5, {n}),
                                     {float16, float32, bfloat16, float32, float32}, {n, 1, 1},
                                     {64, 1, 1}, {}, std::nullopt, false, dev);
                  auto vh = values(h), vb = values(b);
                  std::vector<std::vector<double>> want(5, std::vector<double>(n));
                  for (int i = 0; i < n; ++i) {
                    want[0][i] = f16(f16(vh[i] * vh[i]) + 1);
                    want[1][i] = float(vh[i]) * 2.5f;
                    want[2][i] = bf16(float(vb[i]) * float(vb[i]));
                    want[3][i] = float(vh[i]) + float(vb[i]);
                    want[4][i] = 42;
                  }
                  for (int o = 0; o < 5; ++o) expect_allclose(out[o], {n}, want[o], 0.0);
                }});

  // metal:: math, metal::fast:: and metal::precise::, on floats and halves.
  cs.push_back({"metal_math",
                {{metal_kernel("math", {"x"}, {"out"}, R"(
           uint i = thread_position_in_grid.x;
           float v = x[i];
           device float* o = out + i * 16;
           o[0] = metal::exp(v);
           o[1] = metal::fast::exp(v);
           o[2] = metal::precise::log(fabs(v) + 1.0f);
           o[3] = sqrt(fabs(v));
           o[4] = rsqrt(fabs(v) + 1.0f);
           o[5] = clamp(v, -1.0f, 1.0f);
           o[6] = mix(v, 1.0f, 0.25f);
           o[7] = fma(v, v, 1.0f);
           o[8] = sin(v);
           o[9] = metal::fast::cos(v);
           o[10] = tanh(v);
           o[11] = pow(fabs(v), 1.5f);
           o[12] = fract(v);
           o[13] = sign(v);
           o[14] = round(v * 3.0f);
           o[15] = float(metal::exp(half(v)));
         )"),
                  {{{float32}, {1}, {float32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 200;
                  array x = random_array({n}, float32);
                  auto out = k[0].fn({x}, {{n, 16}}, {float32}, {n, 1, 1}, {64, 1, 1}, {},
                                     std::nullopt, false, dev);
                  auto vx = values(x), got = values(out[0]);
                  const double tol[16] = {1e-6, 2e-5, 1e-6, 1e-6, 1e-6, 0, 1e-6, 1e-6,
                                          1e-6, 2e-5, 1e-6, 1e-5, 1e-6, 0, 0,    1e-2};
                  for (int c = 0; c < 16; ++c) {
                    std::vector<double> g(n), w(n);
                    for (int i = 0; i < n; ++i) {
                      double v = float(vx[i]);
                      const double want[16] = {std::exp(v),
                                               std::exp(v),
                                               std::log(std::fabs(v) + 1),
                                               std::sqrt(std::fabs(v)),
                                               1 / std::sqrt(std::fabs(v) + 1),
                                               std::clamp(v, -1.0, 1.0),
                                               v + (1 - v) * 0.25,
                                               v * v + 1,
                                               std::sin(v),
                                               std::cos(v),
                                               std::tanh(v),
                                               std::pow(std::fabs(v), 1.5),
                                               v - std::floor(v),
                                               double((v > 0) - (v < 0)),
                                               std::round(double(float(v) * 3.0f)),
                                               f16(std::exp(f16(v)))};
                      g[i] = got[i * 16 + c];
                      w[i] = want[c];
                    }
                    expect_near(g, w, tol[c] + 1e-7, "math column " + std::to_string(c));
                  }
                }});

  // Metal atomics in device and threadgroup memory: add, sub, max, min, and, xor, exchange,
  // compare-exchange loops, on int, uint, float and half (every output starts at -1).
  cs.push_back({"metal_atomics",
                {{metal_kernel("atomics", {"v", "f"}, {"ints", "uints", "floats", "halfs"}, R"(
           uint i = thread_position_in_grid.x;
           uint lid = thread_index_in_threadgroup;
           threadgroup atomic_int tg_count;
           if (lid == 0) atomic_store_explicit(&tg_count, 0, memory_order_relaxed);
           threadgroup_barrier(mem_flags::mem_threadgroup);
           int x = v[i];
           atomic_fetch_add_explicit(&ints[0], 1, memory_order_relaxed);
           atomic_fetch_max_explicit(&ints[1], x, memory_order_relaxed);
           atomic_fetch_min_explicit(&ints[2], x, memory_order_relaxed);
           atomic_fetch_sub_explicit(&ints[3], 1, memory_order_relaxed);
           int old = atomic_load_explicit(&ints[4], memory_order_relaxed);
           while (!atomic_compare_exchange_weak_explicit(&ints[4], &old, old + x,
                                                         memory_order_relaxed,
                                                         memory_order_relaxed)) {
           }
           atomic_exchange_explicit(&ints[5], x, memory_order_relaxed);
           atomic_fetch_add_explicit(&tg_count, 1, memory_order_relaxed);
           atomic_fetch_and_explicit(&ints[7], x | 0x40000000, memory_order_relaxed);
           atomic_fetch_and_explicit(&uints[0], ~(1u << (uint(x) & 31u)), memory_order_relaxed);
           atomic_fetch_xor_explicit(&uints[1], uint(x), memory_order_relaxed);
           atomic_fetch_add_explicit(&floats[0], f[i], memory_order_relaxed);
           atomic_fetch_max_explicit(&floats[1], f[i], memory_order_relaxed);
           if (i < 64) atomic_fetch_add_explicit(&halfs[0], half(1), memory_order_relaxed);
           threadgroup_barrier(mem_flags::mem_threadgroup);
           if (lid == 0)
             atomic_fetch_add_explicit(&ints[6],
                                       atomic_load_explicit(&tg_count, memory_order_relaxed),
                                       memory_order_relaxed);
         )",
                               "", true, true),
                  {{{int32, float32}, {1, 1}, {int32, uint32, float32, float16}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 1000;
                  array v = random_array({n}, int32, -1000, 1000), f = random_array({n}, float32);
                  auto out =
                      k[0].fn({v, f}, {{8}, {2}, {2}, {1}}, {int32, uint32, float32, float16},
                              {n, 1, 1}, {128, 1, 1}, {}, -1.0f, false, dev);
                  auto vv = values(v), vf = values(f);
                  int64_t mx = -1, mn = -1, sum = -1;
                  int32_t band = -1;
                  uint32_t uand = ~0u, uxor = ~0u;
                  double fsum = -1, fmax = -1;
                  for (int i = 0; i < n; ++i) {
                    int x = int(vv[i]);
                    mx = std::max<int64_t>(mx, x);
                    mn = std::min<int64_t>(mn, x);
                    sum += x;
                    band &= x | 0x40000000;
                    uand &= ~(1u << (uint32_t(x) & 31u));
                    uxor ^= uint32_t(x);
                    fsum += vf[i];
                    fmax = std::max(fmax, vf[i]);
                  }
                  auto ints = values(out[0]);
                  EXPECT_EQ(ints[0], n - 1);
                  EXPECT_EQ(ints[1], mx);
                  EXPECT_EQ(ints[2], mn);
                  EXPECT_EQ(ints[3], -1 - n);
                  EXPECT_EQ(ints[4], sum);
                  EXPECT_NE(std::find(vv.begin(), vv.end(), ints[5]), vv.end()) << "exchange";
                  EXPECT_EQ(ints[6], n - 1);
                  EXPECT_EQ(ints[7], band);
                  expect_allclose(out[1], {2}, {double(uand), double(uxor)});
                  expect_allclose(out[2], {2}, {fsum, fmax}, 1e-4);
                  expect_allclose(out[3], {1}, {63.0}, 0.0);
                }});

  // simdgroup_matrix: a 16x16 product from 8x8 tiles (float: shuffles; half and bfloat:
  // tensor cores), and Metal's element layout (transposed load, diagonal, multiply).
  const char* kMatmul = R"(
      uint tile = threadgroup_position_in_grid.x;
      uint ty = tile / 2, tx = tile % 2;
      simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      simdgroup_matrix<T, 8, 8> ma, mb;
      for (uint k = 0; k < 16; k += 8) {
        simdgroup_load(ma, A, 16, ulong2(k, ty * 8));
        simdgroup_load(mb, B, 16, ulong2(tx * 8, k));
        simdgroup_multiply_accumulate(acc, ma, mb, acc);
      }
      simdgroup_store(acc, C, 16, ulong2(tx * 8, ty * 8));
  )";
  const char* kLayout = R"(
      uint lane = thread_index_in_simdgroup;
      simdgroup_float8x8 m, id(1.0f), prod;
      simdgroup_load(m, A, 16, ulong2(8, 0), true);
      elems[lane * 2] = m.thread_elements()[0];
      elems[lane * 2 + 1] = m.thread_elements()[1];
      simdgroup_multiply(prod, id, m);
      simdgroup_store(prod, D, 8);
  )";
  cs.push_back({"simdgroup_matrix",
                {{metal_kernel("mm", {"A", "B"}, {"C"}, kMatmul),
                  {{{float32, float32}, {2, 2}, {float32}, {{"T", float32}}},
                   {{float16, float16}, {2, 2}, {float32}, {{"T", float16}}},
                   {{bfloat16, bfloat16}, {2, 2}, {float32}, {{"T", bfloat16}}}}},
                 {metal_kernel("mm_layout", {"A"}, {"elems", "D"}, kLayout),
                  {{{float32}, {2}, {float32, float32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  for (Dtype t : {float32, float16, bfloat16}) {
                    array a = random_array({16, 16}, t), b = random_array({16, 16}, t);
                    auto out = k[0].fn({a, b}, {{16, 16}}, {float32}, {128, 1, 1}, {32, 1, 1},
                                       {{"T", t}}, std::nullopt, false, dev);
                    auto va = values(a), vb = values(b);
                    std::vector<double> want(256, 0.0);
                    for (int r = 0; r < 16; ++r)
                      for (int c = 0; c < 16; ++c)
                        for (int j = 0; j < 16; ++j)
                          want[r * 16 + c] += va[r * 16 + j] * vb[j * 16 + c];
                    expect_allclose(out[0], {16, 16}, want, 1e-5);
                  }
                  array a = random_array({16, 16}, float32);
                  auto out = k[1].fn({a}, {{64}, {8, 8}}, {float32, float32}, {32, 1, 1},
                                     {32, 1, 1}, {}, std::nullopt, false, dev);
                  auto va = values(a);
                  std::vector<double> elems(64), d(64);
                  for (int lane = 0; lane < 32; ++lane) {
                    int row = ((lane >> 4) & 1) * 4 + ((lane >> 2) & 1) * 2 + ((lane >> 1) & 1);
                    int col = ((lane >> 3) & 1) * 4 + (lane & 1) * 2;
                    for (int j = 0; j < 2; ++j) elems[lane * 2 + j] = va[(col + j) * 16 + 8 + row];
                  }
                  for (int r = 0; r < 8; ++r)
                    for (int c = 0; c < 8; ++c) d[r * 8 + c] = va[c * 16 + 8 + r];
                  expect_allclose(out[0], {64}, elems, 0.0);
                  expect_allclose(out[1], {8, 8}, d, 1e-6);
                }});

  // Metal's dispatch on a ragged 3-D grid: only threads inside the grid run, edge
  // threadgroups report their real size; and CUDA's, where every thread of every block runs.
  cs.push_back({"dispatch_semantics",
                {{metal_kernel("dispatch", {}, {"hits", "tpt", "tgp", "tiit", "info"}, R"(
           uint3 p = thread_position_in_grid;
           uint idx = p.x + 40 * (p.y + 8 * p.z);
           hits[idx] += 1;
           tpt[idx] = threads_per_threadgroup.x + 100 * threads_per_threadgroup.y +
                      10000 * threads_per_threadgroup.z;
           tgp[idx] = threadgroup_position_in_grid.x + 100 * threadgroup_position_in_grid.y +
                      10000 * threadgroup_position_in_grid.z;
           tiit[idx] = thread_index_in_threadgroup;
           if (p.x == 0 && p.y == 0 && p.z == 0) {
             info[0] = threadgroups_per_grid.x + 100 * threadgroups_per_grid.y +
                       10000 * threadgroups_per_grid.z;
             info[1] = dispatch_threads_per_threadgroup.x +
                       100 * dispatch_threads_per_threadgroup.y +
                       10000 * dispatch_threads_per_threadgroup.z;
             info[2] = threads_per_grid.x + 100 * threads_per_grid.y + 10000 * threads_per_grid.z;
             info[3] = threads_per_simdgroup;
           }
         )"),
                  {{{}, {}, {int32, uint32, uint32, uint32, uint32}}}},
                 {cuda_kernel("dispatch_cuda", {}, {"ran"}, R"(
           ran[blockIdx.x * blockDim.x + threadIdx.x] = 1 + blockIdx.x;
         )"),
                  {{{}, {}, {int32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 40 * 8 * 4;
                  auto out = k[0].fn({}, {{n}, {n}, {n}, {n}, {4}},
                                     {int32, uint32, uint32, uint32, uint32}, {37, 5, 3}, {8, 4, 2},
                                     {}, 0.0f, false, dev);
                  std::vector<std::vector<double>> want(4, std::vector<double>(n, 0.0));
                  for (int z = 0; z < 4; ++z)
                    for (int y = 0; y < 8; ++y)
                      for (int x = 0; x < 40; ++x) {
                        if (x >= 37 || y >= 5 || z >= 3) continue;
                        int idx = x + 40 * (y + 8 * z);
                        int rx = x >= 32 ? 5 : 8, ry = y >= 4 ? 1 : 4, rz = z >= 2 ? 1 : 2;
                        want[0][idx] = 1;
                        want[1][idx] = rx + 100 * ry + 10000 * rz;
                        want[2][idx] = x / 8 + 100 * (y / 4) + 10000 * (z / 2);
                        want[3][idx] = x % 8 + rx * (y % 4 + ry * (z % 2));
                      }
                  for (int o = 0; o < 4; ++o) expect_allclose(out[o], {n}, want[o], 0.0);
                  expect_allclose(out[4], {4},
                                  {5 + 200 + 20000, 8 + 400 + 20000, 37 + 500 + 30000, 32}, 0.0);
                  auto ran = k[1].fn({}, {{40}}, {int32}, {37, 1, 1}, {8, 1, 1}, {}, std::nullopt,
                                     false, dev);
                  std::vector<double> r(40);
                  for (int i = 0; i < 40; ++i) r[i] = 1 + i / 8;
                  expect_allclose(ran[0], {40}, r, 0.0);
                }});

  // Loop pragmas (#pragma clang loop, _Pragma in a macro), address-space keywords in a
  // header and in casts, program-scope constants.
  cs.push_back({"pragmas_and_address_spaces",
                {{metal_kernel("spaces", {"x"}, {"out"}, R"(
           threadgroup float buf[32];
           uint lid = thread_position_in_threadgroup.x;
           uint i = thread_position_in_grid.x;
           thread float local = load_scaled(x, i);
           stash(buf, lid, local);
           threadgroup_barrier(mem_flags::mem_threadgroup);
           float acc = buf[lid];
           #pragma clang loop unroll(full)
           for (int k = 0; k < 4; ++k) acc += 0.25f * k;
           MY_UNROLL
           for (int k = 0; k < 3; ++k) acc += 1.0f;
           #pragma clang loop unroll_count(2)
           for (int k = 0; k < 4; ++k) acc += 0.5f;
           device float* o = (device float*)out;
           o[i] = acc;
         )",
                               R"hdr(#include <metal_stdlib>
using namespace metal;
#define MY_UNROLL _Pragma("clang loop unroll(full)")
constant float kScale = 3.0f;
constant constexpr int kTable[2] = {1, 2};
METAL_FUNC float load_scaled(const device float* src, uint i) {
  return src[i] * kScale + kTable[1];
}
METAL_FUNC void stash(threadgroup float* buf, uint i, float v) { buf[i] = v; }
)hdr"),
                  {{{float32}, {1}, {float32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 64;
                  array x = random_array({n}, float32);
                  auto out = k[0].fn({x}, {{n}}, {float32}, {n, 1, 1}, {32, 1, 1}, {}, std::nullopt,
                                     false, dev);
                  expect_allclose(out[0], {n}, map_ref(values(x), [](double v) {
                                    return v * 3 + 2 + 1.5 + 3 + 2;
                                  }));
                }});

  // Gradients through custom_function: exp with its vjp kernel (reusing the output), and a
  // gather whose vjp scatters with atomic outputs and init_value=0.
  cs.push_back({"custom_function_gradients",
                {{metal_kernel("exp_fwd", {"x"}, {"y"},
                               "uint i = thread_position_in_grid.x;\ny[i] = metal::exp(x[i]);\n"),
                  {{{float32}, {1}, {float32}}}},
                 {metal_kernel("exp_vjp", {"cot", "y"}, {"dx"},
                               "uint i = thread_position_in_grid.x;\ndx[i] = cot[i] * y[i];\n"),
                  {{{float32, float32}, {1, 1}, {float32}}}},
                 {metal_kernel("gather_fwd", {"table", "idx"}, {"out"},
                               "uint i = thread_position_in_grid.x;\nout[i] = table[idx[i]];\n"),
                  {{{float32, int32}, {1, 1}, {float32}}}},
                 {metal_kernel("gather_vjp", {"cot", "idx"}, {"dtable"}, R"(
           uint i = thread_position_in_grid.x;
           atomic_fetch_add_explicit(&dtable[idx[i]], cot[i], memory_order_relaxed);
         )",
                               "", true, true),
                  {{{float32, int32}, {1, 1}, {float32}}}}},
                [](const std::vector<Kernel>& k, Device dev) {
                  const int n = 300, m = 20;
                  // exp: d/dx sum(cot * exp(x)) = cot * exp(x).
                  auto grid = [](const array& a) {
                    return std::tuple<int, int, int>{int(a.size()), 1, 1};
                  };
                  ArrayFn fexp = custom_function(
                      [&](const std::vector<array>& in) {
                        return k[0].fn({in[0]}, {in[0].shape()}, {float32}, grid(in[0]),
                                       {128, 1, 1}, {}, std::nullopt, false, dev);
                      },
                      CustomVjpFn([&](const std::vector<array>&, const std::vector<array>& cot,
                                      const std::vector<array>& out) {
                        return k[1].fn({cot[0], out[0]}, {out[0].shape()}, {float32}, grid(out[0]),
                                       {128, 1, 1}, {}, std::nullopt, false, dev);
                      }));
                  array x = random_array({n}, float32), cot = random_array({n}, float32);
                  auto [y, dx] = vjp(fexp, {x}, {cot});
                  auto vx = values(x), vc = values(cot);
                  std::vector<double> wy(n), wdx(n);
                  for (int i = 0; i < n; ++i) {
                    wy[i] = std::exp(vx[i]);
                    wdx[i] = vc[i] * wy[i];
                  }
                  expect_allclose(y[0], {n}, wy);
                  expect_allclose(dx[0], {n}, wdx);

                  // gather: the cotangent of table[j] sums the cotangents of the outputs reading j.
                  ArrayFn fgather = custom_function(
                      [&](const std::vector<array>& in) {
                        return k[2].fn({in[0], in[1]}, {in[1].shape()}, {float32}, grid(in[1]),
                                       {128, 1, 1}, {}, std::nullopt, false, dev);
                      },
                      CustomVjpFn([&](const std::vector<array>& primals,
                                      const std::vector<array>& cot, const std::vector<array>&) {
                        auto dtable = k[3].fn({cot[0], primals[1]}, {primals[0].shape()}, {float32},
                                              grid(primals[1]), {128, 1, 1}, {}, 0.0f, false, dev);
                        return std::vector<array>{dtable[0], zeros_like(primals[1], Device::cpu)};
                      }));
                  array table = random_array({m}, float32), idx = random_array({n}, int32, 0, m);
                  array gcot = random_array({n}, float32);
                  auto [g, grads] = vjp(fgather, {table, idx}, {gcot});
                  auto vt = values(table), vi = values(idx), vg = values(gcot);
                  std::vector<double> wg(n), wdt(m, 0.0);
                  for (int i = 0; i < n; ++i) {
                    wg[i] = vt[int(vi[i])];
                    wdt[int(vi[i])] += vg[i];
                  }
                  expect_allclose(g[0], {n}, wg);
                  expect_allclose(grads[0], {m}, wdt, 1e-5);
                }});

  return cs;
}

/** The table, built once. */
inline const std::vector<Case>& cases() {
  static const std::vector<Case> cs = make_cases();
  return cs;
}

}  // namespace kiln::test::custom_kernels
