// The fused built-ins of kiln/fast.h: rms_norm, layer_norm, rope and cross_entropy
// (scaled_dot_product_attention: test_fast_attention.cpp).
//
// Each runs on the default device (KILN_DEVICE=gpu runs the GPU kernels) on fresh random
// inputs and is compared with a float64 reference computed on the CPU, from core ops or a
// plain loop written here (independent of the primitives' own unfused forms): every dtype,
// non-contiguous inputs, empty arrays, every mask kind of attention, grouped- and
// multi-query heads, L_q != L_k, sinks, offsets as arrays. Gradients are checked against
// central finite differences in float64, gradients of gradients and jvps against the
// unfused composition, vmap against a loop. Argument checks raise tagged
// std::invalid_argument. Without a GPU, the GPU-only cases skip; the kernels' NVRTC
// compilation for sm_80 and sm_90 is checked without one.
#include "fast_test.h"

using namespace fast_test;

// ================================================================ rms_norm, layer_norm

TEST(FastRmsNorm, MatchesFloat64Reference) {
  for (Dtype t : {float32, float16, bfloat16, float64}) {
    // {140, 17000}: bfloat16 and float16 rows through the GPU's staged kernel, more rows
    // than resident blocks.
    for (const Shape& shape :
         std::vector<Shape>{{2, 31}, {3, 4, 32}, {5, 1000}, {4099}, {7, 1}, {140, 17000}}) {
      array x = test::random_array(shape, t, -2, 2);
      array w = test::random_array({shape.back()}, t, 0.5, 1.5);
      for (bool with_w : {true, false}) {
        SCOPED_TRACE(msg(t, " ", shape_str(shape), with_w ? " weight" : ""));
        std::optional<array> wo = with_w ? std::optional(w) : std::nullopt;
        array y = fast::rms_norm(x, wo, 1e-5f);
        EXPECT_EQ(y.dtype(), t);
        test::expect_allclose(y, shape, test::to_double(ref_rms_norm(x, wo, 1e-5)), tol(t));
      }
    }
  }
}

TEST(FastRmsNorm, PromotesStridesAndEmpty) {
  // float16 x with a float32 weight computes and returns float32.
  array x = test::random_array({6, 64}, float16, -1, 1);
  array w = test::random_array({64}, float32, 0, 1);
  array y = fast::rms_norm(x, w, 1e-6f);
  EXPECT_EQ(y.dtype(), float32);
  test::expect_allclose(y, {6, 64}, test::to_double(ref_rms_norm(x, w, 1e-6)), 2e-5);
  // Transposed and strided inputs, and a strided weight.
  array base = test::random_array({64, 48}, float32, -3, 3);
  array xt = transpose(base);
  array ws = slice(test::random_array({128}, float32, 0, 2), {0}, {128}, {2});
  test::expect_allclose(fast::rms_norm(xt, ws, 1e-5f), {48, 64},
                        test::to_double(ref_rms_norm(xt, ws, 1e-5)), 2e-5);
  array xs = slice(base, {0, 0}, {64, 48}, {3, 2});
  test::expect_allclose(fast::rms_norm(xs, std::nullopt, 1e-5f), xs.shape(),
                        test::to_double(ref_rms_norm(xs, std::nullopt, 1e-5)), 2e-5);
  // A broadcast input (zero strides).
  array xb = broadcast_to(test::random_array({1, 40}, float32), {5, 40});
  test::expect_allclose(fast::rms_norm(xb, std::nullopt, 1e-5f), {5, 40},
                        test::to_double(ref_rms_norm(xb, std::nullopt, 1e-5)), 2e-5);
  EXPECT_EQ(fast::rms_norm(zeros({0, 8}), ones({8}), 1e-5f).shape(), (Shape{0, 8}));
  eval(fast::rms_norm(zeros({0, 8}), ones({8}), 1e-5f));
  // Zero rows: normalized by sqrt(eps), so zero.
  test::expect_allclose(fast::rms_norm(zeros({2, 8}), std::nullopt, 1e-5f), {2, 8},
                        std::vector<double>(16, 0.0));
}

TEST(FastLayerNorm, MatchesFloat64Reference) {
  for (Dtype t : {float32, float16, bfloat16, float64}) {
    for (const Shape& shape : std::vector<Shape>{{2, 31}, {3, 2, 33}, {5, 1000}, {4099}}) {
      // A large mean checks the variance is not computed as E[x^2] - E[x]^2.
      array x = add(test::random_array(shape, t, -2, 2), array(t == float64 ? 1000.0 : 8.0, t));
      array w = test::random_array({shape.back()}, t, 0.5, 1.5);
      array b = test::random_array({shape.back()}, t, -1, 1);
      for (int which = 0; which < 4; ++which) {
        SCOPED_TRACE(msg(t, " ", shape_str(shape), " params ", which));
        std::optional<array> wo = which & 1 ? std::optional(w) : std::nullopt;
        std::optional<array> bo = which & 2 ? std::optional(b) : std::nullopt;
        array y = fast::layer_norm(x, wo, bo, 1e-5f);
        EXPECT_EQ(y.dtype(), t);
        test::expect_allclose(y, shape, test::to_double(ref_layer_norm(x, wo, bo, 1e-5)),
                              t == float32 ? 1e-4 : tol(t));
      }
    }
  }
  // A sliced input (MLX's test_slice_into_layer_norm) and a transposed one.
  array x = slice(test::random_array({8, 100, 128}, float32, 0, 1), {0, 99, 0}, {8, 100, 128});
  test::expect_allclose(fast::layer_norm(x, std::nullopt, std::nullopt, 1e-5f), x.shape(),
                        test::to_double(ref_layer_norm(x, std::nullopt, std::nullopt, 1e-5)), 1e-4);
  array xt = transpose(test::random_array({64, 10}, float32));
  test::expect_allclose(fast::layer_norm(xt, ones({64}), zeros({64}), 1e-5f), {10, 64},
                        test::to_double(ref_layer_norm(xt, std::nullopt, std::nullopt, 1e-5)),
                        1e-4);
  EXPECT_EQ(fast::layer_norm(zeros({0, 3}), std::nullopt, ones({3}), 1e-5f).shape(), (Shape{0, 3}));
}

TEST(FastNorms, ArgumentChecks) {
  array x = ones({4, 8});
  expect_invalid([] { fast::rms_norm(array(1.0f), std::nullopt, 1e-5f); }, "[rms_norm]");
  expect_invalid([&] { fast::rms_norm(x, ones({4}), 1e-5f); }, "[rms_norm]");
  expect_invalid([&] { fast::rms_norm(x, ones({1, 8}), 1e-5f); }, "[rms_norm]");
  expect_invalid([&] { fast::rms_norm(ones({4, 8}, int32), std::nullopt, 1e-5f); }, "[rms_norm]");
  expect_invalid([] { fast::layer_norm(array(1.0f), std::nullopt, std::nullopt, 1e-5f); },
                 "[layer_norm]");
  expect_invalid([&] { fast::layer_norm(x, ones({9}), std::nullopt, 1e-5f); }, "[layer_norm]");
  expect_invalid([&] { fast::layer_norm(x, std::nullopt, ones({9}), 1e-5f); }, "[layer_norm]");
  expect_invalid(
      [&] {
        fast::layer_norm(ones({4, 8}, int32), ones({8}, int32), std::nullopt, 1e-5f);
      },
      "[layer_norm]");
}

TEST(FastNorms, GradientsMatchFiniteDifferences) {
  array x = test::random_array({3, 7}, float64, -2, 2);
  array w = test::random_array({7}, float64, 0.5, 1.5);
  array b = test::random_array({7}, float64, -1, 1);
  check_grad([](const auto& a) { return fast::rms_norm(a[0], a[1], 1e-5f); }, {x, w}, {0, 1});
  check_grad([](const auto& a) { return fast::rms_norm(a[0], std::nullopt, 1e-5f); }, {x}, {0});
  check_grad([](const auto& a) { return fast::layer_norm(a[0], a[1], a[2], 1e-5f); }, {x, w, b},
             {0, 1, 2});
  check_grad([](const auto& a) { return fast::layer_norm(a[0], std::nullopt, a[1], 1e-5f); },
             {x, b}, {0, 1});
  check_grad([](const auto& a) { return fast::layer_norm(a[0], a[1], std::nullopt, 1e-5f); },
             {x, w}, {0, 1});
  check_grad(
      [](const auto& a) { return fast::layer_norm(a[0], std::nullopt, std::nullopt, 1e-5f); }, {x},
      {0});
}

TEST(FastNorms, FusedGradientsMatchCompositionInFloat32) {
  // Large rows and several dtypes through the fused vjp kernels, against float64 vjps of the
  // reference.
  for (Dtype t : {float32, bfloat16, float16}) {
    for (int D : {32, 1000, 8192}) {
      SCOPED_TRACE(msg(t, " D=", D));
      array x = test::random_array({6, D}, t, -2, 2);
      array w = test::random_array({D}, t, 0.5, 1.5);
      array b = test::random_array({D}, t, -1, 1);
      array g = test::random_array({6, D}, t, -1, 1);
      auto [o1, v1] = vjp(
          [](const std::vector<array>& a) {
            return std::vector<array>{fast::rms_norm(a[0], a[1], 1e-5f)};
          },
          {x, w}, {g});
      auto [o2, v2] = vjp(
          [](const std::vector<array>& a) {
            return std::vector<array>{ref_rms_norm(a[0], a[1], 1e-5)};
          },
          {f64(x), f64(w)}, {f64(g)});
      // The weight gradient sums 6 rows: its error grows with them.
      test::expect_allclose(v1[0], x.shape(), test::to_double(v2[0]), 4 * tol(t));
      test::expect_allclose(v1[1], w.shape(), test::to_double(v2[1]), 8 * tol(t));
      auto [o3, v3] = vjp(
          [](const std::vector<array>& a) {
            return std::vector<array>{fast::layer_norm(a[0], a[1], a[2], 1e-5f)};
          },
          {x, w, b}, {g});
      auto [o4, v4] = vjp(
          [](const std::vector<array>& a) {
            return std::vector<array>{ref_layer_norm(a[0], a[1], a[2], 1e-5)};
          },
          {f64(x), f64(w), f64(b)}, {f64(g)});
      test::expect_allclose(v3[0], x.shape(), test::to_double(v4[0]), 4 * tol(t));
      test::expect_allclose(v3[1], w.shape(), test::to_double(v4[1]), 8 * tol(t));
      test::expect_allclose(v3[2], b.shape(), test::to_double(v4[2]), 8 * tol(t));
    }
  }
  // Many rows: the parameter gradients' partial sums over chunks of rows.
  array x = test::random_array({3000, 64}, float32, -2, 2);
  array w = test::random_array({64}, float32, 0.5, 1.5);
  array g = test::random_array({3000, 64}, float32, -1, 1);
  auto [o, v] = vjp(
      [](const std::vector<array>& a) {
        return std::vector<array>{fast::layer_norm(a[0], a[1], std::nullopt, 1e-5f)};
      },
      {x, w}, {g});
  auto [o2, v2] = vjp(
      [](const std::vector<array>& a) {
        return std::vector<array>{ref_layer_norm(a[0], a[1], std::nullopt, 1e-5)};
      },
      {f64(x), f64(w)}, {f64(g)});
  test::expect_allclose(v[1], {64}, test::to_double(v2[1]), 1e-4);
  // bfloat16 rows of 512 in more groups than a GPU runs at once: each group loads its next
  // row while it reduces the current one.
  array xb = test::random_array({3000, 512}, bfloat16, -2, 2);
  array wb = test::random_array({512}, bfloat16, 0.5, 1.5);
  array gb = test::random_array({3000, 512}, bfloat16, -1, 1);
  auto [ob, vb] = vjp(
      [](const std::vector<array>& a) {
        return std::vector<array>{fast::rms_norm(a[0], a[1], 1e-5f)};
      },
      {xb, wb}, {gb});
  auto [ob2, vb2] = vjp(
      [](const std::vector<array>& a) {
        return std::vector<array>{ref_rms_norm(a[0], a[1], 1e-5)};
      },
      {f64(xb), f64(wb)}, {f64(gb)});
  test::expect_allclose(vb[0], xb.shape(), test::to_double(vb2[0]), 4 * tol(bfloat16));
  test::expect_allclose(vb[1], wb.shape(), test::to_double(vb2[1]), 8 * tol(bfloat16));
}

TEST(FastNorms, SecondOrderJvpAndVmap) {
  array x = test::random_array({4, 9}, float64);
  array w = test::random_array({9}, float64, 0.5, 1.5);
  array b = test::random_array({9}, float64);
  array y = test::random_array({4, 9}, float64);
  // Gradients of gradients go through the vjp's unfused form.
  auto gf = [&](bool fused) {
    return [fused, y](const std::vector<array>& a) {
      ScalarFn inner = [fused, y](const std::vector<array>& p) {
        array o = fused ? fast::layer_norm(p[0], p[1], p[2], 1e-5f)
                        : ref_layer_norm(p[0], p[1], p[2], 1e-5);
        return sum(multiply(o, y));
      };
      auto g = grad(inner, {0, 1, 2})(a);
      return sum(multiply(add(g[0], g[1]), y));
    };
  };
  auto g1 = grad(ScalarFn(gf(true)), {0, 1})({x, w, b});
  auto g2 = grad(ScalarFn(gf(false)), {0, 1})({x, w, b});
  test::expect_allclose(g1[0], x.shape(), test::to_double(g2[0]), 1e-8);
  test::expect_allclose(g1[1], w.shape(), test::to_double(g2[1]), 1e-8);
  auto rg = [y](bool fused) {
    return [fused, y](const std::vector<array>& a) {
      ScalarFn inner = [fused, y](const std::vector<array>& p) {
        array o = fused ? fast::rms_norm(p[0], p[1], 1e-5f) : ref_rms_norm(p[0], p[1], 1e-5);
        return sum(multiply(o, y));
      };
      auto g = grad(inner, {0, 1})(a);
      return add(sum(g[0]), sum(g[1]));
    };
  };
  auto r1 = grad(ScalarFn(rg(true)), {0, 1})({x, w});
  auto r2 = grad(ScalarFn(rg(false)), {0, 1})({x, w});
  test::expect_allclose(r1[0], x.shape(), test::to_double(r2[0]), 1e-8);
  test::expect_allclose(r1[1], w.shape(), test::to_double(r2[1]), 1e-8);
  // jvp.
  array tx = test::random_array({4, 9}, float64);
  auto [p1, t1] = jvp([&](const array& a) { return fast::rms_norm(a, w, 1e-5f); }, x, tx);
  auto [p2, t2] = jvp([&](const array& a) { return ref_rms_norm(a, w, 1e-5); }, x, tx);
  test::expect_allclose(t1, x.shape(), test::to_double(t2), 1e-9);
  // vmap over a middle axis, and with mapped weights.
  array xs = test::random_array({4, 3, 9}, float64);
  auto vm = vmap([&](const array& a) { return fast::layer_norm(a, w, b, 1e-5f); }, 1, 0)(xs);
  test::expect_allclose(vm, {3, 4, 9},
                        test::to_double(ref_layer_norm(swapaxes(xs, 0, 1), w, b, 1e-5)), 1e-10);
  array ws = test::random_array({4, 9}, float64, 0.5, 1.5);
  auto vw = vmap([](const array& a, const array& ww) { return fast::rms_norm(a, ww, 1e-5f); })(
      reshape(x, {4, 1, 9}), ws);
  test::expect_allclose(vw, {4, 1, 9},
                        test::to_double(ref_rms_norm(reshape(x, {4, 1, 9}), std::nullopt, 1e-5) *
                                        reshape(ws, {4, 1, 9})),
                        1e-10);
}

// ================================================================ rope

TEST(FastRope, MatchesLoopReference) {
  for (Dtype t : {float32, float16, bfloat16, float64}) {
    for (bool traditional : {false, true}) {
      for (int dims : {8, 6}) {
        for (const Shape& shape : std::vector<Shape>{{2, 5, 8}, {2, 3, 7, 8}, {2, 2, 3, 4, 8}}) {
          SCOPED_TRACE(
              msg(t, traditional ? " traditional" : "", " dims ", dims, " ", shape_str(shape)));
          array x = test::random_array(shape, t, -1, 1);
          array y = fast::rope(x, dims, traditional, 10000.0f, 1.5f, 3);
          EXPECT_EQ(y.dtype(), t);
          test::expect_allclose(y, shape, ref_rope(x, dims, traditional, 10000.0, 1.5, {3}),
                                t == float32 ? 1e-5 : tol(t));
        }
      }
    }
  }
}

TEST(FastRope, OffsetsFreqsAndLayouts) {
  // One offset per batch element, as an array; a scalar array; int64 offsets.
  array x = test::random_array({3, 4, 6, 32}, float32, -1, 1);
  array offs = array({5, 0, 17}, int32);
  test::expect_allclose(fast::rope(x, 32, false, 10000.0f, 1.0f, offs), x.shape(),
                        ref_rope(x, 32, false, 10000.0, 1.0, {5, 0, 17}), 1e-5);
  test::expect_allclose(fast::rope(x, 16, true, 500.0f, 1.0f, astype(offs, int64)), x.shape(),
                        ref_rope(x, 16, true, 500.0, 1.0, {5, 0, 17}), 1e-5);
  test::expect_allclose(fast::rope(x, 32, false, 10000.0f, 0.5f, array(7, int32)), x.shape(),
                        ref_rope(x, 32, false, 10000.0, 0.5, {7}), 1e-5);
  // 3-d input with per-batch offsets.
  array x3 = test::random_array({2, 9, 16}, float32, -1, 1);
  test::expect_allclose(fast::rope(x3, 16, false, 10000.0f, 1.0f, array({2, 4}, int32)), x3.shape(),
                        ref_rope(x3, 16, false, 10000.0, 1.0, {2, 4}), 1e-5);
  // Explicit frequencies.
  array freqs = test::random_array({16}, float32, 0.5, 4);
  auto fv = test::to_double(freqs);
  for (bool tr : {false, true}) {
    test::expect_allclose(fast::rope(x, 32, tr, std::nullopt, 1.0f, 2, freqs), x.shape(),
                          ref_rope(x, 32, tr, 0, 1.0, {2}, fv), 1e-5);
  }
  // A transposed (B, T, H, D) input, as from a projection split into heads.
  array xt = swapaxes(test::random_array({2, 10, 4, 64}, float32, -1, 1), 1, 2);
  test::expect_allclose(fast::rope(xt, 64, false, 10000.0f, 1.0f, 0), xt.shape(),
                        ref_rope(xt, 64, false, 10000.0, 1.0, {0}), 1e-5);
  // A large offset in float32: angles up to ~5000 rad carry float32 rounding.
  array xl = test::random_array({1, 1, 64, 32}, float32, -1, 1);
  test::expect_allclose(fast::rope(xl, 32, false, 10000.0f, 1.0f, 4000), xl.shape(),
                        ref_rope(xl, 32, false, 10000.0, 1.0, {4000}), 2e-3);
  EXPECT_EQ(fast::rope(zeros({2, 0, 8}), 8, false, 10000.0f, 1.0f, 0).shape(), (Shape{2, 0, 8}));
  eval(fast::rope(zeros({2, 0, 8}), 8, false, 10000.0f, 1.0f, 0));
}

// Many heads (the GPU applies one set of angles to a chunk of heads, the last chunk partial),
// 16-byte vectors with features past dims, per-batch offsets, middle axes that do not
// collapse into one stride, and a transposed (B, T, H, D) view, in 16 and 32 bits.
TEST(FastRope, HeadChunksAndViews) {
  for (Dtype t : {bfloat16, float16, float32}) {
    for (bool tr : {false, true}) {
      SCOPED_TRACE(msg(t, tr ? " traditional" : ""));
      const double tl = t == float32 ? 1e-5 : tol(t);
      array x = test::random_array({2, 37, 5, 64}, t, -1, 1);
      array offs = array({3, 11}, int32);
      test::expect_allclose(fast::rope(x, 64, tr, 10000.0f, 1.0f, offs), x.shape(),
                            ref_rope(x, 64, tr, 10000.0, 1.0, {3, 11}), tl);
      test::expect_allclose(fast::rope(x, 32, tr, 500.0f, 0.5f, 9), x.shape(),
                            ref_rope(x, 32, tr, 500.0, 0.5, {9}), tl);
      // (B, H1, H2, L, D) with H1 and H2 swapped: two middle strides.
      array x5 = swapaxes(test::random_array({2, 3, 6, 7, 32}, t, -1, 1), 1, 2);
      test::expect_allclose(fast::rope(x5, 32, tr, 10000.0f, 1.0f, 1), x5.shape(),
                            ref_rope(x5, 32, tr, 10000.0, 1.0, {1}), tl);
      array xt = swapaxes(test::random_array({3, 9, 12, 128}, t, -1, 1), 1, 2);
      array yt = fast::rope(xt, 128, tr, 10000.0f, 1.0f, array({0, 5, 2}, int32));
      test::expect_allclose(yt, xt.shape(), ref_rope(xt, 128, tr, 10000.0, 1.0, {0, 5, 2}), tl);
      if (on_gpu()) {
        // The GPU writes a dense view's rotation in the view's layout: the transpose back to
        // (B, T, H, D) is row-contiguous, with no copy.
        EXPECT_EQ(yt.strides(), xt.strides());
        array x5r = fast::rope(x5, 32, tr, 10000.0f, 1.0f, 1);
        eval(x5r);
        EXPECT_EQ(x5r.strides(), x5.strides());
        auto rot = [&](const array& a) { return fast::rope(a, 128, tr, 10000.0f, 1.0f, 2); };
        array bt = vjp(rot, xt, rot(xt)).second;  // the vjp's rotation undoes the forward
        eval(bt);
        EXPECT_EQ(bt.strides(), xt.strides());
        test::expect_allclose(bt, xt.shape(), test::to_double(xt), 4 * tl);
      }
      // The vjp's rotation (opposite angles) undoes the forward.
      array back = vjp([&](const array& a) { return fast::rope(a, 64, tr, 10000.0f, 1.0f, 4); }, x,
                       fast::rope(x, 64, tr, 10000.0f, 1.0f, 4))
                       .second;
      test::expect_allclose(back, x.shape(), test::to_double(x), 4 * tl);
    }
  }
}

TEST(FastRope, ArgumentChecks) {
  array x = ones({2, 4, 8});
  auto r = [&](const array& a, int dims, std::optional<float> base, const array& off,
               std::optional<array> freqs = std::nullopt) {
    return fast::rope(a, dims, false, base, 1.0f, off, freqs);
  };
  const array zero(0, int32);
  expect_invalid([&] { r(ones({4, 8}), 8, 1e4f, zero); }, "[rope]");
  expect_invalid([&] { r(ones({2, 4, 8}, int32), 8, 1e4f, zero); }, "[rope]");
  expect_invalid([&] { r(x, 0, 1e4f, zero); }, "[rope]");
  expect_invalid([&] { r(x, -2, 1e4f, zero); }, "[rope]");
  expect_invalid([&] { r(x, 7, 1e4f, zero); }, "[rope]");
  expect_invalid([&] { r(x, 16, 1e4f, zero); }, "[rope]");
  expect_invalid([&] { r(x, 8, std::nullopt, zero); }, "[rope]");
  expect_invalid([&] { r(x, 8, 1e4f, zero, ones({4})); }, "[rope]");
  expect_invalid([&] { r(x, 8, std::nullopt, zero, ones({3})); }, "[rope]");
  expect_invalid([&] { r(x, 8, std::nullopt, zero, ones({1, 4})); }, "[rope]");
  expect_invalid([&] { r(x, 8, 1e4f, array({1.5f, 2.0f})); }, "[rope]");
  expect_invalid([&] { r(x, 8, 1e4f, array({1, 2, 3}, int32)); }, "[rope]");
  expect_invalid([&] { r(x, 8, 1e4f, array({1, 2}, {1, 2}, int32)); }, "[rope]");
}

TEST(FastRope, GradientsJvpAndVmap) {
  array x = test::random_array({2, 3, 5, 8}, float64);
  check_grad([](const auto& a) { return fast::rope(a[0], 8, false, 10000.0f, 1.0f, 2); }, {x}, {0});
  check_grad([](const auto& a) { return fast::rope(a[0], 6, true, 100.0f, 0.5f, 1); }, {x}, {0});
  check_grad(
      [](const auto& a) {
        return fast::rope(a[0], 8, false, 10000.0f, 1.0f, array({3, 9}, int32));
      },
      {x}, {0});
  // The vjp with respect to the offset is not defined.
  try {
    grad(
        [&](const std::vector<array>& a) {
          return sum(fast::rope(x, 8, false, std::nullopt, 1.0f, a[0], a[1]));
        },
        1)({array(1, int32), add(ones({4}, float64), array(1.0))});
    ADD_FAILURE() << "the vjp with respect to freqs should throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("vjp"), std::string::npos) << e.what();
  }
  array tx = test::random_array(x.shape(), float64);
  auto [p, tan] = jvp([](const array& a) { return fast::rope(a, 8, true, 1e4f, 1.0f, 1); }, x, tx);
  test::expect_allclose(tan, x.shape(), ref_rope(tx, 8, true, 1e4, 1.0, {1}), 1e-10);
  // vmap: a batch of (B, T, D) inputs.
  array xs = test::random_array({3, 2, 5, 8}, float64);
  auto vm = vmap([](const array& a) { return fast::rope(a, 8, false, 1e4f, 1.0f, 4); })(xs);
  for (int i = 0; i < 3; ++i) {
    array xi = slice(xs, {i, 0, 0, 0}, {i + 1, 2, 5, 8});
    test::expect_allclose(slice(vm, {i, 0, 0, 0}, {i + 1, 2, 5, 8}), xi.shape(),
                          ref_rope(reshape(xi, {2, 5, 8}), 8, false, 1e4, 1.0, {4}), 1e-10);
  }
}

// ================================================================ attention

namespace {

std::vector<double> ref_cross_entropy(const array& logits, const array& targets) {
  auto x = test::to_double(logits);
  auto t = test::to_double(targets);
  const int64_t C = logits.shape(-1);
  std::vector<double> out(t.size());
  for (size_t r = 0; r < t.size(); ++r) {
    double m = -INFINITY;
    for (int64_t j = 0; j < C; ++j) m = std::max(m, x[r * C + j]);
    double s = 0;
    for (int64_t j = 0; j < C; ++j) s += std::exp(x[r * C + j] - m);
    int64_t k = static_cast<int64_t>(t[r]);
    if (k < 0) k += C;
    out[r] = k < 0 || k >= C ? NAN : m + std::log(s) - x[r * C + k];
  }
  return out;
}

array random_targets(const Shape& shape, int C) {
  return astype(test::random_array(shape, float32, 0, static_cast<float>(C) - 0.01), int32);
}

}  // namespace

TEST(FastCrossEntropy, MatchesFloat64Reference) {
  for (Dtype t : {float32, float16, bfloat16, float64}) {
    for (auto [shape, C] : std::vector<std::pair<Shape, int>>{
             {{3}, 5}, {{4, 3}, 1000}, {{2}, 40000}, {{}, 7}, {{65}, 129}}) {
      SCOPED_TRACE(msg(t, " rows ", shape_str(shape), " C ", C));
      Shape ls = shape;
      ls.push_back(C);
      array x = test::random_array(ls, t, -8, 8);
      array tg = random_targets(shape, C);
      array l = fast::cross_entropy(x, tg);
      EXPECT_EQ(l.dtype(), t == float64 ? float64 : float32);
      test::expect_allclose(l, shape, ref_cross_entropy(x, tg), t == float64 ? 1e-12 : 2e-5);
    }
  }
  // Other integer target dtypes, negative targets, out of range targets, transposed logits.
  array x = test::random_array({6, 10}, float32, -3, 3);
  array tg = array({0, 9, -1, -10, 10, 3}, int64);
  auto r = ref_cross_entropy(x, tg);
  test::expect_allclose(fast::cross_entropy(x, tg), {6}, r);
  EXPECT_TRUE(std::isnan(r[4]));
  test::expect_allclose(fast::cross_entropy(x, astype(abs(tg), uint8)), {6},
                        ref_cross_entropy(x, astype(abs(tg), uint8)));
  array xt = transpose(test::random_array({10, 6}, float32));
  array t6 = random_targets({6}, 10);
  test::expect_allclose(fast::cross_entropy(xt, t6), {6}, ref_cross_entropy(xt, t6));
  EXPECT_EQ(fast::cross_entropy(zeros({0, 5}), zeros({0}, int32)).shape(), (Shape{0}));
  eval(fast::cross_entropy(zeros({0, 5}), zeros({0}, int32)));
}

TEST(FastCrossEntropy, ArgumentChecks) {
  array x = ones({3, 5});
  expect_invalid([] { fast::cross_entropy(array(1.0f), array(0, int32)); }, "[cross_entropy]");
  expect_invalid([&] { fast::cross_entropy(x, array({0, 1}, int32)); }, "[cross_entropy]");
  expect_invalid([&] { fast::cross_entropy(x, zeros({1, 3}, int32)); }, "[cross_entropy]");
  expect_invalid([&] { fast::cross_entropy(x, zeros({3}, float32)); }, "[cross_entropy]");
  expect_invalid([&] { fast::cross_entropy(x, zeros({3}, bool_)); }, "[cross_entropy]");
  expect_invalid(
      [&] {
        fast::cross_entropy(ones({3, 5}, int32), zeros({3}, int32));
      },
      "[cross_entropy]");
  expect_invalid([&] { fast::cross_entropy(ones({3, 0}), zeros({3}, int32)); }, "[cross_entropy]");
}

TEST(FastCrossEntropy, GradientsJvpAndVmap) {
  array x = test::random_array({4, 6}, float64, -3, 3);
  array tg = random_targets({4}, 6);
  check_grad([tg](const auto& a) { return fast::cross_entropy(a[0], tg); }, {x}, {0});
  // The fused gradient in float32 and bfloat16 on long rows: softmax - one_hot, scaled.
  for (Dtype t : {float32, bfloat16}) {
    array xl = test::random_array({5, 3000}, t, -5, 5);
    array tl = random_targets({5}, 3000);
    array g = test::random_array({5}, float32, -1, 1);
    auto [o, v] = vjp(
        [&](const std::vector<array>& a) {
          return std::vector<array>{fast::cross_entropy(a[0], tl)};
        },
        {xl}, {g});
    EXPECT_EQ(v[0].dtype(), t);
    array x64 = f64(xl);
    array sm = softmax(x64, -1, kCpu);
    auto want = test::to_double(sm);
    auto gv = test::to_double(g);
    auto tv = test::to_double(tl);
    for (int r = 0; r < 5; ++r) {
      for (int j = 0; j < 3000; ++j) want[r * 3000 + j] *= gv[r];
      want[r * 3000 + static_cast<int>(tv[r])] -= gv[r];
    }
    test::expect_allclose(v[0], xl.shape(), want, t == float32 ? 1e-5 : 2e-2);
  }
  // Second order through the unfused form.
  auto outer = [tg]() {
    return UnaryFn([tg](const array& a) {
      auto inner = [tg](const array& p) { return sum(fast::cross_entropy(p, tg)); };
      return sum(square(grad(UnaryFn(inner))(a)));
    });
  };
  auto h = grad(outer())(x);
  // d/dx sum((softmax - onehot)^2), by hand: 2 J^T (s - e) with J = diag(s) - s s^T.
  auto s = test::to_double(softmax(x, -1, kCpu));
  auto tv = test::to_double(tg);
  std::vector<double> want(24);
  for (int r = 0; r < 4; ++r) {
    std::vector<double> d(6);
    for (int j = 0; j < 6; ++j) d[j] = s[r * 6 + j] - (j == tv[r] ? 1.0 : 0.0);
    double sd = 0;
    for (int j = 0; j < 6; ++j) sd += s[r * 6 + j] * d[j];
    for (int j = 0; j < 6; ++j) want[r * 6 + j] = 2 * s[r * 6 + j] * (d[j] - sd);
  }
  test::expect_allclose(h, x.shape(), want, 1e-9);
  // jvp: d loss = (softmax - one_hot) . dx.
  array tx = test::random_array(x.shape(), float64);
  auto [pv, tan] = jvp([tg](const array& a) { return fast::cross_entropy(a, tg); }, x, tx);
  auto txv = test::to_double(tx);
  std::vector<double> jw(4, 0.0);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 6; ++j) jw[r] += (s[r * 6 + j] - (j == tv[r] ? 1.0 : 0.0)) * txv[r * 6 + j];
  test::expect_allclose(tan, {4}, jw, 1e-10);
  // vmap with targets mapped and not.
  array xs = test::random_array({3, 4, 6}, float32);
  array ts = random_targets({3, 4}, 6);
  auto vm = vmap([](const array& a, const array& b) { return fast::cross_entropy(a, b); })(xs, ts);
  test::expect_allclose(vm, {3, 4}, ref_cross_entropy(xs, ts));
  auto vm2 =
      vmap([&](const array& a) { return fast::cross_entropy(a, tg); }, 1, 0)(swapaxes(xs, 0, 1));
  test::expect_allclose(vm2, {3, 4}, ref_cross_entropy(xs, broadcast_to(tg, {3, 4})));
}

// ================================================================ GPU kernels compile

#ifdef KILN_WITH_CUDA
// Every kernel the fused built-ins (and the softmax) can request, compiled by NVRTC for an
// A100 (sm_80), several modules at once; JitCatalog compiles them for sm_90. Needs no GPU.
class FastKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(FastKernels, CompileForSm80) {
  std::vector<std::pair<std::string, gpu::ModuleSource>> modules;
  gpu::for_each_catalog_module(GetParam(),
                               [&](const std::string& name, const gpu::ModuleSource& m) {
                                 if (GetParam() != "reduce" || name == "reduce_softmax")
                                   modules.emplace_back(name, m);
                               });
  ASSERT_FALSE(modules.empty());
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::vector<std::string> failures;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < modules.size();) {
      gpu::ModuleSource named = modules[i].second;
      named.name = modules[i].first;
      std::string failure;
      try {
        gpu::CompiledModule c = gpu::compile(named, "sm_80");
        if (!c.log.empty()) failure = named.name + ": " + c.log;
        if (c.kernels.size() != named.kernels.size()) failure = named.name + ": kernels missing";
      } catch (const std::exception& e) {
        failure = named.name + ": " + e.what();
      }
      if (!failure.empty()) {
        std::lock_guard lk(mu);
        failures.push_back(failure);
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i)
    threads.emplace_back(work);
  for (auto& t : threads) t.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
}

INSTANTIATE_TEST_SUITE_P(Families, FastKernels,
                         ::testing::Values("fast_norm", "fast_rope", "fast_attention", "fast_loss",
                                           "reduce"),
                         [](const auto& info) { return info.param; });
#endif
