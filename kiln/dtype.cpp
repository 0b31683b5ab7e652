#include "kiln/dtype.h"

#include <array>
#include <sstream>
#include <stdexcept>

namespace kiln {

namespace {

constexpr Dtype::Val b = Dtype::Val::bool_, u8 = Dtype::Val::uint8, u16 = Dtype::Val::uint16,
                     u32 = Dtype::Val::uint32, u64 = Dtype::Val::uint64, i8 = Dtype::Val::int8,
                     i16 = Dtype::Val::int16, i32 = Dtype::Val::int32, i64 = Dtype::Val::int64,
                     f16 = Dtype::Val::float16, bf16 = Dtype::Val::bfloat16,
                     f32 = Dtype::Val::float32, f64 = Dtype::Val::float64,
                     c64 = Dtype::Val::complex64;

// MLX's promotion table. It follows NumPy except where MLX deliberately differs:
// uint64 with a signed integer gives float32 (NumPy: float64), any integer with a half type
// keeps the half type, and float16 with bfloat16 gives float32.
constexpr Dtype::Val promotion_table[Dtype::num_types][Dtype::num_types] = {
    //  b    u8   u16  u32  u64  i8   i16  i32  i64  f16  bf16 f32  f64  c64
    {b, u8, u16, u32, u64, i8, i16, i32, i64, f16, bf16, f32, f64, c64},           // b
    {u8, u8, u16, u32, u64, i16, i16, i32, i64, f16, bf16, f32, f64, c64},         // u8
    {u16, u16, u16, u32, u64, i32, i32, i32, i64, f16, bf16, f32, f64, c64},       // u16
    {u32, u32, u32, u32, u64, i64, i64, i64, i64, f16, bf16, f32, f64, c64},       // u32
    {u64, u64, u64, u64, u64, f32, f32, f32, f32, f16, bf16, f32, f64, c64},       // u64
    {i8, i16, i32, i64, f32, i8, i16, i32, i64, f16, bf16, f32, f64, c64},         // i8
    {i16, i16, i32, i64, f32, i16, i16, i32, i64, f16, bf16, f32, f64, c64},       // i16
    {i32, i32, i32, i64, f32, i32, i32, i32, i64, f16, bf16, f32, f64, c64},       // i32
    {i64, i64, i64, i64, f32, i64, i64, i64, i64, f16, bf16, f32, f64, c64},       // i64
    {f16, f16, f16, f16, f16, f16, f16, f16, f16, f16, f32, f32, f64, c64},        // f16
    {bf16, bf16, bf16, bf16, bf16, bf16, bf16, bf16, bf16, f32, bf16, f32, f64, c64},  // bf16
    {f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f64, c64},        // f32
    {f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, c64},        // f64
    {c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64},        // c64
};

constexpr uint8_t size_of(Dtype::Val v) {
  switch (v) {
    case b: case u8: case i8: return 1;
    case u16: case i16: case f16: case bf16: return 2;
    case u32: case i32: case f32: return 4;
    default: return 8;
  }
}

constexpr std::array<std::string_view, Dtype::num_types> names = {
    "bool",  "uint8",   "uint16",   "uint32",  "uint64",  "int8",    "int16",
    "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"};

}  // namespace

Dtype promote_types(Dtype a, Dtype bt) {
  auto v = promotion_table[static_cast<int>(a.val)][static_cast<int>(bt.val)];
  return Dtype(v, size_of(v));
}

Dtype::Kind kind(Dtype d) {
  switch (d.val) {
    case b: return Dtype::Kind::b;
    case u8: case u16: case u32: case u64: return Dtype::Kind::u;
    case i8: case i16: case i32: case i64: return Dtype::Kind::i;
    case bf16: return Dtype::Kind::V;
    case c64: return Dtype::Kind::c;
    default: return Dtype::Kind::f;
  }
}

bool is_unsigned(Dtype d) { return kind(d) == Dtype::Kind::u || d == bool_; }
bool is_signed_integer(Dtype d) { return kind(d) == Dtype::Kind::i; }
bool is_integral(Dtype d) {
  auto k = kind(d);
  return k == Dtype::Kind::b || k == Dtype::Kind::u || k == Dtype::Kind::i;
}
bool is_floating_point(Dtype d) {
  auto k = kind(d);
  return k == Dtype::Kind::f || k == Dtype::Kind::V;
}
bool is_complex(Dtype d) { return d == complex64; }
bool is_inexact(Dtype d) { return is_floating_point(d) || is_complex(d); }

namespace {
// The most specific category of a dtype.
Dtype::Category category_of(Dtype d) {
  switch (kind(d)) {
    case Dtype::Kind::b: return Dtype::Category::generic;
    case Dtype::Kind::u: return Dtype::Category::unsignedinteger;
    case Dtype::Kind::i: return Dtype::Category::signedinteger;
    case Dtype::Kind::c: return Dtype::Category::complexfloating;
    default: return Dtype::Category::floating;
  }
}
}  // namespace

bool issubdtype(Dtype::Category a, Dtype::Category c) {
  using C = Dtype::Category;
  if (a == c || c == C::generic) return true;
  switch (a) {
    case C::complexfloating:
    case C::floating: return c == C::inexact || c == C::number;
    case C::inexact: return c == C::number;
    case C::signedinteger:
    case C::unsignedinteger: return c == C::integer || c == C::number;
    case C::integer: return c == C::number;
    default: return false;
  }
}
bool issubdtype(Dtype a, Dtype bt) { return a == bt; }
bool issubdtype(Dtype a, Dtype::Category c) {
  if (a == bool_) return c == Dtype::Category::generic;
  return issubdtype(category_of(a), c);
}
bool issubdtype(Dtype::Category, Dtype) { return false; }

std::string_view dtype_name(Dtype d) { return names[static_cast<int>(d.val)]; }
std::string_view type_to_name(Dtype d) { return d == bool_ ? "bool_" : dtype_name(d); }

Dtype dtype_from_name(std::string_view name) {
  for (auto d : all_dtypes) {
    if (dtype_name(d) == name || type_to_name(d) == name) return d;
  }
  std::ostringstream msg;
  msg << "[dtype] Unknown dtype name '" << name << "'.";
  throw std::invalid_argument(msg.str());
}

std::ostream& operator<<(std::ostream& os, Dtype d) { return os << dtype_name(d); }

std::ostream& operator<<(std::ostream& os, Dtype::Category c) {
  constexpr std::string_view cnames[] = {"complexfloating", "floating",        "inexact",
                                         "signedinteger",   "unsignedinteger", "integer",
                                         "number",          "generic"};
  return os << cnames[static_cast<int>(c)];
}

}  // namespace kiln
