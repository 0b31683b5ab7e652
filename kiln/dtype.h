// Element types and the NumPy/MLX type promotion rules.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "kiln/half_types.h"

namespace kiln {

struct Dtype {
  enum class Val : uint8_t {
    bool_,
    uint8,
    uint16,
    uint32,
    uint64,
    int8,
    int16,
    int32,
    int64,
    float16,
    bfloat16,
    float32,
    float64,
    complex64,
  };
  static constexpr int num_types = 14;

  /** NumPy-style kind character: b, u, i, f (V for bfloat16, as MLX), c. */
  enum class Kind : char { b = 'b', u = 'u', i = 'i', f = 'f', V = 'V', c = 'c' };

  /** Abstract categories for `issubdtype`, as in NumPy/MLX. */
  enum class Category {
    complexfloating,
    floating,
    inexact,
    signedinteger,
    unsignedinteger,
    integer,
    number,
    generic,
  };

  Val val;
  uint8_t size;  // bytes per element

  constexpr Dtype(Val v, uint8_t s) : val(v), size(s) {}
  constexpr bool operator==(const Dtype& o) const { return val == o.val; }
  constexpr operator Val() const { return val; }
};

inline constexpr Dtype bool_{Dtype::Val::bool_, 1};
inline constexpr Dtype uint8{Dtype::Val::uint8, 1};
inline constexpr Dtype uint16{Dtype::Val::uint16, 2};
inline constexpr Dtype uint32{Dtype::Val::uint32, 4};
inline constexpr Dtype uint64{Dtype::Val::uint64, 8};
inline constexpr Dtype int8{Dtype::Val::int8, 1};
inline constexpr Dtype int16{Dtype::Val::int16, 2};
inline constexpr Dtype int32{Dtype::Val::int32, 4};
inline constexpr Dtype int64{Dtype::Val::int64, 8};
inline constexpr Dtype float16{Dtype::Val::float16, 2};
inline constexpr Dtype bfloat16{Dtype::Val::bfloat16, 2};
inline constexpr Dtype float32{Dtype::Val::float32, 4};
inline constexpr Dtype float64{Dtype::Val::float64, 8};
inline constexpr Dtype complex64{Dtype::Val::complex64, 8};

inline constexpr Dtype::Category complexfloating = Dtype::Category::complexfloating;
inline constexpr Dtype::Category floating = Dtype::Category::floating;
inline constexpr Dtype::Category inexact = Dtype::Category::inexact;
inline constexpr Dtype::Category signedinteger = Dtype::Category::signedinteger;
inline constexpr Dtype::Category unsignedinteger = Dtype::Category::unsignedinteger;
inline constexpr Dtype::Category integer = Dtype::Category::integer;
inline constexpr Dtype::Category number = Dtype::Category::number;
inline constexpr Dtype::Category generic = Dtype::Category::generic;

/** All dtypes in enum order (handy for tests and tables). */
inline constexpr Dtype all_dtypes[Dtype::num_types] = {
    bool_, uint8,   uint16,   uint32,  uint64,  int8,    int16,
    int32, int64, float16, bfloat16, float32, float64, complex64};

/** The result type of a binary op on `a` and `b` (MLX's table; see dtype.cpp). */
Dtype promote_types(Dtype a, Dtype b);

Dtype::Kind kind(Dtype d);
bool is_unsigned(Dtype d);
bool is_signed_integer(Dtype d);
bool is_integral(Dtype d);  // bool and integers
bool is_floating_point(Dtype d);  // float16, bfloat16, float32, float64
bool is_complex(Dtype d);
bool is_inexact(Dtype d);  // floating or complex
bool issubdtype(Dtype a, Dtype b);
bool issubdtype(Dtype a, Dtype::Category c);
bool issubdtype(Dtype::Category a, Dtype::Category b);
bool issubdtype(Dtype::Category a, Dtype b);

/** Name as in NumPy/MLX: "float32", "bool", ... */
std::string_view dtype_name(Dtype d);
/** Short name used in kernel names: "float32", "bool_"... identical except bool. */
std::string_view type_to_name(Dtype d);
/** Parses a NumPy/MLX dtype name; throws std::invalid_argument. */
Dtype dtype_from_name(std::string_view name);
std::ostream& operator<<(std::ostream& os, Dtype d);
std::ostream& operator<<(std::ostream& os, Dtype::Category c);

/** Maps C++ types to dtypes. */
template <typename T>
struct TypeToDtype;
#define KILN_TYPE_TO_DTYPE(T, D) \
  template <>                    \
  struct TypeToDtype<T> {        \
    static constexpr Dtype value = D; \
  };
KILN_TYPE_TO_DTYPE(bool, bool_)
KILN_TYPE_TO_DTYPE(uint8_t, uint8)
KILN_TYPE_TO_DTYPE(uint16_t, uint16)
KILN_TYPE_TO_DTYPE(uint32_t, uint32)
KILN_TYPE_TO_DTYPE(uint64_t, uint64)
KILN_TYPE_TO_DTYPE(int8_t, int8)
KILN_TYPE_TO_DTYPE(int16_t, int16)
KILN_TYPE_TO_DTYPE(int32_t, int32)
KILN_TYPE_TO_DTYPE(int64_t, int64)
KILN_TYPE_TO_DTYPE(float16_t, float16)
KILN_TYPE_TO_DTYPE(bfloat16_t, bfloat16)
KILN_TYPE_TO_DTYPE(float, float32)
KILN_TYPE_TO_DTYPE(double, float64)
KILN_TYPE_TO_DTYPE(complex64_t, complex64)
#undef KILN_TYPE_TO_DTYPE
// `long` and `long long` are distinct C++ types; both are 64-bit on Linux.
template <>
struct TypeToDtype<long long> {
  static constexpr Dtype value = sizeof(long long) == 8 ? int64 : int32;
};
template <>
struct TypeToDtype<unsigned long long> {
  static constexpr Dtype value = uint64;
};
template <>
struct TypeToDtype<char> {
  static constexpr Dtype value = int8;
};

template <typename T>
inline constexpr Dtype dtype_v = TypeToDtype<std::remove_cv_t<T>>::value;

/**
 * Calls `f(T{})` with the C++ type of `d` (a value-initialized tag). The usual way to
 * write one templated kernel body for every dtype:
 *   dispatch_dtype(out.dtype(), [&](auto tag) { using T = decltype(tag); ... });
 */
template <typename F>
decltype(auto) dispatch_dtype(Dtype d, F&& f) {
  switch (d.val) {
    case Dtype::Val::bool_: return f(bool{});
    case Dtype::Val::uint8: return f(uint8_t{});
    case Dtype::Val::uint16: return f(uint16_t{});
    case Dtype::Val::uint32: return f(uint32_t{});
    case Dtype::Val::uint64: return f(uint64_t{});
    case Dtype::Val::int8: return f(int8_t{});
    case Dtype::Val::int16: return f(int16_t{});
    case Dtype::Val::int32: return f(int32_t{});
    case Dtype::Val::int64: return f(int64_t{});
    case Dtype::Val::float16: return f(float16_t{});
    case Dtype::Val::bfloat16: return f(bfloat16_t{});
    case Dtype::Val::float32: return f(float{});
    case Dtype::Val::float64: return f(double{});
    case Dtype::Val::complex64: return f(complex64_t{});
  }
  return f(float{});  // unreachable
}

}  // namespace kiln
