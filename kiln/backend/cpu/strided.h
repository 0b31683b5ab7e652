// Iteration over strided (and broadcast, zero-stride) operands without materializing them.
//
// The pattern every CPU kernel uses: collapse the dimensions that are contiguous for all
// operands, then walk the outer dimensions with an odometer and run a tight inner loop
// over the last one. Loops split across threads over whole runs of the last dimension.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/array.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/utils.h"

namespace kiln {

/**
 * Merges adjacent dimensions that are contiguous with each other in every stride set and
 * drops size-1 dimensions. The result has the same elements in the same row-major order.
 * Always returns at least one dimension.
 */
template <size_t K>
std::pair<Shape, std::array<Strides, K>> collapse_contiguous_dims(
    const Shape& shape, const std::array<Strides, K>& strides) {
  Shape out_shape;
  std::array<Strides, K> out_strides;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    bool merge = !out_shape.empty();
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
void for_each_run(
    const Shape& shape,
    const std::array<Strides, K>& strides,
    F&& inner,
    bool parallel = true,
    size_t grain = cpu::kElementwiseGrain) {
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

}  // namespace kiln
