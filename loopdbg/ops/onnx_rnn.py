"""ONNX's recurrent layers, LSTM, GRU and RNN, as the specification and onnxruntime run them.

Written by hand, not taken from onnx.reference, which ignores ``sequence_lens``, ``clip``,
``activations`` and ``input_forget``. These are the layers ``torch.onnx.export`` writes for
``nn.LSTM``, ``nn.GRU`` and ``nn.RNN``, and tf2onnx for Keras' recurrent layers.

* Weights: ``W [dirs, G*H, input]``, ``R [dirs, G*H, H]``, ``B [dirs, 2*G*H]`` (W's biases, then
  R's), used as ``X @ W.T``. Gate order: LSTM ``i, o, f, c``; GRU ``z, r, h``. LSTM peepholes
  ``P [dirs, 3*H]`` in the order ``i, o, f``.
* ``clip`` bounds every gate's pre-activation to [-clip, clip] (not the argument of the LSTM's
  ``h(C)``), as onnxruntime does; ``input_forget`` couples the LSTM's forget gate to ``1 - i``.
* ``activations`` are named per direction (LSTM f, g, h; GRU f, g; RNN f), case-insensitively;
  ``activation_alpha``/``activation_beta`` are consumed in that order by the functions that take
  them, others using their defaults.
* ``sequence_lens``: batch entry b runs its first ``lens[b]`` steps (the reverse direction walks
  them backwards); its later outputs in Y are 0 and Y_h/Y_c hold its last step (0 for a length
  of 0, which ONNX leaves open: onnxruntime's choice).
* ``layout=1`` (opset 14): X, Y and the states are batch-first.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, declared_outputs
from loopdbg.ops.registry import op

# name: (function of x, alpha, beta; default alpha; default beta); None where unused.
_FUNCS: dict[str, tuple[Callable, float | None, float | None]] = {
    "sigmoid": (lambda x, al, be: 1 / (1 + np.exp(-x)), None, None),
    "tanh": (lambda x, al, be: np.tanh(x), None, None),
    "relu": (lambda x, al, be: np.maximum(x, 0), None, None),
    "affine": (lambda x, al, be: al * x + be, 1.0, 0.0),
    "leakyrelu": (lambda x, al, be: np.where(x >= 0, x, al * x), 0.01, None),
    "thresholdedrelu": (lambda x, al, be: np.where(x > al, x, 0), 1.0, None),
    "scaledtanh": (lambda x, al, be: al * np.tanh(be * x), 1.0, 1.0),
    "hardsigmoid": (lambda x, al, be: np.clip(al * x + be, 0, 1), 0.2, 0.5),
    "elu": (lambda x, al, be: np.where(x >= 0, x, al * (np.exp(np.minimum(x, 0)) - 1)), 1.0,
            None),
    "softsign": (lambda x, al, be: x / (1 + np.abs(x)), None, None),
    "softplus": (lambda x, al, be: np.logaddexp(0, x), None, None),
}
_DIRECTIONS = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}


def _activations(layer: Layer, defaults: tuple[str, ...], dirs: int) -> list[list[Callable]]:
    """Per direction, the layer's activation functions with their alpha and beta bound."""
    names = [str(n) for n in (a(layer, "activations") or [])] or list(defaults) * dirs
    if len(names) == len(defaults) and dirs == 2:
        names = names * 2
    if len(names) != len(defaults) * dirs:
        raise ValueError(f"activations {names} should name {len(defaults)} functions per "
                         f"direction ({len(defaults) * dirs} in all)")
    alphas = list(a(layer, "activation_alpha") or [])
    betas = list(a(layer, "activation_beta") or [])
    funcs = []
    for name in names:
        entry = _FUNCS.get(name.lower())
        if entry is None:
            raise ValueError(f"activation {name!r} is not one of ONNX's ({', '.join(_FUNCS)})")
        fn, al, be = entry
        if al is not None and alphas:
            al = float(alphas.pop(0))
        if be is not None and betas:
            be = float(betas.pop(0))
        funcs.append(lambda x, fn=fn, al=al, be=be: fn(x, al, be))
    k = len(defaults)
    return [funcs[d * k:(d + 1) * k] for d in range(dirs)]


class _Spec:
    """The attributes of one recurrent layer, parsed once."""

    def __init__(self, layer: Layer, gates: int, defaults: tuple[str, ...]):
        self.gates = gates
        self.hidden = int(a(layer, "hidden_size", 0))
        if self.hidden <= 0:
            raise ValueError("attribute 'hidden_size' is missing or not positive")
        direction = str(a(layer, "direction", "forward"))
        if direction not in _DIRECTIONS:
            raise ValueError(f"direction={direction!r} is not one of {', '.join(_DIRECTIONS)}")
        self.backward = _DIRECTIONS[direction]
        clip = a(layer, "clip")
        self.clip = float(clip) if clip is not None else None
        self.layout = int(a(layer, "layout", 0))
        self.funcs = _activations(layer, defaults, len(self.backward))
        self.outputs = declared_outputs(layer)

    def gate_input(self, x, h, W, R, bias):
        g = x @ W.T + h @ R.T + bias
        return np.clip(g, -self.clip, self.clip) if self.clip is not None else g

    def run(self, step, X, W, R, B, lens, states):
        """Run every direction over X (seq-first); ``step(d, x_t, states, W, R, B) -> states``
        with states[0] the hidden state. Returns Y and the final states, seq-first."""
        H, G = self.hidden, self.gates
        dirs = len(self.backward)
        for name, arr, rows, cols in (("W", W, G * H, None), ("R", R, G * H, H)):
            if arr.ndim != 3 or arr.shape[0] != dirs or arr.shape[1] != rows or \
                    (cols is not None and arr.shape[2] != cols):
                raise ValueError(f"{name} has shape {arr.shape}; expected [{dirs}, {rows}, "
                                 f"{cols if cols is not None else 'input_size'}]")
        seq, batch = X.shape[0], X.shape[1]
        lens = np.full(batch, seq, np.int64) if lens is None else np.asarray(lens, np.int64)
        if lens.shape != (batch,) or (lens.size and (lens.min() < 0 or lens.max() > seq)):
            raise ValueError(f"sequence_lens {lens.tolist()} must give one length in 0..{seq} "
                             f"per batch entry ({batch})")
        B = np.zeros((dirs, 2 * G * H), X.dtype) if B is None else B
        Y = np.zeros((seq, dirs, batch, H), X.dtype)
        finals = []
        rows = np.arange(batch)
        for d, back in enumerate(self.backward):
            st = [s[d] for s in states]
            bias = B[d, :G * H] + B[d, G * H:]
            for t in range(seq):
                active = t < lens
                if not active.any():
                    break
                pos = np.where(active, lens - 1 - t, 0) if back else np.full(batch, t)
                new = step(d, X[pos, rows], st, W[d], R[d], bias)
                keep = active[:, None]
                st = [np.where(keep, n, s) for n, s in zip(new, st)]
                Y[pos[active], d, rows[active]] = new[0][active]
            if not lens.all():          # an empty sequence ends in zeros, as onnxruntime's
                st = [np.where((lens > 0)[:, None], s, 0) for s in st]
            finals.append(st)
        return Y, [np.stack([f[k] for f in finals]) for k in range(len(states))]

    def call(self, step, X, W, R, B, lens, inits):
        """Handle the layout, default initial states and outputs around ``run``."""
        X = np.asarray(X)
        if self.layout:
            X = np.swapaxes(X, 0, 1)
            inits = [None if s is None else np.swapaxes(s, 0, 1) for s in inits]
        dirs, batch = len(self.backward), X.shape[1]
        states = [np.zeros((dirs, batch, self.hidden), X.dtype) if s is None else np.asarray(s)
                  for s in inits]
        Y, finals = self.run(step, X, W, R, B, lens, states)
        if self.layout:
            Y = np.transpose(Y, (2, 0, 1, 3))
            finals = [np.swapaxes(f, 0, 1) for f in finals]
        outs = [Y.astype(X.dtype, copy=False)] + [f.astype(X.dtype, copy=False) for f in finals]
        return outs[0] if self.outputs == 1 else tuple(outs[:self.outputs])


@op("onnx.LSTM", versions=(1, 7, 14, 22), outputs=declared_outputs)
def _lstm(layer: Layer):
    spec = _Spec(layer, 4, ("Sigmoid", "Tanh", "Tanh"))
    H = spec.hidden
    coupled = bool(a(layer, "input_forget", 0))
    peep: list = [None]

    def step(d, x, st, W, R, bias):
        h, c = st
        f_, g_, h_ = spec.funcs[d]
        gates = spec.gate_input(x, h, W, R, bias)
        i, o, f, cc = (gates[:, k * H:(k + 1) * H] for k in range(4))
        P = peep[0]
        if P is not None:
            i = i + P[d, :H] * c
            f = f + P[d, 2 * H:] * c
        i = f_(i)
        f = 1 - i if coupled else f_(f)
        c_new = f * c + i * g_(cc)
        if P is not None:
            o = o + P[d, H:2 * H] * c_new
        return [f_(o) * h_(c_new), c_new]

    def lstm(X, W, R, B=None, lens=None, h0=None, c0=None, P=None):
        peep[0] = None if P is None else np.asarray(P)
        return spec.call(step, X, W, R, B, lens, [h0, c0])

    return lstm


@op("onnx.GRU", versions=(1, 3, 7, 14, 22), outputs=declared_outputs)
def _gru(layer: Layer):
    spec = _Spec(layer, 3, ("Sigmoid", "Tanh"))
    H = spec.hidden
    before = bool(a(layer, "linear_before_reset", 0))

    def step(d, x, st, W, R, bias):
        h, = st
        f_, g_ = spec.funcs[d]
        wb, rb = bias_parts[d]
        xw = x @ W.T + wb
        zr = xw[:, :2 * H] + h @ R[:2 * H].T + rb[:2 * H]
        if spec.clip is not None:
            zr = np.clip(zr, -spec.clip, spec.clip)
        z, r = f_(zr[:, :H]), f_(zr[:, H:])
        if before:
            hh = xw[:, 2 * H:] + r * (h @ R[2 * H:].T + rb[2 * H:])
        else:
            hh = xw[:, 2 * H:] + (r * h) @ R[2 * H:].T + rb[2 * H:]
        if spec.clip is not None:
            hh = np.clip(hh, -spec.clip, spec.clip)
        return [(1 - z) * g_(hh) + z * h]

    bias_parts: list = []

    def gru(X, W, R, B=None, lens=None, h0=None):
        dirs = len(spec.backward)
        full = np.zeros((dirs, 6 * H), np.asarray(X).dtype) if B is None else np.asarray(B)
        bias_parts[:] = [(full[d, :3 * H], full[d, 3 * H:]) for d in range(dirs)]
        return spec.call(step, X, W, R, None, lens, [h0])

    return gru


@op("onnx.RNN", versions=(1, 7, 14, 22), outputs=declared_outputs)
def _rnn(layer: Layer):
    spec = _Spec(layer, 1, ("Tanh",))

    def step(d, x, st, W, R, bias):
        return [spec.funcs[d][0](spec.gate_input(x, st[0], W, R, bias))]

    def rnn(X, W, R, B=None, lens=None, h0=None):
        return spec.call(step, X, W, R, B, lens, [h0])

    return rnn
