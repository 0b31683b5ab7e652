// Iteration over strided (and broadcast, zero-stride) operands without materializing them.
//
// The pattern every CPU kernel uses: collapse the dimensions that are contiguous for all
// operands, then walk the outer dimensions with an odometer and run a tight inner loop
// over the last one. Loops split across threads over whole runs of the last dimension.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <utility>
#include <vector>

#include "kiln/array.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/utils.h"

namespace kiln {

/**
 * Merges adjacent dimensions that are contiguous with each other in every stride set, while
 * the merged extent fits a 32-bit Shape entry, and drops size-1 dimensions. The result has
 * the same elements in the same row-major order. Always returns at least one dimension.
 */
template <size_t K>
std::pair<Shape, std::array<Strides, K>> collapse_contiguous_dims(
    const Shape& shape, const std::array<Strides, K>& strides) {
  Shape out_shape;
  std::array<Strides, K> out_strides;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    // A merged extent must still fit Shape's 32-bit entries (2^31 or more elements split).
    bool merge = !out_shape.empty() && static_cast<int64_t>(out_shape.back()) * shape[i] <=
                                           std::numeric_limits<int32_t>::max();
    for (size_t k = 0; k < K && merge; ++k) {
      merge = out_strides[k].back() == strides[k][i] * shape[i];
    }
    if (merge) {
      out_shape.back() *= shape[i];
      for (size_t k = 0; k < K; ++k) out_strides[k].back() = strides[k][i];
    } else {
      out_shape.push_back(shape[i]);
      for (size_t k = 0; k < K; ++k) out_strides[k].push_back(strides[k][i]);
    }
  }
  if (out_shape.empty()) {
    out_shape.push_back(1);
    for (size_t k = 0; k < K; ++k) out_strides[k].push_back(0);
  }
  return {std::move(out_shape), std::move(out_strides)};
}

/**
 * For each run of the last dimension of `shape`, calls `inner(offsets, n)`: `offsets[k]`
 * is operand k's element offset at the start of the run, and within the run operand k
 * advances by `strides[k].back()`. Runs are split across threads when `parallel` and the
 * total is large enough. `shape` and `strides` are used as given (collapse first).
 */
template <size_t K, typename F>
void for_each_run(const Shape& shape, const std::array<Strides, K>& strides, F&& inner,
                  bool parallel = true, size_t grain = cpu::kElementwiseGrain) {
  const int nd = static_cast<int>(shape.size());
  if (nd == 0) {
    std::array<int64_t, K> offs{};
    inner(offs, int64_t{1});
    return;
  }
  const int64_t n = shape.back();
  int64_t runs = 1;
  for (int i = 0; i < nd - 1; ++i) runs *= shape[i];
  if (runs == 0 || n == 0) return;

  auto do_runs = [&](size_t begin, size_t end) {
    // Odometer over the outer dimensions, starting at run `begin`.
    std::vector<int32_t> idx(std::max(nd - 1, 0), 0);
    std::array<int64_t, K> offs{};
    int64_t r = static_cast<int64_t>(begin);
    for (int i = nd - 2; i >= 0; --i) {
      idx[i] = static_cast<int32_t>(r % shape[i]);
      r /= shape[i];
      for (size_t k = 0; k < K; ++k) offs[k] += idx[i] * strides[k][i];
    }
    for (size_t run = begin; run < end; ++run) {
      inner(offs, n);
      for (int i = nd - 2; i >= 0; --i) {
        for (size_t k = 0; k < K; ++k) offs[k] += strides[k][i];
        if (++idx[i] < shape[i]) break;
        for (size_t k = 0; k < K; ++k) offs[k] -= static_cast<int64_t>(shape[i]) * strides[k][i];
        idx[i] = 0;
      }
    }
  };

  if (!parallel || static_cast<size_t>(runs * n) < 2 * grain || runs == 1) {
    if (parallel && runs == 1 && static_cast<size_t>(n) >= 2 * grain) {
      // One long run: split it instead.
      cpu::parallel_for(n, grain, [&](size_t b, size_t e) {
        std::array<int64_t, K> offs{};
        for (size_t k = 0; k < K; ++k) offs[k] = static_cast<int64_t>(b) * strides[k][nd - 1];
        inner(offs, static_cast<int64_t>(e - b));
      });
      return;
    }
    do_runs(0, runs);
    return;
  }
  size_t run_grain = std::max<size_t>(1, grain / static_cast<size_t>(n));
  cpu::parallel_for(runs, run_grain, do_runs);
}

/** Side of the square tiles of for_each_elementwise_run's transposed walk, in elements. */
inline constexpr int64_t kElementwiseTile = 64;

/**
 * for_each_run for order-free elementwise maps: runs may be pieces of rows, in any order.
 * When some operand walks the last dimension with a large stride and the one before it with
 * a smaller one (a transposed view), row-long runs touch a new cache line, often a new page,
 * per element; then the last two dimensions are walked in square tiles, so each tile's
 * lines of every operand stay in L1 while it is done.
 */
template <size_t K, typename F>
void for_each_elementwise_run(const Shape& shape, const std::array<Strides, K>& strides, F&& inner,
                              size_t grain = cpu::kElementwiseGrain) {
  constexpr int64_t T = kElementwiseTile;
  const int nd = static_cast<int>(shape.size());
  bool tile = nd >= 2 && shape[nd - 1] >= T && shape[nd - 2] >= T;
  if (tile) {
    tile = false;
    for (size_t k = 0; k < K; ++k) {
      const int64_t last = std::abs(strides[k][nd - 1]), prev = std::abs(strides[k][nd - 2]);
      tile = tile || (last >= 16 && prev < last);
    }
  }
  if (!tile) {
    for_each_run(shape, strides, std::forward<F>(inner), true, grain);
    return;
  }
  const int64_t rows = shape[nd - 2], cols = shape[nd - 1];
  const int64_t row_tiles = (rows + T - 1) / T, col_tiles = (cols + T - 1) / T;
  int64_t outer = 1;
  for (int i = 0; i < nd - 2; ++i) outer *= shape[i];
  const int64_t tiles = outer * row_tiles * col_tiles;
  cpu::parallel_for(tiles, std::max<size_t>(1, grain / (T * T)), [&](size_t b, size_t e) {
    for (size_t t = b; t < e; ++t) {
      int64_t r = static_cast<int64_t>(t);
      const int64_t j0 = (r % col_tiles) * T;
      r /= col_tiles;
      const int64_t i0 = (r % row_tiles) * T;
      r /= row_tiles;
      std::array<int64_t, K> base{};
      for (int d = nd - 3; d >= 0; --d) {
        const int64_t idx = r % shape[d];
        r /= shape[d];
        for (size_t k = 0; k < K; ++k) base[k] += idx * strides[k][d];
      }
      const int64_t n = std::min(T, cols - j0), i1 = std::min(rows, i0 + T);
      for (int64_t i = i0; i < i1; ++i) {
        std::array<int64_t, K> offs;
        for (size_t k = 0; k < K; ++k)
          offs[k] = base[k] + i * strides[k][nd - 2] + j0 * strides[k][nd - 1];
        inner(offs, n);
      }
    }
  });
}

}  // namespace kiln
