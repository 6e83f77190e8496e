"""ONNX Pad, by loopdbg (not onnx.reference): every opset, negative pads that crop (Pad-11 on),
the ``axes`` input (Pad-18) and the ``wrap`` mode (Pad-19).

onnx.reference refuses a negative pad ("index can't contain negative values"), which real
preprocessing models use to crop. As the IR's Pad-12 kernel does, a negative pad first cuts that
many elements from its end of the axis; the positive pads then add elements by the mode:
``constant`` (``value``: 0, False or "" by default), ``edge``, ``reflect`` or ``wrap``.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, axis_of, ints_of, opset
from loopdbg.ops.registry import op

MODES = ("constant", "reflect", "edge", "wrap")


def onnx_pad(x, pads, mode: str = "constant", value=None, axes=None) -> np.ndarray:
    """``x`` padded (and cropped by negative pads) as ONNX Pad says; ``pads`` holds the begins
    of ``axes`` (every axis when None) and then their ends."""
    x = np.asarray(x)
    rank, pads = x.ndim, ints_of(pads)
    axes = list(range(rank)) if axes is None else [axis_of(k, rank) for k in ints_of(axes)]
    if len(set(axes)) != len(axes):
        raise ValueError(f"Pad axes {ints_of(axes)} name an axis twice")
    if len(pads) != 2 * len(axes):
        raise ValueError(f"pads has {len(pads)} values; Pad needs {2 * len(axes)} (a begin and "
                         f"an end for each of the {len(axes)} axes)")
    begin, end = [0] * rank, [0] * rank
    for k, ax in enumerate(axes):
        begin[ax], end[ax] = pads[k], pads[k + len(axes)]
    for ax, (b, e, d) in enumerate(zip(begin, end, x.shape)):
        if d + b + e < 0:
            raise ValueError(f"pads {b} and {e} on axis {ax} of length {d} leave {d + b + e} "
                             f"elements")
    if min(begin + end, default=0) < 0:                     # crop first
        x = x[tuple(slice(-min(b, 0), d + min(e, 0)) for b, e, d in zip(begin, end, x.shape))]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
    if not any(b or e for b, e in widths):
        return x.copy()
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=_fill(x, value))
    for ax, (b, e) in enumerate(widths):
        if (b or e) and x.shape[ax] == 0:
            raise ValueError(f"Pad mode '{mode}' cannot pad axis {ax}: it has no element left "
                             f"to repeat")
    return np.pad(x, widths, mode=mode)


def _fill(x: np.ndarray, value):
    """The constant to pad with: ``value`` (a scalar or one-element tensor), else zero of x's
    type (False for booleans, "" for strings)."""
    if value is not None and np.size(value):
        return np.asarray(value).reshape(-1)[0]
    if x.dtype.kind in "US":
        return ""
    return x.dtype.type(0)


@op("onnx.Pad", versions=(1, 2, 11, 13, 18, 19, 21, 23, 24, 25))
def _pad(layer: Layer):
    mode = str(a(layer, "mode", "constant"))
    if mode not in MODES or (mode == "wrap" and opset(layer) < 19):
        raise ValueError(f"Pad mode '{mode}' is not one of "
                         f"{', '.join(m for m in MODES if m != 'wrap' or opset(layer) >= 19)}")
    if opset(layer) < 11:                 # pads and value are attributes; no negative pad
        pads = ints_of(a(layer, "paddings" if opset(layer) < 2 else "pads", []))
        value = a(layer, "value", 0.0)
        if min(pads, default=0) < 0:
            raise ValueError(f"Pad at opset {opset(layer)} does not accept negative pads "
                             f"{pads} (from opset 11 on they crop)")
        return lambda x: onnx_pad(x, pads, mode, value)

    def pad(x, pads, constant_value=None, axes=None):
        return onnx_pad(x, pads, mode, constant_value, axes)

    return pad
