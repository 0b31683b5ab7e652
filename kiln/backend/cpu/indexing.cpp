// eval_cpu of the indexing primitives (Gather, Scatter, GatherAxis, ScatterAxis).
//
// Index arrays are first decoded into element offsets of the target (negative indices
// wrapped, bounds checked) in small windows, then the data moves. Decoding and moving are
// dispatched separately, on the index dtype and on the value type, so the kernels
// instantiate 8 + 14 times instead of 8 x 14.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/elementwise.h"
#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_indexing.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// Index positions decoded at a time: 16 KiB of offsets, which stay in L1.
constexpr int64_t kWindow = 2048;
// Elements a run is cut into for the one-axis kernels (a stack buffer of offsets).
constexpr int64_t kChunk = 512;
// Gathers and scatters read at random: split them finer than streaming loops.
constexpr size_t kGrain = cpu::kElementwiseGrain / 4;

// ---------------------------------------------------------------- strided walks

/**
 * Calls f(offsets, n) for the runs of the last dimension that cover row-major elements
 * [begin, end) of `shape` (collapsed, at least one dimension); the first run may start in
 * the middle of a row. Within a run operand k advances by strides[k].back().
 */
template <size_t K, typename F>
void for_each_run_in(const Shape& shape, const std::array<Strides, K>& strides, int64_t begin,
                     int64_t end, F&& f) {
  if (begin >= end) return;
  const int nd = static_cast<int>(shape.size());
  const int64_t len = shape[nd - 1];
  std::vector<int64_t> pos(nd);
  std::array<int64_t, K> off{};
  int64_t r = begin;
  for (int i = nd - 1; i >= 0; --i) {
    pos[i] = r % shape[i];
    r /= shape[i];
    for (size_t k = 0; k < K; ++k) off[k] += pos[i] * strides[k][i];
  }
  while (true) {
    const int64_t n = std::min(len - pos[nd - 1], end - begin);
    f(off, n);
    begin += n;
    if (begin >= end) return;
    // The run reached the end of its row: rewind it and carry into the outer dimensions.
    for (size_t k = 0; k < K; ++k) off[k] -= pos[nd - 1] * strides[k][nd - 1];
    pos[nd - 1] = 0;
    for (int i = nd - 2; i >= 0; --i) {
      for (size_t k = 0; k < K; ++k) off[k] += strides[k][i];
      if (++pos[i] < shape[i]) break;
      for (size_t k = 0; k < K; ++k) off[k] -= shape[i] * strides[k][i];
      pos[i] = 0;
    }
  }
}

/** Removes dimension `axis` from a shape or stride vector. */
template <typename V>
V drop(const V& v, int axis) {
  V out(v);
  out.erase(out.begin() + axis);
  return out;
}

template <typename V>
V take_range(const V& v, size_t begin, size_t end) {
  return V(v.begin() + begin, v.begin() + end);
}

// Same-dtype data movement only needs the item size.
template <typename F>
void dispatch_bits(size_t itemsize, F&& f) {
  switch (itemsize) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

// ---------------------------------------------------------------- index decoding

/** What an index array selects along its axis: for bounds checks, messages and offsets. */
struct AxisInfo {
  const char* op;  // user-facing op tag
  int axis;        // the axis as the op's caller numbered it
  int64_t size;    // extent of the axis
  int64_t slice;   // elements taken from the start; a start must leave room for them
  int64_t stride;  // elements between neighbours along the axis in the target
};

template <typename I>
[[noreturn]] void throw_out_of_range(I value, const AxisInfo& info) {
  std::string v = std::is_signed_v<I> ? std::to_string(static_cast<int64_t>(value))
                                      : std::to_string(static_cast<uint64_t>(value));
  if (info.slice > 1) {
    throw std::out_of_range(msg("[", info.op, "] Index ", v, " with slice size ", info.slice,
                                " is out of bounds for axis ", info.axis, " with size ", info.size,
                                "."));
  }
  throw std::out_of_range(msg("[", info.op, "] Index ", v, " is out of bounds for axis ", info.axis,
                              " with size ", info.size, "."));
}

// The wrapped index of v, or a value above `last` when v is out of range. Branch-free, so
// random signs cost no mispredictions; the rare error is located afterwards.
template <typename I>
inline uint64_t wrapped(I v, int64_t size) {
  if constexpr (std::is_signed_v<I>) {
    const int64_t i = static_cast<int64_t>(v);
    return static_cast<uint64_t>(i + (size & (i >> 63)));  // i < 0 ? i + size : i
  } else {
    return static_cast<uint64_t>(v);
  }
}

template <typename I, bool Accumulate, bool Unit>
bool decode_loop(const I* p, int64_t stride, int64_t n, int64_t size, uint64_t last, int64_t mult,
                 int64_t* out) {
  bool bad = false;
  for (int64_t j = 0; j < n; ++j) {
    const uint64_t i = wrapped(p[Unit ? j : j * stride], size);
    bad |= i > last;
    const int64_t off = static_cast<int64_t>(i) * mult;
    if constexpr (Accumulate)
      out[j] += off;
    else
      out[j] = off;
  }
  return bad;
}

/** out[j] = (or +=) wrap(p[j * stride]) * info.stride for j < n; throws std::out_of_range
 * for an index outside [-size, size - slice]. */
template <typename I, bool Accumulate>
void decode_run(const void* data, int64_t stride, int64_t n, const AxisInfo& info, int64_t* out) {
  const I* p = static_cast<const I*>(data);
  const int64_t last = info.size - std::max<int64_t>(info.slice, 1);  // largest valid start
  // As unsigned, a negative `last` (an empty axis) rejects every index.
  const uint64_t ulast = last < 0 ? 0 : static_cast<uint64_t>(last);
  bool bad = last < 0 && n > 0;
  bad |= stride == 1
             ? decode_loop<I, Accumulate, true>(p, 1, n, info.size, ulast, info.stride, out)
             : decode_loop<I, Accumulate, false>(p, stride, n, info.size, ulast, info.stride, out);
  if (bad) [[unlikely]] {
    for (int64_t j = 0; j < n; ++j) {
      const I v = p[j * stride];
      if (last < 0 || wrapped(v, info.size) > ulast) throw_out_of_range(v, info);
    }
  }
}

using DecodeFn = void (*)(const void*, int64_t, int64_t, const AxisInfo&, int64_t*);

template <bool Accumulate>
DecodeFn decoder(Dtype d) {
  return dispatch_dtype(d, [](auto tag) -> DecodeFn {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      return &decode_run<I, Accumulate>;
    } else {
      throw std::invalid_argument("[indexing] Index arrays must have an integer dtype.");
    }
  });
}

/** One index array of a Gather/Scatter, walked in row-major order of the index shape. */
struct IndexOperand {
  const char* data;  // bytes, at element 0
  int64_t itemsize;
  Shape shape;  // the index shape, collapsed
  Strides strides;
  DecodeFn set, add;
  AxisInfo info;

  IndexOperand(const array& idx, const AxisInfo& axis_info)
      : data(idx.data<char>()),
        itemsize(static_cast<int64_t>(idx.itemsize())),
        set(decoder<false>(idx.dtype())),
        add(decoder<true>(idx.dtype())),
        info(axis_info) {
    auto [cshape, cstrides] = collapse_contiguous_dims<1>(idx.shape(), {idx.strides()});
    shape = std::move(cshape);
    strides = std::move(cstrides[0]);
  }

  /** Decodes positions [n0, n0 + count) into out (accumulating if `accumulate`). */
  void decode(int64_t n0, int64_t count, bool accumulate, int64_t* out) const {
    DecodeFn fn = accumulate ? add : set;
    for_each_run_in<1>(shape, {strides}, n0, n0 + count,
                       [&](const std::array<int64_t, 1>& o, int64_t n) {
                         fn(data + o[0] * itemsize, strides.back(), n, info, out);
                         out += n;
                       });
  }
};

/** The target offsets of the slices selected by index positions [n0, n0 + count): the sum
 * over index arrays of wrapped index times the target's stride along its axis. */
void decode_starts(const std::vector<IndexOperand>& operands, int64_t n0, int64_t count,
                   int64_t* out) {
  if (operands.empty()) std::fill(out, out + count, 0);
  for (size_t k = 0; k < operands.size(); ++k) operands[k].decode(n0, count, k > 0, out);
}

/** Offsets of row-major positions [n0, n0 + count) of a strided walk (collapsed shape). */
void position_offsets(const Shape& shape, const Strides& strides, int64_t n0, int64_t count,
                      int64_t* out) {
  for_each_run_in<1>(shape, {strides}, n0, n0 + count,
                     [&](const std::array<int64_t, 1>& off, int64_t n) {
                       for (int64_t j = 0; j < n; ++j) *out++ = off[0] + j * strides.back();
                     });
}

/** decode_starts over a sliding window of kWindow positions, for one thread's walk. */
class StartWindow {
 public:
  explicit StartWindow(const std::vector<IndexOperand>& operands) : operands_(operands) {}

  /** Decodes positions [n, min(n + kWindow, limit)) unless n is already decoded; returns
   * n's offset, valid up to position hi(). */
  const int64_t* at(int64_t n, int64_t limit) {
    if (n < lo_ || n >= hi_) fill(n, limit);
    return buf_ + (n - lo_);
  }
  int64_t hi() const { return hi_; }

 private:
  void fill(int64_t n, int64_t limit) {
    lo_ = n;
    hi_ = std::min(n + kWindow, limit);
    decode_starts(operands_, lo_, hi_ - lo_, buf_);
  }

  const std::vector<IndexOperand>& operands_;
  int64_t lo_ = 0, hi_ = 0;
  int64_t buf_[kWindow];
};

std::vector<IndexOperand> index_operands(const std::vector<array>& inputs, size_t first,
                                         const std::vector<int>& axes, const Shape& slice,
                                         const array& target, const char* op) {
  std::vector<IndexOperand> out;
  out.reserve(axes.size());
  for (size_t k = 0; k < axes.size(); ++k) {
    int ax = axes[k];
    out.emplace_back(inputs[first + k],
                     AxisInfo{op, ax, target.shape(ax), slice[ax], target.strides()[ax]});
  }
  return out;
}

// The first indexed axis: slice axes before it are iterated outside the index positions,
// the others inside, which follows the memory order of NumPy-style results (see Gather).
int split_axis(const std::vector<int>& axes) {
  return axes.empty() ? 0 : *std::min_element(axes.begin(), axes.end());
}

/** The scatter's output starts as `a`: its buffer when nothing else holds it, else a
 * copy (keeping a contiguous layout). Offsets below use out.strides(). */
void init_from(const array& a, array& out) {
  if (a.flags().contiguous && a.is_donatable() && !a.storage().has_device()) {
    out.copy_shared_buffer(a);
  } else {
    cpu::copy(a, out, a.flags().contiguous ? cpu::CopyType::vector : cpu::CopyType::general);
  }
}

// ---------------------------------------------------------------- reductions

struct Assign {
  template <typename T>
  void operator()(T& d, T u) const {
    d = u;
  }
};
struct Sum {
  template <typename T>
  void operator()(T& d, T u) const {
    if constexpr (std::is_same_v<T, bool>)
      d = d || u;
    else
      d = static_cast<T>(d + u);
  }
};
struct Prod {
  template <typename T>
  void operator()(T& d, T u) const {
    if constexpr (std::is_same_v<T, bool>)
      d = d && u;
    else
      d = static_cast<T>(d * u);
  }
};
template <typename T>
bool is_nan(T v) {
  if constexpr (is_half_v<T>)
    return std::isnan(static_cast<float>(v));
  else if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}
// NaN propagates, as in maximum/minimum.
struct Max {
  template <typename T>
  void operator()(T& d, T u) const {
    if (u > d || is_nan(u)) d = u;
  }
};
struct Min {
  template <typename T>
  void operator()(T& d, T u) const {
    if (u < d || is_nan(u)) d = u;
  }
};

/** Calls f(T{}, Op{}) for the value type and combiner of `reduce`: assignments move bits,
 * the others compute in the dtype (max/min have no complex form). */
template <typename F>
void dispatch_reduce(ScatterReduce reduce, Dtype dtype, F&& f) {
  if (reduce == ScatterReduce::none) {
    dispatch_bits(dtype.size, [&](auto t) { f(t, Assign{}); });
    return;
  }
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    switch (reduce) {
      case ScatterReduce::sum:
        return f(t, Sum{});
      case ScatterReduce::prod:
        return f(t, Prod{});
      case ScatterReduce::max:
      case ScatterReduce::min:
        if constexpr (is_complex_v<T>) {
          throw std::invalid_argument("[scatter] max/min are not defined for complex values.");
        } else if (reduce == ScatterReduce::max) {
          return f(t, Max{});
        } else {
          return f(t, Min{});
        }
      case ScatterReduce::none:
        break;
    }
  });
}

// ---------------------------------------------------------------- Gather

/** Gather as three nested loops over O outer slice elements, P index positions and I
 * inner slice elements; the output is dense in exactly that order. */
struct GatherPlan {
  std::vector<IndexOperand> operands;
  int64_t O, P, I;
  Shape oshape, ishape;  // collapsed outer / inner slice shapes
  Strides osrc, isrc;    // their strides in the source
};

template <typename T>
void gather_range(const T* src, T* dst, const GatherPlan& g, int64_t e0, int64_t e1) {
  const int64_t P = g.P, I = g.I;
  const bool inner1d = g.ishape.size() == 1;
  const int64_t si = g.isrc.back();
  StartWindow starts(g.operands);
  int64_t e = e0;
  while (e < e1) {
    const int64_t r = e / I, o = r / P;
    int64_t n = r - o * P, w = e - r * I;
    const T* so = src + elem_to_loc(o, g.oshape, g.osrc);
    // Positions of this outer element that the range reaches.
    const int64_t n_end = std::min(P, (e1 + I - 1) / I - o * P);
    while (n < n_end) {
      const int64_t* st = starts.at(n, n_end);
      // A window decoded for an earlier outer element may reach past this range's end.
      const int64_t avail = std::min(starts.hi(), n_end) - n;
      if (I == 1) {
        T* d = dst + e;
        for (int64_t j = 0; j < avail; ++j) d[j] = so[st[j]];
        e += avail;
      } else {
        for (int64_t j = 0; j < avail; ++j) {
          const int64_t cnt = std::min(I - w, e1 - e);
          const T* s = so + st[j];
          T* d = dst + e;
          if (inner1d && si == 1) {
            std::memcpy(d, s + w, cnt * sizeof(T));
          } else if (inner1d) {
            for (int64_t i = 0; i < cnt; ++i) d[i] = s[(w + i) * si];
          } else {
            // Multi-dimensional slices are split by whole rows only (w == 0, cnt == I).
            for_each_run_in<1>(g.ishape, {g.isrc}, 0, I,
                               [&](const std::array<int64_t, 1>& off, int64_t m) {
                                 for (int64_t i = 0; i < m; ++i) d[i] = s[off[0] + i * si];
                                 d += m;
                               });
          }
          e += cnt;
          w = 0;
        }
      }
      n += avail;
    }
  }
}

}  // namespace

void Gather::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  const Shape pshape = inputs.size() > 1 ? inputs[1].shape() : Shape{};
  const int nd = static_cast<int>(src.ndim());
  const int pd = static_cast<int>(pshape.size());
  const int m = split_axis(axes_);
  // The output's trailing axes: slice_sizes_, or what a shapeless replay made of them.
  const Shape slice_sizes(out.shape().begin() + pd, out.shape().end());

  GatherPlan g;
  g.operands = index_operands(inputs, 1, axes_, slice_sizes, src, op_);
  Shape outer = take_range(slice_sizes, 0, m), inner = take_range(slice_sizes, m, nd);
  g.O = shape_size(outer);
  g.P = shape_size(pshape);
  g.I = shape_size(inner);
  {
    auto [s, st] = collapse_contiguous_dims<1>(outer, {take_range(src.strides(), 0, m)});
    g.oshape = std::move(s);
    g.osrc = std::move(st[0]);
  }
  {
    auto [s, st] = collapse_contiguous_dims<1>(inner, {take_range(src.strides(), m, nd)});
    g.ishape = std::move(s);
    g.isrc = std::move(st[0]);
  }

  // Memory order (outer slice axes, index axes, inner slice axes): for take(a, idx, axis)
  // and NumPy's a[:, idx] this is the row-major order of the result once the index axes
  // are moved to `axis`, so the caller's transpose is a contiguous view.
  Strides strides(out.ndim());
  int64_t acc = 1;
  for (int d = nd - 1; d >= m; --d) {
    strides[pd + d] = acc;
    acc *= std::max(slice_sizes[d], 1);
  }
  for (int d = pd - 1; d >= 0; --d) {
    strides[d] = acc;
    acc *= std::max(pshape[d], 1);
  }
  for (int d = m - 1; d >= 0; --d) {
    strides[pd + d] = acc;
    acc *= std::max(slice_sizes[d], 1);
  }
  auto [flags, data_size] = array::layout(out.shape(), strides);
  out.set_data(Storage::host(out.nbytes()), out.size(), strides, flags);

  const int64_t E = g.O * g.P * g.I;
  if (E == 0) {
    // Nothing to move, but every index must still be in range.
    StartWindow starts(g.operands);
    for (int64_t n = 0; n < g.P; n += kWindow) starts.at(n, g.P);
    return;
  }
  dispatch_bits(out.itemsize(), [&](auto tag) {
    using T = decltype(tag);
    const T* s = src.data<T>();
    T* d = out.data<T>();
    if (g.ishape.size() == 1) {
      cpu::parallel_for(E, kGrain, [&](size_t b, size_t e) { gather_range(s, d, g, b, e); });
    } else {
      // Multi-dimensional inner slices: split at whole slices.
      cpu::parallel_for(g.O * g.P, std::max<int64_t>(1, kGrain / g.I),
                        [&](size_t b, size_t e) { gather_range(s, d, g, b * g.I, e * g.I); });
    }
  });
}

// ---------------------------------------------------------------- Scatter

namespace {

/** Scatter as loops over O outer update-slice elements, P index positions and I inner
 * update-slice elements (the split of GatherPlan). */
struct ScatterPlan {
  std::vector<IndexOperand> operands;
  int64_t O, P, I;
  Shape oshape, ishape, pshape;  // collapsed
  Strides oupd, oout, iupd, iout, pupd;
};

/** Applies positions [n0, n0 + count) (target offsets `st`, update offsets `uo`) to the
 * slice elements [w0, w1) of W = O * I. */
template <typename T, typename Op>
void scatter_apply(T* dst, const T* upd, const ScatterPlan& p, const int64_t* st, const int64_t* uo,
                   int64_t count, int64_t w0, int64_t w1, Op op) {
  const bool inner1d = p.ishape.size() == 1;
  const int64_t iu = p.iupd.back(), io = p.iout.back();
  while (w0 < w1) {
    const int64_t o = w0 / p.I, ia = w0 - o * p.I, ib = std::min(p.I, w1 - o * p.I);
    T* d0 = dst + elem_to_loc(o, p.oshape, p.oout);
    const T* u0 = upd + elem_to_loc(o, p.oshape, p.oupd);
    if (p.I == 1) {
      for (int64_t j = 0; j < count; ++j) op(d0[st[j]], u0[uo[j]]);
    } else if (inner1d) {
      for (int64_t j = 0; j < count; ++j) {
        T* d = d0 + st[j];
        const T* u = u0 + uo[j];
        for (int64_t i = ia; i < ib; ++i) op(d[i * io], u[i * iu]);
      }
    } else {
      for (int64_t j = 0; j < count; ++j) {
        T* d = d0 + st[j];
        const T* u = u0 + uo[j];
        for_each_run_in<2>(p.ishape, {p.iupd, p.iout}, 0, p.I,
                           [&](const std::array<int64_t, 2>& off, int64_t n) {
                             for (int64_t i = 0; i < n; ++i)
                               op(d[off[1] + i * io], u[off[0] + i * iu]);
                           });
      }
    }
    w0 = (o + 1) * p.I;
  }
}

}  // namespace

void Scatter::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& upd = inputs.back();
  init_from(a, out);

  const int nd = static_cast<int>(a.ndim());
  const int pd = static_cast<int>(upd.ndim()) - nd;
  const int m = split_axis(axes_);
  const Shape slice = take_range(upd.shape(), pd, pd + nd);
  const Strides uslice = take_range(upd.strides(), pd, pd + nd);

  ScatterPlan p;
  p.operands = index_operands(inputs, 1, axes_, slice, out, op_);
  const Shape pshape = take_range(upd.shape(), 0, pd);
  p.P = shape_size(pshape);
  {
    auto [s, st] = collapse_contiguous_dims<2>(
        take_range(slice, 0, m), {take_range(uslice, 0, m), take_range(out.strides(), 0, m)});
    p.O = shape_size(s);
    p.oshape = std::move(s);
    p.oupd = std::move(st[0]);
    p.oout = std::move(st[1]);
  }
  {
    auto [s, st] = collapse_contiguous_dims<2>(
        take_range(slice, m, nd), {take_range(uslice, m, nd), take_range(out.strides(), m, nd)});
    p.I = shape_size(s);
    p.ishape = std::move(s);
    p.iupd = std::move(st[0]);
    p.iout = std::move(st[1]);
  }
  {
    auto [s, st] = collapse_contiguous_dims<1>(pshape, {take_range(upd.strides(), 0, pd)});
    p.pshape = std::move(s);
    p.pupd = std::move(st[0]);
  }
  const int64_t W = p.O * p.I;
  // Two updates can only meet at one target when their slice elements are the same and
  // their starts are equal, provided every indexed axis takes one element. Then threads may
  // own disjoint slice elements, or disjoint ranges of starts, each applying its updates in
  // index order, which keeps results deterministic. Otherwise (overlapping slices) the
  // updates are applied serially.
  bool race_free = true;
  for (int ax : axes_) race_free &= slice[ax] == 1;
  // Slice elements are split when every thread gets a fair share of them (runs of at
  // least 64 for one-dimensional inner slices, whole outer elements otherwise).
  const int threads = cpu::num_threads();
  const bool split_slices =
      race_free && (p.ishape.size() == 1 ? W >= 64 * threads : p.O >= threads);
  const bool split_starts =
      race_free && !split_slices && threads > 1 && static_cast<size_t>(W * p.P) >= 4 * kGrain;

  dispatch_reduce(reduce_, out.dtype(), [&](auto tag, auto op) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    const T* u = upd.data<T>();
    if (split_starts) {
      // Few elements per update: all threads decode a block of positions, then each applies
      // those whose start falls in its share of the output.
      const int64_t block = std::min<int64_t>(p.P, 1 << 20);
      std::vector<int64_t> st(block), uo(block);
      const int64_t span = static_cast<int64_t>(out.data_size());
      const int owners = cpu::num_threads();
      for (int64_t n0 = 0; n0 < p.P; n0 += block) {
        const int64_t count = std::min(block, p.P - n0);
        cpu::parallel_for(count, kWindow, [&](size_t b, size_t e) {
          decode_starts(p.operands, n0 + b, e - b, st.data() + b);
          position_offsets(p.pshape, p.pupd, n0 + b, e - b, uo.data() + b);
        });
        if (W == 0) continue;  // indices are still checked
        cpu::parallel_for(owners, 1, [&](size_t t0, size_t t1) {
          const int64_t lo = span * static_cast<int64_t>(t0) / owners;
          const uint64_t width = span * static_cast<int64_t>(t1) / owners - lo;
          // Select this owner's positions without branching (a branch on a random start
          // would mispredict on every owned one), then apply them in order.
          int32_t mine[kWindow];
          for (int64_t j0 = 0; j0 < count; j0 += kWindow) {
            const int32_t m = static_cast<int32_t>(std::min(kWindow, count - j0));
            int32_t k = 0;
            for (int32_t j = 0; j < m; ++j) {
              mine[k] = j;
              k += static_cast<uint64_t>(st[j0 + j] - lo) < width;
            }
            const int64_t* sj = st.data() + j0;
            const int64_t* uj = uo.data() + j0;
            for (int32_t i = 0; i < k; ++i) {
              const int32_t j = mine[i];
              if (W == 1)
                op(dst[sj[j]], u[uj[j]]);
              else
                scatter_apply(dst, u, p, sj + j, uj + j, 1, 0, W, op);
            }
          }
        });
      }
      return;
    }
    StartWindow starts(p.operands);
    int64_t uoffs[kWindow];
    for (int64_t n0 = 0; n0 < p.P; n0 += kWindow) {
      const int64_t* st = starts.at(n0, p.P);
      const int64_t count = starts.hi() - n0;
      if (W == 0) continue;  // indices are still checked
      position_offsets(p.pshape, p.pupd, n0, count, uoffs);
      if (!split_slices || static_cast<size_t>(W * count) < 2 * kGrain) {
        scatter_apply(dst, u, p, st, uoffs, count, 0, W, op);
      } else if (p.ishape.size() == 1) {
        size_t grain = std::max<size_t>(64, kGrain / count);
        cpu::parallel_for(W, grain, [&](size_t b, size_t e) {
          scatter_apply(dst, u, p, st, uoffs, count, b, e, op);
        });
      } else {
        size_t grain = std::max<size_t>(1, kGrain / (count * p.I));
        cpu::parallel_for(p.O, grain, [&](size_t b, size_t e) {
          scatter_apply(dst, u, p, st, uoffs, count, b * p.I, e * p.I, op);
        });
      }
    }
  });
}

// ---------------------------------------------------------------- GatherAxis

void GatherAxis::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& idx = inputs[1];
  cpu::set_row_contiguous_output(out);
  if (out.size() == 0) return;
  // a's offset along the axis comes from the index, not from the position.
  Strides as = a.strides();
  as[axis_] = 0;
  auto [shape, st] = collapse_contiguous_dims<3>(idx.shape(), {as, idx.strides(), out.strides()});
  const AxisInfo info{op_, axis_, a.shape(axis_), 1, a.strides()[axis_]};
  const DecodeFn decode = decoder<false>(idx.dtype());
  const char* ip = idx.data<char>();
  const int64_t isz = static_cast<int64_t>(idx.itemsize());
  const int64_t sa = st[0].back(), si = st[1].back(), so = st[2].back();
  dispatch_bits(out.itemsize(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = a.data<T>();
    T* dst = out.data<T>();
    for_each_run(
        shape, st,
        [&](const std::array<int64_t, 3>& off, int64_t n) {
          int64_t buf[kChunk];
          for (int64_t b = 0; b < n; b += kChunk) {
            const int64_t c = std::min(kChunk, n - b);
            decode(ip + (off[1] + b * si) * isz, si, c, info, buf);
            const T* s = src + off[0] + b * sa;
            T* d = dst + off[2] + b * so;
            for (int64_t j = 0; j < c; ++j) d[j * so] = s[j * sa + buf[j]];
          }
        },
        true, kGrain);
  });
}

// ---------------------------------------------------------------- ScatterAxis

void ScatterAxis::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& idx = inputs[1];
  const array& vals = inputs[2];
  init_from(a, out);
  if (idx.size() == 0) return;

  // Updates at different positions off the axis never meet: threads own ranges of those
  // positions and apply the J updates of each in order (deterministic duplicates).
  const int64_t J = idx.shape(axis_);
  auto [oshape, st] = collapse_contiguous_dims<3>(
      drop(idx.shape(), axis_),
      {drop(idx.strides(), axis_), drop(vals.strides(), axis_), drop(out.strides(), axis_)});
  const int64_t R = shape_size(oshape);
  const AxisInfo info{op_, axis_, a.shape(axis_), 1, out.strides()[axis_]};
  const DecodeFn decode = decoder<false>(idx.dtype());
  const char* ip = idx.data<char>();
  const int64_t isz = static_cast<int64_t>(idx.itemsize());
  const int64_t ij = idx.strides()[axis_], vj = vals.strides()[axis_];
  const int64_t ix = st[0].back(), vx = st[1].back(), ox = st[2].back();
  // When the axis is the innermost one, walk it innermost too.
  bool axis_inner = true;
  for (size_t d = axis_ + 1; d < idx.ndim(); ++d) axis_inner &= idx.shape(d) == 1;

  dispatch_reduce(reduce_, out.dtype(), [&](auto tag, auto op) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    const T* v = vals.data<T>();
    auto body = [&](size_t r0, size_t r1) {
      int64_t buf[kChunk];
      if (axis_inner) {
        for_each_run_in<3>(oshape, st, r0, r1, [&](const std::array<int64_t, 3>& off, int64_t n) {
          for (int64_t i = 0; i < n; ++i) {
            const char* ipi = ip + (off[0] + i * ix) * isz;
            T* d = dst + off[2] + i * ox;
            const T* vi = v + off[1] + i * vx;
            for (int64_t jb = 0; jb < J; jb += kChunk) {
              const int64_t c = std::min(kChunk, J - jb);
              decode(ipi + jb * ij * isz, ij, c, info, buf);
              for (int64_t j = 0; j < c; ++j) op(d[buf[j]], vi[(jb + j) * vj]);
            }
          }
        });
      } else {
        for (int64_t j = 0; j < J; ++j) {
          for_each_run_in<3>(oshape, st, r0, r1, [&](const std::array<int64_t, 3>& off, int64_t n) {
            for (int64_t b = 0; b < n; b += kChunk) {
              const int64_t c = std::min(kChunk, n - b);
              decode(ip + (off[0] + j * ij + b * ix) * isz, ix, c, info, buf);
              T* d = dst + off[2] + b * ox;
              const T* vb = v + off[1] + j * vj + b * vx;
              for (int64_t t = 0; t < c; ++t) op(d[t * ox + buf[t]], vb[t * vx]);
            }
          });
        }
      }
    };
    cpu::parallel_for(R, std::max<int64_t>(1, kGrain / J), body);
  });
}

}  // namespace kiln
