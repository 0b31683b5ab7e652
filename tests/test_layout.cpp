// Layout ops: conversions, copies, views (reshape, transpose, broadcast, slice, as_strided),
// and joining, splitting, tiling and padding. Every op is checked against a host reference
// built from the row-major values of a plain base array by index arithmetic alone, on every
// dtype, on non-contiguous inputs (transposed, strided, reversed, broadcast), on empty
// arrays, with negative axes, and on each argument check. Transformations (jvp, vjp, vmap)
// are checked through the primitives directly: layout ops are linear, so the vjp must be
// the adjoint of the jvp, both must match central differences, and vmap must equal a loop.
#include "kiln/backend/cpu/strided.h"
#include "layout_test.h"

using namespace layout_test;

// ---------------------------------------------------------------- astype, copy, contiguous

namespace {
// NumPy's casting of a value held in a `from` array to `to`: real part for complex to real,
// truncation toward zero for floats to integers, nonzero test for bool.
cd cast_ref(cd v, Dtype to) {
  if (to == bool_) return v != cd(0) ? 1.0 : 0.0;
  if (to == complex64) return v;
  if (is_integral(to)) return std::trunc(v.real());
  return v.real();
}
}  // namespace

TEST(Layout, AsTypeEveryPair) {
  for (Dtype from : all_dtypes) {
    // Non-negative values below 100 fit every integer type.
    for (auto& in : layouts({3, 5}, from, 0, 100)) {
      for (Dtype to : all_dtypes) {
        array y = astype(in.a, to);
        EXPECT_EQ(y.dtype(), to);
        Ref expected = in.ref;
        for (auto& v : expected.v) v = cast_ref(v, to);
        double rtol = is_inexact(to) ? test::tolerance(to) : 0;
        expect_values(y, expected, msg(from, "->", to, " ", in.name), rtol);
      }
    }
  }
}

TEST(Layout, AsTypeSignedTruncationComplexAndBool) {
  for (Dtype from : {float16, bfloat16, float32, float64, complex64}) {
    for (Dtype to : {int8, int16, int32, int64}) {
      for (auto& in : layouts({4, 3}, from, -100, 100)) {
        Ref expected = in.ref;
        for (auto& v : expected.v) v = std::trunc(v.real());
        expect_values(astype(in.a, to), expected, msg(from, "->", to, " ", in.name));
      }
    }
  }
  expect_values(astype(array({2.7f, -2.7f, 0.0f, -0.5f}), int32), {{4}, {2, -2, 0, 0}});
  array f({2.7f, -2.7f, 0.0f, -0.5f, std::numeric_limits<float>::quiet_NaN()});
  expect_values(astype(f, bool_), {{5}, {1, 1, 0, 1, 1}});  // NaN is truthy, as NumPy
  array c({complex64_t(1.5f, 2), complex64_t(0, 1), complex64_t(-3.75f, 0), complex64_t(0, 0)});
  expect_values(astype(c, float32), {{4}, {1.5, 0, -3.75, 0}});
  expect_values(astype(c, int16), {{4}, {1, 0, -3, 0}});
  expect_values(astype(c, bool_), {{4}, {1, 1, 1, 0}});  // a nonzero imaginary part counts
  expect_values(astype(array({1.25f, -4.0f}), complex64), {{2}, {1.25, -4.0}});
  expect_values(astype(array({true, false}), float16), {{2}, {1, 0}});
}

TEST(Layout, AsTypeSameDtypeIsIdentityAndScalarsStayCheap) {
  array x = test::random_array({3}, float32);
  EXPECT_EQ(astype(x, float32).id(), x.id());
  // A broadcast scalar converts one element and keeps its zero strides.
  array b = broadcast_to(array(2.5f), {1000, 1000});
  array y = astype(b, float64);
  y.eval();
  EXPECT_EQ(y.data_size(), 1u);
  EXPECT_EQ(y.strides(), (Strides{0, 0}));
  expect_values(slice(y, {998, 3}, {1000, 5}), {{2, 2}, {2.5, 2.5, 2.5, 2.5}});
  array e = astype(zeros({0, 4}, int8), float32);
  expect_values(e, {{0, 4}, {}});
}

TEST(Layout, CopyEveryDtypeAndLayout) {
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({4, 3}, d)) {
      array y = copy(in.a);
      expect_values(y, in.ref, msg("copy ", d, " ", in.name));
      EXPECT_FALSE(shares_buffer(y, in.a)) << in.name;
      EXPECT_TRUE(y.flags().contiguous) << in.name;
      EXPECT_EQ(y.data_size(), y.size()) << in.name;
    }
  }
  expect_values(copy(zeros({2, 0}, float16)), {{2, 0}, {}});
  expect_values(copy(array(7, int64)), {{}, {7}});
}

TEST(Layout, Contiguous) {
  for (Dtype d : {bool_, int16, float32, complex64}) {
    for (auto& in : layouts({3, 4}, d)) {
      array y = contiguous(in.a);
      expect_values(y, in.ref, in.name);
      EXPECT_TRUE(y.flags().row_contiguous) << in.name;
      in.a.eval();
      EXPECT_EQ(shares_buffer(y, in.a), in.a.flags().row_contiguous) << in.name;
    }
  }
  array base = test::random_array({3, 4}, float32);
  array t = transpose(base);
  array col = contiguous(t, /*allow_col_major=*/true);
  col.eval();
  EXPECT_TRUE(shares_buffer(col, base));
  EXPECT_TRUE(col.flags().col_contiguous);
  array row = contiguous(t);
  row.eval();
  EXPECT_FALSE(shares_buffer(row, base));
  expect_values(row, ref_transpose(ref_of(base), {1, 0}));
  expect_values(contiguous(zeros({0, 5}, int32)), {{0, 5}, {}});
}

TEST(Layout, LargeCopiesTilesAndThreads) {
  // Big enough for the tiled transposing copy (partial tiles included) and for several
  // threads (more than 2 * 2^16 elements).
  for (Dtype d : {bool_, int16, float32, float64, complex64}) {
    array x = test::random_array({2, 263, 290}, d);
    Ref r = ref_of(x);
    expect_values(copy(swapaxes(x, -1, -2)), ref_transpose(r, {0, 2, 1}), msg(d, " copy"));
    expect_values(contiguous(transpose(x)), ref_transpose(r, {2, 1, 0}), msg(d, " contiguous"));
    Ref real = ref_transpose(r, {0, 2, 1});
    for (auto& v : real.v) v = v.real();
    expect_values(astype(swapaxes(x, 1, 2), float32), real, msg(d, " astype"),
                  d == float64 ? 1e-6 : 0);
    Ref rt = ref_transpose(r, {0, 2, 1});
    expect_values(reshape(swapaxes(x, 1, 2), {2 * 290, 263}), {{2 * 290, 263}, rt.v},
                  msg(d, " reshape"));
    expect_values(concatenate({x, x}, 1), ref_concat({r, r}, 1), msg(d, " concatenate"));
    array u = slice_update(x, array(1), {0, 1, 0}, {2, 263, 290}, {1, 2, 1});
    Ref ru = r;
    for (size_t i = 0; i < ru.v.size(); ++i) {
      if (unravel(i, r.shape)[1] % 2 == 1) ru.v[i] = 1;
    }
    expect_values(u, ru, msg(d, " slice_update"));
  }
}

// ---------------------------------------------------------------- reshape family

// Kernels take collapsed extents as 32-bit Shape entries: 2^31 or more contiguous elements
// stay split over dimensions that fit (no data is needed to check the plan).
TEST(Layout, CollapsedExtentsFitShapeEntries) {
  // 2^31 - 2^21 elements merge into one extent; 2^31 + 2^16 do not.
  auto [fits, fits_st] = collapse_contiguous_dims<1>(Shape{2, 1024, 1024, 1023},
                                                     {Strides{1072693248, 1047552, 1023, 1}});
  EXPECT_EQ(fits, (Shape{2145386496}));
  EXPECT_EQ(fits_st[0], (Strides{1}));
  auto [wide, wide_st] =
      collapse_contiguous_dims<2>(Shape{32769, 65536}, {Strides{65536, 1}, Strides{65536, 1}});
  EXPECT_EQ(wide, (Shape{32769, 65536}));
  EXPECT_EQ(wide_st[1], (Strides{65536, 1}));
  // Merging stops at the first dimension that would pass the limit.
  auto [split, split_st] = collapse_contiguous_dims<1>(Shape{3, 1024, 1024, 1023},
                                                       {Strides{1072693248, 1047552, 1023, 1}});
  EXPECT_EQ(split, (Shape{3145728, 1023}));
  EXPECT_EQ(split_st[0], (Strides{1023, 1}));
}

TEST(Layout, ReshapeValuesEveryDtypeAndLayout) {
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({4, 6}, d)) {
      for (Shape shape : {Shape{24}, Shape{2, 12}, Shape{3, -1}, Shape{2, 2, 6}, Shape{-1, 1, 4},
                          Shape{1, 24, 1}}) {
        array y = reshape(in.a, shape);
        Ref expected = in.ref;
        expected.shape = y.shape();
        EXPECT_EQ(y.size(), 24u);
        expect_values(y, expected, msg("reshape ", d, " ", in.name, " to ", shape_str(shape)));
      }
    }
  }
  array x = test::random_array({2, 3}, int32);
  EXPECT_EQ(reshape(x, {3, -1}).shape(), (Shape{3, 2}));
  EXPECT_EQ(reshape(x, {2, 3}).id(), x.id());
  expect_values(reshape(zeros({0, 3}), {3, 0}), {{3, 0}, {}});
  expect_values(reshape(zeros({0, 3}), {-1, 6}), {{0, 6}, {}});
  expect_values(reshape(array(5.0f), {1, 1}), {{1, 1}, {5}});
  expect_values(reshape(array({5.0f}), {}), {{}, {5}});
}

TEST(Layout, ReshapeIsAViewExactlyWhenNumPysRuleAllows) {
  array base = test::random_array({4, 6}, float32);
  Ref ref = ref_of(base);
  struct Case {
    std::string name;
    array view;
    Ref view_ref;
    Shape shape;
    bool is_view;
  };
  Shape z{0, 0}, whole{4, 6};
  array every_other = slice(base, z, whole, {1, 2});  // (4, 3), strides (6, 2)
  array left_half = slice(base, z, {4, 3}, {1, 1});   // (4, 3), strides (6, 1)
  array t = transpose(base);                          // (6, 4), strides (1, 6)
  array row = test::random_array({3}, float32);
  array bcast = broadcast_to(row, {4, 3});  // strides (0, 1)
  array v = test::random_array({6}, float32);
  array rev = slice(v, {5}, {-7}, {-1});  // stride -1
  std::vector<Case> cases = {
      {"contiguous", base, ref, {2, 12}, true},
      {"step 2 merges", every_other, ref_slice(ref, z, whole, {1, 2}), {12}, true},
      {"step 2 splits", every_other, ref_slice(ref, z, whole, {1, 2}), {2, 2, 3}, true},
      {"half rows cannot merge", left_half, ref_slice(ref, z, {4, 3}, {1, 1}), {12}, false},
      {"half rows split", left_half, ref_slice(ref, z, {4, 3}, {1, 1}), {2, 2, 3}, true},
      {"transposed flattens by copy", t, ref_transpose(ref, {1, 0}), {24}, false},
      {"transposed gains ones", t, ref_transpose(ref, {1, 0}), {1, 6, 1, 4}, true},
      {"transposed splits", t, ref_transpose(ref, {1, 0}), {2, 3, 2, 2}, true},
      {"broadcast merge copies", bcast, ref_broadcast(ref_of(row), {4, 3}), {12}, false},
      {"broadcast splits", bcast, ref_broadcast(ref_of(row), {4, 3}), {2, 2, 3}, true},
      {"reversed splits", rev, ref_slice(ref_of(v), {5}, {-7}, {-1}), {2, 3}, true},
  };
  for (auto& c : cases) {
    array y = reshape(c.view, c.shape);
    y.eval();
    Ref expected = c.view_ref;
    expected.shape = c.shape;
    expect_values(y, expected, c.name);
    array source = c.view;
    source.eval();
    EXPECT_EQ(shares_buffer(y, source), c.is_view) << c.name;
  }
}

TEST(Layout, ReshapeErrors) {
  array x = test::random_array({2, 3}, float32);
  expect_invalid([&] { reshape(x, {-1, -1}); }, "[reshape]");
  expect_invalid([&] { reshape(x, {-2, 3}); }, "[reshape]");
  expect_invalid([&] { reshape(x, {4, 2}); }, "[reshape]");
  expect_invalid([&] { reshape(x, {4, -1}); }, "[reshape]");
  expect_invalid([&] { reshape(zeros({0, 3}), {0, -1}); }, "[reshape]");
  expect_values(x, ref_of(x));  // still usable
}

TEST(Layout, FlattenSqueezeExpandDims) {
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({2, 1, 3, 1}, d)) {
      auto with_shape = [&](Shape s) {
        Ref r = in.ref;
        r.shape = s;
        return r;
      };
      expect_values(flatten(in.a), with_shape({6}), in.name);
      expect_values(flatten(in.a, 1, 2), with_shape({2, 3, 1}), in.name);
      expect_values(flatten(in.a, -3, -1), with_shape({2, 3}), in.name);
      expect_values(squeeze(in.a), with_shape({2, 3}), in.name);
      expect_values(squeeze(in.a, -1), with_shape({2, 1, 3}), in.name);
      expect_values(squeeze(in.a, std::vector<int>{1, 3}), with_shape({2, 3}), in.name);
      expect_values(expand_dims(in.a, 0), with_shape({1, 2, 1, 3, 1}), in.name);
      expect_values(expand_dims(in.a, -1), with_shape({2, 1, 3, 1, 1}), in.name);
      expect_values(expand_dims(in.a, std::vector<int>{0, -1, 3}),
                    with_shape({1, 2, 1, 1, 3, 1, 1}), in.name);
    }
  }
  EXPECT_EQ(flatten(array(3)).shape(), (Shape{1}));
  EXPECT_EQ(squeeze(zeros({1, 0, 1})).shape(), (Shape{0}));
  EXPECT_EQ(expand_dims(array(1.0f), 0).shape(), (Shape{1}));
  // Squeezing and expanding never copy.
  array base = test::random_array({3, 1, 4}, float32);
  array t = transpose(base, {2, 1, 0});
  for (array v : {squeeze(t), expand_dims(t, 1), flatten(t, 0, 1), squeeze(base, 1)}) {
    v.eval();
    EXPECT_TRUE(shares_buffer(v, base));
  }
  array x = test::random_array({2, 1, 3}, float32);
  expect_invalid([&] { flatten(x, 2, 1); }, "[flatten]");
  expect_invalid([&] { flatten(x, 0, 3); }, "[flatten]");
  expect_invalid([&] { squeeze(x, 0); }, "[squeeze]");
  expect_invalid([&] { squeeze(x, 3); }, "[squeeze]");
  expect_invalid([&] { squeeze(x, std::vector<int>{1, -2}); }, "[squeeze]");
  expect_invalid([&] { expand_dims(x, 4); }, "[expand_dims]");
  expect_invalid([&] { expand_dims(x, -5); }, "[expand_dims]");
  expect_invalid([&] { expand_dims(x, std::vector<int>{0, 0}); }, "[expand_dims]");
}

// ---------------------------------------------------------------- axis permutations

TEST(Layout, TransposeSwapaxesMoveaxis) {
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({2, 3, 4}, d)) {
      expect_values(transpose(in.a), ref_transpose(in.ref, {2, 1, 0}), in.name);
      expect_values(transpose(in.a, {1, -1, 0}), ref_transpose(in.ref, {1, 2, 0}), in.name);
      expect_values(swapaxes(in.a, 0, -1), ref_transpose(in.ref, {2, 1, 0}), in.name);
      expect_values(swapaxes(in.a, -2, -1), ref_transpose(in.ref, {0, 2, 1}), in.name);
      expect_values(moveaxis(in.a, 0, -1), ref_transpose(in.ref, {1, 2, 0}), in.name);
      expect_values(moveaxis(in.a, -1, 0), ref_transpose(in.ref, {2, 0, 1}), in.name);
      expect_values(moveaxis(in.a, 1, 1), in.ref, in.name);
    }
  }
  array base = test::random_array({2, 3}, float32);
  array t = transpose(base);
  t.eval();
  EXPECT_TRUE(shares_buffer(t, base));
  EXPECT_EQ(t.strides(), (Strides{1, 3}));
  EXPECT_TRUE(t.flags().col_contiguous);
  EXPECT_EQ(transpose(array(1)).ndim(), 0u);
  expect_values(transpose(zeros({0, 2})), {{2, 0}, {}});
  expect_invalid([&] { transpose(base, {0}); }, "[transpose]");
  expect_invalid([&] { transpose(base, {0, 0}); }, "[transpose]");
  expect_invalid([&] { transpose(base, {0, 2}); }, "[transpose]");
  expect_invalid([&] { swapaxes(base, 0, 2); }, "[swapaxes]");
  expect_invalid([&] { moveaxis(base, -3, 0); }, "[moveaxis]");
  expect_invalid([&] { moveaxis(base, 0, 2); }, "[moveaxis]");
}

// ---------------------------------------------------------------- broadcasting

TEST(Layout, BroadcastToAndBroadcastArrays) {
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({3, 1}, d)) {
      for (Shape s : {Shape{3, 4}, Shape{2, 3, 5}, Shape{3, 1}, Shape{0, 3, 2}}) {
        array y = broadcast_to(in.a, s);
        expect_values(y, ref_broadcast(in.ref, s), msg(in.name, " to ", shape_str(s)));
      }
    }
  }
  array row = test::random_array({4}, int32);
  array b = broadcast_to(row, {3, 4});
  b.eval();
  EXPECT_TRUE(shares_buffer(b, row));
  EXPECT_EQ(b.strides(), (Strides{0, 1}));
  EXPECT_FALSE(b.flags().contiguous);
  EXPECT_EQ(broadcast_to(array(1.0f), {0}).size(), 0u);

  array col = test::random_array({2, 1}, float32);
  auto outs = broadcast_arrays({row, col, array(3)});
  ASSERT_EQ(outs.size(), 3u);
  for (auto& o : outs) EXPECT_EQ(o.shape(), (Shape{2, 4}));
  expect_values(outs[0], ref_broadcast(ref_of(row), {2, 4}));
  expect_values(outs[1], ref_broadcast(ref_of(col), {2, 4}));
  expect_values(outs[2], ref_broadcast({{}, {3}}, {2, 4}));

  expect_invalid([&] { broadcast_to(row, {3, 5}); }, "[broadcast_to]");
  expect_invalid([&] { broadcast_to(row, {}); }, "[broadcast_to]");
  expect_invalid([&] { broadcast_to(col, {-1, 2}); }, "[broadcast_to]");
  expect_invalid(
      [&] {
        broadcast_arrays({row, test::random_array({3}, float32)});
      },
      "[broadcast_arrays]");
}

// ---------------------------------------------------------------- slice

TEST(Layout, SliceFollowsPython) {
  array x = arange(10);
  struct Case {
    int start, stop, step;
    std::vector<double> expected;  // Python's list(range(10))[start:stop:step]
  };
  std::vector<Case> cases = {
      {8, 2, -3, {8, 5}},
      {-1, -11, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {-100, 100, 1, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {5, -100, -2, {5, 3, 1}},
      {20, 0, -4, {9, 5, 1}},
      {2, 8, 3, {2, 5}},
      {-3, 10, 1, {7, 8, 9}},
      {9, -1, -1, {}},
      {0, 10, -1, {}},
      {-20, -15, 1, {}},
      {3, 3, 1, {}},
      {std::numeric_limits<int>::max(), std::numeric_limits<int>::min(), -4, {9, 5, 1}},
  };
  for (auto& c : cases) {
    array y = slice(x, {c.start}, {c.stop}, {c.step});
    Ref expected{{static_cast<int32_t>(c.expected.size())}, {}};
    for (double v : c.expected) expected.v.push_back(v);
    expect_values(y, expected, msg("[", c.start, ":", c.stop, ":", c.step, "]"));
  }
  expect_values(slice(x, {2}, {5}), {{3}, {2, 3, 4}});
}

TEST(Layout, SliceRandomBoundsEveryDtypeAndLayout) {
  std::uniform_int_distribution<int> bound(-7, 7), step(-3, 3);
  for (Dtype d : all_dtypes) {
    for (auto& in : layouts({5, 4}, d)) {
      for (int trial = 0; trial < 6; ++trial) {
        Shape start, stop, steps;
        for (int k = 0; k < 2; ++k) {
          start.push_back(bound(test::rng()));
          stop.push_back(bound(test::rng()));
          int s = 0;
          while (s == 0) s = step(test::rng());
          steps.push_back(s);
        }
        array y = slice(in.a, start, stop, steps);
        expect_values(
            y, ref_slice(in.ref, start, stop, steps),
            msg(d, " ", in.name, " ", shape_str(start), shape_str(stop), shape_str(steps)));
      }
    }
  }
}

TEST(Layout, SliceIsAViewWithPossiblyNegativeStrides) {
  array base = test::random_array({4, 6}, float32);
  array y = slice(base, {3, 1}, {-5, 6}, {-1, 2});
  y.eval();
  EXPECT_TRUE(shares_buffer(y, base));
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  EXPECT_EQ(y.strides(), (Strides{-6, 2}));
  EXPECT_FALSE(y.flags().contiguous);
  expect_values(y, ref_slice(ref_of(base), {3, 1}, {-5, 6}, {-1, 2}));
  // Slicing the reversed view again walks forward through the buffer.
  array z = slice(y, {3, 0}, {-5, 3}, {-1, 1});
  z.eval();
  EXPECT_TRUE(shares_buffer(z, base));
  EXPECT_EQ(z.strides(), (Strides{6, 2}));
  expect_values(z, ref_slice(ref_of(base), {0, 1}, {4, 6}, {1, 2}));
  // Rows of a row-major array stay row-contiguous.
  array rows = slice(base, {1, 0}, {3, 6});
  rows.eval();
  EXPECT_TRUE(rows.flags().row_contiguous);
  EXPECT_EQ(rows.data<float>(), base.data<float>() + 6);
  // Results feed other ops, which must honour the negative strides.
  expect_values(copy(y), ref_slice(ref_of(base), {3, 1}, {-5, 6}, {-1, 2}));
  EXPECT_EQ(slice(base, {0, 0}, {4, 6}).id(), base.id());
}

TEST(Layout, SliceEmptyAndErrors) {
  array e = zeros({0, 3}, int16);
  expect_values(slice(e, {0, 1}, {0, 3}), {{0, 2}, {}});
  expect_values(slice(e, {-1, 2}, {-10, 0}, {-1, -1}), {{0, 2}, {}});
  array x = test::random_array({3, 4}, float32);
  expect_values(slice(x, {2, 0}, {1, 4}), {{0, 4}, {}});
  expect_values(slice(array(5), {}, {}), {{}, {5}});
  expect_invalid([&] { slice(x, {0}, {3, 4}); }, "[slice]");
  expect_invalid([&] { slice(x, {0, 0}, {3}); }, "[slice]");
  expect_invalid([&] { slice(x, {0, 0}, {3, 4}, {1}); }, "[slice]");
  expect_invalid([&] { slice(x, {0, 0}, {3, 4}, {1, 0}); }, "[slice]");
}
