// eval_cpu of rope. Rows (one position of one head) are spread over the thread pool and read
// through their strides (a transposed (B, T, H, D) input needs no copy). The angles follow
// the GPU kernel: position (offset + t) * scale and the inverse frequency rounded to the
// accumulation type, their product rounded once, its cosine and sine from double. They are
// tabulated per (offset group, position) when several heads share them.
#include <cmath>
#include <vector>

#include "kiln/backend/cpu/fast_common.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/fast_primitives.h"

namespace kiln::fast {

namespace {

using cpu::fast::Acc;

struct RopeParams {
  int dims;
  bool traditional;
  float base, scale;
  bool forward;
};

template <typename T>
void rope_rows(const array& x, const array& offset, const array* freqs, array& out,
               const RopeParams& p) {
  using A = Acc<T>;
  const int nd = static_cast<int>(x.ndim());
  const int64_t B = x.shape(0), L = x.shape(nd - 2), D = x.shape(nd - 1);
  const int64_t rows = x.size() / D, per_batch = rows / B, heads = per_batch / L;
  const int half = p.dims / 2;

  std::vector<A> inv_freq(half);
  if (freqs) {
    const array f = cpu::fast::dense(*freqs);
    for (int i = 0; i < half; ++i) inv_freq[i] = A(1) / static_cast<A>(f.data<float>()[i]);
  } else {
    for (int i = 0; i < half; ++i)
      inv_freq[i] = static_cast<A>(std::exp(-i * std::log(static_cast<double>(p.base)) / half));
  }
  const array off = cpu::fast::dense(offset);
  const int32_t* offp = off.data<int32_t>();
  const bool per_example = off.size() > 1;
  auto angle = [&](int64_t b, int64_t t, int i) {
    const A pos = (static_cast<A>(offp[per_example ? b : 0]) + static_cast<A>(t)) * A(p.scale);
    return pos * inv_freq[i];
  };
  const double sign = p.forward ? 1.0 : -1.0;

  // Table of (cos, sin) per (offset group, position, pair) when several heads reuse it.
  const int64_t groups = per_example ? B : 1;
  std::vector<A> table;
  if (heads > 1 || (!per_example && B > 1)) {
    table.resize(groups * L * half * 2);
    cpu::parallel_for(groups * L, std::max<int64_t>(1, 4096 / std::max(half, 1)),
                      [&](size_t b, size_t e) {
                        for (size_t gl = b; gl < e; ++gl) {
                          A* tp = table.data() + gl * half * 2;
                          for (int i = 0; i < half; ++i) {
                            const double th = angle(gl / L, gl % L, i);
                            tp[2 * i] = static_cast<A>(std::cos(th));
                            tp[2 * i + 1] = static_cast<A>(sign * std::sin(th));
                          }
                        }
                      });
  }

  const T* xp = x.data<T>();
  T* yp = out.data<T>();
  const int64_t sd = x.strides(nd - 1);
  const Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  const Strides row_strides(x.strides().begin(), x.strides().end() - 1);
  cpu::parallel_for(rows, cpu::fast::row_grain(rows, D), [&](size_t rb, size_t re) {
    std::vector<A> cs(table.empty() ? 2 * half : 0);
    for (size_t r = rb; r < re; ++r) {
      const int64_t b = r / per_batch, t = r % L;
      const T* xr = xp + elem_to_loc(r, row_shape, row_strides);
      T* yr = yp + r * D;
      const A* tp;
      if (table.empty()) {
        for (int i = 0; i < half; ++i) {
          const double th = angle(b, t, i);
          cs[2 * i] = static_cast<A>(std::cos(th));
          cs[2 * i + 1] = static_cast<A>(sign * std::sin(th));
        }
        tp = cs.data();
      } else {
        tp = table.data() + ((per_example ? b : 0) * L + t) * half * 2;
      }
      // Pair i is (i, i + half), or (2i, 2i + 1) in the traditional layout.
      const int64_t step = p.traditional ? 2 : 1, second = p.traditional ? 1 : half;
      for (int i = 0; i < half; ++i) {
        const int64_t j = i * step;
        const A x1 = static_cast<A>(static_cast<Acc<T>>(xr[j * sd]));
        const A x2 = static_cast<A>(static_cast<Acc<T>>(xr[(j + second) * sd]));
        const A c = tp[2 * i], s = tp[2 * i + 1];
        yr[j] = static_cast<T>(x1 * c - x2 * s);
        yr[j + second] = static_cast<T>(x1 * s + x2 * c);
      }
      for (int64_t i = p.dims; i < D; ++i) yr[i] = xr[i * sd];
    }
  });
}

}  // namespace

void RoPE::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  const RopeParams p{dims_, traditional_, base_, scale_, forward_};
  cpu::fast::dispatch_float(inputs[0].dtype(), "RoPE::eval_cpu", [&](auto tag) {
    using T = decltype(tag);
    rope_rows<T>(inputs[0], inputs[1], inputs.size() > 2 ? &inputs[2] : nullptr, out, p);
  });
}

}  // namespace kiln::fast
