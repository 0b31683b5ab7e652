// eval_cpu of the scans (cumsum, cumprod, cummax, cummin, logcumsumexp).
//
// The input is viewed as (outer, n, inner) with the scan over n. With inner == 1 each line
// is a sequential loop (lines split across threads); otherwise a tile of `inner` columns
// carries its running values through the n rows together, which vectorizes.
#include <memory>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/reduce_utils.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_reduce.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

constexpr int64_t kGrain = static_cast<int64_t>(cpu::kElementwiseGrain);
constexpr int64_t kColumnTile = 1024;

template <typename Op, typename In, typename Acc, typename Out>
void scan(const In* x, array& out, int64_t outer, int64_t n, int64_t inner, bool reverse,
          bool inclusive) {
  Out* y = out.data<Out>();
  // Row k of a line in scan order.
  auto row = [&](int64_t k) { return (reverse ? n - 1 - k : k) * inner; };
  if (inner == 1) {
    size_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
    cpu::parallel_for(outer, grain, [&](size_t b, size_t e) {
      for (size_t o = b; o < e; ++o) {
        const In* src = x + o * n;
        Out* dst = y + o * n;
        Acc acc = Op::template identity<Acc>();
        for (int64_t k = 0; k < n; ++k) {
          int64_t i = row(k);
          Acc next = Op::apply(acc, cpu::to_acc<Acc>(src[i]));
          dst[i] = cpu::to_out<Out, In>(inclusive ? next : acc);
          acc = next;
        }
      }
    });
    return;
  }
  const int64_t width = std::min(inner, kColumnTile);
  const int64_t tiles = (inner + width - 1) / width;
  size_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(width * n, 1));
  cpu::parallel_for(outer * tiles, grain, [&](size_t b, size_t e) {
    auto acc = std::make_unique<Acc[]>(width);  // not vector: vector<bool> has no data()
    for (size_t item = b; item < e; ++item) {
      const int64_t o = item / tiles, c0 = (item % tiles) * width;
      const int64_t w = std::min(width, inner - c0);
      const In* src = x + o * n * inner + c0;
      Out* dst = y + o * n * inner + c0;
      std::fill_n(acc.get(), w, Op::template identity<Acc>());
      for (int64_t k = 0; k < n; ++k) {
        const In* s = src + row(k);
        Out* d = dst + row(k);
        if (inclusive) {
          for (int64_t j = 0; j < w; ++j) {
            acc[j] = Op::apply(acc[j], cpu::to_acc<Acc>(s[j]));
            d[j] = cpu::to_out<Out, In>(acc[j]);
          }
        } else {
          for (int64_t j = 0; j < w; ++j) {
            d[j] = cpu::to_out<Out, In>(acc[j]);
            acc[j] = Op::apply(acc[j], cpu::to_acc<Acc>(s[j]));
          }
        }
      }
    }
  });
}

}  // namespace

void Scan::eval_cpu(const std::vector<array>& inputs, array& out) {
  // Scans read each line in order: a strided input is made row-contiguous once.
  array in = inputs[0];
  if (!in.flags().row_contiguous) {
    array tmp(Storage::host(in.nbytes()), in.shape(), in.dtype());
    cpu::copy_inplace(in, tmp, cpu::CopyType::general);
    in = tmp;
  }
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  const Shape& shape = in.shape();
  int64_t outer = 1, inner = 1, n = shape[axis_];
  for (int i = 0; i < axis_; ++i) outer *= shape[i];
  for (size_t i = axis_ + 1; i < shape.size(); ++i) inner *= shape[i];
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using In = decltype(tag);
    const In* x = in.data<In>();
    if (type_ == Sum || type_ == Prod) {
      using Acc = typename cpu::SumTypes<In>::Acc;
      using Out = typename cpu::SumTypes<In>::Out;
      if (out.dtype() != dtype_v<Out>) {
        throw std::runtime_error("[Scan::eval_cpu] Unexpected output dtype.");
      }
      if (type_ == Sum)
        scan<cpu::SumOp, In, Acc, Out>(x, out, outer, n, inner, reverse_, inclusive_);
      else
        scan<cpu::ProdOp, In, Acc, Out>(x, out, outer, n, inner, reverse_, inclusive_);
      return;
    }
    // Max, Min, LogAddExp keep the dtype; half types run in float; complex64 orders
    // lexicographically.
    using Acc = std::conditional_t<is_half_v<In>, float, In>;
    if (out.dtype() != in.dtype()) {
      throw std::runtime_error("[Scan::eval_cpu] Unexpected output dtype.");
    }
    if (type_ == Max) {
      scan<cpu::MaxOp, In, Acc, In>(x, out, outer, n, inner, reverse_, inclusive_);
    } else if (type_ == Min) {
      scan<cpu::MinOp, In, Acc, In>(x, out, outer, n, inner, reverse_, inclusive_);
    } else if constexpr (std::is_floating_point_v<Acc> || is_complex_v<Acc>) {
      scan<cpu::LogAddExpOp, In, Acc, In>(x, out, outer, n, inner, reverse_, inclusive_);
    } else {
      throw std::invalid_argument(
          msg("[logcumsumexp] Needs a floating input; got ", in.dtype(), "."));
    }
  });
}

}  // namespace kiln
