// cuda::std::tuple (with make_tuple, get, tie and structured bindings) and MLX's
// elem_to_loc forms for two and three arrays, which return tuples. Included on demand: the
// generator adds it when a body or header names these (the CPU prelude always has it).
// kiln-on-demand: tuple make_tuple tie get tuple_size tuple_element elem_to_loc elem_to_loc_nd
#pragma once

#include "kiln/backend/kernels/cuda/mlx.h"
#include "kiln/backend/kernels/cuda/std.h"

#ifdef __CUDACC_RTC__
// Structured bindings look these up in namespace std, which NVRTC leaves empty.
namespace std {
template <typename T>
struct tuple_size;
template <size_t I, typename T>
struct tuple_element;
}  // namespace std
#else
#include <utility>
#endif

namespace cuda {
namespace std {

// ---------------------------------------------------------------- tuple

namespace detail {
template <size_t I, typename T>
struct tuple_leaf {
  T value;
};
template <size_t... I>
struct index_seq {};
template <size_t N, size_t... I>
struct make_index_seq : make_index_seq<N - 1, N - 1, I...> {};
template <size_t... I>
struct make_index_seq<0, I...> {
  typedef index_seq<I...> type;
};
template <typename Seq, typename... T>
struct tuple_base;
template <size_t... I, typename... T>
struct tuple_base<index_seq<I...>, T...> : tuple_leaf<I, T>... {
  tuple_base() = default;
  KILN_HD constexpr tuple_base(const T&... v) : tuple_leaf<I, T>{v}... {}
};
template <size_t I, typename T>
KILN_HD constexpr T& leaf(tuple_leaf<I, T>& l) {
  return l.value;
}
template <size_t I, typename T>
KILN_HD constexpr const T& leaf(const tuple_leaf<I, T>& l) {
  return l.value;
}
template <size_t I, typename... T>
struct nth;
template <typename H, typename... T>
struct nth<0, H, T...> {
  typedef H type;
};
template <size_t I, typename H, typename... T>
struct nth<I, H, T...> {
  typedef typename nth<I - 1, T...>::type type;
};
}  // namespace detail

template <typename... T>
struct tuple : detail::tuple_base<typename detail::make_index_seq<sizeof...(T)>::type, T...> {
  typedef detail::tuple_base<typename detail::make_index_seq<sizeof...(T)>::type, T...> base;
  tuple() = default;
  KILN_HD constexpr tuple(const T&... v) : base(v...) {}
};

template <size_t I, typename... T>
KILN_HD constexpr typename detail::nth<I, T...>::type& get(tuple<T...>& t) {
  return detail::leaf<I>(t);
}
template <size_t I, typename... T>
KILN_HD constexpr const typename detail::nth<I, T...>::type& get(const tuple<T...>& t) {
  return detail::leaf<I>(t);
}
template <size_t I, typename... T>
KILN_HD constexpr typename detail::nth<I, T...>::type&& get(tuple<T...>&& t) {
  return static_cast<typename detail::nth<I, T...>::type&&>(detail::leaf<I>(t));
}
template <typename... T>
KILN_HD constexpr tuple<T...> make_tuple(const T&... v) {
  return tuple<T...>(v...);
}

/** tie(a, b) = t: a tuple of references, assignable from a tuple of values. */
template <typename... T>
struct tie_t {
  tuple<T*...> refs;
  template <typename... U, size_t... I>
  KILN_HD void assign(const tuple<U...>& t, detail::index_seq<I...>) {
    ((*get<I>(refs) = get<I>(t)), ...);
  }
  template <typename... U>
  KILN_HD tie_t& operator=(const tuple<U...>& t) {
    assign(t, typename detail::make_index_seq<sizeof...(T)>::type());
    return *this;
  }
};
template <typename... T>
KILN_HD tie_t<T...> tie(T&... v) {
  return {tuple<T*...>(&v...)};
}

template <typename T>
struct tuple_size;
template <typename... T>
struct tuple_size<tuple<T...>> : integral_constant<size_t, sizeof...(T)> {};

}  // namespace std
}  // namespace cuda

namespace std {
template <typename... T>
struct tuple_size<cuda::std::tuple<T...>> {
  static constexpr size_t value = sizeof...(T);
};
template <size_t I, typename... T>
struct tuple_element<I, cuda::std::tuple<T...>> {
  typedef typename cuda::std::detail::nth<I, T...>::type type;
};
}  // namespace std

namespace kiln_cuda {

/** Offsets of one element in two (three) arrays of the same shape (signed, as elem_to_loc's). */
template <int NDIM, typename IdxT = int64_t>
KILN_HD cuda::std::tuple<kiln_utils::offset_t<IdxT>, kiln_utils::offset_t<IdxT>> elem_to_loc_nd(
    IdxT elem, const int* shape, const int64_t* a_strides, const int64_t* b_strides) {
  int64_t a = 0, b = 0, e = static_cast<int64_t>(elem);
  for (int i = NDIM - 1; i >= 0; --i) {
    const int64_t d = e % shape[i];
    a += d * a_strides[i];
    b += d * b_strides[i];
    e /= shape[i];
  }
  typedef kiln_utils::offset_t<IdxT> O;
  return cuda::std::make_tuple(O(a), O(b));
}
template <int NDIM, typename IdxT = int64_t>
KILN_HD cuda::std::tuple<kiln_utils::offset_t<IdxT>, kiln_utils::offset_t<IdxT>,
                         kiln_utils::offset_t<IdxT>>
elem_to_loc_nd(IdxT elem, const int* shape, const int64_t* a_strides, const int64_t* b_strides,
               const int64_t* c_strides) {
  int64_t a = 0, b = 0, c = 0, e = static_cast<int64_t>(elem);
  for (int i = NDIM - 1; i >= 0; --i) {
    const int64_t d = e % shape[i];
    a += d * a_strides[i];
    b += d * b_strides[i];
    c += d * c_strides[i];
    e /= shape[i];
  }
  typedef kiln_utils::offset_t<IdxT> O;
  return cuda::std::make_tuple(O(a), O(b), O(c));
}
template <typename IdxT = int64_t>
KILN_HD cuda::std::tuple<kiln_utils::offset_t<IdxT>, kiln_utils::offset_t<IdxT>> elem_to_loc(
    IdxT elem, const int* shape, const int64_t* a_strides, const int64_t* b_strides, int ndim) {
  int64_t a = 0, b = 0, e = static_cast<int64_t>(elem);
  for (int i = ndim - 1; i >= 0; --i) {
    const int64_t d = e % shape[i];
    a += d * a_strides[i];
    b += d * b_strides[i];
    e /= shape[i];
  }
  typedef kiln_utils::offset_t<IdxT> O;
  return cuda::std::make_tuple(O(a), O(b));
}
template <typename IdxT = int64_t>
KILN_HD cuda::std::tuple<kiln_utils::offset_t<IdxT>, kiln_utils::offset_t<IdxT>,
                         kiln_utils::offset_t<IdxT>>
elem_to_loc(IdxT elem, const int* shape, const int64_t* a_strides, const int64_t* b_strides,
            const int64_t* c_strides, int ndim) {
  int64_t a = 0, b = 0, c = 0, e = static_cast<int64_t>(elem);
  for (int i = ndim - 1; i >= 0; --i) {
    const int64_t d = e % shape[i];
    a += d * a_strides[i];
    b += d * b_strides[i];
    c += d * c_strides[i];
    e /= shape[i];
  }
  typedef kiln_utils::offset_t<IdxT> O;
  return cuda::std::make_tuple(O(a), O(b), O(c));
}

}  // namespace kiln_cuda
