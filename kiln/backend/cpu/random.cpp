// eval_cpu of the random primitives: Threefry blocks written straight into the output in
// MLX's layout (random_impl::StreamLayout), and the single-precision erf and erfinv.
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

  const random_impl::StreamLayout layout(key_bytes);
  const size_t blocks = layout.blocks();
  char* dst = out.data<char>();
  // Word j of a key; the last one may hold fewer than 4 of the key's bytes.
  auto store = [&](char* key_out, uint64_t j, uint32_t w) {
    std::memcpy(key_out + 4 * j, &w, std::min<size_t>(4, key_bytes - 4 * j));
  };
  // A block is 20 rounds of a few integer instructions: worth a thread at a few thousand.
  cpu::parallel_for(num_keys * blocks, 1 << 13, [&](size_t begin, size_t end) {
    size_t key = begin / blocks, i = begin % blocks;
    for (size_t t = begin; t < end; ++t) {
      char* key_out = dst + key * key_bytes;
      auto w = layout.block(k[2 * key], k[2 * key + 1], i);
      store(key_out, i, w.x0);
      if (i < layout.half) store(key_out, layout.half + layout.odd + i, w.x1);
      if (++i == blocks) {
        i = 0;
        ++key;
      }
    }
  });
}

namespace {

// f (float -> float) over a float32, float16 or bfloat16 array, rounded once to its dtype.
template <typename F>
void map_f32(const char* name, const array& in, array& out, F f) {
  switch (in.dtype().val) {
    case Dtype::Val::float32:
      return cpu::unary_op<float, float>(in, out, f);
    case Dtype::Val::float16:
      return cpu::unary_op<float16_t, float16_t>(
          in, out, [f](float16_t x) { return static_cast<float16_t>(f(static_cast<float>(x))); });
    case Dtype::Val::bfloat16:
      return cpu::unary_op<bfloat16_t, bfloat16_t>(
          in, out, [f](bfloat16_t x) { return static_cast<bfloat16_t>(f(static_cast<float>(x))); });
    default:
      throw std::invalid_argument(msg(
          "[", name, "::eval_cpu] Expected float32, float16 or bfloat16; got ", in.dtype(), "."));
  }
}

}  // namespace

void ErfF32::eval_cpu(const std::vector<array>& inputs, array& out) {
  map_f32("ErfF32", inputs[0], out, [](float x) { return random_impl::erf_f32(x); });
}

void ErfInvF32::eval_cpu(const std::vector<array>& inputs, array& out) {
  // The C library's logf, as MLX's CPU backend uses.
  map_f32("ErfInvF32", inputs[0], out,
          [](float x) { return random_impl::erfinv_f32(x, [](float t) { return std::log(t); }); });
}

}  // namespace kiln
