// Shared pieces of the layout-op tests (test_layout.cpp, test_layout_join.cpp): host
// references built from row-major values by index arithmetic, the non-contiguous inputs
// every op is checked on, and the transformation checks (vjp adjoint to jvp, central
// differences, vmap against a loop).
#pragma once

#include <complex>
#include <limits>
#include <numeric>
#include <string>

#include "host_index.h"
#include "kiln/primitives.h"
#include "test_utils.h"

using namespace kiln;
using cd = std::complex<double>;

namespace layout_test {

using test::ravel;
using test::unravel;
using test::values;

// ---------------------------------------------------------------- host references

/** Row-major values and a shape, computed on the host. */
struct Ref {
  Shape shape;
  std::vector<cd> v;
};

inline Ref ref_of(const array& a) {
  return {a.shape(), values(a)};
}

/** out[idx] = src[map(idx)] over `shape`. */
template <typename F>
Ref gather_ref(const Shape& shape, const Ref& src, F map) {
  Ref out{shape, std::vector<cd>(shape_size(shape))};
  for (size_t i = 0; i < out.v.size(); ++i)
    out.v[i] = src.v[ravel(map(unravel(i, shape)), src.shape)];
  return out;
}

inline Ref ref_transpose(const Ref& r, const std::vector<int>& perm) {
  Shape shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) shape[i] = r.shape[perm[i]];
  return gather_ref(shape, r, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> in(idx.size());
    for (size_t i = 0; i < perm.size(); ++i) in[perm[i]] = idx[i];
    return in;
  });
}

/** The indices Python's range(n)[start:stop:step] takes, written as a plain walk. */
inline std::vector<int64_t> python_indices(int64_t n, int64_t start, int64_t stop, int64_t step) {
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

inline Ref ref_slice(const Ref& r, const Shape& start, const Shape& stop, const Shape& steps) {
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

inline Ref ref_broadcast(const Ref& r, const Shape& shape) {
  size_t added = shape.size() - r.shape.size();
  return gather_ref(shape, r, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> in(r.shape.size());
    for (size_t d = 0; d < in.size(); ++d) in[d] = r.shape[d] == 1 ? 0 : idx[d + added];
    return in;
  });
}

inline Ref ref_concat(const std::vector<Ref>& parts, int axis) {
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
inline void expect_values(const array& a, const Ref& r, const std::string& what = "",
                          double rtol = 0) {
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
inline std::vector<Input> layouts(const Shape& shape, Dtype dtype, double lo = -2, double hi = 2) {
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

inline bool shares_buffer(const array& a, const array& b) {
  return a.storage_ptr() == b.storage_ptr();
}

template <typename F>
void expect_invalid(F&& f, const std::string& tag) {
  test::expect_throw_with<std::invalid_argument>(f, {tag});
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

inline double dot(const array& a, const array& b) {
  auto x = values(a), y = values(b);
  EXPECT_EQ(x.size(), y.size());
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (x[i] * std::conj(y[i])).real();
  return s;
}

// x + eps * t, on the host in float64.
inline array axpy(const array& x, const array& t, double eps) {
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
inline void check_grads(const array& y, std::vector<int> argnums = {}, double rtol = 1e-9) {
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
inline array take_along(const array& x, int axis, int b) {
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
inline void check_vmap(const array& y, const std::vector<int>& axes, int n = 3) {
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

}  // namespace layout_test
