"""
Linear algebra: norms, factorizations (Cholesky, LU, QR, SVD, eigen-decompositions),
inverses and solvers, batched over leading axes. Factorizations use LAPACK (OpenBLAS) on
the CPU and cuSOLVER on the GPU; unlike MLX, every function runs on either device.
"""
from __future__ import annotations
import collections.abc
import kiln.core
import typing
__all__: list[str] = ['cholesky', 'cholesky_inv', 'cross', 'det', 'eig', 'eigh', 'eigvals', 'eigvalsh', 'inv', 'lu', 'lu_factor', 'matrix_norm', 'norm', 'pinv', 'qr', 'slogdet', 'solve', 'solve_triangular', 'svd', 'tri_inv']
def cholesky(a: kiln.core.array, /, upper: bool = False, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Cholesky factor of symmetric positive-definite matrices.

    Args:
        a (array): ``(..., n, n)``, float32 or float64; only the lower (``upper``: upper)
            triangle is read.
        upper (bool): Return upper ``U`` with ``a = U.T @ U`` instead of lower ``L`` with
            ``a = L @ L.T``.

    Raises:
        ValueError: Not square, fewer than 2 dimensions, or another dtype.
        RuntimeError: A matrix is not positive definite (at evaluation).
    """
def cholesky_inv(a: kiln.core.array, /, upper: bool = False, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Inverse of ``a = L @ L.T`` (``U.T @ U`` with ``upper``) from its Cholesky factor ``a``.
    """
def cross(a: kiln.core.array, b: kiln.core.array, /, axis: typing.SupportsInt | typing.SupportsIndex = -1, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Cross product of 2- or 3-vectors along ``axis``; shapes broadcast.

    Raises:
        ValueError: ``axis`` is out of range or its size is not 2 or 3.
    """
def det(a: kiln.core.array, /, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Determinant of square matrices (integers are computed in float32).
    """
def eig(a: kiln.core.array, /, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> tuple[kiln.core.array, kiln.core.array]:
    """
    Eigenvalues and unit-norm right eigenvectors (columns) of general square matrices, both
    complex64. Not differentiable.
    """
def eigh(a: kiln.core.array, /, UPLO: str = 'L', *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> tuple[kiln.core.array, kiln.core.array]:
    """
    Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric (Hermitian)
    matrices, from the ``UPLO`` (``'L'`` or ``'U'``) triangle.

    Returns:
        tuple(array, array): ``(w, V)`` with ``a @ V == V * w[..., None, :]``.
    """
def eigvals(a: kiln.core.array, /, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Eigenvalues of general square matrices, complex64.
    """
def eigvalsh(a: kiln.core.array, /, UPLO: str = 'L', *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Eigenvalues (ascending) of symmetric (Hermitian) matrices, from the ``UPLO`` triangle.
    """
def inv(a: kiln.core.array, /, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Inverse of square matrices ``(..., n, n)`` (LU with partial pivoting).

    Raises:
        ValueError: Not square, fewer than 2 dimensions, or not float32/float64.
        RuntimeError: A matrix is singular (at evaluation).
    """
def lu(a: kiln.core.array, /, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> tuple:
    """
    LU factorization with partial pivoting.

    Returns:
        tuple(array, array, array): ``(P, L, U)``: row indices ``P`` (uint32) with
        ``L[P] @ U == a``, unit lower ``L`` ``(..., m, k)``, upper ``U`` ``(..., k, n)``.
    """
def lu_factor(a: kiln.core.array, /, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> tuple[kiln.core.array, kiln.core.array]:
    """
    Packed LU factorization (LAPACK's ``getrf``).

    Returns:
        tuple(array, array): ``LU`` (``L`` below the diagonal, ``U`` on and above) and the
        0-based pivots (uint32): row ``i`` was swapped with row ``pivots[i]``.
    """
def matrix_norm(a: kiln.core.array, /, ord: None | typing.SupportsInt | typing.SupportsIndex | typing.SupportsFloat | typing.SupportsIndex | str = 'fro', axis: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [-2, -1], keepdims: bool = False, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Matrix norm over two axes (default the last two): ``'fro'``, ``'nuc'``, ``1``, ``-1``,
    ``2``, ``-2``, ``inf``, ``-inf``.
    """
def norm(a: kiln.core.array, /, ord: None | typing.SupportsInt | typing.SupportsIndex | typing.SupportsFloat | typing.SupportsIndex | str = None, axis: None | typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = None, keepdims: bool = False, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Matrix or vector norm, as NumPy's ``linalg.norm``.

    Without ``ord``: the 2-norm of the flattened array (``axis`` None), of vectors along one
    axis, or the Frobenius norm over two axes. Vector ``ord``: ``0`` (non-zeros), ``1``,
    ``2``, ``inf``, ``-inf`` or any other ``p``. Matrix ``ord``: ``'fro'``, ``'nuc'``, ``1``,
    ``-1``, ``2``, ``-2``, ``inf``, ``-inf``. With ``ord`` and no ``axis``, ``a`` must be
    1-d or 2-d.

    Args:
        a (array): Input (integers are computed in float32).
        ord (int, float or str, optional): The order.
        axis (int or list(int), optional): One axis (vector norm) or two (matrix norm).
        keepdims (bool): Keep the reduced axes with size 1.

    Returns:
        array: The norm, real (float32 for integer or complex64 input).

    Raises:
        ValueError: An ``ord`` invalid for the number of axes, or more than two axes.
    """
def pinv(a: kiln.core.array, /, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Moore-Penrose pseudo-inverse ``(..., n, m)`` of ``a`` ``(..., m, n)`` through the SVD.
    """
def qr(a: kiln.core.array, /, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> tuple[kiln.core.array, kiln.core.array]:
    """
    Reduced QR factorization: ``Q`` ``(..., m, k)`` with orthonormal columns and upper
    triangular ``R`` ``(..., k, n)``, ``k = min(m, n)``.

    Returns:
        tuple(array, array): ``(Q, R)``.
    """
def slogdet(a: kiln.core.array, /, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> tuple[kiln.core.array, kiln.core.array]:
    """
    Sign and natural log of the absolute determinant; a singular matrix gives ``(0, -inf)``.

    Returns:
        tuple(array, array): ``(sign, logabsdet)``.
    """
def solve(a: kiln.core.array, b: kiln.core.array, /, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Solution ``x`` of ``a @ x = b`` for square ``a``; ``b`` is ``(..., n)`` when 1-d, else
    ``(..., n, k)``; batch axes broadcast.

    Raises:
        ValueError: Shapes that do not match or inputs not promoting to float32/float64.
        RuntimeError: A singular matrix (at evaluation).
    """
def solve_triangular(a: kiln.core.array, b: kiln.core.array, /, *, upper: bool = False, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    As :func:`solve`, with ``a`` the triangular matrix in its lower (``upper``: upper)
    triangle.
    """
def svd(a: kiln.core.array, /, compute_uv: bool = True, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> typing.Any:
    """
    Singular value decomposition ``a = U @ diag(S) @ Vt``.

    Args:
        a (array): ``(..., m, n)``: float32, float64 or complex64.
        compute_uv (bool): Also return the singular vectors.

    Returns:
        tuple(array, array, array) or array: ``(U, S, Vt)`` with full ``U`` ``(..., m, m)``
        and ``Vt`` ``(..., n, n)``, or ``S`` alone; ``S`` is descending and real.
    """
def tri_inv(a: kiln.core.array, /, upper: bool = False, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Inverse of the triangular matrices in the lower (``upper``: upper) triangle of ``a``;
    the other triangle is ignored, and zero in the result.
    """
