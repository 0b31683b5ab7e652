// Indexing ops: take, take_along_axis, put_along_axis, gather and the scatters. Every op is
// checked against a float64 (complex128) reference computed by plain loops over the
// row-major values of its inputs, on every value dtype and every integer index dtype, with
// negative and repeated indices, broadcast index shapes, non-contiguous sources, index
// arrays and updates, empty index arrays, and sizes large enough for the parallel paths.
// Out-of-range indices must throw std::out_of_range at evaluation with the documented
// message and leave the rest of the graph usable. Transformations are checked through the
// primitives directly: vjp and jvp against central differences and against each other,
// vmap against a loop over the mapped axis (source, indices, or both mapped).
#include <complex>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "kiln/primitives.h"
#include "test_utils.h"

using namespace kiln;
using cd = std::complex<double>;

namespace {

// ---------------------------------------------------------------- host values

std::vector<cd> values(const array& a) {
  if (a.dtype() == complex64) return test::to_complex(a);
  auto d = test::to_double(a);
  return {d.begin(), d.end()};
}

std::vector<int64_t> int_values(const array& a) {
  auto d = test::to_double(a);
  return {d.begin(), d.end()};
}

std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

int64_t wrap(int64_t i, int64_t n) {
  return i < 0 ? i + n : i;
}

Shape concat(const Shape& a, const Shape& b) {
  Shape s = a;
  s.insert(s.end(), b.begin(), b.end());
  return s;
}

/** Expects `got` to have `shape` and values within rtol * (1 + |want|) of `want`. */
void expect_values(const array& got, const Shape& shape, const std::vector<cd>& want, double rtol) {
  ASSERT_EQ(got.shape(), shape);
  auto g = values(got);
  ASSERT_EQ(g.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::abs(g[i] - want[i]) > rtol * (1.0 + std::abs(want[i])) && reported++ < 5) {
      ADD_FAILURE() << "element " << i << ": got " << g[i] << ", want " << want[i] << " (dtype "
                    << got.dtype() << ", seed " << test::seed() << ")";
    }
  }
}

// ---------------------------------------------------------------- random inputs

const std::vector<Dtype> kIndexDtypes = {int8, int16, int32, int64, uint8, uint16, uint32, uint64};

/** Values of `dtype` that keep integer sums and products small. */
array random_values(const Shape& shape, Dtype dtype) {
  if (dtype == bool_ || !is_integral(dtype)) return test::random_array(shape, dtype);
  if (is_unsigned(dtype)) return test::random_array(shape, dtype, 0.0, 4.0);
  return test::random_array(shape, dtype, -3.0, 4.0);
}

/** Indices of `dtype` valid for an axis of `size` with a slice of `slice`: non-negative
 * [0, size - slice] and, for signed types, negative [-size, -slice]. */
array random_indices(const Shape& shape, Dtype dtype, int64_t size, int64_t slice = 1) {
  std::uniform_int_distribution<int64_t> pos(0, size - slice), neg(-size, -slice);
  std::bernoulli_distribution coin(0.5);
  std::vector<int64_t> v(shape_size(shape));
  for (auto& x : v)
    x = is_signed_integer(dtype) && coin(test::rng()) ? neg(test::rng()) : pos(test::rng());
  return array(v.begin(), shape, dtype);
}

/** Fresh views of `shape` that are not row-contiguous: transposed, strided, broadcast. */
std::vector<array> noncontiguous(const Shape& shape,
                                 const std::function<array(const Shape&)>& make) {
  std::vector<array> out;
  Shape rev(shape.rbegin(), shape.rend());
  out.push_back(transpose(make(rev)));
  Shape wide = shape;
  wide.back() = 2 * shape.back();
  Shape stop = wide, step(shape.size(), 1);
  step.back() = 2;
  out.push_back(slice(make(wide), Shape(shape.size(), 0), stop, step));
  Shape one = shape;
  one[0] = 1;
  out.push_back(broadcast_to(make(one), shape));
  return out;
}

/** The rtol of a result made by combining up to `terms` values in `dtype`. */
double rtol_for(Dtype dtype, int terms = 1) {
  return test::tolerance(dtype) * terms;
}

// ---------------------------------------------------------------- references

/** take along `axis`: a[:axis] + P + a[axis+1:]. */
std::vector<cd> ref_take(const array& a, const array& idx, int axis) {
  auto av = values(a);
  auto iv = int_values(idx);
  Shape pre(a.shape().begin(), a.shape().begin() + axis),
      post(a.shape().begin() + axis + 1, a.shape().end());
  Shape out_shape = concat(concat(pre, idx.shape()), post);
  std::vector<cd> out(shape_size(out_shape));
  const int pd = static_cast<int>(idx.ndim());
  for (size_t i = 0; i < out.size(); ++i) {
    auto c = unravel(i, out_shape);
    std::vector<int64_t> src(c.begin(), c.begin() + axis);
    std::vector<int64_t> p(c.begin() + axis, c.begin() + axis + pd);
    src.push_back(wrap(iv[ravel(p, idx.shape())], a.shape(axis)));
    src.insert(src.end(), c.begin() + axis + pd, c.end());
    out[i] = av[ravel(src, a.shape())];
  }
  return out;
}

struct GatherCase {
  std::vector<std::vector<int64_t>> idx;  // per index array, broadcast to pshape
  Shape pshape;
};

GatherCase broadcast_indices(const std::vector<array>& indices) {
  GatherCase g;
  g.pshape = broadcast_shapes(indices);
  for (auto& i : indices) g.idx.push_back(int_values(broadcast_to(i, g.pshape)));
  return g;
}

/** The start of the slice selected by position n. */
std::vector<int64_t> start_of(const GatherCase& g, int64_t n, const std::vector<int>& axes,
                              const Shape& ashape) {
  std::vector<int64_t> start(ashape.size(), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    int ax = axes[k] < 0 ? axes[k] + static_cast<int>(ashape.size()) : axes[k];
    start[ax] = wrap(g.idx[k][n], ashape[ax]);
  }
  return start;
}

std::vector<cd> ref_gather(const array& a, const std::vector<array>& indices,
                           const std::vector<int>& axes, const Shape& slice) {
  auto av = values(a);
  auto g = broadcast_indices(indices);
  const int64_t P = shape_size(g.pshape), S = shape_size(slice);
  std::vector<cd> out(P * S);
  for (int64_t n = 0; n < P; ++n) {
    auto start = start_of(g, n, axes, a.shape());
    for (int64_t s = 0; s < S; ++s) {
      auto c = unravel(s, slice);
      for (size_t d = 0; d < c.size(); ++d) c[d] += start[d];
      out[n * S + s] = av[ravel(c, a.shape())];
    }
  }
  return out;
}

/** An integer or bool result as the dtype stores it (integers wrap, bool is nonzero). */
cd stored(Dtype dtype, cd v) {
  if (dtype == bool_) return v != 0.0 ? 1.0 : 0.0;
  if (!is_integral(dtype)) return v;
  return dispatch_dtype(dtype, [&](auto tag) -> cd {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      return static_cast<double>(static_cast<T>(static_cast<int64_t>(v.real())));
    } else {
      return v;
    }
  });
}

/** Scatter reference: the combined result, and for `none` the values each target may
 * hold (any one of its duplicates). */
struct ScatterRef {
  std::vector<cd> out;
  std::vector<std::vector<cd>> candidates;
};

ScatterRef ref_scatter(ScatterReduce reduce, const array& a, const std::vector<array>& indices,
                       const array& updates, const std::vector<int>& axes) {
  ScatterRef r{values(a), {}};
  r.candidates.resize(r.out.size());
  auto g = broadcast_indices(indices);
  const int pd = static_cast<int>(g.pshape.size());
  Shape slice(updates.shape().begin() + pd, updates.shape().end());
  auto uv = values(broadcast_to(updates, concat(g.pshape, slice)));
  const int64_t P = shape_size(g.pshape), S = shape_size(slice);
  for (int64_t n = 0; n < P; ++n) {
    auto start = start_of(g, n, axes, a.shape());
    for (int64_t s = 0; s < S; ++s) {
      auto c = unravel(s, slice);
      for (size_t d = 0; d < c.size(); ++d) c[d] += start[d];
      const int64_t t = ravel(c, a.shape());
      cd u = uv[n * S + s], &o = r.out[t];
      switch (reduce) {
        case ScatterReduce::none:
          o = u;
          r.candidates[t].push_back(u);
          break;
        case ScatterReduce::sum:
          o = stored(a.dtype(), o + u);
          break;
        case ScatterReduce::prod:
          o = stored(a.dtype(), o * u);
          break;
        case ScatterReduce::max:
          o = u.real() > o.real() ? u : o;
          break;
        case ScatterReduce::min:
          o = u.real() < o.real() ? u : o;
          break;
      }
    }
  }
  return r;
}

/** Checks a scatter result: values for the reductions, membership for `none`. */
void expect_scatter(ScatterReduce reduce, const array& got, const ScatterRef& want, double rtol) {
  if (reduce != ScatterReduce::none) return expect_values(got, got.shape(), want.out, rtol);
  auto g = values(got);
  int reported = 0;
  for (size_t t = 0; t < g.size(); ++t) {
    const auto& c = want.candidates[t];
    bool ok = c.empty() ? g[t] == want.out[t] : std::find(c.begin(), c.end(), g[t]) != c.end();
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << "target " << t << ": got " << g[t] << ", not one of the " << c.size()
                    << " updates written there (seed " << test::seed() << ")";
    }
  }
}

using ScatterFn = array (*)(const array&, const std::vector<array>&, const array&,
                            const std::vector<int>&, StreamOrDevice);
const std::vector<std::pair<ScatterReduce, ScatterFn>> kScatters = {
    {ScatterReduce::none, scatter},
    {ScatterReduce::sum, scatter_add},
    {ScatterReduce::prod, scatter_prod},
    {ScatterReduce::max, scatter_max},
    {ScatterReduce::min, scatter_min}};

/** Runs `f` and expects exception E whose message starts with `prefix`. */
template <typename E, typename F>
void expect_error(F&& f, const std::string& prefix) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one starting with " << prefix;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

}  // namespace

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

// ---------------------------------------------------------------- transforms

namespace {

/** sum(c * fn(inputs)) for real inputs, with c fixed: the scalar whose gradient is vjp(c). */
double dot(const array& x, const array& y) {
  auto a = values(x), b = values(y);
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] * b[i]).real();
  return s;
}

array perturbed(const array& x, size_t i, double h) {
  auto v = values(x);
  std::vector<double> r;
  for (auto c : v) r.push_back(c.real());
  r[i] += h;
  return array(r.begin(), x.shape(), x.dtype());
}

/**
 * Checks the primitive behind `build(inputs)` on float64 inputs: for the inputs in
 * `diff`, its vjp against central differences of <c, f>, its jvp against the directional
 * difference, and vjp/jvp against each other. Integer inputs must get zero vjps.
 */
void check_grads(const std::function<array(const std::vector<array>&)>& build,
                 const std::vector<array>& inputs, const std::vector<int>& diff) {
  const double h = 1e-6, tol = 1e-6;
  array out = build(inputs);
  auto prim = out.primitive_ptr();
  auto prim_inputs = out.inputs();
  array c = random_values(out.shape(), float64);
  std::vector<int> argnums;
  for (size_t i = 0; i < prim_inputs.size(); ++i) argnums.push_back(static_cast<int>(i));
  auto vjps = prim->vjp(prim_inputs, {c}, argnums, {out});
  // Finite differences through the op on the same inputs.
  for (int k : diff) {
    const array& g = vjps[k];
    ASSERT_EQ(g.shape(), prim_inputs[k].shape());
    auto gv = values(g);
    for (size_t i = 0; i < prim_inputs[k].size(); ++i) {
      auto plus = prim_inputs, minus = prim_inputs;
      plus[k] = perturbed(prim_inputs[k], i, h);
      minus[k] = perturbed(prim_inputs[k], i, -h);
      auto rebuild = [&](const std::vector<array>& in) {
        return array(out.shape(), out.dtype(), prim, in);
      };
      double fd = (dot(c, rebuild(plus)) - dot(c, rebuild(minus))) / (2 * h);
      EXPECT_NEAR(gv[i].real(), fd, tol * (1 + std::abs(fd))) << "input " << k << " element " << i;
    }
  }
  for (size_t k = 0; k < prim_inputs.size(); ++k) {
    if (is_integral(prim_inputs[k].dtype())) {
      for (auto v : values(vjps[k])) EXPECT_EQ(v, 0.0);
    }
  }
  // jvp with random tangents of the differentiable inputs; <c, J t> = sum <vjp_k, t_k>.
  std::vector<array> tangents;
  double want = 0.0;
  for (int k : diff) {
    tangents.push_back(random_values(prim_inputs[k].shape(), float64));
    want += dot(vjps[k], tangents.back());
  }
  auto jv = prim->jvp(prim_inputs, tangents, diff);
  ASSERT_EQ(jv[0].shape(), out.shape());
  EXPECT_NEAR(dot(c, jv[0]), want, tol * (1 + std::abs(want)));
}

}  // namespace

TEST(IndexingGrad, GatherIsLinearInTheSource) {
  // Repeated indices: the vjp sums their cotangents.
  array a = random_values({5, 4}, float64);
  array i0 = array({1, -4, 3, 1}, {4, 1}, int32), i1 = array({0, 2}, {1, 2}, int64);
  check_grads(
      [](const std::vector<array>& in) {
        return gather(in[0], {in[1], in[2]}, {0, 1}, {1, 2});
      },
      {a, i0, i1}, {0});
  array out = gather(a, {i0, i1}, {0, 1}, {1, 2});
  array c = random_values(out.shape(), float64);
  auto g = out.primitive().vjp(out.inputs(), {c}, {0}, {out})[0];
  // Reference: every cotangent element added at its source element.
  std::vector<cd> want(20, 0.0);
  auto cv = values(c);
  int64_t rows[4] = {1, 1, 3, 1}, cols[2] = {0, 2};
  for (int p = 0; p < 4; ++p)
    for (int q = 0; q < 2; ++q)
      for (int s = 0; s < 2; ++s) want[rows[p] * 4 + cols[q] + s] += cv[(p * 2 + q) * 2 + s];
  expect_values(g, {5, 4}, want, 1e-12);
}

TEST(IndexingGrad, ScatterEveryReduce) {
  array a = random_values({6, 3}, float64);
  // Distinct indices for `none` (a duplicate's loser has no derivative); repeats otherwise.
  array distinct = array({4, 0, -1}, int32);
  array repeats = array({4, 1, 4, -2, 1}, int32);
  for (auto [reduce, fn] : kScatters) {
    array idx = reduce == ScatterReduce::none ? distinct : repeats;
    array u = test::random_array({idx.shape(0), 1, 3}, float64, 0.5, 2.0);
    check_grads(
        [fn = fn](const std::vector<array>& in) { return fn(in[0], {in[1]}, in[2], {0}, {}); },
        {a, idx, u}, {0, 2});
  }
}

TEST(IndexingGrad, ScatterProdWithZeroUpdatesIsExact) {
  // Target 0 gets one zero update, target 2 two of them: d out / d u is the product of the
  // others, never a division by zero.
  array a = array({2.0, 3.0, 5.0}, float64);
  array idx = array({0, 0, 2, 2, 2}, int32);
  array u = array({0.0, 4.0, 0.0, 0.0, 7.0}, {5, 1}, float64);
  array out = scatter_prod(a, {idx}, u, {0});
  array c = array({1.0, 1.0, 1.0}, float64);
  auto g = out.primitive().vjp(out.inputs(), {c}, {0, 2}, {out});
  expect_values(g[0], {3}, {0.0, 1.0, 0.0}, 1e-12);
  expect_values(g[1], {5, 1}, {2.0 * 4.0, 0.0, 0.0, 0.0, 0.0}, 1e-12);
  array u2 = array({0.0, 4.0, 0.0, 6.0, 7.0}, {5, 1}, float64);
  out = scatter_prod(a, {idx}, u2, {0});
  g = out.primitive().vjp(out.inputs(), {c}, {2}, {out});
  expect_values(g[0], {5, 1}, {8.0, 0.0, 5.0 * 6 * 7, 0.0, 0.0}, 1e-12);
}

TEST(IndexingGrad, ScatterMaxTiesShareTheCotangent) {
  array a = array({1.0, 5.0}, float64);
  array idx = array({0, 0, 1}, int32);
  array u = array({3.0, 3.0, 2.0}, {3, 1}, float64);
  array out = scatter_max(a, {idx}, u, {0});
  array c = array({6.0, 4.0}, float64);
  auto g = out.primitive().vjp(out.inputs(), {c}, {0, 2}, {out});
  expect_values(g[0], {2}, {0.0, 4.0}, 1e-12);
  expect_values(g[1], {3, 1}, {3.0, 3.0, 0.0}, 1e-12);
}

TEST(IndexingGrad, AlongAxisPrimitives) {
  array a = random_values({3, 5}, float64);
  array idx = random_indices({3, 4}, int32, 5);
  check_grads([](const std::vector<array>& in) { return take_along_axis(in[0], in[1], 1); },
              {a, idx}, {0});
  // Distinct targets per row for put_along_axis; repeats for the accumulating form.
  array perm = array({0, 3, 4, 1, 2, 0}, {3, 2}, int32);
  array v = random_values({3, 2}, float64);
  check_grads([](const std::vector<array>& in) { return put_along_axis(in[0], in[1], in[2], 1); },
              {a, perm, v}, {0, 2});
  array rep = random_indices({3, 6}, int32, 5);
  array w = random_values({3, 6}, float64);
  check_grads(
      [](const std::vector<array>& in) {
        return detail::scatter_along_axis(ScatterReduce::sum, in[0], in[1], in[2], 1);
      },
      {a, rep, w}, {0, 2});
}

TEST(IndexingGrad, ThroughTheTransforms) {
  // End to end through grad: d/da sum(take(a, idx)^2) = 2 * counts * a.
  array a = random_values({6}, float64);
  array idx = array({5, 0, 5, -1, 2}, int32);
  auto g =
      grad([&](const std::vector<array>& in) { return sum(square(take(in[0], idx))); })({a})[0];
  auto av = values(a);
  std::vector<cd> want(6, 0.0);
  for (int i : {5, 0, 5, 5, 2}) want[i] += 2.0 * av[i];
  expect_values(g, {6}, want, 1e-12);
}

// ---------------------------------------------------------------- vmap

namespace {

/** One batch of a mapped array. */
array batch_of(const array& x, int axis, int b) {
  return axis < 0 ? x : take(x, b, axis);
}

/**
 * Checks the primitive behind `build(inputs)` against a loop: inputs mapped along `axes`
 * (-1: unmapped), every batch of the vmapped output equals the op on that batch's inputs.
 */
void check_vmap(const std::function<array(const std::vector<array>&)>& build,
                const std::vector<array>& batched, const std::vector<int>& axes, int batch,
                double rtol = 0.0) {
  std::vector<array> first;
  for (size_t i = 0; i < batched.size(); ++i) first.push_back(batch_of(batched[i], axes[i], 0));
  array proto = build(first);
  // The primitive's own inputs (broadcast/cast by the op) carry the mapped axes through
  // the same views: rebuild them batched from `build`'s argument order.
  auto [outs, out_axes] = proto.primitive().vmap(
      [&] {
        std::vector<array> in;
        auto pins = proto.inputs();
        for (size_t i = 0; i < pins.size(); ++i)
          in.push_back(i < batched.size() ? batched[i] : pins[i]);
        return in;
      }(),
      [&] {
        std::vector<int> ax(proto.inputs().size(), -1);
        for (size_t i = 0; i < axes.size() && i < ax.size(); ++i) ax[i] = axes[i];
        return ax;
      }());
  for (int b = 0; b < batch; ++b) {
    std::vector<array> in;
    for (size_t i = 0; i < batched.size(); ++i) in.push_back(batch_of(batched[i], axes[i], b));
    array want = build(in);
    array got = batch_of(outs[0], out_axes[0], b);
    expect_values(got, want.shape(), values(want), rtol);
  }
}

Shape with_batch(Shape s, int axis, int batch) {
  s.insert(s.begin() + axis, batch);
  return s;
}

}  // namespace

TEST(IndexingVmap, Gather) {
  const int B = 3;
  auto build = [](const std::vector<array>& in) {
    return gather(in[0], {in[1], in[2]}, {0, 2}, {1, 2, 1});
  };
  for (auto [aa, ia] :
       std::vector<std::pair<int, int>>{{0, -1}, {-1, 0}, {1, 1}, {2, 0}, {-1, 2}}) {
    array a = aa < 0 ? random_values({4, 3, 5}, float32)
                     : random_values(with_batch({4, 3, 5}, aa, B), float32);
    Shape is{2, 3};
    array i0 =
        ia < 0 ? random_indices(is, int32, 4) : random_indices(with_batch(is, ia, B), int32, 4);
    array i2 =
        ia < 0 ? random_indices(is, int64, 5) : random_indices(with_batch(is, ia, B), int64, 5);
    SCOPED_TRACE(testing::Message() << "source axis " << aa << ", index axis " << ia);
    check_vmap(build, {a, i0, i2}, {aa, ia, ia}, B);
  }
}

TEST(IndexingVmap, Scatter) {
  const int B = 3;
  for (auto [reduce, fn] : kScatters) {
    auto build = [fn = fn](const std::vector<array>& in) {
      return fn(in[0], {in[1]}, in[2], {1}, {});
    };
    for (auto [aa, ia, ua] : std::vector<std::tuple<int, int, int>>{{0, -1, -1},
                                                                    {-1, -1, 0},
                                                                    {1, -1, 3},
                                                                    {-1, 0, -1},
                                                                    {0, 1, 2},
                                                                    {2, 0, -1},
                                                                    {-1, 1, 0}}) {
      array a = aa < 0 ? random_values({4, 5}, float64)
                       : random_values(with_batch({4, 5}, aa, B), float64);
      Shape is{3};
      array idx =
          ia < 0 ? random_indices(is, int32, 5) : random_indices(with_batch(is, ia, B), int32, 5);
      Shape us{3, 4, 1};
      array u = ua < 0 ? random_values(us, float64) : random_values(with_batch(us, ua, B), float64);
      SCOPED_TRACE(testing::Message()
                   << "reduce " << int(reduce) << ", axes " << aa << " " << ia << " " << ua);
      if (reduce == ScatterReduce::none) {
        // Duplicates make `none` pick any update: compare with distinct indices only.
        array distinct = array({0, 4, 2}, int32);
        idx = ia < 0 ? distinct : broadcast_to(expand_dims(distinct, ia), idx.shape());
      }
      check_vmap(build, {a, idx, u}, {aa, ia, ua}, B, 1e-12);
    }
  }
}

TEST(IndexingVmap, AlongAxis) {
  const int B = 2;
  auto take_fn = [](const std::vector<array>& in) { return take_along_axis(in[0], in[1], 1); };
  auto put_fn = [](const std::vector<array>& in) { return put_along_axis(in[0], in[1], in[2], 1); };
  auto add_fn = [](const std::vector<array>& in) {
    return detail::scatter_along_axis(ScatterReduce::sum, in[0], in[1], in[2], 1);
  };
  for (auto [aa, ia] : std::vector<std::pair<int, int>>{{0, -1}, {-1, 0}, {2, 1}, {1, 2}}) {
    array a =
        aa < 0 ? random_values({3, 5}, float32) : random_values(with_batch({3, 5}, aa, B), float32);
    array idx = ia < 0 ? random_indices({3, 4}, int32, 5)
                       : random_indices(with_batch({3, 4}, ia, B), int32, 5);
    array v =
        ia < 0 ? random_values({3, 4}, float32) : random_values(with_batch({3, 4}, ia, B), float32);
    SCOPED_TRACE(testing::Message() << "source axis " << aa << ", index axis " << ia);
    check_vmap(take_fn, {a, idx}, {aa, ia}, B);
    check_vmap(add_fn, {a, idx, v}, {aa, ia, ia}, B, 1e-5);
    array perm = array({0, 3, 4, 1, 2, 0, 1, 3, 4, 2, 0, 1}, {3, 4}, int32);
    array p = ia < 0 ? perm : broadcast_to(expand_dims(perm, ia), idx.shape());
    check_vmap(put_fn, {a, p, v}, {aa, ia, ia}, B);
  }
}

TEST(IndexingVmap, ThroughTheTransforms) {
  // vmap over rows of a with a shared index array, and over index rows with a shared a.
  array a = random_values({4, 6}, float32);
  array idx = random_indices({4, 3}, int32, 6);
  auto rows = vmap([&](const array& x) { return take(x, array({5, 0, -1}, int32)); })(a);
  expect_values(rows, {4, 3}, values(take(a, array({5, 0, -1}, int32), 1)), 0.0);
  auto per = vmap([&](const array& x, const array& i) { return take(x, i); })(a, idx);
  expect_values(per, {4, 3}, values(take_along_axis(a, idx, 1)), 0.0);
}
