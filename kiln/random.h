// Random numbers with explicit keys (MLX's kiln::random API, JAX's model).
//
// A key is a uint32 array of shape (2,). Every sampler takes an optional key: with one,
// the result depends only on the key (and the arguments), identically on every device;
// without one, the sampler splits the global key, which `seed` resets. Bits come from the
// counter-based Threefry-2x32 generator (kiln/primitives_random.h), so samplers never
// share state and any number of them can be evaluated in any order or in parallel.
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln::random {

using KeyArg = std::optional<array>;

// Overloads that take only a key take it as `const array&`: an optional<array> parameter
// there would make calls passing a Dtype or Shape in that position ill-formed (probing
// array's scalar constructor with them fails hard instead of dropping the overload).

/** A key from a seed: uint32 (2,) holding (seed >> 32, seed & 0xffffffff). */
array key(uint64_t seed);

/** Resets the global key to key(seed); samplers without a key continue from there. */
void seed(uint64_t seed);

/** `num` new keys (shape (num, 2)) derived from `key`; all differ from each other and from
 * `key`'s other descendants. Throws [split] for num < 0 or a malformed key. */
array split(const array& key, int num, StreamOrDevice s = {});
/** The two keys of split(key, 2). */
std::pair<array, array> split(const array& key, StreamOrDevice s = {});

/** Raw random bits of `width` bytes per element (1, 2, 4 or 8: uint8, uint16, uint32,
 * uint64). Throws [bits] for another width, a negative dimension or a malformed key. */
array bits(const Shape& shape, int width = 4, const KeyArg& key = std::nullopt,
           StreamOrDevice s = {});
array bits(const Shape& shape, const array& key, StreamOrDevice s = {});

/**
 * Uniform samples in [low, high) of a real floating `dtype`; `low` and `high` broadcast to
 * `shape`. Gradients flow to low and high. Throws [uniform] for a non-floating dtype, or
 * bounds that do not broadcast to `shape`.
 */
array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype = float32,
              const KeyArg& key = std::nullopt, StreamOrDevice s = {});
template <typename T, typename U>
requires std::is_arithmetic_v<T> && std::is_arithmetic_v<U> array
uniform(T low, U high, const Shape& shape, Dtype dtype = float32, const KeyArg& key = std::nullopt,
        StreamOrDevice s = {}) {
  return uniform(array(low, dtype), array(high, dtype), shape, dtype, key, s);
}
/** Uniform samples in [0, 1). */
array uniform(const Shape& shape, Dtype dtype = float32, const KeyArg& key = std::nullopt,
              StreamOrDevice s = {});
array uniform(const Shape& shape, const array& key, StreamOrDevice s = {});

/**
 * Normal samples with mean `loc` and standard deviation `scale`: sqrt(2) * erfinv(u) for u
 * uniform in (-1, 1), computed in float32 for the half types and rounded once. Throws
 * [normal] for a non-floating dtype.
 */
array normal(const Shape& shape, Dtype dtype, float loc, float scale,
             const KeyArg& key = std::nullopt, StreamOrDevice s = {});
array normal(const Shape& shape, Dtype dtype = float32, const KeyArg& key = std::nullopt,
             StreamOrDevice s = {});
array normal(const Shape& shape, const array& key, StreamOrDevice s = {});

/**
 * Integers uniform in [low, high) of an integer `dtype` (low and high are converted to it
 * and broadcast to `shape`); elements where high <= low are low. Throws [randint] for a
 * dtype that is not an integer type, or bounds that do not broadcast to `shape`.
 */
array randint(const array& low, const array& high, const Shape& shape, Dtype dtype = int32,
              const KeyArg& key = std::nullopt, StreamOrDevice s = {});
template <typename T, typename U>
requires std::is_arithmetic_v<T> && std::is_arithmetic_v<U> array
randint(T low, U high, const Shape& shape, Dtype dtype = int32, const KeyArg& key = std::nullopt,
        StreamOrDevice s = {}) {
  return randint(array(low), array(high), shape, dtype, key, s);
}

/**
 * Bools that are true with probability `p` (a floating array broadcast to `shape`; without
 * `shape`, p's shape). Throws [bernoulli] for a non-floating p or a shape p does not
 * broadcast to. (MLX's bernoulli(key) is left out: bernoulli(key) would bind the key to p.)
 */
array bernoulli(const array& p, const Shape& shape, const KeyArg& key = std::nullopt,
                StreamOrDevice s = {});
array bernoulli(const array& p, const KeyArg& key = std::nullopt, StreamOrDevice s = {});

/**
 * Standard normal samples conditioned on [lower, upper] (bounds broadcast to `shape`, or
 * define it when absent): sqrt(2) * erfinv(u) for u uniform between erf(lower / sqrt(2))
 * and erf(upper / sqrt(2)), clipped to the bounds. Throws [truncated_normal] for a
 * non-floating dtype or bounds that do not broadcast to `shape`.
 */
array truncated_normal(const array& lower, const array& upper, const Shape& shape,
                       Dtype dtype = float32, const KeyArg& key = std::nullopt,
                       StreamOrDevice s = {});
array truncated_normal(const array& lower, const array& upper, Dtype dtype = float32,
                       const KeyArg& key = std::nullopt, StreamOrDevice s = {});

/** Standard Gumbel samples, -log(-log(u)) for u uniform in (0, 1). Throws [gumbel] for a
 * non-floating dtype. */
array gumbel(const Shape& shape, Dtype dtype = float32, const KeyArg& key = std::nullopt,
             StreamOrDevice s = {});
array gumbel(const Shape& shape, const array& key, StreamOrDevice s = {});

/**
 * Indices (uint32) drawn from the categorical distributions whose unnormalized log
 * probabilities lie along `axis` of `logits` (argmax of logits + Gumbel noise). The result
 * has `shape`, which logits' shape without `axis` must broadcast to; or that shape with
 * `num_samples` appended; or, by default, exactly that shape. Throws [categorical] for a
 * bad axis, a non-floating dtype, a shape the logits do not broadcast to, or
 * num_samples < 0.
 */
array categorical(const array& logits, int axis, const Shape& shape,
                  const KeyArg& key = std::nullopt, StreamOrDevice s = {});
array categorical(const array& logits, int axis, int num_samples, const KeyArg& key = std::nullopt,
                  StreamOrDevice s = {});
array categorical(const array& logits, int axis, const array& key, StreamOrDevice s = {});
array categorical(const array& logits, int axis = -1, StreamOrDevice s = {});

/**
 * Where the global key lives when not in kiln itself: the Python bindings keep it in
 * `kiln.core.random.state` (a list holding the key), so that compile can capture it as MLX
 * programs do (`inputs=mx.random.state, outputs=mx.random.state`). While a store is
 * installed, samplers called without a key take the next key from it and `seed` resets it.
 */
class KeyStore {
 public:
  virtual ~KeyStore() = default;
  /** The current key (uint32, shape (2,)); it may be lazy or traced. */
  virtual array load() = 0;
  /** Replaces the current key. */
  virtual void store(array key) = 0;
};
/** Installs `store`; null restores kiln's own global key. */
void set_key_store(std::shared_ptr<KeyStore> store);

}  // namespace kiln::random
