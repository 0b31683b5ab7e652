// Custom kernels as MLX users write them: MLX's CUDA bodies (cooperative groups, MLX's
// device utilities, 0-d inputs indexed as pointers, shapes as arrays) and the Metal
// language's compute subset (packed vectors, type traits, limits, the math, integer,
// geometric and relational functions, fast/precise, quad and shuffle-and-fill functions,
// threadgroup atomics, Metal's conversions of half types in conditionals and literals),
// MLX's Metal utilities with MLX's signatures, and the math modes.
//
// Each kernel runs on the CPU (the kernel runtime), compiles for sm_90 with NVRTC when kiln
// is built with CUDA (no GPU needed: CI's check), and runs on the GPU when there is one,
// against float64 or exact references computed here.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "kiln/fast.h"
#include "test_utils.h"

namespace kiln {
namespace {

using fast::TemplateArg;
using TemplateArgs = std::vector<std::pair<std::string, TemplateArg>>;

std::tuple<int, int, int> d1(int n) {
  return {n, 1, 1};
}

bool has_gpu() {
  return is_available(Device::gpu);
}

double f16(double x) {
  return static_cast<float>(float16_t(static_cast<float>(x)));
}
double bf16(double x) {
  return static_cast<float>(bfloat16_t(static_cast<float>(x)));
}
double round_to(Dtype d, double x) {
  return d == float16 ? f16(x) : d == bfloat16 ? bf16(x) : static_cast<float>(x);
}

std::vector<int> ints_of(const array& a) {
  std::vector<int> out;
  for (double d : test::to_double(a)) out.push_back(static_cast<int>(d));
  return out;
}

array ints(const std::vector<int>& v) {
  return array(v.begin(), Shape{static_cast<int>(v.size())}, int32);
}

std::vector<int> random_ints(size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<int> v(n);
  for (auto& x : v) x = u(test::rng());
  return v;
}

// What a kernel of these tests is compiled for without running (CI's sm_90 check).
struct CompileInstance {
  std::vector<Dtype> inputs;
  std::vector<int> ndims;
  std::vector<Dtype> outputs;
  TemplateArgs targs = {};
};

// Compiles `k` for sm_90 with NVRTC (each instance), then runs `run(device)` on the CPU and
// on the GPU when there is one.
void on_every_target(const fast::KernelFunction& k, const std::vector<CompileInstance>& instances,
                     const std::function<void(Device)>& run) {
#ifdef KILN_WITH_CUDA
  for (const auto& inst : instances) {
    try {
      k.compile(inst.inputs, inst.ndims, inst.outputs, inst.targs, "sm_90");
    } catch (const std::exception& e) {
      ADD_FAILURE() << k.name() << " for sm_90: " << e.what();
    }
  }
#else
  (void)instances;
#endif
  {
    SCOPED_TRACE("CPU");
    run(Device::cpu);
  }
  if (has_gpu()) {
    SCOPED_TRACE("GPU");
    run(Device::gpu);
  }
}

// ---------------------------------------------------------------- MLX's CUDA bodies

// Every cooperative-groups feature an MLX CUDA body may use, in blocks of 48 threads (the
// second warp half full: its 32-wide tile is partial) over a grid that runs past the data.
const char* kCooperativeGroups = R"(
  namespace cg = cooperative_groups;
  auto grid = cooperative_groups::this_grid();
  auto block = cg::this_thread_block();
  const unsigned long long gi = grid.thread_rank();
  const bool in = gi < (unsigned long long)x_shape[0];
  const int v = in ? x[gi] : 0;

  auto tile = cg::tiled_partition<16>(block);
  const int tsum = cg::reduce(tile, v, cg::plus<int>());
  const int tmax = cg::reduce(tile, v, cg::greater<int>());
  const int tmin = cg::reduce(tile, v, cg::less<int>());
  const int incl = cg::inclusive_scan(tile, v);
  const int excl = cg::exclusive_scan(tile, v, cg::plus<int>());
  const int down = tile.shfl_down(v, 1);
  const int up = tile.shfl_up(v, 2);
  const int third = tile.shfl(v, 3);
  const int flip = tile.shfl_xor(v, 5);
  const unsigned pos = tile.ballot(v > 0);
  const int votes = tile.any(v > 90) + 2 * tile.all(v > -1000);
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int wsum = cg::reduce(warp, v, cg::plus<int>());  // partial in the second warp

  __shared__ int total[1];
  if (block.thread_rank() == 0) total[0] = 0;
  block.sync();
  atomicAdd(&total[0], v);
  cg::sync(block);
  cg::thread_group eights = cg::tiled_partition(block, 8);
  eights.sync();

  if (in) {
    sums[gi] = tsum;
    extremes[gi] = tmax * 1000 + tmin;
    scans[gi] = incl * 10000 + excl;
    // Values are in [-99, 99]: shifted by 100, four fit in base 200.
    shuffles[gi] = (((down + 100) * 200 + up + 100) * 200 + third + 100) * 200 + flip + 100;
    votes_out[gi] = int(pos) * 4 + votes;
    ranks[gi] = tile.thread_rank() + 100 * tile.meta_group_rank() + 10000 * eights.thread_rank() +
                100000 * (eights.meta_group_rank() % 10);
    blocks_out[gi] = total[0] + 100000 * wsum;
    info[gi] = int(block.size()) + 1000 * int(grid.block_rank()) +
               (grid.num_threads() == (unsigned long long)gridDim.x * blockDim.x ? 1 << 30 : 0);
  }
  // Lanes whose index is a multiple of 3 leave; the others meet as a coalesced group.
  if (!in || gi % 3 == 0) return;
  auto active = cg::coalesced_threads();
  coalesced[gi] = cg::reduce(active, v, cg::plus<int>()) * 10000 + active.thread_rank() * 40 +
                  int(active.size());
)";

TEST(CustomKernelMlxCuda, CooperativeGroups) {
  auto k = fast::cuda_kernel("mlx_cg", {"x"},
                             {"sums", "extremes", "scans", "shuffles", "votes_out", "ranks",
                              "blocks_out", "info", "coalesced"},
                             kCooperativeGroups);
  const int n = 130, tg = 48, blocks = (n + tg - 1) / tg;
  const std::vector<Dtype> out_dtypes(9, int32);
  on_every_target(k, {{{int32}, {1}, out_dtypes}}, [&](Device dev) {
    const auto xv = random_ints(n, -99, 99);
    auto outs = k({ints(xv)}, std::vector<Shape>(9, Shape{n}), out_dtypes, d1(n), d1(tg), {},
                  0.0f, false, dev);
    std::vector<std::vector<int>> got;
    for (auto& o : outs) got.push_back(ints_of(o));
    auto val = [&](int g) { return g < n ? xv[g] : 0; };
    for (int gi = 0; gi < n; ++gi) {
      const int b = gi / tg, t = gi % tg, t0 = b * tg + t / 16 * 16, r = t % 16;
      int sum = 0, mx = -1000, mn = 1000, inc = 0, exc = 0;
      unsigned pos = 0;
      bool any = false, all = true;
      for (int j = 0; j < 16; ++j) {
        const int w = val(t0 + j);
        sum += w, mx = std::max(mx, w), mn = std::min(mn, w);
        if (j <= r) inc += w;
        if (j < r) exc += w;
        pos |= (w > 0 ? 1u : 0u) << j;
        any = any || w > 90, all = all && w > -1000;
      }
      const int down = r + 1 < 16 ? val(t0 + r + 1) : val(gi);
      const int up = r >= 2 ? val(t0 + r - 2) : val(gi);
      const int third = val(t0 + 3), flip = val(t0 + (r ^ 5));
      EXPECT_EQ(got[0][gi], sum) << gi;
      EXPECT_EQ(got[1][gi], mx * 1000 + mn) << gi;
      EXPECT_EQ(got[2][gi], inc * 10000 + exc) << gi;
      EXPECT_EQ(got[3][gi],
                (((down + 100) * 200 + up + 100) * 200 + third + 100) * 200 + flip + 100)
          << gi;
      EXPECT_EQ(got[4][gi], int(pos) * 4 + int(any) + 2 * int(all)) << gi;
      EXPECT_EQ(got[5][gi], r + 100 * (t / 16) + 10000 * (t % 8) + 100000 * ((t / 8) % 10))
          << gi;
      int total = 0, wsum = 0;
      for (int j = 0; j < tg; ++j) total += val(b * tg + j);
      for (int j = t / 32 * 32; j < std::min(tg, t / 32 * 32 + 32); ++j) wsum += val(b * tg + j);
      EXPECT_EQ(got[6][gi], total + 100000 * wsum) << gi;
      EXPECT_EQ(got[7][gi], tg + 1000 * b + (1 << 30)) << gi;
      if (gi % 3 == 0) {
        EXPECT_EQ(got[8][gi], 0) << gi;  // left before the group formed: init_value
        continue;
      }
      // The lanes of this warp still running: in the grid's data and not a multiple of 3.
      const int w0 = b * tg + t / 32 * 32, w1 = std::min(b * tg + tg, w0 + 32);
      int csum = 0, crank = 0, csize = 0;
      for (int j = w0; j < w1; ++j) {
        if (j >= n || j % 3 == 0) continue;
        csum += val(j), ++csize;
        if (j < gi) ++crank;
      }
      EXPECT_EQ(got[8][gi], csum * 10000 + crank * 40 + csize) << gi;
    }
    (void)blocks;
  });
}

// The CUDA bodies of MLX's test_fast (written anew with the same meaning): this_grid() for
// the element index, 0-d inputs read as d[0], template arguments, shapes and strides passed
// as arrays (inp_shape.data()), WARP_SIZE, a __device__ helper in the header, blockDim.
TEST(CustomKernelMlxCuda, TestFastBodies) {
  auto basic = fast::cuda_kernel("mlx_basic", {"a"}, {"out1"}, R"(
    auto elem = cooperative_groups::this_grid().thread_rank();
    out1[elem] = a[elem];
  )");
  auto args = fast::cuda_kernel("mlx_args", {"a", "b", "c", "d"}, {"out1", "out2"}, R"(
    auto elem = cooperative_groups::this_grid().thread_rank();
    T tmp = a[0];
    if (e) {
      out1[elem] = a[1] + b[2] + static_cast<float>(c[3]) + d[0] + f;
    } else {
      out1[elem] = 1;
    }
    out2[elem] = a[1] + b[2] + static_cast<float>(c[1]) - d[0] + float(tmp) * 0;
  )");
  auto strides = fast::cuda_kernel("mlx_strides", {"inp"}, {"out"}, R"(
    auto elem = cooperative_groups::this_grid().thread_rank();
    auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
    T tmp = inp[loc];
    out[elem] = exp(tmp) * WARP_SIZE;
  )",
                                   "", false);
  auto helper = fast::cuda_kernel("mlx_helper", {"a"}, {"out1"}, R"(
    auto elem = cooperative_groups::this_grid().thread_rank();
    out1[elem] = do_exp(a[elem]);
  )",
                                  R"(
    template <typename T>
    __device__ T do_exp(T x) {
      return exp(x);
    }
  )");
  auto attributes = fast::cuda_kernel("mlx_attributes", {"a"}, {"out"}, "out[0] = blockDim.x;");
  const TemplateArgs targs = {{"e", true}, {"f", 3}, {"T", float16}};
  on_every_target(basic, {{{float32}, {2}, {float32}}}, [&](Device dev) {
    array a = test::random_array({2, 2}, float32);
    auto out = basic({a}, {{2, 2}}, {float32}, d1(4), d1(2), {}, std::nullopt, false, dev)[0];
    test::expect_allclose(out, {2, 2}, test::to_double(a), 0.0);
  });
  on_every_target(args, {{{float32, int32, bfloat16, float32}, {2, 1, 2, 0}, {float32, int32},
                          targs}},
                  [&](Device dev) {
                    array a = test::random_array({3, 6}, float32);
                    array c = test::random_array({2, 2}, bfloat16);
                    array b = ints({3, 4, 5}), d(7.3f);
                    auto outs = args({a, b, c, d}, {{3, 2}, {3, 2}}, {float32, int32}, d1(6),
                                     d1(2), targs, std::nullopt, false, dev);
                    auto av = test::to_double(a), cv = test::to_double(c);
                    const double o1 = float(float(float(av[1] + 5) + float(cv[3])) + 7.3f) + 3;
                    test::expect_allclose(outs[0], {3, 2}, std::vector<double>(6, o1), 1e-6);
                    // out2 is int32: the float sum truncated.
                    const int o2 = int(float(float(av[1] + 5) + float(cv[1])) - 7.3f);
                    EXPECT_EQ(ints_of(outs[1]), std::vector<int>(6, o2));
                  });
  on_every_target(strides, {{{float32}, {2}, {float32}, {{"T", float32}}}}, [&](Device dev) {
    // A non-contiguous input (every other row, tiled): real strides, no copy.
    array base = test::random_array({3, 6}, float32);
    array a = transpose(slice(base, {0, 0}, {3, 6}, {2, 1}, Device::cpu), Device::cpu);
    auto out = strides({a}, {a.shape()}, {float32}, d1(int(a.size())), d1(256), {{"T", float32}},
                       std::nullopt, false, dev)[0];
    test::expect_allclose(out, a.shape(),
                          test::map_ref(test::to_double(a), [](double x) { return 32 * std::exp(x); }),
                          1e-5);
  });
  on_every_target(helper, {{{float32}, {2}, {float32}}}, [&](Device dev) {
    array a = test::random_array({2, 2}, float32);
    auto out = helper({a}, {{2, 2}}, {float32}, d1(4), d1(2), {}, std::nullopt, false, dev)[0];
    test::expect_allclose(out, {2, 2},
                          test::map_ref(test::to_double(a), [](double x) { return std::exp(x); }),
                          1e-5);
  });
  on_every_target(attributes, {{{float32}, {2}, {uint32}}}, [&](Device dev) {
    array a = zeros({1, 1}, float32);
    auto out = attributes({a}, {{1, 1}}, {uint32}, d1(2), d1(2), {}, std::nullopt, false, dev)[0];
    EXPECT_EQ(ints_of(out), std::vector<int>({2}));
  });
}

// MLX's CUDA device utilities: tuple elem_to_loc for two arrays (structured bindings),
// elem_to_loc_nd, Limits<T> as MLX's functions and as values, MAX_NDIM, inf, vectorized
// loads and stores, cuda::std, and cuda_fp16.h's API on float16 data.
TEST(CustomKernelMlxCuda, DeviceUtilities) {
  auto k = fast::cuda_kernel("mlx_utils", {"a", "b", "h"}, {"out", "hout"}, R"(
    const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a_shape[0] * a_shape[1]) return;
    auto [la, lb] = elem_to_loc(i, a_shape.data(), a_strides.data(), b_strides.data(), a_ndim);
    const int64_t lc = elem_to_loc_nd<2>(i, a_shape.data(), a_strides.data());
    float lim = Limits<float>::max() == inf && Limits<int>::max == 2147483647 &&
                        cuda::std::numeric_limits<int16_t>::min() == -32768 && MAX_NDIM == 10
                    ? 1.0f
                    : -100.0f;
    out[i] = a[la] * b[lb] + lim + float(lc - la);
    if (i % 4 == 0 && i + 4 <= a_shape[0] * a_shape[1]) {
      AlignedVector<__half, 4> v = load_vector<4>(h, uint32_t(i / 4));
      for (int j = 0; j < 4; ++j) v[j] = __hadd(hexp(v[j]), __float2half(1.0f));
      store_vector<4>(hout, uint32_t(i / 4), v);
    }
  )",
                             "", false);
  on_every_target(k, {{{float32, float32, float16}, {2, 2, 1}, {float32, float16}}},
                  [&](Device dev) {
                    array a = test::random_array({8, 6}, float32);
                    array bt = test::random_array({6, 8}, float32);
                    array b = transpose(bt, Device::cpu);  // same shape, other strides
                    array h = test::random_array({48}, float16);
                    auto outs = k({a, b, h}, {{8, 6}, {48}}, {float32, float16}, d1(48), d1(32),
                                  {}, std::nullopt, false, dev);
                    auto av = test::to_double(a), bv = test::to_double(b), hv = test::to_double(h);
                    std::vector<double> ref(48), href(48);
                    for (int i = 0; i < 48; ++i) {
                      ref[i] = float(av[i] * bv[i]) + 1.0;
                      href[i] = f16(f16(std::exp(hv[i])) + 1.0);
                    }
                    test::expect_allclose(outs[0], {8, 6}, ref, 1e-6);
                    test::expect_allclose(outs[1], {48}, href, 2e-3);
                  });
}

// ---------------------------------------------------------------- the Metal language

// Packed vectors of every element kind, read through reinterpret_cast and written back, in
// float32, float16 and bfloat16: packed_T4 * 2 + 1 as vectors, packed_T2 swapped, and a
// packed_float3's layout (12 bytes).
TEST(CustomKernelMlxMetal, PackedVectors) {
  auto k = fast::metal_kernel("metal_packed", {"x"}, {"out", "sizes"}, R"(
    uint i = thread_position_in_grid.x;
    device const packed_vec<T, 4>* x4 = reinterpret_cast<device const packed_vec<T, 4>*>(x);
    device packed_vec<T, 4>* o4 = reinterpret_cast<device packed_vec<T, 4>*>(out);
    vec<T, 4> v = x4[i];
    packed_vec<T, 4> p = v * T(2) + T(1);
    packed_vec<T, 2> lo(p.x, p.y);
    packed_vec<T, 2> hi = packed_vec<T, 2>(p[3], p[2]);
    o4[i] = packed_vec<T, 4>(lo.x, lo.y, hi.x, hi.y);
    if (i == 0) {
      sizes[0] = sizeof(packed_float3) + 100 * alignof(packed_float3);
      sizes[1] = sizeof(packed_half2) + 100 * alignof(packed_half2);
      sizes[2] = sizeof(packed_uchar4) + 100 * sizeof(packed_ushort3) + 10000 * sizeof(packed_int2);
      packed_float3 f(1.0f, 2.0f, 3.0f);
      float3 g = f;
      packed_bfloat4 b4 = bfloat4(1);
      packed_short2 s2 = short2(3, -4);
      sizes[3] = int(dot(g, float3(f)) + float(b4.w) + s2.x * s2.y);
    }
  )");
  for (Dtype t : {float32, float16, bfloat16}) {
    SCOPED_TRACE(type_to_name(t));
    on_every_target(k, {{{t}, {1}, {t, int32}, {{"T", t}}}}, [&](Device dev) {
      array x = test::random_array({64}, t);
      auto outs = k({x}, {{64}, {4}}, {t, int32}, d1(16), d1(16), {{"T", t}}, std::nullopt, false,
                    dev);
      auto xv = test::to_double(x);
      std::vector<double> ref(64);
      for (int i = 0; i < 16; ++i) {
        double p[4];
        for (int j = 0; j < 4; ++j) p[j] = round_to(t, round_to(t, xv[4 * i + j] * 2) + 1);
        ref[4 * i] = p[0], ref[4 * i + 1] = p[1], ref[4 * i + 2] = p[3], ref[4 * i + 3] = p[2];
      }
      test::expect_allclose(outs[0], {64}, ref, 0.0);
      EXPECT_EQ(ints_of(outs[1]),
                std::vector<int>({12 + 100 * 4, 4 + 100 * 2, 4 + 100 * 6 + 10000 * 8, 14 + 1 - 12}));
    });
  }
}

// <metal_type_traits> and metal::numeric_limits, checked where the body is compiled
// (static_assert) and read back from the kernel.
TEST(CustomKernelMlxMetal, TypeTraitsAndLimits) {
  auto k = fast::metal_kernel("metal_traits", {"x"}, {"out"}, R"(
    static_assert(metal::is_integral<int>::value && is_integral_v<uint8_t> && !is_integral_v<T>);
    static_assert(is_floating_point_v<half> && is_floating_point_v<bfloat> && is_floating_point_v<T>);
    static_assert(is_same_v<remove_cv_t<const volatile T>, T> && is_same<T, T>::value);
    static_assert(bool_constant<true>::value && !false_type::value && integral_constant<int, 3>() == 3);
    static_assert(is_same_v<enable_if_t<true, int>, int> && is_same_v<conditional_t<false, int, T>, T>);
    static_assert(is_signed_v<int> && is_unsigned_v<uint> && is_arithmetic_v<T> && is_scalar_v<T>);
    static_assert(is_vector_v<float4> && !is_vector_v<float> && vec_elements<half3>::value == 3);
    static_assert(is_same_v<make_scalar_t<ushort2>, ushort> && is_same_v<make_unsigned_t<int>, uint>);
    static_assert(is_same_v<make_signed_t<uint>, int> && is_same_v<remove_pointer_t<T*>, T>);
    static_assert(is_convertible_v<half, float> && !is_convertible_v<float*, int>);
    static_assert(numeric_limits<int>::max() == 2147483647 && numeric_limits<uchar>::max() == 255);
    static_assert(numeric_limits<float>::digits == 24 && numeric_limits<half>::digits == 11);
    uint i = thread_position_in_grid.x;
    out[i] = i == 0 ? float(numeric_limits<T>::max())
           : i == 1 ? float(numeric_limits<T>::lowest())
           : i == 2 ? float(numeric_limits<T>::epsilon())
           : i == 3 ? float(numeric_limits<T>::min())
           : i == 4 ? float(numeric_limits<T>::infinity())
           : float(x[0]) * 0.0f + float(numeric_limits<short>::min());
  )");
  for (Dtype t : {float32, float16, bfloat16}) {
    SCOPED_TRACE(type_to_name(t));
    on_every_target(k, {{{t}, {1}, {float32}, {{"T", t}}}}, [&](Device dev) {
      auto out = k({zeros({1}, t)}, {{6}}, {float32}, d1(6), d1(6), {{"T", t}}, std::nullopt,
                   false, dev)[0];
      double mx = t == float32 ? 3.4028234663852886e38 : t == float16 ? 65504.0 : 3.3895313892515355e38;
      double eps = t == float32 ? 1.1920928955078125e-07 : t == float16 ? 0.0009765625 : 0.0078125;
      double mn = t == float32 ? 1.1754943508222875e-38 : t == float16 ? 6.103515625e-05
                                                                        : 1.1754943508222875e-38;
      test::expect_allclose(out, {6}, {mx, -mx, eps, mn, INFINITY, -32768.0}, 1e-7);
    });
  }
}


// The math, common, geometric and relational functions in float32, float16 and bfloat16
// (computed in float, rounded once to T), with metal::precise:: and metal::fast:: (within
// the fast intrinsics' error), against float64 references.
const char* kMetalMath = R"(
  uint i = thread_position_in_grid.x;
  const T a = x[i], b = y[i];
  const float fa = float(a), fb = float(b);
  uint o = i * 16;
  out[o + 0] = fmax3(a, b, T(0.25f));
  out[o + 1] = fmedian3(a, b, T(0.25f));
  out[o + 2] = fmin3(a, b, T(-0.25f));
  out[o + 3] = divide(a, T(2));
  out[o + 4] = mix(a, b, T(0.25f));
  out[o + 5] = clamp(a, T(-0.5f), T(0.5f));
  out[o + 6] = smoothstep(T(-1), T(1), a) + step(T(0), b);
  out[o + 7] = sign(a) * fract(b);
  out[o + 8] = metal::precise::exp(a) + metal::precise::sqrt(abs(b));
  out[o + 9] = T(metal::fast::exp(fa) * 0.0f) + copysign(a, b);
  float3 v(fa, fb, 1.0f), n = normalize(float3(0.0f, 1.0f, 1.0f));
  out[o + 10] = T(length(v) + distance_squared(v, n) + dot(reflect(v, n), v));
  out[o + 11] = T(float(isnormal(a)) + 2.0f * float(isordered(a, b)) + 4.0f * float(signbit(b)));
  float c;
  const float s = sincos(fa, c);
  out[o + 12] = T(s * s + c * c + cross(v, float3(1.0f, 0.0f, 0.0f)).y);
  out[o + 13] = T(select(fa, fb, fa < fb) + float(all(v > -10.0f)) + float(any(v > 100.0f)));
  int e;
  out[o + 14] = T(frexp(fa, e) + float(e) + ldexp(1.0f, 3));
  out[o + 15] = T(fmax(pow(abs(fa), 2), 0.5f) + max(fa, 0));
)";

TEST(CustomKernelMlxMetal, MathFunctions) {
  auto k = fast::metal_kernel("metal_math_more", {"x", "y"}, {"out"}, kMetalMath);
  for (Dtype t : {float32, float16, bfloat16}) {
    SCOPED_TRACE(type_to_name(t));
    on_every_target(k, {{{t, t}, {1, 1}, {t}, {{"T", t}}}}, [&](Device dev) {
      const int n = 96;
      array x = test::random_array({n}, t, -2, 2), y = test::random_array({n}, t, -2, 2);
      auto out = k({x, y}, {{n * 16}}, {t}, d1(n), d1(32), {{"T", t}}, std::nullopt, false, dev)[0];
      auto xv = test::to_double(x), yv = test::to_double(y);
      auto r = [&](double v) { return round_to(t, v); };
      std::vector<double> ref(n * 16);
      for (int i = 0; i < n; ++i) {
        const double a = xv[i], b = yv[i];
        double* o = &ref[i * 16];
        o[0] = std::max({a, b, 0.25});
        o[1] = std::max(std::min(a, b), std::min(std::max(a, b), 0.25));
        o[2] = std::min({a, b, -0.25});
        o[3] = r(a / 2);
        o[4] = r(a + (b - a) * 0.25);
        o[5] = std::min(std::max(a, -0.5), 0.5);
        const double tt = std::min(std::max((a + 1) / 2, 0.0), 1.0);
        o[6] = r(r(tt * tt * (3 - 2 * tt)) + (b < 0 ? 0 : 1));
        const double sg = a > 0 ? 1 : a < 0 ? -1 : 0;
        o[7] = r(sg * r(b - std::floor(b)));
        o[8] = r(r(std::exp(a)) + r(std::sqrt(std::abs(b))));
        o[9] = std::copysign(std::abs(a), b);
        const double nn = std::sqrt(0.5);
        const double v[3] = {a, b, 1.0}, nv[3] = {0, nn, nn};
        const double vn = v[1] * nn + v[2] * nn;
        double rf[3], len2 = 0, d2 = 0, rdot = 0;
        for (int j = 0; j < 3; ++j) {
          rf[j] = v[j] - 2 * vn * nv[j];
          len2 += v[j] * v[j], d2 += (v[j] - nv[j]) * (v[j] - nv[j]), rdot += rf[j] * v[j];
        }
        o[10] = r(std::sqrt(len2) + d2 + rdot);
        const double mag = std::abs(a);
        const bool normal = mag >= (t == float16 ? 6.103515625e-05 : 1.1754943508222875e-38);
        o[11] = double(normal) + 2.0 + 4.0 * double(std::signbit(b));
        o[12] = r(1.0 + 1.0);  // sin^2 + cos^2, and cross(v, x).y = v.z = 1
        o[13] = r((a < b ? b : a) + 1.0 + 0.0);
        int ex;
        const double m = std::frexp(float(a), &ex);
        o[14] = r(m + ex + 8.0);
        o[15] = r(std::max(a * a, 0.5) + std::max(a, 0.0));
      }
      // float32: float rounding of intermediate steps; half types: one rounding per op.
      test::expect_allclose(out, {n * 16}, ref, t == float32 ? 2e-5 : t == float16 ? 4e-3 : 2e-2);
    });
  }
}

// The integer functions, exact, on int32 and uint32 values (and a vector form of each).
TEST(CustomKernelMlxMetal, IntegerFunctions) {
  auto k = fast::metal_kernel("metal_integer", {"x", "y"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    const int a = x[i], b = y[i];
    const uint ua = uint(a), ub = uint(b);
    uint o = i * 16;
    out[o + 0] = int(absdiff(a, b));
    out[o + 1] = addsat(a, b);
    out[o + 2] = subsat(a, b);
    out[o + 3] = int(uint(hadd(a, b)) + uint(rhadd(a, b)));
    out[o + 4] = mul24(a & 0xfff, b & 0xfff) + mad24(a & 0xff, 3, 1);
    out[o + 5] = mulhi(a, b);
    out[o + 6] = int(mulhi(ua, ub));
    out[o + 7] = int(rotate(ua, uint(b & 31)));
    out[o + 8] = int(reverse_bits(ua));
    out[o + 9] = int(extract_bits(ua, 4u, 8u)) + extract_bits(a, 28u, 4u);
    out[o + 10] = int(insert_bits(ua, ub, 8u, 12u));
    out[o + 11] = popcount(a) + 100 * clz(ua) + 10000 * ctz(ub);
    out[o + 12] = madsat(a, 3, b);
    out[o + 13] = addsat(int2(a, b), int2(b, a)).y - addsat(b, a);
    out[o + 14] = int(popcount(uint4(ua, ub, 1u, 3u)).w) + int(clz(uint2(ua)).x) - clz(ua);
    out[o + 15] = int(uint(max(a, b)) + uint(min3(a, b, 0)) + uint(median3(a, b, 7)) +
                      uint(clamp(a, -5, 5)));
  )");
  on_every_target(k, {{{int32, int32}, {1, 1}, {int32}}}, [&](Device dev) {
    const int n = 80;
    std::vector<int> xv = random_ints(n, -2000000000, 2000000000),
                     yv = random_ints(n, -2000000000, 2000000000);
    for (int i = 0; i < 8; ++i) xv[i] = std::vector<int>{0, -1, 2147483647, -2147483647 - 1,
                                                         1, 7, 65535, -65536}[i];
    auto out = ints_of(k({ints(xv), ints(yv)}, {{n * 16}}, {int32}, d1(n), d1(32), {},
                         std::nullopt, false, dev)[0]);
    auto sat = [](int64_t v) {
      return int(std::min<int64_t>(std::max<int64_t>(v, INT32_MIN), INT32_MAX));
    };
    auto rev = [](uint32_t u) {
      uint32_t r = 0;
      for (int k = 0; k < 32; ++k) r |= ((u >> k) & 1u) << (31 - k);
      return r;
    };
    auto clz32 = [](uint32_t u) { return u ? __builtin_clz(u) : 32; };
    auto ctz32 = [](uint32_t u) { return u ? __builtin_ctz(u) : 32; };
    for (int i = 0; i < n; ++i) {
      const int64_t a = xv[i], b = yv[i];
      const uint32_t ua = uint32_t(xv[i]), ub = uint32_t(yv[i]);
      const int* o = &out[i * 16];
      EXPECT_EQ(o[0], int(uint32_t(std::abs(a - b)))) << i;
      EXPECT_EQ(o[1], sat(a + b)) << i;
      EXPECT_EQ(o[2], sat(a - b)) << i;
      // Two halves of INT32_MIN..MAX inputs can overflow an int: the kernel and the reference
      // add as uint32, which wraps (a signed overflow is undefined; UBSan reports it).
      EXPECT_EQ(o[3], int(uint32_t((a + b) >> 1) + uint32_t((a + b + 1) >> 1))) << i;
      EXPECT_EQ(o[4], int((a & 0xfff) * (b & 0xfff) + (a & 0xff) * 3 + 1)) << i;
      EXPECT_EQ(o[5], int((a * b) >> 32)) << i;
      EXPECT_EQ(o[6], int(uint32_t((uint64_t(ua) * ub) >> 32))) << i;
      const uint32_t s = uint32_t(b & 31);
      EXPECT_EQ(o[7], int(s ? (ua << s) | (ua >> (32 - s)) : ua)) << i;
      EXPECT_EQ(o[8], int(rev(ua))) << i;
      EXPECT_EQ(o[9], int((ua >> 4) & 0xffu) + (int(xv[i]) >> 28)) << i;
      const uint32_t field = 0xfffu << 8;
      EXPECT_EQ(o[10], int((ua & ~field) | ((ub << 8) & field))) << i;
      EXPECT_EQ(o[11], __builtin_popcount(ua) + 100 * clz32(ua) + 10000 * ctz32(ub)) << i;
      const int64_t p = a * 3;
      EXPECT_EQ(o[12], (p > INT32_MAX || p < INT32_MIN) ? (p > 0 ? INT32_MAX : INT32_MIN)
                                                         : sat(p + b))
          << i;
      EXPECT_EQ(o[13], 0) << i;
      EXPECT_EQ(o[14], 2) << i;
      const int64_t med = std::max(std::min(a, b), std::min(std::max(a, b), int64_t(7)));
      EXPECT_EQ(o[15], int(uint32_t(std::max(a, b) + std::min({a, b, int64_t(0)}) + med +
                                    std::min(std::max(a, int64_t(-5)), int64_t(5)))))
          << i;
    }
  });
}

// Metal's conversions where a half type meets a float or an int: `c ? h : 0.0f` is a float,
// `x > 0 ? x : 0` a half, half literals (1.5h, 0.25bf), half * int is half and half * float
// a float, a scalar broadcasts to a half vector (half4 v = 0.0f), math with a mixed pair
// (pow(h, 2), max(h, 0.5f)).
TEST(CustomKernelMlxMetal, HalfPromotionRules) {
  auto k = fast::metal_kernel("metal_promotion", {"x"}, {"h", "f"}, R"(
    uint i = thread_position_in_grid.x;
    T v = x[i];
    bool c = i % 2 == 0;
    auto r0 = c ? v : 0.0f;                 // float
    auto r1 = v > 0 ? v : 0;                // T
    auto r2 = v * 2;                        // T
    auto r3 = v * 2.0f;                     // float
    auto r4 = c ? T(1) : v;                 // T (same types)
    half4 hv = 0.0f;
    hv += 1;
    hv = c ? hv : half4(2);
    static_assert(metal::is_same_v<decltype(r0), float>, "cond ? h : 0.0f is a float");
    static_assert(metal::is_same_v<decltype(r1), T>, "x > 0 ? x : 0 keeps the half type");
    static_assert(metal::is_same_v<decltype(r2), T>, "half * int is a half");
    static_assert(metal::is_same_v<decltype(r3), float>, "half * float is a float");
    h[i * 4 + 0] = r1 + r2;
    h[i * 4 + 1] = r4 + T(hv.x);
    h[i * 4 + 2] = max(v, 0.5f) + pow(v, 2);
    h[i * 4 + 3] = v * 1.5h + 0.25bf;
    f[i * 2 + 0] = r0;
    f[i * 2 + 1] = r3 + (c ? 1 : 2.0f);
  )");
  for (Dtype t : {float16, bfloat16}) {
    SCOPED_TRACE(type_to_name(t));
    on_every_target(k, {{{t}, {1}, {t, float32}, {{"T", t}}}}, [&](Device dev) {
      const int n = 64;
      array x = test::random_array({n}, t, -3, 3);
      auto outs = k({x}, {{n * 4}, {n * 2}}, {t, float32}, d1(n), d1(32), {{"T", t}},
                    std::nullopt, false, dev);
      auto xv = test::to_double(x);
      auto r = [&](double v) { return round_to(t, v); };
      std::vector<double> href(n * 4), fref(n * 2);
      for (int i = 0; i < n; ++i) {
        const double v = xv[i];
        const bool c = i % 2 == 0;
        href[i * 4] = r((v > 0 ? v : 0) + r(v * 2));
        href[i * 4 + 1] = r((c ? 1.0 : v) + (c ? 1.0 : 2.0));
        // max(h, 0.5f) and pow(h, 2) are floats; their sum rounds to T on the store.
        // max(h, 0.5f) is a float, pow(h, 2) a T (an int meets the half type); their sum is a
        // float, rounded to T on the store.
        href[i * 4 + 2] = r(float(std::max(v, 0.5)) + r(v * v));
        // 1.5h is a half, 0.25bf a bfloat: half * half is a half (bfloat * half a float),
        // and + bfloat a float.
        href[i * 4 + 3] = r(float(t == float16 ? r(v * 1.5) : v * 1.5) + 0.25);
        fref[i * 2] = c ? v : 0.0;
        fref[i * 2 + 1] = float(v * 2) + (c ? 1.0 : 2.0);
      }
      test::expect_allclose(outs[0], {n * 4}, href, t == float16 ? 2e-3 : 1e-2);
      test::expect_allclose(outs[1], {n * 2}, fref, 1e-6);
    });
  }
}

// quad_* reductions, scans, shuffles and votes, and simd_shuffle_and_fill_up/down (with a
// modulo), on threadgroups of 40 (a full simdgroup and one of 8 lanes).
TEST(CustomKernelMlxMetal, QuadAndShuffleAndFill) {
  auto k = fast::metal_kernel("metal_quads", {"x"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    int v = x[i];
    uint o = i * 8;
    out[o + 0] = quad_sum(v);
    out[o + 1] = quad_max(v) * 1000 + quad_min(v);
    out[o + 2] = quad_prefix_inclusive_sum(v) * 1000 + quad_prefix_exclusive_sum(v);
    out[o + 3] = quad_shuffle_up(v, 1) * 1000 + quad_shuffle_down(v, 2);
    out[o + 4] = quad_shuffle_rotate_down(v, 1) * 1000 + quad_broadcast(v, 2);
    out[o + 5] = int(ushort(quad_ballot(v > 0))) + 16 * int(quad_any(v > 90)) + 32 * int(quad_all(v > -100));
    out[o + 6] = simd_shuffle_and_fill_down(v, -v, 3) * 1000 + simd_shuffle_and_fill_up(v, -v, 2, 8);
    out[o + 7] = quad_shuffle_and_fill_down(v, -v, 1);
  )");
  on_every_target(k, {{{int32}, {1}, {int32}}}, [&](Device dev) {
    const int n = 80, tg = 40;
    const auto xv = random_ints(n, -99, 99);
    auto out = ints_of(k({ints(xv)}, {{n * 8}}, {int32}, d1(n), d1(tg), {}, std::nullopt, false,
                         dev)[0]);
    for (int i = 0; i < n; ++i) {
      const int t = i % tg, lane = t % 32, warp0 = i - lane, q0 = i - (lane & 3), p = lane & 3;
      const int warp_size = std::min(32, tg - (t - lane));
      auto at = [&](int l) { return xv[warp0 + l]; };
      int sum = 0, mx = -1000, mn = 1000, inc = 0, exc = 0, bal = 0;
      bool any = false, all = true;
      for (int j = 0; j < 4; ++j) {
        const int w = xv[q0 + j];
        sum += w, mx = std::max(mx, w), mn = std::min(mn, w);
        if (j <= p) inc += w;
        if (j < p) exc += w;
        bal |= (w > 0) << j;
        any = any || w > 90, all = all && w > -100;
      }
      const int* o = &out[i * 8];
      EXPECT_EQ(o[0], sum) << i;
      EXPECT_EQ(o[1], mx * 1000 + mn) << i;
      EXPECT_EQ(o[2], inc * 1000 + exc) << i;
      EXPECT_EQ(o[3], (p >= 1 ? xv[i - 1] : xv[i]) * 1000 + (p + 2 < 4 ? xv[i + 2] : xv[i])) << i;
      EXPECT_EQ(o[4], xv[q0 + ((p + 1) & 3)] * 1000 + xv[q0 + 2]) << i;
      EXPECT_EQ(o[5], bal + 16 * any + 32 * all) << i;
      // Fill down by 3 in groups of 32 (the warp); up by 2 in groups of 8.
      const int g8 = lane - lane % 8, p8 = lane % 8;
      const int upv = p8 >= 2 ? at(g8 + p8 - 2) : -at(g8 + p8 + 8 - 2);
      // In the partial simdgroup the last lanes would read lanes that do not exist (so does
      // the reference: at() past the input, an overflow ASan found), so they are not checked.
      if (lane + 3 < warp_size) {
        const int dn = lane + 3 < 32 ? at(lane + 3) : -at(lane + 3 - 32);
        EXPECT_EQ(o[6], dn * 1000 + upv) << i;
      }
      EXPECT_EQ(o[7], p + 1 < 4 ? xv[i + 1] : -xv[q0]) << i;
    }
  });
}

// Atomics on threadgroup memory (a per-threadgroup histogram, then summed into the output
// with device atomics), and MLX's Metal utilities with MLX's signatures: ceildiv(int,
// uint), elem_to_loc with a uint3, elem_to_loc_2_nd, LoopedElemToLoc, log1p, Limits,
// WorkPerThread and MLX_MTL_PRAGMA_UNROLL.
TEST(CustomKernelMlxMetal, ThreadgroupAtomicsAndMlxUtilities) {
  auto hist = fast::metal_kernel("metal_tg_atomics", {"idx"}, {"counts"}, R"(
    threadgroup atomic<int> bins[8];
    threadgroup atomic_uint seen;
    uint t = thread_index_in_threadgroup;
    if (t < 8) atomic_store_explicit(&bins[t], 0, memory_order_relaxed);
    if (t == 0) atomic_store_explicit(&seen, 0u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&bins[idx[thread_position_in_grid.x] & 7], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&seen, 1u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t < 8) {
      int c = atomic_load_explicit(&bins[t], memory_order_relaxed);
      atomic_fetch_add_explicit(&counts[t], c, memory_order_relaxed);
    }
    if (t == 0) atomic_fetch_add_explicit(&counts[8], int(atomic_load_explicit(&seen, memory_order_relaxed)), memory_order_relaxed);
  )",
                                 "", true, true);
  on_every_target(hist, {{{int32}, {1}, {int32}}}, [&](Device dev) {
    const int n = 300;
    const auto iv = random_ints(n, 0, 1000);
    auto out = ints_of(hist({ints(iv)}, {{9}}, {int32}, d1(n), d1(64), {}, 0.0f, false, dev)[0]);
    std::vector<int> ref(9, 0);
    for (int v : iv) ++ref[v & 7];
    ref[8] = n;
    EXPECT_EQ(out, ref);
  });

  auto utils = fast::metal_kernel("metal_mlx_utils", {"a", "b"}, {"out"}, R"(
    uint3 pos = thread_position_in_grid;
    int n = 7;
    uint m = 2;
    int64_t la = elem_to_loc(pos, a_shape, a_strides, a_ndim);
    auto both = elem_to_loc_2_nd(pos, a_shape, a_strides, b_strides, a_ndim);
    LoopedElemToLoc<2, int64_t, true> looper(a_ndim);
    looper.next(a_shape, a_strides);
    float unrolled = 0.0f;
    MLX_MTL_PRAGMA_UNROLL
    for (int j = 0; j < 4; ++j) unrolled += float(j);
    uint e = pos.x + a_shape[2] * (pos.y + a_shape[1] * pos.z);
    out[e] = a[la] + b[both.y] + float(ceildiv(n, m)) * 0.0f + float(both.x - la) +
             (Limits<float>::max > 0.0f ? 0.0f : 1.0f) + float(WorkPerThread<float>::n) * 0.0f +
             log1p(0.0f) + float(looper.location() - a_strides[2]) + unrolled * 0.0f;
  )",
                                  "", false);
  on_every_target(utils, {{{float32, float32}, {3, 3}, {float32}}}, [&](Device dev) {
    array a = test::random_array({3, 4, 5}, float32);
    array b = transpose(test::random_array({5, 4, 3}, float32), {2, 1, 0}, Device::cpu);
    auto out = utils({a, b}, {{3, 4, 5}}, {float32}, {5, 4, 3}, {5, 2, 1}, {}, std::nullopt,
                     false, dev)[0];
    auto av = test::to_double(a), bv = test::to_double(b);
    std::vector<double> ref(60);
    for (int i = 0; i < 60; ++i) ref[i] = float(av[i] + bv[i]);
    test::expect_allclose(out, {3, 4, 5}, ref, 1e-6);
  });
}

}  // namespace
}  // namespace kiln
