// Random samplers: argument checks, keys, and the compositions of RandomBits with
// elementwise ops that MLX's samplers are (mlx/random.cpp), op for op, so that every
// intermediate rounds as MLX's does and a key gives MLX's numbers.
#include "kiln/random.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>

#include "kiln/ops.h"
#include "kiln/ops_complex.h"
#include "kiln/primitives_random.h"
#include "kiln/utils.h"

// multivariate_normal takes the square root of the covariance by an SVD, as MLX does; until
// kiln::linalg (kiln/linalg.h, MLX's linalg API) is in the build, it raises instead.
#if __has_include("kiln/linalg.h")
#include "kiln/linalg.h"
#define KILN_RANDOM_HAS_SVD 1
#endif

namespace kiln::random {

namespace {

// The global key. It advances on the host, as split(key) -> (kept, returned) would, so
// samplers without a key leave no growing chain of splits in the graph.
class KeySequence {
 public:
  explicit KeySequence(uint64_t s) { seed(s); }

  void seed(uint64_t s) {
    std::lock_guard lk(mu_);
    k0_ = static_cast<uint32_t>(s >> 32);
    k1_ = static_cast<uint32_t>(s);
  }

  // The current key's words, and setting them (the host path of an installed KeyStore).
  std::pair<uint32_t, uint32_t> get() {
    std::lock_guard lk(mu_);
    return {k0_, k1_};
  }
  void set(uint32_t k0, uint32_t k1) {
    std::lock_guard lk(mu_);
    k0_ = k0;
    k1_ = k1;
  }

  array next() {
    std::lock_guard lk(mu_);
    auto [kept, out] = random_impl::split2(k0_, k1_);
    k0_ = kept.x0;
    k1_ = kept.x1;
    return array({out.x0, out.x1}, uint32);
  }

 private:
  std::mutex mu_;
  uint32_t k0_ = 0, k1_ = 0;
};

KeySequence& global_keys() {
  static auto* keys =
      new KeySequence(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count()));
  return *keys;
}

void check_key(const array& key, const char* op) {
  if (key.dtype() != uint32 || key.ndim() != 1 || key.shape(0) != 2) {
    throw std::invalid_argument(msg("[", op, "] A key must be a uint32 array of shape (2,); got ",
                                    key.dtype(), " of shape ", shape_str(key.shape()), "."));
  }
}

// The caller's key, or the next one of the global sequence. Called after every other check,
// so a rejected call leaves the global key where it was.
std::mutex& key_store_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::shared_ptr<KeyStore>& key_store_slot() {
  static auto* s = new std::shared_ptr<KeyStore>;
  return *s;
}
std::shared_ptr<KeyStore> installed_key_store() {
  std::lock_guard lk(key_store_mutex());
  return key_store_slot();
}

// The next key of the global sequence: kiln's own, or the installed store's. A store's key
// that is computed advances on the host as kiln's does; one that is still lazy or traced
// (compile capturing the state) advances in the graph, as split(key) -> (kept, returned).
array next_global_key() {
  auto st = installed_key_store();
  if (!st) return global_keys().next();
  array k = st->load();
  check_key(k, "random");
  if (k.is_available() && !k.is_tracer() && !k.error() && k.has_storage()) {
    const uint32_t* p = k.data<uint32_t>();
    KeySequence seq(0);
    seq.set(p[0], p[k.strides()[0]]);
    array out = seq.next();
    auto [k0, k1] = seq.get();
    st->store(array({k0, k1}, uint32));
    return out;
  }
  auto [kept, out] = split(k);
  st->store(kept);
  return out;
}

array resolve_key(const KeyArg& key, const char* op) {
  if (!key) return next_global_key();
  check_key(*key, op);
  return *key;
}

void check_shape(const Shape& shape, const char* op) {
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument(
          msg("[", op, "] Negative dimension in shape ", shape_str(shape), "."));
    }
  }
}

void check_floating(Dtype dtype, const char* op) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        msg("[", op, "] dtype must be a real floating-point type; got ", dtype, "."));
  }
}

// axis in [-ndim, ndim), made non-negative; IndexError otherwise, as MLX's samplers raise.
int checked_axis(int axis, int ndim, const char* op, const char* what) {
  if (axis < -ndim || axis >= ndim) {
    throw std::out_of_range(msg("[", op, "] Axis ", axis, " is out of bounds for ", what, " with ",
                                ndim, " dimensions."));
  }
  return axis < 0 ? axis + ndim : axis;
}

// `from` must broadcast to `shape` without enlarging it.
void check_broadcast_to(const Shape& from, const Shape& shape, const char* op, const char* what) {
  bool ok = from.size() <= shape.size();
  for (size_t i = 1; ok && i <= from.size(); ++i) {
    int df = from[from.size() - i], ds = shape[shape.size() - i];
    ok = df == ds || df == 1;
  }
  if (!ok) {
    throw std::invalid_argument(msg("[", op, "] ", what, " of shape ", shape_str(from),
                                    " cannot be broadcast to shape ", shape_str(shape), "."));
  }
}

// ---------------------------------------------------------------- samplers on a resolved key
// Arguments are checked by the public functions; these build the graph.

array make_bits(const Shape& shape, int width, const array& key, const Stream& s) {
  return array(shape, RandomBits::bits_dtype(width), std::make_shared<RandomBits>(s, shape, width),
               {key});
}

// The largest value below 1 in `dtype` (for the half types, as a float32 array: MLX clamps
// u in float32 before rounding it to the half type).
array below_one(Dtype dtype) {
  if (dtype == float16) return array(static_cast<float>(float16_t::from_bits(0x3BFF)), float32);
  if (dtype == bfloat16) return array(static_cast<float>(bfloat16_t::from_bits(0x3F7F)), float32);
  if (dtype == float64) return array(std::nextafter(1.0, 0.0), float64);
  return array(std::nextafter(1.0f, 0.0f), float32);
}

// MLX's uniform: range * u + low in `dtype`, with u = min(bits / 2^32, below_one) in float32
// rounded to `dtype`. float64 (not in MLX) takes u from 64-bit words.
array uniform_from_key(const array& low, const array& high, const Shape& shape, Dtype dtype,
                       const array& key, const Stream& s) {
  array lo = astype(low, dtype, s);
  array range = subtract(astype(high, dtype, s), lo, s);
  array u(0.0f);
  if (dtype == float64) {
    u = divide(astype(make_bits(shape, 8, key, s), float64, s), array(0x1p64, float64), s);
    u = minimum(u, below_one(float64), s);
  } else {
    // uint32 -> float32 rounds to nearest; the largest word gives exactly 1.
    u = divide(astype(make_bits(shape, 4, key, s), float32, s), array(0x1p32f, float32), s);
    u = astype(minimum(u, below_one(dtype), s), dtype, s);
  }
  return add(multiply(range, u, s), lo, s);
}

array erf_f32(const array& x, const Stream& s) {
  return array(x.shape(), x.dtype(), std::make_shared<ErfF32>(s), {x});
}

array erfinv_f32(const array& x, const Stream& s) {
  return array(x.shape(), x.dtype(), std::make_shared<ErfInvF32>(s), {x});
}

// u uniform in float32 on [nextafter(-1, 0), 1): where normal and laplace start.
array symmetric_unit(const Shape& shape, const array& key, const Stream& s) {
  return uniform_from_key(array(std::nextafter(-1.0f, 0.0f)), array(1.0f), shape, float32, key, s);
}

array normal_from_key(const Shape& shape, Dtype dtype, const std::optional<array>& loc,
                      const std::optional<array>& scale, const array& key, const Stream& s) {
  if (dtype == complex64) {
    // Real and imaginary parts from consecutive pairs of samples (MLX views the (..., 2)
    // float32 samples as complex64), without the sqrt(2): each part has variance 1/2.
    Shape pairs = shape;
    pairs.push_back(2);
    array e = erfinv_f32(symmetric_unit(pairs, key, s), s);
    array re = take(e, 0, -1, s), im = take(e, 1, -1, s);
    array z = detail::complex_from_parts(re, im, s);
    if (scale) z = multiply(*scale, z, s);
    if (loc) z = add(*loc, z, s);
    return z;
  }
  array applied_scale(std::sqrt(2.0), dtype);
  if (scale) applied_scale = multiply(applied_scale, astype(*scale, dtype, s), s);
  array z = astype(erfinv_f32(symmetric_unit(shape, key, s), s), dtype, s);
  z = multiply(applied_scale, z, s);
  if (loc) z = add(astype(*loc, dtype, s), z, s);
  return z;
}

array gumbel_from_key(const Shape& shape, Dtype dtype, const array& key, const Stream& s) {
  array u = uniform_from_key(array(0.0, dtype), array(1.0, dtype), shape, dtype, key, s);
  return negative(log(negative(log(u, s), s), s), s);
}

// MLX's categorical: argmax over `axis` of float32 Gumbel noise of `shape` with the category
// axis inserted (counted from the right as in logits) plus the logits.
array categorical_from_key(const array& logits, int axis, const Shape& shape, const array& key,
                           const Stream& s) {
  Shape noise_shape = shape;
  const int pos = axis + static_cast<int>(shape.size()) - static_cast<int>(logits.ndim()) + 1;
  noise_shape.insert(noise_shape.begin() + pos, logits.shape(axis));
  array g = gumbel_from_key(noise_shape, float32, key, s);
  return argmax(add(g, logits, s), pos, false, s);
}

// MLX's categorical for one distribution and num_samples: inverse-CDF sampling. Weights
// exp(logit - max) (or, when the max is infinite, 1 where a logit equals it) in float32 at
// least; category i is drawn when u * sum(w) falls in [c_i, c_i + w_i) of the exclusive
// cumulative sum c: the count of c_j <= u * sum(w), minus 1. MLX binary-searches the
// sorted c (searchsorted, right side: the same number in O(C + num_samples) memory); kiln
// has no searchsorted yet, so the count compares every (sample, category) pair, which costs
// the memory of the Gumbel path. `shape` is the result's.
array categorical_by_cdf(const array& logits, const Shape& shape, const array& key,
                         const Stream& s) {
  const Dtype ft = promote_types(logits.dtype(), float32);
  array x = astype(reshape(logits, {static_cast<int>(logits.size())}, s), ft, s);
  array m = max(x, false, s);
  const float inf = std::numeric_limits<float>::infinity();
  array infinite = logical_or(equal(m, array(inf), s), equal(m, array(-inf), s), s);
  array w = where(infinite, astype(equal(x, m, s), ft, s), exp(subtract(x, m, s), s), s);
  array c = cumsum(w, 0, /*reverse=*/false, /*inclusive=*/false, s);
  array u = uniform_from_key(array(0.0f), array(1.0f), shape, float32, key, s);
  array target = multiply(u, sum(w, false, s), s);
  array count = sum(less_equal(c, expand_dims(target, -1, s), s), -1, false, s);
  return subtract(astype(count, uint32, s), array(1u), s);
}

array permutation_from_key(int n, const array& key, const Stream& s) {
  return argsort(make_bits({n}, 4, key, s), s);
}

}  // namespace

// ---------------------------------------------------------------- keys

array key(uint64_t seed) {
  return array({static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed)}, uint32);
}

void seed(uint64_t seed) {
  global_keys().seed(seed);
  if (auto st = installed_key_store()) st->store(key(seed));
}

array split(const array& key, int num, StreamOrDevice s) {
  if (num < 0) {
    throw std::invalid_argument(
        msg("[split] The number of keys must be non-negative; got ", num, "."));
  }
  check_key(key, "split");
  return make_bits({num, 2}, 4, key, to_stream(s));
}

std::pair<array, array> split(const array& key, StreamOrDevice s) {
  auto stream = to_stream(s);
  array keys = random::split(key, 2, stream);
  return {reshape(slice(keys, {0, 0}, {1, 2}, stream), {2}, stream),
          reshape(slice(keys, {1, 0}, {2, 2}, stream), {2}, stream)};
}

array bits(const Shape& shape, const array& key, StreamOrDevice s) {
  return bits(shape, 4, key, s);
}

array bits(const Shape& shape, int width, const KeyArg& key, StreamOrDevice s) {
  if (width != 1 && width != 2 && width != 4 && width != 8) {
    throw std::invalid_argument(msg("[bits] width must be 1, 2, 4 or 8 bytes; got ", width, "."));
  }
  check_shape(shape, "bits");
  return make_bits(shape, width, resolve_key(key, "bits"), to_stream(s));
}

// ---------------------------------------------------------------- uniform and normal

array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype,
              const KeyArg& key, StreamOrDevice s) {
  check_floating(dtype, "uniform");
  check_shape(shape, "uniform");
  check_broadcast_to(low.shape(), shape, "uniform", "low");
  check_broadcast_to(high.shape(), shape, "uniform", "high");
  return uniform_from_key(low, high, shape, dtype, resolve_key(key, "uniform"), to_stream(s));
}

array uniform(const Shape& shape, Dtype dtype, const KeyArg& key, StreamOrDevice s) {
  check_floating(dtype, "uniform");
  return uniform(array(0.0, dtype), array(1.0, dtype), shape, dtype, key, s);
}

array uniform(const Shape& shape, const array& key, StreamOrDevice s) {
  return uniform(shape, float32, key, s);
}

array normal_impl(const Shape& shape, Dtype dtype, const std::optional<array>& loc,
                  const std::optional<array>& scale, const KeyArg& key, StreamOrDevice s) {
  if (!is_floating_point(dtype) && dtype != complex64) {
    throw std::invalid_argument(
        msg("[normal] dtype must be a real floating-point type or complex64; got ", dtype, "."));
  }
  check_shape(shape, "normal");
  return normal_from_key(shape, dtype, loc, scale, resolve_key(key, "normal"), to_stream(s));
}

array normal(const Shape& shape, Dtype dtype, float loc, float scale, const KeyArg& key,
             StreamOrDevice s) {
  // MLX's convention: a zero loc and a unit scale add no operation.
  auto as_array = [&](float v, float neutral) {
    return v == neutral ? std::nullopt : std::optional<array>(array(v, dtype));
  };
  return normal_impl(shape, dtype, as_array(loc, 0.0f), as_array(scale, 1.0f), key, s);
}

array normal(const Shape& shape, Dtype dtype, const KeyArg& key, StreamOrDevice s) {
  return normal_impl(shape, dtype, std::nullopt, std::nullopt, key, s);
}

array normal(const Shape& shape, const array& key, StreamOrDevice s) {
  return normal_impl(shape, float32, std::nullopt, std::nullopt, key, s);
}

array multivariate_normal(const array& mean, const array& cov, const Shape& shape, Dtype dtype,
                          const KeyArg& key, StreamOrDevice s) {
  const char* op = "multivariate_normal";
  if (dtype != float32) {
    throw std::invalid_argument(msg("[", op, "] dtype must be float32; got ", dtype, "."));
  }
  if (mean.ndim() < 1) {
    throw std::invalid_argument(msg("[", op, "] mean must have at least one dimension."));
  }
  if (cov.ndim() < 2) {
    throw std::invalid_argument(
        msg("[", op, "] cov must have at least two dimensions; got ", shape_str(cov.shape()), "."));
  }
  const int n = mean.shape(-1);
  if (cov.shape(-1) != cov.shape(-2)) {
    throw std::invalid_argument(msg("[", op, "] The last two dimensions of cov must be equal; got ",
                                    shape_str(cov.shape()), "."));
  }
  if (cov.shape(-1) != n) {
    throw std::invalid_argument(msg("[", op, "] mean of shape ", shape_str(mean.shape()),
                                    " and cov of shape ", shape_str(cov.shape()),
                                    " have different sizes n."));
  }
  check_shape(shape, op);
  Shape out_shape = broadcast_shapes(Shape(cov.shape().begin(), cov.shape().end() - 2),
                                     Shape(mean.shape().begin(), mean.shape().end() - 1), op);
  out_shape = broadcast_shapes(out_shape, shape, op);
  out_shape.push_back(n);
#ifdef KILN_RANDOM_HAS_SVD
  auto stream = to_stream(s);
  // The covariance's square root U sqrt(S) V^T (symmetric for a symmetric PSD cov).
  auto usv = linalg::svd(astype(cov, float32, stream), true, stream);
  array root = matmul(multiply(usv[0], expand_dims(sqrt(usv[1], stream), -2, stream), stream),
                      usv[2], stream);
  array z =
      normal_from_key(out_shape, dtype, std::nullopt, std::nullopt, resolve_key(key, op), stream);
  array scaled = squeeze(matmul(expand_dims(z, -2, stream), root, stream), -2, stream);
  return add(mean, scaled, stream);
#else
  (void)key, (void)s;
  throw std::runtime_error(msg("[", op, "] needs kiln::linalg::svd, which this build lacks."));
#endif
}

// ---------------------------------------------------------------- integers and bools

array randint(const array& low, const array& high, const Shape& shape, Dtype dtype,
              const KeyArg& key, StreamOrDevice s) {
  if (is_floating_point(dtype) || dtype == complex64) {
    throw std::invalid_argument(
        msg("[randint] dtype must be an integer type or bool; got ", dtype, "."));
  }
  check_shape(shape, "randint");
  check_broadcast_to(low.shape(), shape, "randint", "low");
  check_broadcast_to(high.shape(), shape, "randint", "high");
  auto stream = to_stream(s);
  array u = uniform_from_key(low, high, shape, float32, resolve_key(key, "randint"), stream);
  array out = astype(floor(u, stream), dtype, stream);
  array top = astype(subtract(high, array(1), stream), dtype, stream);
  return maximum(minimum(out, top, stream), astype(low, dtype, stream), stream);
}

array bernoulli(const array& p, const Shape& shape, const KeyArg& key, StreamOrDevice s) {
  if (!is_floating_point(p.dtype())) {
    throw std::invalid_argument(
        msg("[bernoulli] p must be a real floating-point array; got ", p.dtype(), "."));
  }
  check_shape(shape, "bernoulli");
  check_broadcast_to(p.shape(), shape, "bernoulli", "p");
  auto stream = to_stream(s);
  // The float above 2^32: p >= 1 beats every word, p <= 0 none.
  const array upper(std::nextafter(0x1p32f, std::numeric_limits<float>::max()), float32);
  array b = make_bits(shape, 4, resolve_key(key, "bernoulli"), stream);
  return less(b, multiply(p, upper, stream), stream);
}

array bernoulli(const array& p, const KeyArg& key, StreamOrDevice s) {
  return bernoulli(p, p.shape(), key, s);
}

// ---------------------------------------------------------------- other distributions

array truncated_normal(const array& lower, const array& upper, const Shape& shape, Dtype dtype,
                       const KeyArg& key, StreamOrDevice s) {
  check_floating(dtype, "truncated_normal");
  check_shape(shape, "truncated_normal");
  check_broadcast_to(lower.shape(), shape, "truncated_normal", "lower");
  check_broadcast_to(upper.shape(), shape, "truncated_normal", "upper");
  auto stream = to_stream(s);
  // Inverse-CDF sampling between the bounds' images under erf(x / sqrt(2)). float64 (not in
  // MLX) uses kiln's float64 erf and erfinv.
  const bool f64 = dtype == float64;
  auto erf_ = [&](const array& x) { return f64 ? erf(x, stream) : erf_f32(x, stream); };
  auto erfinv_ = [&](const array& x) { return f64 ? erfinv(x, stream) : erfinv_f32(x, stream); };
  const array sqrt2(std::sqrt(2.0), dtype);
  array lo = astype(lower, dtype, stream), hi = astype(upper, dtype, stream);
  array a = erf_(divide(lo, sqrt2, stream));
  array b = erf_(divide(hi, sqrt2, stream));
  array u = uniform_from_key(a, b, shape, dtype, resolve_key(key, "truncated_normal"), stream);
  array z = multiply(sqrt2, erfinv_(u), stream);
  return maximum(minimum(hi, z, stream), lo, stream);
}

array truncated_normal(const array& lower, const array& upper, Dtype dtype, const KeyArg& key,
                       StreamOrDevice s) {
  Shape shape = broadcast_shapes(lower.shape(), upper.shape(), "truncated_normal");
  return truncated_normal(lower, upper, shape, dtype, key, s);
}

array gumbel(const Shape& shape, const array& key, StreamOrDevice s) {
  return gumbel(shape, float32, key, s);
}

array gumbel(const Shape& shape, Dtype dtype, const KeyArg& key, StreamOrDevice s) {
  check_floating(dtype, "gumbel");
  check_shape(shape, "gumbel");
  return gumbel_from_key(shape, dtype, resolve_key(key, "gumbel"), to_stream(s));
}

array laplace(const Shape& shape, Dtype dtype, float loc, float scale, const KeyArg& key,
              StreamOrDevice s) {
  check_floating(dtype, "laplace");
  check_shape(shape, "laplace");
  auto stream = to_stream(s);
  array u = symmetric_unit(shape, resolve_key(key, "laplace"), stream);
  // sign(u) * log1p(-|u|): the -1 of `dtype` makes this float64 for float64.
  array x = multiply(sign(u, stream),
                     log1p(multiply(array(-1.0f, dtype), abs(u, stream), stream), stream), stream);
  x = astype(x, dtype, stream);
  if (scale != 1.0f) x = multiply(array(scale, dtype), x, stream);
  if (loc != 0.0f) x = add(array(loc, dtype), x, stream);
  return x;
}

array laplace(const Shape& shape, Dtype dtype, const KeyArg& key, StreamOrDevice s) {
  return laplace(shape, dtype, 0.0f, 1.0f, key, s);
}

array permutation(int x, const KeyArg& key, StreamOrDevice s) {
  if (x < 0) {
    throw std::invalid_argument(
        msg("[permutation] The number of elements must be non-negative; got ", x, "."));
  }
  return permutation_from_key(x, resolve_key(key, "permutation"), to_stream(s));
}

array permutation(const array& x, int axis, const KeyArg& key, StreamOrDevice s) {
  const int ax = checked_axis(axis, static_cast<int>(x.ndim()), "permutation", "an array");
  auto stream = to_stream(s);
  array order = permutation_from_key(x.shape(ax), resolve_key(key, "permutation"), stream);
  return take(x, order, ax, stream);
}

// ---------------------------------------------------------------- categorical

namespace {

int categorical_axis(const array& logits, int axis) {
  if (!is_floating_point(logits.dtype())) {
    throw std::invalid_argument(
        msg("[categorical] logits must be a real floating-point array; got ", logits.dtype(), "."));
  }
  return checked_axis(axis, static_cast<int>(logits.ndim()), "categorical", "logits");
}

// MLX samples a single distribution by inverting its CDF whenever the result has at least
// one axis (a (1, vocab) row of logits in a language model's sampler); only a scalar result
// takes the Gumbel path. Matching the choice keeps seeded sampling identical to MLX's.
bool one_distribution_with_samples(const array& logits, int ax, const Shape& shape) {
  return !shape.empty() && logits.size() == static_cast<size_t>(logits.shape(ax));
}

}  // namespace

array categorical(const array& logits, int axis, const Shape& shape, const KeyArg& key,
                  StreamOrDevice s) {
  const int ax = categorical_axis(logits, axis);
  check_shape(shape, "categorical");
  Shape reduced = logits.shape();
  reduced.erase(reduced.begin() + ax);
  check_broadcast_to(reduced, shape, "categorical", "logits without the sampled axis");
  if (one_distribution_with_samples(logits, ax, shape)) {
    return categorical_by_cdf(logits, shape, resolve_key(key, "categorical"), to_stream(s));
  }
  return categorical_from_key(logits, ax, shape, resolve_key(key, "categorical"), to_stream(s));
}

array categorical(const array& logits, int axis, int num_samples, const KeyArg& key,
                  StreamOrDevice s) {
  const int ax = categorical_axis(logits, axis);
  if (num_samples < 0) {
    throw std::invalid_argument(
        msg("[categorical] num_samples must be non-negative; got ", num_samples, "."));
  }
  auto stream = to_stream(s);
  // Samples along a new last axis: logits (..., C, ..., 1) against (..., num_samples).
  array expanded = expand_dims(logits, -1, stream);
  Shape shape = expanded.shape();
  shape.erase(shape.begin() + ax);
  shape.back() = num_samples;
  array k = resolve_key(key, "categorical");
  // One distribution: MLX inverts its CDF instead (O(C + num_samples) memory there).
  if (logits.size() == static_cast<size_t>(logits.shape(ax))) {
    return categorical_by_cdf(logits, shape, k, stream);
  }
  return categorical_from_key(expanded, ax, shape, k, stream);
}

namespace {
array categorical_default(const array& logits, int axis, const KeyArg& key, StreamOrDevice s) {
  const int ax = categorical_axis(logits, axis);
  Shape shape = logits.shape();
  shape.erase(shape.begin() + ax);
  if (one_distribution_with_samples(logits, ax, shape)) {
    return categorical_by_cdf(logits, shape, resolve_key(key, "categorical"), to_stream(s));
  }
  return categorical_from_key(logits, ax, shape, resolve_key(key, "categorical"), to_stream(s));
}
}  // namespace

array categorical(const array& logits, int axis, const array& key, StreamOrDevice s) {
  return categorical_default(logits, axis, key, s);
}

array categorical(const array& logits, int axis, StreamOrDevice s) {
  return categorical_default(logits, axis, std::nullopt, s);
}

}  // namespace kiln::random

namespace kiln::random {

void set_key_store(std::shared_ptr<KeyStore> store) {
  std::lock_guard lk(key_store_mutex());
  key_store_slot() = std::move(store);
}

}  // namespace kiln::random
