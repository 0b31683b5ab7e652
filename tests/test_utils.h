// Shared test helpers: fresh random inputs, float64 references, tolerances by dtype, and
// the device under test (KILN_DEVICE=cpu|gpu).
#pragma once

#include <sys/types.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string_view>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::test {

/** The calling thread's generator, seeded from std::random_device (printed on failure by the
 * environment in test_main; the first thread gets that seed's sequence, others a sequence
 * derived from it). Fresh inputs every run. */
std::mt19937_64& rng();
uint64_t seed();

/** Runs `f` and expects an exception of type E whose message contains every one of
 * `parts` (strings; empty ones are ignored); no exception, or one of another type, fails
 * the test. */
template <typename E, typename F, typename Parts>
void expect_throw_with(F&& f, const Parts& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string_view what = e.what();
    for (std::string_view p : parts) {
      EXPECT_NE(what.find(p), std::string_view::npos) << "'" << p << "' not in: " << what;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}
template <typename E, typename F>
void expect_throw_with(F&& f, std::initializer_list<std::string_view> parts) {
  expect_throw_with<E, F, std::initializer_list<std::string_view>>(std::forward<F>(f), parts);
}

/** Uniform values in [lo, hi) converted to `dtype` (integers round toward zero). */
array random_array(const Shape& shape, Dtype dtype, double lo = -2.0, double hi = 2.0);

/** The elements of `a` in row-major order as doubles (evaluates; honours strides). For
 * complex arrays, the real parts (use `to_complex`). */
std::vector<double> to_double(array a);
std::vector<std::complex<double>> to_complex(array a);

/** Offset (elements) of row-major element `i` of `a`. */
inline int64_t elem_to_loc_ref(size_t i, const array& a) {
  int64_t loc = 0, idx = static_cast<int64_t>(i);
  for (int d = static_cast<int>(a.ndim()) - 1; d >= 0; --d) {
    loc += (idx % a.shape()[d]) * a.strides()[d];
    idx /= a.shape()[d];
  }
  return loc;
}

/** Relative tolerance appropriate for results computed in `d`. */
double tolerance(Dtype d);

/** Expects `actual` (shape and values) to match `expected` within `tolerance(dtype)` (or
 * `rtol` when given): |a - e| <= rtol * (1 + |e|); NaN matches NaN; infinities must match. */
void expect_allclose(const array& actual, const Shape& shape, const std::vector<double>& expected,
                     double rtol = -1.0);

/** The stream tests run on: the default device (KILN_DEVICE picks it). */
Device test_device();

/** Applies `f` elementwise to `x`'s values (row-major), as a float64 reference. */
std::vector<double> map_ref(const std::vector<double>& x, const std::function<double(double)>& f);

/** Starts this test binary again with `--gtest_filter=filter` and the extra environment
 * `env` (NAME=value) before the inherited one; returns its pid, or -1 if it cannot start. */
pid_t spawn_self(const std::string& filter, const std::vector<std::string>& env);

}  // namespace kiln::test
