// eval_cpu of the random primitives: Threefry blocks written straight into the output, and
// the elementwise mapping of bits to uniform values.
#include <bit>
#include <cmath>
#include <cstring>

#include "kiln/backend/cpu/elementwise.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_random.h"
#include "kiln/utils.h"

namespace kiln {

// The stream's bytes are the little-endian bytes of its words.
static_assert(std::endian::native == std::endian::little);

void RandomBits::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  const array& keys = inputs[0];
  const size_t num_keys = keys.size() / 2;
  const size_t key_bytes = shape_size(shape_) * width_;
  if (num_keys == 0 || key_bytes == 0) return;

  // Gather the keys (any strides) as (k0, k1) pairs.
  std::vector<uint32_t> k(2 * num_keys);
  const uint32_t* pk = keys.data<uint32_t>();
  for (size_t i = 0; i < k.size(); ++i) k[i] = pk[elem_to_loc(i, keys.shape(), keys.strides())];

  const size_t blocks_per_key = (key_bytes + 7) / 8;
  char* dst = out.data<char>();
  // A block is 20 rounds of a few integer instructions: worth a thread at a few thousand.
  cpu::parallel_for(num_keys * blocks_per_key, 1 << 13, [&](size_t begin, size_t end) {
    size_t key = begin / blocks_per_key, i = begin % blocks_per_key;
    for (size_t t = begin; t < end; ++t) {
      auto w = random_impl::stream_block(k[2 * key], k[2 * key + 1], i);
      const uint32_t words[2] = {w.x0, w.x1};
      const size_t offset = i * 8;
      std::memcpy(dst + key * key_bytes + offset, words, std::min<size_t>(8, key_bytes - offset));
      if (++i == blocks_per_key) {
        i = 0;
        ++key;
      }
    }
  });
}

namespace {

// The representable value next to `from` in the direction of `to` (from != to, finite).
template <typename T>
T step_toward(T from, T to) {
  if constexpr (is_half_v<T>) {
    const uint16_t b = from.bits;
    if ((b & 0x7FFFu) == 0) return T::from_bits(to > from ? 0x0001u : 0x8001u);
    // Toward larger magnitude when moving in the direction of from's sign.
    const bool away = (to > from) == ((b & 0x8000u) == 0);
    return T::from_bits(static_cast<uint16_t>(away ? b + 1 : b - 1));
  } else {
    return std::nextafter(from, to);
  }
}

// low + (high - low) * u in Acc, rounded to T, kept off `high`.
template <typename T, typename Acc>
T uniform_value(Acc u, T low, T high) {
  const Acc l = static_cast<Acc>(low), h = static_cast<Acc>(high);
  T v = static_cast<T>(l + (h - l) * u);
  if ((high > low && !(v < high)) || (high < low && !(v > high))) v = step_toward(high, low);
  return v;
}

template <typename T>
T bounded_int(uint64_t bits, T low, T high) {
  if (!(low < high)) return low;
  // The difference modulo 2^64 is exact: 0 < high - low < 2^64 for every integer type.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  return static_cast<T>(static_cast<uint64_t>(low) + random_impl::bounded(bits, range));
}

}  // namespace

void BitsToUniform::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array &bits = inputs[0], &low = inputs[1], &high = inputs[2];
  using namespace random_impl;
  switch (out.dtype().val) {
    case Dtype::Val::float32:
      return cpu::ternary_op<uint32_t, float, float, float>(
          bits, low, high, out,
          [](uint32_t b, float l, float h) { return uniform_value(unit_float(b), l, h); });
    case Dtype::Val::float64:
      return cpu::ternary_op<uint64_t, double, double, double>(
          bits, low, high, out,
          [](uint64_t b, double l, double h) { return uniform_value(unit_double(b), l, h); });
    case Dtype::Val::float16:
      return cpu::ternary_op<uint32_t, float16_t, float16_t, float16_t>(
          bits, low, high, out,
          [](uint32_t b, float16_t l, float16_t h) { return uniform_value(unit_float(b), l, h); });
    case Dtype::Val::bfloat16:
      return cpu::ternary_op<uint32_t, bfloat16_t, bfloat16_t, bfloat16_t>(
          bits, low, high, out, [](uint32_t b, bfloat16_t l, bfloat16_t h) {
            return uniform_value(unit_float(b), l, h);
          });
    default:
      break;
  }
  if (!is_integral(out.dtype()) || out.dtype() == bool_) {
    throw std::invalid_argument(
        msg("[BitsToUniform::eval_cpu] Unsupported dtype ", out.dtype(), "."));
  }
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      cpu::ternary_op<uint64_t, T, T, T>(bits, low, high, out,
                                         [](uint64_t b, T l, T h) { return bounded_int(b, l, h); });
    }
  });
}

}  // namespace kiln
