// FFT::eval_cpu: one-dimensional complex transforms along each axis in turn, through KISS FFT
// (BSD; Debian's libkissfft-dev, found at configure time: KILN_HAVE_KISSFFT).
//
// KISS FFT is mixed radix with a generic O(n p) butterfly for a prime factor p, so a length
// with a large prime factor goes through Bluestein's algorithm instead: a chirp-modulated
// circular convolution of power-of-two length (Bluestein, "A linear filtering approach to
// the computation of discrete Fourier transform", 1970), with the chirp computed in double.
// Long lines take Bailey's four-step algorithm ("FFTs in external or hierarchical memory",
// 1990): n = n1 n2 as two passes of short transforms that fit in cache, over rows spread on
// kiln's threads, with a twiddle pass and transposes between them. Real lines of even length
// go through KISS FFT's real transforms (a complex transform of half the length).
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
#include <kiss_fftr.h>
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
  explicit KissCfg(int n, bool inverse)
      : cfg(kiss_fft_alloc(n, inverse ? 1 : 0, nullptr, nullptr)) {
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
      const double a =
          sign * M_PI * static_cast<double>((k * k) % (2 * static_cast<int64_t>(n))) / n;
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

// ---------------------------------------------------------------- four-step

// Lines at least this long take the four-step algorithm (shorter ones fit in cache whole).
constexpr int64_t kFourStepMin = 1 << 15;
// Rows per chunk of the passes' parallel loops: enough work per chunk.
constexpr size_t kRowsGrain = 16;

// The split n = n1 * n2 with n1 <= n2 as close to sqrt(n) as the divisors allow, or {0, 0}
// when no split keeps both factors at least 32 and free of large primes.
std::pair<int, int> four_step_split(int64_t n) {
  if (n < kFourStepMin || n > INT32_MAX) return {0, 0};
  int best = 0;
  for (int64_t d = 32; d * d <= n; ++d)
    if (n % d == 0) best = static_cast<int>(d);
  if (best == 0) return {0, 0};
  const int n2 = static_cast<int>(n / best);
  if (largest_prime_factor(best) > kMaxDirectPrime || largest_prime_factor(n2) > kMaxDirectPrime)
    return {0, 0};
  return {best, n2};
}

// dst (cols x rows) = transpose of src (rows x cols), both row-major, by tiles staged in a
// small buffer: every read and write of the big arrays is a contiguous run of a tile's width.
// (Writing a tile straight into dst strides by `rows`, a power of two here, and its rows
// then share cache sets.)
void transpose(const cpx* src, cpx* dst, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  const size_t tiles = static_cast<size_t>((rows + kTile - 1) / kTile);
  cpu::parallel_for(tiles, 1, [&](size_t b, size_t e) {
    cpx buf[kTile][kTile];  // buf[c - c0][r - r0]
    for (int64_t r0 = static_cast<int64_t>(b) * kTile; r0 < std::min<int64_t>(rows, e * kTile);
         r0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) buf[c - c0][r - r0] = src[r * cols + c];
        for (int64_t c = c0; c < c1; ++c)
          std::copy(buf[c - c0], buf[c - c0] + (r1 - r0), dst + c * rows + r0);
      }
    }
  });
}

// DFT of one contiguous line of n = n1 * n2 (four_step_split) from x into y (distinct, both
// of length n); x is overwritten. Steps: the n2 columns' transforms of length n1 (rows of the
// transpose), each element k1 of row j2 times w^(j2 k1) with w = exp(-+2 pi i / n), then the
// n1 rows' transforms of length n2, read out transposed: X[k1 + n1 k2] = row k1's element k2.
void four_step(cpx* x, cpx* y, int n1, int n2, bool inverse) {
  const int64_t n = static_cast<int64_t>(n1) * n2;
  const Plan& p1 = plan(n1, inverse);
  const Plan& p2 = plan(n2, inverse);
  const double sign = inverse ? 1.0 : -1.0;
  transpose(x, y, n1, n2);  // y: n2 rows of n1
  cpu::parallel_for(static_cast<size_t>(n2), kRowsGrain, [&](size_t b, size_t e) {
    std::vector<cpx> scratch(p1.scratch_size());
    for (size_t j2 = b; j2 < e; ++j2) {
      cpx* row = y + j2 * n1;
      p1.run(row, row, scratch.data());
      // Twiddles by a recurrence in double, re-anchored exactly every 32 steps.
      const double step = sign * 2 * M_PI * static_cast<double>(j2) / static_cast<double>(n);
      const std::complex<double> w(std::cos(step), std::sin(step));
      std::complex<double> t = 1.0;
      for (int k1 = 0; k1 < n1; ++k1) {
        if (k1 % 32 == 0) {
          const double a = sign * 2 * M_PI *
                           static_cast<double>((static_cast<int64_t>(j2) * k1) % n) /
                           static_cast<double>(n);
          t = std::complex<double>(std::cos(a), std::sin(a));
        }
        row[k1] *= cpx(static_cast<float>(t.real()), static_cast<float>(t.imag()));
        t *= w;
      }
    }
  });
  transpose(y, x, n2, n1);  // x: n1 rows of n2
  cpu::parallel_for(static_cast<size_t>(n1), kRowsGrain, [&](size_t b, size_t e) {
    std::vector<cpx> scratch(p2.scratch_size());
    for (size_t k1 = b; k1 < e; ++k1) p2.run(x + k1 * n2, x + k1 * n2, scratch.data());
  });
  transpose(x, y, n1, n2);  // y[k2 * n1 + k1]
}

// ---------------------------------------------------------------- real transforms

// Even lengths whose half is free of large primes take KISS FFT's real transforms.
bool real_direct(int64_t n) {
  return n >= 4 && n % 2 == 0 && n <= INT32_MAX &&
         largest_prime_factor(static_cast<int>(n / 2)) <= kMaxDirectPrime;
}

struct RealPlan {
  kiss_fftr_cfg cfg;
  RealPlan(int n, bool inverse) : cfg(kiss_fftr_alloc(n, inverse ? 1 : 0, nullptr, nullptr)) {
    if (!cfg) throw std::bad_alloc();
  }
  ~RealPlan() { kiss_fftr_free(cfg); }
  RealPlan(const RealPlan&) = delete;
  RealPlan& operator=(const RealPlan&) = delete;
};

// A long real line of n = 2N as the complex line z[k] = x[2k] + i x[2k+1] of length N
// through the four-step transform: with Z = DFT_N(z), the even and odd samples' transforms
// are E[k] = (Z[k] + conj(Z[N-k])) / 2 and O[k] = (Z[k] - conj(Z[N-k])) / 2i, and
// X[k] = E[k] + w^k O[k] for k = 0..N (w = exp(-2 pi i / n), Z[N] = Z[0]).

// w^k = exp(sign 2 pi i k / n) for k in [b, e), by a recurrence in double re-anchored every
// 32 steps; f(k, w^k).
template <typename F>
void for_twiddles(int64_t n, double sign, int64_t b, int64_t e, F f) {
  const double step = sign * 2 * M_PI / static_cast<double>(n);
  const std::complex<double> w(std::cos(step), std::sin(step));
  std::complex<double> t;
  for (int64_t k = b; k < e; ++k) {
    if (k == b || (k - b) % 32 == 0) {
      const double a = step * static_cast<double>(k);
      t = std::complex<double>(std::cos(a), std::sin(a));
    }
    f(k, cpx(static_cast<float>(t.real()), static_cast<float>(t.imag())));
    t *= w;
  }
}

// Whether a real line of n takes the four-step path (its half splits).
bool real_four_step(int64_t n) {
  return n % 2 == 0 && four_step_split(n / 2).first > 0;
}

// spec[0..N] = rfft of the real line x (n = 2N floats, contiguous); z and y: N scratch.
void rfft_four_step(const float* x, cpx* spec, int64_t n, cpx* z, cpx* y) {
  const int64_t N = n / 2;
  const auto [n1, n2] = four_step_split(N);
  for (int64_t k = 0; k < N; ++k) z[k] = cpx(x[2 * k], x[2 * k + 1]);
  four_step(z, y, n1, n2, false);
  cpu::parallel_for(static_cast<size_t>(N + 1), cpu::kElementwiseGrain, [&](size_t b, size_t e) {
    for_twiddles(n, -1.0, static_cast<int64_t>(b), static_cast<int64_t>(e), [&](int64_t k, cpx w) {
      const cpx a = y[k % N], c = std::conj(y[(N - k) % N]);
      const cpx even = 0.5f * (a + c), odd = cpx(0, -0.5f) * (a - c);
      spec[k] = even + w * odd;
    });
  });
}

// x[0..n) = the unnormalized irfft of spec[0..N] (the imaginary parts of bins 0 and N are
// ignored, as NumPy does); z and y: N scratch.
void irfft_four_step(const cpx* spec, float* x, int64_t n, cpx* z, cpx* y) {
  const int64_t N = n / 2;
  const auto [n1, n2] = four_step_split(N);
  auto bin = [&](int64_t k) { return k == 0 || k == N ? cpx(spec[k].real(), 0.0f) : spec[k]; };
  // E = X[k] + conj(X[N-k]), O = (X[k] - conj(X[N-k])) w^-k (each twice the half-length
  // transforms), Z = E + i O: the length-N inverse of Z is n (x_even + i x_odd).
  cpu::parallel_for(static_cast<size_t>(N), cpu::kElementwiseGrain, [&](size_t b, size_t e) {
    for_twiddles(n, 1.0, static_cast<int64_t>(b), static_cast<int64_t>(e), [&](int64_t k, cpx w) {
      const cpx a = bin(k), cb = std::conj(bin(N - k));
      z[k] = (a + cb) + cpx(0, 1) * ((a - cb) * w);
    });
  });
  four_step(z, y, n1, n2, true);
  cpu::parallel_for(static_cast<size_t>(N), cpu::kElementwiseGrain, [&](size_t b, size_t e) {
    for (size_t k = b; k < e; ++k) {
      x[2 * k] = y[k].real();
      x[2 * k + 1] = y[k].imag();
    }
  });
}

// Per thread: kiss_fftr writes into a buffer inside its plan, so threads cannot share one.
const RealPlan& real_plan(int n, bool inverse) {
  thread_local std::map<std::pair<int, bool>, std::unique_ptr<RealPlan>> cache;
  auto& p = cache[{n, inverse}];
  if (!p) p = std::make_unique<RealPlan>(n, inverse);
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
  if (const auto [n1, n2] = four_step_split(lines.n); n1 > 0) {
    // One line at a time, each pass spread over the threads.
    std::vector<cpx> a(lines.n), b(lines.n);
    for (int64_t l = 0; l < lines.count; ++l) {
      cpx* x = data + lines.start(l);
      for (int64_t j = 0; j < lines.n; ++j) a[j] = x[j * lines.stride];
      four_step(a.data(), b.data(), n1, n2, inverse);
      for (int64_t j = 0; j < lines.n; ++j) x[j * lines.stride] = b[j];
    }
    return;
  }
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

// out *= scale (the norm), over its float parts.
void scale_output(array& out, double scale) {
  if (scale == 1.0) return;
  const float c = static_cast<float>(scale);
  const size_t count = out.dtype() == complex64 ? 2 * out.size() : out.size();
  float* d = reinterpret_cast<float*>(out.data<char>());
  cpu::parallel_for(count, cpu::kElementwiseGrain, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) d[i] *= c;
  });
}

// `x` when it is row-contiguous `dtype` already (to be read only), else contiguous_copy.
array readable_as(const array& x, Dtype dtype) {
  return x.dtype() == dtype && x.flags().row_contiguous ? x : contiguous_copy(x, dtype);
}

// The lines of a real transform in either direction: each line of `li` gathered contiguous,
// f(in, out) writing a whole output line (n / 2 + 1 bins forward, n unnormalized values
// inverse), and that line times c written along `lo`. make() gives one f per chunk of lines
// (per-thread plans and scratch live in it). `serial`: one line at a time, for an f that
// spreads itself over the threads (the four-step path); else lines in parallel.
template <typename In, typename Out, typename Make>
void real_lines(const In* src, Out* dst, const Lines& li, const Lines& lo, float c, bool serial,
                Make make) {
  auto chunk = [&](size_t b, size_t e) {
    auto f = make();
    std::vector<In> in(li.n);
    std::vector<Out> out(lo.n);
    for (size_t l = b; l < e; ++l) {
      const In* xs = src + li.start(l);
      for (int64_t j = 0; j < li.n; ++j) in[j] = xs[j * li.stride];
      f(in.data(), out.data());
      Out* o = dst + lo.start(l);
      for (int64_t j = 0; j < lo.n; ++j) o[j * lo.stride] = out[j] * c;
    }
  };
  if (serial)
    chunk(0, static_cast<size_t>(li.count));
  else
    for_lines(li.n > lo.n ? li : lo, chunk);  // grain by the real (longer) side
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
    // Real to complex: each last-axis line's n / 2 + 1 bins, then the other axes.
    array x = readable_as(in, float32);
    Lines li(in.shape(), last), lo(out.shape(), last);
    const int64_t n = li.n;
    if (real_four_step(n)) {
      std::vector<cpx> z(n / 2), y(n / 2);
      real_lines(x.data<float>(), out.data<cpx>(), li, lo, 1.0f, true, [&] {
        return [&](const float* line, cpx* spec) {
          rfft_four_step(line, spec, n, z.data(), y.data());
        };
      });
    } else if (real_direct(n)) {
      real_lines(x.data<float>(), out.data<cpx>(), li, lo, 1.0f, false, [&] {
        return [&rp = real_plan(static_cast<int>(n), false)](const float* line, cpx* spec) {
          kiss_fftr(rp.cfg, line, reinterpret_cast<kiss_fft_cpx*>(spec));
        };
      });
    } else {  // the full complex transform of the real line
      const Plan& p = plan(static_cast<int>(n), false);
      real_lines(x.data<float>(), out.data<cpx>(), li, lo, 1.0f, false, [&] {
        return [&p, n, buf = std::vector<cpx>(n), scratch = std::vector<cpx>(p.scratch_size())](
                   const float* line, cpx* spec) mutable {
          for (int64_t j = 0; j < n; ++j) buf[j] = cpx(line[j], 0.0f);
          p.run(buf.data(), buf.data(), scratch.data());
          std::copy(buf.begin(), buf.begin() + n / 2 + 1, spec);
        };
      });
    }
    for (int ax : others) transform_axis(out.data<cpx>(), out.shape(), ax, false);
  } else {
    // Complex to real: inverse transforms of the other axes, then each last-axis line's real
    // inverse (the norm applied as lines are written).
    // The other axes transform in place: a copy then, else the input itself where it can be.
    array z = others.empty() ? readable_as(in, complex64) : contiguous_copy(in, complex64);
    for (int ax : others) transform_axis(z.data<cpx>(), z.shape(), ax, true);
    Lines li(z.shape(), last), lo(out.shape(), last);
    const int64_t n = lo.n;  // li.n = n / 2 + 1 (the front end crops or pads)
    const float c = static_cast<float>(scale_);
    if (real_four_step(n)) {
      std::vector<cpx> za(n / 2), ya(n / 2);
      real_lines(z.data<cpx>(), out.data<float>(), li, lo, c, true, [&] {
        return [&](const cpx* spec, float* line) {
          irfft_four_step(spec, line, n, za.data(), ya.data());
        };
      });
    } else if (real_direct(n)) {
      // kiss_fftri reads bins 0..n/2 (the real parts only of the first and last).
      real_lines(z.data<cpx>(), out.data<float>(), li, lo, c, false, [&] {
        return [&rp = real_plan(static_cast<int>(n), true)](const cpx* spec, float* line) {
          kiss_fftri(rp.cfg, reinterpret_cast<const kiss_fft_cpx*>(spec), line);
        };
      });
    } else {  // the full inverse of the Hermitian extension, keeping the real part
      const Plan& p = plan(static_cast<int>(n), true);
      real_lines(z.data<cpx>(), out.data<float>(), li, lo, c, false, [&] {
        return [&p, n, buf = std::vector<cpx>(n), scratch = std::vector<cpx>(p.scratch_size())](
                   const cpx* spec, float* line) mutable {
          for (int64_t k = 0; k < n; ++k) buf[k] = k <= n / 2 ? spec[k] : std::conj(spec[n - k]);
          p.run(buf.data(), buf.data(), scratch.data());
          for (int64_t j = 0; j < n; ++j) line[j] = buf[j].real();
        };
      });
    }
    return;
  }
  scale_output(out, scale_);
}

#else  // no FFT library at configure time

void FFT::eval_cpu(const std::vector<array>&, array&) {
  throw std::runtime_error(
      "[FFT::eval_cpu] kiln was built without an FFT library: install KISS FFT "
      "(Debian/Ubuntu: libkissfft-dev) and rebuild, or run the transform on the GPU.");
}

#endif

}  // namespace kiln
