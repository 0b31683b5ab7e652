// Shared pieces of the indexing-op tests (test_indexing.cpp, test_indexing_transforms.cpp):
// host values and float64 references by plain loops over row-major values, random values
// and indices of every dtype, non-contiguous inputs and error checks.
#pragma once

#include <complex>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "host_index.h"
#include "kiln/primitives.h"
#include "test_utils.h"

using namespace kiln;
using cd = std::complex<double>;

namespace indexing_test {

using test::ravel;
using test::unravel;
using test::values;

// ---------------------------------------------------------------- host values

inline std::vector<int64_t> int_values(const array& a) {
  auto d = test::to_double(a);
  return {d.begin(), d.end()};
}

inline int64_t wrap(int64_t i, int64_t n) {
  return i < 0 ? i + n : i;
}

inline Shape concat(const Shape& a, const Shape& b) {
  Shape s = a;
  s.insert(s.end(), b.begin(), b.end());
  return s;
}

/** Expects `got` to have `shape` and values within rtol * (1 + |want|) of `want`. */
inline void expect_values(const array& got, const Shape& shape, const std::vector<cd>& want,
                          double rtol) {
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

inline const std::vector<Dtype> kIndexDtypes = {int8,  int16,  int32,  int64,
                                                uint8, uint16, uint32, uint64};

/** Values of `dtype` that keep integer sums and products small. */
inline array random_values(const Shape& shape, Dtype dtype) {
  if (dtype == bool_ || !is_integral(dtype)) return test::random_array(shape, dtype);
  if (is_unsigned(dtype)) return test::random_array(shape, dtype, 0.0, 4.0);
  return test::random_array(shape, dtype, -3.0, 4.0);
}

/** Indices of `dtype` valid for an axis of `size` with a slice of `slice`: non-negative
 * [0, size - slice] and, for signed types, negative [-size, -slice]. */
inline array random_indices(const Shape& shape, Dtype dtype, int64_t size, int64_t slice = 1) {
  std::uniform_int_distribution<int64_t> pos(0, size - slice), neg(-size, -slice);
  std::bernoulli_distribution coin(0.5);
  std::vector<int64_t> v(shape_size(shape));
  for (auto& x : v)
    x = is_signed_integer(dtype) && coin(test::rng()) ? neg(test::rng()) : pos(test::rng());
  return array(v.begin(), shape, dtype);
}

/** Fresh views of `shape` that are not row-contiguous: transposed, strided, broadcast. */
inline std::vector<array> noncontiguous(const Shape& shape,
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
inline double rtol_for(Dtype dtype, int terms = 1) {
  return test::tolerance(dtype) * terms;
}

// ---------------------------------------------------------------- references

/** take along `axis`: a[:axis] + P + a[axis+1:]. */
inline std::vector<cd> ref_take(const array& a, const array& idx, int axis) {
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

inline GatherCase broadcast_indices(const std::vector<array>& indices) {
  GatherCase g;
  g.pshape = broadcast_shapes(indices);
  for (auto& i : indices) g.idx.push_back(int_values(broadcast_to(i, g.pshape)));
  return g;
}

/** The start of the slice selected by position n. */
inline std::vector<int64_t> start_of(const GatherCase& g, int64_t n, const std::vector<int>& axes,
                                     const Shape& ashape) {
  std::vector<int64_t> start(ashape.size(), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    int ax = axes[k] < 0 ? axes[k] + static_cast<int>(ashape.size()) : axes[k];
    start[ax] = wrap(g.idx[k][n], ashape[ax]);
  }
  return start;
}

inline std::vector<cd> ref_gather(const array& a, const std::vector<array>& indices,
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
inline cd stored(Dtype dtype, cd v) {
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

inline ScatterRef ref_scatter(ScatterReduce reduce, const array& a,
                              const std::vector<array>& indices, const array& updates,
                              const std::vector<int>& axes) {
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
inline void expect_scatter(ScatterReduce reduce, const array& got, const ScatterRef& want,
                           double rtol) {
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
inline const std::vector<std::pair<ScatterReduce, ScatterFn>> kScatters = {
    {ScatterReduce::none, scatter},
    {ScatterReduce::sum, scatter_add},
    {ScatterReduce::prod, scatter_prod},
    {ScatterReduce::max, scatter_max},
    {ScatterReduce::min, scatter_min}};

/** Runs `f` and expects exception E whose message starts with `prefix`. */
template <typename E, typename F>
inline void expect_error(F&& f, const std::string& prefix) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one starting with " << prefix;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

}  // namespace indexing_test
