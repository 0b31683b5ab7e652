// GGUF's Q4_0, Q4_1, Q8_0 and Q4_K blocks into MLX's affine quantized layout (packed
// unsigned values, a float16 scale and bias per group of 32), the rule MLX's load_gguf
// uses. Block layouts: ggml's ggml-common.h (block_q4_0 etc.).
#include <cstring>

#include "kiln/half_types.h"
#include "kiln/io/gguf.h"

namespace kiln::io::gguf {

namespace {

constexpr int kGroup = 32;

float half_at(const char* p) {
  return detail::half_bits_to_float(read_le<uint16_t>(p));
}
uint16_t to_half(float f) {
  return detail::float_to_half_bits(f);
}

// 16 bytes of nibbles: element e < 16 is the low nibble of byte e, element e + 16 its high
// nibble. MLX packs element k into nibble k (low nibble first) of 16 output bytes.
void unpack_32_nibbles(const uint8_t* qs, uint8_t* out) {
  auto elem = [qs](int e) { return e < 16 ? (qs[e] & 0x0F) : (qs[e - 16] >> 4); };
  for (int k = 0; k < 16; ++k) out[k] = static_cast<uint8_t>(elem(2 * k) | (elem(2 * k + 1) << 4));
}

}  // namespace

std::string tensor_type_name(uint32_t t) {
  static const char* names[] = {
      "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
      "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
      "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
      "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
      "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
      "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};
  return t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}

QuantInfo quant_info(uint32_t t) {
  switch (t) {
    case Q4_0:
      return {32, 18, 4};
    case Q4_1:
      return {32, 20, 4};
    case Q8_0:
      return {32, 34, 8};
    case Q4_K:
      return {256, 144, 4};
    default:
      return {};
  }
}

void unpack_quantized(uint32_t t, const char* data, const Shape& shape, array& weights,
                      array& scales, array& biases) {
  QuantInfo q = quant_info(t);
  Shape wshape = shape, gshape = shape;
  wshape.back() = shape.back() / 32 * q.bits;
  gshape.back() = shape.back() / kGroup;
  size_t groups = shape_size(gshape);
  auto w_store = Storage::host(shape_size(wshape) * 4);
  auto s_store = Storage::host(groups * 2);
  auto b_store = Storage::host(groups * 2);
  auto* w = static_cast<uint8_t*>(w_store->host_ptr());  // packed bytes of the uint32 words
  auto* sc = static_cast<uint16_t*>(s_store->host_ptr());
  auto* bi = static_cast<uint16_t*>(b_store->host_ptr());
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  const char* c = data;

  switch (t) {
    case Q4_0:  // d, 16 bytes of 4-bit q: x = d * (q - 8)
      for (size_t g = 0; g < groups; ++g, c += 18) {
        float d = half_at(c);
        sc[g] = to_half(d);
        bi[g] = to_half(-8.0f * detail::half_bits_to_float(sc[g]));
        unpack_32_nibbles(reinterpret_cast<const uint8_t*>(c + 2), w + g * 16);
      }
      break;
    case Q4_1:  // d, m, 16 bytes of 4-bit q: x = d * q + m
      for (size_t g = 0; g < groups; ++g, c += 20) {
        sc[g] = read_le<uint16_t>(c);
        bi[g] = read_le<uint16_t>(c + 2);
        unpack_32_nibbles(reinterpret_cast<const uint8_t*>(c + 4), w + g * 16);
      }
      break;
    case Q8_0:  // d, 32 int8 q: x = d * q = d * (q + 128) - 128 d
      for (size_t g = 0; g < groups; ++g, c += 34) {
        sc[g] = read_le<uint16_t>(c);
        bi[g] = to_half(-128.0f * detail::half_bits_to_float(sc[g]));
        for (int j = 0; j < 32; ++j) w[g * 32 + j] = static_cast<uint8_t>(p[g * 34 + 2 + j] ^ 0x80);
      }
      break;
    case Q4_K: {  // super-blocks of 8 groups: d, dmin, 12 bytes of 6-bit scales/mins, 128 bytes
      size_t blocks = groups / 8;
      for (size_t b = 0; b < blocks; ++b) {
        const uint8_t* blk = p + b * 144;
        float d = half_at(reinterpret_cast<const char*>(blk));
        float dmin = half_at(reinterpret_cast<const char*>(blk) + 2);
        const uint8_t* s = blk + 4;
        for (int j = 0; j < 8; ++j) {
          uint8_t sv, mv;
          if (j < 4) {
            sv = s[j] & 63;
            mv = s[j + 4] & 63;
          } else {
            sv = static_cast<uint8_t>((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
            mv = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
          }
          // MLX rounds d and dmin products to float16 (its scales are float16).
          sc[b * 8 + j] = to_half(static_cast<float>(sv) * d);
          bi[b * 8 + j] = to_half(-(static_cast<float>(mv) * dmin));
        }
        const uint8_t* qs = blk + 16;
        uint8_t* out = w + b * 128;
        // Each 32 bytes hold two groups: the low nibbles, then the high nibbles.
        for (int h = 0; h < 4; ++h, qs += 32, out += 32) {
          for (int k = 0; k < 16; ++k) {
            out[k] = static_cast<uint8_t>((qs[2 * k] & 0x0F) | ((qs[2 * k + 1] & 0x0F) << 4));
            out[16 + k] = static_cast<uint8_t>((qs[2 * k] >> 4) | ((qs[2 * k + 1] >> 4) << 4));
          }
        }
      }
      break;
    }
    default:
      throw std::logic_error("[load] unpack_quantized called for an unquantized type.");
  }
  weights = array(std::move(w_store), std::move(wshape), uint32);
  scales = array(std::move(s_store), gshape, float16);
  biases = array(std::move(b_store), std::move(gshape), float16);
}

}  // namespace kiln::io::gguf
