// eval_cpu of global_norm: each array's squares summed in double over fixed chunks on the
// threads, the chunks' sums added in order (the result does not depend on the thread count).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kiln/backend/cpu/fast_common.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/fast_primitives.h"
#include "kiln/half_types.h"

namespace kiln::fast {

namespace {

constexpr size_t kChunk = 1 << 16;

// Half types and float widen through float (exact); double is read as it is.
template <typename T>
double widen(T v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return static_cast<double>(static_cast<float>(v));
}

template <typename T>
double sum_squares(const T* p, size_t n) {
  const size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> part(chunks, 0.0);
  cpu::parallel_for(chunks, 1, [&](size_t begin, size_t end) {
    for (size_t c = begin; c < end; ++c) {
      double acc[4] = {0, 0, 0, 0};  // independent sums: no loop-carried dependence
      const size_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
      size_t i = lo;
      for (; i + 4 <= hi; i += 4)
        for (int k = 0; k < 4; ++k) acc[k] += widen(p[i + k]) * widen(p[i + k]);
      for (; i < hi; ++i) acc[0] += widen(p[i]) * widen(p[i]);
      part[c] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    }
  });
  double total = 0;
  for (double v : part) total += v;
  return total;
}

}  // namespace

void GlobalNorm::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  double total = 0;
  for (const array& in : inputs) {
    if (in.size() == 0) continue;
    // The order of the elements does not matter: a dense span is read as it lies.
    const array x =
        in.flags().contiguous && in.data_size() == in.size() ? in : cpu::fast::dense(in);
    const size_t n = x.data_size();
    if (x.dtype() == float32) {
      total += sum_squares(x.data<float>(), n);
    } else if (x.dtype() == float64) {
      total += sum_squares(x.data<double>(), n);
    } else if (x.dtype() == float16) {
      total += sum_squares(x.data<float16_t>(), n);
    } else if (x.dtype() == bfloat16) {
      total += sum_squares(x.data<bfloat16_t>(), n);
    } else {
      throw std::invalid_argument(msg("[global_norm] Unsupported dtype ", x.dtype(), "."));
    }
  }
  array& out = outputs[0];
  out.set_data(Storage::host(out.nbytes()));
  if (out.dtype() == float64)
    *out.data<double>() = std::sqrt(total);
  else
    *out.data<float>() = static_cast<float>(std::sqrt(total));
}

}  // namespace kiln::fast
