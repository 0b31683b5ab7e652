// Random numbers with explicit keys (MLX's kiln::random API, JAX's model).
//
// A key is a uint32 array of shape (2,). Every sampler takes an optional key: with one,
// the result depends only on the key (and the arguments); without one, the sampler splits
// the global key, which `seed` resets. Bits come from the counter-based Threefry-2x32
// generator (kiln/primitives_random.h), so samplers never share state and any number of
// them can be evaluated in any order or in parallel.
//
// Every sampler computes what MLX's does (ml-explore/mlx, mlx/random.cpp), with the same
// bit layout and the same sequence of rounded operations, so a key or a seed gives MLX's
// numbers (checked against MLX 0.32.4's CPU build by python/tests/test_random_mlx_bits.py).
// bits, split, the global key sequence, uniform, randint, bernoulli and permutation are
// the same on every device. The samplers that take a logarithm (normal, laplace, gumbel,
// truncated_normal, categorical) use the C library's logf and log1pf on the CPU, as MLX's
// CPU backend does; the GPU has no bit-exact equivalent, so there they may differ from the
// CPU in the last place (in about 1 sample in 3000 for normal). Where MLX rejects a dtype
// that kiln accepts (float64 for uniform, gumbel and truncated_normal), kiln samples at
// float64 resolution from 64-bit words.
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln::random {

using KeyArg = std::optional<array>;

/** An array argument that may be absent: array, std::optional<array> or std::nullopt. */
template <typename T>
concept OptionalArrayArg = std::is_same_v<T, array> || std::is_same_v<T, std::optional<array>> ||
    std::is_same_v<T, std::nullopt_t>;

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
 * uint64; MLX defines 1, 2 and 4, and 8 continues its layout). The key's n bytes are laid
 * out as random_impl::StreamLayout says. Throws [bits] for another width, a negative
 * dimension or a malformed key. */
array bits(const Shape& shape, int width = 4, const KeyArg& key = std::nullopt,
           StreamOrDevice s = {});
array bits(const Shape& shape, const array& key, StreamOrDevice s = {});

/**
 * Uniform samples in [low, high) of a real floating `dtype`; `low` and `high` broadcast to
 * `shape`. As MLX: u = min(float32(bits) / 2^32, the largest value below 1 in `dtype`),
 * rounded to `dtype`, and the result (high - low) * u + low in `dtype` (so it may round
 * onto `high`). float64 (which MLX rejects) takes u from 64-bit words. Gradients flow to
 * low and high. Throws [uniform] for a non-floating dtype, or bounds that do not broadcast
 * to `shape`.
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
 * Normal samples with mean `loc` and standard deviation `scale` (each absent, a scalar or an
 * array broadcasting with `shape`). As MLX: e = erfinv(u) in single precision for u uniform
 * in float32 on (-1, 1), then (sqrt(2) * scale) * e + loc in `dtype`. complex64 gives
 * erfinv of two such u as real and imaginary parts (variance 1/2 each), then scale * z +
 * loc. Throws [normal] for a dtype that is neither real floating nor complex64.
 */
array normal_impl(const Shape& shape, Dtype dtype, const std::optional<array>& loc,
                  const std::optional<array>& scale, const KeyArg& key, StreamOrDevice s);
/** loc and scale: each an array, an optional<array> or std::nullopt (a template, so that
 * calls passing other types there, such as a key and a device, never probe array's
 * constructors with them). */
template <typename Loc, typename Scale>
requires OptionalArrayArg<Loc> && OptionalArrayArg<Scale> array
normal(const Shape& shape, Dtype dtype, const Loc& loc, const Scale& scale,
       const KeyArg& key = std::nullopt, StreamOrDevice s = {}) {
  return normal_impl(shape, dtype, std::optional<array>(loc), std::optional<array>(scale), key, s);
}
/** As above, with scalar loc and scale (0 and 1 add no operation). */
array normal(const Shape& shape, Dtype dtype, float loc, float scale,
             const KeyArg& key = std::nullopt, StreamOrDevice s = {});
array normal(const Shape& shape, Dtype dtype = float32, const KeyArg& key = std::nullopt,
             StreamOrDevice s = {});
array normal(const Shape& shape, const array& key, StreamOrDevice s = {});

/**
 * Samples of the multivariate normal distributions with means `mean` (..., n) and
 * covariances `cov` (..., n, n), whose batch shapes broadcast with each other and with
 * `shape`; the result has that broadcast shape + (n,). As MLX: standard normal samples z
 * times the square root U sqrt(S) V^T of the covariance (its SVD), plus the mean; cov must
 * be positive semi-definite (otherwise the result is unspecified). Only float32. Throws
 * [multivariate_normal] for another dtype, mean.ndim < 1, cov.ndim < 2, a non-square cov,
 * mismatched n or batch shapes that do not broadcast; runs on the CPU (as MLX's SVD).
 */
array multivariate_normal(const array& mean, const array& cov, const Shape& shape,
                          Dtype dtype = float32, const KeyArg& key = std::nullopt,
                          StreamOrDevice s = {});

/**
 * Laplace samples with location `loc` and scale `scale`. As MLX: for u uniform in float32
 * on (-1, 1), sign(u) * log1p(-|u|) (in float64 for float64, else float32), rounded to
 * `dtype`, then scale * x + loc in `dtype`. Throws [laplace] for a non-floating dtype.
 */
array laplace(const Shape& shape, Dtype dtype, float loc, float scale,
              const KeyArg& key = std::nullopt, StreamOrDevice s = {});
array laplace(const Shape& shape, Dtype dtype = float32, const KeyArg& key = std::nullopt,
              StreamOrDevice s = {});

/** A random permutation of 0 .. x - 1 (uint32): the argsort of x random words, as MLX.
 * Throws [permutation] for x < 0. */
array permutation(int x, const KeyArg& key = std::nullopt, StreamOrDevice s = {});
/** x with its entries along `axis` randomly permuted (take of permutation(x.shape(axis))).
 * Throws [permutation] std::out_of_range for an axis out of range (any axis of a 0-d x). */
array permutation(const array& x, int axis = 0, const KeyArg& key = std::nullopt,
                  StreamOrDevice s = {});

/**
 * Integers in [low, high) of an integer or bool `dtype` (low and high broadcast to
 * `shape`); elements where high <= low are low. As MLX: floor of a float32 uniform sample
 * between low and high, converted to `dtype` and clipped to [low, high - 1] (so bounds
 * beyond 2^24 in magnitude inherit float32's resolution). Throws [randint] for a floating
 * or complex dtype, or bounds that do not broadcast to `shape`.
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
 * `shape`, p's shape): as MLX, 32 random bits compared with p * (2^32 + 512) in float32 (or
 * p's dtype if wider), so p <= 0 gives false and p >= 1 true. Throws [bernoulli] for a
 * non-floating p or a shape p does not broadcast to. (MLX's bernoulli(key) is left out:
 * bernoulli(key) would bind the key to p.)
 */
array bernoulli(const array& p, const Shape& shape, const KeyArg& key = std::nullopt,
                StreamOrDevice s = {});
array bernoulli(const array& p, const KeyArg& key = std::nullopt, StreamOrDevice s = {});

/**
 * Standard normal samples conditioned on [lower, upper] (bounds broadcast to `shape`, or
 * define it when absent): as MLX, sqrt(2) * erfinv(u) for u = uniform(erf(lower / sqrt(2)),
 * erf(upper / sqrt(2))) in `dtype` (erf and erfinv in single precision; kiln's float64 ones
 * for float64), clipped to the bounds. Throws [truncated_normal] for a non-floating dtype
 * or bounds that do not broadcast to `shape`.
 */
array truncated_normal(const array& lower, const array& upper, const Shape& shape,
                       Dtype dtype = float32, const KeyArg& key = std::nullopt,
                       StreamOrDevice s = {});
array truncated_normal(const array& lower, const array& upper, Dtype dtype = float32,
                       const KeyArg& key = std::nullopt, StreamOrDevice s = {});

/** Standard Gumbel samples, -log(-log(u)) for u = uniform(shape, dtype) (as MLX; u = 0,
 * which comes once in 2^32 draws, gives -inf). Throws [gumbel] for a non-floating dtype. */
array gumbel(const Shape& shape, Dtype dtype = float32, const KeyArg& key = std::nullopt,
             StreamOrDevice s = {});
array gumbel(const Shape& shape, const array& key, StreamOrDevice s = {});

/**
 * Indices (uint32) drawn from the categorical distributions whose unnormalized log
 * probabilities lie along `axis` of `logits` (argmax of logits + float32 Gumbel noise of
 * the result's shape with the category axis inserted where it is in logits, as MLX). The
 * result has `shape`, which logits' shape without `axis` must broadcast to; or that shape
 * with `num_samples` appended; or, by default, exactly that shape. With a single
 * distribution (every other axis of size 1) and a result that is not a scalar (any
 * num_samples; a non-empty shape; by default, logits of 2 or more dims such as a batch of
 * one row), MLX samples by inverting the CDF of the weights exp(logits - max) with one
 * float32 uniform per sample, and so does kiln
 * (its exp and sum may differ from MLX's in the last bit, which changes a sample only when
 * it falls within an ulp of a category's boundary). Throws [categorical]:
 * std::out_of_range for a bad axis (as MLX), std::invalid_argument for a non-floating
 * dtype, a shape the logits do not broadcast to, or num_samples < 0.
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
