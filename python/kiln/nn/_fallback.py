"""Stand-ins for core functions that ``kiln.nn`` calls but ``kiln.core`` does not have yet.

Every name here resolves to the real ``kiln.core`` function when it exists and otherwise to a
composition of existing core ops with the same signature and results (computed in float32
for half types, as the fused versions do). The layers call these exactly as MLX's layers call
``mx.fast.*``, ``mx.linalg.*``, ``mx.unflatten`` and ``mx.compile``, so this module can be
deleted once the real ops land: replace ``fast``/``linalg``/``compile``/``unflatten``/``diag``
imported from here by their ``mx.`` names.
"""

import math

import kiln.core as mx

__all__ = ["compile", "diag", "fast", "linalg", "unflatten"]


class _Namespace:
    """Attribute lookup that prefers `real`'s attribute and falls back to ours."""

    def __init__(self, real, **fallbacks):
        self._real = real
        self._fallbacks = fallbacks

    def __getattr__(self, name):
        if self._real is not None and hasattr(self._real, name):
            return getattr(self._real, name)
        try:
            return self._fallbacks[name]
        except KeyError:
            raise AttributeError(f"kiln.core has no {name} and kiln.nn has no fallback for it")


def compile(fun=None, inputs=None, outputs=None, shapeless=False):
    """``mx.compile`` when it exists, else the identity (usable as ``partial(compile,
    shapeless=True)`` decorator, as MLX's activations use it)."""
    if fun is None:
        return lambda f: compile(f, inputs, outputs, shapeless)
    if hasattr(mx, "compile"):
        return mx.compile(fun, inputs=inputs, outputs=outputs, shapeless=shapeless)
    return fun


def _is_half(dtype):
    return dtype in (mx.float16, mx.bfloat16)


def _accumulation_type(dtype):
    return mx.float32 if _is_half(dtype) or not mx.issubdtype(dtype, mx.floating) else dtype


def _rms_norm(x, weight, eps, *, stream=None):
    """``x / sqrt(mean(x^2, -1) + eps) * weight`` over the last axis."""
    out_type = x.dtype if weight is None else mx.promote_types(x.dtype, weight.dtype)
    xf = x.astype(_accumulation_type(x.dtype))
    y = xf * mx.rsqrt(mx.mean(mx.square(xf), axis=-1, keepdims=True) + eps)
    y = y.astype(out_type)
    return y if weight is None else y * weight


def _layer_norm(x, weight, bias, eps, *, stream=None):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis; the result has
    the type of ``x`` promoted with ``weight`` (not with ``bias``), as MLX's."""
    out_type = x.dtype if weight is None else mx.promote_types(x.dtype, weight.dtype)
    xf = x.astype(_accumulation_type(x.dtype))
    mean = mx.mean(xf, axis=-1, keepdims=True)
    centered = xf - mean
    var = mx.mean(mx.square(centered), axis=-1, keepdims=True)
    y = (centered * mx.rsqrt(var + eps)).astype(out_type)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = (y + bias).astype(out_type)
    return y


def _rope(a, dims, *, traditional, base, scale, offset, freqs=None, stream=None):
    """Rotary position encoding of the first `dims` features of ``a`` (shape ``(B, ..., T,
    D)``); position ``t`` of the second-last axis is ``(offset + t) * scale``."""
    if a.ndim < 3:
        raise ValueError(f"[rope] Input must have at least 3 dimensions but got shape {a.shape}")
    if dims % 2 != 0 or dims > a.shape[-1]:
        raise ValueError(f"[rope] dims must be even and at most {a.shape[-1]} but got {dims}")
    if (base is None) == (freqs is None):
        raise ValueError("[rope] Exactly one of base and freqs must be None")
    half = dims // 2
    T = a.shape[-2]
    if freqs is None:
        inv_freq = mx.exp(mx.arange(0, half, dtype=mx.float32) * (-2.0 * math.log(base) / dims))
    else:
        inv_freq = mx.reciprocal(freqs.astype(mx.float32))
    positions = mx.arange(T, dtype=mx.float32)
    if isinstance(offset, mx.array) and offset.ndim == 1:
        # One offset per batch element: angles of shape (B, 1, ..., T, half).
        positions = offset.astype(mx.float32)[:, None] + positions[None]
        positions = positions.reshape((a.shape[0],) + (1,) * (a.ndim - 3) + (T,))
    else:
        off = offset.astype(mx.float32) if isinstance(offset, mx.array) else float(offset)
        positions = positions + off
    theta = (positions * scale)[..., None] * inv_freq
    cos, sin = mx.cos(theta), mx.sin(theta)

    x = a.astype(_accumulation_type(a.dtype))
    rotated_part = x[..., :dims]
    if traditional:
        pairs = rotated_part.reshape(rotated_part.shape[:-1] + (half, 2))
        x1, x2 = pairs[..., 0], pairs[..., 1]
        r1 = x1 * cos - x2 * sin
        r2 = x1 * sin + x2 * cos
        rotated = mx.stack([r1, r2], axis=-1).reshape(rotated_part.shape)
    else:
        x1, x2 = rotated_part[..., :half], rotated_part[..., half:]
        rotated = mx.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    if dims < a.shape[-1]:
        rotated = mx.concatenate([rotated, x[..., dims:]], axis=-1)
    return rotated.astype(a.dtype)


def _scaled_dot_product_attention(
    q, k, v, *, scale, mask=None, sinks=None, force_fused=False, stream=None
):
    """``softmax(scale * q @ k^T + mask) @ v`` with grouped-query heads (``q`` has a multiple
    of ``k``'s heads); the softmax runs in float32 (float64 for float64 inputs)."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(
            f"[scaled_dot_product_attention] q, k and v must be 4-d but got shapes "
            f"{q.shape}, {k.shape}, {v.shape}"
        )
    B, n_q, T_q, D = q.shape
    n_kv, T_kv = k.shape[1], k.shape[2]
    if n_q % n_kv != 0:
        raise ValueError(
            f"[scaled_dot_product_attention] The query heads ({n_q}) must be a multiple of "
            f"the key/value heads ({n_kv})"
        )
    out_type = mx.promote_types(mx.promote_types(q.dtype, k.dtype), v.dtype)
    acc_type = _accumulation_type(out_type)
    lowest = mx.finfo(acc_type).min
    repeats = n_q // n_kv
    # Grouped heads: (B, n_kv, repeats, T, D) so each kv head serves its query group.
    qg = (q * scale).reshape(B, n_kv, repeats, T_q, D)
    kg, vg = mx.expand_dims(k, 2), mx.expand_dims(v, 2)
    scores = (qg @ kg.swapaxes(-1, -2)).astype(acc_type)

    def grouped(m):
        m = m.reshape((1,) * (4 - m.ndim) + m.shape)
        if m.shape[1] == 1:
            return mx.expand_dims(m, 2)
        return m.reshape(m.shape[0], n_kv, repeats, m.shape[2], m.shape[3])

    if isinstance(mask, str):
        if mask != "causal":
            raise ValueError(f"[scaled_dot_product_attention] Unknown mask '{mask}'")
        # Lower-right aligned: the last query sees every key.
        visible = mx.arange(T_kv - T_q, T_kv)[:, None] >= mx.arange(T_kv)[None]
        scores = mx.where(visible, scores, lowest)
    elif mask is not None:
        if mask.dtype == mx.bool_:
            scores = mx.where(grouped(mask), scores, lowest)
        else:
            scores = scores + grouped(mask).astype(acc_type)
    if sinks is not None:
        sink = mx.broadcast_to(
            sinks.astype(acc_type).reshape(1, n_kv, repeats, 1, 1), (B, n_kv, repeats, T_q, 1)
        )
        weights = mx.softmax(mx.concatenate([sink, scores], axis=-1), axis=-1)[..., 1:]
    else:
        weights = mx.softmax(scores, axis=-1)
    out = weights.astype(out_type) @ vg
    return out.reshape(B, n_q, T_q, v.shape[-1])


def _norm(x, ord=None, axis=None, keepdims=False, *, stream=None):
    """The 2-norm of vectors along `axis` or the Frobenius norm (``ord`` None only)."""
    if ord is not None:
        raise ValueError(f"[linalg.norm] The fallback handles ord=None only, got {ord}")
    return mx.sqrt(mx.sum(mx.square(x), axis=axis, keepdims=keepdims))


def _qr(a, *, stream=None):
    """``q, r`` of a square or tall full-rank matrix by classical Gram-Schmidt with one
    reorthogonalization pass (CGS2, as accurate as Householder for well-conditioned input);
    ``r``'s diagonal is positive, so this is the sign-normalized QR."""
    if a.ndim != 2 or a.shape[0] < a.shape[1]:
        raise ValueError(f"[linalg.qr] The fallback handles square or tall matrices, got {a.shape}")
    m, n = a.shape
    a = a.astype(_accumulation_type(a.dtype))
    # Columns not yet computed are zero, so q^T v only sees the finished ones.
    q = mx.zeros((m, n), dtype=a.dtype)
    for j in range(n):
        v = a[:, j : j + 1]
        for _ in range(2):
            v = v - q @ (q.T @ v)
        q[:, j : j + 1] = v * mx.rsqrt(mx.sum(mx.square(v)))
        mx.eval(q)  # one column's graph at a time
    r = mx.triu(q.T @ a)
    return q, r


def _unflatten(a, axis, shape, *, stream=None):
    """``a`` with `axis` split into `shape` (which may hold one -1)."""
    axis = axis % a.ndim
    return a.reshape(a.shape[:axis] + tuple(shape) + a.shape[axis + 1 :])


def _diag(a, k=0, *, stream=None):
    """The `k`-th diagonal of a matrix (2-d input only)."""
    if a.ndim != 2:
        raise ValueError(f"[diag] The fallback handles 2-d arrays only, got {a.shape}")
    rows, cols = a.shape
    start_row, start_col = max(0, -k), max(0, k)
    length = max(0, min(rows - start_row, cols - start_col))
    idx = (mx.arange(length) + start_row) * cols + mx.arange(length) + start_col
    return a.reshape(-1)[idx]  # not mx.take, which reads a one-element index as a scalar


fast = _Namespace(
    getattr(mx, "fast", None),
    rms_norm=_rms_norm,
    layer_norm=_layer_norm,
    rope=_rope,
    scaled_dot_product_attention=_scaled_dot_product_attention,
)
linalg = _Namespace(getattr(mx, "linalg", None), norm=_norm, qr=_qr)
unflatten = getattr(mx, "unflatten", None) or _unflatten
diag = getattr(mx, "diag", None) or _diag
