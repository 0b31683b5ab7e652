// Layout ops: conversions, copies, views (reshape, transpose, broadcast, slice, as_strided),
// and joining, splitting, tiling and padding. Every op is checked against a host reference
// built from the row-major values of a plain base array by index arithmetic alone, on every
// dtype, on non-contiguous inputs (transposed, strided, reversed, broadcast), on empty
// arrays, with negative axes, and on each argument check. Transformations (jvp, vjp, vmap)
// are checked through the primitives directly: layout ops are linear, so the vjp must be
// the adjoint of the jvp, both must match central differences, and vmap must equal a loop.
#include <complex>
#include <limits>
#include <numeric>
#include <string>

#include "kiln/primitives.h"
#include "test_utils.h"

using namespace kiln;
using cd = std::complex<double>;

namespace {

// ---------------------------------------------------------------- host references

/** Row-major values and a shape, computed on the host. */
struct Ref {
  Shape shape;
  std::vector<cd> v;
};

std::vector<cd> values(const array& a) {
  if (a.dtype() == complex64) return test::to_complex(a);
  auto d = test::to_double(a);
  return {d.begin(), d.end()};
}

Ref ref_of(const array& a) {
  return {a.shape(), values(a)};
}

std::vector<int64_t> unravel(size_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = static_cast<int64_t>(i % shape[d]);
    i /= shape[d];
  }
  return idx;
}

size_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  size_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

/** out[idx] = src[map(idx)] over `shape`. */
template <typename F>
Ref gather_ref(const Shape& shape, const Ref& src, F map) {
  Ref out{shape, std::vector<cd>(shape_size(shape))};
  for (size_t i = 0; i < out.v.size(); ++i)
    out.v[i] = src.v[ravel(map(unravel(i, shape)), src.shape)];
  return out;
}

Ref ref_transpose(const Ref& r, const std::vector<int>& perm) {
  Shape shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) shape[i] = r.shape[perm[i]];
  return gather_ref(shape, r, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> in(idx.size());
    for (size_t i = 0; i < perm.size(); ++i) in[perm[i]] = idx[i];
    return in;
  });
}

/** The indices Python's range(n)[start:stop:step] takes, written as a plain walk. */
std::vector<int64_t> python_indices(int64_t n, int64_t start, int64_t stop, int64_t step) {
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  std::vector<int64_t> out;
  if (step > 0) {
    for (int64_t x = std::max<int64_t>(start, 0); x < std::min(stop, n); x += step)
      out.push_back(x);
  } else {
    for (int64_t x = std::min(start, n - 1); x > std::max<int64_t>(stop, -1); x += step) {
      out.push_back(x);
    }
  }
  return out;
}

Ref ref_slice(const Ref& r, const Shape& start, const Shape& stop, const Shape& steps) {
  std::vector<std::vector<int64_t>> taken;
  Shape shape;
  for (size_t d = 0; d < r.shape.size(); ++d) {
    taken.push_back(python_indices(r.shape[d], start[d], stop[d], steps[d]));
    shape.push_back(static_cast<int32_t>(taken.back().size()));
  }
  return gather_ref(shape, r, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> in(idx.size());
    for (size_t d = 0; d < idx.size(); ++d) in[d] = taken[d][idx[d]];
    return in;
  });
}

Ref ref_broadcast(const Ref& r, const Shape& shape) {
  size_t added = shape.size() - r.shape.size();
  return gather_ref(shape, r, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> in(r.shape.size());
    for (size_t d = 0; d < in.size(); ++d) in[d] = r.shape[d] == 1 ? 0 : idx[d + added];
    return in;
  });
}

Ref ref_concat(const std::vector<Ref>& parts, int axis) {
  Shape shape = parts[0].shape;
  shape[axis] = 0;
  for (auto& p : parts) shape[axis] += p.shape[axis];
  Ref out{shape, std::vector<cd>(shape_size(shape))};
  for (size_t i = 0; i < out.v.size(); ++i) {
    auto idx = unravel(i, shape);
    size_t k = 0;
    while (idx[axis] >= parts[k].shape[axis]) idx[axis] -= parts[k++].shape[axis];
    out.v[i] = parts[k].v[ravel(idx, parts[k].shape)];
  }
  return out;
}

/** Expects `a` to have the reference's shape and values (exactly unless rtol > 0). */
void expect_values(const array& a, const Ref& r, const std::string& what = "", double rtol = 0) {
  ASSERT_EQ(a.shape(), r.shape) << what;
  auto got = values(a);
  ASSERT_EQ(got.size(), r.v.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    auto close = [&](double g, double e) {
      if (std::isnan(e)) return std::isnan(g);
      return rtol > 0 ? std::abs(g - e) <= rtol * (1 + std::abs(e)) : g == e;
    };
    if (!(close(got[i].real(), r.v[i].real()) && close(got[i].imag(), r.v[i].imag())) &&
        reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << r.v[i]
                    << " (dtype " << a.dtype() << ", seed " << test::seed() << ")";
    }
  }
}

// ---------------------------------------------------------------- inputs

/** An input of a given shape laid out in one of several ways, with its reference. */
struct Input {
  std::string name;
  array a;
  Ref ref;
};

/** The same logical shape as a contiguous array, a transposed view, a view with step 2 on
 * the last axis, a view reversed along axis 0, and a broadcast view (where the shape
 * allows each). */
std::vector<Input> layouts(const Shape& shape, Dtype dtype, double lo = -2, double hi = 2) {
  std::vector<Input> out;
  const int nd = static_cast<int>(shape.size());
  array base = test::random_array(shape, dtype, lo, hi);
  out.push_back({"contiguous", base, ref_of(base)});
  if (nd >= 2) {
    Shape rev(shape.rbegin(), shape.rend());
    std::vector<int> perm(nd);
    std::iota(perm.rbegin(), perm.rend(), 0);
    array b = test::random_array(rev, dtype, lo, hi);
    out.push_back({"transposed", transpose(b, perm), ref_transpose(ref_of(b), perm)});
  }
  if (nd >= 1) {
    Shape wide = shape;
    wide.back() = 2 * shape.back();
    array b = test::random_array(wide, dtype, lo, hi);
    Shape start(nd, 0), steps(nd, 1);
    steps.back() = 2;
    out.push_back(
        {"strided", slice(b, start, wide, steps), ref_slice(ref_of(b), start, wide, steps)});

    array r = test::random_array(shape, dtype, lo, hi);
    Shape rstart(nd, 0), rstop = shape, rsteps(nd, 1);
    rstart[0] = shape[0] - 1;
    rstop[0] = -shape[0] - 1;
    rsteps[0] = -1;
    out.push_back(
        {"reversed", slice(r, rstart, rstop, rsteps), ref_slice(ref_of(r), rstart, rstop, rsteps)});
  }
  if (nd >= 1 && shape[0] != 1) {
    Shape one = shape;
    one[0] = 1;
    array b = test::random_array(one, dtype, lo, hi);
    out.push_back({"broadcast", broadcast_to(b, shape), ref_broadcast(ref_of(b), shape)});
  }
  return out;
}

bool shares_buffer(const array& a, const array& b) {
  return a.storage_ptr() == b.storage_ptr();
}

template <typename F>
void expect_invalid(F&& f, const std::string& tag) {
  try {
    f();
    ADD_FAILURE() << "expected std::invalid_argument with " << tag;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(tag), std::string::npos)
        << "message '" << e.what() << "' lacks " << tag;
  }
}

// A computed dimension beyond int32 is an overflow (Python's OverflowError, as MLX).
template <typename F>
void expect_overflow(F&& f, const std::string& tag) {
  try {
    f();
    ADD_FAILURE() << "expected std::overflow_error with " << tag;
  } catch (const std::overflow_error& e) {
    EXPECT_NE(std::string(e.what()).find(tag), std::string::npos)
        << "message '" << e.what() << "' lacks " << tag;
  }
}

// ---------------------------------------------------------------- transformations

double dot(const array& a, const array& b) {
  auto x = values(a), y = values(b);
  EXPECT_EQ(x.size(), y.size());
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (x[i] * std::conj(y[i])).real();
  return s;
}

// x + eps * t, on the host in float64.
array axpy(const array& x, const array& t, double eps) {
  auto xv = test::to_double(x), tv = test::to_double(t);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] += eps * tv[i];
  return array(xv.begin(), x.shape(), float64);
}

/**
 * For the (linear) node `y` with float64 inputs: with random tangents t and cotangent c,
 * expects <c, jvp(t)> == sum_i <vjp_i(c), t_i> == the central difference of <c, y(x)>
 * along t, for the inputs in `argnums` (relative tolerance `rtol`; the finite difference
 * gets 1000 times more).
 */
void check_grads(const array& y, std::vector<int> argnums = {}, double rtol = 1e-9) {
  ASSERT_TRUE(y.has_primitive());
  auto prim = y.primitive_ptr();
  std::vector<array> ins = y.inputs();
  if (argnums.empty()) {
    argnums.resize(ins.size());
    std::iota(argnums.begin(), argnums.end(), 0);
  }
  std::vector<array> tangents;
  for (int i : argnums) {
    ASSERT_EQ(ins[i].dtype(), float64);
    tangents.push_back(test::random_array(ins[i].shape(), float64));
  }
  array c = test::random_array(y.shape(), float64);
  auto jv = prim->jvp(ins, tangents, argnums);
  auto vj = prim->vjp(ins, {c}, argnums, {y});
  ASSERT_EQ(jv.size(), 1u);
  ASSERT_EQ(vj.size(), argnums.size());
  double forward = dot(c, jv[0]), backward = 0;
  for (size_t k = 0; k < argnums.size(); ++k) {
    EXPECT_EQ(vj[k].shape(), ins[argnums[k]].shape()) << prim->name();
    backward += dot(vj[k], tangents[k]);
  }
  const double eps = 1e-3;
  auto shifted = [&](double sign) {
    std::vector<array> xs = ins;
    for (size_t k = 0; k < argnums.size(); ++k) {
      xs[argnums[k]] = axpy(ins[argnums[k]], tangents[k], sign * eps);
    }
    return dot(c, array(y.shape(), y.dtype(), prim, xs));
  };
  double central = (shifted(1) - shifted(-1)) / (2 * eps);
  double scale = 1 + std::abs(forward);
  EXPECT_NEAR(forward, backward, rtol * scale) << prim->name() << " vjp is not the adjoint";
  EXPECT_NEAR(forward, central, std::max(1e-6, 1e3 * rtol) * scale)
      << prim->name() << " jvp vs central difference";
}

/** The slice of `x` at index b of `axis`, without that axis. */
array take_along(const array& x, int axis, int b) {
  Shape start(x.ndim(), 0), stop = x.shape();
  start[axis] = b;
  stop[axis] = b + 1;
  return squeeze(slice(x, start, stop), axis);
}

/**
 * Vectorizes node `y` over batched versions of its inputs: input i gets `n` examples along
 * axes[i] (or stays shared when -1). Expects example b of the vmap output to equal the
 * primitive applied to example b of each input.
 */
void check_vmap(const array& y, const std::vector<int>& axes, int n = 3) {
  ASSERT_TRUE(y.has_primitive());
  auto prim = y.primitive_ptr();
  std::vector<array> ins = y.inputs(), batched;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (axes[i] < 0) {
      batched.push_back(ins[i]);
      continue;
    }
    Shape shape = ins[i].shape();
    shape.insert(shape.begin() + axes[i], n);
    batched.push_back(test::random_array(shape, ins[i].dtype()));
  }
  auto [outs, out_axes] = prim->vmap(batched, axes);
  ASSERT_EQ(outs.size(), 1u);
  for (int b = 0; b < n; ++b) {
    std::vector<array> example;
    for (size_t i = 0; i < ins.size(); ++i) {
      example.push_back(axes[i] < 0 ? batched[i] : take_along(batched[i], axes[i], b));
    }
    array expected(y.shape(), y.dtype(), prim, example);
    array got = out_axes[0] < 0 ? outs[0] : take_along(outs[0], out_axes[0], b);
    expect_values(got, ref_of(expected),
                  std::string(prim->name()) + " vmap example " + std::to_string(b));
  }
}

// Runs `f`, skipping the test when it needs an op of a family that has not landed yet.
template <typename F>
void unless_pending(F&& f) {
  try {
    f();
  } catch (const std::logic_error& e) {
    if (dynamic_cast<const std::invalid_argument*>(&e)) throw;
    GTEST_SKIP() << "depends on an op not implemented yet: " << e.what();
  }
}

}  // namespace

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
  unless_pending([&] { check_grads(broadcast_to(x, {2, 4, 3})); });
  array z = test::random_array({10}, float64);
  unless_pending([&] { check_grads(as_strided(z, {4, 3}, {2, 1}, 1)); });
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
