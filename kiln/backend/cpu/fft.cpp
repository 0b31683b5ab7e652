// FFT::eval_cpu: one-dimensional complex transforms along each axis in turn, through KISS FFT
// (BSD; Debian's libkissfft-dev, found at configure time: KILN_HAVE_KISSFFT).
//
// KISS FFT is mixed radix with a generic O(n p) butterfly for a prime factor p, so a length
// with a large prime factor goes through Bluestein's algorithm instead: a chirp-modulated
// circular convolution of power-of-two length (Bluestein, "A linear filtering approach to
// the computation of discrete Fourier transform", 1970), with the chirp computed in double.
// Plans are cached per (length, direction) and shared by threads (kiss_fft only reads its
// state); lines along an axis are spread over kiln's threads.
#include <cmath>
#include <complex>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_fft.h"
#include "kiln/utils.h"

#ifdef KILN_HAVE_KISSFFT
#include <kiss_fft.h>
#endif

namespace kiln {

#ifdef KILN_HAVE_KISSFFT

namespace {

using cpx = std::complex<float>;
static_assert(sizeof(cpx) == sizeof(kiss_fft_cpx), "kiss_fft_cpx must be two floats");

// Above this prime factor, Bluestein's three power-of-two transforms beat the generic butterfly.
constexpr int kMaxDirectPrime = 97;

int largest_prime_factor(int n) {
  int p = 1;
  for (int f = 2; static_cast<int64_t>(f) * f <= n; ++f) {
    while (n % f == 0) {
      p = f;
      n /= f;
    }
  }
  return n > 1 ? std::max(p, n) : p;
}

struct KissCfg {
  kiss_fft_cfg cfg;
  explicit KissCfg(int n, bool inverse) : cfg(kiss_fft_alloc(n, inverse ? 1 : 0, nullptr, nullptr)) {
    if (!cfg) throw std::bad_alloc();
  }
  ~KissCfg() { kiss_fft_free(cfg); }
  KissCfg(const KissCfg&) = delete;
  KissCfg& operator=(const KissCfg&) = delete;
  void run(const cpx* in, cpx* out) const {
    kiss_fft(cfg, reinterpret_cast<const kiss_fft_cpx*>(in), reinterpret_cast<kiss_fft_cpx*>(out));
  }
};

// An unnormalized transform of one length and direction.
class Plan {
 public:
  Plan(int n, bool inverse) : n_(n) {
    if (n <= 1) return;
    if (largest_prime_factor(n) <= kMaxDirectPrime) {
      direct_ = std::make_unique<KissCfg>(n, inverse);
      return;
    }
    m_ = 1;
    while (m_ < 2 * n - 1) m_ *= 2;
    fwd_ = std::make_unique<KissCfg>(m_, false);
    inv_ = std::make_unique<KissCfg>(m_, true);
    // chirp_k = exp(-+ i pi k^2 / n), with k^2 reduced mod 2n so the angle stays small.
    const double sign = inverse ? 1.0 : -1.0;
    chirp_.resize(n);
    for (int64_t k = 0; k < n; ++k) {
      const double a = sign * M_PI * static_cast<double>((k * k) % (2 * static_cast<int64_t>(n))) / n;
      chirp_[k] = cpx(static_cast<float>(std::cos(a)), static_cast<float>(std::sin(a)));
    }
    std::vector<cpx> b(m_, cpx(0, 0));
    b[0] = std::conj(chirp_[0]);
    for (int k = 1; k < n; ++k) b[k] = b[m_ - k] = std::conj(chirp_[k]);
    kernel_.resize(m_);
    fwd_->run(b.data(), kernel_.data());
    // The 1 / m of the inverse transform, folded into the kernel once.
    for (auto& v : kernel_) v /= static_cast<float>(m_);
  }

  /** Scratch elements `run` needs. */
  size_t scratch_size() const { return direct_ || n_ <= 1 ? 0 : 2 * static_cast<size_t>(m_); }

  /** out = DFT(in), both of length n; in and out may alias. */
  void run(const cpx* in, cpx* out, cpx* scratch) const {
    if (n_ <= 1) {
      if (n_ == 1) out[0] = in[0];
      return;
    }
    if (direct_) return direct_->run(in, out);
    cpx* a = scratch;
    cpx* fa = scratch + m_;
    for (int k = 0; k < n_; ++k) a[k] = in[k] * chirp_[k];
    std::fill(a + n_, a + m_, cpx(0, 0));
    fwd_->run(a, fa);
    for (int k = 0; k < m_; ++k) fa[k] *= kernel_[k];
    inv_->run(fa, a);
    for (int k = 0; k < n_; ++k) out[k] = a[k] * chirp_[k];
  }

 private:
  int n_;
  int m_ = 0;
  std::unique_ptr<KissCfg> direct_, fwd_, inv_;
  std::vector<cpx> chirp_, kernel_;
};

const Plan& plan(int n, bool inverse) {
  static std::mutex mu;
  static auto* cache = new std::map<std::pair<int, bool>, std::unique_ptr<Plan>>();
  std::lock_guard lk(mu);
  auto& p = (*cache)[{n, inverse}];
  if (!p) p = std::make_unique<Plan>(n, inverse);
  return *p;
}

// Line `l` along an axis of a row-contiguous buffer: its first element and stride.
struct Lines {
  int64_t n, stride, count;
  Lines(const Shape& shape, int axis) {
    n = shape[axis];
    stride = 1;
    for (size_t i = axis + 1; i < shape.size(); ++i) stride *= shape[i];
    count = n == 0 ? 0 : static_cast<int64_t>(shape_size(shape)) / n;
  }
  int64_t start(int64_t l) const { return (l / stride) * n * stride + l % stride; }
};

template <typename F>
void for_lines(const Lines& lines, F f) {
  const size_t grain = std::max<size_t>(1, (1 << 15) / std::max<int64_t>(lines.n, 1));
  cpu::parallel_for(static_cast<size_t>(lines.count), grain, [&](size_t b, size_t e) { f(b, e); });
}

// In-place transforms of `data` (row-contiguous, `shape`) along `axis`.
void transform_axis(cpx* data, const Shape& shape, int axis, bool inverse) {
  Lines lines(shape, axis);
  if (lines.n <= 1) return;
  const Plan& p = plan(static_cast<int>(lines.n), inverse);
  for_lines(lines, [&](size_t b, size_t e) {
    std::vector<cpx> buf(lines.n), scratch(p.scratch_size());
    for (size_t l = b; l < e; ++l) {
      cpx* x = data + lines.start(l);
      for (int64_t j = 0; j < lines.n; ++j) buf[j] = x[j * lines.stride];
      p.run(buf.data(), buf.data(), scratch.data());
      for (int64_t j = 0; j < lines.n; ++j) x[j * lines.stride] = buf[j];
    }
  });
}

// A row-contiguous copy of `x` as `dtype`.
array contiguous_copy(const array& x, Dtype dtype) {
  array c(Storage::host(x.size() * dtype.size), x.shape(), dtype);
  if (x.size()) cpu::copy_inplace(x, c, cpu::CopyType::general_general);
  return c;
}

}  // namespace

void FFT::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  const int last = axes_.back();
  const std::vector<int> others(axes_.begin(), axes_.end() - 1);
  if (!real_) {
    cpu::copy_inplace(in, out, cpu::CopyType::general_general);
    for (int ax : axes_) transform_axis(out.data<cpx>(), out.shape(), ax, inverse_);
  } else if (!inverse_) {
    // Real to complex: full transforms of the real lines, keeping n / 2 + 1 outputs.
    array x = contiguous_copy(in, float32);
    const float* src = x.data<float>();
    cpx* dst = out.data<cpx>();
    Lines li(in.shape(), last), lo(out.shape(), last);
    const Plan& p = plan(static_cast<int>(li.n), false);
    for_lines(li, [&](size_t b, size_t e) {
      std::vector<cpx> buf(li.n), scratch(p.scratch_size());
      for (size_t l = b; l < e; ++l) {
        const float* xs = src + li.start(l);
        for (int64_t j = 0; j < li.n; ++j) buf[j] = cpx(xs[j * li.stride], 0.0f);
        p.run(buf.data(), buf.data(), scratch.data());
        cpx* o = dst + lo.start(l);
        for (int64_t j = 0; j < lo.n; ++j) o[j * lo.stride] = buf[j];
      }
    });
    for (int ax : others) transform_axis(dst, out.shape(), ax, false);
  } else {
    // Complex to real: inverse transforms of the other axes, then of the Hermitian
    // extension of each last-axis line, keeping the real part.
    array z = contiguous_copy(in, complex64);
    for (int ax : others) transform_axis(z.data<cpx>(), z.shape(), ax, true);
    const cpx* src = z.data<cpx>();
    float* dst = out.data<float>();
    Lines li(z.shape(), last), lo(out.shape(), last);
    const int64_t n = lo.n, m = li.n;
    const Plan& p = plan(static_cast<int>(n), true);
    for_lines(lo, [&](size_t b, size_t e) {
      std::vector<cpx> buf(n), scratch(p.scratch_size());
      for (size_t l = b; l < e; ++l) {
        const cpx* zs = src + li.start(l);
        for (int64_t k = 0; k < n; ++k) {
          buf[k] = k < m ? zs[k * li.stride] : std::conj(zs[(n - k) * li.stride]);
        }
        p.run(buf.data(), buf.data(), scratch.data());
        float* o = dst + lo.start(l);
        for (int64_t j = 0; j < n; ++j) o[j * lo.stride] = buf[j].real();
      }
    });
  }
  if (scale_ != 1.0) {
    const float c = static_cast<float>(scale_);
    const size_t count = out.dtype() == complex64 ? 2 * out.size() : out.size();
    float* d = reinterpret_cast<float*>(out.data<char>());
    cpu::parallel_for(count, cpu::kElementwiseGrain, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) d[i] *= c;
    });
  }
}

#else  // no FFT library at configure time

void FFT::eval_cpu(const std::vector<array>&, array&) {
  throw std::runtime_error(
      "[FFT::eval_cpu] kiln was built without an FFT library: install KISS FFT "
      "(Debian/Ubuntu: libkissfft-dev) and rebuild, or run the transform on the GPU.");
}

#endif

}  // namespace kiln
