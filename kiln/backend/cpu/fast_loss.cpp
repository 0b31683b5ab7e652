// eval_cpu of cross_entropy and its gradient. Each row of logits is widened once into a
// buffer of the accumulation type; the forward pass keeps each row's logsumexp, which the
// gradient reuses (softmax = exp(x - logsumexp)), so the backward reads the logits once.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kiln/backend/cpu/fast_common.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/fast_primitives.h"

namespace kiln::fast {

namespace {

using cpu::fast::Acc;

/** The class index of `t` in [0, C), or -1 when out of range (negatives count from the end). */
inline int64_t class_index(int32_t t, int64_t C) {
  const int64_t i = t < 0 ? t + C : t;
  return i >= 0 && i < C ? i : -1;
}

// The logsumexp and the gradient of a row in the accumulation type A, as vector code for the
// machine's widest vectors. Sixteen independent partial maxima and sums keep the loops free of
// loop-carried dependences.

/** shift + log(sum(exp(x - shift))) with shift the row's maximum (0 when it is infinite:
 * subtracting it would turn the infinite logits into NaN); NaN when a logit is NaN. */
template <typename A>
KILN_SIMD_CLONES A row_logsumexp(const A* x, int64_t n) {
  constexpr A kInf = std::numeric_limits<A>::infinity();
  A p[16];
  for (A& v : p) v = -kInf;
  uint32_t nan[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) {
      const A v = x[i + j];
      nan[j] |= v != v;
      p[j] = v > p[j] ? v : p[j];
    }
  A m = -kInf;
  bool any_nan = false;
  for (; i < n; ++i) {
    any_nan |= x[i] != x[i];
    m = x[i] > m ? x[i] : m;
  }
  for (int j = 0; j < 16; ++j) {
    any_nan |= nan[j] != 0;
    m = p[j] > m ? p[j] : m;
  }
  if (any_nan) return std::numeric_limits<A>::quiet_NaN();
  const A shift = std::isfinite(m) ? m : A(0);
  A s[16] = {};
  for (i = 0; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) s[j] += cpu::fast::exp_acc(x[i + j] - shift);
  A t = 0;
  for (; i < n; ++i) t += cpu::fast::exp_acc(x[i] - shift);
  for (int j = 0; j < 16; ++j) t += s[j];
  return shift + std::log(t);
}

/** y = exp(x - lse) * g: the gradient of a row's loss, before the target's -g. */
template <typename A>
KILN_SIMD_CLONES void grad_row(const A* x, A* y, int64_t n, A lse, A g) {
  for (int64_t i = 0; i < n; ++i) y[i] = cpu::fast::exp_acc(x[i] - lse) * g;
}

template <typename T>
void cross_entropy_rows(const array& logits, const array& targets, array& loss, array& lse) {
  using A = Acc<T>;
  using Out = A;  // float32, or float64 for float64 logits
  const array x = cpu::fast::dense(logits), t = cpu::fast::dense(targets);
  const int64_t C = x.shape(-1), rows = t.size();
  const T* xp = x.data<T>();
  const int32_t* tp = t.data<int32_t>();
  Out* lp = loss.data<Out>();
  Out* sp = lse.data<Out>();
  cpu::parallel_for(rows, cpu::fast::row_grain(rows, C), [&](size_t b, size_t e) {
    std::vector<A> widened(std::is_same_v<T, A> ? 0 : C);
    for (size_t r = b; r < e; ++r) {
      // Rows of A are read in place; 16-bit rows are widened once.
      const A* buf;
      if constexpr (std::is_same_v<T, A>) {
        buf = xp + r * C;
      } else {
        cpu::fast::load(xp + r * C, widened.data(), C);
        buf = widened.data();
      }
      const A l = row_logsumexp(buf, C);
      const int64_t k = class_index(tp[r], C);
      sp[r] = l;
      lp[r] = k < 0 ? std::numeric_limits<A>::quiet_NaN() : l - buf[k];
    }
  });
}

template <typename T>
void cross_entropy_vjp_rows(const array& logits, const array& targets, const array& lse_in,
                            const array& cot, array& out) {
  using A = Acc<T>;
  const array x = cpu::fast::dense(logits), t = cpu::fast::dense(targets);
  const array lse = cpu::fast::dense(lse_in), g = cpu::fast::dense_as(cot, lse_in.dtype());
  const int64_t C = x.shape(-1), rows = t.size();
  const T* xp = x.data<T>();
  const int32_t* tp = t.data<int32_t>();
  const A* sp = lse.data<A>();
  const A* gp = g.data<A>();
  T* op = out.data<T>();
  cpu::parallel_for(rows, cpu::fast::row_grain(rows, C), [&](size_t b, size_t e) {
    std::vector<A> buf(std::is_same_v<T, A> ? 0 : C);
    for (size_t r = b; r < e; ++r) {
      const int64_t k = class_index(tp[r], C);
      const A gr = k < 0 ? std::numeric_limits<A>::quiet_NaN() : gp[r];
      if constexpr (std::is_same_v<T, A>) {  // straight from the logits to the gradient
        grad_row(xp + r * C, op + r * C, C, sp[r], gr);
        if (k >= 0) op[r * C + k] -= gr;
      } else {
        cpu::fast::load(xp + r * C, buf.data(), C);
        grad_row(buf.data(), buf.data(), C, sp[r], gr);
        if (k >= 0) buf[k] -= gr;
        cpu::fast::store(buf.data(), op + r * C, C);
      }
    }
  });
}

}  // namespace

void CrossEntropy::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (auto& o : outputs) o.set_data(Storage::host(o.nbytes()));
  if (outputs[0].size() == 0) return;
  cpu::fast::dispatch_float(inputs[0].dtype(), "CrossEntropy::eval_cpu", [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_rows<T>(inputs[0], inputs[1], outputs[0], outputs[1]);
  });
}

void CrossEntropyVJP::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  cpu::fast::dispatch_float(inputs[0].dtype(), "CrossEntropyVJP::eval_cpu", [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_vjp_rows<T>(inputs[0], inputs[1], inputs[2], inputs[3], out);
  });
}

}  // namespace kiln::fast
