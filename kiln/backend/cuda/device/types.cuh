// Element types on the device, named after kiln's dtypes (kiln::float32, kiln::bool_, ...),
// so that host code can spell a kernel's template arguments as "kiln::" + type_to_name(d).
//
// Device headers are compiled by NVRTC at run time and include only each other: no toolkit
// header is needed where kiln runs. Half types are 16-bit storage types that compute in
// float, with conversions that round to nearest even like the CPU backend's.
#pragma once

namespace kiln {

using bool_ = bool;
using uint8 = unsigned char;
using uint16 = unsigned short;
using uint32 = unsigned int;
using uint64 = unsigned long long;
using int8 = signed char;
using int16 = short;
using int32 = int;
using int64 = long long;
using float32 = float;
using float64 = double;

// ---------------------------------------------------------------- traits

template <typename A, typename B>
inline constexpr bool is_same_v = false;
template <typename A>
inline constexpr bool is_same_v<A, A> = true;

template <typename T>
inline constexpr bool always_false_v = false;

/** The bits of `v` read as a To of the same size (a bit cast). */
template <typename To, typename From>
__device__ inline To bits_as(From v) {
  static_assert(sizeof(To) == sizeof(From), "bit casts keep the size");
  union {
    From f;
    To t;
  } u;
  u.f = v;
  return u.t;
}

// ---------------------------------------------------------------- half types

namespace detail {

__device__ inline unsigned short float_to_half_bits(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

__device__ inline float half_bits_to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

__device__ inline unsigned short float_to_bfloat_bits(float f) {
#if __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  unsigned int x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return static_cast<unsigned short>(x >> 16);
#endif
}

__device__ inline float bfloat_bits_to_float(unsigned short b) {
  return __uint_as_float(static_cast<unsigned int>(b) << 16);
}

}  // namespace detail

/** IEEE binary16. */
struct float16 {
  unsigned short bits;
  float16() = default;
  __device__ explicit float16(float f) : bits(detail::float_to_half_bits(f)) {}
  __device__ operator float() const { return detail::half_bits_to_float(bits); }
};

/** bfloat16: the upper half of a float32. */
struct bfloat16 {
  unsigned short bits;
  bfloat16() = default;
  __device__ explicit bfloat16(float f) : bits(detail::float_to_bfloat_bits(f)) {}
  __device__ operator float() const { return detail::bfloat_bits_to_float(bits); }
};

template <typename T>
inline constexpr bool is_half_v = is_same_v<T, float16> || is_same_v<T, bfloat16>;

// Arithmetic computes in float and rounds back, as scalar half arithmetic on the GPU does.
#define KILN_HALF_OPS(H)                        \
  __device__ inline H operator+(H a, H b) {     \
    return H(float(a) + float(b));              \
  }                                             \
  __device__ inline H operator-(H a, H b) {     \
    return H(float(a) - float(b));              \
  }                                             \
  __device__ inline H operator*(H a, H b) {     \
    return H(float(a) * float(b));              \
  }                                             \
  __device__ inline H operator/(H a, H b) {     \
    return H(float(a) / float(b));              \
  }                                             \
  __device__ inline H operator-(H a) {          \
    return H(-float(a));                        \
  }                                             \
  __device__ inline bool operator==(H a, H b) { \
    return float(a) == float(b);                \
  }                                             \
  __device__ inline bool operator!=(H a, H b) { \
    return float(a) != float(b);                \
  }                                             \
  __device__ inline bool operator<(H a, H b) {  \
    return float(a) < float(b);                 \
  }                                             \
  __device__ inline bool operator<=(H a, H b) { \
    return float(a) <= float(b);                \
  }                                             \
  __device__ inline bool operator>(H a, H b) {  \
    return float(a) > float(b);                 \
  }                                             \
  __device__ inline bool operator>=(H a, H b) { \
    return float(a) >= float(b);                \
  }
KILN_HALF_OPS(float16)
KILN_HALF_OPS(bfloat16)
#undef KILN_HALF_OPS

// ---------------------------------------------------------------- complex

/** complex64: two float32, laid out as std::complex<float>. */
struct alignas(8) complex64 {
  float re, im;
};

__device__ inline complex64 operator+(complex64 a, complex64 b) {
  return {a.re + b.re, a.im + b.im};
}
__device__ inline complex64 operator-(complex64 a, complex64 b) {
  return {a.re - b.re, a.im - b.im};
}
__device__ inline complex64 operator*(complex64 a, complex64 b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
__device__ inline complex64 operator-(complex64 a) {
  return {-a.re, -a.im};
}
__device__ inline bool operator==(complex64 a, complex64 b) {
  return a.re == b.re && a.im == b.im;
}
__device__ inline bool operator!=(complex64 a, complex64 b) {
  return !(a == b);
}

// ---------------------------------------------------------------- categories

template <typename T>
inline constexpr bool is_complex_v = is_same_v<T, complex64>;
template <typename T>
inline constexpr bool is_floating_v = is_same_v<T, float> || is_same_v<T, double> || is_half_v<T>;
template <typename T>
inline constexpr bool is_integral_v =
    is_same_v<T, bool> || is_same_v<T, uint8> || is_same_v<T, uint16> || is_same_v<T, uint32> ||
    is_same_v<T, uint64> || is_same_v<T, int8> || is_same_v<T, int16> || is_same_v<T, int32> ||
    is_same_v<T, int64>;
template <typename T>
inline constexpr bool is_signed_int_v =
    is_same_v<T, int8> || is_same_v<T, int16> || is_same_v<T, int32> || is_same_v<T, int64>;
template <typename T>
inline constexpr bool is_unsigned_int_v =
    is_same_v<T, uint8> || is_same_v<T, uint16> || is_same_v<T, uint32> || is_same_v<T, uint64>;
/** Integers, not bool. */
template <typename T>
inline constexpr bool is_int_v = is_signed_int_v<T> || is_unsigned_int_v<T>;

// ---------------------------------------------------------------- computation types

/** The type elementwise functors compute in: the half types widen to float (and the result
 * is rounded once, by the kernel's conversion to the output type), as on the CPU. */
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<float16> {
  using type = float;
};
template <>
struct ComputeType<bfloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;

/** Unsigned arithmetic of at least int's width, in which integer arithmetic wraps instead
 * of overflowing (the CPU backend's Wide<T>). */
template <typename T>
struct WideType {
  using type = unsigned int;
};
template <>
struct WideType<int64> {
  using type = unsigned long long;
};
template <>
struct WideType<uint64> {
  using type = unsigned long long;
};
template <typename T>
using wide_t = typename WideType<T>::type;

/** +infinity of float or double. */
template <typename T>
__device__ inline T infinity() {
  if constexpr (is_same_v<T, float>)
    return __int_as_float(0x7f800000);
  else
    return __longlong_as_double(0x7ff0000000000000ll);
}

}  // namespace kiln
