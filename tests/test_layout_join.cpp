// Layout ops that assemble arrays: slice_update, split, concatenate, stack, tile, repeat,
// pad, as_strided, and the transformations of the layout family; checked as in
// test_layout.cpp, against host references on every dtype and non-contiguous inputs.
#include "layout_test.h"

using namespace layout_test;

// ---------------------------------------------------------------- slice_update

TEST(Layout, SliceUpdateEveryDtypeAndLayout) {
  std::uniform_int_distribution<int> bound(-6, 6), step(-2, 2);
  for (Dtype d : all_dtypes) {
    for (auto& src : layouts({5, 4}, d)) {
      for (int trial = 0; trial < 3; ++trial) {
        Shape start, stop, steps;
        for (int k = 0; k < 2; ++k) {
          start.push_back(bound(test::rng()));
          stop.push_back(bound(test::rng()));
          int s = 0;
          while (s == 0) s = step(test::rng());
          steps.push_back(s);
        }
        Ref window = ref_slice(src.ref, start, stop, steps);
        for (auto& upd : layouts(window.shape, d)) {
          array y = slice_update(src.a, upd.a, start, stop, steps);
          // Expected: src with the window's positions overwritten, found by index walk.
          Ref expected = src.ref;
          std::vector<std::vector<int64_t>> taken;
          for (int k = 0; k < 2; ++k) {
            taken.push_back(python_indices(src.ref.shape[k], start[k], stop[k], steps[k]));
          }
          for (size_t i = 0; i < upd.ref.v.size(); ++i) {
            auto idx = unravel(i, window.shape);
            expected.v[taken[0][idx[0]] * 4 + taken[1][idx[1]]] = upd.ref.v[i];
          }
          expect_values(y, expected,
                        msg(d, " ", src.name, " <- ", upd.name, " ", shape_str(start),
                            shape_str(stop), shape_str(steps)));
          expect_values(src.a, src.ref, "src unchanged");
        }
      }
    }
  }
}

TEST(Layout, SliceUpdateBroadcastsAndConvertsTheUpdate) {
  array src = test::random_array({3, 4}, int32, -50, 50);
  Ref r = ref_of(src);
  // A row broadcast over every other row, converted from float (truncated).
  array y = slice_update(src, array({1.9f, -2.9f}), {0, 1}, {3, 4}, {2, 2});
  for (int i : {0, 2}) {
    r.v[i * 4 + 1] = 1;
    r.v[i * 4 + 3] = -2;
  }
  expect_values(y, r);
  EXPECT_EQ(y.dtype(), int32);
  array z = slice_update(src, array(7), {1, 0}, {2, 4});
  Ref rz = ref_of(src);
  for (int j = 0; j < 4; ++j) rz.v[4 + j] = 7;
  expect_values(z, rz);
  // An empty window leaves src's values.
  expect_values(slice_update(src, zeros({0, 4}, int32), {2, 0}, {1, 4}), ref_of(src));
  expect_values(slice_update(zeros({0, 2}), array(1.0f), {0, 0}, {0, 2}), {{0, 2}, {}});
}

TEST(Layout, SliceUpdateWritesIntoADonatedSource) {
  array x = test::random_array({64, 64}, float32);
  array src = copy(x);
  src.eval();
  const float* p = src.data<float>();
  array y = slice_update(src, array(1.0f), {0, 0}, {1, 64});
  src = array(0.0f);  // drop the only other reference: the buffer may be reused
  y.eval();
  EXPECT_EQ(y.data<float>(), p);
  Ref r = ref_of(x);
  for (int j = 0; j < 64; ++j) r.v[j] = 1;
  expect_values(y, r);
}

TEST(Layout, SliceUpdateErrors) {
  array x = test::random_array({3, 4}, float32);
  expect_invalid([&] { slice_update(x, zeros({2}), {0, 0}, {3, 4}); }, "[slice_update]");
  expect_invalid([&] { slice_update(x, zeros({1, 3, 4}), {0, 0}, {3, 4}); }, "[slice_update]");
  expect_invalid([&] { slice_update(x, zeros({4}), {0}, {3}); }, "[slice_update]");
  expect_invalid([&] { slice_update(x, zeros({4}), {0, 0}, {3, 4}, {0, 1}); }, "[slice_update]");
}

// ---------------------------------------------------------------- split

TEST(Layout, SplitEqualPartsAreViews) {
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({4, 6}, d)) {
      auto parts = split(in.a, 3, -1);
      ASSERT_EQ(parts.size(), 3u);
      for (int k = 0; k < 3; ++k) {
        expect_values(parts[k], ref_slice(in.ref, {0, 2 * k}, {4, 2 * k + 2}, {1, 1}), in.name);
      }
      auto rows = split(in.a, 2);
      ASSERT_EQ(rows.size(), 2u);
      expect_values(rows[1], ref_slice(in.ref, {2, 0}, {4, 6}, {1, 1}), in.name);
    }
  }
  array base = test::random_array({6}, float32);
  for (auto& p : split(base, 3)) {
    p.eval();
    EXPECT_TRUE(shares_buffer(p, base));
  }
  auto empties = split(zeros({0, 3}), 2, 0);
  ASSERT_EQ(empties.size(), 2u);
  EXPECT_EQ(empties[1].shape(), (Shape{0, 3}));
}

TEST(Layout, SplitAtIndicesFollowsNumPy) {
  array x = arange(10);
  auto check = [&](const Shape& idx, std::vector<std::vector<double>> expected) {
    auto parts = split(x, idx);
    ASSERT_EQ(parts.size(), expected.size());
    for (size_t k = 0; k < parts.size(); ++k) {
      Ref r{{static_cast<int32_t>(expected[k].size())}, {}};
      for (double v : expected[k]) r.v.push_back(v);
      expect_values(parts[k], r, msg("split at ", shape_str(idx), " part ", k));
    }
  };
  check({3, -2, 20}, {{0, 1, 2}, {3, 4, 5, 6, 7}, {8, 9}, {}});
  check({6, 3}, {{0, 1, 2, 3, 4, 5}, {}, {3, 4, 5, 6, 7, 8, 9}});
  check({-20, 4}, {{}, {0, 1, 2, 3}, {4, 5, 6, 7, 8, 9}});
  check({}, {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}});
  array m = test::random_array({3, 5}, float32);
  auto parts = split(m, Shape{1, 4}, -1);
  ASSERT_EQ(parts.size(), 3u);
  expect_values(parts[1], ref_slice(ref_of(m), {0, 1}, {3, 4}, {1, 1}));
}

TEST(Layout, SplitErrors) {
  array x = test::random_array({4, 6}, float32);
  expect_invalid([&] { split(x, 4, 1); }, "[split]");
  expect_invalid([&] { split(x, 0); }, "[split]");
  expect_invalid([&] { split(x, -2); }, "[split]");
  expect_invalid([&] { split(x, 2, 2); }, "[split]");
  expect_invalid([&] { split(x, Shape{1}, -3); }, "[split]");
  expect_invalid([&] { split(array(1.0f), 1); }, "[split]");
}

// ---------------------------------------------------------------- concatenate, stack

TEST(Layout, ConcatenateEveryDtypeAndLayout) {
  for (Dtype d : all_dtypes) {
    auto a = layouts({3, 2}, d), b = layouts({3, 4}, d);
    for (size_t i = 0; i < a.size(); ++i) {
      auto& p = a[i];
      auto& q = b[b.size() - 1 - i];
      array y = concatenate({p.a, q.a, p.a}, -1);
      EXPECT_EQ(y.dtype(), d);
      expect_values(y, ref_concat({p.ref, q.ref, p.ref}, 1), msg(d, " ", p.name, "+", q.name));
      array yt = concatenate({transpose(p.a), transpose(q.a)}, 0);
      expect_values(yt, ref_concat({ref_transpose(p.ref, {1, 0}), ref_transpose(q.ref, {1, 0})}, 0),
                    msg(d, " ", p.name, "+", q.name, " axis 0"));
    }
  }
}

TEST(Layout, ConcatenatePromotesAndHandlesEmptyParts) {
  for (Dtype d1 : all_dtypes) {
    for (Dtype d2 : {bool_, uint8, int8, int64, float16, bfloat16, float32, complex64}) {
      array a = test::random_array({2, 2}, d1, 0, 50);
      array b = test::random_array({1, 2}, d2, 0, 50);
      array y = concatenate({a, b});
      Dtype t = promote_types(d1, d2);
      ASSERT_EQ(y.dtype(), t) << d1 << " " << d2;
      Ref expected = ref_concat({ref_of(astype(a, t)), ref_of(astype(b, t))}, 0);
      expected.shape = {6};
      expect_values(y, expected, msg(d1, "+", d2));
    }
  }
  array a = test::random_array({2, 3}, float32);
  array e = zeros({2, 0}, int32);
  expect_values(concatenate({e, a, e}, 1), ref_of(a));
  EXPECT_EQ(concatenate({e, a}, 1).dtype(), float32);
  expect_values(concatenate({e, e}, 1), {{2, 0}, {}});
  expect_values(concatenate({zeros({0, 3}), zeros({0, 3})}, 0), {{0, 3}, {}});
  // Without an axis the inputs are flattened first; 0-d arrays are fine then.
  expect_values(concatenate({array(1), array({2, 3}), array({4, 5}, {2, 1})}),
                {{5}, {1, 2, 3, 4, 5}});
  expect_values(concatenate({a}, 0), ref_of(a));
  EXPECT_EQ(concatenate({a, a}, -2).shape(), (Shape{4, 3}));
}

TEST(Layout, ConcatenateErrors) {
  array a = test::random_array({2, 3}, float32);
  expect_invalid([&] { concatenate({}, 0); }, "[concatenate]");
  expect_invalid([&] { concatenate({array(1.0f), array(2.0f)}, 0); }, "[concatenate]");
  expect_invalid([&] { concatenate({a, zeros({3})}, 0); }, "[concatenate]");
  expect_invalid([&] { concatenate({a, zeros({2, 4})}, 0); }, "[concatenate]");
  expect_invalid([&] { concatenate({a, a}, 2); }, "[concatenate]");
  expect_invalid([&] { concatenate({a, a}, -3); }, "[concatenate]");
  array wide = broadcast_to(array(1.0f), {1, 1 << 30});
  expect_overflow([&] { concatenate({wide, wide}, 1); }, "[concatenate]");
  // The message names the whole length (2^30 * 3), not the partial sum that overflowed.
  expect_overflow([&] { concatenate({wide, wide, wide}, 1); }, "3221225472 elements");
}

TEST(Layout, Stack) {
  for (Dtype d : all_dtypes) {
    auto ins = layouts({3, 2}, d);
    std::vector<array> arrays;
    std::vector<Ref> refs;
    for (auto& in : ins) {
      arrays.push_back(in.a);
      refs.push_back(in.ref);
    }
    for (int axis : {0, 1, 2, -1, -3}) {
      int ax = axis < 0 ? axis + 3 : axis;
      std::vector<Ref> expanded;
      for (auto r : refs) {
        r.shape.insert(r.shape.begin() + ax, 1);
        expanded.push_back(r);
      }
      expect_values(stack(arrays, axis), ref_concat(expanded, ax), msg(d, " axis ", axis));
    }
  }
  EXPECT_EQ(stack({array(1), array(2.5f)}).shape(), (Shape{2}));
  EXPECT_EQ(stack({array(1), array(2.5f)}).dtype(), float32);
  EXPECT_EQ(stack({zeros({0, 2}), zeros({0, 2})}, 1).shape(), (Shape{0, 2, 2}));
  array a = test::random_array({2, 3}, float32);
  expect_invalid([&] { stack({}); }, "[stack]");
  expect_invalid([&] { stack({a, transpose(a)}); }, "[stack]");
  expect_invalid([&] { stack({a, a}, 3); }, "[stack]");
  expect_invalid([&] { stack({a, a}, -4); }, "[stack]");
}

// ---------------------------------------------------------------- tile, repeat, pad

TEST(Layout, Tile) {
  // NumPy: np.tile([[1, 2], [3, 4]], (2, 1, 3)).
  array m = array({1, 2, 3, 4}, {2, 2});
  Ref expected{{2, 2, 6}, {}};
  for (int k = 0; k < 2; ++k)
    for (double v : {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}) expected.v.push_back(v);
  expect_values(tile(m, {2, 1, 3}), expected);
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({2, 3}, d)) {
      for (std::vector<int> reps : {std::vector<int>{3}, {2, 2}, {2, 1, 2}, {1, 1}, {0, 2}}) {
        array y = tile(in.a, reps);
        Shape shape = in.ref.shape;
        std::vector<int> r = reps;
        size_t nd = std::max(shape.size(), r.size());
        shape.insert(shape.begin(), nd - shape.size(), 1);
        r.insert(r.begin(), nd - r.size(), 1);
        Shape out(nd);
        for (size_t i = 0; i < nd; ++i) out[i] = shape[i] * r[i];
        Ref src = in.ref;
        src.shape = shape;
        Ref want = gather_ref(out, src, [&](std::vector<int64_t> idx) {
          for (size_t i = 0; i < nd; ++i) idx[i] %= shape[i];
          return idx;
        });
        expect_values(y, want,
                      msg(d, " ", in.name, " reps ", shape_str(Shape(reps.begin(), reps.end()))));
      }
    }
  }
  expect_values(tile(zeros({0, 2}), {2, 2}), {{0, 4}, {}});
  expect_values(tile(array(3), {2}), {{2}, {3, 3}});
  expect_invalid([&] { tile(m, {2, -1}); }, "[tile]");
  expect_overflow([&] { tile(zeros({2, 1 << 20}), {1, 1 << 12}); }, "[tile]");
}

TEST(Layout, Repeat) {
  array m = array({1, 2, 3, 4}, {2, 2});
  expect_values(repeat(m, 2), {{8}, {1, 1, 2, 2, 3, 3, 4, 4}});
  expect_values(repeat(m, 2, -1), {{2, 4}, {1, 1, 2, 2, 3, 3, 4, 4}});
  expect_values(repeat(m, 2, 0), {{4, 2}, {1, 2, 1, 2, 3, 4, 3, 4}});
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({3, 2}, d)) {
      for (int axis : {0, 1, -2}) {
        int ax = axis < 0 ? axis + 2 : axis;
        Shape out = in.ref.shape;
        out[ax] *= 3;
        Ref want = gather_ref(out, in.ref, [&](std::vector<int64_t> idx) {
          idx[ax] /= 3;
          return idx;
        });
        expect_values(repeat(in.a, 3, axis), want, msg(d, " ", in.name, " axis ", axis));
      }
    }
  }
  expect_values(repeat(m, 0, 1), {{2, 0}, {}});
  expect_values(repeat(array(5), 3), {{3}, {5, 5, 5}});
  expect_values(repeat(zeros({0, 2}), 2, 1), {{0, 4}, {}});
  expect_invalid([&] { repeat(m, -1); }, "[repeat]");
  expect_invalid([&] { repeat(m, 2, 2); }, "[repeat]");
  expect_overflow([&] { repeat(zeros({1 << 20}), 1 << 12); }, "[repeat]");
}

TEST(Layout, Pad) {
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({2, 3}, d)) {
      array y = pad(in.a, {{1, 2}, {0, 3}}, array(5));
      EXPECT_EQ(y.dtype(), d);
      Ref want{{5, 6}, std::vector<cd>(30, cd(d == bool_ ? 1 : 5))};
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) want.v[(i + 1) * 6 + j] = in.ref.v[i * 3 + j];
      expect_values(y, want, msg(d, " ", in.name));
    }
  }
  array x = test::random_array({2, 2}, int32, -10, 10);
  Ref r = ref_of(x);
  // One pair pads every axis; the pad value converts to the array's dtype (truncated).
  array y = pad(x, {{1, 1}}, array(-2.7f));
  Ref want{{4, 4}, std::vector<cd>(16, cd(-2))};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) want.v[(i + 1) * 4 + j + 1] = r.v[i * 2 + j];
  expect_values(y, want);
  expect_values(pad(x, {{0, 0}, {0, 0}}), r);
  expect_values(pad(zeros({0, 2}, int8), {{1, 0}, {0, 1}}), {{1, 3}, {0, 0, 0}});
  expect_values(pad(array({1.0f, 2.0f}), {{2, 1}}), {{5}, {0, 0, 1, 2, 0}});
  expect_invalid([&] { pad(x, {{1, 1}, {1, 1}, {1, 1}}); }, "[pad]");
  expect_invalid([&] { pad(x, {{1, -1}, {0, 0}}); }, "[pad]");
  expect_invalid([&] { pad(x, {{1, 1}}, array({1, 2})); }, "[pad]");
  expect_overflow([&] { pad(x, {{0, std::numeric_limits<int>::max()}}); }, "[pad]");
}

// ---------------------------------------------------------------- as_strided

TEST(Layout, AsStrided) {
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({3, 4}, d)) {
      // Overlapping windows of 3 over the row-major elements, every other start.
      array y = as_strided(in.a, {5, 3}, {2, 1}, 1);
      Ref want{{5, 3}, {}};
      for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 3; ++j) want.v.push_back(in.ref.v[1 + 2 * i + j]);
      expect_values(y, want, msg(d, " ", in.name));
    }
  }
  array base = test::random_array({12}, float32);
  array w = as_strided(base, {2, 3}, {0, 4}, 3);  // stride 0 repeats a row
  w.eval();
  EXPECT_TRUE(shares_buffer(w, base));
  EXPECT_EQ(w.strides(), (Strides{0, 4}));
  Ref rb = ref_of(base);
  expect_values(w, {{2, 3}, {rb.v[3], rb.v[7], rb.v[11], rb.v[3], rb.v[7], rb.v[11]}});
  expect_values(as_strided(base, {0, 5}, {1, 1}, 0), {{0, 5}, {}});
  expect_invalid([&] { as_strided(base, {2, 3}, {1}, 0); }, "[as_strided]");
  expect_invalid([&] { as_strided(base, {-2, 3}, {1, 1}, 0); }, "[as_strided]");
  expect_invalid([&] { as_strided(base, {2, 3}, {4, 4}, 1); }, "[as_strided]");
  expect_invalid([&] { as_strided(base, {2, 3}, {1, -1}, 1); }, "[as_strided]");
  expect_invalid([&] { as_strided(base, {1}, {1}, 12); }, "[as_strided]");
  expect_values(as_strided(base, {3}, {-4}, 11), {{3}, {rb.v[11], rb.v[7], rb.v[3]}});
}

// ---------------------------------------------------------------- transformations

TEST(LayoutTransforms, GradientsAreAdjointAndMatchCentralDifferences) {
  array x = test::random_array({4, 5}, float64);
  array y = test::random_array({4, 3}, float64);
  check_grads(slice(x, {3, 1}, {-5, 5}, {-2, 2}));
  check_grads(slice(x, {1, 0}, {3, 5}));
  array upd = slice_update(x, test::random_array({2, 2}, float64), {3, 4}, {0, 0}, {-2, -3});
  check_grads(upd);
  check_grads(upd, {0});
  check_grads(upd, {1});
  array cat = concatenate({x, transpose(test::random_array({2, 4}, float64)), y}, 1);
  check_grads(cat);
  check_grads(cat, {1});
  check_grads(cat, {2, 0});
  check_grads(contiguous(transpose(x)));
  check_grads(copy(x));
  check_grads(reshape(transpose(x), {2, 10}));
  check_grads(transpose(x, {1, 0}));
  check_grads(astype(x, float32), {}, 1e-6);  // rounds to float32 on the way
}

TEST(LayoutTransforms, GradientsThroughOtherFamilies) {
  // Broadcast sums its cotangent back (reduce family); as_strided scatter-adds (indexing).
  array x = test::random_array({4, 1}, float64);
  check_grads(broadcast_to(x, {2, 4, 3}));
  array z = test::random_array({10}, float64);
  check_grads(as_strided(z, {4, 3}, {2, 1}, 1));
}

TEST(LayoutTransforms, Vmap) {
  array x = test::random_array({4, 5}, float32);
  for (int ax : {0, 1, 2}) {
    check_vmap(slice(x, {3, 1}, {-5, 5}, {-2, 2}), {ax});
    check_vmap(transpose(x), {ax});
    check_vmap(reshape(x, {2, 10}), {ax});
    check_vmap(copy(x), {ax});
    check_vmap(contiguous(x), {ax});
    check_vmap(astype(x, int32), {ax});
    check_vmap(as_strided(x, {3, 3}, {4, 1}, 2), {ax});
  }
  array expandable = test::random_array({3, 1}, float32);
  check_vmap(broadcast_to(expandable, {2, 3, 4}), {0});
  check_vmap(broadcast_to(expandable, {2, 3, 4}), {2});
  array upd = slice_update(x, test::random_array({2, 2}, float32), {3, 4}, {0, 0}, {-2, -3});
  for (std::vector<int> axes : {std::vector<int>{0, 0}, {1, -1}, {-1, 2}, {2, 1}}) {
    check_vmap(upd, axes);
  }
  array cat = concatenate({x, test::random_array({4, 2}, float32)}, 1);
  for (std::vector<int> axes : {std::vector<int>{0, 0}, {1, -1}, {-1, 2}}) check_vmap(cat, axes);
  check_vmap(upd, {-1, -1});
}
