// eval_cpu of the reductions (Reduce, ArgReduce) and the fused Softmax.
//
// make_reduce_plan orders the input's dimensions by memory layout, then one of three
// paths runs:
//  - everything reduced: chunks of the input reduce on separate threads, then combine;
//  - rows (a reduced dimension is innermost): each output reduces runs of the input,
//    outputs split across threads;
//  - columns (a kept dimension is innermost): a tile of outputs accumulates whole input
//    rows at once, which vectorizes across outputs; tiles, and when they are few also
//    ranges of rows (combined afterwards), split across threads.
// Runs with unit stride are the vectorized fast path; any other stride (transposed,
// sliced, broadcast) takes the same loops with a stride, the general fallback.
#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <type_traits>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/fast_common.h"
#include "kiln/backend/cpu/reduce_utils.h"
#include "kiln/backend/cpu/simd_math.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/fast_primitives.h"
#include "kiln/primitives_reduce.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

using cpu::Odometer;

constexpr int64_t kGrain = static_cast<int64_t>(cpu::kElementwiseGrain);
// Float sums split runs longer than this in halves (pairwise summation): the error grows
// with log(n) instead of n.
constexpr int64_t kPairwiseBlock = 2048;
// Outputs per column tile. Tiles span whole rows up to this width: reading a row in pieces
// (a strip of the matrix at a time) defeats the hardware prefetcher and runs ~10x slower.
constexpr int64_t kColumnTile = 1 << 16;
// Input rows folded into one partial row of a column tile before the partials combine
// pairwise (RowCascade).
constexpr int64_t kColumnBlock = 128;

/**
 * Folds n elements at `stride` into L independent accumulators, combined as a tree at the
 * end. The chains break the loop's dependency so the compiler keeps them in vector
 * registers, and a float sum is as accurate as L short sums.
 */
template <typename Op, typename Acc, typename In, typename Stride>
Acc fold_lanes(const In* x, int64_t n, Stride stride) {
  constexpr int L = static_cast<int>(std::max<size_t>(4, 128 / sizeof(Acc)));
  if (n < L) {
    Acc acc = Op::template identity<Acc>();
    for (int64_t i = 0; i < n; ++i) acc = Op::apply(acc, cpu::to_acc<Acc>(x[i * stride]));
    return acc;
  }
  Acc acc[L];
  for (int j = 0; j < L; ++j) acc[j] = Op::template identity<Acc>();
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    for (int j = 0; j < L; ++j) acc[j] = Op::apply(acc[j], cpu::to_acc<Acc>(x[(i + j) * stride]));
  }
  for (; i < n; ++i) acc[0] = Op::apply(acc[0], cpu::to_acc<Acc>(x[i * stride]));
  for (int w = L / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] = Op::apply(acc[j], acc[j + w]);
  }
  return acc[0];
}

/** The unit-stride fold, compiled per ISA level (the lanes are the same accumulators at
 * every level, so the result is too). */
template <typename Op, typename Acc, typename In>
KILN_SIMD_CLONES Acc fold_contiguous(const In* x, int64_t n) {
  return fold_lanes<Op, Acc>(x, n, std::integral_constant<int64_t, 1>{});
}

template <typename Op, typename Acc, typename In>
Acc reduce_block(const In* x, int64_t n, int64_t stride) {
  return stride == 1 ? fold_contiguous<Op, Acc>(x, n) : fold_lanes<Op, Acc>(x, n, stride);
}

/** One run of n elements at `stride`; float sums go pairwise over blocks. */
template <typename Op, typename Acc, typename In>
Acc reduce_run(const In* x, int64_t n, int64_t stride) {
  if constexpr (std::is_same_v<Op, cpu::SumOp> && cpu::is_float_acc_v<Acc>) {
    if (n > kPairwiseBlock) {
      int64_t h = (n / 2) & ~int64_t{63};
      return reduce_run<Op, Acc>(x, h, stride) + reduce_run<Op, Acc>(x + h * stride, n - h, stride);
    }
  }
  return reduce_block<Op, Acc>(x, n, stride);
}

/** The reduced dimensions split as the odometer needs them: outer ones, then the run. */
struct Runs {
  Shape outer_shape;
  Strides outer_strides;
  int64_t n, stride, total;

  explicit Runs(const cpu::ReducePlan& p)
      : outer_shape(p.red_shape.begin(), p.red_shape.end() - 1),
        outer_strides(p.red_in.begin(), p.red_in.end() - 1),
        n(p.red_shape.back()),
        stride(p.red_in.back()),
        total(p.red_size) {}
};

/** Elements [b, e) of the reduced dimensions (row-major over them) starting at x. */
template <typename Op, typename Acc, typename In>
Acc reduce_range(const In* x, const Runs& r, int64_t b, int64_t e) {
  if (r.outer_shape.empty()) return reduce_run<Op, Acc>(x + b * r.stride, e - b, r.stride);
  Acc acc = Op::template identity<Acc>();
  Odometer<1> od(r.outer_shape, {&r.outer_strides}, b / r.n);
  int64_t j = b % r.n;
  for (int64_t pos = b; pos < e; od.next()) {
    int64_t len = std::min(r.n - j, e - pos);
    acc = Op::apply(acc, reduce_run<Op, Acc>(x + od.offset(0) + j * r.stride, len, r.stride));
    pos += len;
    j = 0;
  }
  return acc;
}

/** All reduced elements from x, in chunks on separate threads when there are many. */
template <typename Op, typename Acc, typename In>
Acc reduce_all(const In* x, const Runs& r) {
  int64_t chunks = std::min<int64_t>(cpu::num_threads(), r.total / kGrain);
  if (chunks <= 1) return reduce_range<Op, Acc>(x, r, 0, r.total);
  auto partial = std::make_unique<Acc[]>(chunks);
  cpu::parallel_for(chunks, 1, [&](size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) {
      partial[c] = reduce_range<Op, Acc>(x, r, r.total * c / chunks, r.total * (c + 1) / chunks);
    }
  });
  Acc acc = partial[0];
  for (int64_t c = 1; c < chunks; ++c) acc = Op::apply(acc, partial[c]);
  return acc;
}

/** Rows path: every output reduces its own runs. */
template <typename Op, typename Acc, typename Out, typename In>
void reduce_rows(const In* x, Out* y, const cpu::ReducePlan& p) {
  Runs r(p);
  auto kept = [&](int64_t start) {
    return Odometer<2>(p.kept_shape, {&p.kept_in, &p.kept_out}, start);
  };
  if (p.kept_size < cpu::num_threads() && r.total >= 2 * kGrain) {
    // A few long rows: split each row instead of the rows.
    auto od = kept(0);
    for (int64_t k = 0; k < p.kept_size; ++k, od.next()) {
      y[od.offset(1)] = cpu::to_out<Out, In>(reduce_all<Op, Acc>(x + od.offset(0), r));
    }
    return;
  }
  size_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(r.total, 1));
  cpu::parallel_for(p.kept_size, grain, [&](size_t b, size_t e) {
    auto od = kept(b);
    for (size_t k = b; k < e; ++k, od.next()) {
      y[od.offset(1)] =
          cpu::to_out<Out, In>(reduce_range<Op, Acc>(x + od.offset(0), r, 0, r.total));
    }
  });
}

/**
 * Pairwise combination of a stream of partial rows (one per block of input rows). Like a
 * binary counter, level k holds the combination of 2^k blocks, so a float sum over many
 * rows keeps an error growing with log(rows) instead of rows. Not std::vector for the
 * buffers: vector<bool> has no data().
 */
template <typename Op, typename Acc>
class RowCascade {
 public:
  RowCascade(int64_t width, int64_t max_blocks)
      : width_(width), levels_(std::bit_width(static_cast<uint64_t>(max_blocks)) + 1) {
    storage_ = std::make_unique<Acc[]>(width_ * (levels_ + 1));
    level_.assign(levels_, nullptr);
    for (int k = 0; k <= levels_; ++k) free_.push_back(storage_.get() + k * width_);
  }

  /** A buffer of w identities for the next block. */
  Acc* next_block(int64_t w) {
    w_ = w;
    block_ = free_.back();
    free_.pop_back();
    std::fill_n(block_, w, Op::template identity<Acc>());
    return block_;
  }

  /** Adds the filled block to the counter, combining equal-sized partials. */
  void push() {
    Acc* carry = block_;
    int k = 0;
    for (; level_[k]; ++k) {
      for (int64_t j = 0; j < w_; ++j) carry[j] = Op::apply(level_[k][j], carry[j]);
      free_.push_back(level_[k]);
      level_[k] = nullptr;
    }
    level_[k] = carry;
  }

  /** Writes the combination of every block pushed (earliest first) and empties the counter. */
  template <typename F>
  void finish(F&& write) {
    Acc* total = nullptr;
    for (int k = levels_ - 1; k >= 0; --k) {
      if (!level_[k]) continue;
      if (!total) {
        total = level_[k];
      } else {
        for (int64_t j = 0; j < w_; ++j) total[j] = Op::apply(total[j], level_[k][j]);
        free_.push_back(level_[k]);
      }
      level_[k] = nullptr;
    }
    for (int64_t j = 0; j < w_; ++j) write(j, total ? total[j] : Op::template identity<Acc>());
    if (total) free_.push_back(total);
  }

 private:
  int64_t width_, w_ = 0;
  int levels_;
  std::unique_ptr<Acc[]> storage_;
  std::vector<Acc*> level_, free_;
  Acc* block_ = nullptr;
};

/**
 * The work of the columns path in units: a unit is a tile of up to `width` outputs along
 * the innermost kept dimension, at one position of the outer kept dimensions, over a range
 * of the reduced rows. The rows are split into `parts` only when there are too few tiles
 * to occupy the threads; the parts of a tile are then combined in order.
 */
struct ColumnWork {
  int64_t cols, col_in, col_out;  // the innermost kept dimension
  Shape outer;
  Strides outer_in, outer_out;
  int64_t width, tiles, items, rows, parts;

  struct Unit {
    int64_t in, out;    // offsets of the tile's first column
    int64_t w, r0, r1;  // its width and range of rows
  };

  explicit ColumnWork(const cpu::ReducePlan& p)
      : cols(p.kept_shape.back()),
        col_in(p.kept_in.back()),
        col_out(p.kept_out.back()),
        outer(p.kept_shape.begin(), p.kept_shape.end() - 1),
        outer_in(p.kept_in.begin(), p.kept_in.end() - 1),
        outer_out(p.kept_out.begin(), p.kept_out.end() - 1),
        // Strided columns touch |stride| elements per output: keep the span of a tile's
        // row within kColumnTile elements so the rows of a block stay in cache.
        width(std::min(cols, std::abs(col_in) <= 1
                                 ? kColumnTile
                                 : std::max<int64_t>(16, kColumnTile / std::abs(col_in)))),
        tiles((cols + width - 1) / width),
        items(p.kept_size / cols * tiles),
        rows(p.red_size),
        parts(1) {
    const int64_t threads = cpu::num_threads();
    if (items < threads && items * width * rows >= 2 * kGrain) {
      parts = std::max<int64_t>(1, std::min((threads + items - 1) / items, rows / kColumnBlock));
    }
  }

  int64_t units() const { return items * parts; }
  /** Units per parallel_for chunk so that a chunk holds about kGrain elements. */
  size_t grain() const {
    return std::max<int64_t>(1, kGrain / std::max<int64_t>(width * rows / parts, 1));
  }

  Unit unit(int64_t u) const {
    const int64_t item = u / parts, part = u % parts;
    Odometer<2> od(outer, {&outer_in, &outer_out}, item / tiles);
    const int64_t c0 = (item % tiles) * width;
    return {od.offset(0) + c0 * col_in, od.offset(1) + c0 * col_out, std::min(width, cols - c0),
            rows * part / parts, rows * (part + 1) / parts};
  }
};

/** acc[j] = op(acc[j], rows[r * rs + j * cs]) for `count` rows at stride rs: one call per
 * block of rows, compiled per ISA level (unit column stride is the vectorized case). */
template <typename Op, typename Acc, typename In>
KILN_SIMD_CLONES void fold_rows(Acc* acc, const In* rows, int64_t w, int64_t cs, int64_t count,
                                int64_t rs) {
  for (int64_t r = 0; r < count; ++r) {
    const In* row = rows + r * rs;
    if (cs == 1) {
      for (int64_t j = 0; j < w; ++j) acc[j] = Op::apply(acc[j], cpu::to_acc<Acc>(row[j]));
    } else {
      for (int64_t j = 0; j < w; ++j) acc[j] = Op::apply(acc[j], cpu::to_acc<Acc>(row[j * cs]));
    }
  }
}

/** Columns path: tiles of the innermost kept dimension accumulate input rows together. */
template <typename Op, typename Acc, typename Out, typename In>
void reduce_columns(const In* x, Out* y, const cpu::ReducePlan& p) {
  const ColumnWork cw(p);
  const Runs runs(p);
  // Partial rows of the parts of each tile (only when the rows are split).
  std::unique_ptr<Acc[]> partial;
  if (cw.parts > 1) partial = std::make_unique<Acc[]>(cw.units() * cw.width);
  cpu::parallel_for(cw.units(), cw.grain(), [&](size_t b, size_t e) {
    RowCascade<Op, Acc> cascade(cw.width, (cw.rows + kColumnBlock - 1) / kColumnBlock);
    for (size_t u = b; u < e; ++u) {
      const auto t = cw.unit(u);
      // Rows [r0, r1) walk runs of the innermost reduced dimension; a block takes up to
      // kColumnBlock rows from as many runs as it needs.
      Odometer<1> od(runs.outer_shape, {&runs.outer_strides}, t.r0 / runs.n);
      int64_t j = t.r0 % runs.n, in_block = 0;
      Acc* blk = cascade.next_block(t.w);
      for (int64_t r = t.r0; r < t.r1;) {
        const int64_t count = std::min({runs.n - j, t.r1 - r, kColumnBlock - in_block});
        fold_rows<Op>(blk, x + t.in + od.offset(0) + j * runs.stride, t.w, cw.col_in, count,
                      runs.stride);
        r += count;
        j += count;
        in_block += count;
        if (j == runs.n) {
          j = 0;
          od.next();
        }
        if (in_block == kColumnBlock && r < t.r1) {
          cascade.push();
          blk = cascade.next_block(t.w);
          in_block = 0;
        }
      }
      cascade.push();
      if (partial) {
        cascade.finish([&](int64_t j, Acc v) { partial[u * cw.width + j] = v; });
      } else {
        cascade.finish(
            [&](int64_t j, Acc v) { y[t.out + j * cw.col_out] = cpu::to_out<Out, In>(v); });
      }
    }
  });
  if (!partial) return;
  for (int64_t item = 0; item < cw.items; ++item) {
    const auto t = cw.unit(item * cw.parts);
    const Acc* first = partial.get() + item * cw.parts * cw.width;
    for (int64_t j = 0; j < t.w; ++j) {
      Acc acc = first[j];
      for (int64_t k = 1; k < cw.parts; ++k) acc = Op::apply(acc, first[k * cw.width + j]);
      y[t.out + j * cw.col_out] = cpu::to_out<Out, In>(acc);
    }
  }
}

template <typename In, typename Acc, typename Out, typename Op>
void reduce(const array& in, array& out, const std::vector<int>& axes) {
  if (out.dtype() != dtype_v<Out>) {
    throw std::runtime_error(msg("[Reduce::eval_cpu] Unexpected output dtype ", out.dtype(),
                                 " for input ", in.dtype(), "."));
  }
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  Out* y = out.data<Out>();
  const In* x = in.data<In>();
  cpu::ReducePlan p = cpu::make_reduce_plan(in, axes);
  if (p.red_size == 0) {
    std::fill_n(y, out.size(), cpu::to_out<Out, In>(Op::template identity<Acc>()));
  } else if (p.kept_shape.empty()) {
    *y = cpu::to_out<Out, In>(reduce_all<Op, Acc>(x, Runs(p)));
  } else if (p.rows) {
    reduce_rows<Op, Acc, Out>(x, y, p);
  } else {
    reduce_columns<Op, Acc, Out>(x, y, p);
  }
}

/** Sum and Prod: small integers widen (MLX), integers wrap in their unsigned type, half
 * types accumulate in float. Sum also serves mean, which asks for float32 from half and
 * integer inputs. */
template <typename In, typename Op>
void reduce_sum_like(const array& in, array& out, const std::vector<int>& axes) {
  if constexpr (std::is_same_v<Op, cpu::SumOp> && !cpu::is_float_acc_v<In>) {
    if (out.dtype() == float32) {
      using Acc = std::conditional_t<is_half_v<In>, float, uint64_t>;
      return reduce<In, Acc, float, Op>(in, out, axes);
    }
  }
  using Types = cpu::SumTypes<In>;
  reduce<In, typename Types::Acc, typename Types::Out, Op>(in, out, axes);
}

template <typename In, typename Op>
void reduce_extreme(const array& in, array& out, const std::vector<int>& axes) {
  if constexpr (is_complex_v<In>) {
    throw std::invalid_argument("[Reduce::eval_cpu] max/min of complex64 are not supported.");
  } else {
    using Acc = std::conditional_t<is_half_v<In>, float, In>;
    reduce<In, Acc, In, Op>(in, out, axes);
  }
}

}  // namespace

void Reduce::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using In = decltype(tag);
    switch (type_) {
      case Sum:
        return reduce_sum_like<In, cpu::SumOp>(in, out, axes_);
      case Prod:
        return reduce_sum_like<In, cpu::ProdOp>(in, out, axes_);
      case Max:
        return reduce_extreme<In, cpu::MaxOp>(in, out, axes_);
      case Min:
        return reduce_extreme<In, cpu::MinOp>(in, out, axes_);
      case And:
        return reduce<In, bool, bool, cpu::AndOp>(in, out, axes_);
      case Or:
        return reduce<In, bool, bool, cpu::OrOp>(in, out, axes_);
    }
  });
}

// ---------------------------------------------------------------- ArgReduce

namespace {

/** Whether v replaces the current best: strictly better (so the first occurrence wins),
 * or the first NaN, which NumPy treats as both the largest and the smallest value. */
template <bool kMax, typename V>
bool better(V v, V best) {
  if constexpr (std::is_floating_point_v<V>) {
    if (v != v) return best == best;
  }
  return kMax ? v > best : v < best;
}

template <typename In, bool kMax>
void arg_reduce(const array& in, array& out, int axis) {
  using V = std::conditional_t<is_half_v<In>, float, In>;
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  uint32_t* y = out.data<uint32_t>();
  const In* x = in.data<In>();
  cpu::ReducePlan p = cpu::make_reduce_plan(in, {axis});
  const int64_t n = p.red_size, s = p.red_in.back();
  auto val = [](In v) { return static_cast<V>(v); };
  if (p.kept_shape.empty()) {
    p.kept_shape = {1};
    p.kept_in = p.kept_out = {0};
    p.rows = true;
  }
  if (p.rows) {
    size_t grain = std::max<int64_t>(1, kGrain / n);
    cpu::parallel_for(p.kept_size, grain, [&](size_t b, size_t e) {
      Odometer<2> od(p.kept_shape, {&p.kept_in, &p.kept_out}, b);
      for (size_t k = b; k < e; ++k, od.next()) {
        const In* row = x + od.offset(0);
        if (s == 1) {
          // Two fast passes instead of one branchy one: the vectorized (NaN-propagating)
          // extreme, then the first element equal to it while the row is still in cache.
          using Op = std::conditional_t<kMax, cpu::MaxOp, cpu::MinOp>;
          const V m = reduce_run<Op, V>(row, n, 1);
          int64_t i = 0;
          if (m != m) {
            while (val(row[i]) == val(row[i])) ++i;
          } else {
            while (val(row[i]) != m) ++i;
          }
          y[od.offset(1)] = static_cast<uint32_t>(i);
          continue;
        }
        V best = val(row[0]);
        uint32_t idx = 0;
        for (int64_t i = 1; i < n; ++i) {
          V v = val(row[i * s]);
          if (better<kMax>(v, best)) {
            best = v;
            idx = static_cast<uint32_t>(i);
          }
        }
        y[od.offset(1)] = idx;
      }
    });
    return;
  }
  // Columns: a tile of outputs scans the axis together, one input row at a time. When the
  // rows are split, each part keeps its own (best, index) and the parts combine in order,
  // so the first occurrence still wins.
  const ColumnWork cw(p);
  const int64_t cs = cw.col_in;
  auto best = std::make_unique<V[]>(cw.units() * cw.width);
  auto idx = std::make_unique<uint32_t[]>(cw.units() * cw.width);
  cpu::parallel_for(cw.units(), cw.grain(), [&](size_t b, size_t e) {
    for (size_t u = b; u < e; ++u) {
      const auto t = cw.unit(u);
      V* bv = best.get() + u * cw.width;
      uint32_t* bi = idx.get() + u * cw.width;
      const In* first = x + t.in + t.r0 * s;
      for (int64_t j = 0; j < t.w; ++j) {
        bv[j] = val(first[j * cs]);
        bi[j] = static_cast<uint32_t>(t.r0);
      }
      for (int64_t i = t.r0 + 1; i < t.r1; ++i) {
        const In* row = x + t.in + i * s;
        for (int64_t j = 0; j < t.w; ++j) {
          V v = val(row[j * cs]);
          if (better<kMax>(v, bv[j])) {
            bv[j] = v;
            bi[j] = static_cast<uint32_t>(i);
          }
        }
      }
    }
  });
  for (int64_t item = 0; item < cw.items; ++item) {
    const auto t = cw.unit(item * cw.parts);
    const size_t base = item * cw.parts * cw.width;
    for (int64_t j = 0; j < t.w; ++j) {
      size_t win = base + j;
      for (int64_t k = 1; k < cw.parts; ++k) {
        if (better<kMax>(best[base + k * cw.width + j], best[win])) win = base + k * cw.width + j;
      }
      y[t.out + j * cw.col_out] = idx[win];
    }
  }
}

}  // namespace

void ArgReduce::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using In = decltype(tag);
    if constexpr (is_complex_v<In>) {
      throw std::invalid_argument("[ArgReduce::eval_cpu] complex64 is not supported.");
    } else if (type_ == ArgMax) {
      arg_reduce<In, true>(in, out, axis_);
    } else {
      arg_reduce<In, false>(in, out, axis_);
    }
  });
}

// ---------------------------------------------------------------- Softmax

namespace {

/** e[i] = exp(x[i] - m): vectorized through exp_f32, compiled per ISA level. */
KILN_SIMD_CLONES void exp_shifted(const float* x, float* e, int64_t n, float m) {
  for (int64_t i = 0; i < n; ++i) e[i] = cpu::exp_f32(x[i] - m);
}

template <typename T>
void softmax_rows(const array& in, array& out) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t n = in.shape().back(), rows = static_cast<int64_t>(in.size()) / n;
  const T* x = in.data<T>();
  T* y = out.data<T>();
  cpu::parallel_for(rows, std::max<int64_t>(1, kGrain / n), [&](size_t b, size_t e) {
    // Half rows are widened into a float buffer; float rows use the output row instead.
    std::unique_ptr<Acc[]> buf;
    if constexpr (!std::is_same_v<T, Acc>) buf = std::make_unique<Acc[]>(n);
    for (size_t r = b; r < e; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      const Acc* src;
      Acc* ex;
      if constexpr (std::is_same_v<T, Acc>) {
        src = xr;
        ex = yr;
      } else {
        cpu::fast::load(xr, buf.get(), n);
        src = ex = buf.get();
      }
      // NaN-propagating maximum: a row with NaN (or an infinite maximum) comes out NaN, as
      // the composite formula gives.
      const Acc m = reduce_run<cpu::MaxOp, Acc>(src, n, 1);
      if constexpr (std::is_same_v<Acc, float>) {
        exp_shifted(src, ex, n, m);
      } else {
        for (int64_t i = 0; i < n; ++i) ex[i] = std::exp(src[i] - m);
      }
      const Acc total = reduce_run<cpu::SumOp, Acc>(ex, n, 1);
      for (int64_t i = 0; i < n; ++i) ex[i] /= total;
      if constexpr (!std::is_same_v<T, Acc>) cpu::fast::store(ex, yr, n);  // rounded once
    }
  });
}

/** dx = y * (g - sum(y * g)) of one row (dx may alias y), as vector code. */
template <typename A>
KILN_SIMD_CLONES void softmax_vjp_row(const A* y, const A* g, A* dx, int64_t n) {
  const A dot = cpu::fast::dot(y, g, n);
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (g[i] - dot);
}

// dx = y * (g - sum(y * g)) per row: float and double rows in place, half rows widened into
// float buffers and rounded once.
template <typename T>
void softmax_vjp_rows(const array& y_in, const array& g_in, array& out) {
  using A = cpu::fast::Acc<T>;
  const array y = cpu::fast::dense(y_in), g = cpu::fast::dense(g_in);
  const int64_t n = y.shape().back(), rows = static_cast<int64_t>(y.size()) / n;
  const T* yp = y.data<T>();
  const T* gp = g.data<T>();
  T* dx = out.data<T>();
  cpu::parallel_for(rows, cpu::fast::row_grain(rows, n), [&](size_t b, size_t e) {
    std::vector<A> yb(std::is_same_v<T, A> ? 0 : n), gb(yb.size());
    for (size_t r = b; r < e; ++r) {
      if constexpr (std::is_same_v<T, A>) {
        softmax_vjp_row(yp + r * n, gp + r * n, dx + r * n, n);
      } else {
        cpu::fast::load(yp + r * n, yb.data(), n);
        cpu::fast::load(gp + r * n, gb.data(), n);
        softmax_vjp_row(yb.data(), gb.data(), yb.data(), n);
        cpu::fast::store(yb.data(), dx + r * n, n);
      }
    }
  });
}

}  // namespace

void fast::SoftmaxVJP::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  outputs[0].set_data(Storage::host(outputs[0].nbytes()));
  if (outputs[0].size() == 0) return;
  cpu::fast::dispatch_float(inputs[0].dtype(), "SoftmaxVJP::eval_cpu", [&](auto tag) {
    softmax_vjp_rows<decltype(tag)>(inputs[0], inputs[1], outputs[0]);
  });
}

void Softmax::eval_cpu(const std::vector<array>& inputs, array& out) {
  array in = inputs[0];
  if (!in.flags().row_contiguous) {
    array tmp(Storage::host(in.nbytes()), in.shape(), in.dtype());
    cpu::copy_inplace(in, tmp, cpu::CopyType::general);
    in = tmp;
  }
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  switch (in.dtype().val) {
    case Dtype::Val::float16:
      return softmax_rows<float16_t>(in, out);
    case Dtype::Val::bfloat16:
      return softmax_rows<bfloat16_t>(in, out);
    case Dtype::Val::float32:
      return softmax_rows<float>(in, out);
    case Dtype::Val::float64:
      return softmax_rows<double>(in, out);
    default:
      throw std::invalid_argument(msg("[Softmax::eval_cpu] Unsupported dtype ", in.dtype(), "."));
  }
}

}  // namespace kiln
