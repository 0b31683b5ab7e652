// eval_cpu of cross_entropy and its gradient. Each row of logits is widened once into a
// buffer of the accumulation type; the forward pass keeps each row's logsumexp, which the
// gradient reuses (softmax = exp(x - logsumexp)), so the backward reads the logits once.
#include <cmath>
#include <limits>
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

KILN_SIMD_CLONES void exp_shifted(const float* x, float* e, int64_t n, float m) {
  for (int64_t i = 0; i < n; ++i) e[i] = cpu::exp_f32(x[i] - m);
}
void exp_shifted(const double* x, double* e, int64_t n, double m) {
  for (int64_t i = 0; i < n; ++i) e[i] = std::exp(x[i] - m);
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
    std::vector<A> buf(C), ex(C);
    for (size_t r = b; r < e; ++r) {
      cpu::fast::load(xp + r * C, buf.data(), C);
      const A m = cpu::fast::max(buf.data(), C);
      // An infinite maximum: subtracting it would give NaN for the infinite logits.
      const A shift = std::isfinite(m) ? m : A(0);
      exp_shifted(buf.data(), ex.data(), C, shift);
      const A l = shift + std::log(cpu::fast::sum(ex.data(), C));
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
    std::vector<A> buf(C);
    for (size_t r = b; r < e; ++r) {
      cpu::fast::load(xp + r * C, buf.data(), C);
      const int64_t k = class_index(tp[r], C);
      const A gr = k < 0 ? std::numeric_limits<A>::quiet_NaN() : gp[r];
      exp_shifted(buf.data(), buf.data(), C, sp[r]);
      for (int64_t i = 0; i < C; ++i) buf[i] *= gr;
      if (k >= 0) buf[k] -= gr;
      cpu::fast::store(buf.data(), op + r * C, C);
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
