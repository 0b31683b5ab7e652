// Base of the custom-kernel headers (the Metal compatibility layer and the CUDA-flavour
// prelude): function qualifiers, scalar type names and the few type traits the layer needs.
//
// Every header under kiln/backend/kernels/ is written once for two compilers: NVRTC, which
// has no standard library (KILN_HD adds __device__), and the host C++ compiler that builds
// CPU kernels. They include only each other, by repository path.
#pragma once

#if defined(__CUDACC__)
#define KILN_HD __device__ __forceinline__
#define KILN_DEVICE_CODE 1
#else
#define KILN_HD inline
#include <cmath>
#include <cstddef>
#include <cstdint>
#endif

#if defined(__CUDACC_RTC__)
// NVRTC predefines size_t but not the fixed-width integers. 64-bit types are `long long`
// as in CUDA's own atomics and intrinsics.
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
#endif

// As in Metal (and <cmath>); bit patterns, because NVRTC lacks the compiler built-ins.
#ifndef INFINITY
#define INFINITY (__builtin_bit_cast(float, 0x7f800000u))
#endif
#ifndef NAN
#define NAN (__builtin_bit_cast(float, 0x7fc00000u))
#endif

namespace metal {

// Metal's scalar names (its `long` and `ulong` are 64-bit).
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef uint64_t ulong;

namespace detail {

template <bool B, typename T = void>
struct enable_if {};
template <typename T>
struct enable_if<true, T> {
  typedef T type;
};
template <bool B, typename T = void>
using enable_if_t = typename enable_if<B, T>::type;

template <bool B, typename T, typename F>
struct conditional {
  typedef T type;
};
template <typename T, typename F>
struct conditional<false, T, F> {
  typedef F type;
};
template <bool B, typename T, typename F>
using conditional_t = typename conditional<B, T, F>::type;

template <typename A, typename B>
inline constexpr bool is_same_v = false;
template <typename A>
inline constexpr bool is_same_v<A, A> = true;

template <typename T>
struct remove_cv {
  typedef T type;
};
template <typename T>
struct remove_cv<const T> {
  typedef T type;
};
template <typename T>
struct remove_cv<volatile T> {
  typedef T type;
};
template <typename T>
struct remove_cv<const volatile T> {
  typedef T type;
};
template <typename T>
using remove_cv_t = typename remove_cv<T>::type;

template <typename T>
struct is_integral_impl {
  static constexpr bool value = false;
};
#define KILN_INTEGRAL(T)                \
  template <>                           \
  struct is_integral_impl<T> {          \
    static constexpr bool value = true; \
  };
KILN_INTEGRAL(bool)
KILN_INTEGRAL(char)
KILN_INTEGRAL(signed char)
KILN_INTEGRAL(unsigned char)
KILN_INTEGRAL(short)
KILN_INTEGRAL(unsigned short)
KILN_INTEGRAL(int)
KILN_INTEGRAL(unsigned int)
KILN_INTEGRAL(long)
KILN_INTEGRAL(unsigned long)
KILN_INTEGRAL(long long)
KILN_INTEGRAL(unsigned long long)
#undef KILN_INTEGRAL

/** bool and the built-in integer types. */
template <typename T>
inline constexpr bool is_integral_v = is_integral_impl<remove_cv_t<T>>::value;
/** float and double (the half types are classes: see is_half_v in half.h). */
template <typename T>
inline constexpr bool is_builtin_float_v =
    is_same_v<remove_cv_t<T>, float> || is_same_v<remove_cv_t<T>, double>;
/** The built-in arithmetic types. */
template <typename T>
inline constexpr bool is_arithmetic_v = is_integral_v<T> || is_builtin_float_v<T>;
template <typename T, bool = is_arithmetic_v<T>>
struct is_signed_impl {
  static constexpr bool value = false;
};
template <typename T>
struct is_signed_impl<T, true> {
  static constexpr bool value = T(-1) < T(0);
};
/** A signed arithmetic type (false for any other type, vectors included). */
template <typename T>
inline constexpr bool is_signed_v = is_signed_impl<T>::value;

template <typename T>
struct make_unsigned {
  typedef T type;
};
#define KILN_UNSIGNED(S, U) \
  template <>               \
  struct make_unsigned<S> { \
    typedef U type;         \
  };
KILN_UNSIGNED(char, unsigned char)
KILN_UNSIGNED(signed char, unsigned char)
KILN_UNSIGNED(short, unsigned short)
KILN_UNSIGNED(int, unsigned int)
KILN_UNSIGNED(long, unsigned long)
KILN_UNSIGNED(long long, unsigned long long)
#undef KILN_UNSIGNED

}  // namespace detail

/** Metal's reinterpretation of the bits of `x` as a `To` of the same size. */
template <typename To, typename From>
KILN_HD To as_type(const From& x) {
  static_assert(sizeof(To) == sizeof(From), "as_type: the types must have the same size");
  return __builtin_bit_cast(To, x);
}

}  // namespace metal
