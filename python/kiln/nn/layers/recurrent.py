"""Recurrent layers: ``RNN``, ``GRU`` and ``LSTM`` over inputs ``(N, L, D)`` or ``(L, D)``,
returning every step's hidden state."""

import math
from typing import Callable, Optional

import kiln.core as mx
from kiln.nn.layers.activations import tanh
from kiln.nn.layers.base import Module


def _check_sizes(layer, input_size, hidden_size):
    if input_size <= 0:
        raise ValueError(f"[{layer}] input_size must be positive but got {input_size}")
    if hidden_size <= 0:
        raise ValueError(f"[{layer}] hidden_size must be positive but got {hidden_size}")


def _uniform(scale, shape):
    return mx.random.uniform(low=-scale, high=scale, shape=shape)


def _project(x, weight, bias):
    """``x @ weight.T + bias`` for all steps at once."""
    return x @ weight.T if bias is None else mx.addmm(bias, x, weight.T)


class RNN(Module):
    r"""Elman recurrence :math:`h_t = f(W_{xh} x_t + W_{hh} h_{t-1} + b)` with
    `nonlinearity` :math:`f` (tanh by default). Weights ``Wxh`` ``(hidden_size,
    input_size)``, ``Whh`` ``(hidden_size, hidden_size)`` and ``bias`` are uniform in
    :math:`\pm 1/\sqrt{\text{hidden\_size}}`.

    ``__call__(x, hidden=None)`` returns the hidden states of all steps, ``(..., L,
    hidden_size)``; `hidden` is the initial state (zeros when None).

    Raises:
        ValueError: A size is not positive or `nonlinearity` is not callable.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: Optional[Callable] = None,
    ):
        super().__init__()
        _check_sizes("RNN", input_size, hidden_size)
        self.nonlinearity = nonlinearity or tanh
        if not callable(self.nonlinearity):
            raise ValueError(f"[RNN] nonlinearity must be callable but got {nonlinearity}.")
        scale = 1.0 / math.sqrt(hidden_size)
        self.hidden_size = hidden_size
        self.Wxh = _uniform(scale, (hidden_size, input_size))
        self.Whh = _uniform(scale, (hidden_size, hidden_size))
        self.bias = _uniform(scale, (hidden_size,)) if bias else None

    def _extra_repr(self):
        return (
            f"input_dims={self.Wxh.shape[1]}, hidden_size={self.hidden_size}, "
            f"nonlinearity={self.nonlinearity}, bias={self.bias is not None}"
        )

    def __call__(self, x, hidden=None):
        x = _project(x, self.Wxh, self.bias)
        states = []
        for t in range(x.shape[-2]):
            pre = x[..., t, :]
            if hidden is not None:
                pre = mx.addmm(pre, hidden, self.Whh.T)
            hidden = self.nonlinearity(pre)
            states.append(hidden)
        return mx.stack(states, axis=-2)


class GRU(Module):
    r"""Gated recurrent unit (Cho et al., 2014):

    .. math::
        r, z = \sigma(W_{x\{r,z\}} x_t + b_{\{r,z\}} + W_{h\{r,z\}} h_{t-1}), \quad
        n = \tanh(W_{xn} x_t + b_n + r \odot (W_{hn} h_{t-1} + b_{hn})), \quad
        h_t = (1 - z) \odot n + z \odot h_{t-1}.

    ``Wx`` ``(3 hidden, input)``, ``Wh`` ``(3 hidden, hidden)``, ``b`` ``(3 hidden,)`` and
    ``bhn`` ``(hidden,)`` are uniform in :math:`\pm 1/\sqrt{\text{hidden\_size}}`.
    ``__call__(x, hidden=None)`` returns all hidden states.

    Raises:
        ValueError: A size is not positive.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        _check_sizes("GRU", input_size, hidden_size)
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, (3 * hidden_size, input_size))
        self.Wh = _uniform(scale, (3 * hidden_size, hidden_size))
        self.b = _uniform(scale, (3 * hidden_size,)) if bias else None
        self.bhn = _uniform(scale, (hidden_size,)) if bias else None

    def _extra_repr(self):
        return (
            f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, "
            f"bias={self.b is not None}"
        )

    def __call__(self, x, hidden=None):
        H = self.hidden_size
        x = _project(x, self.Wx, self.b)
        x_rz, x_n = x[..., :-H], x[..., -H:]
        states = []
        for t in range(x.shape[-2]):
            rz = x_rz[..., t, :]
            n = x_n[..., t, :]
            if hidden is not None:
                h_proj = hidden @ self.Wh.T
                h_n = h_proj[..., -H:]
                if self.bhn is not None:
                    h_n = h_n + self.bhn
                rz = rz + h_proj[..., :-H]
            r, z = mx.split(mx.sigmoid(rz), 2, axis=-1)
            if hidden is not None:
                n = n + r * h_n
            elif self.bhn is not None:
                n = n + r * self.bhn
            n = mx.tanh(n)
            hidden = (1 - z) * n if hidden is None else (1 - z) * n + z * hidden
            states.append(hidden)
        return mx.stack(states, axis=-2)


class LSTM(Module):
    r"""Long short-term memory (Hochreiter and Schmidhuber, 1997) with gates in the order
    input, forget, cell, output:

    .. math::
        i, f, g, o = \sigma, \sigma, \tanh, \sigma(W_x x_t + W_h h_{t-1} + b), \quad
        c_t = f \odot c_{t-1} + i \odot g, \quad h_t = o \odot \tanh(c_t).

    ``Wx`` ``(4 hidden, input)``, ``Wh`` ``(4 hidden, hidden)`` and ``bias`` are uniform in
    :math:`\pm 1/\sqrt{\text{hidden\_size}}`. ``__call__(x, hidden=None, cell=None)``
    returns ``(hidden states, cell states)`` of all steps.

    Raises:
        ValueError: A size is not positive.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        _check_sizes("LSTM", input_size, hidden_size)
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, (4 * hidden_size, input_size))
        self.Wh = _uniform(scale, (4 * hidden_size, hidden_size))
        self.bias = _uniform(scale, (4 * hidden_size,)) if bias else None

    def _extra_repr(self):
        return (
            f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, "
            f"bias={self.bias is not None}"
        )

    def __call__(self, x, hidden=None, cell=None):
        x = _project(x, self.Wx, self.bias)
        hiddens, cells = [], []
        for t in range(x.shape[-2]):
            gates = x[..., t, :]
            if hidden is not None:
                gates = mx.addmm(gates, hidden, self.Wh.T)
            i, f, g, o = mx.split(gates, 4, axis=-1)
            i, f, g, o = mx.sigmoid(i), mx.sigmoid(f), mx.tanh(g), mx.sigmoid(o)
            cell = i * g if cell is None else f * cell + i * g
            hidden = o * mx.tanh(cell)
            hiddens.append(hidden)
            cells.append(cell)
        return mx.stack(hiddens, axis=-2), mx.stack(cells, axis=-2)
