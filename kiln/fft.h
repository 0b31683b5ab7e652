// kiln::fft: discrete Fourier transforms (MLX's `mlx.core.fft`, NumPy's `numpy.fft`).
//
// Transforms are complex64 (real inputs are float32), of any length (radix 2/3/4/5 and
// small primes directly, Bluestein's algorithm for lengths with a large prime factor), over
// any axes; leading and trailing axes are a batch. `n` (or `s`) crops or zero-pads the
// input along each transformed axis first. `norm` scales as NumPy: "backward" (1/n on the
// inverse), "ortho" (1/sqrt(n) both ways), "forward" (1/n on the forward transform).
// CPU: KISS FFT (Debian's libkissfft-dev) threaded over the batch; GPU: cuFFT (plans cached
// per shape). Derivatives: all transforms are linear and have vjp and jvp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln::fft {

enum class FFTNorm { Backward, Ortho, Forward };

/** "backward", "ortho" or "forward"; std::invalid_argument otherwise. */
FFTNorm norm_from_string(const std::string& norm);

/** n-d transforms over `axes` (default: all axes; fft2 family: the last two) with output
 * sizes `n` per axis (default: the input's; for irfftn the last is 2 * (m - 1)). Throws
 * std::invalid_argument for a 0-d input, duplicate or out-of-range axes, sizes < 1 or a
 * mismatch between `n` and `axes`. */
array fftn(const array& a, const Shape& n, const std::vector<int>& axes,
           FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array fftn(const array& a, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
           StreamOrDevice s = {});
array fftn(const array& a, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array ifftn(const array& a, const Shape& n, const std::vector<int>& axes,
            FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array ifftn(const array& a, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
            StreamOrDevice s = {});
array ifftn(const array& a, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
/** Real input (cast to float32); the last axis of `axes` gives n / 2 + 1 frequencies. */
array rfftn(const array& a, const Shape& n, const std::vector<int>& axes,
            FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array rfftn(const array& a, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
            StreamOrDevice s = {});
array rfftn(const array& a, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
/** Inverse of rfftn: real (float32) output of sizes `n`; the imaginary parts of the zero
 * and Nyquist frequencies of the last axis are ignored. */
array irfftn(const array& a, const Shape& n, const std::vector<int>& axes,
             FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array irfftn(const array& a, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
             StreamOrDevice s = {});
array irfftn(const array& a, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});

/** One-dimensional transforms along `axis`; `n` absent keeps the input's size (irfft:
 * 2 * (m - 1)). */
array fft(const array& a, std::optional<int> n = std::nullopt, int axis = -1,
          FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array ifft(const array& a, std::optional<int> n = std::nullopt, int axis = -1,
           FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array rfft(const array& a, std::optional<int> n = std::nullopt, int axis = -1,
           FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array irfft(const array& a, std::optional<int> n = std::nullopt, int axis = -1,
            FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});

/** Sample frequencies [0, 1, ..., -n/2 ... -1] / (d n) (float32); rfftfreq the first
 * n / 2 + 1 of them, all non-negative. Throws for n < 1 or d == 0. */
array fftfreq(int n, double d = 1.0, StreamOrDevice s = {});
array rfftfreq(int n, double d = 1.0, StreamOrDevice s = {});

/** Rolls each of `axes` (default all) by size / 2 (fftshift) or (size + 1) / 2
 * (ifftshift), moving the zero frequency to the centre and back. */
array fftshift(const array& a, const std::optional<std::vector<int>>& axes = std::nullopt,
               StreamOrDevice s = {});
array ifftshift(const array& a, const std::optional<std::vector<int>>& axes = std::nullopt,
                StreamOrDevice s = {});

/**
 * Short-time Fourier transform of the last axis of `x`: frames of `n_fft` samples every
 * `hop_length` (default n_fft / 4), multiplied by `window` (length `win_length`, default
 * n_fft; rectangular by default; centred and zero-padded to n_fft), transformed. With
 * `center` the signal is first padded by n_fft / 2 on both sides (`pad_mode` "reflect",
 * "constant" or "edge"). Output (..., n_freq, n_frames), complex64; n_freq = n_fft / 2 + 1
 * when `onesided` (the default for real input), else n_fft.
 */
array stft(const array& x, int n_fft = 2048, std::optional<int> hop_length = std::nullopt,
           std::optional<int> win_length = std::nullopt,
           const std::optional<array>& window = std::nullopt, bool center = true,
           const std::string& pad_mode = "reflect", FFTNorm norm = FFTNorm::Backward,
           std::optional<bool> onesided = std::nullopt, StreamOrDevice s = {});
/** Inverse of stft by windowed overlap-add, divided by the squared-window envelope; real
 * (float32) output trimmed or zero-padded to `length` when given. */
array istft(const array& stft_matrix, std::optional<int> n_fft = std::nullopt,
            std::optional<int> hop_length = std::nullopt,
            std::optional<int> win_length = std::nullopt,
            const std::optional<array>& window = std::nullopt, bool center = true,
            FFTNorm norm = FFTNorm::Backward, std::optional<bool> onesided = std::nullopt,
            std::optional<int> length = std::nullopt, StreamOrDevice s = {});

}  // namespace kiln::fft
