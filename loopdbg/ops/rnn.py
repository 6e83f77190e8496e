"""Kernels for the recurrent cells (LSTMCell, GRUCell, RNNCell) and their sequence forms.

The formulas follow OpenVINO's reference implementation (``loop_semantics.md`` §6, "RNN cells"):
weights are laid out ``[gates*H, in]`` and used as ``X @ W.T``; the LSTM gate order is f, i, c, o
and the GRU order is z, r, h; ``clip > 0`` clips every gate pre-activation (never the argument of
the LSTM's ``h(C')``); only sigmoid, tanh and relu are accepted, as in the reference.

The cells run thousands of times inside loop bodies, so everything that depends only on attributes
is resolved in the factory, and the per-call path works in place on the one gate buffer it
allocates. Input arrays are never written to: they may be constants shared across iterations.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr, choice, flag, float_attr, int_attr
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

Activation = Callable[..., np.ndarray]


def _sigmoid(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    # 1/(1+exp(-x)) written through tanh: same value, no overflow warning for large negative x.
    out = np.multiply(x, 0.5, out=out)
    np.tanh(out, out=out)
    out *= 0.5
    out += 0.5
    return out


def _tanh(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return np.tanh(x, out=out)


def _relu(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return np.maximum(x, 0, out=out)


_ACTIVATIONS: dict[str, Activation] = {"sigmoid": _sigmoid, "tanh": _tanh, "relu": _relu}
_DIRECTIONS = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}


# ---- attribute parsing (factory time) -------------------------------------------------------

def _hidden_size(layer: Layer) -> int:
    hs = int_attr(layer, "hidden_size")
    if hs <= 0:
        raise ValueError(f"hidden_size must be positive, got {hs}")
    return hs


def _activations(layer: Layer, default: str, count: int) -> list[Activation]:
    """The first ``count`` activations (OpenVINO ignores any extra ones)."""
    text = attr(layer, "activations", default)
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if len(names) < count:
        raise ValueError(f"{layer.type} needs {count} activations, got {text!r}")
    for name in names[:count]:
        if name not in _ACTIVATIONS:
            raise ValueError(f"activation {name!r} is not supported "
                             f"(OpenVINO's reference runs only sigmoid, tanh and relu)")
    return [_ACTIVATIONS[n] for n in names[:count]]


def _clip(layer: Layer) -> float | None:
    clip = float_attr(layer, "clip", 0.0)
    return clip if clip > 0 else None


def _direction(layer: Layer) -> tuple[bool, ...]:
    """Per direction in W's order: whether it walks the sequence backwards."""
    return _DIRECTIONS[choice(layer, "direction", tuple(_DIRECTIONS), "forward")]


def _check_width(what: str, width: int, gates: int, hs: int) -> None:
    if width != gates * hs:
        raise ValueError(f"{what} has {width} rows, expected {gates}*hidden_size = {gates * hs}")


# ---- one time step (run time) ----------------------------------------------------------------

def _clip_(x: np.ndarray, clip: float) -> np.ndarray:
    # np.clip has a far larger fixed cost than minimum + maximum on the small arrays seen here.
    np.minimum(x, clip, out=x)
    return np.maximum(x, -clip, out=x)


def _tanh_form(f: Activation, g: Activation, hs: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Scale and offset that compute all four LSTM gates as ``s*tanh(s*x) + o`` when f and g are
    sigmoid or tanh (sigmoid(x) = 0.5*tanh(0.5*x) + 0.5): four ufunc calls over the whole gate
    buffer instead of a sequence of calls per gate. None for other activations."""
    forms = {_sigmoid: (0.5, 0.5), _tanh: (1.0, 0.0)}
    if f not in forms or g not in forms:
        return None
    scale, offset = np.repeat(np.array([forms[f], forms[f], forms[g], forms[f]], np.float32).T,
                              hs, axis=1)
    return scale, offset


def _lstm_step(X, H, C, W, R, B, P, hs: int, clip: float | None,
               f: Activation, g: Activation, h: Activation,
               fused: tuple[np.ndarray, np.ndarray] | None, input_forget: bool = False):
    """One LSTM step; ``P`` (peepholes f, i, o) and ``input_forget`` exist only in LSTMCell-1;
    ``fused`` is ``_tanh_form(f, g, hs)``."""
    gates = X @ W.T
    _check_width("W", gates.shape[-1], 4, hs)
    gates += H @ R.T
    if B is not None:
        gates += B
    ft = gates[..., :hs]
    it = gates[..., hs:2 * hs]
    ct = gates[..., 2 * hs:3 * hs]
    ot = gates[..., 3 * hs:]
    if P is None and not input_forget:
        if clip is not None:
            _clip_(gates, clip)
        if fused is not None:
            scale, offset = fused
            gates *= scale
            np.tanh(gates, out=gates)
            gates *= scale
            gates += offset
        else:
            fi = gates[..., :2 * hs]
            f(fi, out=fi)
            g(ct, out=ct)
            f(ot, out=ot)
    else:
        if P is not None:
            ft += P[..., :hs] * C
            it += P[..., hs:2 * hs] * C
        if clip is not None:
            _clip_(gates[..., :3 * hs], clip)
        f(ft, out=ft)
        if input_forget:
            np.subtract(1, ft, out=it)
        else:
            f(it, out=it)
        g(ct, out=ct)
    ct *= it
    C_new = ft * C
    C_new += ct
    if P is not None or input_forget:
        if P is not None:
            ot += P[..., 2 * hs:3 * hs] * C_new
        if clip is not None:
            _clip_(ot, clip)
        f(ot, out=ot)
    H_new = h(C_new)
    H_new *= ot
    return H_new, C_new


def _gru_step(X, H, W, R, B, hs: int, clip: float | None,
              f: Activation, g: Activation, linear_before_reset: bool):
    xw = X @ W.T
    _check_width("W", xw.shape[-1], 3, hs)
    if B is not None:
        _check_width("B", B.shape[-1], 4 if linear_before_reset else 3, hs)
    zr = xw[..., :2 * hs]
    zr += H @ R[:2 * hs].T
    if B is not None:
        zr += B[..., :2 * hs]
    if clip is not None:
        _clip_(zr, clip)
    f(zr, out=zr)
    z = zr[..., :hs]
    r = zr[..., hs:]
    ht = xw[..., 2 * hs:]
    Rh = R[2 * hs:]
    if linear_before_reset:
        hr = H @ Rh.T
        if B is not None:
            hr += B[..., 3 * hs:4 * hs]
        hr *= r
        ht += hr
    else:
        ht += (r * H) @ Rh.T
    if B is not None:
        ht += B[..., 2 * hs:3 * hs]
    if clip is not None:
        _clip_(ht, clip)
    g(ht, out=ht)
    # (1 - z)*h~ + z*H, written as h~ + z*(H - h~)
    H_new = H - ht
    H_new *= z
    H_new += ht
    return H_new


def _rnn_step(X, H, W, R, B, hs: int, clip: float | None, f: Activation):
    pre = X @ W.T
    _check_width("W", pre.shape[-1], 1, hs)
    pre += H @ R.T
    if B is not None:
        pre += B
    if clip is not None:
        _clip_(pre, clip)
    return f(pre, out=pre)


# ---- shape rules -------------------------------------------------------------------------------

def _cell_shape(layer: Layer, ins, consts) -> list[TensorInfo]:
    """Every output (H', and C' for LSTM) is [batch, hidden_size]."""
    batch = ins[0].shape[0] if ins[0].shape else -1
    return [TensorInfo(ins[0].type, (batch, _hidden_size(layer)))] * 2


def _sequence_shape(layer: Layer, ins, consts) -> list[TensorInfo]:
    """Y is [batch, directions, steps, hidden_size]; the final states [batch, directions,
    hidden_size]."""
    x = ins[0].shape
    batch, steps = (x[0], x[1]) if x and len(x) == 3 else (-1, -1)
    hs, n_dirs = _hidden_size(layer), len(_direction(layer))
    state = TensorInfo(ins[0].type, (batch, n_dirs, hs))
    return [TensorInfo(ins[0].type, (batch, n_dirs, steps, hs)), state, state]


# ---- cells -------------------------------------------------------------------------------------

@op("LSTMCell", versions=(4,), outputs=2, shape=_cell_shape)
def lstm_cell_v4(layer: Layer):
    hs, clip = _hidden_size(layer), _clip(layer)
    f, g, h = _activations(layer, "sigmoid, tanh, tanh", 3)
    fused = _tanh_form(f, g, hs)

    def run(X, H, C, W, R, B=None):
        return _lstm_step(X, H, C, W, R, B, None, hs, clip, f, g, h, fused)

    return run


@op("LSTMCell", outputs=2, shape=_cell_shape)
def lstm_cell_v1(layer: Layer):
    hs, clip = _hidden_size(layer), _clip(layer)
    f, g, h = _activations(layer, "sigmoid, tanh, tanh", 3)
    input_forget = flag(layer, "input_forget")
    fused = _tanh_form(f, g, hs)
    choice(layer, "weights_format", ("fico",), "fico")   # the only layout the reference runs

    def run(X, H, C, W, R, B=None, P=None):
        return _lstm_step(X, H, C, W, R, B, P, hs, clip, f, g, h, fused, input_forget)

    return run


@op("GRUCell", versions=(3,), shape=_cell_shape)
def gru_cell(layer: Layer):
    hs, clip = _hidden_size(layer), _clip(layer)
    f, g = _activations(layer, "sigmoid, tanh", 2)
    lbr = flag(layer, "linear_before_reset")

    def run(X, H, W, R, B=None):
        return _gru_step(X, H, W, R, B, hs, clip, f, g, lbr)

    return run


@op("RNNCell", shape=_cell_shape)
def rnn_cell(layer: Layer):
    hs, clip = _hidden_size(layer), _clip(layer)
    (f,) = _activations(layer, "tanh", 1)

    def run(X, H, W, R, B=None):
        return _rnn_step(X, H, W, R, B, hs, clip, f)

    return run


# ---- sequences ---------------------------------------------------------------------------------

def _run_sequence(step, X, states, lengths, W, R, B, directions, hs: int):
    """Run ``step`` over X[N, T, I] in each direction, as OpenVINO's reference does.

    ``states`` are the initial states [N, D, H]; the result is Y[N, D, T, H] followed by the final
    states. Past a batch row's sequence length its Y is zero and its state stops changing; a row
    whose length is 0 ends with zero states (the reference's behaviour).
    """
    if X.ndim != 3:
        raise ValueError(f"X must be [batch, seq_len, input_size], got shape {X.shape}")
    N, T = X.shape[0], X.shape[1]
    if W.shape[0] != len(directions):
        raise ValueError(f"W has {W.shape[0]} directions, the direction attribute implies "
                         f"{len(directions)}")
    lens = np.asarray(lengths).reshape(-1).astype(np.int64)
    if lens.shape[0] != N:
        raise ValueError(f"sequence_lengths has {lens.shape[0]} values for a batch of {N}")
    if lens.size and (lens.min() < 0 or lens.max() > T):
        raise ValueError(f"sequence_lengths {lens.tolist()} must lie between 0 and the {T} "
                         f"steps of X")
    full = bool(np.all(lens == T))
    rows = np.arange(N)[:, None]
    rev = None
    if not full:
        # reverse_sequence: reverse each row's first len steps, keep the rest (an involution)
        steps = np.arange(T)[None, :]
        rev = np.where(steps < lens[:, None], lens[:, None] - 1 - steps, steps)

    Y = np.zeros((N, len(directions), T, hs), np.result_type(X, W))
    finals = [np.empty(s.shape, Y.dtype) for s in states]
    for d, reverse in enumerate(directions):
        xs = (X[:, ::-1] if full else X[rows, rev]) if reverse else X
        Wd, Rd, Bd = W[d], R[d], (None if B is None else B[d])
        st = tuple(s[:, d] for s in states)
        for t in range(T):
            new = step(xs[:, t], *st, Wd, Rd, Bd)
            if not isinstance(new, tuple):
                new = (new,)
            if full:
                Y[:, d, t] = new[0]
                st = new
            else:
                live = (t < lens)[:, None]
                Y[:, d, t] = np.where(live, new[0], 0)
                st = tuple(np.where(live, n, s) for n, s in zip(new, st))
        if reverse:
            Y[:, d] = Y[:, d, ::-1] if full else Y[rows, d, rev]
        for out, s in zip(finals, st):
            out[:, d] = s
    if not full:
        for out in finals:
            out[lens == 0] = 0
    return (Y, *finals)


@op("LSTMSequence", versions=(5,), outputs=3, shape=_sequence_shape)
def lstm_sequence(layer: Layer):
    hs, clip, dirs = _hidden_size(layer), _clip(layer), _direction(layer)
    f, g, h = _activations(layer, "sigmoid, tanh, tanh", 3)
    fused = _tanh_form(f, g, hs)

    def step(x, H, C, W, R, B):
        return _lstm_step(x, H, C, W, R, B, None, hs, clip, f, g, h, fused)

    def run(X, H0, C0, lengths, W, R, B=None):
        return _run_sequence(step, X, (H0, C0), lengths, W, R, B, dirs, hs)

    return run


@op("GRUSequence", versions=(5,), outputs=2, shape=_sequence_shape)
def gru_sequence(layer: Layer):
    hs, clip, dirs = _hidden_size(layer), _clip(layer), _direction(layer)
    f, g = _activations(layer, "sigmoid, tanh", 2)
    lbr = flag(layer, "linear_before_reset")

    def step(x, H, W, R, B):
        return _gru_step(x, H, W, R, B, hs, clip, f, g, lbr)

    def run(X, H0, lengths, W, R, B=None):
        return _run_sequence(step, X, (H0,), lengths, W, R, B, dirs, hs)

    return run


@op("RNNSequence", versions=(5,), outputs=2, shape=_sequence_shape)
def rnn_sequence(layer: Layer):
    hs, clip, dirs = _hidden_size(layer), _clip(layer), _direction(layer)
    (f,) = _activations(layer, "tanh", 1)

    def step(x, H, W, R, B):
        return _rnn_step(x, H, W, R, B, hs, clip, f)

    def run(X, H0, lengths, W, R, B=None):
        return _run_sequence(step, X, (H0,), lengths, W, R, B, dirs, hs)

    return run
