// Indexing ops: take, take_along_axis, put_along_axis, gather and the scatters. Every op is
// checked against a float64 (complex128) reference computed by plain loops over the
// row-major values of its inputs, on every value dtype and every integer index dtype, with
// negative and repeated indices, broadcast index shapes, non-contiguous sources, index
// arrays and updates, empty index arrays, and sizes large enough for the parallel paths.
// Out-of-range indices must throw std::out_of_range at evaluation with the documented
// message and leave the rest of the graph usable. Transformations: test_indexing_transforms.cpp.
#include "indexing_test.h"

using namespace indexing_test;

// ---------------------------------------------------------------- take

TEST(Indexing, TakeFlattenedEveryValueDtype) {
  for (Dtype dt : all_dtypes) {
    array a = random_values({3, 4, 5}, dt);
    array idx = random_indices({2, 7}, int32, 60);
    array r = take(a, idx);
    auto av = values(a);
    auto iv = int_values(idx);
    std::vector<cd> want;
    for (auto i : iv) want.push_back(av[wrap(i, 60)]);
    expect_values(r, {2, 7}, want, 0.0);
  }
}

TEST(Indexing, TakeEveryIndexDtypeAndAxis) {
  for (Dtype it : kIndexDtypes) {
    array a = random_values({4, 5, 6}, float32);
    for (int axis : {0, 1, 2, -1}) {
      int ax = axis < 0 ? axis + 3 : axis;
      array idx = random_indices({2, 3}, it, a.shape(ax));
      array r = take(a, idx, axis);
      Shape want_shape = a.shape();
      want_shape.erase(want_shape.begin() + ax);
      want_shape.insert(want_shape.begin() + ax, {2, 3});
      expect_values(r, want_shape, ref_take(a, idx, ax), 0.0);
    }
  }
}

TEST(Indexing, TakeResultIsRowContiguous) {
  // The gather lays its output out so that moving the index axes into place is a view of
  // row-major data: what follows take() gets the fast contiguous paths.
  array a = random_values({8, 16, 4}, float32);
  for (int axis : {0, 1, 2}) {
    array r = take(a, random_indices({5, 3}, int64, a.shape(axis)), axis);
    r.eval();
    EXPECT_TRUE(r.flags().row_contiguous) << "axis " << axis;
  }
}

TEST(Indexing, TakeNonContiguousSourcesAndIndices) {
  Shape shape{4, 5, 6};
  for (Dtype dt : {float64, int16, complex64, bfloat16}) {
    for (const array& a :
         noncontiguous(shape, [&](const Shape& s) { return random_values(s, dt); })) {
      for (int axis : {0, 1, 2}) {
        // A transposed index array and a strided one.
        array it = transpose(random_indices({3, 2}, int32, a.shape(axis)));
        array is = slice(random_indices({2, 6}, int64, a.shape(axis)), {0, 0}, {2, 6}, {1, 2});
        for (const array& idx : {it, is}) {
          array r = take(a, idx, axis);
          Shape want_shape = a.shape();
          want_shape.erase(want_shape.begin() + axis);
          want_shape.insert(want_shape.begin() + axis, {2, 3});
          expect_values(r, want_shape, ref_take(a, idx, axis), 0.0);
        }
      }
    }
  }
}

TEST(Indexing, TakeScalarIndex) {
  array a = random_values({3, 4}, float32);
  auto av = values(a);
  array r = take(a, -1, 1);
  expect_values(r, {3}, {av[3], av[7], av[11]}, 0.0);
  r = take(a, 2, 0);
  expect_values(r, {4}, {av[8], av[9], av[10], av[11]}, 0.0);
  // A 0-d index array drops the axis as well.
  r = take(a, array(-3), 0);
  expect_values(r, {4}, {av[0], av[1], av[2], av[3]}, 0.0);
  // The index is known when the op is built, so it is checked then.
  expect_error<std::out_of_range>([&] { take(a, 4, 1); },
                                  "[take] Index 4 is out of bounds for axis 1 with size 4.");
  expect_error<std::out_of_range>([&] { take(a, -4, 0); },
                                  "[take] Index -4 is out of bounds for axis 0 with size 3.");
}

TEST(Indexing, TakeLargeUsesEveryThread) {
  // Big enough for the parallel splits: scalar elements, and long contiguous rows.
  array a = random_values({100000}, float32);
  array idx = random_indices({300000}, int32, 100000);
  expect_values(take(a, idx), {300000}, ref_take(a, idx, 0), 0.0);
  array rows = random_values({2000, 300}, float32);
  array ri = random_indices({500}, int64, 2000);
  expect_values(take(rows, ri, 0), {500, 300}, ref_take(rows, ri, 0), 0.0);
  array ci = random_indices({500}, int64, 300);
  expect_values(take(rows, ci, 1), {2000, 500}, ref_take(rows, ci, 1), 0.0);
  expect_values(take(transpose(rows), ri, 1), {300, 500}, ref_take(transpose(rows), ri, 1), 0.0);
  // One huge row: the copy itself is split.
  array wide = random_values({2, 200000}, int8);
  array one = array({1}, int32);
  expect_values(take(wide, one, 0), {1, 200000}, ref_take(wide, one, 0), 0.0);
}

// ---------------------------------------------------------------- take_along_axis

TEST(Indexing, TakeAlongAxisEveryDtypeAndAxis) {
  for (Dtype dt : all_dtypes) {
    array a = random_values({4, 5, 6}, dt);
    for (int axis : {0, 1, 2, -1}) {
      int ax = axis < 0 ? axis + 3 : axis;
      Shape is = a.shape();
      is[ax] = 7;  // more indices than elements: repeats
      Dtype it = kIndexDtypes[(ax + static_cast<int>(dt.val)) % kIndexDtypes.size()];
      array idx = random_indices(is, it, a.shape(ax));
      array r = take_along_axis(a, idx, axis);
      auto av = values(a);
      auto iv = int_values(idx);
      std::vector<cd> want(iv.size());
      for (size_t i = 0; i < want.size(); ++i) {
        auto c = unravel(i, is);
        c[ax] = wrap(iv[i], a.shape(ax));
        want[i] = av[ravel(c, a.shape())];
      }
      expect_values(r, is, want, 0.0);
    }
  }
}

TEST(Indexing, TakeAlongAxisBroadcastsAndNonContiguous) {
  // Size-1 axes of either operand broadcast (except along the axis).
  array a = random_values({4, 1, 6}, float64);
  array idx = random_indices({1, 3, 2}, int32, 6);
  array r = take_along_axis(a, idx, 2);
  auto av = values(a);
  auto iv = int_values(idx);
  std::vector<cd> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) want.push_back(av[i * 6 + wrap(iv[j * 2 + k], 6)]);
  expect_values(r, {4, 3, 2}, want, 0.0);

  for (const array& src :
       noncontiguous({5, 6}, [](const Shape& s) { return random_values(s, float32); })) {
    for (int axis : {0, 1}) {
      Shape is = src.shape();
      is[axis] = 4;
      Shape rev(is.rbegin(), is.rend());
      array ti = transpose(random_indices(rev, int64, src.shape(axis)));
      array r2 = take_along_axis(src, ti, axis);
      auto sv = values(src);
      auto tv = int_values(ti);
      std::vector<cd> w(tv.size());
      for (size_t i = 0; i < w.size(); ++i) {
        auto c = unravel(i, is);
        c[axis] = wrap(tv[i], src.shape(axis));
        w[i] = sv[ravel(c, src.shape())];
      }
      expect_values(r2, is, w, 0.0);
    }
  }
}

TEST(Indexing, TakeAlongAxisLarge) {
  for (int axis : {0, 1}) {
    array a = random_values({512, 384}, float32);
    Shape is{512, 384};
    array idx = random_indices(is, int32, a.shape(axis));
    array r = take_along_axis(a, idx, axis);
    auto av = values(a);
    auto iv = int_values(idx);
    std::vector<cd> want(iv.size());
    for (size_t i = 0; i < want.size(); ++i) {
      auto c = unravel(i, is);
      c[axis] = wrap(iv[i], a.shape(axis));
      want[i] = av[ravel(c, a.shape())];
    }
    expect_values(r, is, want, 0.0);
  }
}

// ---------------------------------------------------------------- put_along_axis

namespace {

ScatterRef ref_put_along_axis(ScatterReduce reduce, const array& a, const array& idx,
                              const array& vals, int axis) {
  ScatterRef r{values(a), {}};
  r.candidates.resize(r.out.size());
  Shape is = a.shape();
  is[axis] = idx.shape(axis);
  auto iv = int_values(broadcast_to(idx, is));
  auto vv = values(broadcast_to(astype(vals, a.dtype()), is));
  for (size_t i = 0; i < iv.size(); ++i) {
    auto c = unravel(i, is);
    c[axis] = wrap(iv[i], a.shape(axis));
    const int64_t t = ravel(c, a.shape());
    if (reduce == ScatterReduce::sum)
      r.out[t] = stored(a.dtype(), r.out[t] + vv[i]);
    else
      r.out[t] = vv[i];
    r.candidates[t].push_back(vv[i]);
  }
  return r;
}

}  // namespace

TEST(Indexing, PutAlongAxisEveryDtypeAndAxis) {
  for (Dtype dt : all_dtypes) {
    array a = random_values({4, 5, 6}, dt);
    for (int axis : {0, 1, 2, -1}) {
      int ax = axis < 0 ? axis + 3 : axis;
      Shape is = a.shape();
      is[ax] = 3;
      array idx = random_indices(is, int16, a.shape(ax));
      array v = random_values(is, dt);
      array r = put_along_axis(a, idx, v, axis);
      expect_scatter(ScatterReduce::none, r, ref_put_along_axis(ScatterReduce::none, a, idx, v, ax),
                     0.0);
      EXPECT_EQ(r.shape(), a.shape());
    }
  }
}

TEST(Indexing, PutAlongAxisBroadcastsAndNonContiguous) {
  array a = random_values({4, 5, 6}, float32);
  // Indices broadcast along axis 0 and values from a scalar.
  array idx = random_indices({1, 2, 6}, uint8, 5);
  array r = put_along_axis(a, idx, array(7.5f), 1);
  expect_scatter(ScatterReduce::none, r,
                 ref_put_along_axis(ScatterReduce::none, a, idx, array(7.5f), 1), 0.0);

  for (const array& src :
       noncontiguous({5, 6}, [](const Shape& s) { return random_values(s, int32); })) {
    for (int axis : {0, 1}) {
      Shape is = src.shape();
      is[axis] = 4;
      Shape rev(is.rbegin(), is.rend());
      array ti = transpose(random_indices(rev, int32, src.shape(axis)));
      array tv = transpose(random_values(rev, int32));
      array r2 = put_along_axis(src, ti, tv, axis);
      expect_scatter(ScatterReduce::none, r2,
                     ref_put_along_axis(ScatterReduce::none, src, ti, tv, axis), 0.0);
    }
  }
}

TEST(Indexing, PutAlongAxisLarge) {
  // Both loop orders (the axis innermost or not) on the parallel path.
  for (int axis : {0, 1}) {
    array a = random_values({300, 400}, float32);
    Shape is = a.shape();
    is[axis] = 50;
    array idx = random_indices(is, int32, a.shape(axis));
    array v = random_values(is, float32);
    array r = put_along_axis(a, idx, v, axis);
    expect_scatter(ScatterReduce::none, r, ref_put_along_axis(ScatterReduce::none, a, idx, v, axis),
                   0.0);
    // The accumulating form (the vjp of take_along_axis) on the same inputs.
    array s = detail::scatter_along_axis(ScatterReduce::sum, a, idx, v, axis);
    expect_values(s, a.shape(), ref_put_along_axis(ScatterReduce::sum, a, idx, v, axis).out,
                  rtol_for(float32, 8));
  }
}

// ---------------------------------------------------------------- gather

TEST(Indexing, GatherBroadcastIndicesAndPartialSlices) {
  for (Dtype dt : all_dtypes) {
    array a = random_values({5, 6, 7}, dt);
    // Index arrays of shapes (4, 1) and (1, 3) on axes 0 and 2 broadcast to (4, 3); the
    // slice takes 4 of 6 along axis 1 and 2 from each start along axis 2.
    array i0 = random_indices({4, 1}, int64, 5);
    array i2 = random_indices({1, 3}, uint16, 7, 2);
    Shape slice{1, 4, 2};
    array r = gather(a, {i0, i2}, {0, -1}, slice);
    expect_values(r, {4, 3, 1, 4, 2}, ref_gather(a, {i0, i2}, {0, 2}, slice), 0.0);
    // Axes given in any order.
    array r2 = gather(a, {i2, i0}, {2, 0}, slice);
    expect_values(r2, {4, 3, 1, 4, 2}, ref_gather(a, {i2, i0}, {2, 0}, slice), 0.0);
  }
}

TEST(Indexing, GatherWithoutIndicesTakesOneSlice) {
  array a = random_values({4, 5}, float32);
  array r = gather(a, {}, {}, {2, 3});
  expect_values(r, {2, 3}, ref_gather(a, {}, {}, {2, 3}), 0.0);
}

TEST(Indexing, GatherNonContiguousAndMultiDimensionalSlices) {
  // Inner slices that do not collapse to one run (the row-granular path), on
  // non-contiguous sources and index arrays, small and large.
  for (int n : {7, 3000}) {
    for (const array& a :
         noncontiguous({n, 8, 9}, [](const Shape& s) { return random_values(s, float32); })) {
      array idx = transpose(random_indices({5, 2}, int32, n));
      Shape slice{1, 8, 5};
      array r = gather(a, {idx}, {0}, slice);
      expect_values(r, {2, 5, 1, 8, 5}, ref_gather(a, {idx}, {0}, slice), 0.0);
    }
    array a = random_values({n, 8, 9}, float64);
    array idx = random_indices({2 * n}, int32, n);
    expect_values(gather(a, {idx}, {0}, {1, 8, 5}), {2 * n, 1, 8, 5},
                  ref_gather(a, {idx}, {0}, {1, 8, 5}), 0.0);
  }
}

// ---------------------------------------------------------------- scatters

TEST(Indexing, ScatterEveryReduceAndDtype) {
  for (auto [reduce, fn] : kScatters) {
    for (Dtype dt : all_dtypes) {
      if (is_complex(dt) && (reduce == ScatterReduce::max || reduce == ScatterReduce::min))
        continue;
      // Rows with repeats along axis 0.
      array a = random_values({6, 4}, dt);
      array idx = random_indices({5}, int32, 6);
      array u = random_values({5, 1, 4}, dt);
      array r = fn(a, {idx}, u, {0}, {});
      expect_scatter(reduce, r, ref_scatter(reduce, a, {idx}, u, {0}), rtol_for(dt, 6));
      // Scalars at broadcast (row, column) pairs.
      array i0 = random_indices({3, 1}, int8, 6), i1 = random_indices({1, 2}, uint32, 4);
      array s = random_values({3, 2, 1, 1}, dt);
      array r2 = fn(a, {i0, i1}, s, {0, 1}, {});
      expect_scatter(reduce, r2, ref_scatter(reduce, a, {i0, i1}, s, {0, 1}), rtol_for(dt, 6));
    }
  }
}

TEST(Indexing, ScatterEveryIndexDtype) {
  for (Dtype it : kIndexDtypes) {
    array a = random_values({7, 3}, float32);
    array idx = random_indices({9}, it, 7);
    array u = random_values({9, 1, 3}, float32);
    array r = scatter_add(a, {idx}, u, {0});
    expect_values(r, {7, 3}, ref_scatter(ScatterReduce::sum, a, {idx}, u, {0}).out,
                  rtol_for(float32, 9));
  }
}

TEST(Indexing, ScatterNonContiguousAndBroadcastOperands) {
  for (auto [reduce, fn] : kScatters) {
    for (const array& a :
         noncontiguous({6, 5}, [](const Shape& s) { return random_values(s, float64); })) {
      // Transposed indices, updates broadcast along the index axis and partial slices.
      array idx = transpose(random_indices({2, 2}, int64, 6));
      array u = broadcast_to(random_values({1, 1, 1, 3}, float64), {1, 2, 1, 3});
      array r = fn(a, {idx}, u, {0}, {});
      expect_scatter(reduce, r, ref_scatter(reduce, a, {idx}, u, {0}), 1e-12);
      // Transposed updates.
      array ut = transpose(random_values({5, 1, 3}, float64), {2, 1, 0});
      array i1 = random_indices({3}, int32, 6);
      array r2 = fn(a, {i1}, ut, {0}, {});
      expect_scatter(reduce, r2, ref_scatter(reduce, a, {i1}, ut, {0}), 1e-12);
    }
  }
}

TEST(Indexing, ScatterSlicesAlongAnIndexedAxisOverlap) {
  // Slices of 3 along the indexed axis overlap: applied in order, still summed exactly.
  array a = random_values({10, 2}, float64);
  array idx = random_indices({6}, int32, 10, 3);
  array u = random_values({6, 3, 2}, float64);
  expect_values(scatter_add(a, {idx}, u, {0}), {10, 2},
                ref_scatter(ScatterReduce::sum, a, {idx}, u, {0}).out, 1e-12);
}

TEST(Indexing, ScatterLargeParallelPaths) {
  // Rows (embedding-gradient shape): threads own slices of every row.
  array a = random_values({1000, 64}, float32);
  array idx = random_indices({5000}, int32, 1000);
  array u = random_values({5000, 1, 64}, float32);
  expect_values(scatter_add(a, {idx}, u, {0}), a.shape(),
                ref_scatter(ScatterReduce::sum, a, {idx}, u, {0}).out, rtol_for(float32, 20));
  expect_scatter(ScatterReduce::none, scatter(a, {idx}, u, {0}),
                 ref_scatter(ScatterReduce::none, a, {idx}, u, {0}), 0.0);
  // An inner axis indexed: outer slice elements are split.
  array b = random_values({64, 100, 32}, float32);
  array j = random_indices({2048}, int64, 100);
  array v = random_values({2048, 64, 1, 32}, float32);
  expect_values(scatter_max(b, {j}, v, {1}), b.shape(),
                ref_scatter(ScatterReduce::max, b, {j}, v, {1}).out, 0.0);
  // Inner slices of two dimensions: split over outer elements only.
  array c = random_values({16, 10, 8, 9}, float64);
  array k = random_indices({300}, int32, 10);
  array w = random_values({300, 16, 1, 8, 5}, float64);
  expect_values(scatter_add(c, {k}, w, {1}), c.shape(),
                ref_scatter(ScatterReduce::sum, c, {k}, w, {1}).out, 1e-12);
  // Scalar updates with many repeats (serial, deterministic order).
  array d = random_values({100}, float64);
  array m = random_indices({200000}, int32, 100);
  array x = random_values({200000, 1}, float64);
  expect_values(scatter_add(d, {m}, x, {0}), {100},
                ref_scatter(ScatterReduce::sum, d, {m}, x, {0}).out, 1e-12);
}

TEST(Indexing, ScatterDonatesAnUnsharedSource) {
  // A temporary source is written in place; a source still referenced is copied.
  array base = random_values({4, 3}, float32);
  auto before = values(base);
  array idx = array({1, -1}, int32);
  array u = random_values({2, 1, 3}, float32);
  array r = scatter(add(base, array(0.0f)), {idx}, u, {0});
  array r2 = scatter(base, {idx}, u, {0});
  eval(r, r2);
  EXPECT_EQ(values(base), before);
  EXPECT_EQ(values(r), values(r2));
}

// ---------------------------------------------------------------- empty arrays

TEST(Indexing, EmptyIndexArrays) {
  array a = random_values({3, 4, 5}, float32);
  array none = zeros({0}, int32);
  EXPECT_EQ(take(a, none).shape(), Shape{0});
  array t = take(a, none, 1);
  t.eval();
  EXPECT_EQ(t.shape(), (Shape{3, 0, 5}));
  EXPECT_EQ(gather(a, {none}, {2}, {3, 4, 1}).shape(), (Shape{0, 3, 4, 1}));
  array e = take_along_axis(a, zeros({3, 0, 5}, int32), 1);
  e.eval();
  EXPECT_EQ(e.shape(), (Shape{3, 0, 5}));
  auto av = values(a);
  for (auto [reduce, fn] : kScatters) {
    expect_values(fn(a, {none}, zeros({0, 1, 4, 5}), {0}, {}), a.shape(), av, 0.0);
  }
  expect_values(put_along_axis(a, zeros({3, 0, 5}, int32), array(1.0f), 1), a.shape(), av, 0.0);
  // An empty source with no indices.
  array z = zeros({0, 3});
  EXPECT_EQ(take(z, none, 0).shape(), (Shape{0, 3}));
  EXPECT_EQ(take(z, zeros({2}, int32), 1).shape(), (Shape{0, 2}));
  expect_error<std::invalid_argument>([&] { take(z, zeros({2}, int32), 0); },
                                      "[take] Cannot take 2 indices from axis 0 with size 0.");
}

TEST(Indexing, EmptySlicesStillCheckTheIndices) {
  array a = random_values({5, 0}, float32);
  array bad = gather(a, {array({7}, int32)}, {0}, {1, 0});
  expect_error<std::out_of_range>([&] { bad.eval(); },
                                  "[gather] Index 7 is out of bounds for axis 0 with size 5.");
}

// ---------------------------------------------------------------- errors

TEST(Indexing, OutOfRangeIndicesThrowAtEvaluation) {
  array a = random_values({5}, float32);
  array m = random_values({2, 5}, float32);
  struct Case {
    std::function<array()> make;
    std::string message;
  };
  std::vector<Case> cases = {
      {[&] {
         return take(a, array({0, 7, 1}, int32));
       },
       "[take] Index 7 is out of bounds for axis 0 with size 5."},
      {[&] { return take(a, array({-6}, int64)); },
       "[take] Index -6 is out of bounds for axis 0 with size 5."},
      {[&] { return take(m, array({2}, int8), 0); },
       "[take] Index 2 is out of bounds for axis 0 with size 2."},
      {[&] { return take(m, array({5}, uint8), 1); },
       "[take] Index 5 is out of bounds for axis 1 with size 5."},
      {[&] { return take(a, array({uint64_t{1} << 63}, uint64)); },
       "[take] Index 9223372036854775808 is out of bounds for axis 0 with size 5."},
      {[&] {
         return take_along_axis(m, array({0, -9}, {1, 2}, int32), 1);
       },
       "[take_along_axis] Index -9 is out of bounds for axis 1 with size 5."},
      {[&] {
         return put_along_axis(m, array({3}, {1, 1}, int32), array(1.0f), 0);
       },
       "[put_along_axis] Index 3 is out of bounds for axis 0 with size 2."},
      {[&] {
         return gather(m, {array({4}, int32)}, {1}, {2, 2});
       },
       "[gather] Index 4 with slice size 2 is out of bounds for axis 1 with size 5."},
      {[&] {
         return gather(m, {array({-1}, int32)}, {1}, {2, 2});
       },
       "[gather] Index -1 with slice size 2 is out of bounds for axis 1 with size 5."},
      {[&] {
         return scatter_add(m, {array({0}, int32), array({5}, int16)}, zeros({1, 1, 1}), {0, 1});
       },
       "[scatter_add] Index 5 is out of bounds for axis 1 with size 5."},
      {[&] {
         return scatter(a, {array({-7}, int32)}, zeros({1, 1}), {0});
       },
       "[scatter] Index -7 is out of bounds for axis 0 with size 5."},
  };
  for (auto& c : cases) {
    array bad = c.make();  // built without complaint: the values are data
    array fine = add(a, array(1.0f));
    array downstream = multiply(bad, array(2.0f));
    expect_error<std::out_of_range>([&] { eval(downstream, fine); }, c.message);
    // Arrays of the same graph are computed and usable; the error stays with its arrays.
    expect_values(
        fine, {5},
        [&] {
          auto v = values(a);
          for (auto& x : v) x += 1.0;
          return v;
        }(),
        1e-6);
    expect_error<std::out_of_range>([&] { bad.eval(); }, c.message);
  }
  // The process and its streams stay usable.
  expect_values(take(a, array({4, -5}, int32)), {2}, {values(a)[4], values(a)[0]}, 0.0);
}

TEST(Indexing, ArgumentChecksAtBuildTime) {
  array a = random_values({3, 4}, float32);
  array i = array({0, 1}, int32);
  array f = array({0.0f, 1.0f});
  using IA = std::invalid_argument;
  // Index dtypes.
  expect_error<IA>([&] { take(a, f); }, "[take] Indices must have an integer dtype; got float32.");
  expect_error<IA>([&] { take(a, f, 0); }, "[take]");
  expect_error<IA>(
      [&] {
        take(a, array({true, false}), 0);
      },
      "[take] Indices must have an integer dtype; got bool.");
  expect_error<IA>([&] { take_along_axis(a, zeros({3, 2}), 1); }, "[take_along_axis]");
  expect_error<IA>(
      [&] {
        put_along_axis(a, zeros({3, 2}, float16), array(1.0f), 1);
      },
      "[put_along_axis]");
  expect_error<IA>([&] { gather(a, {i, astype(i, complex64)}, {0, 1}, {1, 1}); }, "[gather]");
  for (auto [reduce, fn] : kScatters) {
    std::string tag = std::string("[") +
                      (reduce == ScatterReduce::none   ? "scatter"
                       : reduce == ScatterReduce::sum  ? "scatter_add"
                       : reduce == ScatterReduce::prod ? "scatter_prod"
                       : reduce == ScatterReduce::max  ? "scatter_max"
                                                       : "scatter_min") +
                      "]";
    expect_error<IA>([&] { fn(a, {f}, zeros({2, 1, 4}), {0}, {}); }, tag);
    // Updates: rank, leading shape, slice larger than the array.
    expect_error<IA>([&] { fn(a, {i}, zeros({2, 4}), {0}, {}); }, tag + " Updates of shape (2, 4)");
    expect_error<IA>([&] { fn(a, {i}, zeros({3, 1, 4}), {0}, {}); }, tag);
    expect_error<IA>([&] { fn(a, {i}, zeros({2, 4, 4}), {0}, {}); }, tag);
    // Axes.
    expect_error<IA>(
        [&] {
          fn(a, {i}, zeros({2, 1, 4}), {2}, {});
        },
        tag + " Axis 2 is out of bounds");
    expect_error<IA>(
        [&] {
          fn(a, {i, i}, zeros({2, 1, 1}), {0, -2}, {});
        },
        tag + " Duplicate axis");
    expect_error<IA>(
        [&] {
          fn(a, {i}, zeros({2, 1, 4}), {0, 1}, {});
        },
        tag + " Got 1 index arrays for 2 axes");
  }
  expect_error<IA>(
      [&] {
        scatter_max(astype(a, complex64), {i}, zeros({2, 1, 4}), {0});
      },
      "[scatter_max] Complex");
  expect_error<IA>(
      [&] {
        scatter_min(astype(a, complex64), {i}, zeros({2, 1, 4}), {0});
      },
      "[scatter_min] Complex");
  // gather: counts, slice sizes, index shapes.
  expect_error<IA>(
      [&] {
        gather(a, {i}, {0, 1}, {1, 1});
      },
      "[gather] Got 1 index arrays for 2 axes");
  expect_error<IA>([&] { gather(a, {i}, {0}, {1}); }, "[gather] Got 1 slice sizes");
  expect_error<IA>([&] { gather(a, {i}, {0}, {1, 5}); }, "[gather] Slice sizes (1, 5) do not fit");
  expect_error<IA>([&] { gather(a, {i}, {0}, {-1, 1}); }, "[gather] Slice sizes");
  expect_error<IA>(
      [&] {
        gather(a, {i, array({0, 1, 2}, int32)}, {0, 1}, {1, 1});
      },
      "[gather] Shapes (2,) and (3,) cannot be broadcast.");
  expect_error<IA>([&] { gather(a, {i}, {-3}, {1, 1}); }, "[gather] Axis -3 is out of bounds");
  // take / take_along_axis / put_along_axis: axes and shapes.
  expect_error<IA>([&] { take(a, i, 2); }, "[take] Axis 2 is out of bounds");
  expect_error<IA>([&] { take(array(1.0f), i, 0); }, "[take] Axis 0 is out of bounds");
  expect_error<IA>([&] { take(a, 0, -3); }, "[take] Axis -3 is out of bounds");
  expect_error<IA>([&] { take_along_axis(a, i, 0); },
                   "[take_along_axis] Indices of shape (2,) must have as many dimensions");
  expect_error<IA>(
      [&] {
        take_along_axis(a, zeros({2, 2}, int32), 1);
      },
      "[take_along_axis] Shapes");
  expect_error<IA>(
      [&] {
        take_along_axis(a, zeros({3, 2}, int32), 2);
      },
      "[take_along_axis] Axis 2 is out of bounds");
  expect_error<IA>([&] { put_along_axis(a, i, array(1.0f), 0); },
                   "[put_along_axis] Indices of shape (2,) must have");
  expect_error<IA>(
      [&] {
        put_along_axis(a, zeros({2, 2}, int32), array(1.0f), 1);
      },
      "[put_along_axis] Indices of shape (2, 2) cannot be broadcast");
  expect_error<IA>(
      [&] {
        put_along_axis(a, zeros({3, 2}, int32), zeros({3, 3}), 1);
      },
      "[put_along_axis] Values of shape (3, 3)");
  expect_error<IA>(
      [&] {
        put_along_axis(a, zeros({3, 2}, int32), array(1.0f), -3);
      },
      "[put_along_axis] Axis -3");
}
