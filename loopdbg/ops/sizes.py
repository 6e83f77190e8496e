"""What a kernel's output will take, computed before the kernel runs: the budget's first check.

``--max-memory`` (``ops.budget``) is checked before an allocation for every kernel whose output
size does not follow from its inputs' sizes alone: the size comes from the *values* of its inputs
(Broadcast to a target shape, Tile, Range, ConstantOfShape, Pad, OneHot, Resize and Interpolate
by sizes or scales, CenterCropPad, the window functions sized by a scalar, Eye) or from its
*attributes* (the random generators' ``shape``). ``guarded`` wraps such a kernel at plan time:
the output's bytes are computed from the inputs (an upper bound where the op could read them two
ways) and an output that does not fit in what is left of the budget is refused before numpy
allocates a byte. Outputs sized by the inputs' shapes are checked where they can multiply sizes:
numpy's broadcasting (an outer sum of two vectors), in the plans' generated code
(``broadcast_check``), once a step's inputs differ in shape. The other kernels give outputs a
small multiple of their inputs, which the loops' checkpoints catch.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.budget import BUDGET, SMALL, elements, reserve


# A broadcast output has at most the product of its inputs' sizes: below this many elements it
# is under the budget's SMALL whatever its element type, and the generated code skips the check.
CHECKED_ELEMENTS = SMALL // 16


def broadcast_check(*ins) -> None:
    """Before a broadcasting step whose inputs differ in shape: its output's bytes must fit."""
    if len(ins) == 2:                       # one fits into the other (a bias, a scale): the
        a, b = ins                          # output is the bigger, no bigger than an input
        big = a.shape if type(a) is np.ndarray else np.shape(a)   # (a decoder's (1, T, N) and
        small = b.shape if type(b) is np.ndarray else np.shape(b)     # (1, 1, N) bias, each
        if len(big) < len(small):                                # layer, each iteration:
            big, small = small, big                              # a loop, no generator)
        for d, e in zip(small, big[len(big) - len(small):]):
            if d != 1 and d != e:
                break
        else:
            return
    try:
        shape = np.broadcast_shapes(*(np.shape(x) for x in ins))
    except ValueError:
        return                                      # the kernel says what does not broadcast
    n = elements(shape)
    if n > max(np.size(x) for x in ins):
        reserve(n * max(getattr(x, "itemsize", 8) for x in ins))


def broadcast_tail(shape: tuple) -> tuple | None:
    """``shape`` less its leading 1s, when it has some and more (a converter's (1, 1, N) bias),
    else None: an input whose shape ends so broadcast with one of ``shape`` gives an output of
    that input's size, which ``broadcast_check`` would pass (the plans' guards compare it)."""
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    return tuple(shape[lead:]) if 0 < lead < len(shape) else None


# -- the output size of the kernels sized by their inputs' values, by op type ---------------------
def _item(a, default=0):
    a = np.asarray(a)
    return a.reshape(-1)[0].item() if a.size else default


def _broadcast(x, target, *rest) -> float:
    """Broadcast / Expand: at least the target's elements (the bigger of both per axis)."""
    shape = np.asarray(target).reshape(-1).tolist()
    xs = list(np.shape(x))
    n = max(len(shape), len(xs))
    shape = [1] * (n - len(shape)) + shape
    xs = [1] * (n - len(xs)) + xs
    return elements([max(a, b) for a, b in zip(shape, xs)]) * np.asarray(x).itemsize


def _tile(x, repeats, *rest) -> float:
    return np.asarray(x).nbytes * elements(repeats)


def _range(start, stop, step, *rest) -> float:
    a, b, s = (float(_item(v)) for v in (start, stop, step))
    if s == 0 or not all(map(math.isfinite, (a, b, s))):
        return 0.0            # the kernel says what is wrong
    return max(math.ceil((b - a) / s), 0) * 8.0


def _of_shape(shape, *rest) -> float:
    return elements(shape) * 8.0


def _pad(x, begin, end=None, *rest) -> float:
    xs = np.shape(x)
    b = np.asarray(begin).reshape(-1).tolist()
    e = np.asarray(end).reshape(-1).tolist() if end is not None and np.ndim(end) else []
    if e == [] and len(b) == 2 * len(xs):       # ONNX: one pads input, begins then ends
        b, e = b[:len(xs)], b[len(xs):]
    grown = [d + max(float(p), 0.0) + max(float(q), 0.0)
             for d, p, q in zip(xs, b + [0] * len(xs), e + [0] * len(xs))]
    return elements(grown) * np.asarray(x).itemsize


def _one_hot(indices, depth, *rest) -> float:
    return np.size(indices) * max(float(_item(depth)), 0.0) * 8.0


def _window(size, *rest) -> float:
    """HannWindow, HammingWindow, BlackmanWindow: ``size`` values."""
    return max(float(_item(size)), 0.0) * 8.0


def _resized(x, *rest) -> float:
    """Resize, Upsample, Interpolate: the biggest output any of the 1-D numeric inputs after
    ``x`` could ask for, read as sizes (integers) or scales (floats) of the last axes (ROI,
    axes and the like read so too: an upper bound, never less than the real output)."""
    xs = [float(d) for d in np.shape(x)]
    best = elements(xs)
    for v in rest:
        if v is None or np.ndim(v) != 1 or not 0 < np.size(v) <= len(xs) or \
                np.asarray(v).dtype.kind not in "iuf":
            continue
        vals = np.abs(np.asarray(v, dtype=np.float64)).tolist()
        tail = xs[len(xs) - len(vals):]
        grown = [max(q, d * q) for d, q in zip(tail, vals)]
        best = max(best, elements(xs[:len(xs) - len(vals)] + grown))
    return best * np.asarray(x).itemsize


def _crop_pad(x, shape, *rest) -> float:
    """CenterCropPad: the target extents replace the input's on the cropped or padded axes."""
    xs = [float(d) for d in np.shape(x)]
    target = np.asarray(shape).reshape(-1).tolist()
    return max(elements(xs), elements(target) * elements(xs) /
               max(elements(xs[len(xs) - len(target):]), 1.0)) * np.asarray(x).itemsize


def _eye(rows, cols, diagonal=None, batch=None, *rest) -> float:
    n = max(float(_item(rows)), 0.0) * max(float(_item(cols)), 0.0)
    return n * (elements(batch) if batch is not None else 1.0) * 8.0


# Op type -> the bytes its output needs, from the kernel's inputs (before it runs).
SIZED_BY_VALUES: dict[str, Callable[..., float]] = {
    "Broadcast": _broadcast, "onnx.Expand": _broadcast,
    "Tile": _tile, "onnx.Tile": _tile,
    "Range": _range, "onnx.Range": _range,
    "onnx.ConstantOfShape": _of_shape, "RandomUniform": _of_shape,
    "Pad": _pad, "onnx.Pad": _pad,
    "OneHot": _one_hot, "onnx.OneHot": _one_hot,
    "onnx.HannWindow": _window, "onnx.HammingWindow": _window,
    "onnx.BlackmanWindow": _window,
    "onnx.Resize": _resized, "onnx.Upsample": _resized, "Interpolate": _resized,
    "onnx.CenterCropPad": _crop_pad, "Eye": _eye,
}


def _attribute_shape(layer: Layer) -> float:
    """The random generators of ONNX: a ``shape`` attribute, no input."""
    shape = layer.data.get("shape")
    return elements(shape) * 8.0 if isinstance(shape, (list, tuple)) else 0.0


# Op type -> the bytes its output needs, from the layer's attributes (read once, at plan time).
SIZED_BY_ATTRIBUTES: dict[str, Callable[[Layer], float]] = {
    "onnx.RandomNormal": _attribute_shape, "onnx.RandomUniform": _attribute_shape,
}


def guarded(layer: Layer, fn: Callable) -> Callable:
    """``fn``, checked against the budget before it runs when its op's output is sized by the
    values of its inputs or by its attributes; other kernels are returned as they are."""
    sized = SIZED_BY_ATTRIBUTES.get(layer.type)
    if sized is not None:
        try:
            fixed = sized(layer)
        except (TypeError, ValueError, OverflowError):
            fixed = 0.0                           # the kernel's factory said what was wrong

        def need(*_ins) -> float:
            return fixed
    else:
        need = SIZED_BY_VALUES.get(layer.type)
    if need is None:
        return fn

    skip = 1 if getattr(fn, "needs_context", False) else 0    # fn(ctx, *ins)

    def checked(*ins):
        if BUDGET.limit is not None:
            try:
                nbytes = need(*ins[skip:])
            except (TypeError, ValueError, IndexError, OverflowError):
                nbytes = 0.0                      # malformed inputs: the kernel says what
            reserve(nbytes)
        return fn(*ins)

    for attr in ("notice", "needs_context"):     # what the plan reads off a kernel
        if hasattr(fn, attr):
            setattr(checked, attr, getattr(fn, attr))
    return checked
