"""
Discrete Fourier transforms (NumPy's ``numpy.fft`` names and MLX's arguments), complex64,
of any length, on the CPU (KISS FFT) and the GPU (cuFFT), differentiable.
"""
from __future__ import annotations
import collections.abc
import kiln.core
import typing
__all__: list[str] = ['fft', 'fft2', 'fftfreq', 'fftn', 'fftshift', 'ifft', 'ifft2', 'ifftn', 'ifftshift', 'irfft', 'irfft2', 'irfftn', 'istft', 'rfft', 'rfft2', 'rfftfreq', 'rfftn', 'stft']
def fft(a: kiln.core.array, n: typing.SupportsInt | typing.SupportsIndex | None = None, axis: typing.SupportsInt | typing.SupportsIndex = -1, norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    One-dimensional discrete Fourier transform (fft).

    Args:
            a (array): The input.
            n (int, optional): Size of the transformed axis (default: the input's).
            axis (int): The axis to transform (default ``-1``).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: The transform, complex64.
    """
def fft2(a: kiln.core.array, s: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = [-2, -1], norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    The fft2 transform.

    Args:
            a (array): The input.
            s (list(int), optional): Sizes of the transformed axes; the input is cropped or zero-padded to them.
            axes (list(int), optional): The axes to transform (default ``[-2, -1]``; None: all axes).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: complex64.
    """
def fftfreq(n: typing.SupportsInt | typing.SupportsIndex, d: typing.SupportsFloat | typing.SupportsIndex = 1.0, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Sample frequencies of an ``n``-point transform with sample spacing ``d`` (float32).
    """
def fftn(a: kiln.core.array, s: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    The fftn transform.

    Args:
            a (array): The input.
            s (list(int), optional): Sizes of the transformed axes; the input is cropped or zero-padded to them.
            axes (list(int), optional): The axes to transform (default all axes; required with ``s``).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: complex64.
    """
def fftshift(a: kiln.core.array, axes: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Moves the zero frequency to the centre: rolls each of ``axes`` (default all) by half its size.
    """
def ifft(a: kiln.core.array, n: typing.SupportsInt | typing.SupportsIndex | None = None, axis: typing.SupportsInt | typing.SupportsIndex = -1, norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    One-dimensional inverse discrete Fourier transform (ifft).

    Args:
            a (array): The input.
            n (int, optional): Size of the transformed axis (default: the input's).
            axis (int): The axis to transform (default ``-1``).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: The inverse transform, complex64.
    """
def ifft2(a: kiln.core.array, s: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = [-2, -1], norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    The ifft2 transform.

    Args:
            a (array): The input.
            s (list(int), optional): Sizes of the transformed axes; the input is cropped or zero-padded to them.
            axes (list(int), optional): The axes to transform (default ``[-2, -1]``; None: all axes).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: complex64.
    """
def ifftn(a: kiln.core.array, s: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    The ifftn transform.

    Args:
            a (array): The input.
            s (list(int), optional): Sizes of the transformed axes; the input is cropped or zero-padded to them.
            axes (list(int), optional): The axes to transform (default all axes; required with ``s``).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: complex64.
    """
def ifftshift(a: kiln.core.array, axes: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    The inverse of :func:`fftshift`.
    """
def irfft(a: kiln.core.array, n: typing.SupportsInt | typing.SupportsIndex | None = None, axis: typing.SupportsInt | typing.SupportsIndex = -1, norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    One-dimensional inverse discrete Fourier transform (irfft).

    Args:
            a (array): The input.
            n (int, optional): Size of the real output (default ``2 * (m - 1)``).
            axis (int): The axis to transform (default ``-1``).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: The real signal (float32) of size ``n`` along the axis.
    """
def irfft2(a: kiln.core.array, s: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = [-2, -1], norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    The irfft2 transform.

    Args:
            a (array): The input.
            s (list(int), optional): Sizes of the transformed axes; the input is cropped or zero-padded to them.
            axes (list(int), optional): The axes to transform (default ``[-2, -1]``; None: all axes).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: float32.
    """
def irfftn(a: kiln.core.array, s: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    The irfftn transform.

    Args:
            a (array): The input.
            s (list(int), optional): Sizes of the transformed axes; the input is cropped or zero-padded to them.
            axes (list(int), optional): The axes to transform (default all axes; required with ``s``).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: float32.
    """
def istft(stft_matrix: kiln.core.array, n_fft: typing.SupportsInt | typing.SupportsIndex | None = None, hop_length: typing.SupportsInt | typing.SupportsIndex | None = None, win_length: typing.SupportsInt | typing.SupportsIndex | None = None, window: kiln.core.array | None = None, center: bool = True, norm: str = 'backward', onesided: bool | None = None, length: typing.SupportsInt | typing.SupportsIndex | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Inverse of :func:`stft`: windowed overlap-add divided by the squared-window envelope.

    Args:
        stft_matrix (array): ``(..., n_freq, n_frames)``.
        n_fft (int, optional): Transform size (default from ``n_freq`` and ``onesided``).
        hop_length, win_length, window, center, norm: As for :func:`stft`.
        onesided (bool, optional): Whether only non-negative frequencies are given (default True).
        length (int, optional): Trim or zero-pad the output to this length.

    Returns:
        array: The signal, float32.
    """
def rfft(a: kiln.core.array, n: typing.SupportsInt | typing.SupportsIndex | None = None, axis: typing.SupportsInt | typing.SupportsIndex = -1, norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    One-dimensional discrete Fourier transform (rfft).

    Args:
            a (array): The input.
            n (int, optional): Size of the real input along the axis (default: the input's).
            axis (int): The axis to transform (default ``-1``).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: ``n // 2 + 1`` frequencies along the axis, complex64.
    """
def rfft2(a: kiln.core.array, s: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = [-2, -1], norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    The rfft2 transform.

    Args:
            a (array): The input.
            s (list(int), optional): Sizes of the transformed axes; the input is cropped or zero-padded to them.
            axes (list(int), optional): The axes to transform (default ``[-2, -1]``; None: all axes).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: complex64, the last axis halved plus one.
    """
def rfftfreq(n: typing.SupportsInt | typing.SupportsIndex, d: typing.SupportsFloat | typing.SupportsIndex = 1.0, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Non-negative sample frequencies of an ``n``-point real transform (float32).
    """
def rfftn(a: kiln.core.array, s: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, norm: str = 'backward', stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    The rfftn transform.

    Args:
            a (array): The input.
            s (list(int), optional): Sizes of the transformed axes; the input is cropped or zero-padded to them.
            axes (list(int), optional): The axes to transform (default all axes; required with ``s``).
            norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``
                (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).

    Returns:
            array: complex64, the last axis halved plus one.
    """
def stft(x: kiln.core.array, n_fft: typing.SupportsInt | typing.SupportsIndex = 2048, hop_length: typing.SupportsInt | typing.SupportsIndex | None = None, win_length: typing.SupportsInt | typing.SupportsIndex | None = None, window: kiln.core.array | None = None, center: bool = True, pad_mode: str = 'reflect', norm: str = 'backward', onesided: bool | None = None, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Short-time Fourier transform of the last axis of ``x``.

    Args:
        x (array): The signal.
        n_fft (int): Transform size (default ``2048``).
        hop_length (int, optional): Samples between frames (default ``n_fft // 4``).
        win_length (int, optional): Window size (default ``n_fft``).
        window (array, optional): 1-d window of ``win_length``, centred and zero-padded to
            ``n_fft`` (default rectangular).
        center (bool): Pad ``n_fft // 2`` on both ends so frames are centred.
        pad_mode (str): ``'reflect'``, ``'constant'`` or ``'edge'``.
        norm (str): As for :func:`fft`.
        onesided (bool, optional): Only non-negative frequencies (default: for real input).

    Returns:
        array: ``(..., n_freq, n_frames)``, complex64.
    """
