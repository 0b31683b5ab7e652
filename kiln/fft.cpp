// kiln::fft ops: argument checks, crop/pad to the requested sizes, normalization, and the
// compositions (frequencies, shifts, stft/istft) over the FFT primitive (primitives_fft.h).
#include "kiln/fft.h"

#include <cmath>
#include <numeric>
#include <set>

#include "kiln/ops.h"
#include "kiln/primitives_fft.h"
#include "kiln/utils.h"

namespace kiln::fft {

namespace {

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

// The scale of a transform whose sizes multiply to `count`.
double norm_scale(FFTNorm norm, bool inverse, double count) {
  switch (norm) {
    case FFTNorm::Backward:
      return inverse ? 1.0 / count : 1.0;
    case FFTNorm::Forward:
      return inverse ? 1.0 : 1.0 / count;
    case FFTNorm::Ortho:
      return 1.0 / std::sqrt(count);
  }
  return 1.0;
}

array fft_impl(const char* op, const array& a, const Shape& n, const std::vector<int>& axes,
               bool real, bool inverse, FFTNorm norm, const Stream& s) {
  if (a.ndim() < 1) {
    throw std::invalid_argument(msg("[", op, "] Requires an array with at least one dimension."));
  }
  if (n.size() != axes.size()) {
    throw std::invalid_argument(msg("[", op, "] Shape ", shape_str(n), " and axes ",
                                    axes_str(axes), " have different sizes."));
  }
  if (axes.empty()) return a;
  const int nd = static_cast<int>(a.ndim());
  std::vector<int> ax;
  for (int x : axes) {
    int v = x < 0 ? x + nd : x;
    if (v < 0 || v >= nd) {
      throw std::invalid_argument(msg("[", op, "] Invalid axis ", x, " for an array with ", nd,
                                      " dimensions."));
    }
    ax.push_back(v);
  }
  if (std::set<int>(ax.begin(), ax.end()).size() != ax.size()) {
    throw std::invalid_argument(msg("[", op, "] Duplicated axis received ", axes_str(axes), "."));
  }
  for (int v : n) {
    if (v <= 0) {
      throw std::invalid_argument(
          msg("[", op, "] Invalid FFT output size requested ", shape_str(n), "."));
    }
  }
  // The input's sizes along the axes: n, except the last of irfftn (n / 2 + 1).
  Shape in_shape = a.shape();
  for (size_t i = 0; i < ax.size(); ++i) in_shape[ax[i]] = n[i];
  if (real && inverse) in_shape[ax.back()] = n.back() / 2 + 1;

  const Dtype in_type = real && !inverse ? float32 : complex64;
  array x = astype(a, in_type, s);
  Shape crop = x.shape();
  bool any_less = false, any_greater = false;
  for (int i = 0; i < nd; ++i) {
    any_less |= in_shape[i] < x.shape(i);
    any_greater |= in_shape[i] > x.shape(i);
    crop[i] = std::min(in_shape[i], x.shape(i));
  }
  if (any_less) x = slice(x, Shape(nd, 0), crop, s);
  if (any_greater) {
    std::vector<std::pair<int, int>> w(nd, {0, 0});
    for (int i = 0; i < nd; ++i) w[i] = {0, in_shape[i] - x.shape(i)};
    x = pad(x, w, array(0, in_type), s);
  }
  double count = 1.0;
  for (int v : n) count *= v;
  return fft_detail::apply(x, ax, inverse, real, real && inverse ? n.back() : 0,
                           norm_scale(norm, inverse, count), s);
}

Shape default_n(const array& a, const std::vector<int>& axes, bool real, bool inverse) {
  Shape n;
  for (int ax : axes) {
    const int nd = static_cast<int>(a.ndim());
    n.push_back(a.shape(normalize_axis(ax, nd, "fftn")));
  }
  if (real && inverse && !n.empty()) n.back() = 2 * (n.back() - 1);
  return n;
}

std::vector<int> all_axes(const array& a) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

array one_d(const char* op, const array& a, std::optional<int> n, int axis, bool real,
            bool inverse, FFTNorm norm, StreamOrDevice s) {
  if (a.ndim() < 1) {
    throw std::invalid_argument(msg("[", op, "] Requires an array with at least one dimension."));
  }
  const int nd = static_cast<int>(a.ndim());
  if (axis < -nd || axis >= nd) {
    throw std::invalid_argument(
        msg("[", op, "] Invalid axis ", axis, " for an array with ", nd, " dimensions."));
  }
  int size = n ? *n : (real && inverse ? 2 * (a.shape(axis) - 1) : a.shape(axis));
  return fft_impl(op, a, {size}, {axis}, real, inverse, norm, to_stream(s));
}

}  // namespace

FFTNorm norm_from_string(const std::string& norm) {
  if (norm == "backward") return FFTNorm::Backward;
  if (norm == "ortho") return FFTNorm::Ortho;
  if (norm == "forward") return FFTNorm::Forward;
  throw std::invalid_argument(msg("[fft] Invalid norm '", norm,
                                  "'; expected 'backward', 'ortho' or 'forward'."));
}

#define KILN_FFTN(NAME, REAL, INVERSE)                                                         \
  array NAME(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm,       \
             StreamOrDevice s) {                                                               \
    return fft_impl(#NAME, a, n, axes, REAL, INVERSE, norm, to_stream(s));                     \
  }                                                                                            \
  array NAME(const array& a, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {   \
    if (a.ndim() < 1) return fft_impl(#NAME, a, {}, {}, REAL, INVERSE, norm, to_stream(s));    \
    return fft_impl(#NAME, a, default_n(a, axes, REAL, INVERSE), axes, REAL, INVERSE, norm,    \
                    to_stream(s));                                                             \
  }                                                                                            \
  array NAME(const array& a, FFTNorm norm, StreamOrDevice s) {                                 \
    return NAME(a, all_axes(a), norm, s);                                                      \
  }
KILN_FFTN(fftn, false, false)
KILN_FFTN(ifftn, false, true)
KILN_FFTN(rfftn, true, false)
KILN_FFTN(irfftn, true, true)
#undef KILN_FFTN

array fft(const array& a, std::optional<int> n, int axis, FFTNorm norm, StreamOrDevice s) {
  return one_d("fft", a, n, axis, false, false, norm, s);
}
array ifft(const array& a, std::optional<int> n, int axis, FFTNorm norm, StreamOrDevice s) {
  return one_d("ifft", a, n, axis, false, true, norm, s);
}
array rfft(const array& a, std::optional<int> n, int axis, FFTNorm norm, StreamOrDevice s) {
  return one_d("rfft", a, n, axis, true, false, norm, s);
}
array irfft(const array& a, std::optional<int> n, int axis, FFTNorm norm, StreamOrDevice s) {
  return one_d("irfft", a, n, axis, true, true, norm, s);
}

array fftfreq(int n, double d, StreamOrDevice s) {
  if (n < 1) throw std::invalid_argument(msg("[fftfreq] n must be positive; got ", n, "."));
  if (d == 0) throw std::invalid_argument("[fftfreq] d must not be zero.");
  // [0, 1, ..., (n - 1) / 2, -(n / 2), ..., -1] / (d n)
  std::vector<float> v(n);
  const int pos = (n - 1) / 2 + 1;
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>((i < pos ? i : i - n) / (d * n));
  return array(v.begin(), {n}, float32);
}

array rfftfreq(int n, double d, StreamOrDevice s) {
  if (n < 1) throw std::invalid_argument(msg("[rfftfreq] n must be positive; got ", n, "."));
  if (d == 0) throw std::invalid_argument("[rfftfreq] d must not be zero.");
  std::vector<float> v(n / 2 + 1);
  for (int i = 0; i <= n / 2; ++i) v[i] = static_cast<float>(i / (d * n));
  return array(v.begin(), {n / 2 + 1}, float32);
}

namespace {
array roll_axes(const char* op, const array& a, const std::optional<std::vector<int>>& axes,
                bool inverse, const Stream& s) {
  std::vector<int> ax = axes ? *axes : all_axes(a);
  array out = a;
  const int nd = static_cast<int>(a.ndim());
  for (int x : ax) {
    if (x < -nd || x >= nd) {
      throw std::invalid_argument(
          msg("[", op, "] Invalid axis ", x, " for an array with ", nd, " dimensions."));
    }
    const int axis = x < 0 ? x + nd : x;
    const int size = a.shape(axis);
    const int shift = inverse ? (size + 1) / 2 : size / 2;
    if (size == 0 || shift % size == 0) continue;
    // roll by `shift`: the last `shift` elements move to the front.
    auto parts = split(out, Shape{size - shift}, axis, s);
    out = concatenate({parts[1], parts[0]}, axis, s);
  }
  return out;
}
}  // namespace

array fftshift(const array& a, const std::optional<std::vector<int>>& axes, StreamOrDevice s) {
  return roll_axes("fftshift", a, axes, false, to_stream(s));
}

array ifftshift(const array& a, const std::optional<std::vector<int>>& axes, StreamOrDevice s) {
  return roll_axes("ifftshift", a, axes, true, to_stream(s));
}

// ---------------------------------------------------------------- stft / istft

namespace {

// Pads the last axis by `p` on both sides: zeros, the reflection (without the edge) or the
// edge value repeated.
array pad_last(const array& x, int p, const std::string& mode, const Stream& s) {
  if (p == 0) return x;
  const int nd = static_cast<int>(x.ndim()), len = x.shape(-1);
  if (mode == "constant") {
    std::vector<std::pair<int, int>> w(nd, {0, 0});
    w.back() = {p, p};
    return pad(x, w, array(0, x.dtype()), s);
  }
  auto take_range = [&](int start, int stop, int step) {
    Shape b(nd, 0), e = x.shape(), st(nd, 1);
    b.back() = start;
    e.back() = stop;
    st.back() = step;
    return slice(x, b, e, st, s);
  };
  if (mode == "reflect") {
    if (p >= len) {
      throw std::invalid_argument(msg("[stft] Reflect padding of ", p,
                                      " needs a signal longer than that; got length ", len, "."));
    }
    array left = take_range(p, 0, -1);            // x[p], ..., x[1]
    array right = take_range(len - 2, len - 2 - p, -1);  // x[len-2], ..., x[len-1-p]
    return concatenate({left, x, right}, -1, s);
  }
  if (mode == "edge") {
    if (len == 0) throw std::invalid_argument("[stft] Edge padding of an empty signal.");
    Shape rep = x.shape();
    rep.back() = p;
    array first = broadcast_to(take_range(0, 1, 1), rep, s);
    array last = broadcast_to(take_range(len - 1, len, 1), rep, s);
    return concatenate({first, x, last}, -1, s);
  }
  throw std::invalid_argument(
      msg("[stft] Invalid pad_mode '", mode, "'; expected 'reflect', 'constant' or 'edge'."));
}

// The window of length n_fft: `window` (or ones) of win_length, centred with zeros around.
array full_window(const std::optional<array>& window, int n_fft, int win_length, const char* op,
                  const Stream& s) {
  array w = window ? astype(*window, float32, s) : ones({win_length}, float32, s);
  if (w.ndim() != 1 || w.shape(0) != win_length) {
    throw std::invalid_argument(msg("[", op, "] The window must be 1-d of length win_length = ",
                                    win_length, "; got shape ", shape_str(w.shape()), "."));
  }
  if (win_length < n_fft) {
    const int left = (n_fft - win_length) / 2;
    w = pad(w, {{left, n_fft - win_length - left}}, array(0.0f), s);
  }
  return w;
}

void check_stft_sizes(const char* op, int n_fft, int hop, int win_length) {
  if (n_fft < 1) throw std::invalid_argument(msg("[", op, "] n_fft must be positive; got ", n_fft, "."));
  if (hop < 1) throw std::invalid_argument(msg("[", op, "] hop_length must be positive; got ", hop, "."));
  if (win_length < 1 || win_length > n_fft) {
    throw std::invalid_argument(msg("[", op, "] win_length must be in [1, n_fft = ", n_fft,
                                    "]; got ", win_length, "."));
  }
}

}  // namespace

array stft(const array& x_in, int n_fft, std::optional<int> hop_length,
           std::optional<int> win_length, const std::optional<array>& window, bool center,
           const std::string& pad_mode, FFTNorm norm, std::optional<bool> onesided,
           StreamOrDevice s) {
  auto stream = to_stream(s);
  const int hop = hop_length.value_or(std::max(n_fft / 4, 1));
  const int wl = win_length.value_or(n_fft);
  check_stft_sizes("stft", n_fft, hop, wl);
  if (x_in.ndim() < 1) throw std::invalid_argument("[stft] Requires an array with at least one dimension.");
  const bool cplx = is_complex(x_in.dtype());
  const bool one = onesided.value_or(!cplx);
  if (one && cplx) {
    throw std::invalid_argument("[stft] onesided=True requires a real input.");
  }
  array x = astype(x_in, cplx ? complex64 : float32, stream);
  if (center) x = pad_last(x, n_fft / 2, pad_mode, stream);
  const int len = x.shape(-1);
  if (len < n_fft) {
    throw std::invalid_argument(msg("[stft] The (padded) signal of length ", len,
                                    " is shorter than n_fft = ", n_fft, "."));
  }
  const int frames = 1 + (len - n_fft) / hop;
  // Frames as a strided view: (..., frames, n_fft).
  array c = contiguous(x, false, stream);
  Shape shape(c.shape().begin(), c.shape().end() - 1);
  Strides strides = array::row_major_strides(c.shape());
  strides.pop_back();
  shape.insert(shape.end(), {frames, n_fft});
  strides.insert(strides.end(), {hop, 1});
  array fr = multiply(as_strided(c, shape, strides, 0, stream),
                      full_window(window, n_fft, wl, "stft", stream), stream);
  array spec = one ? rfft(fr, n_fft, -1, norm, stream) : fft(fr, n_fft, -1, norm, stream);
  return swapaxes(spec, -1, -2, stream);
}

array istft(const array& z_in, std::optional<int> n_fft_opt, std::optional<int> hop_length,
            std::optional<int> win_length, const std::optional<array>& window, bool center,
            FFTNorm norm, std::optional<bool> onesided, std::optional<int> length,
            StreamOrDevice s) {
  auto stream = to_stream(s);
  if (z_in.ndim() < 2) {
    throw std::invalid_argument(msg("[istft] Requires an array (..., n_freq, n_frames); got shape ",
                                    shape_str(z_in.shape()), "."));
  }
  const bool one = onesided.value_or(true);
  const int n_freq = z_in.shape(-2), frames = z_in.shape(-1);
  const int n_fft = n_fft_opt.value_or(one ? 2 * (n_freq - 1) : n_freq);
  const int hop = hop_length.value_or(std::max(n_fft / 4, 1));
  const int wl = win_length.value_or(n_fft);
  check_stft_sizes("istft", n_fft, hop, wl);
  const int want = one ? n_fft / 2 + 1 : n_fft;
  if (n_freq != want) {
    throw std::invalid_argument(msg("[istft] n_fft = ", n_fft, " needs ", want,
                                    " frequencies; got ", n_freq, "."));
  }
  array z = swapaxes(astype(z_in, complex64, stream), -1, -2, stream);  // (..., frames, n_freq)
  array fr = one ? irfft(z, n_fft, -1, norm, stream) : real(ifft(z, n_fft, -1, norm, stream), stream);
  array w = full_window(window, n_fft, wl, "istft", stream);
  fr = multiply(fr, w, stream);
  // Overlap-add: frame t adds at t * hop; scatter_add over the flattened positions.
  const int total = n_fft + hop * (frames - 1);
  std::vector<int32_t> pos(static_cast<size_t>(frames) * n_fft);
  for (int t = 0; t < frames; ++t)
    for (int j = 0; j < n_fft; ++j) pos[static_cast<size_t>(t) * n_fft + j] = t * hop + j;
  array idx(pos.begin(), {frames * n_fft}, int32);
  Shape batch(fr.shape().begin(), fr.shape().end() - 2);
  Shape flat = batch;
  flat.push_back(frames * n_fft);
  array vals = reshape(fr, flat, stream);
  // scatter_add along the positions: the scattered axis goes first, updates are
  // (positions, 1, batch...).
  Shape tshape = batch;
  tshape.insert(tshape.begin(), total);
  array v = moveaxis(vals, -1, 0, stream);
  Shape upd = v.shape();
  upd.insert(upd.begin() + 1, 1);
  array out = scatter_add(zeros(tshape, float32, stream), {idx}, reshape(v, upd, stream), {0},
                          stream);
  out = moveaxis(out, 0, -1, stream);
  // The squared-window envelope.
  array w2 = broadcast_to(square(w, stream), {frames, n_fft}, stream);
  array env = scatter_add(zeros({total}, float32, stream), {idx},
                          reshape(w2, {frames * n_fft, 1}, stream), {0}, stream);
  out = divide(out, where(greater(env, array(1e-11f), stream), env, array(1.0f), stream), stream);
  int start = center ? n_fft / 2 : 0;
  int stop = center ? total - n_fft / 2 : total;
  if (length) stop = start + *length;
  const int avail = std::min(stop, total);
  Shape b0(out.ndim(), 0), e0 = out.shape();
  b0.back() = std::min(start, avail);
  e0.back() = avail;
  out = slice(out, b0, e0, stream);
  if (length && out.shape(-1) < *length) {
    std::vector<std::pair<int, int>> pw(out.ndim(), {0, 0});
    pw.back() = {0, *length - out.shape(-1)};
    out = pad(out, pw, array(0.0f), stream);
  }
  return out;
}

}  // namespace kiln::fft
