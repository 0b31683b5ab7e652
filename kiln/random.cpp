// Random samplers: argument checks, keys, and compositions of RandomBits and BitsToUniform
// with elementwise ops.
#include "kiln/random.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>

#include "kiln/ops.h"
#include "kiln/primitives_random.h"
#include "kiln/utils.h"

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
    auto kept = random_impl::stream_block(k0_, k1_, 0);
    auto out = random_impl::stream_block(k0_, k1_, 1);
    k0_ = kept.x0;
    k1_ = kept.x1;
    return array({out.x0, out.x1}, uint32);
  }

 private:
  std::mutex mu_;
  uint32_t k0_ = 0, k1_ = 0;
};

KeySequence& global_keys() {
  static auto* keys = new KeySequence(
      static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()));
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

// The half types sample in float32 and round once at the end.
Dtype compute_dtype(Dtype dtype) {
  return dtype.size == 2 ? float32 : dtype;
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

array make_bits(const Shape& shape, int width, const array& key, const Stream& s) {
  return array(shape, RandomBits::bits_dtype(width), std::make_shared<RandomBits>(s, shape, width),
               {key});
}

// Uniform values in [low, high) of `dtype` (floating or integer); arguments checked.
array uniform_from_key(const array& low, const array& high, const Shape& shape, Dtype dtype,
                       const array& key, const Stream& s) {
  // See BitsToUniform: 8 bytes for float64 and integers, 4 for the other floats.
  const int width = dtype == float64 || !is_floating_point(dtype) ? 8 : 4;
  array bits = make_bits(shape, width, key, s);
  array lo = broadcast_to(astype(low, dtype, s), shape, s);
  array hi = broadcast_to(astype(high, dtype, s), shape, s);
  return array(shape, dtype, std::make_shared<BitsToUniform>(s), {bits, lo, hi});
}

// The value just above -1 in `dtype`: the lowest u handed to erfinv, as erfinv(-1) = -inf.
double just_above_minus_one(Dtype dtype) {
  return dtype == float64 ? std::nextafter(-1.0, 0.0) : std::nextafter(-1.0f, 0.0f);
}

}  // namespace

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
  // Key i is block i of the key's stream: words 2i and 2i + 1.
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
  return uniform(array(0.0f, dtype), array(1.0f, dtype), shape, dtype, key, s);
}

array uniform(const Shape& shape, const array& key, StreamOrDevice s) {
  return uniform(shape, float32, key, s);
}

array normal(const Shape& shape, Dtype dtype, float loc, float scale, const KeyArg& key,
             StreamOrDevice s) {
  check_floating(dtype, "normal");
  check_shape(shape, "normal");
  auto stream = to_stream(s);
  const Dtype ct = compute_dtype(dtype);
  array u = uniform_from_key(array(just_above_minus_one(ct), ct), array(1.0, ct), shape, ct,
                             resolve_key(key, "normal"), stream);
  array z = multiply(erfinv(u, stream), array(std::sqrt(2.0), ct), stream);
  if (scale != 1.0f) z = multiply(z, array(scale, ct), stream);
  if (loc != 0.0f) z = add(z, array(loc, ct), stream);
  return astype(z, dtype, stream);
}

array normal(const Shape& shape, Dtype dtype, const KeyArg& key, StreamOrDevice s) {
  return normal(shape, dtype, 0.0f, 1.0f, key, s);
}

array normal(const Shape& shape, const array& key, StreamOrDevice s) {
  return normal(shape, float32, 0.0f, 1.0f, key, s);
}

array randint(const array& low, const array& high, const Shape& shape, Dtype dtype,
              const KeyArg& key, StreamOrDevice s) {
  if (!is_integral(dtype) || dtype == bool_) {
    throw std::invalid_argument(msg("[randint] dtype must be an integer type; got ", dtype, "."));
  }
  check_shape(shape, "randint");
  check_broadcast_to(low.shape(), shape, "randint", "low");
  check_broadcast_to(high.shape(), shape, "randint", "high");
  return uniform_from_key(low, high, shape, dtype, resolve_key(key, "randint"), to_stream(s));
}

array bernoulli(const array& p, const Shape& shape, const KeyArg& key, StreamOrDevice s) {
  if (!is_floating_point(p.dtype())) {
    throw std::invalid_argument(
        msg("[bernoulli] p must be a real floating-point array; got ", p.dtype(), "."));
  }
  check_shape(shape, "bernoulli");
  check_broadcast_to(p.shape(), shape, "bernoulli", "p");
  auto stream = to_stream(s);
  // float32 at least, so p resolves to 2^-24 even when given in a half type.
  const Dtype dtype = promote_types(p.dtype(), float32);
  array u = uniform_from_key(array(0.0f, dtype), array(1.0f, dtype), shape, dtype,
                             resolve_key(key, "bernoulli"), stream);
  return less(u, astype(p, dtype, stream), stream);
}

array bernoulli(const array& p, const KeyArg& key, StreamOrDevice s) {
  return bernoulli(p, p.shape(), key, s);
}

array truncated_normal(const array& lower, const array& upper, const Shape& shape, Dtype dtype,
                       const KeyArg& key, StreamOrDevice s) {
  check_floating(dtype, "truncated_normal");
  check_shape(shape, "truncated_normal");
  check_broadcast_to(lower.shape(), shape, "truncated_normal", "lower");
  check_broadcast_to(upper.shape(), shape, "truncated_normal", "upper");
  auto stream = to_stream(s);
  const Dtype ct = compute_dtype(dtype);
  const array sqrt2(std::sqrt(2.0), ct);
  array lo = astype(lower, ct, stream), hi = astype(upper, ct, stream);
  // Inverse-CDF sampling between the bounds' images under erf(x / sqrt(2)), kept off -1.
  array a =
      maximum(erf(divide(lo, sqrt2, stream), stream), array(just_above_minus_one(ct), ct), stream);
  array b = erf(divide(hi, sqrt2, stream), stream);
  array u = uniform_from_key(a, b, shape, ct, resolve_key(key, "truncated_normal"), stream);
  array z = multiply(erfinv(u, stream), sqrt2, stream);
  return astype(minimum(maximum(z, lo, stream), hi, stream), dtype, stream);
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
  auto stream = to_stream(s);
  const Dtype ct = compute_dtype(dtype);
  // u in (0, 1): the smallest normal number as lower bound keeps log(u) finite.
  const double tiny =
      ct == float64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  array u = uniform_from_key(array(tiny, ct), array(1.0, ct), shape, ct, resolve_key(key, "gumbel"),
                             stream);
  return astype(negative(log(negative(log(u, stream), stream), stream), stream), dtype, stream);
}

namespace {

// argmax over `axis` of logits + Gumbel noise of `noise_shape` (logits broadcast to it).
array gumbel_argmax(const array& logits, int axis, const Shape& noise_shape, const KeyArg& key,
                    const Stream& s) {
  const Dtype dtype = promote_types(logits.dtype(), float32);
  array noise = gumbel(noise_shape, dtype, key, s);
  return argmax(add(noise, astype(logits, dtype, s), s), axis, false, s);
}

int categorical_axis(const array& logits, int axis) {
  if (!is_floating_point(logits.dtype())) {
    throw std::invalid_argument(
        msg("[categorical] logits must be a real floating-point array; got ", logits.dtype(), "."));
  }
  return normalize_axis(axis, static_cast<int>(logits.ndim()), "categorical");
}

}  // namespace

array categorical(const array& logits, int axis, const Shape& shape, const KeyArg& key,
                  StreamOrDevice s) {
  const int ax = categorical_axis(logits, axis);
  check_shape(shape, "categorical");
  Shape reduced = logits.shape();
  reduced.erase(reduced.begin() + ax);
  check_broadcast_to(reduced, shape, "categorical", "logits without the sampled axis");
  // The category axis sits where it is in logits, counted from the right.
  Shape noise_shape = shape;
  const int pos = ax + static_cast<int>(shape.size() - reduced.size());
  noise_shape.insert(noise_shape.begin() + pos, logits.shape(ax));
  return gumbel_argmax(logits, pos, noise_shape, key, to_stream(s));
}

array categorical(const array& logits, int axis, int num_samples, const KeyArg& key,
                  StreamOrDevice s) {
  const int ax = categorical_axis(logits, axis);
  if (num_samples < 0) {
    throw std::invalid_argument(
        msg("[categorical] num_samples must be non-negative; got ", num_samples, "."));
  }
  auto stream = to_stream(s);
  // Samples along a new last axis: logits (..., C, ..., 1) against noise (..., C, ..., n).
  Shape noise_shape = logits.shape();
  noise_shape.push_back(num_samples);
  return gumbel_argmax(expand_dims(logits, -1, stream), ax, noise_shape, key, stream);
}

namespace {
array categorical_default(const array& logits, int axis, const KeyArg& key, StreamOrDevice s) {
  const int ax = categorical_axis(logits, axis);
  Shape shape = logits.shape();
  shape.erase(shape.begin() + ax);
  return categorical(logits, ax, shape, key, s);
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
