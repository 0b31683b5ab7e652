// <metal_type_traits> for Metal bodies and headers: the standard-style traits under metal::
// (integral_constant, bool_constant, true_type/false_type, is_same, enable_if, conditional,
// remove_cv/const/volatile/reference/pointer, add_const/pointer/lvalue_reference, decay,
// is_integral, is_floating_point (half and bfloat included), is_arithmetic, is_scalar,
// is_signed, is_unsigned, is_vector, is_pointer, is_reference, is_const, is_void,
// is_convertible, make_signed, make_unsigned, void_t, declval, vec_elements, make_scalar,
// and their _t/_v forms), with Metal's answers for its own types. MLX's own headers
// (included by some bodies) name these. Included on demand on the GPU (the CPU preludes
// always have it).
// kiln-on-demand: is_* remove_* add_* make_scalar* make_signed* make_unsigned* enable_if* conditional* decay* void_t declval integral_constant bool_constant true_type false_type vec_elements*
#pragma once

#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/half.h"
#include "kiln/backend/kernels/metal/vec.h"

namespace metal {

template <typename T, T v>
struct integral_constant {
  static constexpr T value = v;
  typedef T value_type;
  typedef integral_constant type;
  KILN_HD constexpr operator T() const { return v; }
  KILN_HD constexpr T operator()() const { return v; }
};
template <bool B>
using bool_constant = integral_constant<bool, B>;
typedef bool_constant<true> true_type;
typedef bool_constant<false> false_type;

template <typename A, typename B>
struct is_same : bool_constant<detail::is_same_v<A, B>> {};
using detail::is_same_v;

using detail::conditional;
using detail::conditional_t;
using detail::enable_if;
using detail::enable_if_t;
using detail::remove_cv;
using detail::remove_cv_t;

template <typename T>
struct remove_const {
  typedef T type;
};
template <typename T>
struct remove_const<const T> {
  typedef T type;
};
template <typename T>
using remove_const_t = typename remove_const<T>::type;
template <typename T>
struct remove_volatile {
  typedef T type;
};
template <typename T>
struct remove_volatile<volatile T> {
  typedef T type;
};
template <typename T>
using remove_volatile_t = typename remove_volatile<T>::type;
template <typename T>
struct remove_reference {
  typedef typename detail::remove_ref<T>::type type;
};
template <typename T>
using remove_reference_t = typename detail::remove_ref<T>::type;
template <typename T>
using remove_cvref_t = remove_cv_t<remove_reference_t<T>>;
template <typename T>
struct remove_pointer {
  typedef T type;
};
template <typename T>
struct remove_pointer<T*> {
  typedef T type;
};
template <typename T>
struct remove_pointer<T* const> {
  typedef T type;
};
template <typename T>
using remove_pointer_t = typename remove_pointer<T>::type;
template <typename T>
struct add_const {
  typedef const T type;
};
template <typename T>
using add_const_t = const T;
template <typename T>
struct add_pointer {
  typedef remove_reference_t<T>* type;
};
template <typename T>
using add_pointer_t = remove_reference_t<T>*;
template <typename T>
struct add_lvalue_reference {
  typedef T& type;
};
template <typename T>
using add_lvalue_reference_t = T&;

template <typename T>
struct is_const : false_type {};
template <typename T>
struct is_const<const T> : true_type {};
template <typename T>
inline constexpr bool is_const_v = is_const<T>::value;
template <typename T>
struct is_pointer : false_type {};
template <typename T>
struct is_pointer<T*> : true_type {};
template <typename T>
struct is_pointer<T* const> : true_type {};
template <typename T>
inline constexpr bool is_pointer_v = is_pointer<T>::value;
template <typename T>
struct is_reference : false_type {};
template <typename T>
struct is_reference<T&> : true_type {};
template <typename T>
struct is_reference<T&&> : true_type {};
template <typename T>
inline constexpr bool is_reference_v = is_reference<T>::value;
template <typename T>
struct is_void : bool_constant<is_same_v<remove_cv_t<T>, void>> {};
template <typename T>
inline constexpr bool is_void_v = is_void<T>::value;
template <typename T>
struct is_array : false_type {};
template <typename T>
struct is_array<T[]> : true_type {};
template <typename T, size_t N>
struct is_array<T[N]> : true_type {};
template <typename T>
inline constexpr bool is_array_v = is_array<T>::value;

template <typename T>
struct decay {
  typedef remove_cvref_t<T> type;
};
template <typename T, size_t N>
struct decay<T[N]> {
  typedef T* type;
};
template <typename T>
using decay_t = typename decay<remove_reference_t<T>>::type;

template <typename...>
using void_t = void;

template <typename T>
T&& declval() noexcept;

/** bool, the integer types. */
template <typename T>
struct is_integral : bool_constant<detail::is_integral_v<T>> {};
template <typename T>
inline constexpr bool is_integral_v = detail::is_integral_v<T>;
/** half, bfloat, float (and double). */
template <typename T>
struct is_floating_point : bool_constant<detail::is_builtin_float_v<T> || is_half_v<T>> {};
template <typename T>
inline constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <typename T>
struct is_arithmetic : bool_constant<is_integral_v<T> || is_floating_point_v<T>> {};
template <typename T>
inline constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <typename T>
struct is_scalar : bool_constant<is_arithmetic_v<T> || is_pointer_v<T>> {};
template <typename T>
inline constexpr bool is_scalar_v = is_scalar<T>::value;
template <typename T>
struct is_signed : bool_constant<(is_integral_v<T> && detail::is_signed_v<remove_cv_t<T>>) ||
                                 is_floating_point_v<T>> {};
template <typename T>
inline constexpr bool is_signed_v = is_signed<T>::value;
template <typename T>
struct is_unsigned : bool_constant<is_integral_v<T> && !detail::is_signed_v<remove_cv_t<T>>> {};
template <typename T>
inline constexpr bool is_unsigned_v = is_unsigned<T>::value;

/** Metal's vector types (and swizzles of them). */
template <typename T>
struct is_vector : bool_constant<is_vec_v<T>> {};
template <typename T>
inline constexpr bool is_vector_v = is_vec_v<T>;
/** The number of components (1 for a scalar). */
template <typename T, typename = void>
struct vec_elements : integral_constant<int, 1> {};
template <typename T>
struct vec_elements<T, enable_if_t<is_vec_v<T>>>
    : integral_constant<int, detail::vec_traits<remove_cv_t<T>>::size> {};
template <typename T>
inline constexpr int vec_elements_v = vec_elements<T>::value;
/** The component type of a vector (a scalar's own type). */
template <typename T, typename = void>
struct make_scalar {
  typedef T type;
};
template <typename T>
struct make_scalar<T, enable_if_t<is_vec_v<T>>> {
  typedef typename detail::vec_traits<remove_cv_t<T>>::elem type;
};
template <typename T>
using make_scalar_t = typename make_scalar<T>::type;

template <typename T>
struct make_unsigned {
  typedef typename detail::make_unsigned<remove_cv_t<T>>::type type;
};
template <typename T>
using make_unsigned_t = typename make_unsigned<T>::type;
template <typename T>
struct make_signed {
  typedef T type;
};
#define KILN_SIGNED(U, S) \
  template <>             \
  struct make_signed<U> { \
    typedef S type;       \
  };
KILN_SIGNED(unsigned char, signed char)
KILN_SIGNED(char, signed char)
KILN_SIGNED(unsigned short, short)
KILN_SIGNED(unsigned int, int)
KILN_SIGNED(unsigned long, long)
KILN_SIGNED(unsigned long long, long long)
#undef KILN_SIGNED
template <typename T>
using make_signed_t = typename make_signed<T>::type;

namespace detail {
template <typename From, typename To, typename = void>
struct convertible : false_type {};
template <typename From, typename To>
struct convertible<From, To,
                   void_t<decltype(static_cast<void (*)(To)>(nullptr)(metal::declval<From>()))>>
    : true_type {};
}  // namespace detail
/** Whether a From converts implicitly to To. */
template <typename From, typename To>
struct is_convertible
    : bool_constant<is_void_v<From> ? is_void_v<To> : detail::convertible<From, To>::value> {};
template <typename From, typename To>
inline constexpr bool is_convertible_v = is_convertible<From, To>::value;

}  // namespace metal
